//! Helpers shared by the packager's integration tests: packing through the
//! library, running the binary, and reading a bundle back the way a device
//! installs it (signature, stored hashes, image, zero-copy KG views).
#![allow(dead_code, clippy::unwrap_used)]

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kgbox_bundle::image::write_image;
use kgbox_bundle::kg::Posting;
use kgbox_bundle::sections::include_in_image;
use kgbox_bundle::{
    AlignedBytes, BundleReader, ImageView, Kg, Limits, Manifest, PublicKey, SecretKey, TrustedKeys,
};
use kgbox_pack::PackOptions;

/// The packager binary built for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_kgbox-pack");

/// The workspace root (the packager's parent directory).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A fixed signing key, so tests need no randomness.
pub fn test_key() -> SecretKey {
    SecretKey::from_seed([7u8; 32], "kgbox-pack tests")
}

/// Writes `bytes` to `dir/name` and returns the path.
pub fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Writes the test key to `dir/test.key` for the CLI.
pub fn write_key(dir: &Path) -> PathBuf {
    write(dir, "test.key", test_key().to_text())
}

/// Library options with fixed time, fast compression and no progress bar.
pub fn options(triples: &Path) -> PackOptions {
    PackOptions {
        triples: triples.to_path_buf(),
        name: "test-bundle".into(),
        version: semver::Version::new(1, 2, 3),
        level: 3,
        created_unix: Some(1_700_000_000),
        progress: false,
        planner: None,
        ..Default::default()
    }
}

/// Runs the binary with `args` (and extra environment), capturing its output.
pub fn cli(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args).env_remove("SOURCE_DATE_EPOCH");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `build` arguments for `triples` → `out`, signed with `key`.
pub fn build_args<'a>(triples: &'a str, key: &'a str, out: &'a str) -> Vec<&'a str> {
    vec![
        "build",
        "--triples",
        triples,
        "--name",
        "cli-test",
        "--version",
        "1.0.0",
        "--key",
        key,
        "--level",
        "3",
        "--quiet",
        "-o",
        out,
    ]
}

/// Asserts a clean failure: exit status 1 (not a panic's 101, not success),
/// an `error:` line on stderr, and no panic message.
pub fn assert_fails(out: &Output) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "expected exit 1, stderr: {err}");
    assert!(err.starts_with("error: "), "stderr: {err}");
    assert!(!err.contains("panicked"), "stderr: {err}");
    err
}

/// A bundle read back as a device would: signature checked, stored hashes
/// checked, written to an in-memory image and parsed.
pub struct Loaded {
    pub manifest: Manifest,
    pub section_names: Vec<String>,
    pub signer: PublicKey,
    pub view: ImageView,
    pub bytes: AlignedBytes,
}

impl Loaded {
    pub fn kg(&self) -> Kg<'_> {
        Kg::from_sections(|n| self.view.section(&self.bytes, n)).unwrap()
    }
}

pub fn load(path: &Path, trusted: &PublicKey) -> Loaded {
    let file = File::open(path).unwrap();
    let mut reader = BundleReader::open(BufReader::new(file)).unwrap();
    let keys = TrustedKeys::new(vec![trusted.clone()]);
    let signer = reader.verify_signature(&keys).unwrap().clone();
    let limits = Limits::default();
    reader.check_stored(&limits, include_in_image).unwrap();
    let mut image = Vec::new();
    let plan = write_image(&mut reader, &limits, include_in_image, &mut image).unwrap();
    let view = ImageView::parse(&image, include_in_image).unwrap();
    let mut bytes = AlignedBytes::from_slice(&image);
    kgbox_bundle::derive::fill(reader.prefix(), &plan.ranges, bytes.as_mut_slice()).unwrap();
    view.verify_hashes(&bytes).unwrap();
    Loaded {
        manifest: reader.prefix().manifest.clone(),
        section_names: reader
            .prefix()
            .sections
            .iter()
            .map(|s| s.name.clone())
            .collect(),
        signer,
        view,
        bytes,
    }
}

/// Entity id by exact name, failing the test if absent.
pub fn id(kg: &Kg<'_>, name: &str) -> u32 {
    kg.entity_id(name)
        .unwrap_or_else(|| panic!("entity {name:?} is not in the bundle"))
}

/// Relation id by exact name, failing the test if absent.
pub fn rel(kg: &Kg<'_>, name: &str) -> u32 {
    kg.relation_id(name)
        .unwrap_or_else(|| panic!("relation {name:?} is not in the bundle"))
}

/// Postings for the normalized form of `text`, as (entity name, via alias).
pub fn lookup<'a>(kg: &Kg<'a>, text: &str) -> Vec<(&'a str, bool)> {
    kg.lookup_normalized(&kgbox_bundle::normalize::normalize(text))
        .into_iter()
        .map(|Posting { entity, via_alias }| (kg.entity_name(entity).unwrap(), via_alias))
        .collect()
}

/// Names of a slice of entity ids.
pub fn names<'a>(kg: &Kg<'a>, ids: &[u32]) -> Vec<&'a str> {
    ids.iter().map(|&i| kg.entity_name(i).unwrap()).collect()
}
