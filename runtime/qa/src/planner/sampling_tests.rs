//! An LLM's candidates are scored by their log-probability and by the answer
//! type the learned planner reads in the question.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::template::Template;
use super::{answer_type, score_answer_types, Candidate, Prediction};

fn pred(class: usize, template: &str, probability: f32) -> Prediction {
    Prediction {
        class,
        template: Template(template.into()),
        probability,
    }
}

fn candidate(query: &str, logprob: Option<f32>, votes: usize) -> Candidate {
    Candidate {
        query: query.into(),
        logprob,
        votes,
        score: None,
    }
}

#[test]
fn the_answer_type_sums_the_templates_that_end_in_a_relation() {
    let preds = [
        pred(
            0,
            "{topic} -> directed_by -> directed_by_inv -> release_year",
            0.5,
        ),
        pred(1, "{topic} -> release_year", 0.2),
        pred(2, "{topic} -> directed_by", 0.2),
        pred(3, "AND({topic} -> a, {topic} -> release_year)", 0.1),
    ];
    assert!((answer_type(&preds, "release_year") - 0.7).abs() < 1e-6);
    assert!((answer_type(&preds, "directed_by") - 0.2).abs() < 1e-6);
    assert_eq!(answer_type(&preds, "has_genre"), 0.0);
}

#[test]
fn a_likely_reply_of_the_wrong_answer_type_gives_way() {
    // "in which years were the films of [X] released": the model prefers
    // stopping at the films (ln p -1.0) over going on to their years
    // (-1.5), but the question asks for years (p 0.9 against 0.1).
    let preds = [
        pred(0, "{topic} -> directed_by_inv -> release_year", 0.9),
        pred(1, "{topic} -> directed_by_inv", 0.1),
    ];
    let mut c = vec![
        candidate("\"X\" -> directed_by_inv", Some(-1.0), 2),
        candidate("\"X\" -> directed_by_inv -> release_year", Some(-1.5), 1),
    ];
    score_answer_types(&mut c, &preds);
    assert_eq!(c[0].query, "\"X\" -> directed_by_inv -> release_year");
    let s = c[0].score.expect("scored");
    assert!((s - (-1.5 + 0.5 * 0.9f32.ln())).abs() < 1e-5, "{s}");
    // A far likelier reply keeps its place (the type only weighs in).
    let mut c = vec![
        candidate("\"X\" -> directed_by_inv", Some(-0.1), 1),
        candidate("\"X\" -> directed_by_inv -> release_year", Some(-6.0), 1),
    ];
    score_answer_types(&mut c, &preds);
    assert_eq!(c[0].query, "\"X\" -> directed_by_inv");
    // No predictions and no log-probabilities: votes decide, ties keep the
    // order they came in.
    let mut c = vec![
        candidate("\"X\" -> a", None, 1),
        candidate("\"X\" -> b", None, 2),
        candidate("\"X\" -> c", None, 2),
    ];
    score_answer_types(&mut c, &[]);
    let order: Vec<&str> = c.iter().map(|c| c.query.as_str()).collect();
    assert_eq!(order, ["\"X\" -> b", "\"X\" -> c", "\"X\" -> a"]);
}
