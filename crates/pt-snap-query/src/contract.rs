//! Template contracts: what a template promises an agent — its parameters, output columns
//! with units and semantics, and the limits of their interpretation.
//!
//! The contracts are data (`contracts/<name>.json`), the same text for every consumer: the
//! CLI's `--template-info` and `capabilities`, the web app's template runner, and the
//! parameter validation of every query. They reproduce pt-snap-cli 0.4.1's contracts
//! word for word, because agents and skills written for it read them.

use pt_snap_contract::python;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// The three template families, in the order listings show them.
pub const CATEGORIES: [&str; 3] = ["basic", "business", "statistical"];

/// The declared type of a parameter; values are converted to it as Python would.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ParamType {
    Int,
    Float,
    Bool,
    Str,
}

impl ParamType {
    pub fn name(self) -> &'static str {
        match self {
            Self::Int => "int",
            Self::Float => "float",
            Self::Bool => "bool",
            Self::Str => "str",
        }
    }
}

/// One declared parameter.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Parameter {
    #[serde(rename = "type")]
    pub kind: ParamType,
    pub default: Value,
    pub required: bool,
    pub description: String,
    /// A closed set of accepted values (matched case-insensitively for strings).
    pub choices: Option<Vec<Value>>,
}

/// One output column and what its values mean.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OutputColumn {
    pub column: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub units: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric_semantics: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub denominator: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sentinel: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interpretation_limits: Option<Vec<String>>,
}

impl OutputColumn {
    /// Columns present only with `stack_bytes >= 0` (their first limit says so).
    pub fn opt_in(&self) -> bool {
        self.interpretation_limits
            .as_ref()
            .and_then(|l| l.first())
            .is_some_and(|l| l.starts_with("Opt-in") || l.starts_with("Standalone opt-in"))
    }

    /// Columns that only sharded datasets produce (their first limit says so).
    pub fn dataset_only(&self) -> bool {
        self.interpretation_limits
            .as_ref()
            .and_then(|l| l.first())
            .is_some_and(|l| {
                l.starts_with("Dataset only") || l.starts_with("Dataset source detail only")
            })
    }
}

/// A template's full contract.
#[derive(Debug, Clone, Deserialize)]
pub struct Contract {
    pub name: String,
    pub description: String,
    pub category: String,
    /// `["all"]`, or `["all", "0", "1"]` for templates the reference documents per device.
    pub devices: Vec<String>,
    pub semantics_version: Option<i64>,
    pub interpretation_limits: Vec<String>,
    /// How a sharded dataset answers this template, `None` where it cannot.
    pub dataset_semantics: Option<String>,
    #[serde(deserialize_with = "ordered_parameters")]
    pub parameters: Vec<(String, Parameter)>,
    pub output_schema: Vec<OutputColumn>,
}

fn ordered_parameters<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Vec<(String, Parameter)>, D::Error> {
    let map = Map::<String, Value>::deserialize(d)?;
    map.into_iter()
        .map(|(name, v)| {
            serde_json::from_value(v)
                .map(|p| (name, p))
                .map_err(serde::de::Error::custom)
        })
        .collect()
}

/// The work budgets of dataset queries. Standalone databases ignore them, but every contract
/// echoes them so an agent sees the limits before it queries a dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkLimits {
    pub max_work_rows: i64,
    pub max_work_bytes: i64,
    pub max_scratch_db_bytes: i64,
}

impl Default for WorkLimits {
    fn default() -> Self {
        WorkLimits {
            max_work_rows: 100_000,
            max_work_bytes: 64 << 20,
            max_scratch_db_bytes: 512 << 20,
        }
    }
}

impl Contract {
    pub fn parameter(&self, name: &str) -> Option<&Parameter> {
        self.parameters
            .iter()
            .find_map(|(n, p)| (n == name).then_some(p))
    }

    pub fn has_parameter(&self, name: &str) -> bool {
        self.parameter(name).is_some()
    }

    /// `devices` as the reference prints it: `"all"` or `"all, 0, 1"`.
    pub fn devices_label(&self) -> String {
        self.devices.join(", ")
    }

    /// The `dataset_support` object of `--template-info --json`.
    pub fn dataset_support(&self, limits: &WorkLimits) -> Value {
        json!({
            "supported": self.dataset_semantics.is_some(),
            "semantics": self.dataset_semantics,
            "device_scope": "one_selected_device; never sum device peaks",
            "custom_sql": "unsupported; select an explicit standalone member",
            "work_limit_rows": limits.max_work_rows,
            "work_limit_bytes": limits.max_work_bytes,
            "max_scratch_db_bytes": limits.max_scratch_db_bytes,
            "budget_scope": "one_query_or_explicit_report_composition",
        })
    }

