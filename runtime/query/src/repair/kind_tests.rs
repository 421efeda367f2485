//! Repairs that must not change the kind of a relation or answer with the
//! topic: a tiny organisation graph whose names are literal values, as a
//! bundle read from RDF has them (with source IRIs) and as one read from
//! TSV has them (without).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kgbox_bundle::kg::encode;
use kgbox_bundle::sections as s;
use kgbox_bundle::tiny::TinyGraph;
use kgbox_bundle::Kg;

use super::*;

/// Resources ([`RESOURCES`], with an IRI in the RDF reading) and literal
/// values (names, a year). `ACME` is Acme's name: the same normalized text
/// as the resource's own display name.
const TRIPLES: &[[&str; 3]] = &[
    ["Acme", "name", "ACME"],
    ["Acme", "located_in", "Springfield"],
    ["Acme", "employs", "Carol"],
    ["Carol", "name", "Carol C."],
    ["Globex", "name", "GLOBEX"],
    ["Globex", "located_in", "Springfield"],
    ["Globex", "member", "Alice"],
    ["Globex", "member", "Bob"],
    ["Alice", "name", "Alice A."],
    ["Alice", "born", "1990"],
    ["Bob", "name", "Bob B."],
    ["Springfield", "name", "Springfield town"],
    ["Initech", "name", "Initech Corp."],
    ["Dave", "name", "Dave D."],
    ["Dave", "knows", "Alice"],
    ["Dave", "knows", "Bob"],
    ["Dave", "likes", "Alice"],
    ["Dave", "likes", "Bob"],
    ["Erin", "name", "Erin E."],
    ["Erin", "likes", "chocolate"],
];

/// The entities that are resources (the others are literal values).
const RESOURCES: &[&str] = &[
    "Acme",
    "Alice",
    "Bob",
    "Carol",
    "Dave",
    "Erin",
    "Globex",
    "Initech",
    "Springfield",
];

