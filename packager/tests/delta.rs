//! Delta updates through the packager library: a delta rebuilds the new
//! bundle's image byte for byte from the old one's, the graph transforms
//! make it small, and a damaged, misdirected or wrong delta is refused.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::Cursor;
use std::path::{Path, PathBuf};

use common::*;
use kgbox_bundle::delta::{DeltaReader, Op, Transform};
use kgbox_bundle::image::from_bundle_bytes;
use kgbox_bundle::sections::include_in_image;
use kgbox_bundle::{BundleError, Limits, TrustedKeys};
use kgbox_pack::delta::{delta_bytes, self_check, DeltaOptions, Loaded};
use kgbox_pack::graph::InEdges;

/// A small deterministic generator (xorshift), enough for test graphs.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// A random movie-like graph: (triples, aliases) as TSV text.
fn graph(seed: u64, films: usize, people: usize, triples: usize) -> (Vec<String>, Vec<String>) {
    let mut rng = Rng::new(seed);
    let rels = [
        "directed_by",
        "starred_actors",
        "written_by",
        "has_genre",
        "release_year",
    ];
    let mut t: Vec<String> = (0..triples)
        .map(|_| {
            format!(
                "Film {}\t{}\tPerson {}",
                rng.below(films),
                rels[rng.below(rels.len())],
                rng.below(people)
            )
        })
        .collect();
    // A rare relation, which the changed graph drops.
    t.extend((0..5).map(|i| format!("Film {i}\tremade_as\tFilm {}", i + 100)));
    t.sort();
    t.dedup();
    let a: Vec<String> = (0..films / 10)
        .map(|i| format!("Film {}\tThe Film {i}", rng.below(films)))
        .collect();
    (t, a)
}

/// `old` changed: `percent` % of the triples replaced, some with new
/// entities, one relation gone and one new, aliases added and removed.
fn changed(old: &(Vec<String>, Vec<String>), percent: usize) -> (Vec<String>, Vec<String>) {
    let mut rng = Rng::new(99);
    let n = old.0.len() * percent / 100;
    let mut t: Vec<String> = old
        .0
        .iter()
        .filter(|l| !l.contains("remade_as"))
        .skip(n)
        .cloned()
        .collect();
    for i in 0..n {
        let film = if i % 5 == 0 {
            format!("New Film {i}")
        } else {
            format!("Film {}", rng.below(200))
        };
        let rel = if i % 7 == 0 {
            "edited_by"
        } else {
            "starred_actors"
        };
        t.push(format!("{film}\t{rel}\tPerson {}", rng.below(400)));
    }
    let mut a: Vec<String> = old.1.iter().skip(2).cloned().collect();
    a.push("New Film 0\tA New Film".into());
    a.push("Person 3\tP. Three".into());
    (t, a)
}

struct Pair {
    dir: tempfile::TempDir,
    old: PathBuf,
    new: PathBuf,
}

fn pack_graph(dir: &Path, name: &str, g: &(Vec<String>, Vec<String>), version: u64) -> PathBuf {
    pack_graph_with(dir, name, g, version, InEdges::Auto)
}

fn pack_graph_with(
    dir: &Path,
    name: &str,
    g: &(Vec<String>, Vec<String>),
    version: u64,
    in_edges: InEdges,
) -> PathBuf {
    let triples = write(dir, &format!("{name}.tsv"), g.0.join("\n") + "\n");
    let aliases = write(dir, &format!("{name}-aliases.tsv"), g.1.join("\n") + "\n");
    let relations = write(
        dir,
        &format!("{name}-relations.tsv"),
        "directed_by\twho directed the film\nstarred_actors\twho acted in it\n",
    );
    let out = dir.join(format!("{name}.kgb"));
    let mut opts = options(&triples);
    opts.aliases = Some(aliases);
    opts.relations = Some(relations);
    opts.version = semver::Version::new(1, version, 0);
    opts.scale.in_edges = in_edges;
    kgbox_pack::pack(&opts, &test_key(), &out).unwrap();
    out
}

fn pair(percent: usize) -> Pair {
    let dir = tempfile::tempdir().unwrap();
    let g = graph(1, 200, 400, 3000);
    let old = pack_graph(dir.path(), "old", &g, 0);
    let new = pack_graph(dir.path(), "new", &changed(&g, percent), 1);
    Pair { dir, old, new }
}

fn keys() -> TrustedKeys {
    TrustedKeys::new(vec![test_key().public()])
}

fn limits() -> Limits {
    Limits::default()
}

/// Opens and checks a delta as a device does, then applies it to `old`.
fn apply(delta: &[u8], old: &Loaded) -> Result<Vec<u8>, BundleError> {
    let mut r = DeltaReader::open(Cursor::new(delta))?;
    r.verify_signatures(&keys())?;
    r.check_payloads(&limits(), include_in_image)?;
    let base = |n: &str| old.section(n);
    let mut out = Vec::new();
    let plan = r.write_image(
        &base,
        &old.prefix.digest(),
        &limits(),
        include_in_image,
        &mut out,
    )?;
    let mut image = kgbox_bundle::AlignedBytes::from_slice(&out);
    kgbox_bundle::derive::fill(r.new_prefix(), &plan.ranges, image.as_mut_slice())?;
    Ok(image.to_vec())
}

