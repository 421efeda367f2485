//! A small TSV graph packed through the library and read back the way a device
//! loads it: statistics, id order, adjacency, aliases, the lexical index and
//! relation descriptions.

mod common;

use common::{id, load, lookup, names, options, rel, test_key, write};
use kgbox_bundle::sections as s;
use kgbox_bundle::{BundleError, BundleReader, KgStats, SecretKey, TrustedKeys};
use kgbox_pack::pack;

/// Nine distinct triples; the last three lines repeat earlier ones (one with
/// padding around the fields and a CRLF ending, which the reader trims).
const TRIPLES: &str = "# movies, directors, actors\n\
Blade Runner\tdirected_by\tRidley Scott\n\
Blade Runner\tstarred_actors\tHarrison Ford\n\
Blade Runner\tstarred_actors\tRutger Hauer\n\
Blade Runner\trelease_year\t1982\n\
\n\
Alien\tdirected_by\tRidley Scott\n\
Alien\tstarred_actors\tSigourney Weaver\n\
Alien\trelease_year\t1979\n\
Witness\tstarred_actors\tHarrison Ford\n\
Witness\tdirected_by\tPeter Weir\n\
Blade Runner\tstarred_actors\tHarrison Ford\n\
  Alien \tdirected_by\t Ridley Scott\r\n\
Witness\tdirected_by\tPeter Weir\n";

const ALIASES: &str = "Blade Runner\tBladerunner\n\
Blade Runner\tBR\n\
Harrison Ford\tIndy\n\
Harrison Ford\tH. Ford\n\
# normalizes to the entity's own name: the name posting wins\n\
Ridley Scott\tridley  SCOTT\n\
# exactly the entity's own name: dropped\n\
Rutger Hauer\tRutger Hauer\n\
# shared by two entities (both aliases)\n\
Alien\tBR\n\
# the same key as another entity's name\n\
Sigourney Weaver\tAlien\n\
Witness\tThe Witness\n\
Witness\tThe Witness\n\
Nobody\tGhost\n\
Nobody Else\tSpecter\n";

const RELATIONS: &str = "directed_by\tthe film's director\n\
starred_actors\tactors who appear in the film\n\
no_such_relation\tskipped with a warning\n";

/// Sorted bytewise: ids are positions in this list.
const ENTITIES: [&str; 10] = [
    "1979",
    "1982",
    "Alien",
    "Blade Runner",
    "Harrison Ford",
    "Peter Weir",
    "Ridley Scott",
    "Rutger Hauer",
    "Sigourney Weaver",
    "Witness",
];

fn build(dir: &std::path::Path, key: &SecretKey) -> (kgbox_pack::PackReport, std::path::PathBuf) {
    let mut opts = options(&write(dir, "movies.tsv", TRIPLES));
    opts.aliases = Some(write(dir, "aliases.tsv", ALIASES));
    opts.relations = Some(write(dir, "relations.tsv", RELATIONS));
    let out = dir.join("movies.kgb");
    let report = pack(&opts, key, &out).expect("pack");
    (report, out)
}

#[test]
fn stats_count_unique_triples_and_removed_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let (report, out) = build(dir.path(), &test_key());
    let expected = KgStats {
        entities: 10,
        relations: 3,
        triples: 9,
        aliases: 8,
        duplicates_removed: 3,
    };
    assert_eq!(report.stats, expected);
    assert_eq!(report.write.bytes, std::fs::metadata(&out).unwrap().len());
    assert!(
        !dir.path().join("movies.kgb.partial").exists(),
        "temporary file left behind"
    );

    let loaded = load(&out, &test_key().public());
    assert_eq!(loaded.manifest.stats, expected);
    assert_eq!(loaded.manifest.name, "test-bundle");
    assert_eq!(loaded.manifest.version.to_string(), "1.2.3");
    assert_eq!(loaded.manifest.created_unix, 1_700_000_000);
    assert_eq!(loaded.manifest.created, "2023-11-14T22:13:20Z");
    assert_eq!(loaded.signer.key_id(), test_key().public().key_id());
    let kg = loaded.kg();
    assert_eq!(kg.entity_count(), 10);
    assert_eq!(kg.relation_count(), 3);
    assert_eq!(kg.triple_count(), 9);
}

#[test]
fn warnings_name_the_skipped_alias_and_relation_lines() {
    let dir = tempfile::tempdir().unwrap();
    let (report, _) = build(dir.path(), &test_key());
    assert_eq!(report.warnings.len(), 2, "{:?}", report.warnings);
    let aliases = &report.warnings[0];
    assert!(aliases.contains("aliases.tsv"), "{aliases}");
    assert!(aliases.contains("skipped 2 aliases"), "{aliases}");
    assert!(
        aliases.contains("line 15") && aliases.contains("`Nobody`"),
        "{aliases}"
    );
    let relations = &report.warnings[1];
    assert!(relations.contains("relations.tsv"), "{relations}");
    assert!(
        relations.contains("line 3: `no_such_relation`"),
        "{relations}"
    );
}

