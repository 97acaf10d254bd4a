//! The built-in category rules on real allocation stacks from the fixtures, one category at
//! a time, and `category_breakdown_at_event` adding up to every live byte.

use std::path::Path;

use pt_snap_model::{Action, Snapshot};
use pt_snap_query::category::CategoryRules;
use pt_snap_query::{Analyzer, QueryRequest, Value};
use pt_snap_testkit::{events_worth_checking, repo_root, shared_fixtures};

fn decode(path: &Path) -> Snapshot {
    let bytes = std::fs::read(path).unwrap();
    pt_snap_model::decode(&bytes[..], &mut |_| {}).unwrap()
}

/// The rendered stack (as the database keeps it) of the first allocation of `snapshot`
/// with a frame whose file ends with `file` and whose function starts with `function`.
fn stack_with(snapshot: &Snapshot, file: &str, function: &str) -> String {
    for e in snapshot.device_traces.iter().flatten() {
        if e.action != Action::Alloc {
            continue;
        }
        let hit = snapshot.stacks.stack(e.frames).iter().any(|&f| {
            let f = snapshot.stacks.frame(f);
            f.filename.replace('\\', "/").ends_with(file) && f.name.starts_with(function)
        });
        if hit {
            return snapshot.stacks.render(e.frames).to_string();
        }
    }
    panic!("no allocation with a frame {file} {function}");
}

/// (fixture, a frame the stack has, the category and rule expected).
const CASES: [(&str, &str, &str, &str, &str); 9] = [
    (
        "upstream-pkg/snapshots/snapshot_with_multi_devices.pkl",
        "torch/nn/modules/module.py",
        "_apply",
        "parameter",
        "module-setup",
    ),
    (
        "upstream-pkg/snapshots/snapshot_with_multi_devices.pkl",
        "torch/optim/adam.py",
        "_init_group",
        "optimizer_state",
        "torch-optim",
    ),
    (
        "upstream-pkg/snapshots/snapshot_with_multi_devices.pkl",
        "torchvision/models/resnet.py",
        "_forward_impl",
        "activation",
        "module-forward",
    ),
    (
        "upstream-pkg/snapshots/snapshot_with_multi_devices.pkl",
        "torch/autograd/__init__.py",
        "_make_grads",
        "temporary",
        "initial-grad",
    ),
    (
        "real/cuda_cs336_wedsonlin__medium_512_training_memory_snapshot.pickle",
        "",
        "torch::autograd::AccumulateGrad::apply",
        "gradient",
        "accumulate-grad",
    ),
    (
        "real/cuda_cs336_silmont2000__mem_snapshot.pickle",
        "",
        "at::cuda::getNewWorkspace",
        "cache/workspace",
        "blas-workspace",
    ),
    (
        // A Windows capture: backslashes in paths.
        "real/cuda_cs336_magma27__memory_snapshot.pickle",
        "torch/autograd/__init__.py",
        "_make_grads",
        "temporary",
        "initial-grad",
    ),
    (
        // An object built inside forward: the forward pass wins over the constructor rule.
        "real/cuda_cs336_nothanmin__memory_snapshot.pickle",
        "cs336_systems/adapters.py",
        "__init__",
        "activation",
        "module-forward",
    ),
    (
        "synthetic/synth_small_1dev.pkl",
        "synthetic_A.py",
        "fn_A_2",
        "unknown",
        "no-rule-matched",
    ),
];

#[test]
fn builtin_rules_on_real_stacks() {
    let rules = CategoryRules::builtin();
    for (fixture, file, function, category, rule) in CASES {
        let snapshot = decode(&repo_root().join("fixtures").join(fixture));
        let text = stack_with(&snapshot, file, function);
        let got = rules.categorise_text(Some(&text));
        assert_eq!(
            (got.category, got.rule),
            (category, rule),
            "{fixture} {file} {function}:\n{text}"
        );
    }
}

