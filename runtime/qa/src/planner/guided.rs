//! Guided LLM planning: the chat model is shown demonstrations retrieved
//! for the question and may only reply with a chain that binds.
//!
//! * **Retrieval.** The bundle's learned planner ranks its templates for the
//!   question; the [`DEMO_TEMPLATES`] most likely chain templates contribute
//!   their stored example questions nearest to this one, [`TOP_DEMOS`] of
//!   the most likely and one of each other, as question / reply pairs. The
//!   most likely come last, next to the question. Nearest is by the
//!   sentence encoder's vectors, which the packager stores for every
//!   demonstration (by shared words in bundles without them). When a
//!   demonstration of another chain template is nearer to the question
//!   than the most likely template's nearest, it is shown too (at most
//!   [`NEAREST_OTHER`]), whatever the planner thinks of its template.
//! * **Shortlist.** The relations of the most likely chain templates until
//!   their probabilities sum to [`NUCLEUS`] (at most
//!   [`SHORTLIST_TEMPLATES`]), and of the nearest other demonstrations,
//!   never the whole vocabulary: a sure planner leaves the model few
//!   relations, an unsure one more. No triple or answer is ever shown.
//! * **Constrained reply.** `{"topic": one of the linked entities, "path":
//!   [1 to MAX_HOPS shortlisted relations]}` as a JSON schema (a GBNF grammar
//!   for the local model, `response_format` for an OpenAI-compatible
//!   server), so a conforming reply is a chain query that binds. A reply
//!   that does not conform (a server that ignores the schema) is checked
//!   here and retried with the reason.

use std::collections::HashSet;

use serde_json::json;

use super::learned::{Demo, LearnedPlanner, Prediction};
use crate::llm::{Constraint, Message};

/// Templates whose demonstrations are shown: [`TOP_DEMOS`] of the most
/// likely one, one of each other.
pub const DEMO_TEMPLATES: usize = 3;
/// Demonstrations of the most likely template.
pub const TOP_DEMOS: usize = 2;
/// Templates whose relations are offered at most.
pub const SHORTLIST_TEMPLATES: usize = 8;
/// Probability mass of the templates whose relations are offered.
pub const NUCLEUS: f32 = 0.99;
/// Longest chain a reply may write.
pub const MAX_HOPS: usize = 3;
/// Demonstrations of templates outside the most likely ones that are shown
/// when they are nearer to the question than the most likely template's.
pub const NEAREST_OTHER: usize = 1;

const INSTRUCTION: &str =
    "Each question is about the entity in [brackets]. Reply with the topic entity \
and the path of relations from it that leads to the answers, as JSON.";

/// One demonstration: a question and the chain that answers it.
#[derive(Debug, Clone, PartialEq)]
pub struct Shown {
    pub question: String,
    pub topic: String,
    pub path: Vec<String>,
}

/// What the chat model is shown and may answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Guide {
    /// Least likely first.
    pub demos: Vec<Shown>,
    /// Names the reply may give as the topic.
    pub topics: Vec<String>,
    /// Relations the reply may follow.
    pub relations: Vec<String>,
    /// The most likely template's chain (empty when unknown): with the
    /// topic, the reply a local model checks first ([`Guide::draft`]).
    pub likely: Vec<String>,
}

/// The distinct words of `text` ([`super::features::words`]).
fn words(text: &str) -> HashSet<String> {
    super::features::words(text).into_iter().collect()
}

/// How near a stored demonstration is to the question: the cosine of
/// their sentence vectors when both are known, else the words they share.
struct Nearness<'a> {
    learned: &'a LearnedPlanner,
    vector: Option<&'a [f32]>,
    /// The question vector's length (the stored vectors are unit length).
    norm: f32,
    words: HashSet<String>,
}

impl Nearness<'_> {
    fn of(&self, i: usize, demo: &Demo) -> f32 {
        match (self.vector, self.learned.demo_vector(i)) {
            (Some(q), Some(v)) if q.len() == v.len() => {
                q.iter().zip(v).map(|(a, b)| a * b).sum::<f32>() / self.norm
            }
            _ => words(&demo.question).intersection(&self.words).count() as f32,
        }
    }

    /// The demos for which `keep(class)` holds with their nearness,
    /// nearest first (ties: stored order).
    fn ranked(&self, keep: impl Fn(usize) -> bool) -> Vec<(f32, usize)> {
        let demos = &self.learned.meta.demos;
        let mut scored: Vec<(f32, usize)> = demos
            .iter()
            .enumerate()
            .filter(|(_, d)| keep(d.class))
            .map(|(i, d)| (self.of(i, d), i))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored
    }
}

