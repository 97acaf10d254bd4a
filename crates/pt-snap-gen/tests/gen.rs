//! Generator tests: CPython byte compatibility of the pickle writer, determinism,
//! and allocator invariants checked on the simulation's own structures.

use pt_snap_gen::pickle::{to_vec, PickleWriter};
use pt_snap_gen::sim::DeviceSim;
use pt_snap_gen::{catalog, generate, simulate, Config};
use std::io;

fn dumps(f: impl FnOnce(&mut PickleWriter<Vec<u8>>) -> io::Result<()>) -> Vec<u8> {
    to_vec(f).unwrap()
}

fn fnv1a(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for &x in b {
        h = (h ^ x as u64).wrapping_mul(0x100000001b3);
    }
    h
}

/// L = [{'name': 'f', 'filename': '??', 'line': 0}]
/// obj = {'segments': [{'a': 1, 'b': [300, 70000, -5, 2**40, -2**40, 2**31, -2**31, 255, 256,
///        65535, 65536], 't': (0, 0), 'x': True, 'y': False, 'f': 0.5, 's': 'hello', 'e': '',
///        'l': L}], 'again': L, 'e2': '', 'long': 'é' * 200}
/// expected = pickle.dumps(obj, 4)   (CPython 3.11)
#[test]
fn writer_matches_cpython_bytes() {
    let got = dumps(|w| {
        w.begin_dict(4)?;
        w.str("segments")?;
        w.begin_list(1)?;
        w.begin_dict(9)?;
        w.str("a")?;
        w.int(1)?;
        w.str("b")?;
        let ints = [
            300,
            70000,
            -5,
            1 << 40,
            -(1 << 40),
            1 << 31,
            -(1 << 31),
            255,
            256,
            65535,
            65536,
        ];
        w.begin_list(ints.len())?;
        for i in ints {
            w.int(i)?;
        }
        w.end()?;
        w.str("t")?;
        w.tuple2_int(0, 0)?;
        w.str("x")?;
        w.bool(true)?;
        w.str("y")?;
        w.bool(false)?;
        w.str("f")?;
        w.float(0.5)?;
        w.str("s")?;
        w.str("hello")?;
        w.str("e")?;
        w.str("")?;
        w.str("l")?;
        let l = w.begin_list(1)?;
        w.begin_dict(3)?;
        w.str("name")?;
        w.str("f")?; // 1-char strings are CPython singletons -> memo reference
        w.str("filename")?;
        w.str("??")?;
        w.str("line")?;
        w.int(0)?;
        w.end()?;
        w.end()?;
        w.end()?;
        w.end()?;
        w.str("again")?;
        w.get(l)?;
        w.str("e2")?;
        w.str("")?;
        w.str("long")?;
        w.str(&"é".repeat(200))?;
        w.end()
    });
    let mut want: Vec<u8> = b"\x80\x04\x95j\x02\x00\x00\x00\x00\x00\x00}\x94(\x8c\x08segments\x94]\x94}\x94(\x8c\x01a\x94K\x01\x8c\x01b\x94]\x94(M,\x01Jp\x11\x01\x00J\xfb\xff\xff\xff\x8a\x06\x00\x00\x00\x00\x00\x01\x8a\x06\x00\x00\x00\x00\x00\xff\x8a\x05\x00\x00\x00\x80\x00J\x00\x00\x00\x80K\xffM\x00\x01M\xff\xffJ\x00\x00\x01\x00e\x8c\x01t\x94K\x00K\x00\x86\x94\x8c\x01x\x94\x88\x8c\x01y\x94\x89\x8c\x01f\x94G?\xe0\x00\x00\x00\x00\x00\x00\x8c\x01s\x94\x8c\x05hello\x94\x8c\x01e\x94\x8c\x00\x94\x8c\x01l\x94]\x94}\x94(\x8c\x04name\x94h\x0b\x8c\x08filename\x94\x8c\x02??\x94\x8c\x04line\x94K\x00uaua\x8c\x05again\x94h\x11\x8c\x02e2\x94h\x0f\x8c\x04long\x94X\x90\x01\x00\x00".to_vec();
    want.extend("é".repeat(200).as_bytes());
    want.extend(b"\x94u.");
    assert_eq!(want.len(), 629);
    assert_eq!(got, want);
}

