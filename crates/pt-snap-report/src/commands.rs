//! Contracts of the commands pt-snap has beyond pt-snap-cli 0.4.1's (`ranks`, …): what an
//! agent needs before running one — its arguments, every output field with its units and
//! semantics, and the limits of their interpretation. Like the templates' contracts they are
//! data (`contracts/commands/<name>.json`), listed by `capabilities` (`commands`, after the
//! reference's keys) and checked against the command's real output by its tests.
//!
//! A new command adds its file and one line to [`SOURCES`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Every command contract, one JSON document each.
const SOURCES: &[&str] = &[
    include_str!("../contracts/commands/ranks.json"),
    include_str!("../contracts/commands/check.json"),
    include_str!("../contracts/commands/diff.json"),
    include_str!("../contracts/commands/oom.json"),
    include_str!("../contracts/commands/segments.json"),
    include_str!("../contracts/commands/export.json"),
    include_str!("../contracts/commands/sql.json"),
];

/// One command-line argument: a positional `PATH` or an option (`--metric`, `-j`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Argument {
    pub name: String,
    /// `path`, `int`, `float`, `str` or `bool` (a flag).
    #[serde(rename = "type")]
    pub kind: String,
    /// The option's one-letter spelling (`-o`), if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short: Option<String>,
    pub required: bool,
    /// Given any number of times (positional lists).
    pub repeated: bool,
    pub default: Value,
    pub choices: Option<Vec<Value>>,
    pub description: String,
}

/// One field of the command's JSON output, named by its path in the document
/// (`ranks[].peak_active`, `median.peak_active`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputField {
    pub field: String,
    /// JSON type; `int|null` where the value may be absent.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub units: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric_semantics: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// When an optional field is printed at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub present_when: Option<String>,
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interpretation_limits: Option<Vec<String>>,
}

/// What an exit status means for this command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExitStatus {
    pub status: u8,
    pub meaning: String,
}

/// A command's full contract, as `capabilities --json` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandContract {
    pub name: String,
    pub description: String,
    pub usage: String,
    pub arguments: Vec<Argument>,
    pub output_schema: Vec<OutputField>,
    pub interpretation_limits: Vec<String>,
    pub exit_status: Vec<ExitStatus>,
    /// The error codes the command ends with, and when.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub errors: BTreeMap<String, String>,
}

impl CommandContract {
    pub fn field(&self, path: &str) -> Option<&OutputField> {
        self.output_schema.iter().find(|f| f.field == path)
    }

    /// Checks a JSON document the command printed against the contract: `Err` names the
    /// fields printed but not declared, and (with `complete`, for a document that exercises
    /// every field) those declared but not printed. The tests of each command call it on
    /// its real output, so the contract cannot drift from the command.
    pub fn check_document(&self, document: &Value, complete: bool) -> Result<(), String> {
        let printed = field_paths(document);
        let declared: BTreeSet<String> =
            self.output_schema.iter().map(|f| f.field.clone()).collect();
        let undeclared: Vec<&String> = printed.difference(&declared).collect();
        let unprinted: Vec<&String> = declared.difference(&printed).collect();
        if !undeclared.is_empty() || (complete && !unprinted.is_empty()) {
            return Err(format!(
                "{}: printed but not in its contract: {undeclared:?}; in its contract but not \
                 printed: {unprinted:?}",
                self.name
            ));
        }
        Ok(())
    }
}

/// Every field path of a JSON document as contracts name them: `a.b` for a key of an
/// object, `a[].c` for a key of the objects in the list `a`.
pub fn field_paths(document: &Value) -> BTreeSet<String> {
    fn walk(value: &Value, prefix: &str, out: &mut BTreeSet<String>) {
        match value {
            Value::Object(m) => {
                for (k, v) in m {
                    let path = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    out.insert(path.clone());
                    walk(v, &path, out);
                }
            }
            Value::Array(items) => {
                for item in items {
                    walk(item, &format!("{prefix}[]"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    walk(document, "", &mut out);
    out
}

/// Every command contract, sorted by name.
pub fn all() -> &'static [CommandContract] {
    static REGISTRY: OnceLock<Vec<CommandContract>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let mut contracts: Vec<CommandContract> = SOURCES
            .iter()
            .map(|json| serde_json::from_str(json).expect("bundled command contracts are valid"))
            .collect();
        contracts.sort_by(|a, b| a.name.cmp(&b.name));
        contracts
    })
}

pub fn find(name: &str) -> Option<&'static CommandContract> {
    all().iter().find(|c| c.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_contract_parses_with_unique_names_and_fields() {
        assert_eq!(all().len(), SOURCES.len());
        let mut names: Vec<&str> = all().iter().map(|c| c.name.as_str()).collect();
        names.dedup();
        assert_eq!(names.len(), SOURCES.len(), "two contracts share a name");
        for c in all() {
            assert!(
                c.usage.starts_with(&format!("pt-snap {} ", c.name)),
                "{}",
                c.name
            );
            let mut fields: Vec<&str> = c.output_schema.iter().map(|f| f.field.as_str()).collect();
            fields.sort_unstable();
            let n = fields.len();
            fields.dedup();
            assert_eq!(fields.len(), n, "{}: a field is listed twice", c.name);
            for a in &c.arguments {
                if let Some(choices) = &a.choices {
                    assert!(
                        a.default.is_null() || choices.contains(&a.default),
                        "{}: {} defaults outside its choices",
                        c.name,
                        a.name
                    );
                }
            }
            // Serialising gives back the document's own keys, in its order.
            let again: CommandContract =
                serde_json::from_value(serde_json::to_value(c).unwrap()).unwrap();
            assert_eq!(&again, c);
        }
        assert!(find("ranks").is_some());
    }

    #[test]
    fn documents_are_checked_field_by_field() {
        let doc = serde_json::json!({"a": 1, "b": [{"c": 2}, {"c": 3, "d": null}], "e": {"f": []}});
        let paths: Vec<String> = field_paths(&doc).into_iter().collect();
        assert_eq!(paths, ["a", "b", "b[].c", "b[].d", "e", "e.f"]);
        let ranks = find("ranks").unwrap();
        let err = ranks
            .check_document(
                &serde_json::json!({"metric": "active", "surprise": 1}),
                false,
            )
            .unwrap_err();
        assert!(err.contains("\"surprise\""), "{err}");
        assert!(ranks
            .check_document(&serde_json::json!({"metric": "active"}), false)
            .is_ok());
        assert!(ranks
            .check_document(&serde_json::json!({"metric": "active"}), true)
            .is_err());
    }
}
