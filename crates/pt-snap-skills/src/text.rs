//! The reference's human-readable skill listing: a one-sentence summary of a description,
//! wrapped the way Python's `textwrap.fill` wraps it.

/// The first sentence of `description` (a `.` followed by a space or the end, outside
/// backticks), with whitespace collapsed; else the whole text when at most `max_chars`
/// characters, else cut at a word boundary with `…`.
pub fn summary(description: &str, max_chars: usize) -> String {
    let collapsed = description.split_whitespace().collect::<Vec<_>>().join(" ");
    let chars: Vec<char> = collapsed.chars().collect();
    let mut in_ticks = false;
    for (i, &c) in chars.iter().enumerate() {
        if c == '`' {
            in_ticks = !in_ticks;
        } else if !in_ticks && c == '.' && chars.get(i + 1).is_none_or(|next| next.is_whitespace())
        {
            return chars[..=i].iter().collect();
        }
    }
    if chars.len() <= max_chars {
        return collapsed;
    }
    let clipped: String = chars[..max_chars.saturating_sub(1)].iter().collect();
    let clipped = match clipped.rfind(' ') {
        Some(i) => clipped[..i].to_owned(),
        None => clipped,
    };
    format!("{clipped}…")
}

/// `textwrap.fill(text, width, initial_indent=indent, subsequent_indent=indent)` with the
/// defaults: whitespace becomes spaces, words may break after hyphens (`pt-` / `snap`), words
/// longer than a line are cut, whitespace at line ends is dropped. Widths count characters.
pub fn fill(text: &str, width: usize, indent: &str) -> String {
    let munged: String = text
        .chars()
        .map(|c| if c.is_ascii_whitespace() { ' ' } else { c })
        .collect();
    let chunks = split_chunks(&munged.chars().collect::<Vec<_>>());
    wrap_chunks(chunks, width, indent).join("\n")
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `[^\d\W]`: a word character that is not a digit.
fn is_letter(c: char) -> bool {
    is_word(c) && !c.is_numeric()
}

fn is_word_punct(c: char) -> bool {
    is_word(c) || matches!(c, '!' | '"' | '\'' | '&' | '.' | ',' | '?')
}

/// `TextWrapper.wordsep_re`: runs of spaces, and words split after hyphens that join
/// letters, and around em-dashes (`--`).
fn split_chunks(text: &[char]) -> Vec<Vec<char>> {
    let mut chunks = Vec::new();
    let mut pos = 0;
    while pos < text.len() {
        let end = if text[pos] == ' ' {
            pos + text[pos..].iter().take_while(|&&c| c == ' ').count()
        } else {
            word_chunk_end(text, pos)
        };
        chunks.push(text[pos..end].to_vec());
        pos = end;
    }
    chunks
}

fn word_chunk_end(t: &[char], pos: usize) -> usize {
    let at = |i: usize| t.get(i).copied();
    let letter_at = |i: usize| at(i).is_some_and(is_letter);
    let dashes_then_word = |i: usize| {
        let dashes = t[i..].iter().take_while(|&&c| c == '-').count();
        dashes >= 2 && at(i + dashes).is_some_and(is_word)
    };
    // An em-dash chunk of its own.
    if pos > 0 && is_word_punct(t[pos - 1]) && dashes_then_word(pos) {
        return pos + t[pos..].iter().take_while(|&&c| c == '-').count();
    }
    let mut e = pos + 1;
    loop {
        if e >= t.len() || t[e] == ' ' {
            return e;
        }
        if t[e] == '-' {
            let behind = (e >= 2 && letter_at(e - 2) && letter_at(e - 1))
                || (e >= 3 && letter_at(e - 3) && at(e - 2) == Some('-') && letter_at(e - 1));
            let ahead = letter_at(e + 1)
                && (letter_at(e + 2) || (at(e + 2) == Some('-') && letter_at(e + 3)));
            if behind && ahead {
                return e + 1;
            }
        }
        if is_word_punct(t[e - 1]) && dashes_then_word(e) {
            return e;
        }
        e += 1;
    }
}

/// `TextWrapper._wrap_chunks` with `_handle_long_word`.
fn wrap_chunks(mut chunks: Vec<Vec<char>>, width: usize, indent: &str) -> Vec<String> {
    let blank = |c: &[char]| c.iter().all(|&c| c == ' ');
    let indent_len = indent.chars().count();
    let line_width = width as isize - indent_len as isize;
    chunks.reverse();
    let mut lines = Vec::new();
    while !chunks.is_empty() {
        let mut line: Vec<Vec<char>> = Vec::new();
        let mut len = 0isize;
        if !lines.is_empty() && chunks.last().is_some_and(|c| blank(c)) {
            chunks.pop();
        }
        while let Some(chunk) = chunks.last() {
            if len + chunk.len() as isize <= line_width {
                len += chunk.len() as isize;
                line.push(chunks.pop().expect("non-empty"));
            } else {
                break;
            }
        }
        if chunks.last().is_some_and(|c| c.len() as isize > line_width) {
            let space_left = if line_width < 1 { 1 } else { line_width - len } as usize;
            let chunk = chunks.last_mut().expect("non-empty");
            let mut end = space_left;
            if chunk.len() > space_left {
                let hyphen = chunk[..space_left.min(chunk.len())]
                    .iter()
                    .rposition(|&c| c == '-');
                if let Some(h) = hyphen.filter(|&h| h > 0 && chunk[..h].iter().any(|&c| c != '-')) {
                    end = h + 1;
                }
            }
            let end = end.min(chunk.len());
            line.push(chunk[..end].to_vec());
            chunk.drain(..end);
            if chunk.is_empty() {
                chunks.pop();
            }
        }
        if line.last().is_some_and(|c| blank(c)) {
            line.pop();
        }
        if !line.is_empty() {
            let body: String = line.iter().flatten().collect();
            lines.push(format!("{indent}{body}"));
        }
    }
    lines
}

/// The reference's text listing: name, status, the locations that hold a copy, and the
/// description's first sentence wrapped to a terminal of `columns` (at most 88).
pub fn listings(listings: &[crate::SkillListing], columns: usize) -> String {
    let width = columns.saturating_sub(2).clamp(40, 88);
    let mut out = String::new();
    for (i, item) in listings.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let locations: Vec<String> = item
            .locations
            .iter()
            .filter(|l| l.status != crate::Status::Missing)
            .map(|l| match l.host {
                // Python shows the parent of a bare name as `.`.
                crate::Host::Custom => match l.path.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p.display().to_string(),
                    _ => ".".to_owned(),
                },
                host => format!("{host}:{}", l.scope),
            })
            .collect();
        let locations = if locations.is_empty() {
            "—".to_owned()
        } else {
            locations.join(", ")
        };
        out.push_str(&format!(
            "{}\n  Status     {}\n  Locations  {locations}\n",
            item.name,
            item.status.as_str()
        ));
        let summary = summary(&item.description, 140);
        if !summary.is_empty() {
            out.push_str(&fill(&summary, width, "  "));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sentence_outside_backticks() {
        assert_eq!(
            summary("Dump a `.pkl` / `.pickle`. Then more.", 140),
            "Dump a `.pkl` / `.pickle`."
        );
        assert_eq!(summary("No  period\nhere", 140), "No period here");
        assert_eq!(summary("aaa bbb ccc", 8), "aaa…");
        assert_eq!(summary("", 140), "");
    }

    // Expected values are Python 3.11's textwrap.fill(text, width, initial_indent="  ",
    // subsequent_indent="  ").
    #[test]
    fn wraps_like_textwrap() {
        let text = "Use when explaining which blocks and allocation callstacks were live at an \
                    active, allocated, or reserved high-water event in an existing pt-snap \
                    SnapshotDB, including full-trace or bounded event-range peak breakdowns.";
        assert_eq!(
            fill(text, 78, "  "),
            "  Use when explaining which blocks and allocation callstacks were live at an\n  \
             active, allocated, or reserved high-water event in an existing pt-snap\n  \
             SnapshotDB, including full-trace or bounded event-range peak breakdowns."
        );
        assert_eq!(
            fill("see pt-snap-memory-peak-breakdown now", 20, "  "),
            "  see pt-snap-\n  memory-peak-\n  breakdown now"
        );
        assert_eq!(fill("abcdefghijklmnop", 10, "  "), "  abcdefgh\n  ijklmnop");
        assert_eq!(fill("a -- b x--y", 8, "  "), "  a -- b\n  x--y");
    }
}
