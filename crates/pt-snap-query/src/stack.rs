//! `stack_bytes` (spec §6.4): a per-row UTF-8 budget for callstack text, with an identity
//! that survives the cut. Rows, numbers and completeness flags never change.

use std::sync::Arc;

use pt_snap_db::CallstackLayout;
use sha2::{Digest, Sha256};

use crate::value::Value;

pub fn summarize(
    columns: &mut Vec<String>,
    rows: &mut [Vec<Value>],
    budget: i64,
    layout: CallstackLayout,
) {
    let index = |name: &str| columns.iter().position(|c| c == name);
    let (Some(text_i), Some(kind_i), Some(id_i)) =
        (index("callstack"), index("stack_kind"), index("stack_id"))
    else {
        return;
    };
    let limit = usize::try_from(budget).unwrap_or(usize::MAX);
    for row in rows.iter_mut() {
        let kind = row[kind_i].as_str().unwrap_or("").to_owned();
        let text = row[text_i].as_str().map(str::to_owned);
        row[id_i] = Value::Text(Arc::from(if kind == "captured" {
            match layout {
                // v2 stacks are identified by id: two ids may share a text.
                CallstackLayout::V2 => match &row[id_i] {
                    Value::Int(id) => format!("v2:id:{id}"),
                    other => format!("v2:id:{}", other.python_repr()),
                },
                CallstackLayout::V1 => {
                    let digest = Sha256::digest(text.as_deref().unwrap_or("").as_bytes());
                    format!("v1:sha256:{}", crate::python::hex(&digest))
                }
            }
        } else {
            format!("category:{kind}")
        }));
        let original = text.as_deref().map_or(0, str::len);
        if let Some(t) = &text {
            if t.len() > limit {
                // Cut on a character boundary: never half a code point, and no ellipsis —
                // `stack_truncated` says the text is shortened.
                let mut end = limit;
                while !t.is_char_boundary(end) {
                    end -= 1;
                }
                row[text_i] = Value::Text(Arc::from(&t[..end]));
            }
        }
        row.push(Value::Int(budget));
        row.push(Value::Int(original as i64));
        row.push(Value::Bool(original > limit));
    }
    columns.extend(["stack_bytes", "stack_original_bytes", "stack_truncated"].map(str::to_owned));
}
