//! Rank numbers from file names: what a set of snapshots of one job calls its ranks, and
//! the order people number files in.

use std::cmp::Ordering;

/// Where a row's rank came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RankSource {
    /// Read from the file name ([`rank_from_name`]).
    Name,
    /// The file's position (from 0) in the natural order of the paths ([`natural_cmp`]).
    Position,
}

impl RankSource {
    pub fn name(self) -> &'static str {
        match self {
            RankSource::Name => "name",
            RankSource::Position => "position",
        }
    }
}

/// The decimal number at the start of `s`, with how many bytes it takes; `None` without a
/// digit or past `u64`.
fn leading_number(s: &[u8]) -> Option<(u64, usize)> {
    let len = s.iter().take_while(|b| b.is_ascii_digit()).count();
    if len == 0 {
        return None;
    }
    let text = std::str::from_utf8(&s[..len]).ok()?;
    text.parse().ok().map(|n| (n, len))
}

fn is_separator(b: u8) -> bool {
    matches!(b, b'_' | b'-' | b'.')
}

/// The one value of a rule's matches: `None` for no match, `Some(None)` when they disagree
/// (the name is ambiguous, and later rules are not asked).
fn agreed(found: &[u64]) -> Option<Option<u64>> {
    let first = *found.first()?;
    Some(found.iter().all(|&n| n == first).then_some(first))
}

/// Rule 1: the word `rank` (any case, not preceded by a letter) followed by the number, with
/// at most one `_`, `-` or `.` between: `rank3`, `rank_3`, `RANK-03`, `world_rank.3`. A
/// global rank wins over a `local_rank`/`localrank` one.
fn keyword_rank(lower: &[u8]) -> Option<Option<u64>> {
    let (mut global, mut local) = (Vec::new(), Vec::new());
    let mut at = 0;
    while let Some(i) = find(&lower[at..], b"rank").map(|i| i + at) {
        at = i + 4;
        if i > 0 && lower[i - 1].is_ascii_alphabetic() && !lower[..i].ends_with(b"local") {
            continue;
        }
        let mut rest = &lower[i + 4..];
        if rest.first().is_some_and(|&b| is_separator(b)) {
            rest = &rest[1..];
        }
        let Some((n, _)) = leading_number(rest) else {
            continue;
        };
        let before = &lower[..i];
        let is_local = ["local", "local_", "local-"]
            .iter()
            .any(|p| before.ends_with(p.as_bytes()));
        if is_local {
            local.push(n);
        } else {
            global.push(n);
        }
    }
    agreed(&global).or_else(|| agreed(&local))
}

/// Rule 2: `r` and the number as a token of its own — at the start or after `_`, `-` or
/// `.`, and followed by one of those or the end: `-r3`, `_r3`, `r3_step100`.
fn r_token_rank(lower: &[u8]) -> Option<Option<u64>> {
    let mut found = Vec::new();
    for i in 0..lower.len() {
        if lower[i] != b'r' || (i > 0 && !is_separator(lower[i - 1])) {
            continue;
        }
        let Some((n, len)) = leading_number(&lower[i + 1..]) else {
            continue;
        };
        let end = i + 1 + len;
        if end == lower.len() || is_separator(lower[end]) {
            found.push(n);
        }
    }
    agreed(&found)
}

/// Rule 3: a `.`-separated part that is all digits: `snapshot.3.pickle`.
fn dot_part_rank(stem: &str) -> Option<Option<u64>> {
    let found: Vec<u64> = stem
        .split('.')
        .skip(1)
        .filter_map(|part| match leading_number(part.as_bytes()) {
            Some((n, len)) if len == part.len() => Some(n),
            _ => None,
        })
        .collect();
    agreed(&found)
}

/// Rule 4: a number ending the name after `_` or `-`: `memory_snapshot_3.pickle`.
fn trailing_rank(lower: &[u8]) -> Option<Option<u64>> {
    let digits = lower
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_digit())
        .count();
    let start = lower.len() - digits;
    if digits == 0 || start == 0 || !matches!(lower[start - 1], b'_' | b'-') {
        return None;
    }
    leading_number(&lower[start..]).map(|(n, _)| Some(n))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The rank a file name states, by the first of these rules that matches anywhere in the
/// name (its snapshot, compression and `.db` suffixes removed first):
///
/// 1. `rank` and a number: `rank3`, `rank_3`, `rank-3`, `rank.3`, `RANK03` (the word not
///    preceded by a letter, except `local_rank`, which counts only when no other `rank` does);
/// 2. `r` and a number as a token of its own: `-r3`, `_r3`, `.r3`, `r3_…`;
/// 3. a number as a `.`-separated part: `snapshot.3.pickle`;
/// 4. a number ending the name after `_` or `-`: `memory_snapshot_3.pickle`.
///
/// When the matches of that rule disagree (`rank1_rank2`), the name states no rank.
pub fn rank_from_name(file_name: &str) -> Option<u64> {
    let stem = pt_snap_model::names::stem(file_name);
    let lower = stem.to_ascii_lowercase();
    let lower = lower.as_bytes();
    keyword_rank(lower)
        .or_else(|| r_token_rank(lower))
        .or_else(|| dot_part_rank(stem))
        .or_else(|| trailing_rank(lower))
        .flatten()
}

