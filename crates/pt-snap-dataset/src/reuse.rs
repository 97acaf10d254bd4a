//! What an import does with a dataset already at its target (spec §10.2–10.3): the
//! reference's reuse rules, with its words for every refusal.
//!
//! * native (`pt-snap-native-v2`): a recognised native dataset, every member intact, with the
//!   import's identity (source hash, device, events per slice) is reused; `--force` rebuilds
//!   over any recognised native dataset; anything else is refused and left as it is.
//! * msinsight (`compatibility-v1`): reused only when intact and made from the same source
//!   with the same options; never replaced, even under `--force`.
//!
//! [`decide`] applies the rule of an [`ImportRequest`]'s kind, after the reference's check
//! of the target path ([`check_target`]); the caller builds and publishes when told to.

use std::fs;
use std::path::{Path, PathBuf};

use pt_snap_db::Metadata;

use crate::hash::{salted_sha256_file, sha256_file};
use crate::manifest::{
    self, CompatibilityIdentity, DatasetKind, Manifest, NativeIdentity, ValidManifest,
    MSINSIGHT_CACHE_SALT,
};

/// `path` with symlinks resolved as far as it exists (Python's `Path.resolve()`): how the
/// reference checks a target and records an msinsight export's source.
pub fn resolved(path: &Path) -> PathBuf {
    if let Ok(p) = fs::canonicalize(path) {
        return p;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => resolved(parent).join(name),
        _ => path.to_path_buf(),
    }
}

/// The reference's refusal of a target that is a symlink or is not where it resolves to.
pub fn check_target(target: &Path, kind: DatasetKind) -> Result<(), String> {
    if resolved(target) != target || target.is_symlink() {
        return Err(match kind {
            DatasetKind::Native => "Dataset output must be canonical and non-symlink.",
            DatasetKind::Msinsight => "Compatible output must be canonical and non-symlink.",
        }
        .into());
    }
    Ok(())
}

/// One dataset import: what its reuse rule and its manifest identify it by.
#[derive(Debug, Clone, Copy)]
pub struct ImportRequest<'a> {
    pub kind: DatasetKind,
    /// The snapshot file.
    pub source: &'a Path,
    /// SHA-256 of the source's bytes.
    pub sha256: &'a str,
    /// `--device`.
    pub device: Option<i64>,
    pub events_per_slice: i64,
    /// `--force`.
    pub force: bool,
}

/// The reuse rule of `request.kind` at `target`: `Err` is the refusal, as the import reports
/// it (`IMPORT_FAILED`). An msinsight source's `cacheHash` is computed first, as the
/// reference does, whether or not a dataset is there.
pub fn decide(target: &Path, request: &ImportRequest<'_>) -> Result<Decision, String> {
    let ImportRequest {
        kind,
        source,
        sha256,
        device,
        events_per_slice,
        force,
    } = *request;
    match kind {
        DatasetKind::Native => native(
            target,
            &NativeIdentity::new(sha256, device, events_per_slice),
            force,
        ),
        DatasetKind::Msinsight => {
            let source = MsinsightSource::of(source)?;
            let decision = msinsight(
                target,
                &CompatibilityIdentity::new(sha256, device, events_per_slice),
                &source,
            )?;
            Ok(match decision {
                Decision::Build { miss, replace, .. } => Decision::Build {
                    miss,
                    replace,
                    msinsight: Some(source),
                },
                reuse => reuse,
            })
        }
    }
}

/// A dataset found at an import's target: its parsed manifest and whether every member still
/// has the hash the manifest attests.
pub struct Existing {
    pub manifest: ValidManifest,
    pub intact: bool,
}

