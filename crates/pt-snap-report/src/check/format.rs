//! A judgement as people and tools read it: text for a terminal, Markdown for a pull
//! request's comment (the verdict on top, then what grew), JUnit XML (one testcase per
//! rank and device, a failure naming the top growers), and JSON (the command's contract,
//! `contracts/commands/check.json`).

use std::fmt::Write as _;

use serde_json::{json, Value as Json};

use super::{Check, Judgement, Verdict};
use crate::units::{human_bytes, signed_human_bytes};

/// Which form `check` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Markdown,
    Junit,
}

/// Growers named in a one-line summary (JUnit's failure message).
const NAMED: usize = 3;

fn bytes(n: i64) -> String {
    human_bytes(n as f64)
}

/// `+824.00 MiB (+6.5%)`.
fn change(c: &Check) -> String {
    match percent(c.delta, c.baseline_peak) {
        Some(p) => format!("{} ({p:+.1}%)", signed_human_bytes(c.delta)),
        None => signed_human_bytes(c.delta),
    }
}

fn percent(delta: i64, of: i64) -> Option<f64> {
    (of != 0).then(|| delta as f64 * 100.0 / of as f64)
}

impl Judgement {
    fn regressed(&self) -> Vec<&Check> {
        self.checks
            .iter()
            .filter(|c| c.verdict == Verdict::Regressed)
            .collect()
    }

    /// The fields of `check --json` after the envelope's, `inputs` (the baseline's and the
    /// run's paths) first.
    pub fn json_fields(&self, inputs: Vec<(&'static str, Json)>) -> Vec<(&'static str, Json)> {
        let mut fields = vec![("verdict", json!(self.verdict.name()))];
        fields.extend(inputs);
        fields.extend([
            ("metric", json!(self.metric.name())),
            ("limit_rule", json!(self.limit_rule)),
            ("regressed", json!(self.regressed().len())),
            ("checks", json!(self.checks)),
        ]);
        fields
    }

    /// The terminal's report: the verdict, then each rank and device, and what grew where a
    /// peak is over its limit.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let regressed = self.regressed();
        let _ = writeln!(
            out,
            "pt-snap check: {} — {} of {} peak{} over {} limit",
            match self.verdict {
                Verdict::Pass => "PASS",
                Verdict::Regressed => "REGRESSED",
            },
            regressed.len(),
            self.checks.len(),
            if self.checks.len() == 1 { "" } else { "s" },
            if self.checks.len() == 1 {
                "its"
            } else {
                "their"
            },
        );
        let _ = writeln!(
            out,
            "metric: {} peak; limit: {}",
            self.metric.name(),
            self.limit_rule.text()
        );
        for c in &self.checks {
            let _ = writeln!(
                out,
                "\nrank {} device {}: {}  peak {} against {} ({}), limit {}",
                c.rank,
                c.device,
                c.verdict.name().to_uppercase(),
                bytes(c.peak),
                bytes(c.baseline_peak),
                change(c),
                bytes(c.limit)
            );
            if c.verdict == Verdict::Regressed || !c.growers.is_empty() {
                let shown = if c.verdict == Verdict::Regressed {
                    c.growers.len()
                } else {
                    NAMED
                };
                if !c.growers.is_empty() {
                    let _ = writeln!(out, "  grew at the peak:");
                }
                for g in c.growers.iter().take(shown) {
                    let _ = writeln!(
                        out,
                        "    {:>12}  {:<16} {}  ({} → {})",
                        signed_human_bytes(g.delta),
                        g.category,
                        g.label,
                        bytes(g.baseline_bytes),
                        bytes(g.bytes)
                    );
                }
            }
        }
        out
    }

