//! Translation on a tiny movie graph, and the round trip: every query the
//! renderer writes, in SPARQL and openCypher, translates back to a query
//! with the same answers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use kgbox_bundle::tiny::TinyGraph;
use kgbox_bundle::Kg;

use super::*;
use crate::render::{render_text, Language, RenderOptions};
use crate::{ExecOptions, ParseLimits};

const TRIPLES: &[[&str; 3]] = &[
    ["Alien", "directed_by", "Ridley Scott"],
    ["Alien", "has_genre", "SciFi"],
    ["Alien", "release_year", "1979"],
    ["Blade Runner", "directed_by", "Ridley Scott"],
    ["Blade Runner", "written_by", "Hampton Fancher"],
    ["Blade Runner", "has_genre", "SciFi"],
    ["Blade Runner", "starred_actors", "Harrison Ford"],
    ["Blade Runner", "release_year", "1982"],
    ["Thelma", "directed_by", "Ridley Scott"],
    ["Thelma", "has_genre", "Drama"],
    ["Witness", "starred_actors", "Harrison Ford"],
    ["Witness", "has_genre", "Drama"],
    ["Witness", "release_year", "1985"],
    ["Airplane", "directed_by", "Zucker"],
    ["Airplane", "has_genre", "Comedy"],
];