/// The backward of a Python-only capture (no AccumulateGrad frame): gradient by its Python
/// frames. The redistributable fixtures' backward stacks all carry `_make_grads` or C++
/// frames, so this one comes from the shared corpus.
#[test]
fn builtin_rules_on_shared_stacks() {
    let Some(shared) = shared_fixtures() else {
        return;
    };
    let rules = CategoryRules::builtin();
    let snapshot = decode(&shared.join("real/cuda_code_location__memory_snapshot_OOM.pickle"));
    // nn.DataParallel's broadcast runs inside forward, yet is communication.
    let text = stack_with(
        &snapshot,
        "torch/nn/parallel/comm.py",
        "broadcast_coalesced",
    );
    let got = rules.categorise_text(Some(&text));
    assert_eq!(
        (got.category, got.rule),
        ("communication", "data-parallel-comm"),
        "{text}"
    );
    let text = stack_with(&snapshot, "torch/nn/modules/module.py", "_apply");
    assert_eq!(rules.categorise_text(Some(&text)).category, "parameter");
    // A trainer building and moving its model: every stack under its constructor is a
    // parameter (here all by `.to()`, rule module-setup).
    let mut seen = std::collections::BTreeSet::new();
    for e in snapshot.device_traces.iter().flatten() {
        let under_init = snapshot.stacks.stack(e.frames).iter().any(|&f| {
            let f = snapshot.stacks.frame(f);
            f.filename.ends_with("src/train/trainers.py") && &*f.name == "__init__"
        });
        if e.action == Action::Alloc && under_init {
            let text = snapshot.stacks.render(e.frames);
            let got = rules.categorise_text(Some(&text));
            assert_eq!(got.category, "parameter", "{text}");
            seen.insert(got.rule.to_owned());
        }
    }
    assert!(!seen.is_empty());
}

/// A model's own constructor making a tensor directly (no fixture has one that no earlier
/// rule claims): the last rule, constructor.
#[test]
fn a_bare_constructor_is_a_parameter() {
    let text = "train.py:12 <module>\nmodel.py:30 __init__";
    let got = CategoryRules::builtin().categorise_text(Some(text));
    assert_eq!((got.category, got.rule), ("parameter", "constructor"));
}

/// A stack no fixture has: torch.distributed's collectives (the corpus has no
/// distributed capture), written the way the database renders frames.
#[test]
fn distributed_collectives_are_communication() {
    let text = "train.py:40 main\n\
                /opt/venv/lib/python3.11/site-packages/torch/distributed/fsdp/_flat_param.py:1234 _all_gather_flat_param\n\
                ??:0 c10d::ProcessGroupNCCL::allgather_into_tensor_coalesced(std::vector<at::Tensor>&)";
    let got = CategoryRules::builtin().categorise_text(Some(text));
    assert_eq!(
        (got.category, got.rule),
        ("communication", "torch-distributed")
    );
}

/// The reference's databases of the query goldens (v2 layouts, and a v1 dataset shard), every
/// device: at each peak and at events spread over the trace, the categories add up byte for
/// byte and block for block to the live blocks (`active_blocks_at_event`), and to the active
/// counter of the event.
#[test]
fn categories_add_up_to_live_memory() {
    let mut dbs = pt_snap_testkit::reference_databases();
    dbs.push(repo_root().join("tests/golden/query/v1_shard/reference.db"));
    let mut checked = 0;
    for db in dbs {
        let a = Analyzer::open(&db).unwrap();
        for device in a.devices().to_vec() {
            let Some((first, last)) = a.db().device_bounds(device).unwrap() else {
                continue;
            };
            let peak = a
                .run(&QueryRequest::new("memory_peak").device(device))
                .unwrap();
            let events = events_worth_checking(
                |field| peak.get(0, field).and_then(Value::as_i64),
                Some((first, last)),
            );
            for event in events {
                let at = |template: &str, param: &str| {
                    a.run(
                        &QueryRequest::new(template)
                            .device(device)
                            .param(param, event),
                    )
                    .unwrap()
                };
                let cats = at("category_breakdown_at_event", "event_id");
                let live = at("active_blocks_at_event", "event_id");
                let Some(active) = at("event", "id").get(0, "active").and_then(Value::as_i64)
                else {
                    continue; // not a real event of this device (e.g. a v1 shard's gap)
                };
                let sum = |o: &pt_snap_query::QueryOutcome, col: &str| -> i64 {
                    (0..o.rows.len())
                        .map(|r| o.get(r, col).and_then(Value::as_i64).unwrap())
                        .sum()
                };
                let what = format!("{} device {device} event {event}", db.display());
                assert_eq!(sum(&cats, "bytes"), sum(&live, "size"), "{what}");
                assert_eq!(sum(&cats, "blocks"), live.rows.len() as i64, "{what}");
                assert_eq!(sum(&cats, "bytes"), active, "{what}");
                let pct: f64 = (0..cats.rows.len())
                    .map(|r| match cats.get(r, "percent_of_live_bytes") {
                        Some(Value::Real(p)) => *p,
                        other => panic!("{what}: {other:?}"),
                    })
                    .sum();
                assert!(
                    cats.rows.is_empty() || (pct - 100.0).abs() < 0.01,
                    "{what}: {pct}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 50, "{checked}");
}
