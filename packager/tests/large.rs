//! A generated 50,000-line TSV: duplicates are counted exactly, the bundle is
//! smaller than its raw sections and its input, and `--quiet` silences the
//! progress bar (checked on a pseudo-terminal, where the bar would draw).
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{load, options, rel, test_key, write, write_key, BIN};
use kgbox_pack::pack;

const LINES: usize = 50_000;
const ENTITIES: u64 = 4_000;
const RELATIONS: u64 = 12;

struct Generated {
    path: PathBuf,
    unique: HashSet<(String, String, String)>,
    entities: HashSet<String>,
    relations: HashSet<String>,
}

/// Writes `LINES` triples from a fixed-seed generator; every tenth line
/// repeats an earlier one.
fn generate(dir: &Path) -> Generated {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut text = String::new();
    let mut lines: Vec<(String, String, String)> = Vec::with_capacity(LINES);
    for i in 0..LINES {
        let t = if i % 10 == 9 {
            lines[(next() % i as u64) as usize].clone()
        } else {
            (
                format!("entity number {}", next() % ENTITIES),
                format!("relation_{}", next() % RELATIONS),
                format!("entity number {}", next() % ENTITIES),
            )
        };
        writeln!(text, "{}\t{}\t{}", t.0, t.1, t.2).unwrap();
        lines.push(t);
    }
    let entities = lines
        .iter()
        .flat_map(|t| [t.0.clone(), t.2.clone()])
        .collect();
    let relations = lines.iter().map(|t| t.1.clone()).collect();
    let unique = lines.into_iter().collect();
    Generated {
        path: write(dir, "big-input.tsv", text),
        unique,
        entities,
        relations,
    }
}

#[test]
fn large_input_packs_with_exact_duplicate_counts() {
    let dir = tempfile::tempdir().unwrap();
    let g = generate(dir.path());
    let out = dir.path().join("big.kgb");
    let report = pack(&options(&g.path), &test_key(), &out).unwrap();
    let s = &report.stats;
    assert_eq!(s.triples as usize, g.unique.len());
    assert_eq!(s.duplicates_removed as usize, LINES - g.unique.len());
    assert!(s.duplicates_removed >= (LINES / 10) as u64 - 50, "{s:?}");
    assert_eq!(s.entities as usize, g.entities.len());
    assert_eq!(s.relations as usize, g.relations.len());
    assert_eq!(s.relations, RELATIONS);

    let bundle = std::fs::metadata(&out).unwrap().len();
    let input = std::fs::metadata(&g.path).unwrap().len();
    assert_eq!(report.write.bytes, bundle);
    assert!(
        bundle < report.write.raw_bytes,
        "bundle {bundle} bytes, raw sections {}",
        report.write.raw_bytes
    );
    assert!(bundle < input, "bundle {bundle} bytes, input {input}");

    // Every input triple is an edge both ways, and nothing else is.
    let loaded = load(&out, &test_key().public());
    let kg = loaded.kg();
    assert_eq!(kg.triple_count(), g.unique.len());
    for (h, r, t) in g.unique.iter().take(500) {
        let (h, r, t) = (common::id(&kg, h), rel(&kg, r), common::id(&kg, t));
        assert!(kg.out.neighbours(h, r).binary_search(&t).is_ok());
        assert!(kg.inc.neighbours(t, r).binary_search(&h).is_ok());
    }
    let mut edges = 0;
    for e in 0..kg.entity_count() as u32 {
        let (rels, others) = kg.out.edges(e);
        let pairs: Vec<(u32, u32)> = rels.iter().copied().zip(others.iter().copied()).collect();
        assert!(
            pairs.windows(2).all(|w| w[0] < w[1]),
            "edges of {e} not strictly sorted"
        );
        edges += pairs.len();
    }
    assert_eq!(edges, g.unique.len());
}

/// A graph sorted on disk in many runs (and its big sections written to
/// temporary files) packs to the same bytes as in memory, and leaves no
/// temporary file behind.
#[test]
fn spilling_to_disk_writes_the_same_bundle() {
    let dir = tempfile::tempdir().unwrap();
    let g = generate(dir.path());
    let in_memory = dir.path().join("memory.kgb");
    let report = pack(&options(&g.path), &test_key(), &in_memory).unwrap();
    let spill = dir.path().join("spill");
    std::fs::create_dir(&spill).unwrap();
    let mut opts = options(&g.path);
    opts.scale.sort_run = 4096;
    opts.scale.spill_dir = Some(spill.clone());
    let spilled = dir.path().join("spilled.kgb");
    let spilled_report = pack(&opts, &test_key(), &spilled).unwrap();
    assert_eq!(spilled_report.stats.triples, report.stats.triples);
    assert_eq!(
        std::fs::read(&spilled).unwrap(),
        std::fs::read(&in_memory).unwrap()
    );
    assert_eq!(std::fs::read_dir(&spill).unwrap().count(), 0);
}