#[test]
fn signature_verifies_only_with_the_signing_key() {
    let dir = tempfile::tempdir().unwrap();
    let (_, out) = build(dir.path(), &test_key());
    let open = || BundleReader::open(std::fs::File::open(&out).unwrap()).unwrap();
    let good = TrustedKeys::new(vec![test_key().public()]);
    assert!(open().verify_signature(&good).is_ok());
    let other = SecretKey::from_seed([9u8; 32], "other").public();
    let err = open()
        .verify_signature(&TrustedKeys::new(vec![other]))
        .unwrap_err();
    assert!(matches!(err, BundleError::UntrustedKey { .. }), "{err}");
}

#[test]
fn entity_and_relation_ids_follow_sorted_names() {
    let dir = tempfile::tempdir().unwrap();
    let (_, out) = build(dir.path(), &test_key());
    let loaded = load(&out, &test_key().public());
    let kg = loaded.kg();
    let all: Vec<&str> = (0..kg.entity_count() as u32)
        .map(|i| kg.entity_name(i).unwrap())
        .collect();
    assert_eq!(all, ENTITIES);
    let rels: Vec<&str> = (0..kg.relation_count() as u32)
        .map(|i| kg.relation_name(i).unwrap())
        .collect();
    assert_eq!(rels, ["directed_by", "release_year", "starred_actors"]);
    for (i, name) in ENTITIES.iter().enumerate() {
        assert_eq!(kg.entity_id(name), Some(i as u32));
    }
    assert_eq!(kg.entity_id("Nobody"), None);
}

#[test]
fn forward_and_reverse_neighbours_are_exact_sorted_slices() {
    let dir = tempfile::tempdir().unwrap();
    let (_, out) = build(dir.path(), &test_key());
    let loaded = load(&out, &test_key().public());
    let kg = loaded.kg();
    let e = |n| id(&kg, n);
    let (directed, year, starred) = (
        rel(&kg, "directed_by"),
        rel(&kg, "release_year"),
        rel(&kg, "starred_actors"),
    );

    // Ids: Harrison Ford = 4, Rutger Hauer = 7.
    assert_eq!(kg.out.neighbours(e("Blade Runner"), starred), &[4, 7]);
    assert_eq!(kg.out.neighbours(e("Blade Runner"), directed), &[6]);
    assert_eq!(kg.out.neighbours(e("Blade Runner"), year), &[1]);
    assert_eq!(kg.out.neighbours(e("Alien"), year), &[0]);
    assert_eq!(kg.out.neighbours(e("Witness"), directed), &[5]);
    assert!(kg.out.neighbours(e("Witness"), year).is_empty());
    assert!(kg.out.neighbours(e("Ridley Scott"), directed).is_empty());

    // Reverse: Alien = 2, Blade Runner = 3, Witness = 9.
    assert_eq!(kg.inc.neighbours(e("Harrison Ford"), starred), &[3, 9]);
    assert_eq!(kg.inc.neighbours(e("Ridley Scott"), directed), &[2, 3]);
    assert_eq!(kg.inc.neighbours(e("Peter Weir"), directed), &[9]);
    assert_eq!(kg.inc.neighbours(e("1982"), year), &[3]);
    assert!(kg.inc.neighbours(e("Harrison Ford"), directed).is_empty());
    assert!(kg.inc.neighbours(e("Blade Runner"), starred).is_empty());

    assert_eq!(
        names(&kg, kg.inc.neighbours(e("Ridley Scott"), directed)),
        ["Alien", "Blade Runner"]
    );
    assert_eq!(kg.out.degree(e("Blade Runner")), 4);
    assert_eq!(kg.inc.degree(e("Harrison Ford")), 2);
    let (rels, others) = kg.out.edges(e("Alien"));
    assert_eq!(rels, &[directed, year, starred]);
    assert_eq!(
        names(&kg, others),
        ["Ridley Scott", "1979", "Sigourney Weaver"]
    );
}

#[test]
fn aliases_are_sorted_deduplicated_and_skip_the_own_name() {
    let dir = tempfile::tempdir().unwrap();
    let (_, out) = build(dir.path(), &test_key());
    let loaded = load(&out, &test_key().public());
    let kg = loaded.kg();
    let aliases = |n: &str| kg.aliases(id(&kg, n)).collect::<Vec<_>>();
    assert_eq!(aliases("Blade Runner"), ["BR", "Bladerunner"]);
    assert_eq!(aliases("Harrison Ford"), ["H. Ford", "Indy"]);
    assert_eq!(aliases("Alien"), ["BR"]);
    assert_eq!(aliases("Witness"), ["The Witness"]);
    assert_eq!(aliases("Sigourney Weaver"), ["Alien"]);
    assert_eq!(aliases("Ridley Scott"), ["ridley  SCOTT"]);
    assert!(aliases("Rutger Hauer").is_empty());
    assert!(aliases("1982").is_empty());
}

