//! The LLM planner: ask for a query, check it (parse and bind against the
//! bundle, [`validate`]), and on an error ask again with the error message,
//! a bounded number of times.

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

/// What the LLM planner produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LlmPlan {
    pub query: String,
    /// Calls made (1 + retries).
    pub attempts: usize,
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

/// The graph's relations as the LLM sees them (names and descriptions), at
/// most `max`.
pub fn relations(kg: &Kg<'_>, max: usize) -> Vec<RelationInfo> {
    (0..kg.relation_count() as u32)
        .take(max)
        .filter_map(|r| {
            Some(RelationInfo {
                name: kg.relation_name(r)?.to_string(),
                description: kg.relation_description(r).map(String::from),
            })
        })
        .collect()
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
        max_retries,
        &|reply| extract_query(reply).and_then(|q| validate(&q).map(|()| q)),
    )
}

/// Asks `backend` with `messages` under `constraint`; `read` turns a reply
/// into a query or the reason it cannot be used, which is shown to the LLM
/// on the next of at most `max_retries` retries.
pub fn plan_with(
    backend: &dyn ChatBackend,
    mut messages: Vec<crate::llm::Message>,
    constraint: crate::llm::Constraint,
    max_retries: usize,
    read: &dyn Fn(&str) -> Result<String, String>,
) -> Result<LlmPlan, LlmPlanError> {
    let mut rejected = Vec::new();
    for attempt in 1..=max_retries + 1 {
        let reply = backend.complete(&ChatRequest {
            messages: messages.clone(),
            constraint: constraint.clone(),
            max_tokens: MAX_PLAN_TOKENS,
            temperature: 0.0,
            purpose: "plan",
        })?;
        match read(&reply) {
            Ok(query) => {
                return Ok(LlmPlan {
                    query,
                    attempts: attempt,
                    rejected,
                })
            }
            Err(error) => {
                messages.push(Message::assistant(reply.clone()));
                messages.push(retry_message(&error));
                rejected.push(Rejected { reply, error });
            }
        }
    }
    let last = rejected.last().map(|r| r.error.clone()).unwrap_or_default();
    Err(LlmPlanError::Invalid {
        attempts: max_retries + 1,
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
}
