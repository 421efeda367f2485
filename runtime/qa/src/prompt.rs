//! What is said to an LLM. Only these functions build prompts, and they take
//! only what the privacy policy lets leave the box: the question, names of
//! linked entities, relation names and descriptions, candidate answers'
//! names and scores, and (only with `llm.share_context = true`) the
//! provenance paths of the candidates.

use serde_json::json;

use crate::llm::{Constraint, Message};

/// A relation as the LLM sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct RelationInfo {
    pub name: String,
    pub description: Option<String>,
}

/// A linked entity as the LLM sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct EntityInfo {
    /// As written in the question.
    pub mention: String,
    /// The graph's name.
    pub name: String,
}

/// A candidate answer as the LLM sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct CandidateInfo {
    pub name: String,
    pub score: f32,
    /// Provenance paths as text; sent only when context sharing is on.
    pub context: Vec<String>,
}

const DSL_GUIDE: &str =
    "You translate questions about a knowledge graph into queries in this language:\n\
- \"Entity Name\" -> relation : the entities reached from the entity over the relation.\n\
- Chains read left to right: \"Entity\" -> r1 -> r2.\n\
- relation_inv follows a relation backwards (from its tail to its head).\n\
- AND(q1, q2) intersects, OR(q1, q2) unites; NOT(q) only inside AND.\n\
Use only the listed relations and write entity names exactly as listed, in double quotes.";

/// The planner's request: the schema of its reply.
pub fn plan_constraint() -> Constraint {
    Constraint::JsonSchema {
        name: "kgbox_query".into(),
        schema: json!({
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
            "additionalProperties": false,
        }),
    }
}

/// The first planning messages.
pub fn plan_messages(
    question: &str,
    entities: &[EntityInfo],
    relations: &[RelationInfo],
) -> Vec<Message> {
    let mut user = String::new();
    user.push_str("Question: ");
    user.push_str(question);
    user.push_str("\nEntities in the question:\n");
    if entities.is_empty() {
        user.push_str("- (none found)\n");
    }
    for e in entities {
        user.push_str(&format!("- \"{}\" (written \"{}\")\n", e.name, e.mention));
    }
    user.push_str("Relations:\n");
    for r in relations {
        match &r.description {
            Some(d) => user.push_str(&format!("- {}: {}\n", r.name, d)),
            None => user.push_str(&format!("- {}\n", r.name)),
        }
    }
    user.push_str("Reply with JSON {\"query\": \"...\"} holding one query.");
    vec![Message::system(DSL_GUIDE), Message::user(user)]
}

/// The follow-up after an invalid query.
pub fn retry_message(error: &str) -> Message {
    Message::user(format!(
        "That query cannot be run: {error}\nReply with JSON {{\"query\": \"...\"}} holding a corrected query."
    ))
}

/// The arbitrator's reply schema.
pub fn arbitrate_constraint() -> Constraint {
    Constraint::JsonSchema {
        name: "kgbox_answers".into(),
        schema: json!({
            "type": "object",
            "properties": {"answers": {"type": "array", "items": {"type": "string"}}},
            "required": ["answers"],
            "additionalProperties": false,
        }),
    }
}

/// The arbitrator's messages: choose among the candidates.
pub fn arbitrate_messages(
    question: &str,
    candidates: &[CandidateInfo],
    share_context: bool,
) -> Vec<Message> {
    let mut user = format!("Question: {question}\nCandidate answers (name, score):\n");
    for c in candidates {
        user.push_str(&format!("- {} ({:.3})\n", c.name, c.score));
        if share_context {
            for path in &c.context {
                user.push_str(&format!("    because: {path}\n"));
            }
        }
    }
    user.push_str(
        "Choose the candidates that answer the question (one or more, names exactly as listed). \
         Reply with JSON {\"answers\": [\"...\"]}.",
    );
    vec![
        Message::system(
            "You pick the final answers to a question from candidates found in a knowledge graph.",
        ),
        Message::user(user),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_only_when_shared() {
        let c = [CandidateInfo {
            name: "Ridley Scott".into(),
            score: 1.0,
            context: vec!["Blade Runner -[directed_by]-> Ridley Scott".into()],
        }];
        let off = arbitrate_messages("who directed Blade Runner", &c, false);
        assert!(!off[1].content.contains("directed_by"));
        let on = arbitrate_messages("who directed Blade Runner", &c, true);
        assert!(on[1].content.contains("-[directed_by]->"));
    }

    #[test]
    fn plan_prompt_lists_entities_and_relations() {
        let m = plan_messages(
            "who directed [Alien]",
            &[EntityInfo {
                mention: "Alien".into(),
                name: "Alien".into(),
            }],
            &[RelationInfo {
                name: "directed_by".into(),
                description: Some("film to director".into()),
            }],
        );
        assert_eq!(m[0].role, "system");
        assert!(m[1].content.contains("- \"Alien\""));
        assert!(m[1].content.contains("- directed_by: film to director"));
    }
}