/// A bundle that leaves the in-edges to the device is smaller, marks them
/// derived, and installs to the same in-edges as one that carries them;
/// built on disk (where only their digests are kept) it is the same bundle.
#[test]
fn derived_in_edges_install_to_the_shipped_ones() {
    use kgbox_bundle::derive::DERIVABLE;
    use kgbox_bundle::format::COMPRESSION_DERIVED;
    use kgbox_pack::graph::InEdges;
    let dir = tempfile::tempdir().unwrap();
    let g = generate(dir.path());
    let mut opts = options(&g.path);
    assert_eq!(opts.scale.in_edges, InEdges::Auto);
    let full = dir.path().join("full.kgb");
    pack(&opts, &test_key(), &full).unwrap();
    opts.scale.in_edges = InEdges::Derive;
    let lean = dir.path().join("lean.kgb");
    pack(&opts, &test_key(), &lean).unwrap();
    let spill = dir.path().join("spill");
    std::fs::create_dir(&spill).unwrap();
    opts.scale.sort_run = 4096;
    opts.scale.spill_dir = Some(spill.clone());
    let spilled = dir.path().join("spilled.kgb");
    pack(&opts, &test_key(), &spilled).unwrap();
    assert_eq!(
        std::fs::read(&spilled).unwrap(),
        std::fs::read(&lean).unwrap()
    );
    assert_eq!(std::fs::read_dir(&spill).unwrap().count(), 0);

    let size = |p: &Path| std::fs::metadata(p).unwrap().len();
    assert!(
        size(&lean) * 10 < size(&full) * 8,
        "{} vs {}",
        size(&lean),
        size(&full)
    );
    let (a, b) = (
        load(&full, &test_key().public()),
        load(&lean, &test_key().public()),
    );
    let table = |l: &common::Loaded, name: &str| {
        l.view
            .prefix
            .sections
            .iter()
            .find(|e| e.name == name)
            .map(|e| e.compression)
            .unwrap()
    };
    for name in DERIVABLE {
        assert_ne!(table(&a, name), COMPRESSION_DERIVED);
        assert_eq!(table(&b, name), COMPRESSION_DERIVED);
        assert_eq!(
            a.view.section(&a.bytes, name),
            b.view.section(&b.bytes, name),
            "{name}"
        );
    }
}

/// Whether util-linux `script` can give the packager a pseudo-terminal.
fn have_script() -> bool {
    Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `build` on a pseudo-terminal (so the progress bar would draw) and
/// returns everything the terminal received.
fn build_on_tty(dir: &Path, triples: &Path, quiet: bool) -> String {
    let key = write_key(dir);
    let out = dir.join(if quiet { "quiet.kgb" } else { "loud.kgb" });
    let command = format!(
        "'{BIN}' build --triples '{}' --name big --version 1.0.0 --key '{}' --level 3 -o '{}'{}",
        triples.display(),
        key.display(),
        out.display(),
        if quiet { " --quiet" } else { "" }
    );
    let run = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .stdin(Stdio::null())
        .env_remove("SOURCE_DATE_EPOCH")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(
        run.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(text.contains("wrote "), "{text}");
    assert!(out.exists());
    text
}

#[test]
fn quiet_suppresses_the_progress_bar() {
    let dir = tempfile::tempdir().unwrap();
    let g = generate(dir.path());

    // Without a terminal there is never a bar, quiet or not.
    let key = write_key(dir.path());
    let out = dir.path().join("piped.kgb");
    let run = common::cli(
        &[
            "build",
            "--triples",
            g.path.to_str().unwrap(),
            "--name",
            "big",
            "--version",
            "1.0.0",
            "--key",
            key.to_str().unwrap(),
            "--level",
            "3",
            "-o",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert!(run.status.success());
    assert!(common::stderr(&run).is_empty(), "{}", common::stderr(&run));

    if !have_script() {
        eprintln!("skipping the terminal half: util-linux `script` is not installed");
        return;
    }
    // On a terminal the bar names the file being read; --quiet hides it.
    let loud = build_on_tty(dir.path(), &g.path, false);
    assert!(
        loud.contains("big-input.tsv"),
        "no progress bar drawn: {loud:?}"
    );
    assert!(loud.contains("\u{1b}["), "no progress bar drawn: {loud:?}");
    let quiet = build_on_tty(dir.path(), &g.path, true);
    assert!(
        !quiet.contains("big-input.tsv"),
        "progress despite --quiet: {quiet:?}"
    );
    assert!(
        !quiet.contains("\u{1b}["),
        "progress despite --quiet: {quiet:?}"
    );
}