impl Guide {
    /// The guide for `question`, from the learned planner's predictions
    /// (most likely first), the masked question's sentence vector (when the
    /// planner made one) and the linked entities' names; `None` when no
    /// predicted template is a chain with a demonstration.
    pub fn new(
        learned: &LearnedPlanner,
        preds: &[Prediction],
        question: &str,
        vector: Option<&[f32]>,
        topics: Vec<String>,
    ) -> Option<Guide> {
        let norm = vector
            .map_or(1.0, |q| q.iter().map(|x| x * x).sum::<f32>().sqrt())
            .max(1e-12);
        let near = Nearness {
            learned,
            vector,
            norm,
            words: words(question),
        };
        let demos_of = &learned.meta.demos;
        let chain_of = |class: usize| learned.meta.templates.get(class)?.chain();
        // The nucleus: the most likely chain templates until their
        // probabilities sum to NUCLEUS (at least one, at most
        // SHORTLIST_TEMPLATES). A sure planner leaves one template's
        // relations; an unsure one offers more.
        let mut chains: Vec<(usize, Vec<&str>)> = Vec::new();
        let mut mass = 0.0;
        for p in preds {
            if chains.len() == SHORTLIST_TEMPLATES || mass >= NUCLEUS {
                break;
            }
            if let Some(path) = p.template.chain() {
                chains.push((p.class, path));
                mass += p.probability;
            }
        }
        let shown_classes: Vec<usize> = chains
            .iter()
            .take(DEMO_TEMPLATES)
            .map(|(c, _)| *c)
            .collect();
        // Most likely template first here: the list is reversed below.
        let mut picked: Vec<usize> = Vec::new();
        let mut top_nearness = f32::NEG_INFINITY;
        for (rank, class) in shown_classes.iter().enumerate() {
            let take = if rank == 0 { TOP_DEMOS } else { 1 };
            let nearest = near.ranked(|c| c == *class);
            if let (0, Some((s, _))) = (rank, nearest.first()) {
                top_nearness = *s;
            }
            picked.extend(nearest.into_iter().take(take).map(|(_, i)| i));
        }
        if picked.is_empty() || topics.is_empty() {
            return None;
        }
        // Demonstrations of other chain templates nearer than the most
        // likely template's go before the likely templates' (after the
        // reversal), their relations into the shortlist.
        let others: Vec<usize> = near
            .ranked(|c| !shown_classes.contains(&c) && chain_of(c).is_some())
            .into_iter()
            .take_while(|(s, _)| *s > top_nearness)
            .take(NEAREST_OTHER)
            .map(|(_, i)| i)
            .collect();
        for &i in &others {
            let class = demos_of[i].class;
            if !chains.iter().any(|(c, _)| *c == class) {
                if let Some(path) = chain_of(class) {
                    chains.push((class, path));
                }
            }
        }
        picked.reverse();
        let mut order = others;
        order.reverse();
        order.extend(picked);
        let demos = order
            .into_iter()
            .filter_map(|i| {
                let d = demos_of.get(i)?;
                Some(Shown {
                    question: d.question.clone(),
                    topic: d.topic.clone(),
                    path: chain_of(d.class)?.iter().map(|r| r.to_string()).collect(),
                })
            })
            .collect();
        let mut relations: Vec<String> = Vec::new();
        for (_, path) in &chains {
            for r in path {
                if !relations.iter().any(|x| x == r) {
                    relations.push(r.to_string());
                }
            }
        }
        let likely = chains
            .first()
            .map(|(_, path)| path.iter().map(|r| r.to_string()).collect())
            .unwrap_or_default();
        Some(Guide {
            demos,
            topics,
            relations,
            likely,
        })
    }

    /// The reply expected most: `topic` (the learned planner's, when it is
    /// one of the topics) and the most likely template's chain, as the
    /// constraint writes it.
    pub fn draft(&self, topic: &str) -> Option<String> {
        (!self.likely.is_empty() && self.topics.iter().any(|t| t == topic))
            .then(|| reply_json(topic, &self.likely))
    }