/// Reads the dataset at `target`, requiring exactly the files its manifest names; with
/// `verify`, re-hashes every member against the manifest (else `intact` is left true: a
/// dataset just written was hashed as it was written). The error is why it is not a dataset,
/// in the reference's words.
pub fn inspect(target: &Path, verify: bool) -> Result<Existing, String> {
    if !target.is_dir() || target.is_symlink() {
        return Err("Target must be a canonical non-symlink native dataset directory".into());
    }
    let bytes = fs::read(target.join("manifest.json")).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "manifest.json: missing: artifact file missing".into(),
        _ => format!("manifest.json: read: {e}"),
    })?;
    let parsed = manifest::parse(&bytes).map_err(|e| e.to_string())?;
    let mut expected: Vec<String> = vec!["manifest.json".into()];
    let mut files = Vec::new();
    for d in &parsed.devices {
        expected.push(format!("device_{}", d.device_id));
        for s in &d.slices {
            files.push(s.file.clone());
            expected.push(s.file.clone());
        }
    }
    expected.sort();
    let mut actual = Vec::new();
    for entry in fs::read_dir(target).map_err(|e| e.to_string())? {
        let entry = entry.map_err(|e| e.to_string())?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().map_err(|e| e.to_string())?.is_dir() {
            for inner in fs::read_dir(entry.path()).map_err(|e| e.to_string())? {
                let inner = inner.map_err(|e| e.to_string())?;
                actual.push(format!("{name}/{}", inner.file_name().to_string_lossy()));
            }
        }
        actual.push(name);
    }
    actual.sort();
    if actual != expected {
        return Err("dataset: members: unexpected/missing dataset member".into());
    }
    let declared: Vec<Option<String>> = match &parsed.manifest {
        Manifest::Native(_) => parsed
            .devices
            .iter()
            .flat_map(|d| d.slices.iter().map(|s| s.sha256.clone()))
            .collect(),
        Manifest::Compatibility(m) => match m.extension() {
            Some(Ok(ext)) => files.iter().map(|f| ext.members.get(f).cloned()).collect(),
            _ => vec![None; files.len()],
        },
    };
    let intact = !verify
        || files.iter().zip(&declared).all(|(file, want)| {
            want.as_deref().is_some_and(|want| {
                let path = target.join(file);
                !path.is_symlink() && sha256_file(&path).ok().as_deref() == Some(want)
            })
        });
    Ok(Existing {
        manifest: parsed,
        intact,
    })
}

/// What an import reports about the dataset at its target, reused or built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetReport {
    pub metadata: Metadata,
    /// Device ids, ascending.
    pub devices: Vec<i64>,
    pub slice_count: usize,
    pub omitted_devices: Vec<i64>,
}

impl DatasetReport {
    fn of(manifest: &ValidManifest, metadata: Metadata, omitted_devices: Vec<i64>) -> Self {
        DatasetReport {
            metadata,
            devices: manifest.device_ids(),
            slice_count: manifest.devices.iter().map(|d| d.slices.len()).sum(),
            omitted_devices,
        }
    }
}

/// What an import does with its target.
#[derive(Debug)]
pub enum Decision {
    /// The dataset there is this import's: keep it (once the source is checked unchanged).
    Reuse(DatasetReport),
    /// Build a new dataset: `miss` is the reason reported (`database_missing`, `forced`);
    /// with `replace`, over the dataset there. An msinsight export records `msinsight`.
    Build {
        miss: &'static str,
        replace: bool,
        msinsight: Option<MsinsightSource>,
    },
}

/// The native rule: `Err` is the refusal, as the import reports it (`IMPORT_FAILED`).
pub fn native(target: &Path, identity: &NativeIdentity, force: bool) -> Result<Decision, String> {
    if !(target.exists() || target.is_symlink()) {
        return Ok(Decision::Build {
            miss: "database_missing",
            replace: false,
            msinsight: None,
        });
    }
    let found = inspect(target, true)
        .and_then(|e| {
            if e.manifest.is_native() {
                Ok(e)
            } else {
                Err("format: format: unsupported native format".into())
            }
        })
        .map_err(|why| {
            format!("Existing target is not a recognized native dataset; preserved: {why}")
        })?;
    if force {
        return Ok(Decision::Build {
            miss: "forced",
            replace: true,
            msinsight: None,
        });
    }
    let Manifest::Native(m) = &found.manifest.manifest else {
        unreachable!("only native manifests pass the check above")
    };
    if found.intact && m.identity == *identity {
        return Ok(Decision::Reuse(DatasetReport::of(
            &found.manifest,
            m.metadata.clone(),
            m.omitted_devices.clone(),
        )));
    }
    let reason = if found.intact {
        "dataset_identity_changed"
    } else {
        "database_invalid"
    };
    Err(format!(
        "Existing dataset is not reusable ({reason}); use --force to replace this recognized native artifact. Existing target and focus preserved."
    ))
}

