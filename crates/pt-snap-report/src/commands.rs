//! The output contracts of our commands beyond pt-snap-cli 0.4.1's (`diff`), for agents:
//! `capabilities --json` lists them under `commands`, beside the templates' contracts. Each is
//! a JSON file in `contracts/commands/` in the templates' style: what it does, its
//! arguments, its error codes, every output field with units and semantics, and the limits
//! of interpreting them.

use serde_json::Value as Json;

/// One command's contract.
#[derive(Debug, Clone, Copy)]
pub struct CommandContract {
    pub name: &'static str,
    source: &'static str,
}

impl CommandContract {
    /// The contract as written in its file.
    pub fn json(&self) -> Json {
        serde_json::from_str(self.source).expect("command contracts are valid JSON (tested)")
    }
}

static ALL: &[CommandContract] = &[CommandContract {
    name: "diff",
    source: include_str!("../contracts/commands/diff.json"),
}];

/// Every command contract, by name.
pub fn all() -> &'static [CommandContract] {
    ALL
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_contract_is_complete_and_named_like_its_entry() {
        let mut names: Vec<&str> = all().iter().map(|c| c.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all().len(), "names are unique");
        for c in all() {
            let j = c.json();
            assert_eq!(j["name"], c.name);
            for key in [
                "description",
                "usage",
                "interpretation_limits",
                "arguments",
                "errors",
            ] {
                assert!(!j[key].is_null(), "{}: {key}", c.name);
            }
            for f in j["output_schema"].as_array().unwrap() {
                assert!(
                    f["field"].is_string() && f["type"].is_string(),
                    "{}: {f}",
                    c.name
                );
            }
            for (name, a) in j["arguments"].as_object().unwrap() {
                assert!(
                    a["type"].is_string() && a["description"].is_string(),
                    "{name}"
                );
            }
        }
    }
}