/// Batching (APPENDS per 1000, SETITEMS incl. CPython's trailing empty batch) and
/// FRAME splitting, against fingerprints of CPython's output.
#[test]
fn writer_batches_and_frames_like_cpython() {
    // pickle.dumps([i*1000 for i in range(2500)], 4): 12387 bytes, fnv1a 0xf509100af2795875
    let b = dumps(|w| {
        w.begin_list(2500)?;
        for i in 0..2500 {
            w.int(i * 1000)?;
        }
        w.end()
    });
    assert_eq!((b.len(), fnv1a(&b)), (12387, 0xf509100af2795875));
    // pickle.dumps({'k%d' % i: i for i in range(1000)}, 4): 9652, 0x76f3efca94e0e09b
    let b = dumps(|w| {
        w.begin_dict(1000)?;
        for i in 0..1000 {
            w.str(&format!("k{i}"))?;
            w.int(i)?;
        }
        w.end()
    });
    assert_eq!((b.len(), fnv1a(&b)), (9652, 0x76f3efca94e0e09b));
    // pickle.dumps(['x%d' % i for i in range(20000)], 4): 168962, 0xd12a40ce51ce81f5
    let b = dumps(|w| {
        w.begin_list(20000)?;
        for i in 0..20000 {
            w.str(&format!("x{i}"))?;
        }
        w.end()
    });
    assert_eq!((b.len(), fnv1a(&b)), (168962, 0xd12a40ce51ce81f5));
}

fn gen(cfg: &Config) -> Vec<u8> {
    let mut buf = Vec::new();
    generate(cfg, &mut buf).unwrap();
    buf
}

#[test]
fn deterministic_per_seed() {
    let mut cfg = Config::small(42);
    cfg.events_per_device = 5000;
    let a = gen(&cfg);
    let b = gen(&cfg);
    assert_eq!(a, b, "same seed must give identical bytes");
    cfg.seed = 43;
    assert_ne!(a, gen(&cfg));
    let mut e = Config::small(42);
    e.events_per_device = 5000;
    e.expandable = true;
    e.devices = 2;
    e.max_entries = Some(3000);
    assert_eq!(gen(&e), gen(&e));
}

fn variants() -> Vec<Config> {
    let mut v = Vec::new();
    for (i, (exp, devs, streams, oom)) in [
        (false, 1, 3, false),
        (true, 1, 3, false),
        (false, 2, 1, false),
        (true, 2, 4, true),
    ]
    .into_iter()
    .enumerate()
    {
        let mut c = Config::small(100 + i as u64);
        c.events_per_device = 30_000;
        c.expandable = exp;
        c.devices = devs;
        c.streams = streams;
        c.oom = oom;
        v.push(c);
    }
    v
}

#[test]
fn final_state_invariants() {
    for cfg in variants() {
        let cat = catalog(&cfg);
        for sim in simulate(&cfg, &cat) {
            sim.check_invariants()
                .unwrap_or_else(|e| panic!("{cfg:?} device {}: {e}", sim.device));
            assert!(sim.n_events >= cfg.events_per_device);
            assert!(!sim.segments.is_empty());
            assert!(sim
                .segments
                .values()
                .all(|s| s.expandable == cfg.expandable));
        }
    }
}

#[test]
fn invariants_hold_throughout() {
    for cfg in variants().into_iter().take(2) {
        let cat = catalog(&cfg);
        let mut sim = DeviceSim::new(&cat, cfg.sim_config(), cfg.seed, 0);
        let mut ops = 0;
        while sim.n_events < 20_000 {
            sim.step_op();
            sim.out.clear();
            ops += 1;
            if ops % 500 == 0 {
                sim.check_invariants()
                    .unwrap_or_else(|e| panic!("expandable={} op {ops}: {e}", cfg.expandable));
            }
        }
    }
}

#[test]
fn summary_counts() {
    let mut cfg = Config::small(7);
    cfg.events_per_device = 8000;
    cfg.devices = 2;
    cfg.max_entries = Some(5000);
    let mut buf = Vec::new();
    let s = generate(&cfg, &mut buf).unwrap();
    assert_eq!(s.bytes as usize, buf.len());
    assert_eq!(s.events, vec![5000, 5000]);
    assert!(s.simulated.iter().all(|&n| n >= 8000));
    assert!(s.distinct_stacks > 100, "{s:?}");
    assert!(s.blocks >= s.segments);
}

/// The events of device 0 as `generate` makes them: planted sites first, then the workload
/// until `events_per_device` more events have been emitted.
fn device_events(cfg: &Config, cat: &pt_snap_gen::stacks::Catalog) -> Vec<pt_snap_gen::sim::Event> {
    let mut sim = DeviceSim::new(cat, cfg.sim_config(), cfg.seed, 0);
    for site in cat.of_role(pt_snap_gen::stacks::Role::Planted) {
        sim.plant(site);
    }
    let budget = cfg.events_per_device + sim.n_events;
    while sim.n_events < budget {
        sim.step_op();
    }
    sim.check_invariants().unwrap();
    std::mem::take(&mut sim.out)
}

