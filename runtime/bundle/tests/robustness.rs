//! The v1 fixture stays readable, and damaged images never make the views
//! panic or read out of bounds (images are not re-hashed at load).
#![allow(clippy::unwrap_used)]

use std::io::Cursor;

use kgbox_bundle::normalize::normalize;
use kgbox_bundle::sections::include_in_image;
use kgbox_bundle::{
    image, AlignedBytes, BundleReader, ImageView, Kg, Limits, PublicKey, TrustedKeys,
};
use rand::{Rng, SeedableRng};

const FIXTURE: &[u8] = include_bytes!("fixtures/v1-demo-movies.kgb");
const FIXTURE_KEY: &str = include_str!("fixtures/v1-demo-movies.pub");

fn image_of(bundle: &[u8]) -> AlignedBytes {
    let keys = TrustedKeys::new(vec![PublicKey::parse(FIXTURE_KEY).unwrap()]);
    let mut r = BundleReader::open(Cursor::new(bundle)).unwrap();
    r.verify_all(&keys, &Limits::default(), include_in_image)
        .unwrap();
    let mut out = Vec::new();
    image::write_image(&mut r, &Limits::default(), include_in_image, &mut out).unwrap();
    AlignedBytes::from_slice(&out)
}

#[test]
fn v1_fixture_reads_and_answers() {
    let img = image_of(FIXTURE);
    let view = ImageView::parse(&img, include_in_image).unwrap();
    Kg::from_sections(|n| view.section(&img, n))
        .unwrap()
        .check_index()
        .unwrap();
    view.verify_hashes(&img).unwrap();
    assert_eq!(view.prefix.manifest.name, "demo-movies");
    let kg = Kg::from_sections(|n| view.section(&img, n)).unwrap();
    assert_eq!(
        (kg.entity_count(), kg.relation_count(), kg.triple_count()),
        (1919, 9, 2483)
    );
    let br = kg.entity_id("Blade Runner").unwrap();
    assert_eq!(kg.out.degree(br), 29);
    let directed_by = kg.relation_id("directed_by").unwrap();
    let directors: Vec<&str> = kg
        .out
        .neighbours(br, directed_by)
        .iter()
        .map(|&d| kg.entity_name(d).unwrap())
        .collect();
    assert_eq!(directors, ["Ridley Scott"]);
    let scott = kg.entity_id("Ridley Scott").unwrap();
    assert!(kg.inc.neighbours(scott, directed_by).contains(&br));
    let hits = kg.lookup_normalized(&normalize("blade  RUNNER"));
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].entity, br);
    assert!(!hits[0].via_alias);
}

/// Touches every accessor over every entity; must not panic whatever the bytes.
fn exercise(kg: &Kg<'_>) -> usize {
    let mut seen = 0;
    for id in 0..kg.entity_count() as u32 + 2 {
        if let Some(name) = kg.entity_name(id) {
            seen += kg.lookup_normalized(&normalize(name)).len();
            seen += usize::from(kg.entity_id(name).is_some());
        }
        let (rels, others) = kg.out.edges(id);
        seen += rels.len() + others.len() + kg.inc.degree(id);
        for r in 0..kg.relation_count() as u32 + 1 {
            seen += kg.out.neighbours(id, r).len() + kg.inc.neighbours(id, r).len();
        }
        seen += kg.aliases(id).count();
    }
    let values = kg.with_index(|index| {
        use fst::Streamer;
        let mut values = Vec::new();
        let mut stream = index.stream();
        while let Some((_, v)) = stream.next() {
            values.push(v);
        }
        values
    });
    for v in values.unwrap_or_default() {
        seen += kg.decode_postings(v).len();
    }
    seen
}

