//! A graph read to disk (more triples than `--sort-run`: names hashed,
//! triples and aliases in partition files, every table sorted externally)
//! packs to the same bytes, with the same warnings, as the same graph in
//! memory, including past the point where the set of seen names fills up
//! and is cleared, and with aliases that are shared, duplicated, equal to
//! their entity's name, normalize to nothing, or belong to no entity.
#![allow(clippy::unwrap_used)]

mod common;

use std::fmt::Write as _;

use common::{options, test_key, write};
use kgbox_pack::pack;

const ENTITIES: u64 = 20_000;
const LINES: usize = 60_000;

fn rng(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

#[test]
fn a_graph_read_to_disk_packs_to_the_same_bundle() {
    let dir = tempfile::tempdir().unwrap();
    let mut next = rng(0x9e37_79b9_7f4a_7c15);
    let mut triples = String::new();
    for i in 0..LINES {
        // Skewed heads (hubs), uniform tails; every 20th line a duplicate.
        let h = if i % 20 == 19 {
            i as u64 % 50
        } else {
            (next() % ENTITIES).pow(2) / ENTITIES
        };
        let (r, t) = (next() % 7, next() % ENTITIES);
        writeln!(triples, "Person {h}\trel_{r}\tPerson {t}").unwrap();
        if i % 20 == 19 {
            writeln!(triples, "Person {h}\trel_{r}\tPerson {t}").unwrap();
        }
    }
    // Names that normalize alike ("Café Ü" / "cafe u") share a key.
    triples.push_str("Café Ü\trel_0\tcafe u\n");
    let mut aliases = String::new();
    for e in 0..ENTITIES / 2 {
        let alias = match e % 5 {
            0 => format!("P. {}", e % 300), // shared: a postings list
            1 => format!("Person {e}"),     // its own name: dropped
            2 => "?!".to_string(),          // normalizes to nothing
            3 => format!("person {e}"),     // same key as its name
            _ => format!("Alias of {e}"),
        };
        writeln!(aliases, "Person {e}\t{alias}").unwrap();
        if e % 7 == 0 {
            writeln!(aliases, "Person {e}\t{alias}").unwrap();
        }
        if e % 1000 == 3 {
            writeln!(aliases, "Nobody {e}\tghost {e}").unwrap();
        }
    }
    aliases.push_str("Café Ü\tcafe u\n");
    let t_path = write(dir.path(), "graph.tsv", triples);
    let a_path = write(dir.path(), "aliases.tsv", aliases);

    let mut opts = options(&t_path);
    opts.aliases = Some(a_path);
    let memory = dir.path().join("memory.kgb");
    let in_memory = pack(&opts, &test_key(), &memory).unwrap();
    assert!(in_memory.stats.entities > 15_000, "{:?}", in_memory.stats);

    // 1,024 triples in memory: a seen-name set of 4,096 slots (each of its
    // 64 tables filled and cleared several times) and 64 KiB sorts (many
    // runs).
    let spill = dir.path().join("spill");
    std::fs::create_dir(&spill).unwrap();
    opts.scale.sort_run = 1024;
    opts.scale.spill_dir = Some(spill.clone());
    let disk = dir.path().join("disk.kgb");
    let on_disk = pack(&opts, &test_key(), &disk).unwrap();

    let note = on_disk
        .notes
        .iter()
        .find(|n| n.starts_with("read to disk"))
        .unwrap();
    let filled: u64 = note
        .split("filled ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(filled >= 64, "{note}");
    assert!(!in_memory
        .notes
        .iter()
        .any(|n| n.starts_with("read to disk")));
    assert_eq!(on_disk.stats.triples, in_memory.stats.triples);
    assert_eq!(on_disk.stats.aliases, in_memory.stats.aliases);
    assert!(in_memory.stats.duplicates_removed >= (LINES / 20) as u64);
    assert_eq!(on_disk.warnings, in_memory.warnings);
    assert!(
        in_memory
            .warnings
            .iter()
            .any(|w| w.contains("entities that are in no triple") && w.contains("`Nobody 3`")),
        "{:?}",
        in_memory.warnings
    );
    assert!(std::fs::read(&disk).unwrap() == std::fs::read(&memory).unwrap());
    assert_eq!(std::fs::read_dir(&spill).unwrap().count(), 0);
}

/// Adding facts from examples looks names up in memory: a graph read to
/// disk is refused with a way out, not packed without them.
#[test]
fn example_facts_need_the_graph_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::new();
    for i in 0..3000 {
        writeln!(text, "a{i}\tr\tb{i}").unwrap();
    }
    let path = write(dir.path(), "g.tsv", text);
    let mut opts = options(&path);
    opts.scale.sort_run = 1024;
    opts.example_facts = true;
    let err = pack(&opts, &test_key(), &dir.path().join("x.kgb")).unwrap_err();
    assert!(
        format!("{err:#}").contains("--add-example-facts needs the graph in memory"),
        "{err:#}"
    );
}

/// A graph with few triples but many long names goes to disk before its
/// triples reach the limit (its names would outweigh them), and packs to
/// the same bundle.
#[test]
fn many_names_go_to_disk_early() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::new();
    for i in 0..9_000 {
        writeln!(
            text,
            "a rather long entity name {i}\tr{}\tanother long name {i}",
            i % 3
        )
        .unwrap();
    }
    let path = write(dir.path(), "g.tsv", text);
    let mut opts = options(&path);
    let memory = dir.path().join("memory.kgb");
    let in_memory = pack(&opts, &test_key(), &memory).unwrap();
    opts.scale.sort_run = 10_000;
    let disk = dir.path().join("disk.kgb");
    let on_disk = pack(&opts, &test_key(), &disk).unwrap();
    assert!(
        on_disk
            .notes
            .iter()
            .any(|n| n.starts_with("read to disk: 9000 triples")),
        "{:?}",
        on_disk.notes
    );
    assert!(!in_memory
        .notes
        .iter()
        .any(|n| n.starts_with("read to disk")));
    assert!(std::fs::read(&disk).unwrap() == std::fs::read(&memory).unwrap());
}
