//! RDF as it is published: Turtle, N-Triples and N-Quads, plain or
//! compressed with gzip or zstd, all pack `tests/fixtures/small.*` to the
//! same bundle; labels name entities, IRIs are kept and found again; names
//! and blank nodes do not depend on how the file was written; bad input is
//! refused with a message that says what is wrong and where.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};

use common::{assert_fails, build_args, cli, id, load, lookup, options, stdout, test_key, write};
use kgbox_bundle::BundleReader;
use kgbox_pack::pack;

const BR_IRI: &str = "http://example.org/movie/Blade_Runner";

fn fixture(ext: &str) -> PathBuf {
    common::workspace().join(format!("tests/fixtures/small.{ext}"))
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// N-Quads from N-Triples: every statement put in one of two named graphs
/// (or the default graph), which the packager ignores.
fn nquads(nt: &str) -> String {
    let mut out = String::new();
    for (i, line) in nt.lines().enumerate() {
        match line.strip_suffix(" .") {
            Some(t) if !line.starts_with('#') => {
                let graph = ["<http://example.org/g/1> ", "<http://example.org/g/2> ", ""][i % 3];
                out.push_str(&format!("{t} {graph}.\n"));
            }
            _ => out.push_str(&format!("{line}\n")),
        }
    }
    out
}

/// The bundle digest (sha256 of the signed prefix).
fn digest(bundle: &Path) -> String {
    let reader = BundleReader::open(std::fs::File::open(bundle).unwrap()).unwrap();
    hex::encode(reader.prefix().digest())
}

fn pack_to(input: &Path, dir: &Path) -> PathBuf {
    let out = dir.join(format!(
        "{}.kgb",
        input.file_name().unwrap().to_str().unwrap()
    ));
    pack(&options(input), &test_key(), &out).unwrap();
    out
}

#[test]
fn every_form_of_the_graph_packs_to_the_same_bundle() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nt = std::fs::read(fixture("nt")).unwrap();
    let ttl = std::fs::read(fixture("ttl")).unwrap();
    let inputs = [
        fixture("nt"),
        fixture("ttl"),
        write(d, "graph.nt.gz", gzip(&nt)),
        write(d, "other-name.ttl.gz", gzip(&ttl)),
        write(d, "g.ttl.zst", zstd::encode_all(&ttl[..], 3).unwrap()),
        write(d, "g.nt.zst", zstd::encode_all(&nt[..], 3).unwrap()),
        write(d, "g.nq", nquads(std::str::from_utf8(&nt).unwrap())),
    ];
    let reference = pack_to(&inputs[0], d);
    let want = digest(&reference);
    let bytes = std::fs::read(&reference).unwrap();
    for input in &inputs[1..] {
        let out = pack_to(input, d);
        assert_eq!(digest(&out), want, "{} packs differently", input.display());
        assert_eq!(std::fs::read(&out).unwrap(), bytes, "{}", input.display());
    }
    let loaded = load(&reference, &test_key().public());
    let kg = loaded.kg();
    assert!(kg.entity_id("Blade Runner").is_some());
    assert!(loaded
        .section_names
        .iter()
        .any(|s| s == "kg.entities.iris.sorted"));
}

#[test]
fn inspect_shows_the_same_digest_for_turtle_and_ntriples() {
    let dir = tempfile::tempdir().unwrap();
    let key = common::write_key(dir.path());
    let mut digests = Vec::new();
    for ext in ["ttl", "nt"] {
        let out = dir.path().join(format!("{ext}.kgb"));
        let input = fixture(ext);
        let args = build_args(
            input.to_str().unwrap(),
            key.to_str().unwrap(),
            out.to_str().unwrap(),
        );
        let built = cli(&args, &[("SOURCE_DATE_EPOCH", "1700000000")]);
        assert!(built.status.success(), "{}", common::stderr(&built));
        let shown = stdout(&cli(&["inspect", out.to_str().unwrap()], &[]));
        let line = shown
            .lines()
            .find(|l| l.starts_with("digest"))
            .unwrap_or_else(|| panic!("no digest in {shown}"))
            .to_string();
        assert!(line.ends_with(&digest(&out)), "{line}");
        assert!(shown.contains("kg.entities.iris.offsets"), "{shown}");
        digests.push(line);
    }
    assert_eq!(digests[0], digests[1]);
}