#[test]
fn lexical_index_returns_name_and_alias_postings() {
    let dir = tempfile::tempdir().unwrap();
    let (_, out) = build(dir.path(), &test_key());
    let loaded = load(&out, &test_key().public());
    let kg = loaded.kg();

    assert_eq!(lookup(&kg, "blade RUNNER"), [("Blade Runner", false)]);
    assert_eq!(lookup(&kg, "Bladerunner"), [("Blade Runner", true)]);
    assert_eq!(lookup(&kg, "indy"), [("Harrison Ford", true)]);
    assert_eq!(lookup(&kg, "H Ford"), [("Harrison Ford", true)]);
    assert_eq!(lookup(&kg, "the witness"), [("Witness", true)]);
    assert_eq!(lookup(&kg, "1982"), [("1982", false)]);

    // One key, two entities: a postings list, ordered by entity id.
    assert_eq!(lookup(&kg, "br"), [("Alien", true), ("Blade Runner", true)]);
    // A name and another entity's alias share a key.
    assert_eq!(
        lookup(&kg, "ALIEN"),
        [("Alien", false), ("Sigourney Weaver", true)]
    );
    // An alias normalizing to the entity's own name: one posting, the name's.
    assert_eq!(lookup(&kg, "Ridley Scott"), [("Ridley Scott", false)]);
    assert_eq!(lookup(&kg, "rutger hauer"), [("Rutger Hauer", false)]);

    // Aliases of entities that are in no triple were skipped.
    assert!(lookup(&kg, "ghost").is_empty());
    assert!(lookup(&kg, "specter").is_empty());
    assert!(lookup(&kg, "blade").is_empty());

    // The fst holds exactly one key per distinct normalized name or alias.
    assert_eq!(kg.with_index(|i| i.len()), Some(10 + 5));
}

#[test]
fn relation_descriptions_come_from_the_relations_file() {
    let dir = tempfile::tempdir().unwrap();
    let (_, out) = build(dir.path(), &test_key());
    let loaded = load(&out, &test_key().public());
    assert!(loaded
        .section_names
        .iter()
        .any(|n| n == s::RELATION_DESC_TEXT));
    let kg = loaded.kg();
    let desc = |r| kg.relation_description(rel(&kg, r));
    assert_eq!(desc("directed_by"), Some("the film's director"));
    assert_eq!(
        desc("starred_actors"),
        Some("actors who appear in the film")
    );
    assert_eq!(desc("release_year"), None);
}

#[test]
fn relation_aliases_come_from_their_file_one_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(&write(dir.path(), "movies.tsv", TRIPLES));
    opts.relation_aliases = Some(write(
        dir.path(),
        "relation-aliases.tsv",
        "# relation<TAB>alias\n\
         directed_by\tfilmmaker\n\
         directed_by\thelmed\n\
         directed_by\tfilmmaker\n\
         starred_actors\tcast\n\
         no_such_relation\tskipped\n",
    ));
    let out = dir.path().join("movies.kgb");
    let report = pack(&opts, &test_key(), &out).expect("pack");
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("skipped aliases of relations") && w.contains("no_such_relation")),
        "{:?}",
        report.warnings
    );
    let loaded = load(&out, &test_key().public());
    let kg = loaded.kg();
    let aliases = |r| kg.relation_aliases(rel(&kg, r)).collect::<Vec<_>>();
    assert_eq!(aliases("directed_by"), ["filmmaker", "helmed"]);
    assert_eq!(aliases("starred_actors"), ["cast"]);
    assert!(aliases("release_year").is_empty());

    // A line without its alias names the file and the line.
    let bad = write(
        dir.path(),
        "bad.tsv",
        "directed_by\tfilmmaker\ndirected_by\n",
    );
    opts.relation_aliases = Some(bad);
    let err = pack(&opts, &test_key(), &dir.path().join("bad.kgb")).unwrap_err();
    let text = format!("{err:#}");
    assert!(
        text.contains("bad.tsv:2") && text.contains("(relation, alias)"),
        "{text}"
    );
}

#[test]
fn without_a_relations_file_there_are_no_description_sections() {
    let dir = tempfile::tempdir().unwrap();
    let opts = options(&write(dir.path(), "movies.tsv", TRIPLES));
    let out = dir.path().join("plain.kgb");
    let report = pack(&opts, &test_key(), &out).unwrap();
    assert_eq!(report.stats.aliases, 0);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    let loaded = load(&out, &test_key().public());
    assert!(!loaded
        .section_names
        .iter()
        .any(|n| n == s::RELATION_DESC_OFFSETS || n == s::RELATION_DESC_TEXT));
    assert!(!loaded
        .section_names
        .iter()
        .any(|n| n == s::RELATION_ALIAS_OFFSETS || n == s::RELATION_ALIAS_TEXT));
    for required in s::KG_REQUIRED {
        assert!(
            loaded.section_names.iter().any(|n| n == required),
            "missing {required}"
        );
    }
    let kg = loaded.kg();
    assert_eq!(kg.relation_description(rel(&kg, "directed_by")), None);
    assert_eq!(kg.aliases(id(&kg, "Blade Runner")).count(), 0);
    assert_eq!(lookup(&kg, "blade runner"), [("Blade Runner", false)]);
}
