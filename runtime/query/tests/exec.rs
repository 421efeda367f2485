//! The executor against a reference traversal of the demo KB's TSV.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeSet, HashMap};

use kgbox_bundle::{Kg, Limits, OwnedImage, PublicKey, TrustedKeys};
use kgbox_query::ast::{EntityRef, Query, RelationRef, Span};
use kgbox_query::bind::bind;
use kgbox_query::exec::{execute, ExecError, ExecOptions};

const DEMO: &[u8] = include_bytes!("../../../demo/demo.kgb");
const DEMO_KEY: &str = include_str!("../../../demo/DEMO-ONLY.pub");
const DEMO_TSV: &str = include_str!("../../../demo/movies.tsv");

fn demo() -> OwnedImage {
    let keys = TrustedKeys::new(vec![PublicKey::parse(DEMO_KEY).unwrap()]);
    OwnedImage::from_bundle_bytes(DEMO, &keys, &Limits::default()).unwrap()
}

fn e(name: &str) -> Query {
    Query::Entity {
        entity: EntityRef::Name(name.into()),
        span: Span::default(),
    }
}

fn p(q: Query, r: &str) -> Query {
    Query::Project {
        input: Box::new(q),
        relation: RelationRef {
            name: r.into(),
            span: Span::default(),
        },
    }
}

fn and(qs: Vec<Query>) -> Query {
    Query::And {
        operands: qs,
        span: Span::default(),
    }
}

fn or(qs: Vec<Query>) -> Query {
    Query::Or {
        operands: qs,
        span: Span::default(),
    }
}

fn not(q: Query) -> Query {
    Query::Not {
        operand: Box::new(q),
        span: Span::default(),
    }
}

/// Reference: adjacency from the TSV, both directions (`r_inv` for reverse).
fn adjacency() -> HashMap<(String, String), BTreeSet<String>> {
    let mut adj: HashMap<(String, String), BTreeSet<String>> = HashMap::new();
    for line in DEMO_TSV.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        adj.entry((f[0].into(), f[1].into()))
            .or_default()
            .insert(f[2].into());
        adj.entry((f[2].into(), format!("{}_inv", f[1])))
            .or_default()
            .insert(f[0].into());
    }
    adj
}

/// Reference chain traversal that never passes through the anchor again.
fn traverse(
    adj: &HashMap<(String, String), BTreeSet<String>>,
    anchor: &str,
    path: &[&str],
) -> BTreeSet<String> {
    let mut frontier: BTreeSet<String> = [anchor.to_string()].into();
    for r in path {
        let mut next = BTreeSet::new();
        for x in &frontier {
            if let Some(ts) = adj.get(&(x.clone(), r.to_string())) {
                next.extend(ts.iter().filter(|t| *t != anchor).cloned());
            }
        }
        frontier = next;
    }
    frontier
}

fn answer_names(kg: &Kg<'_>, q: &Query, opts: &ExecOptions) -> BTreeSet<String> {
    let plan = bind(kg, q, "").unwrap();
    let mut opts = opts.clone();
    opts.top_k = usize::MAX;
    execute(kg, &plan, &opts)
        .unwrap()
        .answers
        .iter()
        .map(|a| kg.entity_name(a.entity).unwrap().to_string())
        .collect()
}

#[test]
fn chains_match_the_reference_traversal() {
    let img = demo();
    let kg = img.kg().unwrap();
    let adj = adjacency();
    let opts = ExecOptions::default();
    let heads: BTreeSet<&str> = DEMO_TSV
        .lines()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    let paths: &[&[&str]] = &[
        &["directed_by"],
        &["starred_actors", "starred_actors_inv"],
        &["directed_by", "directed_by_inv", "release_year"],
        &["has_genre", "has_genre_inv", "in_language"],
        &["written_by", "written_by_inv", "starred_actors"],
    ];
    let mut non_empty = 0;
    for head in heads.iter().take(60) {
        for path in paths {
            let mut q = e(head);
            for r in *path {
                q = p(q, r);
            }
            let want = traverse(&adj, head, path);
            non_empty += usize::from(!want.is_empty());
            assert_eq!(answer_names(&kg, &q, &opts), want, "{head} {path:?}");
        }
    }
    assert!(non_empty > 100, "{non_empty}");
}