#[test]
fn damaged_images_never_panic() {
    let good = image_of(FIXTURE);
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let header_end = 64
        + ImageView::parse(&good, include_in_image)
            .unwrap()
            .prefix
            .bytes
            .len();
    let (mut parsed, mut viewed) = (0, 0);
    for round in 0..400 {
        let mut bytes = good.to_vec();
        // Damage the data region (the prefix is parsed and checked separately).
        for _ in 0..rng.random_range(1..8) {
            let at = rng.random_range(header_end..bytes.len());
            bytes[at] = rng.random();
        }
        if round % 10 == 0 {
            // Also zero a whole run, as a torn write would.
            let at = rng.random_range(header_end..bytes.len() - 256);
            bytes[at..at + 256].fill(0);
        }
        let img = AlignedBytes::from_slice(&bytes);
        let Ok(view) = ImageView::parse(&img, include_in_image) else {
            continue;
        };
        parsed += 1;
        assert!(
            view.verify_hashes(&img).is_err(),
            "round {round}: damage not detected by verify_hashes"
        );
        if let Ok(kg) = Kg::from_sections(|n| view.section(&img, n)) {
            viewed += 1;
            exercise(&kg);
        }
    }
    assert!(
        parsed > 300 && viewed > 100,
        "parsed {parsed}, viewed {viewed}"
    );
}

#[test]
fn damaged_prefixes_and_truncations_are_errors() {
    let good = image_of(FIXTURE);
    let mut rng = rand::rngs::StdRng::seed_from_u64(2);
    for _ in 0..500 {
        let mut bytes = good.to_vec();
        let at = rng.random_range(0..2048.min(bytes.len()));
        bytes[at] ^= 1 << rng.random_range(0..8);
        let _ = ImageView::parse(&AlignedBytes::from_slice(&bytes), include_in_image);
        let cut = rng.random_range(0..bytes.len());
        assert!(
            ImageView::parse(&AlignedBytes::from_slice(&good[..cut]), include_in_image).is_err()
        );
        let _ = BundleReader::open(Cursor::new(&FIXTURE[..rng.random_range(0..FIXTURE.len())]));
    }
}

/// `check_index` (run by install and verify) walks the whole lexical
/// index: a sound one passes, one with damaged nodes, bad values or a
/// truncated body is refused naming the section, never a panic.
#[test]
fn check_index_refuses_a_damaged_index() {
    use kgbox_bundle::sections as s;
    use kgbox_bundle::tiny::TinyGraph;
    // Names that differ only in case share an index key: a postings list.
    let triples: Vec<(String, String, String)> = (0..300)
        .map(|i| {
            (
                format!("entity {i}"),
                format!("r{}", i % 5),
                format!("Entity {}", (i * 7) % 300),
            )
        })
        .collect();
    let borrowed: Vec<(&str, &str, &str)> = triples
        .iter()
        .map(|(h, r, t)| (h.as_str(), r.as_str(), t.as_str()))
        .collect();
    let mut g = TinyGraph::from_triples(&borrowed).unwrap();
    g.kg().unwrap().check_index().unwrap();
    let fst = g
        .sections()
        .into_iter()
        .find(|(n, _)| *n == s::INDEX_FST)
        .unwrap()
        .1
        .to_vec();
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let (mut opened, mut refused) = (0, 0);
    for round in 0..300 {
        let mut bytes = fst.clone();
        // Damage the node bytes, not the header and footer fst checks.
        for _ in 0..rng.random_range(1..4) {
            let at = rng.random_range(24..bytes.len() - 24);
            bytes[at] = rng.random();
        }
        g.set_section(s::INDEX_FST, &bytes);
        let Ok(kg) = g.kg() else { continue };
        opened += 1;
        match kg.check_index() {
            Ok(()) => {}
            Err(e) => {
                refused += 1;
                assert!(e.to_string().contains(s::INDEX_FST), "round {round}: {e}");
            }
        }
    }
    // Postings that name entities past the end are refused too.
    g.set_section(s::INDEX_FST, &fst);
    g.set_section(s::INDEX_POSTINGS, &[0xff; 64]);
    let kg = g.kg().unwrap();
    let e = kg.check_index().unwrap_err();
    assert!(
        e.to_string().contains("does not exist") || e.to_string().contains("past the end"),
        "{e}"
    );
    assert!(
        opened > 200 && refused > opened / 3,
        "opened {opened}, refused {refused}"
    );
}