#[test]
fn a_delta_rebuilds_the_new_image_byte_for_byte() {
    let p = pair(5);
    let (old, new) = (Loaded::read(&p.old).unwrap(), Loaded::read(&p.new).unwrap());
    let (delta, report) = delta_bytes(&old, &new, &test_key(), &DeltaOptions::default()).unwrap();
    let image = apply(&delta, &old).unwrap();
    let expected = from_bundle_bytes(&std::fs::read(&p.new).unwrap(), &keys(), &limits()).unwrap();
    assert!(
        image == *expected,
        "the delta's image differs from the bundle's"
    );
    assert_eq!(
        self_check(&delta, &old, DeltaOptions::default().window_log_max).unwrap(),
        image
    );
    // Relation descriptions, aliases and the index all changed.
    let op = |n: &str| report.iter().find(|s| s.name == n).unwrap();
    assert_eq!(op("kg.index.fst").transform, Transform::Predict);
    assert!(op("kg.index.fst").payload < 100, "{:?}", op("kg.index.fst"));
    assert_eq!(op("kg.aliases.names").op, Op::Patch);
    let full = std::fs::metadata(&p.new).unwrap().len() as usize;
    assert!(
        delta.len() * 2 < full,
        "delta {} bytes, bundle {full}",
        delta.len()
    );
}

/// Between bundles that leave the in-edges to the device, a delta carries
/// none of them, and the device's derived image is the new bundle's.
#[test]
fn a_delta_between_bundles_with_derived_in_edges_rebuilds_the_new_image() {
    let dir = tempfile::tempdir().unwrap();
    let g = graph(1, 200, 400, 3000);
    let old = pack_graph_with(dir.path(), "old", &g, 0, InEdges::Derive);
    let new = pack_graph_with(dir.path(), "new", &changed(&g, 5), 1, InEdges::Derive);
    let (lo, ln) = (Loaded::read(&old).unwrap(), Loaded::read(&new).unwrap());
    let (delta, report) = delta_bytes(&lo, &ln, &test_key(), &DeltaOptions::default()).unwrap();
    for name in kgbox_bundle::derive::DERIVABLE {
        let s = report.iter().find(|s| s.name == name).unwrap();
        assert_eq!((s.op, s.payload), (Op::Full, 0), "{name}");
    }
    let image = apply(&delta, &lo).unwrap();
    let expected = from_bundle_bytes(&std::fs::read(&new).unwrap(), &keys(), &limits()).unwrap();
    assert!(
        image == *expected,
        "the delta's image differs from the bundle's"
    );
    let view = kgbox_bundle::ImageView::parse(&expected, include_in_image).unwrap();
    view.verify_hashes(&expected).unwrap();
}

#[test]
fn the_transforms_make_a_delta_smaller() {
    let p = pair(2);
    let (old, new) = (Loaded::read(&p.old).unwrap(), Loaded::read(&p.new).unwrap());
    let (with, _) = delta_bytes(&old, &new, &test_key(), &DeltaOptions::default()).unwrap();
    let plain = DeltaOptions {
        transforms: false,
        ..DeltaOptions::default()
    };
    let (without, report) = delta_bytes(&old, &new, &test_key(), &plain).unwrap();
    assert!(report.iter().all(|s| s.transform == Transform::Raw));
    assert_eq!(apply(&without, &old).unwrap(), apply(&with, &old).unwrap());
    assert!(
        with.len() * 2 < without.len(),
        "with transforms {} bytes, without {}",
        with.len(),
        without.len()
    );
}

/// Comparing the transforms at a fast level (as for sections over 4 MiB)
/// and compressing only the winner gives a delta that rebuilds the same
/// image, and picks nearly as well as trying every transform at the final
/// level (a tenth larger on this small pair; the same to 2 bytes on the
/// 10M-triple pair of benches/delta).
#[test]
fn transforms_compared_at_a_fast_level_give_a_valid_delta() {
    let p = pair(2);
    let (old, new) = (Loaded::read(&p.old).unwrap(), Loaded::read(&p.new).unwrap());
    let (every, _) = delta_bytes(&old, &new, &test_key(), &DeltaOptions::default()).unwrap();
    let trial = DeltaOptions {
        trial_from: 0,
        ..DeltaOptions::default()
    };
    let (fast, report) = delta_bytes(&old, &new, &test_key(), &trial).unwrap();
    assert_eq!(apply(&fast, &old).unwrap(), apply(&every, &old).unwrap());
    assert!(report.iter().any(|s| s.transform != Transform::Raw));
    assert!(
        fast.len() * 100 <= every.len() * 125,
        "trial {} bytes, every transform at level 19 {}",
        fast.len(),
        every.len()
    );
}

