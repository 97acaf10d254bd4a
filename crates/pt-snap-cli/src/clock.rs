//! `completed_at` timestamps, formatted like Python's `datetime.now(UTC).isoformat()`.

use std::time::{SystemTime, UNIX_EPOCH};

pub fn now_utc_iso() -> String {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    pt_snap_contract::python::isoformat_utc(since.as_secs() as i64, since.subsec_micros())
}
