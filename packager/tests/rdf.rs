//! RDF as it is published: Turtle, N-Triples, N-Quads, TriG, RDF/XML and
//! JSON-LD, plain or compressed with gzip or zstd, all pack
//! `tests/fixtures/small.*` to the same bundle; labels name entities, IRIs are kept and found again; names
//! and blank nodes do not depend on how the file was written; bad input is
//! refused with a message that says what is wrong and where. Names as the
//! data gives them: known and detected name predicates, `--label-predicate`,
//! long texts kept out of the graph, disambiguators as aliases, and linking
//! that prefers the entity people mean.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};

use common::{
    assert_fails, build_args, cli, id, load, lookup, names, options, rel, stdout, test_key, write,
};
use kgbox_bundle::{BundleReader, Kg};
use kgbox_pack::pack;
use kgbox_pack::pack::PackReport;
use kgbox_query::link::{link_mention, link_text, LinkOptions};
use kgbox_query::translate::iri::{entity_by_literal, entity_term, EntityTerm, Namespaces};

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
/// (or the default graph), which only the RDF statements keep.
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

/// The raw sha256 of each section, by name; without the RDF statements
/// (`rdf.*`) when `statements` is false.
fn section_hashes(bundle: &Path, statements: bool) -> Vec<(String, [u8; 32])> {
    let reader = BundleReader::open(std::fs::File::open(bundle).unwrap()).unwrap();
    reader
        .prefix()
        .sections
        .iter()
        .filter(|e| statements || !e.name.starts_with("rdf."))
        .map(|e| (e.name.clone(), e.sha256_raw))
        .collect()
}

/// The statements of a bundle as N-Quads lines, sorted; with `graphs`
/// false, as triples (graph names dropped).
fn statement_lines(bundle: &Path, graphs: bool) -> Vec<String> {
    let loaded = load(bundle, &test_key().public());
    let kg = loaded.kg();
    let st = kg
        .statements()
        .expect("the bundle keeps its RDF statements");
    let mut lines: Vec<String> = (0..st.len())
        .map(|i| {
            let q = st.quad(i).unwrap();
            let t = |id| st.term(id).unwrap().to_string();
            let graph = match q[3] {
                kgbox_bundle::kg::statements::DEFAULT_GRAPH => String::new(),
                g if graphs => format!(" {}", t(g)),
                _ => String::new(),
            };
            format!("{} {} {}{graph} .", t(q[0]), t(q[1]), t(q[2]))
        })
        .collect();
    lines.sort();
    lines
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
    ];
    let reference = pack_to(&inputs[0], d);
    let want = digest(&reference);
    let bytes = std::fs::read(&reference).unwrap();
    for input in &inputs[1..] {
        let out = pack_to(input, d);
        assert_eq!(digest(&out), want, "{} packs differently", input.display());
        assert_eq!(std::fs::read(&out).unwrap(), bytes, "{}", input.display());
    }
    // In named graphs: the same question-answering graph, and the same
    // statements, now with their graph names.
    let nq = pack_to(
        &write(d, "g.nq", nquads(std::str::from_utf8(&nt).unwrap())),
        d,
    );
    assert_eq!(
        section_hashes(&nq, false),
        section_hashes(&reference, false)
    );
    assert_ne!(section_hashes(&nq, true), section_hashes(&reference, true));
    assert_eq!(
        statement_lines(&nq, false),
        statement_lines(&reference, false)
    );
    let named = statement_lines(&nq, true);
    assert!(
        named
            .iter()
            .any(|l| l.ends_with("<http://example.org/g/2> .")),
        "{named:?}"
    );
    let loaded = load(&reference, &test_key().public());
    let kg = loaded.kg();
    assert!(kg.entity_id("Blade Runner").is_some());
    assert!(loaded
        .section_names
        .iter()
        .any(|s| s == "kg.entities.iris.sorted"));
}

/// The Turtle fixture written in `format` by oxrdfio's serializer; with
/// `graphs`, every third statement in each of two named graphs.
fn serialized(format: oxrdfio::RdfFormat, graphs: bool) -> Vec<u8> {
    use oxrdf::{GraphName, NamedNode, Quad};
    let ttl = std::fs::read(fixture("ttl")).unwrap();
    let mut out = oxrdfio::RdfSerializer::from_format(format).for_writer(Vec::new());
    let parser = oxrdfio::RdfParser::from_format(oxrdfio::RdfFormat::Turtle);
    for (i, q) in parser.for_reader(&ttl[..]).enumerate() {
        let q = q.unwrap();
        let graph = match i % 3 {
            1 if graphs => GraphName::NamedNode(NamedNode::new_unchecked("http://example.org/g/1")),
            2 if graphs => GraphName::NamedNode(NamedNode::new_unchecked("http://example.org/g/2")),
            _ => GraphName::DefaultGraph,
        };
        out.serialize_quad(&Quad::new(q.subject, q.predicate, q.object, graph))
            .unwrap();
    }
    out.finish().unwrap()
}

