//! Live memory by memory category at one event, as the reports show it (`report peak-memory
//! --by category`, `report oom`): the rows of our template `category_breakdown_at_event`,
//! judged by pt-snap-query's category rules (`pt_snap_query::category`, docs/categories.md).

use pt_snap_query::{QueryOutcome, QueryRequest};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value as Json};

use crate::units::{grouped, human_bytes};

/// The template the breakdown comes from.
pub const TEMPLATE: &str = "category_breakdown_at_event";

/// What every output says beside the figures: they are a heuristic, and each names its rule.
pub const INTERPRETATION: &str = "A heuristic: each block's category is judged from the frames of its allocation callstack by the first rule that matches, and every row names that rule (docs/categories.md). A callstack says where memory was allocated, not what it is used for. The rows add up to every block live at the event.";

/// The rules a report judges with: the TOML text of a rules file (the built-in file's form),
/// or `None` for the built-in rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules(pub Option<String>);

impl Rules {
    /// `builtin`, or `custom` (a `--categories` file), as the outputs name them.
    pub fn name(&self) -> &'static str {
        match self.0 {
            None => "builtin",
            Some(_) => "custom",
        }
    }

    /// The request of the breakdown after `event_id` on `device` under these rules.
    pub fn request(&self, device: i64, event_id: i64) -> QueryRequest {
        QueryRequest::new(TEMPLATE)
            .device(device)
            .param("event_id", event_id)
            .param("rules", self.0.clone().unwrap_or_default())
    }
}

/// One `(category, rule)` row of the breakdown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CategoryRow {
    pub category: String,
    pub rule: String,
    pub bytes: i64,
    pub blocks: i64,
    /// Of every byte live at the event; `None` when nothing is live.
    pub percent_of_live_bytes: Option<f64>,
}

/// Live memory at one event by category (largest first, as the template orders it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    pub event_id: i64,
    /// `builtin` or `custom` ([`Rules::name`]).
    pub rules: String,
    pub rows: Vec<CategoryRow>,
}

impl Breakdown {
    /// The template's answer, read row by row.
    pub fn new(event_id: i64, rules: &Rules, outcome: &QueryOutcome) -> Breakdown {
        let rows = outcome
            .rows_json()
            .iter()
            .map(|r| {
                let text = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
                CategoryRow {
                    category: text("category"),
                    rule: text("rule"),
                    bytes: r["bytes"].as_i64().unwrap_or(0),
                    blocks: r["blocks"].as_i64().unwrap_or(0),
                    percent_of_live_bytes: r["percent_of_live_bytes"].as_f64(),
                }
            })
            .collect();
        Breakdown {
            event_id,
            rules: rules.name().to_owned(),
            rows,
        }
    }

    /// Every byte live at the event: the rows' sum.
    pub fn live_bytes(&self) -> i64 {
        self.rows.iter().map(|r| r.bytes).sum()
    }

    pub fn live_blocks(&self) -> i64 {
        self.rows.iter().map(|r| r.blocks).sum()
    }

    /// The rows as JSON objects, keyed like the template's columns.
    pub fn rows_json(&self) -> Json {
        Json::Array(
            self.rows
                .iter()
                .map(|r| {
                    let mut m = Map::new();
                    m.insert("category".into(), json!(r.category));
                    m.insert("rule".into(), json!(r.rule));
                    m.insert("bytes".into(), json!(r.bytes));
                    m.insert("blocks".into(), json!(r.blocks));
                    m.insert(
                        "percent_of_live_bytes".into(),
                        json!(r.percent_of_live_bytes),
                    );
                    Json::Object(m)
                })
                .collect(),
        )
    }

    /// The text lines (each starting with `indent`): a header saying what the figures are,
    /// then one line per row with its rule in brackets.
    pub fn text(&self, indent: &str) -> Vec<String> {
        let mut out = vec![
            format!(
                "{indent}A heuristic from allocation callstacks ({} rules): the rule that \
                 matched is in brackets (docs/categories.md).",
                self.rules
            ),
            format!(
                "{indent}Live after event {}: {} in {} block(s), every live block included.",
                self.event_id,
                bytes(self.live_bytes()),
                grouped(self.live_blocks())
            ),
        ];
        if self.rows.is_empty() {
            out.push(format!("{indent}No live blocks."));
        }
        let width = self
            .rows
            .iter()
            .map(|r| r.category.len())
            .max()
            .unwrap_or(0);
        for r in &self.rows {
            out.push(format!(
                "{indent}{:<width$}  {:>10}  {:>6}  {:>6} block(s)  [{}]",
                r.category,
                human_bytes(r.bytes as f64),
                r.percent_of_live_bytes
                    .map_or("-".to_owned(), |p| format!("{p:.1}%")),
                grouped(r.blocks),
                r.rule
            ));
        }
        out
    }
}

/// `1.50 GiB (1,610,612,736 B)`.
fn bytes(n: i64) -> String {
    format!("{} ({} B)", human_bytes(n as f64), grouped(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_names_the_rules_and_adds_up() {
        let b = Breakdown {
            event_id: 7,
            rules: "builtin".to_owned(),
            rows: vec![
                CategoryRow {
                    category: "activation".into(),
                    rule: "module-forward".into(),
                    bytes: 3 << 20,
                    blocks: 3,
                    percent_of_live_bytes: Some(75.0),
                },
                CategoryRow {
                    category: "unknown".into(),
                    rule: "no-allocation-event".into(),
                    bytes: 1 << 20,
                    blocks: 1,
                    percent_of_live_bytes: Some(25.0),
                },
            ],
        };
        assert_eq!(b.live_bytes(), 4 << 20);
        assert_eq!(
            b.text("  "),
            [
                "  A heuristic from allocation callstacks (builtin rules): the rule that matched \
                 is in brackets (docs/categories.md).",
                "  Live after event 7: 4.00 MiB (4,194,304 B) in 4 block(s), every live block \
                 included.",
                "  activation    3.00 MiB   75.0%       3 block(s)  [module-forward]",
                "  unknown       1.00 MiB   25.0%       1 block(s)  [no-allocation-event]",
            ]
        );
        assert_eq!(b.rows_json()[1]["rule"], "no-allocation-event");
    }
}
