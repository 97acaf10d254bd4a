//! Malformed, hostile and unsafe input: always a clean error, never a panic or an
//! unbounded allocation.

mod common;

use common::{data, fixture_pickles};
use proptest::prelude::*;
use pt_snap_pickle::{from_slice, load, Error, KeepAll, Limits};

fn err(bytes: &[u8]) -> Error {
    match from_slice(bytes) {
        Ok(_) => panic!("{bytes:?} decoded"),
        Err(e) => e,
    }
}

fn malformed(bytes: &[u8], needle: &str) {
    match err(bytes) {
        Error::Malformed { message, .. } => {
            assert!(message.contains(needle), "{message:?} lacks {needle:?}")
        }
        e => panic!("expected Malformed, got {e:?}"),
    }
}

fn unsafe_(bytes: &[u8], needle: &str) {
    match err(bytes) {
        Error::Unsafe(m) => assert!(m.contains(needle), "{m:?} lacks {needle:?}"),
        e => panic!("expected Unsafe, got {e:?}"),
    }
}

#[test]
fn ordered_dict_is_refused_with_the_reference_wording() {
    let want = "global 'collections.OrderedDict' is not allowed. Only basic Python types are permitted for security.";
    for f in ["ordered_dict.pkl", "ordered_dict_p0.pkl"] {
        match err(&data(f)) {
            Error::Unsafe(m) => assert_eq!(m, want, "{f}"),
            e => panic!("{f}: {e:?}"),
        }
    }
}

#[test]
fn os_system_reduce_payload_is_refused_before_anything_runs() {
    // cposix\nsystem\n + ("echo pwned",) + REDUCE: what `pickle.dumps` of a
    // `__reduce__` returning (os.system, ("echo pwned",)) looks like, written by hand.
    let payload = b"\x80\x02cposix\nsystem\nq\x00X\x0a\x00\x00\x00echo pwnedq\x01\x85q\x02Rq\x03.";
    unsafe_(payload, "global 'posix.system' is not allowed");
    // The same call through STACK_GLOBAL (protocol 4).
    let p4 = b"\x80\x04\x8c\x02os\x94\x8c\x06system\x94\x93\x94\x8c\x04true\x94\x85\x94R\x94.";
    unsafe_(p4, "global 'os.system' is not allowed");
    // REDUCE is refused by itself too, whatever callable sits on the stack.
    unsafe_(b"\x80\x02N)R.", "opcode REDUCE is not allowed");
}

#[test]
fn every_code_running_opcode_is_refused_by_name() {
    for (bytes, name) in [
        (&b"\x80\x02N)R."[..], "REDUCE"),
        (b"\x80\x02}}b.", "BUILD"),
        (b"(N)o.", "OBJ"),
        (b"\x80\x02N)\x81.", "NEWOBJ"),
        (b"\x80\x04N)}\x92.", "NEWOBJ_EX"),
        (b"\x80\x02\x82\x01.", "EXT1"),
        (b"\x80\x02\x83\x01\x00.", "EXT2"),
        (b"\x80\x02\x84\x01\x00\x00\x00.", "EXT4"),
        (b"Pid\n.", "PERSID"),
        (b"\x80\x02NQ.", "BINPERSID"),
        (b"\x80\x05\x97.", "NEXT_BUFFER"),
        (b"\x80\x05N\x98.", "READONLY_BUFFER"),
    ] {
        unsafe_(bytes, &format!("opcode {name} is not allowed"));
    }
    unsafe_(b"(ios\nsystem\n.", "global 'os.system' is not allowed");
    unsafe_(
        b"cbuiltins\nlist\n.",
        "global 'builtins.list' is not allowed",
    );
    // STACK_GLOBAL with non-string operands still names the opcode.
    unsafe_(
        b"\x80\x04K\x01K\x02\x93.",
        "opcode STACK_GLOBAL is not allowed",
    );
    unsafe_(b"\x80\x04\x93.", "opcode STACK_GLOBAL is not allowed");
}

#[test]
fn huge_declared_lengths_fail_before_allocating() {
    let two62 = (1u64 << 62).to_le_bytes();
    for op in [0x8du8, 0x8e, 0x96] {
        let mut b = vec![0x80, 4, op];
        b.extend_from_slice(&two62);
        malformed(&b, "exceeds the limit");
    }
    // Within the limit but beyond the input: truncated, after reading what exists.
    let mut b = vec![0x80, 4, b'X'];
    b.extend_from_slice(&(200u32 << 20).to_le_bytes());
    b.extend_from_slice(&[b'a'; 1000]);
    malformed(&b, "truncated");
    // Negative counts of the signed-length opcodes.
    malformed(b"\x80\x02\x8b\xff\xff\xff\xff.", "negative byte count");
    malformed(b"T\xff\xff\xff\xff.", "negative byte count");
}