#[test]
fn rdf_xml_trig_and_json_ld_pack_to_the_turtle_bundle() {
    use oxrdfio::{JsonLdProfileSet, RdfFormat};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let xml = serialized(RdfFormat::RdfXml, false);
    let jsonld = serialized(
        RdfFormat::JsonLd {
            profile: JsonLdProfileSet::empty(),
        },
        true,
    );
    let trig = serialized(RdfFormat::TriG, true);
    let inputs = [
        write(d, "g.rdf", xml.clone()),
        write(d, "g.owl", xml.clone()),
        write(d, "g.rdf.gz", gzip(&xml)),
        write(d, "g.trig.zst", zstd::encode_all(&trig[..], 3).unwrap()),
        write(d, "g.trig", trig),
        write(d, "g.jsonld", jsonld.clone()),
        write(d, "g.jsonld.gz", gzip(&jsonld)),
    ];
    let turtle = pack_to(&fixture("ttl"), d);
    let want = std::fs::read(&turtle).unwrap();
    for input in &inputs {
        let got = pack_to(input, d);
        let name = input.display();
        if name.to_string().contains(".rdf") {
            assert!(
                std::fs::read(&got).unwrap() == want,
                "{name} packs differently from the Turtle"
            );
        } else {
            // TriG and JSON-LD hold named graphs: only the statements know.
            assert_eq!(
                section_hashes(&got, false),
                section_hashes(&turtle, false),
                "{name}"
            );
            assert_eq!(
                statement_lines(&got, false),
                statement_lines(&turtle, false),
                "{name}"
            );
        }
    }
    // The format can also be named when the file name does not say it.
    let plain = write(d, "graph-data", xml);
    let named = d.join("named.kgb");
    let opts = kgbox_pack::pack::PackOptions {
        format: Some(kgbox_pack::input::Format::RdfXml),
        ..options(&plain)
    };
    pack(&opts, &test_key(), &named).unwrap();
    assert!(std::fs::read(&named).unwrap() == want);
}

#[test]
fn bad_rdf_xml_and_json_ld_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases: [(&str, &str); 3] = [
        (
            "bad.rdf",
            r#"<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description rdf:about="http://x/a"><p>1</p>"#,
        ),
        ("bad.jsonld", r#"{"@id": "http://x/a", "http://x/p": [1, "#),
        // Nothing is fetched: a remote context is an error, not a request.
        (
            "remote.jsonld",
            r#"{"@context": "http://example.org/ctx.jsonld", "@id": "http://x/a", "p": 1}"#,
        ),
    ];
    for (name, text) in cases {
        let path = write(d, name, text);
        let err = pack(&options(&path), &test_key(), &d.join("x.kgb"))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&path.display().to_string()),
            "{name}: {err}"
        );
    }
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
    assert!(!loaded
        .section_names
        .iter()
        .any(|s| s.contains(".iris.") || s.starts_with("rdf.")));
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
    for name in ["graph.n3", "graph.csv.gz", "graph"] {
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
        for format in [
            ".tsv", ".nt", ".ttl", ".nq", ".trig", ".rdf", ".jsonld", ".gz", ".zst", "--format",
        ] {
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

/// Packs `input` with `--label-predicate` `given`; returns the bundle and
/// the report (whose notes are the pack log).
fn pack_labelled(input: &Path, dir: &Path, given: &[&str]) -> (PathBuf, PackReport) {
    let out = dir.join("labelled.kgb");
    let mut opts = options(input);
    opts.label_predicates = given.iter().map(|g| g.to_string()).collect();
    let report = pack(&opts, &test_key(), &out).unwrap();
    (out, report)
}

/// The pack log line that contains `what`, failing the test if none does.
fn note<'a>(report: &'a PackReport, what: &str) -> &'a str {
    report
        .notes
        .iter()
        .find(|n| n.contains(what))
        .unwrap_or_else(|| panic!("no note with {what:?} in {:#?}", report.notes))
}

