//! Repairs on a tiny hand-built movie graph.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kgbox_bundle::tiny::TinyGraph;
use kgbox_bundle::Kg;

use super::*;

const TRIPLES: &[[&str; 3]] = &[
    ["Alien", "directed_by", "Ridley Scott"],
    ["Alien", "has_genre", "SciFi"],
    ["Alien", "in_language", "English"],
    ["Blade Runner", "directed_by", "Ridley Scott"],
    ["Blade Runner", "written_by", "Hampton Fancher"],
    ["Blade Runner", "has_genre", "SciFi"],
    ["Blade Runner", "in_language", "English"],
    ["Thelma", "directed_by", "Ridley Scott"],
    ["Thelma", "has_genre", "Drama"],
    ["Airplane", "directed_by", "Zucker"],
    ["Airplane", "has_genre", "Comedy"],
    ["Wedding", "directed_by", "Kirk Jones"],
    ["Wedding", "written_by", "Joel Zwick"],
    ["Wedding", "in_language", "Greek"],
    ["Fuller House", "starred_actors", "Joel Zwick"],
];

fn with_kg<T>(f: impl FnOnce(&Kg<'_>) -> T) -> T {
    let triples: Vec<(&str, &str, &str)> = TRIPLES.iter().map(|t| (t[0], t[1], t[2])).collect();
    let g = TinyGraph::from_triples(&triples).unwrap();
    f(&g.kg().unwrap())
}

fn relax_text(kg: &Kg<'_>, q: &str, opts: &RepairOptions) -> RepairReport {
    let q = crate::parse(q).unwrap();
    relax(kg, &q, &ExecOptions::default(), opts).unwrap()
}

fn tighten_text(kg: &Kg<'_>, q: &str, with: &[&str], opts: &RepairOptions) -> RepairReport {
    let q = crate::parse(q).unwrap();
    let with: Vec<u32> = with.iter().map(|n| kg.entity_id(n).unwrap()).collect();
    tighten(kg, &q, &with, &ExecOptions::default(), opts).unwrap()
}

#[test]
fn relax_drops_an_and_operand() {
    with_kg(|kg| {
        let r = relax_text(
            kg,
            r#"AND("Ridley Scott" -> directed_by_inv, "Comedy" -> has_genre_inv)"#,
            &RepairOptions::default(),
        );
        assert_eq!(r.kind, RepairKind::Relax);
        assert_eq!(r.answers_before, 0);
        // Both drops have answers; the smaller relaxation (1 answer, not 3) wins.
        assert_eq!(r.repaired.as_deref(), Some(r#""Comedy" -> has_genre_inv"#));
        assert_eq!(
            r.edits,
            vec![r#"dropped AND operand 1: "Ridley Scott" -> directed_by_inv"#]
        );
        assert_eq!(r.answers_after, 1);
        assert!(r.candidates >= 2 && !r.exhausted, "{r:?}");
    });
}

#[test]
fn relax_drops_a_not() {
    with_kg(|kg| {
        let r = relax_text(
            kg,
            r#"AND("Ridley Scott" -> directed_by_inv, NOT("SciFi" -> has_genre_inv), NOT("Drama" -> has_genre_inv))"#,
            &RepairOptions::default(),
        );
        assert_eq!(
            r.repaired.as_deref(),
            Some(r#"AND("Ridley Scott" -> directed_by_inv, NOT("SciFi" -> has_genre_inv))"#)
        );
        assert_eq!(
            r.edits,
            vec![r#"dropped NOT operand 3: NOT("Drama" -> has_genre_inv)"#]
        );
        assert_eq!(r.answers_after, 1);
    });
}

#[test]
fn relax_replaces_a_relation_by_a_typed_neighbour() {
    with_kg(|kg| {
        // Joel Zwick directed nothing here, but wrote a film (which has a
        // director, so it is a film); he also starred in a show without one.
        let r = relax_text(
            kg,
            r#""Joel Zwick" -> directed_by_inv -> in_language"#,
            &RepairOptions::default(),
        );
        assert_eq!(
            r.repaired.as_deref(),
            Some(r#""Joel Zwick" -> written_by_inv -> in_language"#)
        );
        assert_eq!(
            r.edits,
            vec![
                r#"replaced relation directed_by_inv by written_by_inv in "Joel Zwick" -> directed_by_inv (type fit 1.00, support 1)"#
            ]
        );
        assert_eq!(r.answers_after, 1);
        // The show (no director: type fit 0) was never a candidate.
        assert_eq!(r.candidates, 1, "{r:?}");
        let strict = RepairOptions {
            max_alternatives: 0,
            ..RepairOptions::default()
        };
        let r = relax_text(
            kg,
            r#""Joel Zwick" -> directed_by_inv -> in_language"#,
            &strict,
        );
        assert_eq!(r.repaired, None);
        assert_eq!(r.answers_after, 0);
    });
}

#[test]
fn relax_reverses_a_relation_written_the_wrong_way() {
    with_kg(|kg| {
        let r = relax_text(
            kg,
            r#""Ridley Scott" -> directed_by"#,
            &RepairOptions::default(),
        );
        assert_eq!(
            r.repaired.as_deref(),
            Some(r#""Ridley Scott" -> directed_by_inv"#)
        );
        assert_eq!(r.answers_after, 3);
        assert!(r.edits[0].contains("type fit 0.50, support 3"), "{r:?}");
    });
}

#[test]
fn relax_searches_two_edits_deep() {
    with_kg(|kg| {
        let q =
            r#"AND("Comedy" -> has_genre_inv, "Drama" -> has_genre_inv, "SciFi" -> has_genre_inv)"#;
        let r = relax_text(kg, q, &RepairOptions::default());
        assert_eq!(r.repaired.as_deref(), Some(r#""Comedy" -> has_genre_inv"#));
        assert_eq!(
            r.edits,
            vec![
                r#"dropped AND operand 3: "SciFi" -> has_genre_inv"#,
                r#"dropped AND operand 2: "Drama" -> has_genre_inv"#,
            ]
        );
        let one = RepairOptions {
            max_edits: 1,
            ..RepairOptions::default()
        };
        let r = relax_text(kg, q, &one);
        assert_eq!(r.repaired, None);
        assert_eq!(r.candidates, 3);
    });
}

#[test]
fn relax_leaves_answered_queries_and_respects_limits() {
    with_kg(|kg| {
        let r = relax_text(kg, r#""Alien" -> directed_by"#, &RepairOptions::default());
        assert_eq!((r.repaired, r.answers_before, r.candidates), (None, 1, 0));
        let q =
            r#"AND("Comedy" -> has_genre_inv, "Drama" -> has_genre_inv, "SciFi" -> has_genre_inv)"#;
        let capped = RepairOptions {
            max_candidates: 2,
            ..RepairOptions::default()
        };
        let r = relax_text(kg, q, &capped);
        assert!(
            r.exhausted && r.repaired.is_none() && r.candidates == 2,
            "{r:?}"
        );
        let broke = RepairOptions {
            max_edge_visits: 1,
            ..RepairOptions::default()
        };
        let r = relax_text(kg, q, &broke);
        assert!(r.exhausted && r.repaired.is_none(), "{r:?}");
    });
}

#[test]
fn invalid_queries_are_errors() {
    with_kg(|kg| {
        let q = crate::parse(r#""Nobody" -> directed_by"#).unwrap();
        let e = relax(kg, &q, &ExecOptions::default(), &RepairOptions::default());
        assert!(matches!(e, Err(RepairError::Invalid(_))), "{e:?}");
        let e = repair_text(
            kg,
            "AND(",
            0,
            &[],
            &ParseLimits::default(),
            &ExecOptions::default(),
            &RepairOptions::default(),
        );
        assert!(matches!(e, Err(RepairError::Invalid(_))), "{e:?}");
    });
}

#[test]
fn tighten_with_a_supplied_entity() {
    with_kg(|kg| {
        let opts = RepairOptions {
            max_answers: 1,
            ..RepairOptions::default()
        };
        let r = tighten_text(
            kg,
            r#""Ridley Scott" -> directed_by_inv"#,
            &["Hampton Fancher"],
            &opts,
        );
        assert_eq!(r.kind, RepairKind::Tighten);
        assert_eq!(
            r.repaired.as_deref(),
            Some(r#"AND("Ridley Scott" -> directed_by_inv, "Hampton Fancher" -> written_by_inv)"#)
        );
        assert_eq!(
            r.edits,
            vec![
                r#"added AND operand "Hampton Fancher" -> written_by_inv (a supplied entity, keeps 1 of 3 answers)"#
            ]
        );
        assert_eq!((r.answers_before, r.answers_after), (3, 1));
        // Only supplied entities, and none given: nothing to add.
        let only = RepairOptions {
            tighten_shared: false,
            ..opts
        };
        let r = tighten_text(kg, r#""Ridley Scott" -> directed_by_inv"#, &[], &only);
        assert_eq!((r.repaired, r.candidates), (None, 0));
    });
}

#[test]
fn tighten_with_a_shared_constraint() {
    with_kg(|kg| {
        let opts = RepairOptions {
            max_answers: 2,
            ..RepairOptions::default()
        };
        let r = tighten_text(kg, r#""Ridley Scott" -> directed_by_inv"#, &[], &opts);
        // English and SciFi both keep Alien and Blade Runner; ties go by text.
        assert_eq!(
            r.repaired.as_deref(),
            Some(r#"AND("Ridley Scott" -> directed_by_inv, "English" -> in_language_inv)"#)
        );
        assert_eq!(r.answers_after, 2);
        // Under the threshold already: nothing to do.
        let r = tighten_text(kg, r#""Alien" -> directed_by"#, &[], &opts);
        assert_eq!((r.repaired, r.answers_before), (None, 1));
        // Only SciFi and English are shared (by two answers each): with
        // min_shared 3 nothing qualifies.
        let strict = RepairOptions {
            min_shared: 3,
            ..opts
        };
        let r = tighten_text(kg, r#""Ridley Scott" -> directed_by_inv"#, &[], &strict);
        assert_eq!(r.repaired, None);
    });
}

#[test]
fn repair_picks_the_direction() {
    with_kg(|kg| {
        let exec = ExecOptions::default();
        let q = crate::parse(r#""Ridley Scott" -> directed_by_inv"#).unwrap();
        let opts = RepairOptions::default();
        assert_eq!(repair(kg, &q, 3, &[], &exec, &opts).unwrap(), None);
        let tight = RepairOptions {
            tighten: true,
            max_answers: 2,
            ..opts.clone()
        };
        let r = repair(kg, &q, 3, &[], &exec, &tight).unwrap().unwrap();
        assert_eq!(r.kind, RepairKind::Tighten);
        let r = repair(kg, &q, 0, &[], &exec, &opts).unwrap().unwrap();
        assert_eq!(r.kind, RepairKind::Relax);
    });
}

#[test]
fn tree_helpers() {
    let q = crate::parse(r#"AND(a -> r, NOT(b -> s)) -> t"#).unwrap();
    let new = crate::parse("c").unwrap();
    let got = replace_at(&q, &[0, 1, 0, 0], &new).unwrap();
    assert_eq!(got.to_string(), r#"AND("a" -> r, NOT("c" -> s)) -> t"#);
    assert!(replace_at(&q, &[0, 5], &new).is_none());
    assert!(replace_at(&q, &[1], &new).is_none());
    assert_eq!(child(&q, 1), None);
}
