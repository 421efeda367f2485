//! `tests/fixtures/small.nt`, a tiny movie graph, packed with the real
//! N-Triples parser: relation names, labels as aliases, literals as entities,
//! blank nodes, and format selection on the command line.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;

use common::{build_args, cli, id, load, lookup, names, options, rel, stderr, test_key, write_key};
use kgbox_bundle::KgStats;
use kgbox_pack::input::Format;
use kgbox_pack::pack;

const MOVIE: &str = "http://example.org/movie/";
const PERSON: &str = "http://example.org/person/";
const ONTOLOGY: &str = "http://example.org/ontology/";
const EPOCH: &[(&str, &str)] = &[("SOURCE_DATE_EPOCH", "1700000000")];
const LEGACY_YEAR: &str = "http://example.org/legacy#release_year";
const ONTOLOGY_YEAR: &str = "http://example.org/ontology/release_year";

fn fixture() -> PathBuf {
    common::workspace().join("tests/fixtures/small.nt")
}

fn expected_stats() -> KgStats {
    KgStats {
        // 4 films, 6 people, 4 years, 2 genres, 1 blank node.
        entities: 17,
        // 6 ontology predicates and the legacy release_year.
        relations: 7,
        triples: 18,
        aliases: 15,
        duplicates_removed: 1,
    }
}

#[test]
fn format_is_detected_from_the_extension() {
    assert_eq!(Format::from_path(&fixture()), Format::Ntriples);
    assert_eq!(Format::from_path("x.tsv".as_ref()), Format::Tsv);
    assert_eq!(Format::from_path("x.nt.gz".as_ref()), Format::Tsv);
}

#[test]
fn fixture_packs_with_the_ntriples_parser() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("small.kgb");
    let report = pack(&options(&fixture()), &test_key(), &out).unwrap();
    assert_eq!(report.stats, expected_stats());
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);

    let loaded = load(&out, &test_key().public());
    assert_eq!(loaded.manifest.stats, expected_stats());
    let kg = loaded.kg();

    // Relations are named by the predicate's local name; the two predicates
    // whose local name is `release_year` both keep their full IRIs (so the
    // names do not depend on input order). Label predicates are not relations.
    let rels: Vec<&str> = (0..kg.relation_count() as u32)
        .map(|r| kg.relation_name(r).unwrap())
        .collect();
    assert_eq!(
        rels,
        [
            "based_on",
            "directed_by",
            "has_genre",
            LEGACY_YEAR,
            ONTOLOGY_YEAR,
            "starred_actors",
            "written_by",
        ]
    );

    // Each description is the full predicate IRI.
    for r in ["based_on", "directed_by", "starred_actors"] {
        let want = format!("{ONTOLOGY}{r}");
        assert_eq!(kg.relation_description(rel(&kg, r)), Some(want.as_str()));
    }
    assert_eq!(
        kg.relation_description(rel(&kg, LEGACY_YEAR)),
        Some(LEGACY_YEAR)
    );

    // Entities are named by their IRIs, sorted.
    let all: Vec<&str> = (0..kg.entity_count() as u32)
        .map(|i| kg.entity_name(i).unwrap())
        .collect();
    let mut sorted = all.clone();
    sorted.sort_unstable();
    assert_eq!(all, sorted);
    assert!(all.contains(&"http://example.org/genre/Horror"), "{all:?}");
    assert!(!all.iter().any(|e| e.contains("Blade Runner")), "{all:?}");

    let film = |n: &str| id(&kg, &format!("{MOVIE}{n}"));
    let directed = rel(&kg, "directed_by");
    assert_eq!(
        names(&kg, kg.out.neighbours(film("Blade_Runner"), directed)),
        [format!("{PERSON}Ridley_Scott")]
    );
    assert_eq!(
        names(
            &kg,
            kg.inc
                .neighbours(id(&kg, &format!("{PERSON}Peter_Weir")), directed)
        ),
        [format!("{MOVIE}The_Truman_Show"), format!("{MOVIE}Witness")]
    );
    assert_eq!(
        names(
            &kg,
            kg.out.neighbours(film("Alien"), rel(&kg, "starred_actors"))
        ),
        [format!("{PERSON}Sigourney_Weaver")]
    );
}

