//! Relations as the data and Wikidata's property table name and describe
//! them: a predicate's local name, or its label in the graph where the
//! local name says nothing (`wdt:P19`); the graph's own comment on a
//! predicate, else Wikidata's property table, as the relation's
//! description; an operator's description file above both.
#![allow(clippy::unwrap_used)]

mod common;

use common::{load, options, rel, test_key, write};
use kgbox_bundle::Kg;
use kgbox_pack::pack;

const GRAPH: &str = r#"@prefix ex: <http://ex.org/> .
@prefix wdt: <http://www.wikidata.org/prop/direct/> .
@prefix foaf: <http://xmlns.com/foaf/0.1/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
ex:ada rdfs:label "Ada" ; wdt:P19 ex:london ; foaf:based_near ex:uk ; ex:p7 ex:babbage ;
    ex:homeworld ex:earth ; ex:mentor ex:babbage ; ex:q9 ex:babbage ; ex:born "1815" .
ex:london rdfs:label "London" .
ex:uk rdfs:label "United Kingdom" .
ex:babbage rdfs:label "Charles Babbage" .
ex:earth rdfs:label "Earth" .
ex:p7 rdfs:label "Mitarbeiter"@de , "collaborator"@en .
ex:homeworld rdfs:comment "the planet a person comes from"@en , "der Heimatplanet"@de .
ex:mentor rdfs:label "mentor" ; skos:altLabel "teacher"@en , "adviser" , "Lehrer"@de .
ex:born rdfs:label "year of birth" .
"#;

fn description<'a>(kg: &Kg<'a>, name: &str) -> Option<&'a str> {
    kg.relation_description(rel(kg, name))
}

#[test]
fn relations_are_named_and_described_by_the_graph_and_wikidata() {
    let dir = tempfile::tempdir().unwrap();
    let ttl = write(dir.path(), "people.ttl", GRAPH);
    let out = dir.path().join("people.kgb");
    let report = pack(&options(&ttl), &test_key(), &out).unwrap();
    let note = report.notes.iter().find(|n| n.starts_with("relations: "));
    assert_eq!(
        note.map(String::as_str),
        Some(
            "relations: 1 named by their label in the graph and 1 by Wikidata's property \
             table (their IRIs' local names say nothing); 1 described by their comment in the \
             graph, 1 by their label and 1 by Wikidata's property table \
             (--relation-descriptions replaces any of them)"
        )
    );
    let loaded = load(&out, &test_key().public());
    let kg = loaded.kg();

    // Wikidata's opaque P19: its name and description from the property table.
    let born = rel(&kg, "place_of_birth");
    assert_eq!(
        kg.relation_iri(born),
        Some("http://www.wikidata.org/prop/direct/P19")
    );
    assert_eq!(
        description(&kg, "place_of_birth"),
        Some("the birth place of a person")
    );
    assert!(kg.relation_id("P19").is_none());
    // FOAF: the local name, and no description but its IRI.
    assert_eq!(kg.relation_gloss(rel(&kg, "based_near")), None);
    // An opaque local name with an English label in the graph takes the label.
    let p7 = rel(&kg, "collaborator");
    assert_eq!(kg.relation_iri(p7), Some("http://ex.org/p7"));
    // The graph's own English comment describes its predicate.
    assert_eq!(
        description(&kg, "homeworld"),
        Some("the planet a person comes from")
    );
    // A label that says more than the name describes it.
    assert_eq!(description(&kg, "born"), Some("year of birth"));
    // A label that only repeats the name says nothing: the IRI stays.
    assert_eq!(kg.relation_gloss(rel(&kg, "mentor")), None);
    // Opaque and unknown: the local name, described by nothing but its IRI.
    assert_eq!(kg.relation_gloss(rel(&kg, "q9")), None);
    // A predicate's English and language-less alternative labels are its
    // aliases; other languages are left out.
    let aliases = |r| {
        let mut a = kg.relation_aliases(rel(&kg, r)).collect::<Vec<_>>();
        a.sort_unstable();
        a
    };
    assert_eq!(aliases("mentor"), ["adviser", "teacher"]);
    assert!(aliases("homeworld").is_empty());
    assert!(report
        .notes
        .iter()
        .any(|n| n.starts_with("relation aliases: 1 relations have alternative labels")));
}

#[test]
fn an_operators_description_file_comes_first() {
    let dir = tempfile::tempdir().unwrap();
    let ttl = write(dir.path(), "people.ttl", GRAPH);
    let file = write(
        dir.path(),
        "relations.tsv",
        "based_near\tthe city a person lives in\nhomeworld\tthe home planet of a person\n",
    );
    let out = dir.path().join("people.kgb");
    let mut opts = options(&ttl);
    opts.relations = Some(file);
    pack(&opts, &test_key(), &out).unwrap();
    let loaded = load(&out, &test_key().public());
    let kg = loaded.kg();
    assert_eq!(
        description(&kg, "based_near"),
        Some("the city a person lives in")
    );
    assert_eq!(
        description(&kg, "homeworld"),
        Some("the home planet of a person")
    );
}
