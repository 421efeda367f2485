//! The bundle graph under spareval: the query kinds the translator
//! refuses, on a tiny movie graph.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use kgbox_bundle::tiny::TinyGraph;
use kgbox_bundle::Kg;
use oxrdf::Term;
use spareval::{QueryEvaluationError, QueryResults};
use spargebra::SparqlParser;

use super::*;
use crate::render::RenderOptions;

const TRIPLES: &[(&str, &str, &str)] = &[
    ("Alien", "directed_by", "Ridley Scott"),
    ("Alien", "release_year", "1979"),
    ("Blade Runner", "directed_by", "Ridley Scott"),
    ("Blade Runner", "starred_actors", "Harrison Ford"),
    ("Blade Runner", "release_year", "1982"),
    ("Thelma", "directed_by", "Ridley Scott"),
    ("Witness", "starred_actors", "Harrison Ford"),
    ("Witness", "release_year", "1985"),
];

const PREFIXES: &str = "PREFIX e: <http://kgbox.local/e/> PREFIX r: <http://kgbox.local/r/> ";

fn run(
    kg: &Kg<'_>,
    text: &str,
    deadline: Option<Instant>,
) -> Result<Outcome, QueryEvaluationError> {
    let opts = RenderOptions::default();
    let query = SparqlParser::new()
        .parse_query(&format!("{PREFIXES}{text}"))
        .unwrap_or_else(|e| panic!("{text}: {e}"));
    let ds = KgDataset::new(kg, opts.namespaces(), deadline);
    let results = evaluate(ds, &query)?;
    let outcome = match results {
        QueryResults::Boolean(b) => Outcome::Boolean(b),
        QueryResults::Solutions(rows) => {
            let vars: Vec<String> = rows
                .variables()
                .iter()
                .map(|v| v.as_str().to_string())
                .collect();
            let mut out = Vec::new();
            for row in rows {
                let row = row?;
                out.push(
                    vars.iter()
                        .map(|v| row.get(v.as_str()).map_or("-".into(), short))
                        .collect::<Vec<_>>()
                        .join(" "),
                );
            }
            out.sort();
            Outcome::Rows(out)
        }
        QueryResults::Graph(triples) => {
            let mut out = BTreeSet::new();
            for t in triples {
                let t = t?;
                out.insert(format!(
                    "{} {} {}",
                    short(&t.subject.into()),
                    short(&t.predicate.into()),
                    short(&t.object)
                ));
            }
            Outcome::Triples(out)
        }
    };
    Ok(outcome)
}

#[derive(Debug, PartialEq)]
enum Outcome {
    Boolean(bool),
    Rows(Vec<String>),
    Triples(BTreeSet<String>),
}

/// A term without kgbox's namespaces, literals by their lexical form.
fn short(t: &Term) -> String {
    match t {
        Term::NamedNode(n) => n
            .as_str()
            .trim_start_matches("http://kgbox.local/e/")
            .trim_start_matches("http://kgbox.local/r/")
            .replace("%20", " "),
        Term::Literal(l) => format!("\"{}\"", l.value()),
        other => other.to_string(),
    }
}

fn rows(v: &[&str]) -> Outcome {
    let mut v: Vec<String> = v.iter().map(|s| s.to_string()).collect();
    v.sort();
    Outcome::Rows(v)
}

