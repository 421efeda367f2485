//! The RDF statements as given (`rdf.*` sections): every literal keeps its
//! lexical form, datatype and language, label triples and long texts stay,
//! named graphs stay, blank nodes get labels that do not depend on the
//! file's; `--no-rdf-statements` leaves them out, and TSV has none.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use common::{build_args, cli, load, options, stderr, test_key, write, write_key};
use kgbox_bundle::kg::statements::DEFAULT_GRAPH;
use kgbox_pack::pack;

const TTL: &str = r#"@prefix ex: <http://example.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
ex:film rdfs:label "Blade Runner", "Le Blade Runner"@fr ;
    ex:year "1982"^^xsd:gYear ;
    ex:runtime "0117"^^xsd:integer ;
    rdfs:comment "A film about replicants in a Los Angeles of the future, hunted by a blade runner who may be one himself." ;
    ex:crew [ ex:role "director" ; ex:person ex:scott ] .
ex:scott rdfs:label "Ridley Scott" .
"#;

/// The statements as sorted N-Quads lines.
fn lines(bundle: &Path) -> Vec<String> {
    let loaded = load(bundle, &test_key().public());
    let kg = loaded.kg();
    let Some(st) = kg.statements() else {
        return Vec::new();
    };
    let t = |id| st.term(id).unwrap().to_string();
    let mut out: Vec<String> = (0..st.len())
        .map(|i| {
            let q = st.quad(i).unwrap();
            let g = if q[3] == DEFAULT_GRAPH {
                String::new()
            } else {
                format!(" {}", t(q[3]))
            };
            format!("{} {} {}{g} .", t(q[0]), t(q[1]), t(q[2]))
        })
        .collect();
    out.sort();
    out
}

#[test]
fn statements_keep_datatypes_languages_labels_and_texts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("b.kgb");
    pack(&options(&write(d, "g.ttl", TTL)), &test_key(), &out).unwrap();
    let got = lines(&out);
    assert_eq!(got.len(), 9, "{got:#?}");
    for want in [
        r#"<http://example.org/film> <http://www.w3.org/2000/01/rdf-schema#label> "Blade Runner" ."#,
        r#"<http://example.org/film> <http://www.w3.org/2000/01/rdf-schema#label> "Le Blade Runner"@fr ."#,
        r#"<http://example.org/film> <http://example.org/year> "1982"^^<http://www.w3.org/2001/XMLSchema#gYear> ."#,
        r#"<http://example.org/film> <http://example.org/runtime> "0117"^^<http://www.w3.org/2001/XMLSchema#integer> ."#,
    ] {
        assert!(
            got.iter().any(|l| l == want),
            "{want} missing from {got:#?}"
        );
    }
    assert!(got
        .iter()
        .any(|l| l.contains("rdf-schema#comment> \"A film")));
    // The blank node: one label for its three statements, not the parser's.
    let blank: Vec<&str> = got
        .iter()
        .filter_map(|l| l.split(' ').find(|t| t.starts_with("_:")))
        .collect();
    assert_eq!(blank.len(), 3, "{got:#?}");
    assert!(blank.iter().all(|b| *b == blank[0] && b.starts_with("_:b")));
    // The question-answering graph is as before: labels name, no comment.
    let loaded = load(&out, &test_key().public());
    assert!(loaded.kg().entity_id("Blade Runner").is_some());
    assert!(loaded.kg().check_iris().is_ok());

    // The same graph written with other blank-node labels and in another
    // order packs to the same bundle.
    let shuffled = r#"@prefix ex: <http://example.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
ex:scott rdfs:label "Ridley Scott" .
_:c42 ex:person ex:scott ; ex:role "director" .
ex:film ex:crew _:c42 ; ex:runtime "0117"^^xsd:integer ; ex:year "1982"^^xsd:gYear .
ex:film rdfs:comment "A film about replicants in a Los Angeles of the future, hunted by a blade runner who may be one himself." .
ex:film rdfs:label "Le Blade Runner"@fr, "Blade Runner" .
"#;
    let again = d.join("again.kgb");
    pack(&options(&write(d, "h.ttl", shuffled)), &test_key(), &again).unwrap();
    assert_eq!(lines(&again), got);
    assert!(std::fs::read(&again).unwrap() == std::fs::read(&out).unwrap());
}

#[test]
fn named_graphs_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nq = "<http://x/a> <http://x/p> <http://x/b> <http://x/g1> .\n\
              <http://x/a> <http://x/p> <http://x/b> .\n\
              <http://x/b> <http://x/p> \"v\"@en <http://x/g2> .\n";
    let out = d.join("b.kgb");
    pack(&options(&write(d, "g.nq", nq)), &test_key(), &out).unwrap();
    assert_eq!(
        lines(&out),
        [
            "<http://x/a> <http://x/p> <http://x/b> .",
            "<http://x/a> <http://x/p> <http://x/b> <http://x/g1> .",
            "<http://x/b> <http://x/p> \"v\"@en <http://x/g2> .",
        ]
    );
}

#[test]
fn no_rdf_statements_and_tsv_leave_them_out() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ttl = write(d, "g.ttl", TTL);
    let out = d.join("b.kgb");
    let opts = kgbox_pack::pack::PackOptions {
        rdf_statements: false,
        ..options(&ttl)
    };
    pack(&opts, &test_key(), &out).unwrap();
    let loaded = load(&out, &test_key().public());
    assert!(loaded.kg().statements().is_none());
    assert!(!loaded.section_names.iter().any(|s| s.starts_with("rdf.")));

    // The CLI flag, and TSV.
    let key = write_key(d);
    for (input, flag) in [(ttl.clone(), true), (write(d, "t.tsv", "a\tr\tb\n"), false)] {
        let out = d.join("cli.kgb");
        let mut args = build_args(
            input.to_str().unwrap(),
            key.to_str().unwrap(),
            out.to_str().unwrap(),
        );
        if flag {
            args.push("--no-rdf-statements");
        }
        let run = cli(&args, &[]);
        assert!(run.status.success(), "{}", stderr(&run));
        assert!(lines(&out).is_empty());
    }
}

#[test]
fn a_graph_of_only_labels_packs_for_sparql() {
    // Every statement names its subject: the question-answering graph has
    // no edges, but the statements are there for /sparql.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ttl = write(
        d,
        "labels.ttl",
        "<http://x/a> <http://www.w3.org/2000/01/rdf-schema#label> \"A\" .\n",
    );
    let out = d.join("b.kgb");
    pack(&options(&ttl), &test_key(), &out).unwrap();
    assert_eq!(lines(&out).len(), 1);
}

#[test]
fn an_empty_graph_is_refused_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let empty = write(d, "empty.nq", "# nothing\n");
    let key = write_key(d);
    let out = d.join("e.kgb");
    let args = build_args(
        empty.to_str().unwrap(),
        key.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let refused = cli(&args, &[]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stderr(&refused).contains("no triples found"),
        "{}",
        stderr(&refused)
    );
    assert!(!out.exists());
    let allowed = cli(&[&args[..], &["--allow-empty"]].concat(), &[]);
    assert!(allowed.status.success(), "{}", stderr(&allowed));
    let loaded = load(&out, &test_key().public());
    assert_eq!(loaded.kg().entity_count(), 0);
    assert!(loaded.kg().statements().is_none());
}