/// What identifies an msinsight export's source beyond its hash, as its manifest records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MsinsightSource {
    /// The salted hash the export records (`cacheHash`).
    pub cache_hash: String,
    /// The source's resolved path, as the manifest's `sourceFile` records it.
    pub file: String,
    /// Its size in bytes (-1 where it cannot be read).
    pub size: i64,
}

impl MsinsightSource {
    /// The source file `source` as an msinsight export records it; `Err` is the refusal.
    pub fn of(source: &Path) -> Result<Self, String> {
        let cache_hash = salted_sha256_file(MSINSIGHT_CACHE_SALT, source).map_err(|e| {
            format!("Cannot calculate msinsight cacheHash: Dataset import backend failed: {e}")
        })?;
        Ok(MsinsightSource {
            cache_hash,
            file: resolved(source).display().to_string(),
            size: fs::metadata(source).map(|m| m.len() as i64).unwrap_or(-1),
        })
    }
}

/// The msinsight rule: `Err` is the refusal, as the import reports it (`IMPORT_FAILED`).
pub fn msinsight(
    target: &Path,
    identity: &CompatibilityIdentity,
    source: &MsinsightSource,
) -> Result<Decision, String> {
    if !(target.exists() || target.is_symlink()) {
        return Ok(Decision::Build {
            miss: "database_missing",
            replace: false,
            msinsight: None,
        });
    }
    let refuse = |why: String| {
        format!(
            "Existing compatible output is not reusable; preserved even under --force. Choose a new output directory: {why}"
        )
    };
    let found = inspect(target, true).map_err(refuse)?;
    let Manifest::Compatibility(m) = &found.manifest.manifest else {
        return Err(refuse(
            "Unsupported or inconsistent pt-snap compatibility identity".into(),
        ));
    };
    let ext = match m.extension() {
        Some(Ok(ext)) => ext,
        Some(Err(e)) => return Err(refuse(e.to_string())),
        None => return Err(refuse("ptSnap extension missing".into())),
    };
    if !found.intact {
        return Err(refuse("Compatible member hash changed".into()));
    }
    if ext.identity != *identity
        || m.cache_hash != source.cache_hash
        || m.source_file != source.file
        || ext.metadata.source_size != source.size
    {
        return Err(refuse("Source/options/format identity changed".into()));
    }
    Ok(Decision::Reuse(DatasetReport::of(
        &found.manifest,
        ext.metadata,
        ext.omitted_devices,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::{dataset, sha};

    fn identity(source: char) -> NativeIdentity {
        NativeIdentity::new(&sha(source), None, 1)
    }

    /// `(miss, replace)` of a decision to build.
    fn build_reason(decision: Decision) -> Option<(&'static str, bool)> {
        match decision {
            Decision::Build { miss, replace, .. } => Some((miss, replace)),
            Decision::Reuse(_) => None,
        }
    }

    #[test]
    fn a_missing_target_is_built() {
        let dir = tempfile::tempdir().unwrap();
        let decision = native(&dir.path().join("absent"), &identity('a'), false).unwrap();
        assert_eq!(build_reason(decision), Some(("database_missing", false)));
    }

    #[test]
    fn an_intact_dataset_of_the_same_import_is_reused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dataset(dir.path());
        let Decision::Reuse(reused) = native(&root, &identity('a'), false).unwrap() else {
            panic!("not reused")
        };
        assert_eq!(reused.metadata.source_sha256, sha('a'));
        assert_eq!((reused.devices, reused.slice_count), (vec![0], 2));
    }

    #[test]
    fn another_source_is_refused_unless_forced() {
        let dir = tempfile::tempdir().unwrap();
        let root = dataset(dir.path());
        let refusal = native(&root, &identity('b'), false).err().unwrap();
        assert!(refusal.contains("(dataset_identity_changed)"), "{refusal}");
        let forced = native(&root, &identity('b'), true).unwrap();
        assert_eq!(build_reason(forced), Some(("forced", true)));
    }

    #[test]
    fn a_changed_member_is_not_reused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dataset(dir.path());
        let member = root.join("device_0/slice_00000.db");
        let mut bytes = fs::read(&member).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        fs::write(&member, bytes).unwrap();
        let refusal = native(&root, &identity('a'), false).err().unwrap();
        assert!(refusal.contains("(database_invalid)"), "{refusal}");
    }

    #[test]
    fn a_stray_file_means_it_is_not_a_dataset_even_forced() {
        let dir = tempfile::tempdir().unwrap();
        let root = dataset(dir.path());
        fs::write(root.join("notes.txt"), "mine").unwrap();
        let why = "dataset: members: unexpected/missing dataset member";
        assert_eq!(
            native(&root, &identity('a'), true).err(),
            Some(format!(
                "Existing target is not a recognized native dataset; preserved: {why}"
            ))
        );
    }

    #[test]
    fn a_target_that_is_a_symlink_is_refused_in_each_kinds_words() {
        let dir = tempfile::tempdir().unwrap();
        let dir = fs::canonicalize(dir.path()).unwrap();
        let real = dir.join("real");
        fs::create_dir(&real).unwrap();
        let link = dir.join("s.pkl.pt-snap-native-v2");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(check_target(&dir.join("new"), DatasetKind::Native), Ok(()));
        assert_eq!(
            check_target(&link, DatasetKind::Native),
            Err("Dataset output must be canonical and non-symlink.".into())
        );
        assert_eq!(
            check_target(&link, DatasetKind::Msinsight),
            Err("Compatible output must be canonical and non-symlink.".into())
        );
    }

    #[test]
    fn a_new_msinsight_export_records_its_sources_salted_hash_and_resolved_path() {
        let dir = tempfile::tempdir().unwrap();
        let dir = fs::canonicalize(dir.path()).unwrap();
        let source = dir.join("tiny.json");
        fs::write(&source, "{}").unwrap();
        let sha256 = sha256_file(&source).unwrap();
        let request = ImportRequest {
            kind: DatasetKind::Msinsight,
            source: &source,
            sha256: &sha256,
            device: None,
            events_per_slice: 1,
            force: true,
        };
        let target = DatasetKind::Msinsight.target(&dir, "tiny.json");
        assert_eq!(target, dir.join("tiny.json.msinsight"));
        let Decision::Build {
            miss,
            replace,
            msinsight: Some(recorded),
        } = decide(&target, &request).unwrap()
        else {
            panic!("not a new export")
        };
        assert_eq!((miss, replace), ("database_missing", false));
        assert_eq!(
            recorded,
            MsinsightSource {
                cache_hash: salted_sha256_file(MSINSIGHT_CACHE_SALT, &source).unwrap(),
                file: source.display().to_string(),
                size: 2,
            }
        );
    }

    #[test]
    fn an_msinsight_export_is_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let root = dataset(dir.path());
        let source = MsinsightSource {
            cache_hash: "0".into(),
            file: "/tiny.json".into(),
            size: 1,
        };
        let identity = CompatibilityIdentity::new(&sha('a'), None, 1);
        let refusal = msinsight(&root, &identity, &source).err().unwrap();
        assert!(
            refusal.contains("preserved even under --force"),
            "{refusal}"
        );
    }
}
