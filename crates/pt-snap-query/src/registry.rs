//! The one registry of templates: contract plus SQL, read by the CLI, `capabilities`, the
//! reports and the web app alike.

use std::sync::OnceLock;

use crate::contract::{Contract, CATEGORIES};
use crate::templates::{basic, business, category, statistical, PlanFn};

/// A query template: its public contract and the statement that answers it.
#[derive(Debug)]
pub struct Template {
    pub contract: Contract,
    pub(crate) plan: PlanFn,
}

impl Template {
    pub fn name(&self) -> &str {
        &self.contract.name
    }
}

macro_rules! template {
    ($name:literal, $plan:path) => {
        (
            include_str!(concat!("../contracts/", $name, ".json")),
            $plan as PlanFn,
        )
    };
}

/// Templates pt-snap adds to the reference's 13 (docs/compatibility.md): listings and
/// `capabilities` show them like the others; tests against the reference leave them out.
pub const OURS: [&str; 1] = ["category_breakdown_at_event"];

const SOURCES: [(&str, PlanFn); 14] = [
    template!(
        "active_blocks_at_event",
        statistical::active_blocks_at_event
    ),
    template!(
        "active_memory_callstack_at_event",
        business::active_memory_callstack_at_event
    ),
    template!(
        "active_memory_frame_tree_at_event",
        business::active_memory_frame_tree_at_event
    ),
    template!("allocation", basic::allocation),
    template!("allocator_gap", statistical::allocator_gap),
    template!("block", basic::block),
    template!("callstack_analysis", statistical::callstack_analysis),
    template!(
        "category_breakdown_at_event",
        category::category_breakdown_at_event
    ),
    template!("event", basic::event),
    template!("event_frames", basic::event_frames),
    template!("freed_block_lifetime", business::freed_block_lifetime),
    template!("leak_detection", business::leak_detection),
    template!("memory_peak", statistical::memory_peak),
    template!("preexisting_live", business::preexisting_live),
];

/// Every template, sorted by name.
pub fn all() -> &'static [Template] {
    static REGISTRY: OnceLock<Vec<Template>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let mut templates: Vec<Template> = SOURCES
            .iter()
            .map(|(json, plan)| Template {
                contract: serde_json::from_str(json).expect("bundled contracts are valid"),
                plan: *plan,
            })
            .collect();
        templates.sort_by(|a, b| a.contract.name.cmp(&b.contract.name));
        templates
    })
}

pub fn find(name: &str) -> Option<&'static Template> {
    all().iter().find(|t| t.contract.name == name)
}

/// The templates of one category, sorted by name.
pub fn in_category(category: &str) -> impl Iterator<Item = &'static Template> + '_ {
    all()
        .iter()
        .filter(move |t| t.contract.category == category)
}

pub fn is_category(name: &str) -> bool {
    CATEGORIES.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_contract_parses_and_matches_its_file_name() {
        assert_eq!(all().len(), 13 + OURS.len());
        for name in OURS {
            assert!(find(name).is_some(), "{name}");
        }
        for (json, _) in SOURCES {
            let c: Contract = serde_json::from_str(json).unwrap();
            assert!(find(&c.name).is_some());
            assert!(is_category(&c.category), "{}", c.name);
        }
    }
}
