//! Sharded datasets: the reference's `pt-snap-native-v2` and `compatibility-v1` (msinsight)
//! layouts (spec §10).
//!
//! * [`manifest`]: the `manifest.json` of both formats as serde types, used by the writer to
//!   produce them and by the reader to validate them with the reference's rules.
//! * [`write`]: building a dataset from a decoded snapshot — the sharded replay, the shard
//!   databases (native or msinsight layout), the manifests.
//! * [`read`]: validating a dataset (with a verified fingerprint cache), its `overview` and
//!   import metadata.
//! * [`reuse`]: what an import does with a dataset already at its target (the target's
//!   path checks, the source's identity, the reference's rules).
//! * [`sha256_file`] / [`salted_sha256_file`]: the hashes a dataset records (members, source,
//!   msinsight's `cacheHash`).
//!
//! Queries on a validated dataset are `pt-snap-dataset-query`'s.

#![forbid(unsafe_code)]

pub use hash::{salted_sha256_file, sha256_file};
pub use manifest::DatasetKind;

mod hash;
pub mod manifest;
pub mod read;
pub mod reuse;
#[cfg(test)]
mod testdata;
pub mod write;