/// Every flipped byte is caught by the delta's signature or a payload's
/// hash, before any image is built.
#[test]
fn any_flipped_byte_is_refused_before_anything_is_built() {
    let p = pair(5);
    let (old, new) = (Loaded::read(&p.old).unwrap(), Loaded::read(&p.new).unwrap());
    let (delta, _) = delta_bytes(&old, &new, &test_key(), &DeltaOptions::default()).unwrap();
    let signed_end = DeltaReader::open(Cursor::new(&delta))
        .unwrap()
        .prefix()
        .bytes
        .len();
    // The header fields that locate the signed part: a flip there reads
    // as a damaged delta or a bad signature; anywhere else in the signed part, as a bad
    // signature (or an unknown key); in a payload, as a bad payload hash.
    let locating = |at: usize| at < 12 || (16..24).contains(&at) || (40..48).contains(&at);
    let step = (delta.len() / 400).max(1);
    for at in (0..delta.len()).step_by(step).chain(0..200) {
        let mut bad = delta.clone();
        bad[at] ^= 0x40;
        let checked = DeltaReader::open_verified(Cursor::new(&bad), &keys())
            .and_then(|(mut r, _)| r.check_payloads(&limits(), include_in_image));
        let e = checked.expect_err(&format!("byte {at} flipped was not noticed"));
        let expected = if locating(at) {
            matches!(
                e,
                BundleError::DeltaCorrupt(_) | BundleError::DeltaBadSignature { .. }
            )
        } else if (32..40).contains(&at) {
            matches!(e, BundleError::UntrustedKey { .. })
        } else if at < signed_end {
            matches!(e, BundleError::DeltaBadSignature { .. })
        } else {
            matches!(e, BundleError::ChecksumMismatch { .. })
        };
        assert!(expected, "byte {at}: {e}");
    }
    // Truncated or extended.
    assert!(DeltaReader::open(Cursor::new(&delta[..delta.len() - 1])).is_err());
    let mut longer = delta.clone();
    longer.push(0);
    assert!(DeltaReader::open(Cursor::new(&longer)).is_err());
}

#[test]
fn a_delta_for_another_base_is_refused() {
    let p = pair(5);
    let other_graph = graph(2, 50, 50, 200);
    let other = pack_graph(p.dir.path(), "other", &other_graph, 0);
    let (old, new) = (Loaded::read(&p.old).unwrap(), Loaded::read(&p.new).unwrap());
    let other = Loaded::read(&other).unwrap();
    let (delta, _) = delta_bytes(&old, &new, &test_key(), &DeltaOptions::default()).unwrap();
    let e = apply(&delta, &other).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, BundleError::DeltaWrongBase { .. }), "{e}");
    assert!(text.contains("test-bundle 1.0.0 (digest "), "{text}");
    assert!(text.contains(&hex::encode(other.prefix.digest())), "{text}");
}

/// A delta signed by a trusted key whose instructions make bytes other
/// than the new bundle's is refused when a section's hash is checked.
#[test]
fn a_delta_that_does_not_make_the_new_bundle_is_refused() {
    let p = pair(5);
    let (old, mut new) = (Loaded::read(&p.old).unwrap(), Loaded::read(&p.new).unwrap());
    if let Some(names) = new.raw.get_mut("kg.entities.names") {
        names[3] ^= 1;
    }
    let (delta, _) = delta_bytes(&old, &new, &test_key(), &DeltaOptions::default()).unwrap();
    let e = apply(&delta, &old).unwrap_err();
    assert!(matches!(e, BundleError::DeltaMismatch { .. }), "{e}");
    assert!(e.to_string().contains("kg.entities.names"), "{e}");
    assert!(self_check(&delta, &old, DeltaOptions::default().window_log_max).is_err());
}

#[test]
fn the_cli_writes_a_delta_and_describes_it() {
    let p = pair(5);
    let key = write_key(p.dir.path());
    let out = p.dir.path().join("update.kgbd");
    let args = |o: &Path| {
        vec![
            "delta".to_string(),
            p.old.display().to_string(),
            p.new.display().to_string(),
            "-o".into(),
            o.display().to_string(),
            "--key".into(),
            key.display().to_string(),
            "-v".into(),
        ]
    };
    let a = args(&out);
    let o = cli(&a.iter().map(String::as_str).collect::<Vec<_>>(), &[]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(text.contains("delta test-bundle 1.0.0"), "{text}");
    assert!(text.contains("kg.index.fst"), "{text}");
    let old = Loaded::read(&p.old).unwrap();
    apply(&std::fs::read(&out).unwrap(), &old).unwrap();
    // The same bundle twice: nothing to do.
    let o = cli(
        &[
            "delta",
            p.old.to_str().unwrap(),
            p.old.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--key",
            key.to_str().unwrap(),
        ],
        &[],
    );
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("nothing to update"));
}
