//! Memory categories: what a block is probably for (parameter, gradient, optimizer state,
//! activation, …), judged by rules over the frames of its allocation stack.
//!
//! The rules are data: `categories/builtin.toml` is compiled in, and a file of the same form
//! replaces it (`--categories RULES.toml`; the CLI reads the file, this module only parses
//! text, so the browser can use it too). The first rule with a frame matching all of its
//! patterns wins; every answer names that rule, because this is a heuristic — a stack says
//! where memory was allocated, not what the tensor is for (docs/categories.md).

use std::borrow::Cow;
use std::sync::OnceLock;

use regex_lite::Regex;
use serde::Deserialize;

/// The built-in rules, as compiled in.
pub const BUILTIN_RULES: &str = include_str!("../categories/builtin.toml");

/// The categories, in the order reports list them.
pub const MEMORY_CATEGORIES: [&str; 8] = [
    "parameter",
    "gradient",
    "optimizer_state",
    "activation",
    "temporary",
    "communication",
    "cache/workspace",
    "unknown",
];

/// The `rule` of blocks allocated before the trace: the DB has no allocation stack for them.
pub const NO_ALLOCATION_EVENT: &str = "no-allocation-event";
/// The `rule` of blocks whose allocation recorded no frames.
pub const NO_FRAMES: &str = "no-frames";
/// The `rule` of stacks no rule matched.
pub const NO_RULE_MATCHED: &str = "no-rule-matched";

/// One frame of a stack, as the rules see it.
#[derive(Debug, Clone, Copy)]
pub struct FrameRef<'a> {
    pub filename: &'a str,
    pub name: &'a str,
}

/// A category and the rule that chose it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Categorised<'r> {
    pub category: &'r str,
    pub rule: &'r str,
}

#[derive(Debug)]
struct Rule {
    name: String,
    category: &'static str,
    file: Option<Regex>,
    function: Option<Regex>,
}

/// A frame as the rules match it: its file name with `\` turned into `/`.
struct Frame<'a> {
    file: Cow<'a, str>,
    name: &'a str,
}

impl Rule {
    fn matches(&self, frame: &Frame<'_>) -> bool {
        self.file.as_ref().is_none_or(|re| re.is_match(&frame.file))
            && self
                .function
                .as_ref()
                .is_none_or(|re| re.is_match(frame.name))
    }
}

/// A parsed rule set.
#[derive(Debug)]
pub struct CategoryRules {
    rules: Vec<Rule>,
}

/// The file's form (`[[rule]]` tables).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    #[serde(default)]
    rule: Vec<RuleEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleEntry {
    name: String,
    category: String,
    file: Option<String>,
    function: Option<String>,
    #[allow(dead_code)] // documentation for people reading the file
    why: Option<String>,
}

impl CategoryRules {
    /// The compiled-in rules.
    pub fn builtin() -> &'static CategoryRules {
        static RULES: OnceLock<CategoryRules> = OnceLock::new();
        RULES.get_or_init(|| {
            CategoryRules::parse(BUILTIN_RULES).expect("the built-in category rules are valid")
        })
    }

    /// Parses a rules file; the error says what is wrong and where, in a sentence.
    pub fn parse(text: &str) -> Result<CategoryRules, String> {
        let file: RulesFile =
            toml::from_str(text).map_err(|e| format!("invalid category rules: {e}"))?;
        if file.rule.is_empty() {
            return Err("invalid category rules: no [[rule]] table".into());
        }
        let mut rules = Vec::with_capacity(file.rule.len());
        for (i, r) in file.rule.into_iter().enumerate() {
            let at = format!("rule {} ('{}')", i + 1, r.name);
            if r.name.trim().is_empty() {
                return Err(format!(
                    "invalid category rules: rule {} has no name",
                    i + 1
                ));
            }
            let category = MEMORY_CATEGORIES
                .iter()
                .copied()
                .find(|c| *c == r.category)
                .ok_or_else(|| {
                    format!(
                        "invalid category rules: {at}: unknown category '{}' (one of: {})",
                        r.category,
                        MEMORY_CATEGORIES.join(", ")
                    )
                })?;
            let compile = |what: &str, re: Option<String>| {
                re.map(|re| {
                    Regex::new(&re).map_err(|e| {
                        format!("invalid category rules: {at}: {what} is not a valid regex: {e}")
                    })
                })
                .transpose()
            };
            let file_re = compile("file", r.file)?;
            let function_re = compile("function", r.function)?;
            if file_re.is_none() && function_re.is_none() {
                return Err(format!(
                    "invalid category rules: {at} needs a 'file' or a 'function' pattern"
                ));
            }
            rules.push(Rule {
                name: r.name,
                category,
                file: file_re,
                function: function_re,
            });
        }
        Ok(CategoryRules { rules })
    }

    /// The category of a stack: the first rule one of whose frames matches it.
    pub fn categorise<'f>(&self, frames: impl Iterator<Item = FrameRef<'f>>) -> Categorised<'_> {
        // Each frame is split and normalised once, whatever the number of rules.
        let frames: Vec<Frame<'f>> = frames
            .map(|f| Frame {
                file: if f.filename.contains('\\') {
                    Cow::Owned(f.filename.replace('\\', "/"))
                } else {
                    Cow::Borrowed(f.filename)
                },
                name: f.name,
            })
            .collect();
        if frames.is_empty() {
            return Categorised {
                category: "unknown",
                rule: NO_FRAMES,
            };
        }
        for rule in &self.rules {
            if frames.iter().any(|f| rule.matches(f)) {
                return Categorised {
                    category: rule.category,
                    rule: &rule.name,
                };
            }
        }
        Categorised {
            category: "unknown",
            rule: NO_RULE_MATCHED,
        }
    }

    /// The category of a callstack as the DB renders it (`"{filename}:{line} {name}"` per
    /// frame, one per line, outermost first); `None` for a block without an allocation event.
    pub fn categorise_text(&self, text: Option<&str>) -> Categorised<'_> {
        match text {
            None => Categorised {
                category: "unknown",
                rule: NO_ALLOCATION_EVENT,
            },
            Some(text) => self.categorise(
                text.split('\n')
                    .filter(|l| !l.is_empty())
                    .map(parse_frame_line),
            ),
        }
    }

    /// The rules' names and categories, in order.
    pub fn rules(&self) -> impl Iterator<Item = (&str, &'static str)> {
        self.rules.iter().map(|r| (r.name.as_str(), r.category))
    }
}

