//! The decoder's memory is bounded by its input: the factor documented in the crate docs,
//! measured with a counting allocator on the inputs that cost the most per byte.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

use pt_snap_pickle::{from_slice, Error};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// One measurement at a time: the test harness runs tests on several threads.
static SERIAL: Mutex<()> = Mutex::new(());

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Relaxed) + layout.size();
        PEAK.fetch_max(live, Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Peak heap above the level at the start while decoding `bytes`.
fn peak_while_decoding(bytes: &[u8]) -> (usize, Result<(), Error>) {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let base = LIVE.load(Relaxed);
    PEAK.store(base, Relaxed);
    let r = from_slice(bytes).map(drop);
    (PEAK.load(Relaxed) - base, r)
}

/// The documented bound (crate docs, "Hostile input"): at most 64 bytes of heap per input
/// byte on top of a fixed 192 MiB.
fn bound(input: usize) -> usize {
    64 * input + (192 << 20)
}

fn repeated(head: &[u8], unit: &[u8], times: usize, tail: &[u8]) -> Vec<u8> {
    let mut b = head.to_vec();
    for _ in 0..times {
        b.extend_from_slice(unit);
    }
    b.extend_from_slice(tail);
    b
}

#[test]
fn costly_inputs_stay_within_the_documented_factor() {
    let mut thousand_dicts = vec![b'('];
    thousand_dicts.extend(std::iter::repeat_n(b'}', 1000));
    thousand_dicts.push(b'e');
    let mut thousand_dups = b"(N".to_vec();
    thousand_dups.extend(std::iter::repeat_n(b'2', 999));
    thousand_dups.push(b'e');
    let cases: Vec<(&str, Vec<u8>)> = vec![
        // One node per input byte until the node rule stops it.
        (
            "empty dicts",
            repeated(b"\x80\x04]", &thousand_dicts, 8_000, b"."),
        ),
        // One 16-byte list item per input byte (DUP of None), never a node.
        (
            "duplicated items",
            repeated(b"\x80\x04]", &thousand_dups, 8_000, b"."),
        ),
        // A memo key per five bytes, each far from the last.
        ("memo walk", {
            let mut b = b"\x80\x04N".to_vec();
            for k in 0..1_000_000u32 {
                b.push(b'r');
                b.extend_from_slice(&k.wrapping_mul(65_536).to_le_bytes());
            }
            b.push(b'.');
            b
        }),
        // Distinct short strings: a node and an interning entry each.
        ("distinct strings", {
            let mut b = b"\x80\x04](".to_vec();
            for k in 0..1_000_000u32 {
                let s = format!("{k:x}");
                b.push(0x8c);
                b.push(s.len() as u8);
                b.extend_from_slice(s.as_bytes());
            }
            b.extend_from_slice(b"e.");
            b
        }),
    ];
    for (name, input) in cases {
        let (peak, result) = peak_while_decoding(&input);
        eprintln!(
            "{name}: {} bytes in, peak heap {} bytes ({:.1}/byte), {result:?}",
            input.len(),
            peak,
            peak as f64 / input.len() as f64
        );
        assert!(
            peak <= bound(input.len()),
            "{name}: peak {peak} > bound {}",
            bound(input.len())
        );
    }
}
