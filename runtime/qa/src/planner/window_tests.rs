//! The relation heads' window vectors: pooled from the question's one
//! encoder pass (`WindowVectors::Pooled`), or each window encoded alone in
//! bundles packed before pooling.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ops::Range;
use std::sync::Mutex;

use kgbox_query::dense::{EncodeError, TextEncoder};
use kgbox_query::link::Method;

use super::features::FeatureSpec;
use super::heads::{pooled_spans, HeadKind, HeadMeta, WindowVectors};
use super::learned::{LearnedPlanner, PlannerMeta};
use super::{plan, PathRanker, PlanError, PlanRequest, Planned, PlannerKind, Planners};
use crate::question::{mask, Topic};
use crate::rerank::test_graph::graph;

const FILMS: &[(&str, &str, &str)] = &[
    ("Alien", "directed_by", "Ridley Scott"),
    ("Alien", "release_year", "1979"),
];
const QUESTION: &str = "in which year did [Alien] come out";
const DIM: usize = 4;

/// Answers every call with unit vectors and records what it was asked.
#[derive(Default)]
struct Recording {
    texts: Mutex<Vec<Vec<String>>>,
    spans: Mutex<Vec<(String, Vec<Range<usize>>)>>,
    pools: bool,
}

fn unit() -> Vec<f32> {
    vec![0.5; DIM]
}

impl TextEncoder for Recording {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncodeError> {
        let texts: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
        let n = texts.len();
        self.texts.lock().unwrap().push(texts);
        Ok(vec![unit(); n])
    }
    fn dim(&self) -> usize {
        DIM
    }
    fn embed_spans(
        &self,
        items: &[(&str, Vec<Range<usize>>)],
    ) -> Result<Vec<Vec<Vec<f32>>>, EncodeError> {
        if !self.pools {
            return Err(EncodeError::NoSpans);
        }
        let mut out = Vec::new();
        for (text, spans) in items {
            self.spans
                .lock()
                .unwrap()
                .push((text.to_string(), spans.clone()));
            out.push(vec![unit(); spans.len() + 1]);
        }
        Ok(out)
    }
}

fn planner(windows: WindowVectors) -> LearnedPlanner {
    let spec = FeatureSpec {
        embed_dim: DIM,
        ngram_buckets: 4,
        signature_buckets: 2,
    };
    let templates = ["{topic} -> directed_by", "{topic} -> release_year"];
    let heads: Vec<HeadMeta> = HeadKind::ALL
        .iter()
        .map(|&kind| HeadMeta {
            kind,
            labels: vec!["directed_by".into(), "release_year".into()],
            weight: kind.default_weight(),
            heldout_accuracy: None,
        })
        .collect();
    // The template classifier and both heads, all weights zero but a bias
    // toward release_year.
    let mut weights = Vec::new();
    for _ in 0..1 + heads.len() {
        let mut rows = vec![0.0; 2 * (spec.dim() + 1)];
        rows[2 * (spec.dim() + 1) - 1] = 1.0;
        weights.extend(rows);
    }
    let meta = PlannerMeta {
        heads,
        window_vectors: windows,
        ..PlannerMeta::bare(spec, &templates)
    };
    LearnedPlanner::new(meta, weights).expect("valid")
}

fn run(windows: WindowVectors, embedder: &Recording) -> (Result<Planned, PlanError>, String) {
    graph(FILMS, |kg| {
        let entity = kg.entity_id("Alien").expect("entity");
        let range = (
            QUESTION.find('[').expect("bracket"),
            QUESTION.find(']').expect("bracket") + 1,
        );
        let topic = Topic {
            entity,
            name: "Alien".into(),
            mention: "Alien".into(),
            range,
            probability: 1.0,
            method: Method::Exact,
        };
        let learned = planner(windows);
        let planners = Planners {
            kg,
            learned: Some(&learned),
            relvecs: None,
            embedder: Some(embedder),
            steps: None,
            chat: None,
        };
        let req = PlanRequest {
            kind: PlannerKind::Learned,
            question: QUESTION,
            topic: Some(&topic),
            linked: &[],
            max_retries: 1,
            samples: 1,
            max_relations: 300,
            fallback_below: 0.8,
            paths_below: 0.8,
            paths: PathRanker::Off,
        };
        (plan(&planners, &req), mask(QUESTION, range))
    })
}

#[test]
fn pooled_windows_cost_one_encoder_pass_per_question() {
    let e = Recording {
        pools: true,
        ..Recording::default()
    };
    let (planned, masked) = run(WindowVectors::Pooled, &e);
    assert_eq!(planned.expect("a plan").query, "\"Alien\" -> release_year");
    assert!(e.texts.lock().unwrap().is_empty(), "no text embedded alone");
    let calls = e.spans.lock().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0, masked);
    assert_eq!(calls[0].1, pooled_spans(&masked));
    // The answer window starts at the question word, the topic window two
    // words before the topic.
    assert_eq!(&masked[calls[0].1[0].clone()], "which year did ENTITY");
    assert_eq!(&masked[calls[0].1[1].clone()], "year did ENTITY come out");
}

#[test]
fn windows_alone_are_three_texts_in_one_call() {
    let e = Recording::default();
    let (planned, masked) = run(WindowVectors::Alone, &e);
    assert_eq!(planned.expect("a plan").query, "\"Alien\" -> release_year");
    assert!(e.spans.lock().unwrap().is_empty());
    let calls = e.texts.lock().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0],
        vec![
            masked,
            HeadKind::Answer.window(&calls[0][0]),
            HeadKind::Topic.window(&calls[0][0]),
        ]
    );
}

#[test]
fn a_pooled_planner_needs_an_encoder_that_pools() {
    let e = Recording::default();
    let (planned, _) = run(WindowVectors::Pooled, &e);
    let err = planned.expect_err("no span vectors").to_string();
    assert!(err.contains("cannot pool spans"), "{err}");
}
