//! `tests/fixtures/small.nt`, a tiny movie graph, packed with the real
//! N-Triples parser: relation names, labels as names and aliases, literals
//! as entities, blank nodes, source IRIs, and format selection on the
//! command line.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;

use common::{build_args, cli, id, load, lookup, names, options, rel, stderr, test_key, write_key};
use kgbox_bundle::KgStats;
use kgbox_pack::input::Format;
use kgbox_pack::pack;

const MOVIE: &str = "http://example.org/movie/";
const ONTOLOGY: &str = "http://example.org/ontology/";
const EPOCH: &[(&str, &str)] = &[("SOURCE_DATE_EPOCH", "1700000000")];
const LEGACY_YEAR: &str = "http://example.org/legacy#release_year";
const ONTOLOGY_YEAR: &str = "http://example.org/ontology/release_year";
const NOVEL: &str = "Do Androids Dream of Electric Sheep?";

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
        // The two skos:altLabels; the other labels are names.
        aliases: 2,
        duplicates_removed: 1,
    }
}

#[test]
fn format_is_detected_from_the_extension() {
    let of = |p: &str| Format::from_path(p.as_ref()).ok();
    assert_eq!(Format::from_path(&fixture()).ok(), Some(Format::Ntriples));
    assert_eq!(of("x.tsv"), Some(Format::Tsv));
    assert_eq!(of("x.txt"), Some(Format::Tsv));
    assert_eq!(of("x.TSV.gz"), Some(Format::Tsv));
    assert_eq!(of("x.nt.gz"), Some(Format::Ntriples));
    assert_eq!(of("x.ttl"), Some(Format::Turtle));
    assert_eq!(of("x.ttl.zst"), Some(Format::Turtle));
    assert_eq!(of("x.nq"), Some(Format::Nquads));
    assert_eq!(of("x.rdf"), Some(Format::RdfXml));
    assert_eq!(of("x.OWL.gz"), Some(Format::RdfXml));
    assert_eq!(of("x.trig"), Some(Format::Trig));
    assert_eq!(of("x.jsonld.zst"), Some(Format::JsonLd));
    assert_eq!(of("x.n3"), None);
    assert_eq!(of("x.gz"), None);
    assert_eq!(of("triples"), None);
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

    // Each description, and each source IRI, is the full predicate IRI.
    for r in ["based_on", "directed_by", "starred_actors"] {
        let want = format!("{ONTOLOGY}{r}");
        assert_eq!(kg.relation_description(rel(&kg, r)), Some(want.as_str()));
        assert_eq!(kg.relation_iri(rel(&kg, r)), Some(want.as_str()));
        assert_eq!(kg.relation_by_iri(&want), Some(rel(&kg, r)));
    }
    assert_eq!(
        kg.relation_description(rel(&kg, LEGACY_YEAR)),
        Some(LEGACY_YEAR)
    );

    // Entities are named by their labels, sorted; their IRIs are kept.
    let all: Vec<&str> = (0..kg.entity_count() as u32)
        .map(|i| kg.entity_name(i).unwrap())
        .collect();
    let mut sorted = all.clone();
    sorted.sort_unstable();
    assert_eq!(all, sorted);
    assert!(all.contains(&"Horror"), "{all:?}");
    assert!(!all.iter().any(|e| e.starts_with("http")), "{all:?}");
    assert_eq!(
        kg.entity_iri(id(&kg, "Horror")),
        Some("http://example.org/genre/Horror")
    );

    let directed = rel(&kg, "directed_by");
    assert_eq!(
        names(&kg, kg.out.neighbours(id(&kg, "Blade Runner"), directed)),
        ["Ridley Scott"]
    );
    assert_eq!(
        names(&kg, kg.inc.neighbours(id(&kg, "Peter Weir"), directed)),
        ["The Truman Show", "Witness"]
    );
    assert_eq!(
        names(
            &kg,
            kg.out
                .neighbours(id(&kg, "Alien"), rel(&kg, "starred_actors"))
        ),
        ["Sigourney Weaver"]
    );
}

#[test]
fn literal_objects_are_entities_and_labels_are_names() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("small.kgb");
    pack(&options(&fixture()), &test_key(), &out).unwrap();
    let loaded = load(&out, &test_key().public());
    let kg = loaded.kg();
    let year = rel(&kg, ONTOLOGY_YEAR);

    // Plain and typed literals become entities named by their lexical form,
    // without IRIs.
    assert_eq!(
        names(&kg, kg.out.neighbours(id(&kg, "Blade Runner"), year)),
        ["1982"]
    );
    assert_eq!(
        names(&kg, kg.out.neighbours(id(&kg, "Alien"), year)),
        ["1979"]
    );
    assert_eq!(
        names(
            &kg,
            kg.out.neighbours(id(&kg, "Alien"), rel(&kg, LEGACY_YEAR))
        ),
        ["1979"]
    );
    assert_eq!(
        names(&kg, kg.inc.neighbours(id(&kg, "1982"), year)),
        ["Blade Runner"]
    );
    assert_eq!(kg.entity_iri(id(&kg, "1982")), None);
    assert_eq!(lookup(&kg, "1985"), [("1985", false)]);

    // rdfs:label and schema:name name their subject; skos:altLabel is an alias.
    let br = id(&kg, "Blade Runner");
    assert_eq!(
        kg.entity_iri(br),
        Some("http://example.org/movie/Blade_Runner")
    );
    assert_eq!(kg.entity_by_iri(&format!("{MOVIE}Blade_Runner")), Some(br));
    assert_eq!(kg.aliases(br).collect::<Vec<_>>(), ["Bladerunner"]);
    assert_eq!(lookup(&kg, "blade runner"), [("Blade Runner", false)]);
    assert_eq!(lookup(&kg, "BLADERUNNER"), [("Blade Runner", true)]);
    assert_eq!(lookup(&kg, "Harrison Ford"), [("Harrison Ford", false)]);
    assert_eq!(lookup(&kg, "indy"), [("Harrison Ford", true)]);
    assert_eq!(lookup(&kg, "philip k dick"), [("Philip K. Dick", false)]);

    // The blank node is an entity named by its label, with its edges and no IRI.
    let novel = id(&kg, NOVEL);
    assert_eq!(kg.entity_iri(novel), None);
    assert_eq!(
        names(&kg, kg.inc.neighbours(novel, rel(&kg, "based_on"))),
        ["Blade Runner"]
    );
    assert_eq!(
        names(&kg, kg.out.neighbours(novel, rel(&kg, "written_by"))),
        ["Philip K. Dick"]
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
        text.contains("17 entities, 7 relations, 18 triples (1 duplicates removed), 2 aliases"),
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
