//! Bundle and delta files: the bytes `kgbox verify`, `kgbox install` and
//! `PUT /v1/bundles` read from outside.
//!
//! [`bundle_file`] takes the bytes as a whole file, so most inputs die at
//! the header or the signature. [`bundle_sections`] gets past the
//! signature: it edits the demo bundle's decompressed sections as the
//! input says and signs the result with the demo key (trusted here), so
//! the fuzzer reaches the structural checks a hostile signer would meet.
//! A bundle that verifies is then loaded and read as `serve` reads it.

use std::io::Cursor;
use std::path::PathBuf;
use std::sync::OnceLock;

use crate::demo_key_line;
use kgbox::install;
use kgbox::loaded::{LoadedBundle, Source};
use kgbox::Config;
use kgbox_bundle::delta::format::{is_delta, DELTA_MAGIC};
use kgbox_bundle::{BundleReader, BundleWriter, Limits, Manifest, SecretKey, TrustedKeys};
use kgbox_query::link::{link_text, LinkOptions};
use kgbox_query::{run_query, ExecOptions, ParseLimits};

/// The demo bundle taken apart, a device configuration and a scratch folder.
struct Fixture {
    _dir: tempfile::TempDir,
    file: PathBuf,
    cfg: Config,
    keys: TrustedKeys,
    secret: SecretKey,
    manifest: Manifest,
    /// (name, required, decompressed bytes) in the bundle's order.
    sections: Vec<(String, bool, Vec<u8>)>,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a scratch folder");
        let secret = SecretKey::parse(include_str!("../../../demo/DEMO-ONLY.key"))
            .expect("the demo key parses");
        let public = kgbox_bundle::PublicKey::parse(kgbox::demo::DEMO_PUBLIC_KEY)
            .expect("the demo public key parses");
        let keys = TrustedKeys::new(vec![public]);
        let mut reader =
            BundleReader::open(Cursor::new(kgbox::demo::DEMO_BUNDLE)).expect("the demo opens");
        let limits = Limits::default();
        let mut sections = Vec::new();
        for entry in reader.prefix().sections.clone() {
            let mut raw = Vec::new();
            reader
                .copy_section(&entry, &limits, &mut raw)
                .expect("the demo's sections decompress");
            sections.push((entry.name.clone(), entry.required(), raw));
        }
        let manifest = reader.prefix().manifest.clone();
        let mut cfg = Config {
            data_dir: dir.path().join("data"),
            compatible: manifest.compatible.clone(),
            ..Config::default()
        };
        cfg.trust.keys = vec![demo_key_line()];
        // The demo installed: the base a delta applies to.
        let demo = dir.path().join("demo.kgb");
        std::fs::write(&demo, kgbox::demo::DEMO_BUNDLE).expect("writing the demo bundle");
        install::install(&demo, &cfg, &install::InstallOptions::default())
            .expect("the demo installs");
        Fixture {
            file: dir.path().join("input.kgb"),
            _dir: dir,
            cfg,
            keys,
            secret,
            manifest,
            sections,
        }
    })
}

/// The input as a bundle file.
pub fn bundle_file(data: &[u8]) {
    check_file(fixture(), data);
}

/// The input as a delta update file against the installed demo (the
/// delta magic is put in front when the input lacks it).
pub fn delta_file(data: &[u8]) {
    let mut d = DELTA_MAGIC.to_vec();
    if !data.starts_with(&DELTA_MAGIC) {
        d.extend_from_slice(data);
    }
    check_file(
        fixture(),
        if d.len() == DELTA_MAGIC.len() {
            data
        } else {
            &d
        },
    );
}

/// The demo bundle's sections edited by the input, signed with the demo key.
///
/// The input is a list of edits, each `[section, op, offset_hi, offset_lo,
/// len, bytes...]`: `op % 4` is overwrite, truncate, insert or replace;
/// the offset is a fraction (of 65,536) of the section's length.
pub fn bundle_sections(data: &[u8]) {
    let f = fixture();
    let mut sections = f.sections.clone();
    let mut rest = data;
    while rest.len() >= 5 && !sections.is_empty() {
        let n = sections.len();
        let raw = &mut sections[rest[0] as usize % n].2;
        let at = (u16::from_be_bytes([rest[2], rest[3]]) as usize * raw.len()) >> 16;
        let len = (rest[4] as usize).min(rest.len() - 5);
        let bytes = &rest[5..5 + len];
        match rest[1] % 4 {
            0 => {
                for (i, b) in bytes.iter().enumerate() {
                    if let Some(x) = raw.get_mut(at + i) {
                        *x = *b;
                    }
                }
            }
            1 => raw.truncate(at),
            2 => {
                raw.splice(at..at, bytes.iter().copied());
            }
            _ => *raw = bytes.to_vec(),
        }
        rest = &rest[5 + len..];
    }
    let mut writer = BundleWriter::new(f.manifest.clone()).level(1);
    for (name, required, raw) in sections {
        if writer.add_section(&name, required, raw).is_err() {
            return;
        }
    }
    let mut out = Vec::new();
    if writer.write(&f.secret, &mut out).is_err() {
        return;
    }
    check_file(f, &out);
}

/// Runs `verify` on `data` written to a file; a bundle that passes must
/// load, and must then be readable without a panic.
fn check_file(f: &Fixture, data: &[u8]) {
    crate::contain_index_panics();
    if std::fs::write(&f.file, data).is_err() {
        return;
    }
    let verified = install::verify(&f.file, &f.keys, &f.cfg);
    if verified.is_err() {
        return;
    }
    let loaded = LoadedBundle::from_bundle_bytes(
        data,
        &f.keys,
        &f.cfg.limits(),
        Source::File(f.file.clone()),
    );
    match loaded {
        Ok(b) => read_all(&b),
        // A delta verifies against the installed base; it is not a bundle.
        Err(_) if is_delta(data) => {}
        Err(e) => panic!("`verify` accepted a bundle that does not load: {e}"),
    }
}

/// Reads every name, edge list and index entry of a loaded bundle, links a
/// question and runs a few queries: what serving it would touch.
fn read_all(b: &LoadedBundle) {
    let Ok(kg) = b.kg() else {
        panic!("a verified bundle's graph does not open");
    };
    if let Err(e) = kg.check_index() {
        panic!("`verify` accepted a bundle whose lexical index is damaged: {e}");
    }
    let entities = kg.entity_count().min(1 << 16) as u32;
    for id in 0..entities {
        if let Some(name) = kg.entity_name(id) {
            let _ = kg.entity_id(name);
        }
        let _ = kg.out.edges(id);
        let _ = kg.inc.edges(id);
        let _ = kg.entity_iri(id);
    }
    for r in 0..kg.relation_count().min(1 << 12) as u32 {
        let _ = kg.relation_name(r);
        let _ = kg.relation_description(r);
        let _ = kg.relation_aliases(r).count();
        let _ = kg.relation_iri(r);
    }
    let opts = LinkOptions::default();
    let _ = link_text(&kg, "who directed Blade Runner and [Ridley Scott]", &opts);
    let limits = ParseLimits::default();
    let exec = ExecOptions::default();
    for q in [
        "\"Blade Runner\" -> directed_by",
        "(\"Ridley Scott\" -> directed_by_inv) & (\"Harrison Ford\" -> starred_actors_inv)",
        "\"Blade Runner\" -> directed_by -> directed_by_inv -> starred_actors",
    ] {
        let _ = run_query(&kg, q, &limits, &exec);
    }
}
