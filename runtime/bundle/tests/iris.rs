//! Source IRI sections in signed bundles: they round-trip through
//! verification and installation, and damaged ones (correctly signed, so
//! only the contents are wrong) are refused by both, with a clear error.
#![allow(clippy::unwrap_used)]

use std::io::Cursor;

use kgbox_bundle::kg::encode;
use kgbox_bundle::normalize::NORMALIZER_ID;
use kgbox_bundle::sections::{self as s, include_in_image, KG_REQUIRED};
use kgbox_bundle::tiny::TinyGraph;
use kgbox_bundle::{
    image, BundleReader, BundleWriter, KgStats, Limits, Manifest, OwnedImage, SecretKey,
    TrustedKeys,
};

const TRIPLES: &[(&str, &str, &str)] = &[
    ("Alien", "directed by", "Ridley Scott"),
    ("Blade Runner", "directed by", "Ridley Scott"),
    ("Blade Runner", "year", "1982"),
];
/// Entity IRIs in id (sorted-name) order: 1982, Alien, Blade Runner, Ridley Scott.
const ENTITY_IRIS: &[Option<&str>] = &[
    None,
    Some("http://ex.org/film/Alien"),
    Some("http://ex.org/film/Blade_Runner"),
    Some("http://ex.org/person/Ridley_Scott"),
];
const RELATION_IRIS: &[Option<&str>] = &[
    Some("http://ex.org/o/directed_by"),
    Some("http://ex.org/o/year"),
];

fn key() -> SecretKey {
    SecretKey::from_seed([3u8; 32], "iris tests")
}

fn graph() -> TinyGraph {
    let mut g = TinyGraph::from_triples(TRIPLES).unwrap();
    let e = encode::iri_table(ENTITY_IRIS).unwrap();
    g.set_section(s::ENTITY_IRI_OFFSETS, &e.offsets);
    g.set_section(s::ENTITY_IRI_TEXT, &e.text);
    g.set_section(s::ENTITY_IRI_SORTED, &e.sorted);
    let r = encode::iri_table(RELATION_IRIS).unwrap();
    g.set_section(s::RELATION_IRI_OFFSETS, &r.offsets);
    g.set_section(s::RELATION_IRI_TEXT, &r.text);
    g.set_section(s::RELATION_IRI_SORTED, &r.sorted);
    g
}

fn bundle(g: &TinyGraph) -> Vec<u8> {
    let manifest = Manifest {
        name: "iris".into(),
        version: semver::Version::new(1, 0, 0),
        compatible: "kgbox-generic".into(),
        created: "2026-01-01T00:00:00Z".into(),
        created_unix: 1_767_225_600,
        min_runtime: semver::Version::new(0, 1, 0),
        generator: "iris test".into(),
        normalizer: NORMALIZER_ID.into(),
        stats: KgStats::default(),
        models: Vec::new(),
        probes: Vec::new(),
    };
    let mut w = BundleWriter::new(manifest).level(1);
    for (name, raw) in g.sections() {
        w.add_section(name, KG_REQUIRED.contains(&name), raw.to_vec())
            .unwrap();
    }
    let mut out = Vec::new();
    w.write(&key(), &mut out).unwrap();
    out
}

fn keys() -> TrustedKeys {
    TrustedKeys::new(vec![key().public()])
}

/// What `kgbox verify` runs (`verify_all`), and what install runs
/// (`write_image`), each as an error text.
fn refusals(bundle: &[u8]) -> (String, String) {
    let limits = Limits::default();
    let mut r = BundleReader::open(Cursor::new(bundle)).unwrap();
    let verify = r.verify_all(&keys(), &limits, include_in_image).err();
    let mut r = BundleReader::open(Cursor::new(bundle)).unwrap();
    r.check_stored(&limits, include_in_image).unwrap();
    let install = image::write_image(&mut r, &limits, include_in_image, &mut Vec::new()).err();
    (
        verify.map(|e| e.to_string()).unwrap_or_default(),
        install.map(|e| e.to_string()).unwrap_or_default(),
    )
}

