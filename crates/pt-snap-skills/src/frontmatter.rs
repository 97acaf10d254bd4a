//! The YAML front matter of a `SKILL.md`: just enough YAML for `name` and `description`.
//!
//! Like the reference, the front matter is the text between a leading `---` and the next
//! `---`; a file without it has no metadata. Top-level `key: value` entries are read and the
//! values of `name` and `description` are decoded: plain (also folded over indented
//! continuation lines), single- or double-quoted, or `|` / `>` block scalars. `null`, `~` and
//! empty values are absent, and YAML booleans read as Python prints them (`True`/`False`),
//! since the reference applies `str()` to what PyYAML returns. What PyYAML rejects in a plain
//! scalar (`: `, reserved indicators) is an error here too; flow collections, anchors and tags
//! in those two values are rejected as unsupported. Other keys are skipped unread.

/// The two fields the catalog uses.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct FrontMatter {
    pub name: Option<String>,
    pub description: Option<String>,
}

/// Extracts and parses the front matter of `text`. `Err` carries the reason only; the caller
/// adds the file name.
pub(crate) fn parse(text: &str) -> Result<FrontMatter, String> {
    let Some(rest) = text.strip_prefix("---") else {
        return Ok(FrontMatter::default());
    };
    let Some(end) = rest.find("---") else {
        return Ok(FrontMatter::default());
    };
    parse_yaml(&rest[..end])
}

struct Line<'a> {
    indent: usize,
    text: &'a str,
}

impl Line<'_> {
    fn is_blank(&self) -> bool {
        self.text.trim().is_empty()
    }
}

fn parse_yaml(yaml: &str) -> Result<FrontMatter, String> {
    let lines: Vec<Line> = yaml
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .map(|l| {
            let text = l.trim_start_matches(' ');
            Line {
                indent: l.len() - text.len(),
                text,
            }
        })
        .collect();

    let mut fields = FrontMatter::default();
    let mut i = 0;
    let mut first = true;
    while i < lines.len() {
        let line = &lines[i];
        if line.is_blank() || (line.indent == 0 && line.text.starts_with('#')) {
            i += 1;
            continue;
        }
        let key_value = (line.indent == 0).then(|| split_key(line.text)).flatten();
        let Some((key, value)) = key_value else {
            if first {
                // A scalar or list document is not a mapping: no metadata, as the reference.
                return Ok(FrontMatter::default());
            }
            return Err(format!("unexpected line {:?}", line.text));
        };
        first = false;
        // The value continues on the following indented or blank lines.
        let start = i + 1;
        let mut end = start;
        while end < lines.len() && (lines[end].indent > 0 || lines[end].is_blank()) {
            end += 1;
        }
        let slot = match key {
            "name" => Some(&mut fields.name),
            "description" => Some(&mut fields.description),
            _ => None,
        };
        if let Some(slot) = slot {
            *slot = scalar(value, &lines[start..end]).map_err(|e| format!("{key}: {e}"))?;
        }
        i = end;
    }
    Ok(fields)
}

/// `key: value` or `key:` at the start of a line.
fn split_key(text: &str) -> Option<(&str, &str)> {
    let colon = text.find(':')?;
    let key = &text[..colon];
    let after = &text[colon + 1..];
    let valid = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    (valid && (after.is_empty() || after.starts_with([' ', '\t']))).then_some((key, after.trim()))
}

fn scalar(first: &str, more: &[Line]) -> Result<Option<String>, String> {
    if first.starts_with(['|', '>']) {
        return block_scalar(first, more).map(Some);
    }
    let continuation = more.iter().map(|l| l.text.trim_end());
    if first.starts_with(['\'', '"']) {
        let mut raw = first.to_owned();
        for c in continuation {
            raw.push('\n');
            raw.push_str(c);
        }
        return quoted(raw.trim_end()).map(Some);
    }
    let lines: Vec<&str> = std::iter::once(first).chain(continuation).collect();
    plain(&lines)
}

/// A plain scalar over one or more lines; single line breaks fold to spaces.
fn plain(lines: &[&str]) -> Result<Option<String>, String> {
    let mut out = String::new();
    let mut breaks = 0;
    for line in lines {
        let line = strip_comment(line).trim();
        if line.is_empty() {
            if !out.is_empty() {
                breaks += 1;
            }
            continue;
        }
        if line.contains(": ") || line.ends_with(':') {
            return Err("mapping values are not allowed here".into());
        }
        if !out.is_empty() {
            if breaks == 0 {
                out.push(' ');
            } else {
                out.extend(std::iter::repeat_n('\n', breaks));
            }
        }
        breaks = 0;
        out.push_str(line);
    }
    let indicator = out.starts_with(['[', '{', '&', '*', '!', '%', '@', '`', '-', '?']);
    let dash_word =
        out.starts_with(['-', '?']) && out[1..].starts_with(|c: char| !c.is_whitespace());
    if indicator && !dash_word {
        return Err(format!("unsupported YAML value {out:?}"));
    }
    Ok(resolve_plain(out))
}