/// One line of a rendered callstack, `"{filename}:{line} {name}"`, split back into its
/// file and function. The file is everything before the first `:<digits> ` (Windows drive
/// letters are followed by `\`, not digits); a line without one is all file name.
pub fn parse_frame_line(line: &str) -> FrameRef<'_> {
    for (i, _) in line.match_indices(':') {
        let rest = &line[i + 1..];
        let digits = rest
            .strip_prefix('-')
            .unwrap_or(rest)
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        let sign = usize::from(rest.starts_with('-'));
        if digits > 0 && rest.as_bytes().get(sign + digits) == Some(&b' ') {
            return FrameRef {
                filename: &line[..i],
                name: &rest[sign + digits + 1..],
            };
        }
    }
    FrameRef {
        filename: line,
        name: "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_lines_split_back_into_file_and_function() {
        let f = parse_frame_line("C:\\work\\.venv\\torch\\_tensor.py:626 backward");
        assert_eq!(
            (f.filename, f.name),
            ("C:\\work\\.venv\\torch\\_tensor.py", "backward")
        );
        let f = parse_frame_line(":0 torch::autograd::Engine::thread_main(std::shared_ptr<a>, b)");
        assert_eq!(f.filename, "");
        assert_eq!(
            f.name,
            "torch::autograd::Engine::thread_main(std::shared_ptr<a>, b)"
        );
        let f = parse_frame_line("??:0 at::cuda::getNewWorkspace()");
        assert_eq!((f.filename, f.name), ("??", "at::cuda::getNewWorkspace()"));
        assert_eq!(parse_frame_line("no line").filename, "no line");
    }

    #[test]
    fn the_builtin_rules_parse_and_use_every_category_but_unknown() {
        let rules = CategoryRules::builtin();
        for c in MEMORY_CATEGORIES.iter().filter(|c| **c != "unknown") {
            assert!(
                rules.rules().any(|(_, rc)| rc == *c),
                "no built-in rule for {c}"
            );
        }
    }

    #[test]
    fn bad_rule_files_are_refused_with_a_reason() {
        let cases = [
            ("", "no [[rule]]"),
            (
                "[[rule]]\nname='a'\ncategory='weights'\nfile='x'",
                "unknown category 'weights'",
            ),
            (
                "[[rule]]\nname='a'\ncategory='parameter'\nfile='('",
                "file is not a valid regex",
            ),
            (
                "[[rule]]\nname='a'\ncategory='parameter'",
                "needs a 'file' or a 'function'",
            ),
            (
                "[[rule]]\nname='a'\ncategory='parameter'\nfiel='x'",
                "unknown field",
            ),
            ("[[rule]\n", "invalid category rules"),
        ];
        for (text, want) in cases {
            let err = CategoryRules::parse(text).unwrap_err();
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }

    #[test]
    fn the_first_matching_rule_wins_and_names_itself() {
        let rules = CategoryRules::parse(
            "[[rule]]\nname='opt'\ncategory='optimizer_state'\nfile='optim/'\n\
             [[rule]]\nname='fwd'\ncategory='activation'\nfunction='^forward$'\n",
        )
        .unwrap();
        let text = "train.py:10 main\ntorch/optim/adam.py:90 step\nmodel.py:3 forward";
        assert_eq!(
            rules.categorise_text(Some(text)),
            Categorised {
                category: "optimizer_state",
                rule: "opt"
            }
        );
        let text = "train.py:10 main\nmodel.py:3 forward";
        assert_eq!(rules.categorise_text(Some(text)).rule, "fwd");
        assert_eq!(
            rules.categorise_text(Some("train.py:10 main")).rule,
            NO_RULE_MATCHED
        );
        assert_eq!(rules.categorise_text(Some("")).rule, NO_FRAMES);
        assert_eq!(rules.categorise_text(None).rule, NO_ALLOCATION_EVENT);
    }

    /// `file` and `function` must hold on the same frame, not on two different ones.
    #[test]
    fn both_patterns_must_match_one_frame() {
        let rules = CategoryRules::parse(
            "[[rule]]\nname='init'\ncategory='parameter'\nfile='nn/modules/'\nfunction='^__init__$'\n",
        )
        .unwrap();
        let apart = "a.py:1 __init__\ntorch/nn/modules/module.py:2 _call_impl";
        assert_eq!(rules.categorise_text(Some(apart)).category, "unknown");
        let together = "a.py:1 main\ntorch/nn/modules/linear.py:2 __init__";
        assert_eq!(rules.categorise_text(Some(together)).category, "parameter");
    }
}