#[test]
fn literal_objects_are_entities_and_labels_are_aliases() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("small.kgb");
    pack(&options(&fixture()), &test_key(), &out).unwrap();
    let loaded = load(&out, &test_key().public());
    let kg = loaded.kg();
    let film = |n: &str| id(&kg, &format!("{MOVIE}{n}"));
    let year = rel(&kg, ONTOLOGY_YEAR);

    // Plain and typed literals become entities named by their lexical form.
    assert_eq!(
        names(&kg, kg.out.neighbours(film("Blade_Runner"), year)),
        ["1982"]
    );
    assert_eq!(names(&kg, kg.out.neighbours(film("Alien"), year)), ["1979"]);
    assert_eq!(
        names(&kg, kg.out.neighbours(film("Alien"), rel(&kg, LEGACY_YEAR))),
        ["1979"]
    );
    assert_eq!(
        names(&kg, kg.inc.neighbours(id(&kg, "1982"), year)),
        [format!("{MOVIE}Blade_Runner")]
    );
    assert_eq!(lookup(&kg, "1985"), [("1985", false)]);
    // Label literals are not entities.
    assert_eq!(kg.entity_id("Blade Runner"), None);
    assert_eq!(kg.entity_id("Harrison Ford"), None);

    // rdfs:label, skos:altLabel and schema:name literals are aliases.
    let br = format!("{MOVIE}Blade_Runner");
    assert_eq!(
        kg.aliases(film("Blade_Runner")).collect::<Vec<_>>(),
        ["Blade Runner", "Bladerunner"]
    );
    assert_eq!(lookup(&kg, "blade runner"), [(br.as_str(), true)]);
    assert_eq!(lookup(&kg, "BLADERUNNER"), [(br.as_str(), true)]);
    let ford = format!("{PERSON}Harrison_Ford");
    assert_eq!(lookup(&kg, "Harrison Ford"), [(ford.as_str(), true)]);
    assert_eq!(lookup(&kg, "indy"), [(ford.as_str(), true)]);
    let dick = format!("{PERSON}Philip_K_Dick");
    assert_eq!(lookup(&kg, "philip k dick"), [(dick.as_str(), true)]);
    assert_eq!(
        lookup(&kg, "science fiction"),
        [("http://example.org/genre/Science_Fiction", true)]
    );

    // The blank node is an entity with its label and its edges.
    let novel = id(&kg, "_:novel");
    assert_eq!(
        lookup(&kg, "Do Androids Dream of Electric Sheep"),
        [("_:novel", true)]
    );
    assert_eq!(
        names(&kg, kg.inc.neighbours(novel, rel(&kg, "based_on"))),
        [br.as_str()]
    );
    assert_eq!(
        names(&kg, kg.out.neighbours(novel, rel(&kg, "written_by"))),
        [dick.as_str()]
    );
}

#[test]
fn cli_reads_ntriples_by_extension_or_by_flag() {
    let dir = tempfile::tempdir().unwrap();
    let key = write_key(dir.path());
    let key = key.to_str().unwrap();
    let nt = fixture();
    let by_ext = dir.path().join("by-ext.kgb");
    let out = cli(
        &build_args(nt.to_str().unwrap(), key, by_ext.to_str().unwrap()),
        EPOCH,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("17 entities, 7 relations, 18 triples (1 duplicates removed), 15 aliases"),
        "{text}"
    );

    // The same file without the .nt extension is read as TSV unless told.
    let txt = dir.path().join("small.txt");
    std::fs::copy(&nt, &txt).unwrap();
    let by_flag = dir.path().join("by-flag.kgb");
    let mut args = build_args(txt.to_str().unwrap(), key, by_flag.to_str().unwrap());
    let out = cli(&args, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("{}:5:", txt.display())),
        "{}",
        stderr(&out)
    );
    args.extend(["--format", "ntriples"]);
    let out = cli(&args, EPOCH);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read(&by_ext).unwrap(),
        std::fs::read(&by_flag).unwrap(),
        "the same triples gave different bundles"
    );
    let loaded = load(&by_flag, &test_key().public());
    assert_eq!(loaded.manifest.stats, expected_stats());

    // And `--format tsv` forces TSV even for a .nt file.
    let forced = dir.path().join("forced.kgb");
    let mut args = build_args(nt.to_str().unwrap(), key, forced.to_str().unwrap());
    args.extend(["--format", "tsv"]);
    let out = cli(&args, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("small.nt:5:"), "{}", stderr(&out));
}

#[test]
fn relation_names_do_not_depend_on_input_order() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture()).unwrap();
    let reversed: Vec<&str> = text.lines().rev().collect();
    let rev_path = dir.path().join("reversed.nt");
    std::fs::write(&rev_path, reversed.join("\n")).unwrap();
    let (a, b) = (dir.path().join("a.kgb"), dir.path().join("b.kgb"));
    let mut opts = options(&fixture());
    opts.created_unix = Some(1);
    pack(&opts, &test_key(), &a).unwrap();
    opts.triples = rev_path;
    pack(&opts, &test_key(), &b).unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
}