/// ` #` starts a comment in a plain scalar or after a quoted one.
fn strip_comment(line: &str) -> &str {
    if line.starts_with('#') {
        return "";
    }
    line.find(" #").map_or(line, |i| &line[..i])
}

/// PyYAML's implicit types as far as `str()` of them matters: null is absent, booleans print
/// as Python's. Numbers keep their text.
fn resolve_plain(s: String) -> Option<String> {
    match s.as_str() {
        "" | "~" | "null" | "Null" | "NULL" => None,
        "true" | "True" | "TRUE" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => {
            Some("True".into())
        }
        "false" | "False" | "FALSE" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => {
            Some("False".into())
        }
        _ => Some(s),
    }
}

/// A single- or double-quoted scalar, possibly spanning lines: folded first, then unescaped,
/// so that escaped line breaks (`\n`) survive the folding.
fn quoted(raw: &str) -> Result<String, String> {
    let double = raw.starts_with('"');
    let quote = if double { '"' } else { '\'' };
    let body = &raw[1..];
    let mut end = None;
    let mut chars = body.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if double && c == '\\' {
            chars.next();
        } else if c == quote {
            if !double && chars.peek().is_some_and(|&(_, n)| n == '\'') {
                chars.next();
            } else {
                end = Some(i);
                break;
            }
        }
    }
    let end = end.ok_or("unterminated quoted scalar")?;
    let trailing = strip_comment(body[end + 1..].trim());
    if !trailing.is_empty() {
        return Err(format!("unexpected text after quoted scalar: {trailing:?}"));
    }
    let folded = fold_flow(&body[..end], double);
    if double {
        unescape(&folded)
    } else {
        Ok(folded.replace("''", "'"))
    }
}

/// Line folding of quoted scalars: whitespace around a line break is dropped, one break
/// becomes a space, n+1 breaks become n newlines; in double quotes a line ending in `\`
/// joins the next line directly.
fn fold_flow(raw: &str, double: bool) -> String {
    let lines: Vec<&str> = raw.split('\n').collect();
    let mut out = String::new();
    let mut empty_run = 0;
    let mut joined = false;
    for (i, line) in lines.iter().enumerate() {
        let last = i + 1 == lines.len();
        let mut piece = if i > 0 {
            line.trim_start_matches([' ', '\t'])
        } else {
            line
        };
        let escaped_break = double && !last && ends_in_escape(piece);
        if escaped_break {
            piece = &piece[..piece.len() - 1];
        } else if !last {
            piece = piece.trim_end_matches([' ', '\t']);
        }
        if i > 0 && !joined {
            if piece.is_empty() && !last && !escaped_break {
                empty_run += 1;
                continue;
            }
            if empty_run == 0 {
                out.push(' ');
            } else {
                out.extend(std::iter::repeat_n('\n', empty_run));
            }
        }
        empty_run = 0;
        joined = escaped_break;
        out.push_str(piece);
    }
    out
}

/// Does `s` end in a backslash that is not itself escaped?
fn ends_in_escape(s: &str) -> bool {
    s.bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 1
}

fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let e = chars.next().ok_or("unterminated escape")?;
        let simple = match e {
            '\\' => Some('\\'),
            '"' => Some('"'),
            '/' => Some('/'),
            ' ' => Some(' '),
            '0' => Some('\0'),
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            't' | '\t' => Some('\t'),
            'n' => Some('\n'),
            'v' => Some('\x0b'),
            'f' => Some('\x0c'),
            'r' => Some('\r'),
            'e' => Some('\x1b'),
            'N' => Some('\u{85}'),
            '_' => Some('\u{a0}'),
            'L' => Some('\u{2028}'),
            'P' => Some('\u{2029}'),
            _ => None,
        };
        if let Some(c) = simple {
            out.push(c);
            continue;
        }
        let digits = match e {
            'x' => 2,
            'u' => 4,
            'U' => 8,
            other => return Err(format!("unknown escape \\{other}")),
        };
        let hex: String = chars.by_ref().take(digits).collect();
        let code = u32::from_str_radix(&hex, 16)
            .ok()
            .filter(|_| hex.len() == digits)
            .and_then(char::from_u32)
            .ok_or_else(|| format!("bad escape \\{e}{hex}"))?;
        out.push(code);
    }
    Ok(out)
}