    /// The reply's JSON schema.
    pub fn constraint(&self) -> Constraint {
        Constraint::JsonSchema {
            name: "kgbox_chain".into(),
            schema: json!({
                "type": "object",
                "properties": {
                    "topic": {"type": "string", "enum": self.topics},
                    "path": {
                        "type": "array",
                        "items": {"type": "string", "enum": self.relations},
                        "minItems": 1,
                        "maxItems": MAX_HOPS,
                    },
                },
                "required": ["topic", "path"],
                "additionalProperties": false,
            }),
        }
    }

    /// The conversation: the instruction and vocabulary, each demonstration
    /// as a question and its reply, then the question. No system message
    /// (small local models do better without one).
    pub fn messages(&self, question: &str) -> Vec<Message> {
        let mut out = Vec::new();
        for (i, d) in self.demos.iter().enumerate() {
            let mut user = String::new();
            if i == 0 {
                user.push_str(INSTRUCTION);
                user.push_str("\nRelations: ");
                user.push_str(&self.relations.join(", "));
                user.push('\n');
            }
            user.push_str("Question: ");
            user.push_str(&d.question);
            out.push(Message::user(user));
            out.push(Message::assistant(reply_json(&d.topic, &d.path)));
        }
        out.push(Message::user(format!("Question: {question}")));
        out
    }

    /// The chain in a reply, checked against the topics and the shortlist.
    pub fn read(&self, reply: &str) -> Result<(String, Vec<String>), String> {
        let v: serde_json::Value = serde_json::from_str(reply.trim())
            .map_err(|_| "the reply is not a JSON object {\"topic\": ..., \"path\": [...]}")?;
        let topic = v
            .get("topic")
            .and_then(|t| t.as_str())
            .ok_or("the reply has no \"topic\" string")?;
        if !self.topics.iter().any(|t| t == topic) {
            return Err(format!(
                "the topic {topic:?} is not one of the entities: {}",
                self.topics.join(", ")
            ));
        }
        let path: Vec<String> = v
            .get("path")
            .and_then(|p| p.as_array())
            .ok_or("the reply has no \"path\" array")?
            .iter()
            .map(|r| {
                r.as_str()
                    .map(String::from)
                    .ok_or("a path item is not a string")
            })
            .collect::<Result<_, _>>()?;
        if path.is_empty() || path.len() > MAX_HOPS {
            return Err(format!("the path must have 1 to {MAX_HOPS} relations"));
        }
        if let Some(r) = path.iter().find(|r| !self.relations.contains(r)) {
            return Err(format!(
                "{r:?} is not one of the relations: {}",
                self.relations.join(", ")
            ));
        }
        Ok((topic.to_string(), path))
    }
}

/// A reply as the schema's grammar writes it (`topic` first).
pub fn reply_json(topic: &str, path: &[String]) -> String {
    let text = |v: serde_json::Value| v.to_string();
    format!(
        "{{\"topic\": {}, \"path\": {}}}",
        text(json!(topic)),
        text(json!(path))
    )
}