/// Runs `f` on the graph read from RDF (`iris`) or from TSV.
fn with_org<T>(iris: bool, f: impl FnOnce(&Kg<'_>) -> T) -> T {
    let triples: Vec<(&str, &str, &str)> = TRIPLES.iter().map(|t| (t[0], t[1], t[2])).collect();
    let mut g = TinyGraph::from_triples(&triples).unwrap();
    if iris {
        let table: Vec<Option<String>> = {
            let kg = g.kg().unwrap();
            (0..kg.entity_count() as u32)
                .map(|id| {
                    let name = kg.entity_name(id).unwrap();
                    RESOURCES
                        .contains(&name)
                        .then(|| format!("http://example.org/{name}"))
                })
                .collect()
        };
        let enc = encode::iri_table(&table).unwrap();
        g.set_section(s::ENTITY_IRI_OFFSETS, &enc.offsets);
        g.set_section(s::ENTITY_IRI_TEXT, &enc.text);
        g.set_section(s::ENTITY_IRI_SORTED, &enc.sorted);
    }
    let kg = g.kg().unwrap();
    assert_eq!(kg.has_iris(), iris);
    f(&kg)
}

fn relax_with(kg: &Kg<'_>, q: &str, exec: &ExecOptions) -> RepairReport {
    let q = crate::parse(q).unwrap();
    relax(kg, &q, exec, &RepairOptions::default()).unwrap()
}

fn relax_text(kg: &Kg<'_>, q: &str) -> RepairReport {
    relax_with(kg, q, &ExecOptions::default())
}

fn ids(kg: &Kg<'_>, names: &[&str]) -> Vec<u32> {
    let mut v: Vec<u32> = names.iter().map(|n| kg.entity_id(n).unwrap()).collect();
    v.sort_unstable();
    v
}

#[test]
fn the_topic_is_the_anchors_and_their_namesakes_next_to_them() {
    for iris in [true, false] {
        with_org(iris, |kg| {
            let q = crate::parse(r#""ACME" -> member"#).unwrap();
            assert_eq!(topic(kg, &q), ids(kg, &["ACME", "Acme"]));
            let q = crate::parse(r#""Globex" -> member"#).unwrap();
            assert_eq!(topic(kg, &q), ids(kg, &["GLOBEX", "Globex"]));
            // Carol's name is not "Carol": only the anchor.
            let q = crate::parse(r#""Carol" -> employs_inv"#).unwrap();
            assert_eq!(topic(kg, &q), ids(kg, &["Carol"]));
        });
    }
}

#[test]
fn relax_never_answers_a_literal_anchor_with_its_resource() {
    for iris in [true, false] {
        with_org(iris, |kg| {
            // The observed failure: a question linked to the name's literal;
            // `member` finds nothing, and the only relation leaving the
            // literal is `name_inv`, back to the resource the literal names
            // (the topic). The literal is not what `member` leaves from.
            let r = relax_text(kg, r#""ACME" -> member"#);
            assert_eq!(r.repaired, None, "iris={iris} {r:?}");
            assert_eq!(r.answers_after, 0);
            assert!(r.edits.is_empty(), "{r:?}");
            assert_eq!(r.excluded, ids(kg, &["ACME", "Acme"]));
            // Its own relation reversed is tried, but answers the topic only.
            let r = relax_text(kg, r#""ACME" -> name"#);
            assert_eq!(r.repaired, None, "iris={iris} {r:?}");
            assert_eq!(r.candidates, 1, "{r:?}");
            // A name that is not the resource's own (no namesake): the
            // literal is still not what `member` leaves from, and `name_inv`
            // (whose targets look like members: type fit 1) is no repair.
            let r = relax_text(kg, r#""Initech Corp." -> member"#);
            assert_eq!(r.repaired, None, "iris={iris} {r:?}");
            assert_eq!(r.candidates, 0, "{r:?}");
        });
    }
}

#[test]
fn relax_never_swaps_an_entity_relation_for_a_literal_one_or_goes_back() {
    for iris in [true, false] {
        with_org(iris, |kg| {
            // Springfield has no members; leaving it there are only `name`
            // (a literal value) and `located_in_inv` (back the way the
            // query came: Acme itself, and Globex as a sibling). Carol, whom
            // Acme employs, has no members either.
            let r = relax_text(kg, r#""Acme" -> located_in -> member"#);
            assert_eq!(r.repaired, None, "iris={iris} {r:?}");
            assert_eq!(r.answers_after, 0);
            assert!(r.edits.is_empty(), "{r:?}");
            // Erin knows nobody; she likes chocolate, a literal value that
            // looks like what `knows` reaches (liked, type fit 1), but
            // `knows` reaches people.
            let r = relax_text(kg, r#""Erin" -> knows"#);
            assert_eq!(r.repaired, None, "iris={iris} {r:?}");
            assert_eq!(r.candidates, 0, "{r:?}");
            // Nor is a literal-valued relation replaced by an entity-valued
            // one: Carol has no birth date, and leaving her are her name (a
            // literal, but no date) and `employs_inv` (an entity).
            let r = relax_text(kg, r#""Carol" -> born"#);
            assert_eq!(r.repaired, None, "iris={iris} {r:?}");
        });
    }
}

#[test]
fn relax_still_replaces_a_relation_by_one_of_the_same_kind() {
    for iris in [true, false] {
        with_org(iris, |kg| {
            // Acme has no members but employs Carol, a person like Globex's
            // members (same kind, type fit 1); `name` reaches a literal.
            let r = relax_text(kg, r#""Acme" -> member"#);
            assert_eq!(
                r.repaired.as_deref(),
                Some(r#""Acme" -> employs"#),
                "iris={iris} {r:?}"
            );
            assert_eq!(r.answers_after, 1);
            assert!(r.edits[0].contains("type fit 1.00"), "{r:?}");
        });
    }
}

#[test]
fn a_policy_that_keeps_anchors_keeps_the_topic() {
    with_org(true, |kg| {
        let keep = ExecOptions {
            exclude_anchors: false,
            ..ExecOptions::default()
        };
        let r = relax_with(kg, r#""ACME" -> name"#, &keep);
        assert_eq!(r.repaired.as_deref(), Some(r#""ACME" -> name_inv"#));
        assert_eq!(r.answers_after, 1);
        assert!(r.excluded.is_empty(), "{r:?}");
    });
}

#[test]
fn run_repaired_reruns_without_the_topic() {
    with_org(true, |kg| {
        let limits = ParseLimits::default();
        let exec = ExecOptions::default();
        let opts = RepairOptions::default();
        let seen = std::cell::RefCell::new(Vec::new());
        let ran = crate::run_repaired(
            kg,
            r#""Acme" -> member"#,
            &limits,
            &exec,
            Some(crate::RepairSpec {
                options: &opts,
                with: &[],
            }),
            |text, exclude| {
                seen.borrow_mut().push(exclude.to_vec());
                let o = ExecOptions {
                    exclude: exclude.to_vec(),
                    ..exec.clone()
                };
                crate::run_query(kg, text, &limits, &o).map(|(a, _)| a)
            },
            |a| a.total,
        )
        .unwrap();
        assert_eq!(ran.query, r#""Acme" -> employs"#);
        assert_eq!(ran.outcome.total, 1);
        assert_eq!(*seen.borrow(), [vec![], ids(kg, &["ACME", "Acme"])]);
    });
}