#[test]
fn two_hundred_thousand_nested_lists_are_iterative() {
    // [[[...]]] as pickle writes it: EMPTY_LIST per level, APPEND per level.
    let depth = 200_000;
    let mut b = vec![0x80, 2];
    b.extend(std::iter::repeat_n(b']', depth));
    b.extend(std::iter::repeat_n(b'a', depth - 1));
    b.push(b'.');
    assert!(from_slice(&b).is_ok());
    // MARK nesting as well.
    let mut m = vec![0x80, 2];
    m.extend(std::iter::repeat_n(b'(', depth));
    m.extend(std::iter::repeat_n(b'l', depth));
    m.push(b'.');
    assert!(from_slice(&m).is_ok());
    let shallow = Limits {
        max_stack: 1000,
        ..Limits::default()
    };
    match load(&b[..], &mut KeepAll, &shallow) {
        Err(Error::Malformed { message, .. }) => assert!(message.contains("stack depth")),
        other => panic!("{:?}", other.err()),
    }
}

#[test]
fn memo_misses_truncation_and_garbage_are_errors() {
    malformed(b"\x80\x02h\x05.", "memo key 5 not found");
    malformed(b"\x80\x02j\x00\x00\x00\x01.", "memo key 16777216 not found");
    malformed(b"g3\n.", "memo key 3 not found");
    malformed(b"", "empty input");
    malformed(b"\x80\x04]", "no STOP");
    malformed(b"\x80\x04X\x05\x00\x00\x00ab", "truncated");
    malformed(b"\x80\x04\x95\x01\x00", "truncated");
    malformed(b"not a pickle", "invalid opcode 0x6e");
    malformed(b"\x80\x09N.", "unsupported pickle protocol: 9");
    malformed(b"\xff", "invalid opcode 0xff");
    malformed(b".", "stack underflow");
    malformed(b"(a.", "stack underflow");
    malformed(b"e.", "could not find MARK");
    malformed(b"(K\x01d.", "odd number of items");
    malformed(b"K\x01K\x02a.", "APPEND on a int");
    malformed(b"]K\x01K\x02s.", "SETITEM on a list");
    malformed(b"INaN\n.", "invalid integer literal");
    malformed(b"Fx\n.", "invalid float literal");
    malformed(b"Sabc\n.", "must be quoted");
    malformed(b"U\x01\xe9.", "non-ASCII");
    let data = data("sample_p4.pkl");
    for cut in [1, 2, 11, 100, data.len() / 2, data.len() - 1] {
        assert!(from_slice(&data[..cut]).is_err(), "cut at {cut}");
    }
}