/// The DSL query of a chain: `"topic" -> r1 -> r2`.
pub fn chain_query(topic: &str, path: &[String]) -> String {
    let mut q = kgbox_query::Query::Entity {
        entity: kgbox_query::ast::EntityRef::Name(topic.to_string()),
        span: Default::default(),
    }
    .to_string();
    for r in path {
        q.push_str(" -> ");
        q.push_str(r);
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::features::FeatureSpec;
    use crate::planner::learned::PlannerMeta;

    fn planner() -> LearnedPlanner {
        let templates = [
            "{topic} -> directed_by",
            "{topic} -> directed_by -> directed_by_inv -> has_genre",
            "AND({topic} -> starred_actors, {topic} -> written_by)",
            "{topic} -> release_year",
        ];
        let demos = vec![
            Demo {
                class: 0,
                question: "who directed [Alien]".into(),
                topic: "Alien".into(),
            },
            Demo {
                class: 0,
                question: "the director of [Heat] is who".into(),
                topic: "Heat".into(),
            },
            Demo {
                class: 1,
                question: "what genres are the films by the director of [Heat]".into(),
                topic: "Heat".into(),
            },
            Demo {
                class: 2,
                question: "x [Y]".into(),
                topic: "Y".into(),
            },
        ];
        let spec = FeatureSpec {
            embed_dim: 0,
            ngram_buckets: 1,
            signature_buckets: 1,
        };
        let n = templates.len();
        let meta = PlannerMeta {
            demos,
            ..PlannerMeta::bare(spec, &templates)
        };
        LearnedPlanner::new(meta, vec![0.0; n * (spec.dim() + 1)]).expect("valid")
    }

    fn pred(p: &LearnedPlanner, class: usize, probability: f32) -> Prediction {
        Prediction {
            class,
            template: p.meta.templates[class].clone(),
            probability,
        }
    }

    #[test]
    fn demos_follow_the_predictions_and_the_shortlist_their_relations() {
        let p = planner();
        let preds = [
            pred(&p, 0, 0.6),
            pred(&p, 2, 0.2),
            pred(&p, 1, 0.1),
            pred(&p, 3, 0.1),
        ];
        let g = Guide::new(
            &p,
            &preds,
            "who was the director of [Blade Runner]",
            None,
            vec!["Blade Runner".into()],
        )
        .expect("a guide");
        // Chain templates only (class 2 is an AND), most likely last: two of
        // class 0, the one sharing more words ("the director of") last.
        let qs: Vec<&str> = g.demos.iter().map(|d| d.question.as_str()).collect();
        assert_eq!(
            qs,
            [
                "what genres are the films by the director of [Heat]",
                "who directed [Alien]",
                "the director of [Heat] is who"
            ]
        );
        assert_eq!(
            g.relations,
            [
                "directed_by",
                "directed_by_inv",
                "has_genre",
                "release_year"
            ]
        );
        let m = g.messages("who was the director of [Blade Runner]");
        assert_eq!(m.len(), 7);
        assert!(m.iter().all(|m| m.role != "system"));
        assert!(m[0]
            .content
            .contains("Relations: directed_by, directed_by_inv"));
        assert_eq!(
            m[5].content,
            r#"{"topic": "Heat", "path": ["directed_by"]}"#
        );
        assert_eq!(
            m[6].content,
            "Question: who was the director of [Blade Runner]"
        );
        // The draft: the topic and the likeliest chain; none for a name
        // the reply may not give.
        assert_eq!(g.likely, ["directed_by"]);
        assert_eq!(
            g.draft("Blade Runner").as_deref(),
            Some(r#"{"topic": "Blade Runner", "path": ["directed_by"]}"#)
        );
        assert_eq!(g.draft("Heat"), None);
        assert!(Guide::new(&p, &[pred(&p, 2, 1.0)], "x", None, vec!["Y".into()]).is_none());
        assert!(Guide::new(&p, &preds, "x", None, vec![]).is_none());
    }

    #[test]
    fn a_nearer_demo_of_another_template_is_shown_by_vectors() {
        // Two templates, a demo of each with a stored vector; the planner
        // is sure of the first.
        let spec = FeatureSpec {
            embed_dim: 2,
            ngram_buckets: 1,
            signature_buckets: 1,
        };
        let templates = ["{topic} -> directed_by", "{topic} -> has_genre"];
        let demos = vec![
            Demo {
                class: 0,
                question: "who directed [Alien]".into(),
                topic: "Alien".into(),
            },
            Demo {
                class: 1,
                question: "what kind of film is [Heat]".into(),
                topic: "Heat".into(),
            },
        ];
        let meta = PlannerMeta {
            demos,
            demo_vectors: true,
            demo_weight: 0.0,
            partial_hops: Vec::new(),
            ..PlannerMeta::bare(spec, &templates)
        };
        let mut w = vec![0.0; 2 * (spec.dim() + 1)];
        w.extend([1.0, 0.0, 0.0, 1.0]);
        let p = LearnedPlanner::new(meta, w).expect("valid");
        assert_eq!(p.demo_vector(1), Some(&[0.0, 1.0][..]));
        let preds = [pred(&p, 0, 0.99), pred(&p, 1, 0.01)];
        let topics = || vec!["Blade Runner".into()];
        // Near the genre demo (which shares no word with the question):
        // shown first, its relation offered.
        let q = "which genre is [Blade Runner]";
        let g = Guide::new(&p, &preds, q, Some(&[0.1, 2.0]), topics()).expect("a guide");
        let qs: Vec<&str> = g.demos.iter().map(|d| d.question.as_str()).collect();
        assert_eq!(qs, ["what kind of film is [Heat]", "who directed [Alien]"]);
        assert_eq!(g.relations, ["directed_by", "has_genre"]);
        // Nearer the director demo: the sure planner's template alone.
        let g = Guide::new(&p, &preds, q, Some(&[2.0, 0.1]), topics()).expect("a guide");
        assert_eq!(g.demos.len(), 1);
        assert_eq!(g.relations, ["directed_by"]);
        // A bundle without vectors: shared words ("film" is not in the
        // question, "directed" neither): no other demo is nearer.
        let g = Guide::new(&p, &preds, "who made [X]", None, topics()).expect("a guide");
        assert_eq!(g.relations, ["directed_by"]);
    }

    #[test]
    fn the_nearest_demo_reorders_a_synthesised_planner() {
        let spec = FeatureSpec {
            embed_dim: 2,
            ngram_buckets: 1,
            signature_buckets: 1,
        };
        let templates = ["{topic} -> directed_by", "{topic} -> has_genre"];
        let demo = |class, question: &str| Demo {
            class,
            question: question.into(),
            topic: "X".into(),
        };
        let meta = PlannerMeta {
            demos: vec![demo(0, "who directed [X]"), demo(1, "what genre is [X]")],
            demo_vectors: true,
            ..PlannerMeta::bare(spec, &templates)
        };
        let mut w = vec![0.0; 2 * (spec.dim() + 1)];
        w.extend([1.0, 0.0, 0.0, 1.0]);
        let mut p = LearnedPlanner::new(meta, w).expect("valid");
        let preds = || vec![pred(&p, 0, 0.7), pred(&p, 1, 0.3)];
        let near_genre = [0.0, 1.0];
        // Weight 0 (bundles packed with examples): the classifier alone.
        let same = p.by_nearest_demo(preds(), &near_genre);
        assert_eq!(same[0].class, 0);
        assert_eq!(same[0].probability, 0.7);
        p.set_demo_weight(3.0);
        let preds = vec![pred(&p, 0, 0.7), pred(&p, 1, 0.3)];
        let moved = p.by_nearest_demo(preds.clone(), &near_genre);
        // log 0.3 + 3 beats log 0.7 + 0: the genre template first.
        assert_eq!(moved[0].class, 1);
        let total: f32 = moved.iter().map(|m| m.probability).sum();
        assert!((total - 1.0).abs() < 1e-5, "{total}");
        assert!(moved[0].probability > 0.8, "{moved:?}");
        // Near the director demo: the classifier's choice stands.
        assert_eq!(p.by_nearest_demo(preds, &[1.0, 0.0])[0].class, 0);
        // Without stored vectors the weight is not taken.
        let mut bare = LearnedPlanner::new(
            PlannerMeta::bare(spec, &templates),
            vec![0.0; 2 * (spec.dim() + 1)],
        )
        .expect("valid");
        bare.set_demo_weight(3.0);
        assert_eq!(bare.meta.demo_weight, 0.0);
    }

    #[test]
    fn replies_are_checked_and_become_chain_queries() {
        let p = planner();
        let g = Guide::new(
            &p,
            &[pred(&p, 1, 1.0)],
            "q",
            None,
            vec!["Say \"Hi\"".into()],
        )
        .expect("a guide");
        let (t, path) = g
            .read(r#"{"topic": "Say \"Hi\"", "path": ["directed_by", "has_genre"]}"#)
            .expect("valid");
        assert_eq!(
            chain_query(&t, &path),
            r#""Say \"Hi\"" -> directed_by -> has_genre"#
        );
        kgbox_query::parse(&chain_query(&t, &path)).expect("parses");
        for (bad, why) in [
            ("nope", "not a JSON object"),
            (r#"{"path": ["has_genre"]}"#, "no \"topic\""),
            (
                r#"{"topic": "X", "path": ["has_genre"]}"#,
                "not one of the entities",
            ),
            (r#"{"topic": "Say \"Hi\"", "path": []}"#, "1 to 3"),
            (
                r#"{"topic": "Say \"Hi\"", "path": ["starred_actors"]}"#,
                "not one of the relations",
            ),
        ] {
            let e = g.read(bad).expect_err(bad);
            assert!(e.contains(why), "{bad}: {e}");
        }
        match g.constraint() {
            Constraint::JsonSchema { schema, .. } => {
                crate::llm::gbnf::json_schema_to_gbnf(&schema).expect("the grammar builds");
            }
            Constraint::None => panic!("a schema"),
        }
    }
}