fn with_kg<T>(f: impl FnOnce(&Kg<'_>) -> T) -> T {
    let g = TinyGraph::from_triples(TRIPLES).unwrap();
    f(&g.kg().unwrap())
}

#[test]
fn every_pattern_shape_is_answered_from_the_graph() {
    with_kg(|kg| {
        // Nothing bound: every triple (YASGUI's first query).
        let Outcome::Rows(all) = run(kg, "SELECT * WHERE { ?s ?p ?o }", None).unwrap() else {
            panic!()
        };
        assert_eq!(all.len(), TRIPLES.len(), "{all:?}");
        // Subject bound, predicate a variable.
        assert_eq!(
            run(kg, "SELECT ?p ?o WHERE { e:Alien ?p ?o }", None).unwrap(),
            rows(&["directed_by Ridley Scott", "release_year 1979"])
        );
        // Object bound only (in-edges), and predicate bound only (a scan).
        assert_eq!(
            run(kg, "SELECT ?s ?p WHERE { ?s ?p e:Harrison%20Ford }", None).unwrap(),
            rows(&["Blade Runner starred_actors", "Witness starred_actors"])
        );
        assert_eq!(
            run(kg, "SELECT ?s WHERE { ?s r:starred_actors ?o }", None).unwrap(),
            rows(&["Blade Runner", "Witness"])
        );
        // A term the graph lacks matches nothing; a named graph is empty.
        assert_eq!(
            run(kg, "SELECT ?p WHERE { e:Nobody ?p ?o }", None).unwrap(),
            rows(&[])
        );
        assert_eq!(
            run(kg, "SELECT ?s WHERE { GRAPH ?g { ?s ?p ?o } }", None).unwrap(),
            rows(&[])
        );
    });
}

#[test]
fn optional_aggregates_filters_and_two_columns() {
    with_kg(|kg| {
        assert_eq!(
            run(
                kg,
                "SELECT ?m ?y WHERE { ?m r:directed_by e:Ridley%20Scott OPTIONAL { ?m r:release_year ?y } }",
                None
            )
            .unwrap(),
            rows(&["Alien 1979", "Blade Runner 1982", "Thelma -"])
        );
        assert_eq!(
            run(
                kg,
                "SELECT (COUNT(*) AS ?n) WHERE { ?m r:directed_by ?d }",
                None
            )
            .unwrap(),
            rows(&["\"3\""])
        );
        assert_eq!(
            run(
                kg,
                "SELECT ?d (COUNT(?m) AS ?n) WHERE { ?m r:directed_by ?d } GROUP BY ?d",
                None
            )
            .unwrap(),
            rows(&["Ridley Scott \"3\""])
        );
        // A bundle packed from TSV names every node with an IRI: a literal
        // matches none of them.
        assert_eq!(
            run(
                kg,
                "SELECT ?m WHERE { ?m r:release_year ?y FILTER(CONTAINS(STR(?y), \"/198\")) }",
                None
            )
            .unwrap(),
            rows(&["Blade Runner", "Witness"])
        );
        assert_eq!(
            run(kg, "SELECT ?m WHERE { ?m r:release_year \"1982\" }", None).unwrap(),
            rows(&[])
        );
    });
}

#[test]
fn ask_construct_and_describe() {
    with_kg(|kg| {
        // A multi-hop ASK: co-stars of Harrison Ford directed by Ridley Scott.
        assert_eq!(
            run(
                kg,
                "ASK { ?m r:starred_actors ?a . ?m r:directed_by ?d . ?d ^r:directed_by e:Alien }",
                None
            )
            .unwrap(),
            Outcome::Boolean(true)
        );
        assert_eq!(
            run(kg, "ASK { e:Witness r:directed_by ?d }", None).unwrap(),
            Outcome::Boolean(false)
        );
        let Outcome::Triples(t) = run(
            kg,
            "CONSTRUCT { ?d r:directed ?m } WHERE { ?m r:directed_by ?d }",
            None,
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(
            t,
            [
                "Ridley Scott directed Alien",
                "Ridley Scott directed Blade Runner",
                "Ridley Scott directed Thelma"
            ]
            .iter()
            .map(|s| s.to_string())
            .collect()
        );
        let Outcome::Triples(t) = run(kg, "DESCRIBE e:Witness", None).unwrap() else {
            panic!()
        };
        assert_eq!(
            t,
            [
                "Witness release_year 1985",
                "Witness starred_actors Harrison Ford"
            ]
            .iter()
            .map(|s| s.to_string())
            .collect()
        );
    });
}

#[test]
fn a_past_deadline_stops_the_evaluation() {
    with_kg(|kg| {
        let past = Instant::now() - Duration::from_secs(1);
        let err = run(kg, "SELECT * WHERE { ?a ?p ?b . ?c ?q ?d }", Some(past)).unwrap_err();
        assert!(err.to_string().contains("deadline"), "{err}");
    });
}