#[test]
fn scores_paths_and_anchor_exclusion() {
    let img = demo();
    let kg = img.kg().unwrap();
    let q = p(e("Blade Runner"), "directed_by");
    let plan = bind(&kg, &q, "").unwrap();
    let out = execute(&kg, &plan, &ExecOptions::default()).unwrap();
    assert_eq!(out.total, 1);
    let a = &out.answers[0];
    assert_eq!(kg.entity_name(a.entity), Some("Ridley Scott"));
    assert_eq!(a.score, 1.0);
    let br = kg.entity_id("Blade Runner").unwrap();
    let directed_by = kg.relation_id("directed_by").unwrap();
    assert_eq!(a.paths, vec![vec![[br, directed_by, a.entity]]]);

    // Two hops: every path runs anchor -> middle -> answer over real edges.
    let q = p(p(e("Ridley Scott"), "directed_by_inv"), "starred_actors");
    let plan = bind(&kg, &q, "").unwrap();
    let out = execute(
        &kg,
        &plan,
        &ExecOptions {
            top_k: 5,
            ..ExecOptions::default()
        },
    )
    .unwrap();
    let rs = kg.entity_id("Ridley Scott").unwrap();
    assert!(!out.answers.is_empty());
    for a in &out.answers {
        assert!(!a.paths.is_empty() && a.paths.len() <= 3);
        for path in &a.paths {
            assert_eq!(path.len(), 2);
            assert_eq!((path[0][2], path[0][0]), (rs, path[1][0]));
            assert_eq!(path[1][2], a.entity);
            assert!(kg
                .out
                .neighbours(path[1][0], path[1][1])
                .contains(&path[1][2]));
        }
    }

    // The anchor comes back only when asked for.
    let q = p(p(e("Ridley Scott"), "directed_by_inv"), "directed_by");
    assert!(!answer_names(&kg, &q, &ExecOptions::default()).contains("Ridley Scott"));
    let keep = ExecOptions {
        exclude_anchors: false,
        ..ExecOptions::default()
    };
    assert!(answer_names(&kg, &q, &keep).contains("Ridley Scott"));
    // ...and ranks below the answers reached without it: Ridley Scott is
    // reached only through himself, at half membership.
    let plan = bind(&kg, &q, "").unwrap();
    let out = execute(&kg, &plan, &keep).unwrap();
    let rs = kg.entity_id("Ridley Scott").unwrap();
    let own = out.answers.iter().find(|a| a.entity == rs).unwrap();
    assert!((own.score - kgbox_query::ANCHOR_WEIGHT).abs() < 1e-6);
    assert!(out.answers.iter().all(|a| a.entity == rs || a.score == 1.0));
}

#[test]
fn and_or_not_follow_set_semantics() {
    let img = demo();
    let kg = img.kg().unwrap();
    let opts = ExecOptions::default();
    let scott = p(e("Ridley Scott"), "directed_by_inv");
    let y1982 = p(e("1982"), "release_year_inv");
    let films = answer_names(&kg, &scott, &opts);
    let in_1982 = answer_names(&kg, &y1982, &opts);
    assert!(films.contains("Blade Runner") && in_1982.contains("Blade Runner"));
    let both = answer_names(&kg, &and(vec![scott.clone(), y1982.clone()]), &opts);
    assert_eq!(both, films.intersection(&in_1982).cloned().collect());
    let either = answer_names(&kg, &or(vec![scott.clone(), y1982.clone()]), &opts);
    assert_eq!(either, films.union(&in_1982).cloned().collect());
    let but_not = answer_names(&kg, &and(vec![scott.clone(), not(y1982.clone())]), &opts);
    assert_eq!(but_not, films.difference(&in_1982).cloned().collect());
    // OR of overlapping crisp sets keeps membership 1 (probabilistic sum).
    let plan = bind(&kg, &or(vec![scott.clone(), scott]), "").unwrap();
    let out = execute(&kg, &plan, &opts).unwrap();
    assert!(out.answers.iter().all(|a| (a.score - 1.0).abs() < 1e-6));
}

#[test]
fn probing_hubs_gives_the_same_answers() {
    let img = demo();
    let kg = img.kg().unwrap();
    let expand = ExecOptions {
        fanout_limit: usize::MAX,
        ..ExecOptions::default()
    };
    let probe = ExecOptions {
        fanout_limit: 0,
        ..ExecOptions::default()
    };
    let english = p(e("English"), "in_language_inv");
    let cases = vec![
        and(vec![
            p(e("Ridley Scott"), "directed_by_inv"),
            english.clone(),
        ]),
        and(vec![english.clone(), p(e("Drama"), "has_genre_inv")]),
        p(
            and(vec![
                p(e("Harrison Ford"), "starred_actors_inv"),
                english.clone(),
            ]),
            "directed_by",
        ),
        and(vec![
            english.clone(),
            not(p(e("1982"), "release_year_inv")),
            p(e("Drama"), "has_genre_inv"),
        ]),
    ];
    for q in cases {
        let a = answer_names(&kg, &q, &expand);
        assert_eq!(answer_names(&kg, &q, &probe), a, "{q}");
    }
    // The hub (Drama: 90 films in the demo) is probed, not expanded, even
    // when written first.
    let drama = p(e("Drama"), "has_genre_inv");
    let drama_films = answer_names(&kg, &drama, &expand).len();
    assert!(drama_films > 50, "{drama_films}");
    let q = and(vec![drama, p(e("Ridley Scott"), "directed_by_inv")]);
    let plan = bind(&kg, &q, "").unwrap();
    let out = execute(
        &kg,
        &plan,
        &ExecOptions {
            fanout_limit: 50,
            ..ExecOptions::default()
        },
    )
    .unwrap();
    assert!(out.edge_visits < 20, "{} edge visits", out.edge_visits);
    assert_eq!(out.total, answer_names(&kg, &q, &expand).len());
}