/// Names of the entities whose name starts with `prefix`.
fn named<'a>(kg: &Kg<'a>, prefix: &str) -> Vec<&'a str> {
    (0..kg.entity_count() as u32)
        .filter_map(|e| kg.entity_name(e))
        .filter(|n| n.starts_with(prefix))
        .collect()
}

/// A film graph that names things with its own `:name` predicate.
const OWN_NAMES: &str = r#"@prefix : <http://ex.org/> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
:Alien :name "Alien" ; :title "Alien: the film" ; :directed_by :Ridley_Scott ;
    :starring :Sigourney_Weaver ; :released "1979-05-25"^^xsd:date ; :runtime 117 .
:Blade_Runner :name "Blade Runner" ; :title "Blade Runner: the film" ;
    :directed_by :Ridley_Scott ; :released "1982-06-25"^^xsd:date .
:Ridley_Scott :name "Ridley Scott" ; :born "1937" .
:Sigourney_Weaver :name "Sigourney Weaver" .
"#;

#[test]
fn a_custom_name_predicate_is_detected_and_names_entities() {
    let dir = tempfile::tempdir().unwrap();
    let ttl = write(dir.path(), "own.ttl", OWN_NAMES);
    let (bundle, report) = pack_labelled(&ttl, dir.path(), &[]);
    let loaded = load(&bundle, &test_key().public());
    let kg = loaded.kg();
    // The IRI entity has the plain name; no "Alien (http…)", no literal node.
    assert_eq!(named(&kg, "Alien"), ["Alien"]);
    assert_eq!(kg.entity_iri(id(&kg, "Alien")), Some("http://ex.org/Alien"));
    assert_eq!(
        kg.entity_iri(id(&kg, "Ridley Scott")),
        Some("http://ex.org/Ridley_Scott")
    );
    // `:name` is a name predicate, not a relation; `:title` (also name-like,
    // and covering fewer subjects) names too, as the lower-ranked alias.
    assert!(kg.relation_id("name").is_none());
    assert!(kg.aliases(id(&kg, "Alien")).any(|a| a == "Alien: the film"));
    assert_eq!(
        note(&report, "<http://ex.org/name>"),
        "names: <http://ex.org/name> names 4 of 4 subjects (one short literal each: detected)"
    );
    // Years and dates are values, not names: they stay nodes.
    assert_eq!(kg.entity_iri(id(&kg, "1937")), None);
    assert!(
        !report.notes.iter().any(|n| n.contains("born")),
        "{:#?}",
        report.notes
    );
}

#[test]
fn label_predicate_overrides_detection() {
    let dir = tempfile::tempdir().unwrap();
    let ttl = write(dir.path(), "own.ttl", OWN_NAMES);
    // Exactly `:title` names: `:name` values are literal nodes again.
    let (bundle, report) = pack_labelled(&ttl, dir.path(), &["http://ex.org/title"]);
    let loaded = load(&bundle, &test_key().public());
    let kg = loaded.kg();
    let alien = id(&kg, "Alien: the film");
    assert_eq!(kg.entity_iri(alien), Some("http://ex.org/Alien"));
    let literal = id(&kg, "Alien");
    assert_eq!(kg.entity_iri(literal), None);
    assert_eq!(kg.out.neighbours(alien, rel(&kg, "name")), [literal]);
    assert_eq!(
        note(&report, "<http://ex.org/title>"),
        "names: <http://ex.org/title> names 2 of 4 subjects (--label-predicate)"
    );
    assert!(!report.notes.iter().any(|n| n.contains("detected")));

    // Several: the first given wins, the others are aliases.
    let (bundle, _) = pack_labelled(
        &ttl,
        dir.path(),
        &["<http://ex.org/name>", "http://ex.org/title"],
    );
    let loaded = load(&bundle, &test_key().public());
    let kg = loaded.kg();
    assert_eq!(named(&kg, "Alien"), ["Alien"]);
    assert!(kg.aliases(id(&kg, "Alien")).any(|a| a == "Alien: the film"));
    assert!(kg.relation_id("title").is_none());

    // Through the CLI, a predicate the graph does not have is an error
    // that names it; so is one without literal objects.
    let key = common::write_key(dir.path());
    let out = dir.path().join("x.kgb");
    for (given, problem) in [
        ("http://ex.org/nope", "is not a predicate of this graph"),
        ("http://ex.org/directed_by", "has no literal objects"),
    ] {
        let mut args = build_args(
            ttl.to_str().unwrap(),
            key.to_str().unwrap(),
            out.to_str().unwrap(),
        );
        args.extend(["--label-predicate", given]);
        let err = assert_fails(&cli(&args, &[]));
        assert!(
            err.contains(&format!("<{given}>")) && err.contains(problem),
            "{err}"
        );
        assert!(err.contains("own.ttl"), "{err}");
        assert!(!out.exists());
    }
    // A TSV input has no predicates to choose from.
    let tsv = write(dir.path(), "t.tsv", "a\tr\tb\n");
    let mut opts = options(&tsv);
    opts.label_predicates = vec!["rdfs:label".into()];
    let err = pack(&opts, &test_key(), &out).unwrap_err().to_string();
    assert!(
        err.contains("--label-predicate applies to RDF input"),
        "{err}"
    );
}

