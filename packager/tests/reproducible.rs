//! Reproducible builds: with `SOURCE_DATE_EPOCH` the same input gives the
//! same bytes, and the checked-in demo bundle matches its source.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use common::{build_args, cli, load, stderr, test_key, write, write_key};

const TRIPLES: &str = "Blade Runner\tdirected_by\tRidley Scott\n\
Blade Runner\tstarred_actors\tHarrison Ford\n\
Alien\tdirected_by\tRidley Scott\n\
Witness\tstarred_actors\tHarrison Ford\n\
Alien\tdirected_by\tRidley Scott\n";

const ALIASES: &str = "Blade Runner\tBR\nHarrison Ford\tIndy\nAlien\tBR\n";
const RELATIONS: &str = "directed_by\tdirector\nstarred_actors\tcast\n";

/// Builds with the CLI under `SOURCE_DATE_EPOCH=epoch`, returning the bytes.
fn build(dir: &Path, triples: &Path, out: &str, epoch: &str) -> Vec<u8> {
    let key = write_key(dir);
    let out = dir.join(out);
    let aliases = write(dir, "aliases.tsv", ALIASES);
    let relations = write(dir, "relations.tsv", RELATIONS);
    let mut args = build_args(
        triples.to_str().unwrap(),
        key.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    args.extend([
        "--aliases",
        aliases.to_str().unwrap(),
        "--relations",
        relations.to_str().unwrap(),
    ]);
    let run = cli(&args, &[("SOURCE_DATE_EPOCH", epoch)]);
    assert!(run.status.success(), "{}", stderr(&run));
    std::fs::read(out).unwrap()
}

#[test]
fn same_input_and_epoch_give_identical_bundles() {
    let dir = tempfile::tempdir().unwrap();
    let triples = write(dir.path(), "t.tsv", TRIPLES);
    let a = build(dir.path(), &triples, "a.kgb", "1767225600");
    let b = build(dir.path(), &triples, "b.kgb", "1767225600");
    assert!(a == b, "two builds of the same input differ");

    let loaded = load(&dir.path().join("a.kgb"), &test_key().public());
    assert_eq!(loaded.manifest.created_unix, 1_767_225_600);
    assert_eq!(loaded.manifest.created, "2026-01-01T00:00:00Z");

    // The timestamp is signed into the bundle: another epoch, other bytes.
    let c = build(dir.path(), &triples, "c.kgb", "1767225601");
    assert_ne!(a, c);
    let loaded = load(&dir.path().join("c.kgb"), &test_key().public());
    assert_eq!(loaded.manifest.created_unix, 1_767_225_601);
}

#[test]
fn line_order_does_not_change_the_bundle() {
    let dir = tempfile::tempdir().unwrap();
    let triples = write(dir.path(), "t.tsv", TRIPLES);
    let mut lines: Vec<&str> = TRIPLES.lines().collect();
    lines.reverse();
    let reversed = write(dir.path(), "r.tsv", lines.join("\n"));
    let a = build(dir.path(), &triples, "a.kgb", "1700000000");
    let b = build(dir.path(), &reversed, "b.kgb", "1700000000");
    assert!(
        a == b,
        "the same triples in another order gave another bundle"
    );
}

/// `scripts/make-demo.sh` builds `demo/demo.kgb` from `demo/movies.tsv`; the
/// runtime embeds it, so it must stay in step with the packager.
#[test]
fn demo_bundle_is_current() {
    let root = common::workspace();
    let demo = root.join("demo");
    let dir = tempfile::tempdir().unwrap();
    let rebuilt = dir.path().join("demo.kgb");
    let run = cli(
        &[
            "build",
            "--triples",
            demo.join("movies.tsv").to_str().unwrap(),
            "--name",
            "demo-movies",
            "--version",
            "1.0.0",
            "--planner-examples",
            demo.join("planner-examples.tsv").to_str().unwrap(),
            "--key",
            demo.join("DEMO-ONLY.key").to_str().unwrap(),
            "--quiet",
            "-o",
            rebuilt.to_str().unwrap(),
        ],
        &[("SOURCE_DATE_EPOCH", "1767225600")],
    );
    assert!(run.status.success(), "{}", stderr(&run));
    let rebuilt = std::fs::read(&rebuilt).unwrap();
    let checked_in = std::fs::read(demo.join("demo.kgb")).unwrap();
    assert!(
        rebuilt == checked_in,
        "demo/demo.kgb is out of date ({} bytes checked in, {} rebuilt from demo/movies.tsv and demo/planner-examples.tsv): \
         run scripts/make-demo.sh and commit the result",
        checked_in.len(),
        rebuilt.len()
    );
}
