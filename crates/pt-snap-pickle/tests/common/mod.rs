//! Shared test helpers.
#![allow(dead_code)] // each test binary uses a different subset

use std::path::PathBuf;

use pt_snap_pickle::{Arena, Node, Val};

pub fn data(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

pub use pt_snap_testkit::shared_fixtures;

/// Every pickle file of the shared fixture corpus.
pub fn fixture_pickles() -> Vec<PathBuf> {
    let Some(root) = shared_fixtures() else {
        return Vec::new();
    };
    pt_snap_testkit::pickles_in(&root, &["real", "upstream-pkg/snapshots", "synthetic"])
}

/// A deterministic Python-like rendering; `tests/data/make.py` writes the same format.
pub fn render(arena: &Arena, v: Val) -> String {
    let mut out = String::new();
    render_into(arena, v, &mut out);
    out
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn join(arena: &Arena, items: &[Val], out: &mut String) {
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        render_into(arena, *x, out);
    }
}

fn sorted(arena: &Arena, items: &[Val]) -> String {
    let mut parts: Vec<String> = items.iter().map(|x| render(arena, *x)).collect();
    parts.sort();
    parts.join(", ")
}

fn render_into(arena: &Arena, v: Val, out: &mut String) {
    match v {
        Val::None => out.push_str("None"),
        Val::Bool(true) => out.push_str("True"),
        Val::Bool(false) => out.push_str("False"),
        Val::Int(i) => out.push_str(&i.to_string()),
        Val::Float(f) => out.push_str(&format!("{f:?}")),
        Val::Handle(h) => out.push_str(&format!("handle({})", h.get())),
        Val::Ref(id) => match &arena[id] {
            Node::Str(s) => {
                out.push('"');
                for ch in s.chars() {
                    match ch {
                        '"' | '\\' => {
                            out.push('\\');
                            out.push(ch);
                        }
                        c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                        c => out.push(c),
                    }
                }
                out.push('"');
            }
            Node::Bytes(b) => out.push_str(&format!("b({})", hex(b))),
            Node::ByteArray(b) => out.push_str(&format!("bytearray({})", hex(b))),
            Node::BigInt(b) => out.push_str(&format!("bigint({})", hex(b))),
            Node::List(items) => {
                out.push('[');
                join(arena, items, out);
                out.push(']');
            }
            Node::Tuple(items) => {
                out.push('(');
                join(arena, items, out);
                out.push(')');
            }
            Node::Dict(items) => {
                out.push('{');
                for (i, (k, x)) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    render_into(arena, *k, out);
                    out.push_str(": ");
                    render_into(arena, *x, out);
                }
                out.push('}');
            }
            Node::Set(items) => out.push_str(&format!("set{{{}}}", sorted(arena, items))),
            Node::FrozenSet(items) => {
                out.push_str(&format!("frozenset{{{}}}", sorted(arena, items)))
            }
            Node::Handle(h) => out.push_str(&format!("handle({})", h.get())),
        },
    }
}
