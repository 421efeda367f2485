//! Bundles that leave the in-edges to the device: the image it derives is
//! the image of the bundle that carries them, byte for byte; a derived
//! section that does not match its signed hash, a section that cannot be
//! derived, or half a derived CSR is refused with a clear error.
#![allow(clippy::unwrap_used)]

use std::io::Cursor;

use kgbox_bundle::derive::DERIVABLE;
use kgbox_bundle::format::COMPRESSION_DERIVED;
use kgbox_bundle::normalize::NORMALIZER_ID;
use kgbox_bundle::sections::{self as s, include_in_image, KG_REQUIRED};
use kgbox_bundle::tiny::TinyGraph;
use kgbox_bundle::writer::{RawSection, StoredSection};
use kgbox_bundle::{
    BundleReader, BundleWriter, KgStats, Limits, Manifest, OwnedImage, SecretKey, TrustedKeys,
};

fn key() -> SecretKey {
    SecretKey::from_seed([5u8; 32], "derived tests")
}

fn keys() -> TrustedKeys {
    TrustedKeys::new(vec![key().public()])
}

/// A graph with a hub, several relations per node and a self loop.
fn graph() -> TinyGraph {
    let names: Vec<String> = (0..40).map(|i| format!("entity {i:02}")).collect();
    let relations = ["r0", "r1", "r2"];
    let mut triples = Vec::new();
    for i in 0..40usize {
        for k in 0..5usize {
            let j = (i * 7 + k * 13) % 40;
            let t = if k == 4 { 0 } else { j };
            triples.push((names[i].as_str(), relations[(i + k) % 3], names[t].as_str()));
        }
    }
    triples.push((names[3].as_str(), "r1", names[3].as_str()));
    TinyGraph::from_triples(&triples).unwrap()
}

fn manifest() -> Manifest {
    Manifest {
        name: "derived".into(),
        version: semver::Version::new(1, 0, 0),
        compatible: "kgbox-generic".into(),
        created: "2026-01-01T00:00:00Z".into(),
        created_unix: 1_767_225_600,
        min_runtime: semver::Version::new(0, 1, 0),
        generator: "derived test".into(),
        normalizer: NORMALIZER_ID.into(),
        stats: KgStats::default(),
        models: Vec::new(),
        probes: Vec::new(),
    }
}

/// The bundle of `g`; `how(name, raw)` adds each section to the writer.
fn bundle(g: &TinyGraph, how: impl Fn(&mut BundleWriter, &'static str, &[u8])) -> Vec<u8> {
    let mut w = BundleWriter::new(manifest()).level(1);
    for (name, raw) in g.sections() {
        how(&mut w, name, raw);
    }
    let mut out = Vec::new();
    w.write(&key(), &mut out).unwrap();
    out
}

fn shipped(w: &mut BundleWriter, name: &'static str, raw: &[u8]) {
    w.add_section(name, KG_REQUIRED.contains(&name), raw.to_vec())
        .unwrap();
}

fn derived(w: &mut BundleWriter, name: &'static str, raw: &[u8]) {
    if DERIVABLE.contains(&name) {
        w.add_derived(name, true, RawSection::Bytes(raw.to_vec()))
            .unwrap();
    } else {
        shipped(w, name, raw);
    }
}

fn install(bundle: &[u8]) -> Result<OwnedImage, String> {
    OwnedImage::from_bundle_bytes(bundle, &keys(), &Limits::default()).map_err(|e| e.to_string())
}

#[test]
fn a_derived_image_is_the_shipped_image() {
    let g = graph();
    let full = bundle(&g, shipped);
    let lean = bundle(&g, derived);
    assert!(lean.len() < full.len(), "{} >= {}", lean.len(), full.len());
    let r = BundleReader::open(Cursor::new(&lean)).unwrap();
    for name in DERIVABLE {
        let e = r.prefix().section(name).unwrap();
        assert_eq!((e.compression, e.stored_len), (COMPRESSION_DERIVED, 0));
        assert!(e.raw_len > 0);
    }
    let (a, b) = (install(&full).unwrap(), install(&lean).unwrap());
    for name in DERIVABLE.iter().chain(&[s::OUT_TARGETS]) {
        assert_eq!(a.section(name), b.section(name), "{name}");
    }
    let kg = b.kg().unwrap();
    let hub = kg.entity_id("entity 00").unwrap();
    assert!(kg.inc.degree(hub) >= 40);
    // `verify` reads a derived section as nothing to check yet, and passes.
    let mut r = BundleReader::open(Cursor::new(&lean)).unwrap();
    r.verify_all(&keys(), &Limits::default(), include_in_image)
        .unwrap();
}

#[test]
fn a_derived_section_that_does_not_match_its_signed_hash_is_refused() {
    let g = graph();
    let lean = bundle(&g, |w, name, raw| {
        if name == s::IN_SOURCES {
            w.add_derived(
                name,
                true,
                RawSection::Digest {
                    len: raw.len() as u64,
                    sha256: [7u8; 32],
                },
            )
            .unwrap();
        } else {
            derived(w, name, raw)
        }
    });
    let e = install(&lean).unwrap_err();
    assert!(e.contains("kg.in.src") && e.contains("derived"), "{e}");
}

#[test]
fn only_the_whole_in_edge_csr_can_be_derived() {
    let g = graph();
    // A writer refuses to derive anything else...
    let mut w = BundleWriter::new(manifest());
    let e = w
        .add_derived(s::ENTITY_NAMES, true, RawSection::Bytes(vec![1]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot be derived"), "{e}");
    // ...and a device refuses a bundle that says so anyway.
    let other = bundle(&g, |w, name, raw| {
        if name == s::ALIAS_NAMES {
            let mut st = StoredSection::uncompressed(name, true, Vec::new()).unwrap();
            st.compression = COMPRESSION_DERIVED;
            st.raw_len = raw.len() as u64;
            w.add_stored(st).unwrap();
        } else {
            shipped(w, name, raw)
        }
    });
    let e = install(&other).unwrap_err();
    assert!(e.contains("kg.aliases.names") && e.contains("only"), "{e}");
    // Half of it derived.
    let half = bundle(&g, |w, name, raw| {
        if name == s::IN_OFFSETS {
            shipped(w, name, raw)
        } else {
            derived(w, name, raw)
        }
    });
    let e = install(&half).unwrap_err();
    assert!(e.contains("all three or none"), "{e}");
}

#[test]
fn out_edges_that_cannot_be_turned_around_are_an_error_not_a_panic() {
    let mut g = graph();
    // Signed as it is (so every stored hash holds), but an edge points
    // past the last entity.
    let mut dst = g
        .sections()
        .into_iter()
        .find(|(n, _)| *n == s::OUT_TARGETS)
        .unwrap()
        .1
        .to_vec();
    dst[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
    g.set_section(s::OUT_TARGETS, &dst);
    let lean = bundle(&g, derived);
    let e = install(&lean).unwrap_err();
    assert!(e.contains("cannot derive the in-edges"), "{e}");
}
