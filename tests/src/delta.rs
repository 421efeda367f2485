//! Delta updates for the end-to-end tests: bundles of the fixture graphs
//! (`tests/fixtures/delta-*.tsv`), deltas made by the real `kgbox-pack
//! delta`, and deltas damaged on purpose.

use std::path::{Path, PathBuf};
use std::process::Command;

use kgbox_bundle::delta::{DeltaPrefix, Instruction, Op};
use kgbox_bundle::BundleReader;
use sha2::{Digest, Sha256};
use tempfile::TempDir;

use crate::{bin, pack, read, repo_root, run, stderr, stdout, Keys};

/// A probe that holds in the old and the new fixture graph.
pub const DELTA_PROBE: &str = "\"Blade Runner\" -> directed_by\tRidley Scott";

fn fixture(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures").join(name)
}

/// The fixture bundles: `old` (movies 1.0.0), `new` (movies 1.1.0: a
/// film and an actor gone, two films and their people added, aliases
/// changed), `other` (movies 1.0.1, the old graph re-packed: another
/// base), and `delta`, the update from `old` to `new`.
pub struct Deltas {
    pub work: TempDir,
    pub keys: Keys,
    pub old: PathBuf,
    pub new: PathBuf,
    pub other: PathBuf,
    pub delta: PathBuf,
}

impl Deltas {
    pub fn new() -> Deltas {
        let work = tempfile::tempdir().unwrap();
        let keys = Keys::new(work.path(), "operator", 7);
        let bundle = |name: &str, tsv: &str, aliases: &str, version: &str| {
            let out = work.path().join(format!("{name}.kgb"));
            let aliases = fixture(aliases);
            let aliases = aliases.to_str().unwrap();
            pack(
                &fixture(tsv),
                "movies",
                version,
                &keys,
                &out,
                &["--aliases", aliases, "--probe", DELTA_PROBE],
            );
            out
        };
        let old = bundle("old", "delta-old.tsv", "delta-old-aliases.tsv", "1.0.0");
        let new = bundle("new", "delta-new.tsv", "delta-new-aliases.tsv", "1.1.0");
        let other = bundle("other", "delta-old.tsv", "delta-old-aliases.tsv", "1.0.1");
        let delta = work.path().join("update.kgbd");
        make_delta(&old, &new, &keys, &delta);
        Deltas {
            work,
            keys,
            old,
            new,
            other,
            delta,
        }
    }

    /// A path in the work dir.
    pub fn path(&self, name: &str) -> PathBuf {
        self.work.path().join(name)
    }
}

impl Default for Deltas {
    fn default() -> Self {
        Deltas::new()
    }
}

/// `kgbox-pack delta OLD NEW -o OUT --key KEY`; panics with its output on failure.
pub fn make_delta(old: &Path, new: &Path, keys: &Keys, out: &Path) {
    let o = run(Command::new(bin("kgbox-pack"))
        .arg("delta")
        .arg(old)
        .arg(new)
        .arg("-o")
        .arg(out)
        .arg("--key")
        .arg(&keys.secret));
    assert!(
        o.status.success(),
        "kgbox-pack delta failed: {}{}",
        stdout(&o),
        stderr(&o)
    );
}

/// The bundle digest (sha256 of the signed prefix, hex) of a bundle file.
pub fn bundle_digest(path: &Path) -> String {
    let r = BundleReader::open(std::fs::File::open(path).unwrap()).unwrap();
    hex::encode(r.prefix().digest())
}

/// A copy of `src` at `out` with byte `at` flipped.
pub fn flipped(src: &Path, at: usize, out: &Path) -> PathBuf {
    let mut bytes = read(src);
    bytes[at] ^= 0x20;
    std::fs::write(out, bytes).unwrap();
    out.to_path_buf()
}

/// Where in a delta file its parts lie: (start of the instruction table,
/// which the new bundle's signature ends just before; start of the first
/// payload).
pub fn delta_layout(path: &Path) -> (usize, usize) {
    let p = parse(&read(path));
    let table = p.bytes.len() - 64 - p.instructions.len() * 64;
    (table, p.bytes.len())
}

fn parse(bytes: &[u8]) -> DeltaPrefix {
    let len = kgbox_bundle::delta::DeltaHeader::decode(bytes)
        .unwrap()
        .prefix_len() as usize;
    DeltaPrefix::parse(bytes[..len].to_vec()).unwrap()
}

/// `delta` re-made, signed by `keys`, with the payload of section
/// `section` (a `patch`) replaced by a zstd frame of zeros of the
/// section's length: a delta whose signature and payload hashes hold but
/// whose result fails the new bundle's signed hash of that section.
pub fn with_wrong_result(delta: &Path, keys: &Keys, section: &str, out: &Path) -> PathBuf {
    let bytes = read(delta);
    let p = parse(&bytes);
    let i = p
        .new
        .sections
        .iter()
        .position(|s| s.name == section)
        .unwrap();
    assert_eq!(p.instructions[i].op, Op::Patch, "{section} is not patched");
    let zeros = vec![0u8; p.new.sections[i].raw_len as usize];
    let replaced = zstd::encode_all(zeros.as_slice(), 3).unwrap();
    let table_at = p.bytes.len() - 64 - p.instructions.len() * 64;
    let mut signed = p.bytes[..table_at].to_vec();
    let mut payloads = Vec::new();
    let mut offset = p.header.prefix_len();
    for (k, ins) in p.instructions.iter().enumerate() {
        let payload = if k == i {
            replaced.clone()
        } else {
            bytes[ins.offset as usize..(ins.offset + ins.len) as usize].to_vec()
        };
        let rewritten = Instruction {
            offset,
            len: payload.len() as u64,
            sha256: Sha256::digest(&payload).into(),
            ..ins.clone()
        };
        signed.extend_from_slice(&rewritten.encode());
        offset += rewritten.len;
        payloads.extend_from_slice(&payload);
    }
    let signature = keys.key.sign_delta(&signed);
    let mut file = signed;
    file.extend_from_slice(&signature);
    file.extend_from_slice(&payloads);
    std::fs::write(out, file).unwrap();
    out.to_path_buf()
}