#[test]
fn labels_name_entities_and_iris_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = pack_to(&fixture("ttl"), dir.path());
    let loaded = load(&bundle, &test_key().public());
    let kg = loaded.kg();
    let br = id(&kg, "Blade Runner");
    assert_eq!(kg.entity_iri(br), Some(BR_IRI));
    assert_eq!(kg.entity_by_iri(BR_IRI), Some(br));
    assert_eq!(kg.entity_by_iri("http://example.org/movie/Blade"), None);
    assert_eq!(lookup(&kg, "bladerunner"), [("Blade Runner", true)]);
    // The anonymous blank node is named by its label, and has no IRI.
    assert_eq!(
        kg.entity_iri(id(&kg, "Do Androids Dream of Electric Sheep?")),
        None
    );
    // Every IRI maps back to its id; ids without one are literals or blank.
    let mut with_iri = 0;
    for e in 0..kg.entity_count() as u32 {
        match kg.entity_iri(e) {
            Some(iri) => {
                with_iri += 1;
                assert_eq!(kg.entity_by_iri(iri), Some(e), "{iri}");
            }
            None => {
                let name = kg.entity_name(e).unwrap();
                assert!(
                    name.chars().all(|c| c.is_ascii_digit()) || name.starts_with("Do Androids"),
                    "{name} has no IRI"
                );
            }
        }
    }
    assert_eq!(with_iri, 12);
    for r in 0..kg.relation_count() as u32 {
        let iri = kg.relation_iri(r).unwrap();
        assert_eq!(kg.relation_by_iri(iri), Some(r));
    }
    loaded.kg().check_iris().unwrap();
}

#[test]
fn tsv_bundles_have_no_iri_sections() {
    let dir = tempfile::tempdir().unwrap();
    let t = write(dir.path(), "t.tsv", "a\tr\tb\n");
    let loaded = load(&pack_to(&t, dir.path()), &test_key().public());
    assert!(!loaded.section_names.iter().any(|s| s.contains(".iris.")));
    let kg = loaded.kg();
    assert!(!kg.has_iris());
    assert_eq!(kg.entity_iri(0), None);
    assert_eq!(kg.relation_by_iri("r"), None);
}

#[test]
fn names_without_labels_are_readable_and_distinct() {
    let dir = tempfile::tempdir().unwrap();
    let ttl = write(
        dir.path(),
        "names.ttl",
        r#"@prefix ex: <http://ex.org/> .
@prefix wd: <http://www.wikidata.org/entity/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
ex:Ridley_Scott ex:directed ex:Alien .
ex:Alien rdfs:label "Alien"@en, "Alien, le huitième passager"@fr .
wd:Q90 rdfs:label "Paris" ; ex:near wd:Q167646 .
wd:Q167646 rdfs:label "Paris" ; skos:prefLabel "Paris (mythology)" .
ex:year ex:value "Paris" .
ex:other\/Am%C3%A9lie ex:near ex:Am%C3%A9lie .
"#,
    );
    let loaded = load(&pack_to(&ttl, dir.path()), &test_key().public());
    let kg = loaded.kg();
    // From the local part, underscores as spaces, escapes decoded.
    assert_eq!(
        kg.entity_iri(id(&kg, "Ridley Scott")),
        Some("http://ex.org/Ridley_Scott")
    );
    // rdfs:label wins over other kinds, English over other languages.
    assert_eq!(kg.entity_iri(id(&kg, "Alien")), Some("http://ex.org/Alien"));
    assert!(kg
        .aliases(id(&kg, "Alien"))
        .any(|a| a == "Alien, le huitième passager"));
    // Two labels "Paris" and a literal "Paris": the literal keeps the plain
    // name, the others get their IRI's local part, and both keep the label
    // as an alias.
    assert_eq!(kg.entity_iri(id(&kg, "Paris")), None);
    assert_eq!(
        kg.entity_iri(id(&kg, "Paris (Q90)")),
        Some("http://www.wikidata.org/entity/Q90")
    );
    let q = id(&kg, "Paris (Q167646)");
    assert!(kg.aliases(q).any(|a| a == "Paris (mythology)"));
    let mut found: Vec<&str> = lookup(&kg, "paris").into_iter().map(|p| p.0).collect();
    found.sort_unstable();
    assert_eq!(found, ["Paris", "Paris (Q167646)", "Paris (Q90)"]);
    // Two IRIs with one local part: the full IRI tells them apart.
    let a = id(&kg, "Amélie (http://ex.org/Am%C3%A9lie)");
    let b = id(&kg, "Amélie (http://ex.org/other/Am%C3%A9lie)");
    assert_eq!(kg.entity_iri(a), Some("http://ex.org/Am%C3%A9lie"));
    assert_eq!(kg.entity_by_iri("http://ex.org/other/Am%C3%A9lie"), Some(b));
}

