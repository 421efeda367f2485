//! The LLM planner: ask for a query, check it (parse and bind against the
//! bundle, [`validate`]), and on an error ask again with the error message,
//! a bounded number of times.
//!
//! Each attempt may ask for several replies ([`ChatBackend::sample`]: the
//! first greedy, the others sampled). The valid ones become
//! [`Candidate`]s, one per distinct query, ranked by the model's
//! log-probability of the replies that wrote it (then by how many did);
//! the caller reranks them further and runs them in order until one finds
//! answers (self-consistency by execution).

use kgbox_bundle::Kg;
use serde::Serialize;

use crate::llm::{ChatBackend, ChatRequest, LlmError, Message};
use crate::prompt::{plan_constraint, plan_messages, retry_message, EntityInfo, RelationInfo};

/// Longest reply asked for.
pub const MAX_PLAN_TOKENS: u32 = 256;

/// One rejected attempt.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rejected {
    pub reply: String,
    pub error: String,
}

/// One distinct query that valid replies wrote.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    pub query: String,
    /// ln of the summed probability of the distinct replies that wrote it
    /// (`None` when the backend reports no log-probabilities).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logprob: Option<f32>,
    /// Replies that wrote it.
    pub votes: usize,
    /// The final ranking score (the planner's: log-probability and answer
    /// type agreement), once ranked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f32>,
}

/// What the LLM planner produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LlmPlan {
    /// The best candidate's query.
    pub query: String,
    /// Every distinct valid query of the successful attempt, best first.
    pub candidates: Vec<Candidate>,
    /// Attempts made (1 + retries).
    pub attempts: usize,
    /// Replies received over all attempts.
    pub replies: usize,
    pub rejected: Vec<Rejected>,
}

#[derive(Debug, thiserror::Error)]
pub enum LlmPlanError {
    #[error(transparent)]
    Llm(#[from] LlmError),
    #[error("the LLM wrote no valid query in {attempts} attempts; the last error: {last}")]
    Invalid {
        attempts: usize,
        last: String,
        rejected: Vec<Rejected>,
    },
}

/// The query in a reply: `{"query": "..."}`, also when wrapped in prose or a
/// code fence.
pub fn extract_query(reply: &str) -> Result<String, String> {
    let parsed = serde_json::from_str::<serde_json::Value>(reply.trim())
        .ok()
        .or_else(|| {
            let start = reply.find('{')?;
            let end = reply.rfind('}')?;
            serde_json::from_str(reply.get(start..=end)?).ok()
        });
    match parsed {
        Some(v) => v
            .get("query")
            .and_then(|q| q.as_str())
            .map(|q| q.trim().to_string())
            .filter(|q| !q.is_empty())
            .ok_or_else(|| "the reply has no non-empty \"query\" string".to_string()),
        None => Err("the reply is not the JSON object {\"query\": \"...\"}".to_string()),
    }
}

/// The graph's relations as the LLM sees them (names, and descriptions
/// with the relation's aliases, [`described`]), at most `max`.
pub fn relations(kg: &Kg<'_>, max: usize) -> Vec<RelationInfo> {
    (0..kg.relation_count() as u32)
        .take(max)
        .filter_map(|r| {
            Some(RelationInfo {
                name: kg.relation_name(r)?.to_string(),
                description: described(kg, r),
            })
        })
        .collect()
}

/// Aliases shown to the LLM per relation, at most.
const SHOWN_ALIASES: usize = 8;

/// Relation `r`'s description with its aliases, as the LLM reads it: "the
/// director of a film (also: helmed, filmmaker)"; the aliases alone
/// without a description; `None` without either.
pub fn described(kg: &Kg<'_>, r: u32) -> Option<String> {
    let aliases: Vec<&str> = kg.relation_aliases(r).take(SHOWN_ALIASES).collect();
    let also = (!aliases.is_empty()).then(|| format!("also: {}", aliases.join(", ")));
    match (kg.relation_description(r), also) {
        (Some(d), Some(also)) => Some(format!("{d} ({also})")),
        (d, also) => d.map(String::from).or(also),
    }
}

/// Whether a query follows at least one relation (a bare entity, or a set
/// of entities, only answers the question with its own entities).
pub fn has_projection(q: &kgbox_query::Query) -> bool {
    use kgbox_query::Query;
    match q {
        Query::Entity { .. } => false,
        Query::Project { .. } => true,
        Query::And { operands, .. } | Query::Or { operands, .. } => {
            operands.iter().any(has_projection)
        }
        Query::Not { operand, .. } => has_projection(operand),
    }
}

/// Checks a planned query: it parses, follows a relation and binds against
/// `kg`; the error message is shown to the LLM.
pub fn validate(kg: &Kg<'_>, q: &str) -> Result<(), String> {
    let query = kgbox_query::parse(q).map_err(|d| d.to_string())?;
    if !has_projection(&query) {
        return Err(
            "the query follows no relation: write ENTITY -> relation (-> relation ...)".into(),
        );
    }
    kgbox_query::bind::bind(kg, &query, q)
        .map(|_| ())
        .map_err(|d| d.to_string())
}

/// Plans with `backend`. `validate` parses and binds a query, returning the
/// error message to show the LLM.
pub fn plan(
    backend: &dyn ChatBackend,
    question: &str,
    entities: &[EntityInfo],
    relations: &[RelationInfo],
    max_retries: usize,
    validate: &dyn Fn(&str) -> Result<(), String>,
) -> Result<LlmPlan, LlmPlanError> {
    plan_with(
        backend,
        plan_messages(question, entities, relations),
        plan_constraint(),
        Tries {
            max_retries,
            samples: 1,
        },
        None,
        &|reply| extract_query(reply).and_then(|q| validate(&q).map(|()| q)),
    )
}

/// How often [`plan_with`] asks.
#[derive(Debug, Clone, Copy)]
pub struct Tries {
    /// New attempts after an attempt with no valid reply.
    pub max_retries: usize,
    /// Replies asked for per attempt.
    pub samples: usize,
}

/// `ln(e^a + e^b)`.
fn log_add(a: f32, b: f32) -> f32 {
    let (hi, lo) = if a >= b { (a, b) } else { (b, a) };
    hi + (lo - hi).exp().ln_1p()
}

/// The distinct queries of `valid` (reply text, query, log-probability),
/// best first: by log-probability (summed over distinct replies), then
/// votes, then first appearance.
pub fn rank_candidates(valid: &[(String, String, Option<f32>)]) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    let mut seen_texts: Vec<&str> = Vec::new();
    for (text, query, logprob) in valid {
        let repeat = seen_texts.contains(&text.as_str());
        seen_texts.push(text);
        match out.iter_mut().find(|c| &c.query == query) {
            Some(c) => {
                c.votes += 1;
                // The same reply sampled twice is one outcome, not two.
                if !repeat {
                    c.logprob = match (c.logprob, logprob) {
                        (Some(a), Some(b)) => Some(log_add(a, *b)),
                        (a, b) => a.or(*b),
                    };
                }
            }
            None => out.push(Candidate {
                query: query.clone(),
                logprob: *logprob,
                votes: 1,
                score: None,
            }),
        }
    }
    // Stable: ties keep the order of appearance (the greedy reply first).
    out.sort_by(|a, b| {
        let lp = |c: &Candidate| c.logprob.unwrap_or(f32::NEG_INFINITY);
        lp(b).total_cmp(&lp(a)).then(b.votes.cmp(&a.votes))
    });
    out
}