#[test]
fn known_name_predicates_foaf_and_dcterms() {
    let dir = tempfile::tempdir().unwrap();
    let ttl = write(
        dir.path(),
        "known.ttl",
        r#"@prefix ex: <http://ex.org/> .
@prefix foaf: <http://xmlns.com/foaf/0.1/> .
@prefix dcterms: <http://purl.org/dc/terms/> .
@prefix dc: <http://purl.org/dc/elements/1.1/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:pkd foaf:name "Philip K. Dick" ; foaf:nick "PKD" ; ex:wrote ex:b1, ex:b2 .
ex:b1 dcterms:title "Ubik" .
ex:b2 dc:title "Valis" ; rdfs:label "VALIS (novel)" .
"#,
    );
    let (bundle, report) = pack_labelled(&ttl, dir.path(), &[]);
    let loaded = load(&bundle, &test_key().public());
    let kg = loaded.kg();
    let pkd = id(&kg, "Philip K. Dick");
    assert_eq!(kg.entity_iri(pkd), Some("http://ex.org/pkd"));
    assert!(kg.aliases(pkd).any(|a| a == "PKD"));
    assert_eq!(kg.entity_iri(id(&kg, "Ubik")), Some("http://ex.org/b1"));
    // rdfs:label ranks above dc:title, which stays an alias.
    let valis = id(&kg, "VALIS (novel)");
    assert!(kg.aliases(valis).any(|a| a == "Valis"));
    let mut books = names(&kg, kg.out.neighbours(pkd, rel(&kg, "wrote")));
    books.sort_unstable();
    assert_eq!(books, ["Ubik", "VALIS (novel)"]);
    assert!(kg.relation_id("name").is_none() && kg.relation_id("title").is_none());
    for line in [
        "names: foaf:name names 1 of 3 subjects (known)",
        "names: dcterms:title names 1 of 3 subjects (known)",
        "names: rdfs:label names 1 of 3 subjects (known)",
        "aliases: foaf:nick gives 1 aliases to 1 subjects (known)",
    ] {
        assert_eq!(note(&report, line), line);
    }
}

#[test]
fn long_texts_stay_out_of_the_graph() {
    let dir = tempfile::tempdir().unwrap();
    let long = "A".repeat(20) + &" word".repeat(30);
    let ttl = write(
        dir.path(),
        "texts.ttl",
        format!(
            r#"@prefix ex: <http://ex.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix schema: <http://schema.org/> .
ex:Alien rdfs:label "Alien" ; rdfs:comment "A film." ; ex:genre "horror" ;
    ex:plot "{long}" ; schema:description "The crew of a commercial spacecraft meets a deadly lifeform." .
ex:Heat rdfs:label "Heat" ; ex:genre "crime" ; ex:plot "one two three four five six seven eight nine ten eleven twelve thirteen" .
"#
        ),
    );
    let (bundle, report) = pack_labelled(&ttl, dir.path(), &[]);
    let loaded = load(&bundle, &test_key().public());
    let kg = loaded.kg();
    let mut all: Vec<&str> = named(&kg, "");
    all.sort_unstable();
    assert_eq!(all, ["Alien", "Heat", "crime", "horror"]);
    assert!(kg.relation_id("comment").is_none() && kg.relation_id("plot").is_none());
    assert_eq!(
        kg.out.neighbours(id(&kg, "Alien"), rel(&kg, "genre")),
        [id(&kg, "horror")]
    );
    let line = note(&report, "long text literals");
    assert!(
        line.starts_with(
            "long texts: 4 long text literals (predicates <http://ex.org/plot> 2, \
             schema:description 1, rdfs:comment 1) kept out of the \
             question-answering graph"
        ),
        "{line}"
    );
}