/// `|` (literal) and `>` (folded) block scalars with an optional chomping indicator.
fn block_scalar(header: &str, lines: &[Line]) -> Result<String, String> {
    let header = strip_comment(header).trim();
    let literal = header.starts_with('|');
    let chomp = &header[1..];
    if !matches!(chomp, "" | "-" | "+") {
        return Err(format!("unsupported block scalar header {header:?}"));
    }
    let indent = lines.iter().find(|l| !l.is_blank()).map_or(0, |l| l.indent);
    let body: Vec<String> = lines
        .iter()
        .map(|l| {
            if l.is_blank() {
                String::new()
            } else {
                format!("{}{}", " ".repeat(l.indent.saturating_sub(indent)), l.text)
            }
        })
        .collect();
    let content_end = body
        .iter()
        .rposition(|l| !l.is_empty())
        .map_or(0, |i| i + 1);
    let content = &body[..content_end];
    let mut out = String::new();
    let mut previous: Option<&String> = None;
    let mut empties = 0;
    for line in content {
        if line.is_empty() {
            empties += 1;
            continue;
        }
        let breaks = match previous {
            None => empties,
            // Folding turns the break between two plain lines into a space, and a break
            // followed by empty lines into just those lines' newlines.
            Some(prev) if !literal && !line.starts_with(' ') && !prev.starts_with(' ') => {
                if empties == 0 {
                    out.push(' ');
                }
                empties
            }
            Some(_) => empties + 1,
        };
        out.extend(std::iter::repeat_n('\n', breaks));
        out.push_str(line);
        previous = Some(line);
        empties = 0;
    }
    match chomp {
        "-" => {}
        "+" => out.extend(std::iter::repeat_n('\n', body.len() - content_end + 1)),
        _ if !content.is_empty() => out.push('\n'),
        _ => {}
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(text: &str) -> (Option<String>, Option<String>) {
        let f = parse(text).unwrap();
        (f.name, f.description)
    }

    #[test]
    fn plain_values() {
        let t =
            "---\nname: pt-snap-helper\ndescription: Routes work. Prefers `--json`.\n---\n# body";
        assert_eq!(
            fields(t),
            (
                Some("pt-snap-helper".into()),
                Some("Routes work. Prefers `--json`.".into())
            )
        );
    }

    #[test]
    fn no_front_matter() {
        assert_eq!(parse("# title\nname: x\n").unwrap(), FrontMatter::default());
        assert_eq!(parse("---\nname: x\n").unwrap(), FrontMatter::default());
        assert_eq!(
            parse("---\njust text\n---\n").unwrap(),
            FrontMatter::default()
        );
    }

    #[test]
    fn folded_plain_and_comments() {
        let t = "---\n# c\nname: x # comment\ndescription: one\n  two\n\n  three\n---\n";
        assert_eq!(fields(t), (Some("x".into()), Some("one two\nthree".into())));
    }

    #[test]
    fn quoted_values() {
        let t = "---\nname: 'it''s'\ndescription: \"a: b \\u00e9\\n\"\n---\n";
        assert_eq!(
            fields(t),
            (Some("it's".into()), Some("a: b \u{e9}\n".into()))
        );
        let t = "---\ndescription: 'one\n  two\n\n  three'\n---\n";
        assert_eq!(fields(t).1.as_deref(), Some("one two\nthree"));
        let t = "---\ndescription: \"one\\\n  two\"\n---\n";
        assert_eq!(fields(t).1.as_deref(), Some("onetwo"));
    }

    #[test]
    fn block_values() {
        let t = "---\ndescription: >\n  one\n  two\n\n  three\nname: |-\n  a\n  b\n---\n";
        assert_eq!(
            fields(t),
            (Some("a\nb".into()), Some("one two\nthree\n".into()))
        );
    }

    #[test]
    fn nulls_and_booleans() {
        assert_eq!(fields("---\nname:\ndescription: ~\n---\n"), (None, None));
        assert_eq!(fields("---\nname: yes\n---\n").0.as_deref(), Some("True"));
    }

    #[test]
    fn what_pyyaml_rejects_is_rejected() {
        assert!(parse("---\ndescription: use when: x\n---\n").is_err());
        assert!(parse("---\ndescription: [a, b]\n---\n").is_err());
        assert!(parse("---\nname: x\nnot a key\n---\n").is_err());
    }

    #[test]
    fn other_keys_are_not_decoded() {
        let t = "---\nname: x\nmetadata:\n  a: b\nallowed-tools: [Bash]\ndescription: d\n---\n";
        assert_eq!(fields(t), (Some("x".into()), Some("d".into())));
    }
}
