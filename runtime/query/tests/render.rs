//! Cypher and SPARQL renderings of bound queries on the demo KB. Their
//! answers are checked against kuzu and Oxigraph by benches/peers/crosscheck.py.
#![allow(clippy::unwrap_used)]

use kgbox_bundle::{Limits, OwnedImage, PublicKey, TrustedKeys};
use kgbox_query::render::{render_text, Language, RenderError, RenderOptions, RenderTextError};
use kgbox_query::ParseLimits;

const DEMO: &[u8] = include_bytes!("../../../demo/demo.kgb");
const DEMO_KEY: &str = include_str!("../../../demo/DEMO-ONLY.pub");

fn render(q: &str, lang: Language, exclude_anchors: bool) -> Result<String, RenderTextError> {
    let keys = TrustedKeys::new(vec![PublicKey::parse(DEMO_KEY).unwrap()]);
    let image = OwnedImage::from_bundle_bytes(DEMO, &keys, &Limits::default()).unwrap();
    let kg = image.kg().unwrap();
    let opts = RenderOptions {
        exclude_anchors,
        ..Default::default()
    };
    render_text(&kg, q, &ParseLimits::default(), lang, &opts)
}

#[test]
fn a_chain_with_an_inverse_hop() {
    let q = "\"Malcolm X\" -> directed_by -> directed_by_inv";
    assert_eq!(
        render(q, Language::Cypher, true).unwrap(),
        "MATCH (v2:Entity {name: 'Malcolm X'}) MATCH (v2)-[:`directed_by`]->(v1:Entity) \
         MATCH (v1)<-[:`directed_by`]-(x:Entity) WHERE v1.name <> 'Malcolm X' AND x.name <> 'Malcolm X' \
         RETURN DISTINCT x.name AS answer"
    );
    assert_eq!(
        render(q, Language::Sparql, true).unwrap(),
        "SELECT DISTINCT ?x WHERE { VALUES ?v2 { <http://kgbox.local/e/Malcolm%20X> } \
         ?v2 <http://kgbox.local/r/directed_by> ?v1 . FILTER(?v1 != <http://kgbox.local/e/Malcolm%20X>) \
         ?x <http://kgbox.local/r/directed_by> ?v1 . FILTER(?x != <http://kgbox.local/e/Malcolm%20X>) }"
    );
    // With anchors kept, no inequality at all.
    let kept = render(q, Language::Cypher, false).unwrap();
    assert!(!kept.contains("<>"), "{kept}");
}

#[test]
fn and_not_or_and_their_limits() {
    let and_not =
        "AND(\"Spike Lee\" -> directed_by_inv, NOT(\"Denzel Washington\" -> starred_actors_inv))";
    let c = render(and_not, Language::Cypher, true).unwrap();
    assert!(
        c.contains("NOT EXISTS { MATCH (v2:Entity {name: 'Denzel Washington'})"),
        "{c}"
    );
    let s = render(and_not, Language::Sparql, true).unwrap();
    assert!(s.contains("MINUS { VALUES ?v2"), "{s}");
    // A NOT written first still comes after what it removes from.
    let not_first =
        "AND(NOT(\"Denzel Washington\" -> starred_actors_inv), \"Spike Lee\" -> directed_by_inv)";
    let s = render(not_first, Language::Sparql, true).unwrap();
    let minus = s.find("MINUS").unwrap();
    assert!(s.find("Spike%20Lee").unwrap() < minus, "{s}");

    let or = "OR(\"Spike Lee\" -> directed_by_inv, \"Denzel Washington\" -> starred_actors_inv)";
    assert_eq!(
        render(or, Language::Cypher, true)
            .unwrap()
            .matches(" UNION ")
            .count(),
        1
    );
    assert!(render(or, Language::Sparql, true)
        .unwrap()
        .contains("} UNION {"));
    // OR below the top has no single-query Cypher form here; SPARQL has one.
    let nested = format!("{or} -> release_year");
    assert_eq!(
        render(&nested, Language::Cypher, true).unwrap_err(),
        RenderTextError::Render(RenderError::NestedOrInCypher)
    );
    assert!(render(&nested, Language::Sparql, true).is_ok());
    // Unknown names are the same positioned errors as for running the query.
    let e = render("\"Nobody\" -> directed_by", Language::Sparql, true).unwrap_err();
    assert!(e.to_string().contains("unknown entity"), "{e}");
}

#[test]
fn names_are_escaped() {
    // A relation name with a backtick and an entity with a quote cannot come
    // from the demo, so check the escaping on what it has: spaces and
    // punctuation in IRIs.
    let s = render("\"Malcolm X\" -> release_year", Language::Sparql, true).unwrap();
    assert!(s.contains("<http://kgbox.local/e/Malcolm%20X>"), "{s}");
}
