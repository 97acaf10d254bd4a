//! One decode of a snapshot read the way the browser's import worker reads a `File`: in
//! 1 MiB slices (`pt_snap_model::SLICE`), each copied into the decoder's memory, behind a
//! plain `Read`. The native binary (`src/main.rs`) and the wasm build (`decode_slices`
//! below, driven by `bench.js` under node and by `bench-chromium.mjs` in a Chromium worker)
//! run this same function on the same bytes, so the timings differ only by the target
//! (`scripts/decode-bench`).

#![forbid(unsafe_code)]

use std::io::Read;

use pt_snap_model::{Action, Snapshot};

pub use pt_snap_model::Slices;

/// What the worker calls, with the file's length: the decode alone is timed; the summary is
/// made afterwards.
pub fn decode(reader: impl Read, len: u64) -> Result<Snapshot, String> {
    pt_snap_model::decode_sized(reader, len, &mut |_| {}).map_err(|e| e.to_string())
}

/// FNV-1a over the model's fields: no dependency, same answer on both targets.
struct Digest(u64);

impl Digest {
    fn add(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }

    fn int(&mut self, v: i64) {
        self.add(&v.to_le_bytes());
    }
}

/// One line whose digest covers every field of the model, so that the two targets (and two
/// builds of the decoder) can be checked to agree while being timed.
pub fn summary(s: &Snapshot) -> String {
    let mut d = Digest(0xcbf2_9ce4_8422_2325);
    let mut events = 0;
    for (device, trace) in s.device_traces.iter().enumerate() {
        d.int(device as i64);
        for e in trace {
            events += 1;
            let action = match e.action {
                Action::Other(i) => 100 + i64::from(i),
                a => a.code().unwrap_or(-1),
            };
            for v in [action, e.addr, e.size, e.stream, i64::from(e.frames.0)] {
                d.int(v);
            }
            d.int(e.id.unwrap_or(i64::MIN));
        }
    }
    for seg in &s.segments {
        for v in [seg.device, seg.address, seg.total_size, seg.stream] {
            d.int(v);
        }
        d.add(seg.segment_type.as_bytes());
        for v in [
            seg.allocated_size,
            seg.active_size,
            i64::from(seg.is_expandable),
        ] {
            d.int(v);
        }
        d.int(i64::from(seg.frames.0));
        for b in &seg.blocks {
            for v in [b.address, b.size, b.requested_size, b.state.code()] {
                d.int(v);
            }
            d.int(i64::from(b.frames.0));
        }
    }
    for id in 0..s.stacks.stack_count() {
        d.add(
            s.stacks
                .render(pt_snap_model::StackId(id as u32))
                .as_bytes(),
        );
    }
    for name in &s.other_actions {
        d.add(name.as_bytes());
    }
    format!(
        "events={events} segments={} stacks={} frames={} digest={:016x}",
        s.segments.len(),
        s.stacks.stack_count(),
        s.stacks.frame_count(),
        d.0
    )
}

#[cfg(target_arch = "wasm32")]
mod wasm {
    use js_sys::{Function, Uint8Array};
    use pt_snap_model::Snapshot;
    use wasm_bindgen::prelude::*;

    /// A decoded snapshot held on the wasm side, so that JS times the decode alone.
    #[wasm_bindgen]
    pub struct Decoded(Snapshot);

    #[wasm_bindgen]
    impl Decoded {
        pub fn summary(&self) -> String {
            super::summary(&self.0)
        }
    }

    /// Decodes a file of `len` bytes whose slices `read(start, end)` hands out as
    /// `ArrayBuffer`s, as `FileReaderSync::readAsArrayBuffer` does in the worker.
    #[wasm_bindgen]
    pub fn decode_slices(len: f64, read: &Function) -> Result<Decoded, JsValue> {
        let reader = super::Slices::new(len as u64, |start, end| {
            let slice = read
                .call2(&JsValue::NULL, &(start as f64).into(), &(end as f64).into())
                .map_err(|e| std::io::Error::other(format!("{e:?}")))?;
            Ok(Uint8Array::new(&slice).to_vec())
        });
        super::decode(reader, len as u64)
            .map(Decoded)
            .map_err(|e| JsValue::from_str(&e))
    }
}