#[test]
fn iris_survive_signing_verification_and_installation() {
    let bytes = bundle(&graph());
    assert_eq!(refusals(&bytes), (String::new(), String::new()));
    let img = OwnedImage::from_bundle_bytes(&bytes, &keys(), &Limits::default()).unwrap();
    let kg = img.kg().unwrap();
    assert!(kg.has_iris());
    kg.check_iris().unwrap();
    let br = kg.entity_id("Blade Runner").unwrap();
    assert_eq!(kg.entity_iri(br), Some("http://ex.org/film/Blade_Runner"));
    assert_eq!(
        kg.entity_by_iri("http://ex.org/film/Blade_Runner"),
        Some(br)
    );
    assert_eq!(kg.entity_iri(kg.entity_id("1982").unwrap()), None);
    assert_eq!(kg.entity_by_iri("http://ex.org/film/Nope"), None);
    let year = kg.relation_id("year").unwrap();
    assert_eq!(kg.relation_iri(year), Some("http://ex.org/o/year"));
    assert_eq!(kg.relation_by_iri("http://ex.org/o/year"), Some(year));
    assert_eq!(kg.relation_by_iri("http://ex.org/o/directed_by"), Some(0));
    assert_eq!(kg.relation_iri(9), None);
}

#[test]
fn a_graph_without_iris_has_none() {
    let g = TinyGraph::from_triples(TRIPLES).unwrap();
    let bytes = bundle(&g);
    let img = OwnedImage::from_bundle_bytes(&bytes, &keys(), &Limits::default()).unwrap();
    let kg = img.kg().unwrap();
    assert!(!kg.has_iris());
    assert_eq!(kg.entity_iri(0), None);
    assert_eq!(kg.entity_by_iri("http://ex.org/film/Alien"), None);
    assert_eq!(kg.relation_iri(0), None);
    assert_eq!(kg.relation_by_iri("http://ex.org/o/year"), None);
}

#[test]
fn signed_bundles_with_damaged_iris_are_refused_by_verify_and_install() {
    let encode::EncodedIris {
        offsets,
        text,
        sorted,
    } = encode::iri_table(ENTITY_IRIS).unwrap();
    let as_u64 = |b: &[u8]| -> Vec<u64> {
        b.chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let as_u32 = |b: &[u8]| -> Vec<u32> {
        b.chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let mut cases: Vec<(&str, &'static str, Vec<u8>, &str)> = Vec::new();
    // Offsets that decrease in the middle (first and last still right, so the
    // constant-time checks at start-up pass).
    let mut o = as_u64(&offsets);
    o[2] = o[3] + 5;
    cases.push((
        "decreasing",
        s::ENTITY_IRI_OFFSETS,
        encode::u64s(&o),
        "offsets decrease",
    ));
    // An offset past the end of the text.
    let mut o = as_u64(&offsets);
    o[1] = 1 << 40;
    cases.push((
        "past the end",
        s::ENTITY_IRI_OFFSETS,
        encode::u64s(&o),
        "is out of bounds",
    ));
    // Bytes that are not UTF-8.
    let mut t = text.clone();
    t[0] = 0xFF;
    cases.push(("not UTF-8", s::ENTITY_IRI_TEXT, t, "not valid UTF-8"));
    // An index that points past the entities.
    let mut x = as_u32(&sorted);
    x[0] = 0xFF00_0000;
    cases.push((
        "id out of range",
        s::ENTITY_IRI_SORTED,
        encode::u32s(&x),
        "does not exist",
    ));
    // An index out of order.
    let mut x = as_u32(&sorted);
    x.swap(0, 2);
    cases.push((
        "unsorted",
        s::ENTITY_IRI_SORTED,
        encode::u32s(&x),
        "is not after",
    ));
    // Offsets of the wrong count (refused at open, too).
    let o = as_u64(&offsets);
    cases.push((
        "short",
        s::ENTITY_IRI_OFFSETS,
        encode::u64s(&o[..3]),
        "offsets for 4 entities",
    ));
    for (what, section, raw, expect) in cases {
        let mut g = graph();
        g.set_section(section, &raw);
        let (verify, install) = refusals(&bundle(&g));
        for (who, err) in [("verify", &verify), ("install", &install)] {
            assert!(
                err.contains(expect) && err.contains("kg.entities.iris"),
                "{what}: {who} gave {err:?}"
            );
        }
    }
}

#[test]
fn a_partial_set_of_iri_sections_is_refused() {
    let mut g = TinyGraph::from_triples(TRIPLES).unwrap();
    let e = encode::iri_table(ENTITY_IRIS).unwrap();
    g.set_section(s::ENTITY_IRI_OFFSETS, &e.offsets);
    let (verify, install) = refusals(&bundle(&g));
    assert!(
        verify.contains("missing: kg.entities.iris.text, kg.entities.iris.sorted"),
        "{verify}"
    );
    assert!(install.contains("missing"), "{install}");
    assert!(g.kg().is_err());
}

#[test]
fn two_ids_with_one_iri_cannot_be_encoded() {
    let err = encode::iri_table(&[Some("http://x"), None, Some("http://x")])
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("ids 0 and 2 have the same IRI http://x"),
        "{err}"
    );
}