#[test]
fn text_opcodes_of_protocol_0_and_python_2() {
    let pk = from_slice(b"(lp0\nI01\naI00\naI-5\naL123456789012345678901234567890L\naS'a\\'b'\np1\nag1\naF2.5\naVcaf\\u00e9\naNa.")
        .unwrap();
    assert_eq!(
        common::render(&pk.arena, pk.root),
        r#"[True, False, -5, bigint(d20a3f4eeee073c3f60fe98e01), "a'b", "a'b", 2.5, "café", None]"#
    );
    let pk = from_slice(b"\x80\x02U\x02hiT\x02\x00\x00\x00yo\x86.").unwrap();
    assert_eq!(common::render(&pk.arena, pk.root), r#"("hi", "yo")"#);
}

#[test]
fn memo_slots_far_apart_do_not_allocate_the_gap() {
    let pk = from_slice(b"\x80\x02K\x07r\x00\x00\x00\xf0j\x00\x00\x00\xf0\x86.").unwrap();
    assert_eq!(common::render(&pk.arena, pk.root), "(7, 7)");
}

#[test]
fn frame_lengths_are_checked_like_cpython() {
    // FRAME 4 then `N.` (2 bytes): CPython reads the whole frame first and refuses this.
    let mut short = vec![0x80, 4, 0x95];
    short.extend_from_slice(&4u64.to_le_bytes());
    short.extend_from_slice(b"N.");
    malformed(&short, "the FRAME here declares 4 bytes");
    let mut exact = vec![0x80, 4, 0x95];
    exact.extend_from_slice(&2u64.to_le_bytes());
    exact.extend_from_slice(b"N.");
    assert_eq!(from_slice(&exact).unwrap().root, pt_snap_pickle::Val::None);
    // A frame that is complete past STOP is fine; its trailing bytes are not values.
    let mut padded = short.clone();
    padded.extend_from_slice(b"xx");
    assert_eq!(from_slice(&padded).unwrap().bytes_read, 13);
    let mut huge = vec![0x80, 4, 0x95];
    huge.extend_from_slice(&u64::MAX.to_le_bytes());
    huge.extend_from_slice(b"N.");
    malformed(&huge, "sys.maxsize");
    // Every bundled real pickle still decodes (protocol 4 frames every 64 KiB).
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut seen = 0;
    for dir in ["real", "upstream-pkg/snapshots", "synthetic"] {
        for e in std::fs::read_dir(root.join(dir)).expect("fixtures/ is in the repository") {
            let p = e.unwrap().path();
            if matches!(
                p.extension().and_then(|x| x.to_str()),
                Some("pkl" | "pickle")
            ) {
                let bytes = std::fs::read(&p).unwrap();
                from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                seen += 1;
            }
        }
    }
    assert!(seen >= 10, "only {seen} bundled pickles");
}

/// `LONG_BINPUT` 65,536 past the end, again and again (the audit's memo-gap bomb: 4,096 steps
/// took 1 GB, 65,536 aborted on an 8 GiB allocation).
fn memo_walk(steps: u32) -> Vec<u8> {
    let mut b = vec![0x80, 4, b'N'];
    for k in 0..steps {
        b.push(b'r');
        b.extend_from_slice(&k.wrapping_mul(65_536).to_le_bytes());
    }
    b.extend_from_slice(b"j\x00\x00\xff\xff.");
    b
}

#[test]
fn a_memo_walk_costs_entries_not_the_gaps() {
    // The last key is 65,535 × 65,536; reading it back proves the sparse part holds it.
    let pk = from_slice(&memo_walk(65_536)).unwrap();
    assert_eq!(pk.root, pt_snap_pickle::Val::None);
}

#[test]
fn live_objects_must_be_justified_by_the_input() {
    // 8M empty dicts appended 1,000 at a time (the audit's O2: 68 MB of them reached 3.6 GB).
    let mut b = vec![0x80, 4, b']'];
    for _ in 0..8_000 {
        b.push(b'(');
        b.extend(std::iter::repeat_n(b'}', 1_000));
        b.push(b'e');
    }
    b.push(b'.');
    malformed(&b, "more than one per 4 bytes of input");
}

#[test]
fn recursive_list_decodes_without_compaction() {
    // l = []; l.append(l)
    let pk = from_slice(b"\x80\x02]q\x00h\x00a.").unwrap();
    let pt_snap_pickle::Val::Ref(id) = pk.root else {
        panic!()
    };
    assert_eq!(
        pk.arena[id],
        pt_snap_pickle::Node::List(vec![pk.root]),
        "the list contains itself"
    );
}

fn mutate(seed: &[u8], edits: &[(usize, u8)]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for &(i, v) in edits {
        if !b.is_empty() {
            let n = b.len();
            b[i % n] = v;
        }
    }
    b
}

fn seeds() -> Vec<Vec<u8>> {
    let mut s: Vec<Vec<u8>> = (0..=5)
        .map(|p| data(&format!("sample_p{p}.pkl"))[..4096].to_vec())
        .collect();
    for p in fixture_pickles().into_iter().take(6) {
        let b = std::fs::read(p).unwrap();
        s.push(b[..b.len().min(8192)].to_vec());
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = from_slice(&bytes);
        let mut with_proto = vec![0x80, 4];
        with_proto.extend_from_slice(&bytes);
        let _ = from_slice(&with_proto);
    }

    #[test]
    fn mutated_real_prefixes_never_panic(
        which in 0usize..64,
        cut in 0usize..8192,
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
    ) {
        let seeds = seeds();
        let seed = &seeds[which % seeds.len()];
        let b = mutate(&seed[..cut.min(seed.len())], &edits);
        let _ = from_slice(&b);
        let _ = load(&b[..], &mut Compacting, &Limits::default());
    }
}

/// Compacts every container, the harshest sink for the VM's bookkeeping.
struct Compacting;

impl pt_snap_pickle::Sink for Compacting {
    fn compact(
        &mut self,
        _: &pt_snap_pickle::Arena,
        node: pt_snap_pickle::NodeId,
    ) -> Option<pt_snap_pickle::Handle> {
        pt_snap_pickle::Handle::new(node.index() as u32)
    }
}
