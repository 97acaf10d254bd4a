//! A database's rows as they are, for exporters (`pt-snap export`): every trace event of a
//! device and every callstack with its frames, each read in one ordered scan and handed to a
//! callback, so the caller never holds more than it builds. Not templates: no window, no
//! parameters — the whole table in typed form, like [`Analyzer::lifetimes`].

use crate::{Analyzer, CallstackLayout, QueryError};

/// An event's `action` as stored: a code of the dictionary (`pt_snap_db::schema::ACTIONS`),
/// or, for an action the format has no code for (torch's `snapshot` marker), its name as text,
/// as the reference's import writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Code(i64),
    Text(String),
    Null,
}

impl Action {
    /// The action's name: the dictionary's for a code (a code outside it as its number), the
    /// text itself otherwise.
    pub fn name(&self) -> Option<std::borrow::Cow<'_, str>> {
        match self {
            Action::Code(c) => Some(
                pt_snap_db::schema::ACTIONS
                    .iter()
                    .find(|(k, _)| k == c)
                    .map_or_else(|| c.to_string().into(), |(_, n)| (*n).into()),
            ),
            Action::Text(t) => Some(t.as_str().into()),
            Action::Null => None,
        }
    }
}

/// One row of `trace_entry_<d>`. Columns the file leaves NULL stay `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRow {
    pub id: i64,
    pub action: Action,
    pub address: Option<i64>,
    pub size: Option<i64>,
    pub stream: Option<i64>,
    pub allocated: Option<i64>,
    pub active: Option<i64>,
    pub reserved: Option<i64>,
    /// The entry's `time_us` (`pt_snap_x_event_time_<d>`); `None` for an event without one,
    /// and for every event of a database that keeps no times.
    pub time_us: Option<i64>,
    /// `callstack.id` of the event's stack; `None` without one, and always on layout v1
    /// (whose trace holds the text inline).
    pub callstack: Option<i64>,
}

/// One frame of a callstack (`frame` through `callstack_frame`), at its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameRow {
    pub name: String,
    pub filename: String,
    pub line: i64,
}

/// One callstack: its id, its text (`None` where the file leaves it NULL) and its frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallstackRow<'a> {
    pub id: i64,
    pub text: Option<&'a str>,
    pub frames: &'a [FrameRow],
}

impl Analyzer {
    /// Every event of `device` in id order, one call of `f` each.
    pub fn for_each_event(
        &self,
        device: i64,
        f: &mut dyn FnMut(&EventRow),
    ) -> Result<(), QueryError> {
        let device = self.resolve_device(Some(device))?;
        let failed = |e| self.execution_error(e);
        let callstack = match self.layout() {
            Ok(CallstackLayout::V2) => "callstackId",
            _ => "NULL",
        };
        let times = self.db().times_available(device).map_err(failed)?.is_ok();
        let (time, join) = if times {
            (
                "CASE WHEN typeof(x.time_us) = 'integer' THEN x.time_us END",
                format!("LEFT JOIN pt_snap_x_event_time_{device} x ON x.event_id = t.id"),
            )
        } else {
            ("NULL", String::new())
        };
        let mut stmt = self
            .db()
            .conn()
            .prepare(&format!(
                "SELECT t.id, t.action, t.address, t.size, t.stream, t.allocated, t.active, \
                 t.reserved, {callstack}, {time} FROM trace_entry_{device} t {join} ORDER BY t.id"
            ))
            .map_err(failed)?;
        let mut rows = stmt.query([]).map_err(failed)?;
        while let Some(r) = rows.next().map_err(failed)? {
            let row = (|| {
                Ok::<_, rusqlite::Error>(EventRow {
                    id: r.get(0)?,
                    action: match r.get_ref(1)? {
                        rusqlite::types::ValueRef::Integer(c) => Action::Code(c),
                        rusqlite::types::ValueRef::Null => Action::Null,
                        rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                            Action::Text(String::from_utf8_lossy(t).into_owned())
                        }
                        rusqlite::types::ValueRef::Real(f) => Action::Text(f.to_string()),
                    },
                    address: r.get(2)?,
                    size: r.get(3)?,
                    stream: r.get(4)?,
                    allocated: r.get(5)?,
                    active: r.get(6)?,
                    reserved: r.get(7)?,
                    callstack: r.get(8)?,
                    time_us: r.get(9)?,
                })
            })()
            .map_err(failed)?;
            f(&row);
        }
        Ok(())
    }

    /// Every callstack in id order with its text and its frames by position (position 0
    /// first: the innermost frame); none on layout v1, which has no callstack table. A stack
    /// whose frames the database does not have (no `frame` tables) has an empty list.
    pub fn for_each_callstack(&self, f: &mut dyn FnMut(&CallstackRow)) -> Result<(), QueryError> {
        if !matches!(self.layout(), Ok(CallstackLayout::V2)) {
            return Ok(());
        }
        let failed = |e| self.execution_error(e);
        let conn = self.db().conn();
        let has_frames: bool = conn
            .query_row(
                "SELECT COUNT(*) = 2 FROM sqlite_master WHERE type = 'table' \
                 AND name IN ('frame', 'callstack_frame')",
                [],
                |r| r.get(0),
            )
            .map_err(failed)?;
        let sql = if has_frames {
            "SELECT c.id, c.callstack, f.name, f.filename, f.line FROM callstack c \
             LEFT JOIN callstack_frame cf ON cf.callstackId = c.id \
             LEFT JOIN frame f ON f.id = cf.frameId ORDER BY c.id, cf.position"
        } else {
            "SELECT id, callstack, NULL, NULL, NULL FROM callstack ORDER BY id"
        };
        let mut stmt = conn.prepare(sql).map_err(failed)?;
        let mut rows = stmt.query([]).map_err(failed)?;
        let mut current: Option<(i64, Option<String>)> = None;
        let mut frames: Vec<FrameRow> = Vec::new();
        while let Some(r) = rows.next().map_err(failed)? {
            let id: i64 = r.get(0).map_err(failed)?;
            if current.as_ref().is_some_and(|(c, _)| *c != id) {
                let (c, text) = current.take().expect("checked");
                f(&CallstackRow {
                    id: c,
                    text: text.as_deref(),
                    frames: &frames,
                });
                frames.clear();
            }
            if current.is_none() {
                current = Some((id, r.get(1).map_err(failed)?));
            }
            let name: Option<String> = r.get(2).map_err(failed)?;
            if let Some(name) = name {
                frames.push(FrameRow {
                    name,
                    filename: r
                        .get::<_, Option<String>>(3)
                        .map_err(failed)?
                        .unwrap_or_default(),
                    line: r.get::<_, Option<i64>>(4).map_err(failed)?.unwrap_or(0),
                });
            }
        }
        if let Some((c, text)) = current {
            f(&CallstackRow {
                id: c,
                text: text.as_deref(),
                frames: &frames,
            });
        }
        Ok(())
    }
}