fn with_kg<T>(f: impl FnOnce(&Kg<'_>) -> T) -> T {
    let triples: Vec<(&str, &str, &str)> = TRIPLES.iter().map(|t| (t[0], t[1], t[2])).collect();
    let g = TinyGraph::from_triples(&triples).unwrap();
    f(&g.kg().unwrap())
}

fn answers(kg: &Kg<'_>, dsl: &str, exclude_anchors: bool) -> BTreeSet<String> {
    let opts = ExecOptions {
        top_k: 1000,
        exclude_anchors,
        ..ExecOptions::default()
    };
    let (a, _) = crate::run_query(kg, dsl, &ParseLimits::default(), &opts)
        .unwrap_or_else(|e| panic!("{dsl}: {e}"));
    a.answers
        .iter()
        .map(|x| kg.entity_name(x.entity).unwrap().to_string())
        .collect()
}

fn sparql_answers(kg: &Kg<'_>, text: &str) -> Result<BTreeSet<String>, TranslateError> {
    let q = from_sparql(kg, text, &RenderOptions::default())?;
    Ok(match q.query {
        Some(q) => answers(kg, &q.to_string(), false),
        None => BTreeSet::new(),
    })
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

const E: &str = "http://kgbox.local/e/";

#[test]
fn sparql_reads_the_usual_forms() {
    with_kg(|kg| {
        let q = |body: &str| format!("PREFIX e: <{E}> PREFIX r: <http://kgbox.local/r/> {body}");
        let cases: Vec<(String, Vec<&str>)> = vec![
            (q("SELECT ?m WHERE { ?m r:directed_by e:Ridley%20Scott }"), vec!["Alien", "Blade Runner", "Thelma"]),
            // Standard semantics: the anchor comes back through a 2-hop walk.
            (q("SELECT DISTINCT ?x { ?m r:directed_by e:Ridley%20Scott . ?m r:directed_by ?x }"), vec!["Ridley Scott"]),
            (q("SELECT ?m { VALUES ?g { e:Drama e:Comedy } ?m r:has_genre ?g }"), vec!["Airplane", "Thelma", "Witness"]),
            (q("SELECT ?m { ?m r:has_genre e:SciFi FILTER(?m != e:Alien) }"), vec!["Blade Runner"]),
            (q("SELECT ?m { ?m r:has_genre e:SciFi FILTER NOT EXISTS { ?m r:written_by e:Hampton%20Fancher } }"), vec!["Alien"]),
            (q("SELECT ?m { ?m r:has_genre e:SciFi MINUS { ?m r:release_year \"1979\" } }"), vec!["Blade Runner"]),
            (q("SELECT ?m { { ?m r:has_genre e:Comedy } UNION { ?m r:starred_actors e:Harrison%20Ford } }"), vec!["Airplane", "Blade Runner", "Witness"]),
            (q("SELECT ?y { e:Harrison%20Ford ^r:starred_actors/r:release_year ?y }"), vec!["1982", "1985"]),
            (q("SELECT ?p { e:Blade%20Runner r:directed_by|r:written_by ?p }"), vec!["Hampton Fancher", "Ridley Scott"]),
            (q("SELECT ?m { ?m r:has_genre e:SciFi FILTER(?m IN (e:Alien, e:Thelma)) }"), vec!["Alien"]),
            (q("SELECT ?m { ?m r:directed_by e:Nobody }"), vec![]),
            (q("SELECT ?m { ?m r:no_such_relation e:Alien }"), vec![]),
        ];
        for (text, want) in cases {
            assert_eq!(
                sparql_answers(kg, &text).unwrap_or_else(|e| panic!("{text}: {e}")),
                set(&want),
                "{text}"
            );
        }
    });
}

#[test]
fn sparql_modifiers_names_and_ask() {
    with_kg(|kg| {
        let o = RenderOptions::default();
        let q = from_sparql(
            kg,
            "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> SELECT ?m ?name WHERE { ?m <http://kgbox.local/r/directed_by> <http://kgbox.local/e/Ridley%20Scott> ; rdfs:label ?name FILTER(STRSTARTS(?name, \"A\") || CONTAINS(LCASE(?name), \"runner\")) } ORDER BY DESC(?name) LIMIT 5 OFFSET 1",
            &o,
        )
        .unwrap();
        assert_eq!(
            q.form,
            Form::Select {
                answer: "m".into(),
                name: Some("name".into()),
                columns: vec!["m".into(), "name".into()]
            }
        );
        assert_eq!((q.offset, q.limit), (1, Some(5)));
        assert_eq!(
            q.order,
            Some(Order {
                by_name: true,
                descending: true
            })
        );
        let tests = &q.name_tests;
        assert!(tests
            .iter()
            .all(|t| t.matches("Alien") && t.matches("Blade Runner")));
        assert!(!tests.iter().all(|t| t.matches("Thelma")));
        let ask = from_sparql(kg, "ASK { <http://kgbox.local/e/Alien> <http://kgbox.local/r/has_genre> <http://kgbox.local/e/SciFi> }", &o).unwrap();
        assert_eq!(ask.form, Form::Ask);
        assert_eq!(
            answers(kg, &ask.query.unwrap().to_string(), false),
            set(&["SciFi"])
        );
        let by_label = from_sparql(kg, "SELECT ?g { ?m <http://www.w3.org/2000/01/rdf-schema#label> \"Thelma\" . ?m <http://kgbox.local/r/has_genre> ?g }", &o).unwrap();
        assert_eq!(
            answers(kg, &by_label.query.unwrap().to_string(), false),
            set(&["Drama"])
        );
    });
}

#[test]
fn sparql_refusals_name_the_construct() {
    with_kg(|kg| {
        let o = RenderOptions::default();
        let r = "<http://kgbox.local/r/has_genre>";
        let a = "<http://kgbox.local/e/Alien>";
        for (text, why) in [
            (
                "SELECT ?b WHERE { ?a ?p ?b }".to_string(),
                "variable predicate",
            ),
            (
                format!("SELECT ?b {{ {a} {r} ?b OPTIONAL {{ ?b {r} ?c }} }}"),
                "OPTIONAL",
            ),
            (
                format!("SELECT ?a ?b {{ ?a {r} ?b . ?a {r} {a} }}"),
                "2 entity variables",
            ),
            (
                format!("SELECT (COUNT(?b) AS ?n) {{ {a} {r} ?b }}"),
                "expressions in SELECT",
            ),
            (
                format!("CONSTRUCT {{ ?b {r} ?b }} WHERE {{ {a} {r} ?b }}"),
                "CONSTRUCT",
            ),
            (format!("SELECT ?b {{ {a} {r}+ ?b }}"), "*, + or ?"),
            (format!("SELECT ?b {{ ?a {r} ?b }}"), "unconstrained"),
            (
                format!("SELECT ?b {{ {a} {r} ?b FILTER(STRLEN(STR(?b)) > 2) }}"),
                "FILTER",
            ),
            (
                format!("SELECT ?b {{ {a} {r} ?b . ?b {r} ?c . ?c {r} ?b . ?c {r} {a} }}"),
                "cycle",
            ),
            ("SELECT ?b WHERE { LIMIT".to_string(), "syntax"),
            // A sub-query's modifiers would overwrite the query's own.
            (format!("SELECT ?b {{ {{ SELECT ?b {{ {a} {r} ?b }} LIMIT 2 }} }} LIMIT 10 OFFSET 1"), "sub-queries"),
            // ?p is shared with the UNION too: no single variable joins them.
            (format!("SELECT ?m {{ {{ ?m {r} ?p . ?p {r} {a} }} UNION {{ ?m {r} {a} }} FILTER EXISTS {{ ?m {r} ?p . ?p {r} {a} }} }}"), "exactly one"),
            (format!("SELECT ?b {{ {a} {r} ?b FILTER({}?b = {a}{}) }}", "(".repeat(200), ")".repeat(200)), "nest deeper"),
            (format!("SELECT ?b {{ {a} {r} ?b {} }}", "{ }".repeat(3).replace("{ }", &"{".repeat(70))), "nest deeper"),
        ] {
            let err = from_sparql(kg, &text, &o)
                .map(|_| ())
                .expect_err(&text)
                .to_string();
            assert!(err.contains(why), "{text}: {err}");
            assert!(!err.contains("Word("), "{text}: Debug output in {err}");
        }
    });
}

#[test]
fn nested_negations_are_refused_before_the_parser_doubles_its_work() {
    with_kg(|kg| {
        let o = RenderOptions::default();
        let r = "<http://kgbox.local/r/has_genre>";
        let a = "<http://kgbox.local/e/Alien>";
        let nested = |n: usize| {
            format!(
                "SELECT ?b {{ {a} {r} ?b FILTER({}?b = {a}{}) }}",
                "(!".repeat(n),
                ")".repeat(n)
            )
        };
        // The fuzz input that parsed for minutes: unclosed `(!`, then junk.
        let fuzzed = format!("SELECT {} (\"\\\\u\")\0\0,", "(!".repeat(30));
        for text in [nested(13), nested(40), fuzzed] {
            let err = from_sparql(kg, &text, &o)
                .map(|_| ())
                .expect_err(&text)
                .to_string();
            assert!(err.contains("more than 12 negations"), "{text}: {err}");
        }
        // Up to the limit, and with any number of `!=` or quoted `!`, the
        // text reaches the parser (which may refuse it for its own reasons).
        let at_limit = nested(12);
        let not_equal = format!(
            "SELECT ?b {{ {a} {r} ?b FILTER({}) }}",
            vec![format!("?b != {a}"); 20].join(" && ")
        );
        let quoted = format!(
            "SELECT ?b {{ {a} {r} ?b FILTER(?b != \"{}\") }}",
            "!".repeat(20)
        );
        for text in [at_limit, not_equal, quoted] {
            if let Err(e) = from_sparql(kg, &text, &o) {
                assert!(!e.to_string().contains("negations"), "{text}: {e}");
            }
        }
    });
}

#[test]
fn long_chains_are_refused_not_recursed() {
    with_kg(|kg| {
        let hops: String = (0..5000)
            .map(|i| format!("?v{i} <http://kgbox.local/r/has_genre> ?v{} . ", i + 1))
            .collect();
        let q = format!("SELECT ?v0 {{ {hops} ?v5000 <http://kgbox.local/r/has_genre> <http://kgbox.local/e/Alien> }}");
        let err = from_sparql(kg, &q, &RenderOptions::default())
            .map(|_| ())
            .expect_err("refused");
        assert!(err.to_string().contains("further than"), "{err}");
    });
}

#[test]
fn the_outermost_case_function_decides() {
    with_kg(|kg| {
        let q = "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> SELECT ?m { ?m <http://kgbox.local/r/has_genre> <http://kgbox.local/e/SciFi> ; rdfs:label ?n FILTER(LCASE(UCASE(?n)) = \"alien\") }";
        let q = from_sparql(kg, q, &RenderOptions::default()).unwrap();
        assert!(q.name_tests.iter().all(|t| t.matches("Alien")));
        assert!(!q.name_tests.iter().all(|t| t.matches("Blade Runner")));
    });
}

#[test]
fn cypher_reads_what_it_did_and_conditions() {
    let dsl = |q: &str| {
        from_cypher(q)
            .map(|q| q.to_string())
            .unwrap_or_else(|e| format!("ERR {e}"))
    };
    assert_eq!(
        dsl("MATCH (a:Entity {name: 'Blade Runner'})-[:directed_by]->(d)<-[:directed_by]-(m) RETURN DISTINCT m.name AS answer"),
        "\"Blade Runner\" -> directed_by -> directed_by_inv"
    );
    assert_eq!(
        dsl("MATCH (v1:Entity {name: 'A'}) MATCH (v1)<-[:r]-(x:Entity) WHERE x.name <> 'A' AND NOT EXISTS { MATCH (v2:Entity {name: 'B'}) MATCH (v2)<-[:s]-(x:Entity) } RETURN DISTINCT x.name AS answer"),
        "AND(\"A\" -> r_inv, NOT(\"A\"), NOT(\"B\" -> s_inv))"
    );
    assert_eq!(
        dsl("MATCH (a {name: 'A'})<-[:r]-(m) RETURN m UNION MATCH (b {name: 'B'})<-[:r]-(m) RETURN m"),
        "OR(\"A\" -> r_inv, \"B\" -> r_inv)"
    );
    // A long run of NOTs is a loop, not a recursion.
    let nots = format!(
        "MATCH (a {{name: 'A'}})<-[:r]-(m) WHERE {} m.name = 'B' RETURN m",
        "NOT ".repeat(100_001)
    );
    assert_eq!(dsl(&nots), "AND(\"A\" -> r_inv, NOT(\"B\"))");
    let deep = format!(
        "MATCH (a {{name: 'A'}})<-[:r]-(m) WHERE {}m.name = 'B'{} RETURN m",
        "(".repeat(100),
        ")".repeat(100)
    );
    assert!(dsl(&deep).contains("nest deeper"), "{}", dsl(&deep));
    for (q, why) in [
        ("MATCH (a)-[:r]->(b) RETURN b", "unconstrained"),
        (
            "MATCH (a {name: 'A'})-[:r*1..2]->(b) RETURN b",
            "relationship patterns",
        ),
        (
            "MATCH (a {name: 'A'})-[:r]->(b) WHERE b.x = 1 RETURN b",
            "condition",
        ),
        ("CREATE (a)", "only MATCH"),
        ("MATCH (a {name: 'A'})-[:r]-(b) RETURN b", "undirected"),
        (
            "MATCH (a {name: 'A'})-[:r]->(b) RETURN b LIMIT 3",
            "after RETURN",
        ),
    ] {
        let got = dsl(q);
        assert!(got.starts_with("ERR") && got.contains(why), "{q}: {got}");
        assert!(!got.contains("Word("), "{q}: {got}");
    }
}

/// Queries over the tiny graph: chains of one to three hops from each
/// entity, and ANDs, ORs and NOTs of them, that have answers.
fn generated(kg: &Kg<'_>) -> Vec<String> {
    let relations: Vec<String> = (0..kg.relation_count() as u32)
        .flat_map(|r| {
            let n = kg.relation_name(r).unwrap();
            [n.to_string(), format!("{n}_inv")]
        })
        .collect();
    let mut chains = Vec::new();
    for e in 0..kg.entity_count() as u32 {
        let name = kg.entity_name(e).unwrap();
        let mut frontier = vec![format!("{name:?}")];
        for _hop in 0..3 {
            let mut next = Vec::new();
            for q in &frontier {
                for r in &relations {
                    let c = format!("{q} -> {r}");
                    if !answers(kg, &c, true).is_empty() {
                        next.push(c);
                    }
                }
            }
            chains.extend(next.iter().cloned());
            frontier = next;
        }
    }
    let mut out = chains.clone();
    for (i, a) in chains.iter().enumerate().step_by(7) {
        let b = &chains[(i * 13 + 5) % chains.len()];
        out.push(format!("OR({a}, {b})"));
        out.push(format!("AND({a}, NOT({b}))"));
        let and = format!("AND({a}, {b})");
        if !answers(kg, &and, true).is_empty() {
            out.push(and);
        }
    }
    out
}

#[test]
fn every_rendered_query_reads_back_with_the_same_answers() {
    with_kg(|kg| {
        let limits = ParseLimits::default();
        let queries = generated(kg);
        assert!(queries.len() > 150, "{} queries", queries.len());
        let mut cypher_checked = 0;
        for dsl in &queries {
            let want = answers(kg, dsl, true);
            let o = RenderOptions::default();
            let sparql = render_text(kg, dsl, &limits, Language::Sparql, &o).unwrap();
            let got = sparql_answers(kg, &sparql).unwrap_or_else(|e| panic!("{sparql}: {e}"));
            assert_eq!(got, want, "{dsl}\n{sparql}");
            // Nested ORs have no openCypher form.
            if let Ok(cypher) = render_text(kg, dsl, &limits, Language::Cypher, &o) {
                let back = from_cypher(&cypher).unwrap_or_else(|e| panic!("{cypher}: {e}"));
                assert_eq!(
                    answers(kg, &back.to_string(), true),
                    want,
                    "{dsl}\n{cypher}"
                );
                cypher_checked += 1;
            }
        }
        assert!(cypher_checked * 2 > queries.len(), "{cypher_checked}");
    });
}