#[test]
fn blank_node_labels_and_statement_order_do_not_change_the_bundle() {
    let dir = tempfile::tempdir().unwrap();
    let one = "<http://ex.org/f> <http://ex.org/cast> _:a .\n\
               _:a <http://ex.org/actor> <http://ex.org/p1> .\n\
               _:a <http://ex.org/role> \"Deckard\" .\n\
               <http://ex.org/f> <http://ex.org/cast> _:b .\n\
               _:b <http://ex.org/actor> <http://ex.org/p2> .\n\
               _:b <http://ex.org/role> \"Batty\" .\n\
               _:c <http://ex.org/note> _:d .\n\
               _:d <http://ex.org/note> _:c .\n";
    let two = "_:zz <http://ex.org/role> \"Batty\" .\n\
               _:n2 <http://ex.org/note> _:n1 .\n\
               <http://ex.org/f> <http://ex.org/cast> _:yy .\n\
               _:yy <http://ex.org/actor> <http://ex.org/p1> .\n\
               _:zz <http://ex.org/actor> <http://ex.org/p2> .\n\
               _:n1 <http://ex.org/note> _:n2 .\n\
               _:yy <http://ex.org/role> \"Deckard\" .\n\
               <http://ex.org/f> <http://ex.org/cast> _:zz .\n";
    let a = pack_to(&write(dir.path(), "one.nt", one), dir.path());
    let b = pack_to(&write(dir.path(), "two.nt", two), dir.path());
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    let loaded = load(&a, &test_key().public());
    let kg = loaded.kg();
    let blanks: Vec<&str> = (0..kg.entity_count() as u32)
        .map(|e| kg.entity_name(e).unwrap())
        .filter(|n| n.starts_with("_:"))
        .collect();
    // Two cast nodes told apart by their edges, and two alike notes.
    assert_eq!(blanks.len(), 4, "{blanks:?}");
    assert!(blanks.iter().any(|n| n.ends_with("-2")), "{blanks:?}");
}

#[test]
fn unknown_extensions_name_the_supported_formats() {
    let dir = tempfile::tempdir().unwrap();
    let key = common::write_key(dir.path());
    for name in ["graph.rdf", "graph.jsonld.gz", "graph"] {
        let input = write(dir.path(), name, "<http://a> <http://b> <http://c> .\n");
        let out = dir.path().join("x.kgb");
        let args = build_args(
            input.to_str().unwrap(),
            key.to_str().unwrap(),
            out.to_str().unwrap(),
        );
        let err = assert_fails(&cli(&args, &[]));
        assert!(
            err.contains(name) && err.contains("unknown triples format"),
            "{err}"
        );
        for format in [".tsv", ".nt", ".ttl", ".nq", ".gz", ".zst", "--format"] {
            assert!(err.contains(format), "{format} missing from: {err}");
        }
        assert!(!out.exists());
    }
}

#[test]
fn a_truncated_gzip_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let key = common::write_key(dir.path());
    let nt = std::fs::read(fixture("nt")).unwrap();
    let gz = gzip(&nt);
    for (name, bytes) in [
        ("cut.nt.gz", gz[..gz.len() / 2].to_vec()),
        ("cut.ttl.zst", {
            let z = zstd::encode_all(&nt[..], 3).unwrap();
            z[..z.len() - 20].to_vec()
        }),
    ] {
        let input = write(dir.path(), name, bytes);
        let out = dir.path().join("x.kgb");
        let args = build_args(
            input.to_str().unwrap(),
            key.to_str().unwrap(),
            out.to_str().unwrap(),
        );
        let err = assert_fails(&cli(&args, &[]));
        assert!(err.contains(name), "{err}");
        assert!(err.contains("stream is truncated or damaged"), "{err}");
        assert!(!out.exists());
    }
}

#[test]
fn syntax_errors_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "bad.ttl",
            "@prefix ex: <http://ex.org/> .\n\nex:a ex:b ex:c ;\n   ex:d .\n",
            4,
        ),
        (
            "bad.nt",
            "<http://a> <http://b> <http://c> .\n<http://a> <http://b> .\n",
            2,
        ),
        ("bad.nq", "<http://a> <http://b> \"x\" <g> <h> .\n", 1),
        ("relative.ttl", "<a> <http://b> <http://c> .\n", 1),
    ];
    for (name, text, line) in cases {
        let path = write(dir.path(), name, text);
        let err = pack(&options(&path), &test_key(), &dir.path().join("x.kgb"))
            .unwrap_err()
            .to_string();
        let want = format!("{}:{line}: ", path.display());
        assert!(err.starts_with(&want), "{name}: {err}");
    }
    // Compressed: the line is the line of the decompressed text.
    let path = write(dir.path(), "bad.nt.gz", gzip(b"\n\n<http://a> <b> <c> .\n"));
    let err = pack(&options(&path), &test_key(), &dir.path().join("x.kgb"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("bad.nt.gz:3: "), "{err}");
}