    /// A pull request's comment: the verdict on top, a table of every rank and device, and
    /// for each one over its limit the sites that grew.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        let regressed = self.regressed();
        let _ = match self.verdict {
            Verdict::Pass => writeln!(out, "### ✅ pt-snap check: memory within its limits"),
            Verdict::Regressed => writeln!(out, "### ❌ pt-snap check: memory regressed"),
        };
        let _ = writeln!(
            out,
            "\n**{} of {}** {} peak{} over {} limit. Limit: {}.\n",
            regressed.len(),
            self.checks.len(),
            self.metric.name(),
            if self.checks.len() == 1 { "" } else { "s" },
            if self.checks.len() == 1 {
                "its"
            } else {
                "their"
            },
            self.limit_rule.text()
        );
        let _ = writeln!(
            out,
            "| rank | device | baseline | peak | change | limit | verdict |"
        );
        let _ = writeln!(out, "| ---: | ---: | ---: | ---: | ---: | ---: | :--- |");
        for c in &self.checks {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} |",
                c.rank,
                c.device,
                bytes(c.baseline_peak),
                bytes(c.peak),
                change(c),
                bytes(c.limit),
                match c.verdict {
                    Verdict::Pass => "✅ pass",
                    Verdict::Regressed => "❌ regressed",
                }
            );
        }
        for c in regressed {
            let _ = writeln!(
                out,
                "\n#### Rank {}, device {}: what grew at the peak\n",
                c.rank, c.device
            );
            if c.growers.is_empty() {
                let _ = writeln!(
                    out,
                    "No site holds more than in the baseline: the peak moved to another event."
                );
                continue;
            }
            let _ = writeln!(out, "| change | site | category | baseline | now |");
            let _ = writeln!(out, "| ---: | :--- | :--- | ---: | ---: |");
            for g in &c.growers {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} |",
                    signed_human_bytes(g.delta),
                    md_code(&g.label),
                    g.category,
                    bytes(g.baseline_bytes),
                    bytes(g.bytes)
                );
            }
        }
        out
    }

    /// JUnit XML: one testcase per rank and device; one over its limit fails with a message
    /// naming the sites that grew most.
    pub fn to_junit(&self) -> String {
        let failures = self.regressed().len();
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let suite = format!("pt-snap check: {} peak", self.metric.name());
        let _ = writeln!(
            out,
            "<testsuites name=\"pt-snap check\" tests=\"{}\" failures=\"{failures}\">",
            self.checks.len()
        );
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\">",
            xml(&suite),
            self.checks.len()
        );
        for c in &self.checks {
            let name = format!("rank {} device {}", c.rank, c.device);
            let summary = format!(
                "{} peak {} against {} ({}), limit {}",
                self.metric.name(),
                bytes(c.peak),
                bytes(c.baseline_peak),
                change(c),
                bytes(c.limit)
            );
            if c.verdict == Verdict::Pass {
                let _ = writeln!(
                    out,
                    "    <testcase classname=\"pt-snap.check\" name=\"{}\">\n      <system-out>{}</system-out>\n    </testcase>",
                    xml(&name),
                    xml(&summary)
                );
                continue;
            }
            let named: Vec<String> = c
                .growers
                .iter()
                .take(NAMED)
                .map(|g| format!("{} {}", g.label, signed_human_bytes(g.delta)))
                .collect();
            let message = if named.is_empty() {
                format!("{summary}; no site grew: the peak moved to another event")
            } else {
                format!("{summary}; grew most: {}", named.join("; "))
            };
            let mut body = summary.clone() + "\n";
            for g in &c.growers {
                body += &format!(
                    "{:>12}  {:<16} {}  ({} -> {})\n",
                    signed_human_bytes(g.delta),
                    g.category,
                    g.label,
                    bytes(g.baseline_bytes),
                    bytes(g.bytes)
                );
            }
            let _ = writeln!(
                out,
                "    <testcase classname=\"pt-snap.check\" name=\"{}\">\n      <failure type=\"MemoryRegression\" message=\"{}\">{}</failure>\n    </testcase>",
                xml(&name),
                xml(&message),
                xml(&body)
            );
        }
        out.push_str("  </testsuite>\n</testsuites>\n");
        out
    }
}

/// Text as XML character data or an attribute value.
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' => out.push(c),
            // XML 1.0 cannot carry other control characters at all.
            c if (c as u32) < 0x20 => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// A site as inline code in a Markdown table cell: no pipe or backtick can end it early.
fn md_code(s: &str) -> String {
    format!("`{}`", s.replace('`', "'").replace('|', "\\|"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_and_markdown_escape_what_would_break_them() {
        assert_eq!(
            xml("a<b & \"c\"\u{1}"),
            "a&lt;b &amp; &quot;c&quot;\u{FFFD}"
        );
        assert_eq!(md_code("f (a|b.py:1) → `x`"), "`f (a\\|b.py:1) → 'x'`");
    }
}