#[test]
fn budgets_and_unknown_names_are_errors() {
    let img = demo();
    let kg = img.kg().unwrap();
    let q = p(p(e("English"), "in_language_inv"), "has_tags");
    let plan = bind(&kg, &q, "").unwrap();
    let err = execute(
        &kg,
        &plan,
        &ExecOptions {
            max_edge_visits: 10,
            ..ExecOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(err, ExecError::Budget { limit: 10 });
    let past = std::time::Instant::now() - std::time::Duration::from_millis(1);
    let err = execute(
        &kg,
        &plan,
        &ExecOptions {
            deadline: Some(past),
            ..ExecOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(err, ExecError::Timeout);

    let d = bind(&kg, &p(e("Blade Runer"), "directed_by"), "").unwrap_err();
    assert!(d.suggestions.contains(&"Blade Runner".to_string()), "{d}");
    let d = bind(&kg, &p(e("Blade Runner"), "directed_byy"), "").unwrap_err();
    assert_eq!(
        d.suggestions.first().map(String::as_str),
        Some("directed_by"),
        "{d}"
    );
    let d = bind(&kg, &p(e("Blade Runner"), "directed_by_invv"), "").unwrap_err();
    assert!(
        d.suggestions.contains(&"directed_by_inv".to_string()),
        "{d}"
    );
}

/// A stand-in projection with fixed scores, to check how the executor
/// combines a learned projection with the KG (the real one is tested in
/// `kgbox-neural` and `tests/e2e/query/neural.rs`).
struct FixedScores(Vec<(u32, f32)>);

impl kgbox_query::Projector for FixedScores {
    fn project(
        &self,
        _x: &kgbox_query::fuzzy::FuzzySet,
        _relation: u32,
        _inverse: bool,
    ) -> Result<kgbox_query::fuzzy::FuzzySet, String> {
        Ok(kgbox_query::fuzzy::FuzzySet::from_pairs(
            self.0.clone(),
            100_000,
        ))
    }
}

#[test]
fn neural_and_hybrid_executors_combine_with_the_kg() {
    use kgbox_query::exec::{execute_with, Executor};
    use kgbox_query::Fusion;
    let img = demo();
    let kg = img.kg().unwrap();
    let q = p(e("Blade Runner"), "directed_by");
    let plan = bind(&kg, &q, "").unwrap();
    let ridley = kg.entity_id("Ridley Scott").unwrap();
    let ford = kg.entity_id("Harrison Ford").unwrap();
    let anchor = kg.entity_id("Blade Runner").unwrap();
    // The model prefers a wrong answer and also scores the anchor.
    let model = FixedScores(vec![(ford, 0.9), (ridley, 0.6), (anchor, 0.95)]);
    let opts = |executor| ExecOptions {
        executor,
        ..ExecOptions::default()
    };

    // Without a projector the learned executors are refused.
    let err = execute_with(&kg, &plan, &opts(Executor::Neural), None).unwrap_err();
    assert_eq!(err, ExecError::NoModel(Executor::Neural));

    let neural = execute_with(&kg, &plan, &opts(Executor::Neural), Some(&model)).unwrap();
    let ids: Vec<u32> = neural.answers.iter().map(|a| a.entity).collect();
    // The model's ranking, anchors removed.
    assert_eq!(ids, [ford, ridley]);

    let hybrid = execute_with(&kg, &plan, &opts(Executor::Hybrid), Some(&model)).unwrap();
    let ids: Vec<u32> = hybrid.answers.iter().map(|a| a.entity).collect();
    // The stated fact first, then the inferred one; the scores are the
    // default fusion's (the model's scores enter as logits).
    assert_eq!(ids, [ridley, ford]);
    let fusion = Fusion::default();
    assert!((hybrid.answers[0].score - fusion.membership(1.0, 0.6)).abs() < 1e-6);
    assert!((hybrid.answers[1].score - fusion.membership(0.0, 0.9)).abs() < 1e-6);
    assert!(hybrid.answers[1].score < 0.76 && hybrid.answers[0].score > 0.99);
    // The anchor the model also scored stays out, as in the other executors.
    assert!(!ids.contains(&anchor));
    // Only the stated answer has a provenance path.
    assert_eq!(hybrid.answers[0].paths.len(), 1);
    assert!(hybrid.answers[1].paths.is_empty());
}

#[test]
fn executor_names_round_trip() {
    use kgbox_query::exec::Executor;
    for e in Executor::ALL {
        assert_eq!(e.name().parse::<Executor>().unwrap(), e);
    }
    assert!("quantum".parse::<Executor>().is_err());
}
