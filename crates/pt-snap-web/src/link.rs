//! The views and the deep link in the URL's hash (`#device=0&event=7498&view=tree`).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    Overview,
    Peak,
    Tree,
    Segments,
    Leaks,
    Blocks,
    Lifetimes,
    Templates,
    Sql,
    Oom,
}

impl Tab {
    pub const ALL: [Tab; 10] = [
        Tab::Overview,
        Tab::Peak,
        Tab::Tree,
        Tab::Segments,
        Tab::Blocks,
        Tab::Leaks,
        Tab::Lifetimes,
        Tab::Templates,
        Tab::Sql,
        Tab::Oom,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Tab::Overview => "overview",
            Tab::Peak => "peak",
            Tab::Tree => "tree",
            Tab::Segments => "segments",
            Tab::Leaks => "leaks",
            Tab::Blocks => "blocks",
            Tab::Lifetimes => "lifetimes",
            Tab::Templates => "templates",
            Tab::Sql => "sql",
            Tab::Oom => "oom",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Tab::Overview => "Overview",
            Tab::Peak => "Peak report",
            Tab::Tree => "Memory tree",
            Tab::Segments => "Segments",
            Tab::Leaks => "Leak candidates",
            Tab::Blocks => "Active blocks",
            Tab::Lifetimes => "Freed lifetimes",
            Tab::Templates => "Templates",
            Tab::Sql => "SQL",
            Tab::Oom => "OOM",
        }
    }

    pub fn from_key(key: &str) -> Option<Tab> {
        Tab::ALL.into_iter().find(|t| t.key() == key)
    }
}

/// What a deep link asks for; absent parts keep the current choice.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Link {
    pub device: Option<i64>,
    pub event: Option<i64>,
    pub view: Option<Tab>,
    /// `#sample`: open the bundled sample snapshot.
    pub sample: bool,
}

pub fn parse_hash(hash: &str) -> Link {
    let mut link = Link::default();
    for pair in hash.trim_start_matches('#').split('&') {
        match pair.split_once('=') {
            Some(("device", v)) => link.device = v.parse().ok(),
            Some(("event", v)) => link.event = v.parse().ok(),
            Some(("view", v)) => link.view = Tab::from_key(v),
            None if pair == "sample" => link.sample = true,
            _ => {}
        }
    }
    link
}

/// The hash for the current choice; [`parse_hash`] reads it back.
pub fn hash(sample: bool, device: i64, event: Option<i64>, tab: Tab) -> String {
    let mut hash = if sample { "#sample&" } else { "#" }.to_owned();
    hash.push_str(&format!("device={device}"));
    if let Some(e) = event {
        hash.push_str(&format!("&event={e}"));
    }
    hash.push_str(&format!("&view={}", tab.key()));
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_reads_back_as_the_choice_it_was_written_for() {
        for tab in Tab::ALL {
            for (sample, event) in [(false, None), (true, Some(7498)), (false, Some(-3))] {
                let link = parse_hash(&hash(sample, 1, event, tab));
                assert_eq!(
                    link,
                    Link {
                        device: Some(1),
                        event,
                        view: Some(tab),
                        sample
                    }
                );
            }
        }
    }

    #[test]
    fn unknown_or_malformed_parts_are_ignored() {
        assert_eq!(parse_hash(""), Link::default());
        assert_eq!(parse_hash("#"), Link::default());
        let link = parse_hash("#device=x&event=12&view=nope&zoom=3&sample=1");
        assert_eq!(
            link,
            Link {
                event: Some(12),
                ..Link::default()
            }
        );
        assert!(parse_hash("sample").sample);
    }
}
