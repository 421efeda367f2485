//! Guided LLM planning: the chat model is shown demonstrations retrieved
//! for the question and may only reply with a chain that binds.
//!
//! * **Retrieval.** The bundle's learned planner ranks its templates for the
//!   question; the [`DEMO_TEMPLATES`] most likely chain templates contribute
//!   their stored example questions nearest to this one (by shared words),
//!   [`TOP_DEMOS`] of the most likely and one of each other, as question /
//!   reply pairs. The most likely come last, next to the question.
//! * **Shortlist.** The relations of the most likely chain templates until
//!   their probabilities sum to [`NUCLEUS`] (at most
//!   [`SHORTLIST_TEMPLATES`]), never the whole vocabulary: a sure planner
//!   leaves the model one template's relations, an unsure one more.
//!   Demonstrations come from these templates too. No triple or answer is
//!   ever shown.
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
}

fn words(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The demos of `class`, those sharing most words with `question` first
/// (ties: stored order).
fn nearest<'d>(demos: &'d [Demo], class: usize, question: &HashSet<String>) -> Vec<&'d Demo> {
    let mut scored: Vec<(usize, &Demo)> = demos
        .iter()
        .filter(|d| d.class == class)
        .map(|d| (words(&d.question).intersection(question).count(), d))
        .collect();
    scored.sort_by_key(|s| std::cmp::Reverse(s.0));
    scored.into_iter().map(|(_, d)| d).collect()
}

impl Guide {
    /// The guide for `question`, from the learned planner's predictions
    /// (most likely first) and the linked entities' names; `None` when no
    /// predicted template is a chain with a demonstration.
    pub fn new(
        learned: &LearnedPlanner,
        preds: &[Prediction],
        question: &str,
        topics: Vec<String>,
    ) -> Option<Guide> {
        let asked = words(question);
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
        let mut demos = Vec::new();
        for (rank, (class, path)) in chains.iter().take(DEMO_TEMPLATES).enumerate() {
            let take = if rank == 0 { TOP_DEMOS } else { 1 };
            // Nearest first here: the list is reversed below.
            for d in nearest(&learned.meta.demos, *class, &asked)
                .into_iter()
                .take(take)
            {
                demos.push(Shown {
                    question: d.question.clone(),
                    topic: d.topic.clone(),
                    path: path.iter().map(|r| r.to_string()).collect(),
                });
            }
        }
        if demos.is_empty() || topics.is_empty() {
            return None;
        }
        demos.reverse();
        let mut relations: Vec<String> = Vec::new();
        for (_, path) in &chains {
            for r in path {
                if !relations.iter().any(|x| x == r) {
                    relations.push(r.to_string());
                }
            }
        }
        Some(Guide {
            demos,
            topics,
            relations,
        })
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
        assert!(Guide::new(&p, &[pred(&p, 2, 1.0)], "x", vec!["Y".into()]).is_none());
        assert!(Guide::new(&p, &preds, "x", vec![]).is_none());
    }

    #[test]
    fn replies_are_checked_and_become_chain_queries() {
        let p = planner();
        let g =
            Guide::new(&p, &[pred(&p, 1, 1.0)], "q", vec!["Say \"Hi\"".into()]).expect("a guide");
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