/// Asks `backend` with `messages` under `constraint` for `tries.samples`
/// replies; `read` turns a reply into a query or the reason it cannot be
/// used. When no reply is valid, the first one's reason is shown to the LLM
/// on the next of at most `tries.max_retries` retries.
pub fn plan_with(
    backend: &dyn ChatBackend,
    mut messages: Vec<crate::llm::Message>,
    constraint: crate::llm::Constraint,
    tries: Tries,
    draft: Option<String>,
    read: &dyn Fn(&str) -> Result<String, String>,
) -> Result<LlmPlan, LlmPlanError> {
    let mut rejected = Vec::new();
    let mut replies = 0;
    for attempt in 1..=tries.max_retries + 1 {
        let request = ChatRequest {
            messages: messages.clone(),
            constraint: constraint.clone(),
            max_tokens: MAX_PLAN_TOKENS,
            temperature: 0.0,
            purpose: "plan",
            draft: draft.clone(),
        };
        let samples = backend.sample(&request, tries.samples.max(1))?;
        replies += samples.len();
        let mut valid = Vec::new();
        let mut first_error: Option<Rejected> = None;
        for s in samples {
            match read(&s.text) {
                Ok(query) => valid.push((s.text, query, s.logprob)),
                Err(error) => {
                    let r = Rejected {
                        reply: s.text,
                        error,
                    };
                    first_error.get_or_insert_with(|| r.clone());
                    rejected.push(r);
                }
            }
        }
        let candidates = rank_candidates(&valid);
        if let Some(best) = candidates.first() {
            return Ok(LlmPlan {
                query: best.query.clone(),
                candidates,
                attempts: attempt,
                replies,
                rejected,
            });
        }
        if let Some(r) = first_error {
            messages.push(Message::assistant(r.reply));
            messages.push(retry_message(&r.error));
        }
    }
    let last = rejected.last().map(|r| r.error.clone()).unwrap_or_default();
    Err(LlmPlanError::Invalid {
        attempts: tries.max_retries + 1,
        last,
        rejected,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    struct Scripted(Mutex<Vec<String>>, Mutex<Vec<ChatRequest>>);
    impl ChatBackend for Scripted {
        fn complete(&self, req: &ChatRequest) -> Result<String, LlmError> {
            self.1.lock().expect("lock").push(req.clone());
            let mut replies = self.0.lock().expect("lock");
            if replies.is_empty() {
                return Err(LlmError::BadReply("script ran out".into()));
            }
            Ok(replies.remove(0))
        }
        fn endpoint(&self) -> String {
            "scripted".into()
        }
    }

    #[test]
    fn the_llm_sees_a_relations_aliases_with_its_description() {
        let mut g = kgbox_bundle::tiny::TinyGraph::from_triples(&[
            ("Alien", "directed_by", "Ridley Scott"),
            ("Alien", "starred_actors", "Sigourney Weaver"),
        ])
        .expect("graph");
        g.set_relation_aliases(&[("directed_by", "helmed"), ("directed_by", "filmmaker")])
            .expect("aliases");
        let kg = g.kg().expect("kg");
        let seen = relations(&kg, 10);
        let of = |n: &str| {
            seen.iter()
                .find(|r| r.name == n)
                .and_then(|r| r.description.clone())
        };
        assert_eq!(
            of("directed_by").as_deref(),
            Some("also: helmed, filmmaker")
        );
        assert_eq!(of("starred_actors"), None);
    }

    #[test]
    fn a_query_must_follow_a_relation() {
        let q = |t: &str| kgbox_query::parse(t).expect("parses");
        assert!(!has_projection(&q("\"Blade Runner\"")));
        assert!(!has_projection(&q("OR(a, b)")));
        assert!(has_projection(&q("\"Blade Runner\" -> directed_by")));
        assert!(has_projection(&q("AND(a -> r, b)")));
    }

    #[test]
    fn extracts_queries_from_json_and_wrapped_json() {
        assert_eq!(
            extract_query(r#"{"query": " a -> r "}"#),
            Ok("a -> r".into())
        );
        assert_eq!(
            extract_query("Sure!\n```json\n{\"query\": \"a -> r\"}\n```"),
            Ok("a -> r".into())
        );
        assert!(extract_query("a -> r").is_err());
        assert!(extract_query(r#"{"query": ""}"#).is_err());
    }

    #[test]
    fn retries_with_the_error_then_succeeds_or_gives_up() {
        let backend = Scripted(
            Mutex::new(vec![
                "not json".into(),
                r#"{"query": "\"A\" -> nope"}"#.into(),
                r#"{"query": "\"A\" -> r"}"#.into(),
            ]),
            Mutex::new(vec![]),
        );
        let validate = |q: &str| {
            if q.ends_with("-> r") {
                Ok(())
            } else {
                Err(format!("unknown relation in {q}"))
            }
        };
        let p = plan(&backend, "q", &[], &[], 2, &validate).expect("third try works");
        assert_eq!(p.query, "\"A\" -> r");
        assert_eq!(p.attempts, 3);
        assert_eq!(p.rejected.len(), 2);
        let calls = backend.1.lock().expect("lock");
        let last = &calls[2].messages;
        assert!(last
            .last()
            .expect("message")
            .content
            .contains("unknown relation"));

        let backend = Scripted(Mutex::new(vec!["x".into(), "y".into()]), Mutex::new(vec![]));
        let e = plan(&backend, "q", &[], &[], 1, &validate).expect_err("gives up");
        assert!(
            matches!(e, LlmPlanError::Invalid { attempts: 2, .. }),
            "{e}"
        );
    }

    #[test]
    fn candidates_are_ranked_by_probability_then_votes() {
        let v = |t: &str, q: &str, lp: Option<f32>| (t.to_string(), q.to_string(), lp);
        // b: two distinct replies (0.3 + 0.2 = 0.5) beat a's one (0.4); the
        // repeated reply of c counts one vote more but no probability.
        let ranked = rank_candidates(&[
            v("ra", "a", Some(0.4f32.ln())),
            v("rb1", "b", Some(0.3f32.ln())),
            v("rb2", "b", Some(0.2f32.ln())),
            v("rc", "c", Some(0.05f32.ln())),
            v("rc", "c", Some(0.05f32.ln())),
        ]);
        let order: Vec<&str> = ranked.iter().map(|c| c.query.as_str()).collect();
        assert_eq!(order, ["b", "a", "c"]);
        assert!((ranked[0].logprob.expect("lp") - 0.5f32.ln()).abs() < 1e-5);
        assert_eq!(ranked[2].votes, 2);
        assert!((ranked[2].logprob.expect("lp") - 0.05f32.ln()).abs() < 1e-5);
        // Without log-probabilities: votes, then the first (greedy) reply.
        let ranked = rank_candidates(&[v("1", "x", None), v("2", "y", None), v("3", "y", None)]);
        assert_eq!(ranked[0].query, "y");
        let ranked = rank_candidates(&[v("1", "x", None), v("2", "y", None)]);
        assert_eq!(ranked[0].query, "x");
        assert!(rank_candidates(&[]).is_empty());
    }
}
