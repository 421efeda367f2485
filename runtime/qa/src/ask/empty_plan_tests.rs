//! A learned plan that finds nothing gives way to the planner's next
//! template, end to end through [`crate::ask::ask`].
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kgbox_bundle::Kg;
use kgbox_query::exec::ExecOptions;
use kgbox_query::link::{link_text, LinkOptions, Mention};
use kgbox_query::{Answers, ParseLimits, QueryError};

use super::ask;
use crate::pipeline::{AskOptions, AskResult, Context, ExecSpec, PlannerKind, Stages};
use crate::planner::features::FeatureSpec;
use crate::planner::learned::{LearnedPlanner, PlannerMeta, FORMAT};
use crate::planner::template::Template;
use crate::rerank::test_graph::graph;

const FILMS: &[(&str, &str, &str)] = &[
    ("Alien", "directed_by", "Ridley Scott"),
    ("Blade Runner", "directed_by", "Ridley Scott"),
];

struct Plain<'a, 'k>(&'a Kg<'k>);

impl Stages for Plain<'_, '_> {
    fn link(&self, text: &str) -> Result<Vec<Mention>, String> {
        Ok(link_text(self.0, text, &LinkOptions::default()))
    }
    fn execute(&self, spec: &ExecSpec<'_>) -> Result<Answers, QueryError> {
        let exec = ExecOptions {
            top_k: spec.candidates,
            exclude_anchors: !spec.keep_anchors,
            ..ExecOptions::default()
        };
        kgbox_query::run_query(self.0, spec.query, &ParseLimits::default(), &exec).map(|(a, _)| a)
    }
}

/// Templates in the order the planner prefers them (by bias).
fn planner(templates: &[&str]) -> LearnedPlanner {
    let spec = FeatureSpec {
        embed_dim: 0,
        ngram_buckets: 4,
        signature_buckets: 2,
    };
    let dim = spec.dim();
    let mut weights = vec![0.0; templates.len() * (dim + 1)];
    for i in 0..templates.len() {
        weights[i * (dim + 1) + dim] = -(i as f32);
    }
    let meta = PlannerMeta {
        format: FORMAT,
        features: spec,
        templates: templates.iter().map(|t| Template(t.to_string())).collect(),
        answer_threshold: 0.5,
        keep_anchors: vec![],
        demos: vec![],
        heads: vec![],
        encoder: None,
        trained_on: 2,
        heldout_accuracy: None,
    };
    LearnedPlanner::new(meta, weights).expect("valid")
}

fn ask_learned(templates: &[&str], question: &str) -> AskResult {
    let learned = planner(templates);
    graph(FILMS, |kg| {
        let ctx = Context {
            kg,
            learned: Some(&learned),
            relvecs: None,
            embedder: None,
            chat: None,
            stages: &Plain(kg),
            reranker: None,
            name_similarity: None,
        };
        let opts = AskOptions {
            planner: PlannerKind::Learned,
            repair: false,
            ..AskOptions::default()
        };
        ask(&ctx, question, &opts).expect("answers")
    })
}

#[test]
fn an_empty_plan_gives_way_to_the_next_template() {
    // A director has no directed_by edges of their own: the second
    // template's query runs instead.
    let r = ask_learned(
        &["{topic} -> directed_by", "{topic} -> directed_by_inv"],
        "what did [Ridley Scott] make",
    );
    assert_eq!(r.query, "\"Ridley Scott\" -> directed_by_inv");
    assert_eq!(
        r.plan.found_nothing,
        vec!["\"Ridley Scott\" -> directed_by"]
    );
    let mut names: Vec<&str> = r.answers.iter().map(|a| a.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["Alien", "Blade Runner"]);

    // When no template finds anything, the first choice stands.
    let r = ask_learned(
        &["{topic} -> directed_by", "{topic} -> written_by"],
        "what did [Ridley Scott] make",
    );
    assert_eq!(r.query, "\"Ridley Scott\" -> directed_by");
    assert!(r.plan.found_nothing.is_empty());
    assert!(r.answers.is_empty());

    // A plan with answers is not second-guessed.
    let r = ask_learned(
        &["{topic} -> directed_by", "{topic} -> directed_by_inv"],
        "who directed [Alien]",
    );
    assert_eq!(r.query, "\"Alien\" -> directed_by");
    assert!(r.plan.found_nothing.is_empty());
}