    /// The contract as `--template-info --json` and `capabilities --json` give it (without
    /// the envelope), keys in the reference's order.
    pub fn info_json(&self, limits: &WorkLimits) -> Map<String, Value> {
        let parameters: Map<String, Value> = self
            .parameters
            .iter()
            .map(|(name, p)| (name.clone(), json!(p)))
            .collect();
        let mut m = Map::new();
        m.insert("name".into(), json!(self.name));
        m.insert("description".into(), json!(self.description));
        m.insert("category".into(), json!(self.category));
        m.insert("devices".into(), json!(self.devices_label()));
        m.insert("parameters".into(), Value::Object(parameters));
        m.insert("output_schema".into(), json!(self.output_schema));
        m.insert("semantics_version".into(), json!(self.semantics_version));
        m.insert(
            "interpretation_limits".into(),
            json!(self.interpretation_limits),
        );
        m.insert("dataset_support".into(), self.dataset_support(limits));
        m
    }

    /// `--template-info`'s text, in the reference's words: the contract, its parameters,
    /// output columns and limits, and an example command for the database `db` (its path, or
    /// `None` when the focus would choose it).
    pub fn info_text(&self, limits: &WorkLimits, db: Option<&str>) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let _ = writeln!(out, "Template: {}", self.name);
        let _ = writeln!(out, "Description: {}", self.description);
        let _ = writeln!(out, "Category: {}", self.category);
        let _ = writeln!(out, "Devices: {}", self.devices_label());
        let _ = writeln!(
            out,
            "Dataset Support: {}",
            python::dumps(&self.dataset_support(limits), true)
        );
        let _ = writeln!(
            out,
            "Semantics Version: {}",
            self.semantics_version
                .map_or("none".into(), |v| v.to_string())
        );
        out.push('\n');
        let _ = writeln!(out, "Parameters:");
        if self.parameters.is_empty() {
            let _ = writeln!(out, "  None");
        }
        for (pname, p) in &self.parameters {
            let required = if p.required {
                " (required)"
            } else {
                " (optional)"
            };
            let choices = p.choices.as_ref().map_or(String::new(), |ch| {
                let items: Vec<String> = ch.iter().map(python::str_of_json).collect();
                format!(" [choices: {}]", items.join(", "))
            });
            let default = if p.default.is_null() {
                String::new()
            } else {
                format!(" [default: {}]", python::str_of_json(&p.default))
            };
            let _ = writeln!(
                out,
                "  {pname}: {}{required}{choices}{default}",
                p.kind.name()
            );
            let _ = writeln!(out, "    {}", p.description);
        }
        out.push('\n');
        let _ = writeln!(out, "Output Schema:");
        for col in &self.output_schema {
            let _ = writeln!(out, "  {}: {}", col.column, col.kind);
            let tags = [
                ("units", &col.units),
                ("metric_semantics", &col.metric_semantics),
                ("scope", &col.scope),
                ("denominator", &col.denominator),
            ];
            for (key, value) in tags {
                if let Some(v) = value {
                    let _ = writeln!(out, "    {key}: {v}");
                }
            }
            if let Some(v) = col.sentinel {
                let _ = writeln!(out, "    sentinel: {v}");
            }
            if let Some(limits) = &col.interpretation_limits {
                let _ = writeln!(out, "    interpretation_limits:");
                for l in limits {
                    let _ = writeln!(out, "      - {l}");
                }
            }
        }
        if !self.interpretation_limits.is_empty() {
            out.push('\n');
            let _ = writeln!(out, "Interpretation Limits:");
            for l in &self.interpretation_limits {
                let _ = writeln!(out, "  - {l}");
            }
        }
        out.push('\n');
        let _ = writeln!(out, "Example Usage:");
        let example: Map<String, Value> = self
            .parameters
            .iter()
            .map(|(pname, p)| {
                let v = match p.kind {
                    ParamType::Int if p.default.is_null() => json!(0),
                    ParamType::Float if p.default.is_null() => json!(0.0),
                    ParamType::Str if p.default.is_null() => p
                        .choices
                        .as_ref()
                        .and_then(|c| c.first().cloned())
                        .unwrap_or(json!("example")),
                    ParamType::Bool => json!(true),
                    _ => p.default.clone(),
                };
                (pname.clone(), v)
            })
            .collect();
        let db = db.unwrap_or("<configured_db>");
        if example.is_empty() {
            let _ = writeln!(out, "  pt-snap query {db} --template-use {}", self.name);
        } else {
            let _ = writeln!(
                out,
                "  pt-snap query {db} --template-use {} --params '{}'",
                self.name,
                python::dumps(&Value::Object(example), false)
            );
        }
        out
    }
}