/// Orders paths as people number files: runs of digits compare by value, so `rank2` comes
/// before `rank10`; equal values with different spellings (`rank02`, `rank2`) and everything
/// else compare as text.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (x, y) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < x.len() && j < y.len() {
        if x[i].is_ascii_digit() && y[j].is_ascii_digit() {
            let di = x[i..].iter().take_while(|b| b.is_ascii_digit()).count();
            let dj = y[j..].iter().take_while(|b| b.is_ascii_digit()).count();
            let trim = |s: &[u8]| {
                let zeros = s.iter().take_while(|&&b| b == b'0').count();
                s[zeros..].to_vec()
            };
            let (vi, vj) = (trim(&x[i..i + di]), trim(&y[j..j + dj]));
            let by_value = vi.len().cmp(&vj.len()).then_with(|| vi.cmp(&vj));
            if by_value != Ordering::Equal {
                return by_value;
            }
            i += di;
            j += dj;
        } else {
            if x[i] != y[j] {
                return x[i].cmp(&y[j]);
            }
            i += 1;
            j += 1;
        }
    }
    (x.len() - i).cmp(&(y.len() - j)).then_with(|| a.cmp(b))
}

/// The ranks of a set of files, and why they are what they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankAssignment {
    /// One per file, in the order given.
    pub ranks: Vec<u64>,
    pub source: RankSource,
    /// Why the positions were used: the first file whose name states no rank, or the first
    /// two that state the same one. `None` when the names gave the ranks.
    pub note: Option<String>,
}

/// Ranks for files given in natural order ([`natural_cmp`]) by their names (file names, not
/// paths): the ranks the names state when every name states one and no two state the same;
/// otherwise every file's position in that order. All or nothing, because ranks from names
/// and from positions would collide (the file at position 3 and the one named `rank3`).
pub fn assign_ranks(names: &[&str]) -> RankAssignment {
    let positions = |note: String| RankAssignment {
        ranks: (0..names.len() as u64).collect(),
        source: RankSource::Position,
        note: Some(note),
    };
    let mut seen = std::collections::HashMap::with_capacity(names.len());
    let mut ranks = Vec::with_capacity(names.len());
    for name in names {
        let Some(rank) = rank_from_name(name) else {
            return positions(format!("the name {name:?} states no rank"));
        };
        if let Some(first) = seen.insert(rank, *name) {
            return positions(format!("{first:?} and {name:?} both state rank {rank}"));
        }
        ranks.push(rank);
    }
    RankAssignment {
        ranks,
        source: RankSource::Name,
        note: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_from_the_usual_names() {
        let cases = [
            ("rank3.pickle", Some(3)),
            ("rank_3.pkl", Some(3)),
            ("rank-3.pickle", Some(3)),
            ("RANK03.pickle", Some(3)),
            ("memory_snapshot_rank12.pickle", Some(12)),
            ("snapshot_rank_7_step_100.pickle", Some(7)),
            ("world_rank.5.pickle", Some(5)),
            ("local_rank2.pickle", Some(2)),
            ("local_rank2_rank10.pickle", Some(10)),
            ("snap-r3.pickle", Some(3)),
            ("snap_r3_step100.pkl", Some(3)),
            ("r4.pickle", Some(4)),
            ("snapshot.3.pickle", Some(3)),
            ("memory_snapshot_3.pickle", Some(3)),
            ("mem-11.pkl", Some(11)),
            ("rank3.pickle.db", Some(3)),
            ("rank3.pickle.gz", Some(3)),
            ("rank3.json.zst.db", Some(3)),
            ("snapshot_5.pickle.db", Some(5)),
        ];
        for (name, want) in cases {
            assert_eq!(rank_from_name(name), want, "{name}");
        }
    }

    #[test]
    fn names_without_a_rank_or_with_two() {
        for name in [
            "snapshot.pickle",
            "layer3.pickle",      // a letter before the number, not `rank`
            "gpu3.pickle",        // no rule reads device words
            "ranking.pickle",     // `rank` without a number
            "rank1_rank2.pickle", // two ranks: ambiguous
            "snap.2024.3.pickle", // two dot parts: ambiguous
            "cranky3.pickle",     // `rank` inside a word
            "snap_r3_r4.pickle",
            "12345678901234567890123.pickle",
            "rank99999999999999999999999.pkl",
        ] {
            assert_eq!(rank_from_name(name), None, "{name}");
        }
        // The first rule that matches decides, even when a later one would read a number.
        assert_eq!(rank_from_name("rank2_step_100.pickle"), Some(2));
        assert_eq!(rank_from_name("r1.snapshot.7.pickle"), Some(1));
    }

    #[test]
    fn natural_order_reads_numbers_by_value() {
        let mut names = vec![
            "rank10.pkl",
            "rank2.pkl",
            "rank1.pkl",
            "rank02.pkl",
            "a.pkl",
        ];
        names.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            names,
            [
                "a.pkl",
                "rank1.pkl",
                "rank02.pkl",
                "rank2.pkl",
                "rank10.pkl"
            ]
        );
        assert_eq!(natural_cmp("x", "x"), Ordering::Equal);
        assert_eq!(natural_cmp("x1", "x1a"), Ordering::Less);
    }

    #[test]
    fn ranks_come_from_names_only_when_all_differ() {
        let a = assign_ranks(&["rank0.pkl", "rank1.pkl", "rank7.pkl"]);
        assert_eq!(a.ranks, [0, 1, 7]);
        assert_eq!(a.source, RankSource::Name);
        assert_eq!(a.note, None);

        let a = assign_ranks(&["rank0.pkl", "rank1.pkl", "notes.pkl"]);
        assert_eq!(a.ranks, [0, 1, 2]);
        assert_eq!(a.source, RankSource::Position);
        assert!(a.note.unwrap().contains("\"notes.pkl\" states no rank"));

        let a = assign_ranks(&["rank3.pkl", "rank_3.pickle"]);
        assert_eq!((a.ranks, a.source), (vec![0, 1], RankSource::Position));
        assert!(a.note.unwrap().contains("both state rank 3"));

        let a = assign_ranks(&[]);
        assert_eq!((a.ranks.len(), a.source), (0, RankSource::Name));
    }
}