#[test]
fn a_literal_value_yields_its_name_to_an_entity() {
    let dir = tempfile::tempdir().unwrap();
    let ttl = write(
        dir.path(),
        "yield.ttl",
        r#"@prefix ex: <http://ex.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:Paris rdfs:label "Paris" ; ex:country ex:France .
ex:France rdfs:label "France" .
ex:Amelie rdfs:label "Amélie" ; ex:set_in "Paris" .
"#,
    );
    let (bundle, _) = pack_labelled(&ttl, dir.path(), &[]);
    let loaded = load(&bundle, &test_key().public());
    let kg = loaded.kg();
    assert_eq!(kg.entity_iri(id(&kg, "Paris")), Some("http://ex.org/Paris"));
    let value = id(&kg, "Paris (literal)");
    assert_eq!(kg.entity_iri(value), None);
    assert!(kg.aliases(value).any(|a| a == "Paris"));
    assert_eq!(
        kg.out.neighbours(id(&kg, "Amélie"), rel(&kg, "set_in")),
        [value]
    );
    // Linking "Paris" finds the city.
    let c = link_mention(&kg, "Paris", &LinkOptions::default());
    assert_eq!(c[0].name, "Paris", "{c:?}");
    // In SPARQL (and the export) the value is still the literal "Paris".
    let ns = Namespaces {
        entity: "urn:kgbox:e:",
        relation: "urn:kgbox:r:",
    };
    assert_eq!(
        entity_term(&kg, value, ns),
        Some(EntityTerm::Literal("Paris".into()))
    );
    assert_eq!(entity_by_literal(&kg, "Paris"), Some(value));
}

#[test]
fn disambiguators_give_aliases_and_linking_prefers_the_entity() {
    let dir = tempfile::tempdir().unwrap();
    let ttl = write(
        dir.path(),
        "mercury.ttl",
        r#"@prefix ex: <http://ex.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:Mercury_planet rdfs:label "Mercury (planet)" ; ex:orbits ex:Sun ; ex:type ex:Planet ;
    ex:moons "0" .
ex:Mercury_god rdfs:label "Mercury (mythology)" ; ex:type ex:God .
ex:Sun rdfs:label "Sun" .
ex:Element80 rdfs:label "Element 80" ; ex:element "Mercury" ; ex:note "Venus (planet)" .
ex:Freddie_Mercury ex:plays ex:Piano .
"#,
    );
    let (bundle, _) = pack_labelled(&ttl, dir.path(), &[]);
    let loaded = load(&bundle, &test_key().public());
    let kg = loaded.kg();
    let planet = id(&kg, "Mercury (planet)");
    let god = id(&kg, "Mercury (mythology)");
    let value = id(&kg, "Mercury");
    assert_eq!(kg.entity_iri(value), None);
    assert!(kg.aliases(planet).any(|a| a == "Mercury"));
    assert!(kg.aliases(god).any(|a| a == "Mercury"));
    // A readable IRI name gets no alias without a disambiguator, and a
    // literal none at all.
    assert!(kg.aliases(id(&kg, "Freddie Mercury")).next().is_none());
    assert!(lookup(&kg, "venus").is_empty());

    // The planet (degree 3) before its namesake (degree 1), both before the
    // literal value "Mercury" that has the very name.
    let c = link_mention(&kg, "Mercury", &LinkOptions::default());
    let found: Vec<u32> = c.iter().map(|c| c.entity).collect();
    assert_eq!(found, [planet, god, value], "{c:?}");
    let ms = link_text(
        &kg,
        "Which star does [Mercury] orbit?",
        &LinkOptions::default(),
    );
    assert_eq!(ms[0].candidates[0].entity, planet, "{ms:?}");
    let ms = link_text(
        &kg,
        "Which star does Mercury orbit?",
        &LinkOptions::default(),
    );
    assert_eq!(ms[0].candidates[0].entity, planet, "{ms:?}");
}

#[test]
fn dates_and_numbers_stay_answerable_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let ttl = write(dir.path(), "own.ttl", OWN_NAMES);
    let (bundle, _) = pack_labelled(&ttl, dir.path(), &[]);
    let loaded = load(&bundle, &test_key().public());
    let kg = loaded.kg();
    let alien = id(&kg, "Alien");
    let date = id(&kg, "1979-05-25");
    assert_eq!(kg.out.neighbours(alien, rel(&kg, "released")), [date]);
    assert_eq!(
        names(&kg, kg.out.neighbours(alien, rel(&kg, "runtime"))),
        ["117"]
    );
    // The date links, and leads back to the film.
    let c = link_mention(&kg, "1979-05-25", &LinkOptions::default());
    assert_eq!(c[0].entity, date, "{c:?}");
    assert_eq!(kg.inc.neighbours(date, rel(&kg, "released")), [alien]);
}