/// Two runs that differ only by `--planted-site` differ only by the planted block: the
/// catalog gains one site after all the others, and the workload's events (actions, sizes,
/// streams, sites, times) are those of the plain run, draw for draw. (Not so with
/// `--expandable`: the planted pages join the default pool's first mapped range, later
/// growth maps other amounts, and as the clock draws once per event the random stream
/// shifts from there on.)
#[test]
fn a_planted_site_adds_its_block_and_changes_nothing_else() {
    for seed in [11, 12] {
        let mut plain = Config::small(seed);
        plain.events_per_device = 20_000;
        let mut planted = plain.clone();
        // A whole number of 2 MiB pages: the block fills its segment exactly, leaving no
        // free remainder that later allocations could be placed in.
        planted.planted = vec![pt_snap_gen::PlantedSite {
            name: "kv_cache".into(),
            bytes: 64 << 20,
        }];
        let (ca, cb) = (catalog(&plain), catalog(&planted));
        assert_eq!(cb.sites.len(), ca.sites.len() + 1);
        for (a, b) in ca.sites.iter().zip(&cb.sites) {
            let frames = |cat: &pt_snap_gen::stacks::Catalog, s: &pt_snap_gen::stacks::Site| {
                s.frames
                    .iter()
                    .map(|&f| cat.frames[f as usize].clone())
                    .collect::<Vec<_>>()
            };
            assert_eq!(frames(&ca, a), frames(&cb, b));
        }
        let site = ca.sites.len() as u32;
        let names: Vec<&str> = cb.sites[site as usize]
            .frames
            .iter()
            .map(|&f| cb.frames[f as usize].name.as_str())
            .collect();
        assert_eq!(names[names.len() - 3..], ["kv_cache", "main", "<module>"]);

        let (ea, eb) = (device_events(&plain, &ca), device_events(&planted, &cb));
        let (mine, rest): (Vec<_>, Vec<_>) = eb.into_iter().partition(|e| e.site == site);
        let actions: Vec<_> = mine.iter().map(|e| (e.action, e.size)).collect();
        use pt_snap_gen::sim::Action;
        assert_eq!(
            actions,
            [(Action::SegmentAlloc, 64 << 20), (Action::Alloc, 64 << 20)]
        );
        let shape = |e: &pt_snap_gen::sim::Event| (e.action, e.size, e.stream, e.site, e.time_us);
        assert_eq!(
            rest.iter().map(shape).collect::<Vec<_>>(),
            ea.iter().map(shape).collect::<Vec<_>>(),
            "seed {seed}"
        );
    }
}

/// The bytes of existing configurations are pinned: benchmarks and tests elsewhere rely on
/// `--seed N` giving the same file run after run, release after release, so options added
/// later (`rank`, `leak_rate`, `planted`) must leave them alone at their defaults.
#[test]
fn existing_configurations_keep_their_bytes() {
    let mut plain = Config::small(42);
    plain.events_per_device = 5000;
    let mut mixed = Config::small(9);
    mixed.events_per_device = 6000;
    mixed.expandable = true;
    mixed.devices = 2;
    mixed.oom = true;
    mixed.max_entries = Some(4000);
    let got: Vec<(usize, u64)> = [plain, mixed]
        .iter()
        .map(|c| {
            let b = gen(c);
            (b.len(), fnv1a(&b))
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (620_140, 0x766b_9172_8e69_d563),
            (980_892, 0xc412_fc82_33fc_ec5d)
        ]
    );
}

/// The ranks of one job train the same model (same catalog, same parameters), so they differ
/// by their workload only; a leak rate keeps blocks allocated to the end, and the allocator's
/// invariants still hold.
#[test]
fn ranks_share_the_model_and_leaks_stay_allocated() {
    let mut base = Config::small(3);
    base.events_per_device = 20_000;
    let mut other = base.clone();
    other.rank = 1;
    assert_ne!(gen(&base), gen(&other), "another rank, another workload");
    assert_eq!(gen(&other), gen(&other));
    let cat = catalog(&base);
    let allocated = |cfg: &Config| -> u64 {
        let sims = simulate(cfg, &cat);
        sims[0].check_invariants().unwrap();
        sims[0].segments.values().map(|s| s.allocated_size()).sum()
    };
    let (a, b) = (allocated(&base), allocated(&other));
    assert!(a.abs_diff(b) < a / 5, "same model: {a} vs {b}");
    let mut leaky = base.clone();
    leaky.leak_rate = 0.05;
    let leaked = allocated(&leaky);
    assert!(leaked > a + a / 5, "leaks stay allocated: {leaked} vs {a}");
}
