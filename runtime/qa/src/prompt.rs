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
        "That query cannot be run: {error}\nReply again in the same JSON form, corrected."
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
/// One line per candidate (name and score), with its provenance paths
/// when context sharing is on.
fn candidate_lines(candidates: &[CandidateInfo], share_context: bool) -> String {
    let mut out = String::new();
    for c in candidates {
        out.push_str(&format!("- {} ({:.3})\n", c.name, c.score));
        if share_context {
            for path in &c.context {
                out.push_str(&format!("    because: {path}\n"));
            }
        }
    }
    out
}

pub fn arbitrate_messages(
    question: &str,
    candidates: &[CandidateInfo],
    share_context: bool,
) -> Vec<Message> {
    let mut user = format!("Question: {question}\nCandidate answers (name, score):\n");
    user.push_str(&candidate_lines(candidates, share_context));
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

/// The relation paths that exist from one linked entity, as the path
/// strategy offers them (relation names only, never the entities reached).
#[derive(Debug, Clone, PartialEq)]
pub struct EntityPaths {
    /// The entity's name.
    pub name: String,
    /// Each path as `r1 -> r2`.
    pub paths: Vec<String>,
}

/// How one offered path is written in the prompt and chosen in the reply.
pub fn path_choice(entity: &str, path: &str) -> String {
    format!("{entity}: {path}")
}

/// A reply schema `{"FIELD": [one of `choices`, ...]}` (plus `extra`
/// string-enum fields), so constrained decoding can only name offered items.
fn choice_schema(
    name: &str,
    field: &str,
    choices: &[String],
    extra: &[(&str, &[&str])],
) -> Constraint {
    let mut properties = serde_json::Map::new();
    properties.insert(
        field.to_string(),
        json!({"type": "array", "items": {"type": "string", "enum": choices}}),
    );
    let mut required = vec![field.to_string()];
    for (key, values) in extra {
        properties.insert(key.to_string(), json!({"type": "string", "enum": values}));
        required.push(key.to_string());
    }
    Constraint::JsonSchema {
        name: name.into(),
        schema: json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        }),
    }
}

fn push_entities(user: &mut String, entities: &[EntityInfo]) {
    user.push_str("Entities in the question:\n");
    if entities.is_empty() {
        user.push_str("- (none found)\n");
    }
    for e in entities {
        user.push_str(&format!("- \"{}\" (written \"{}\")\n", e.name, e.mention));
    }
}

fn push_relations(user: &mut String, relations: &[RelationInfo]) {
    for r in relations {
        match &r.description {
            Some(d) => user.push_str(&format!("- {}: {}\n", r.name, d)),
            None => user.push_str(&format!("- {}\n", r.name)),
        }
    }
}

const EXPLORE_GUIDE: &str =
    "You answer questions by exploring a knowledge graph from the entities \
of the question. A relation leads from an entity to others; relation_inv follows a relation \
backwards (from its tail to its head).";

/// The path strategy's reply schema: the chosen `choices` (see [`path_choice`]).
pub fn paths_constraint(choices: &[String]) -> Constraint {
    choice_schema("kgbox_paths", "paths", choices, &[])
}

/// The path strategy's messages: choose, among the relation paths that
/// exist from the question's entities, those whose ends answer it.
/// `relations` describes the relations the paths use.
pub fn paths_messages(
    question: &str,
    entities: &[EntityInfo],
    offered: &[EntityPaths],
    relations: &[RelationInfo],
) -> Vec<Message> {
    let mut user = format!("Question: {question}\n");
    push_entities(&mut user, entities);
    user.push_str("Relation paths that exist from these entities:\n");
    for e in offered {
        for p in &e.paths {
            user.push_str(&format!("- {}\n", path_choice(&e.name, p)));
        }
    }
    if relations.iter().any(|r| r.description.is_some()) {
        user.push_str("The relations:\n");
        push_relations(&mut user, relations);
    }
    user.push_str(
        "Choose the paths (at most 3, written exactly as listed) whose end entities answer the \
         question. Reply with JSON {\"paths\": [\"...\"]}, an empty list if none does.",
    );
    vec![Message::system(EXPLORE_GUIDE), Message::user(user)]
}

/// The triplet strategy's reply schema: relations among `choices`, and
/// whether the entities they reach answer the question.
pub fn triplets_constraint(choices: &[String]) -> Constraint {
    choice_schema(
        "kgbox_relations",
        "relations",
        choices,
        &[("reached_answer", &["yes", "no"])],
    )
}

/// One step of the triplet strategy: the relations chosen at each earlier
/// step, the relations leaving the entities reached now, and (only with
/// context sharing; the caller passes none otherwise) facts found so far.
pub fn triplets_messages(
    question: &str,
    entities: &[EntityInfo],
    steps: &[Vec<String>],
    available: &[RelationInfo],
    facts: &[String],
) -> Vec<Message> {
    let mut user = format!("Question: {question}\n");
    push_entities(&mut user, entities);
    if steps.is_empty() {
        user.push_str("Followed so far: nothing; the exploration starts at these entities.\n");
    } else {
        user.push_str("Followed so far:\n");
        for (i, s) in steps.iter().enumerate() {
            user.push_str(&format!("- step {}: {}\n", i + 1, s.join(", ")));
        }
    }
    if !facts.is_empty() {
        user.push_str("Facts found so far:\n");
        for f in facts {
            user.push_str(&format!("- {f}\n"));
        }
    }
    user.push_str("Relations leading on from the entities reached:\n");
    push_relations(&mut user, available);
    user.push_str(
        "Choose the relations to follow next (names exactly as listed; an empty list if none \
         helps). Set \"reached_answer\" to \"yes\" if the entities reached by following them \
         answer the question, \"no\" if more steps are needed. Reply with JSON \
         {\"relations\": [\"...\"], \"reached_answer\": \"yes\"}.",
    );
    vec![Message::system(EXPLORE_GUIDE), Message::user(user)]
}

/// The final answer's reply schema: names among `names`, possibly none.
pub fn final_answer_constraint(names: &[String]) -> Constraint {
    choice_schema("kgbox_final_answer", "answers", names, &[])
}

/// The final answer's messages: choose among the candidates the
/// strategies gathered (their paths only when context is shared).
pub fn final_answer_messages(
    question: &str,
    candidates: &[CandidateInfo],
    share_context: bool,
) -> Vec<Message> {
    let mut user = format!(
        "Question: {question}\nCandidate answers found by exploring the knowledge graph from the \
         question's entities (name, score):\n"
    );
    user.push_str(&candidate_lines(candidates, share_context));
    user.push_str(
        "Choose the candidates that answer the question (names exactly as listed). Reply with \
         JSON {\"answers\": [\"...\"]}, an empty list if none does.",
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

    #[test]
    fn strategy_schemas_name_only_offered_items_and_make_grammars() {
        let choices = vec![path_choice("Alien", "directed_by -> directed_by_inv")];
        for c in [
            paths_constraint(&choices),
            triplets_constraint(&["directed_by".into(), "directed_by_inv".into()]),
            final_answer_constraint(&["Ridley Scott".into()]),
        ] {
            let Constraint::JsonSchema { schema, .. } = &c else {
                panic!("a schema")
            };
            let grammar = crate::llm::gbnf::json_schema_to_gbnf(schema).expect("grammar");
            assert!(grammar.contains("root ::="), "{grammar}");
        }
        let Constraint::JsonSchema { schema, .. } = paths_constraint(&choices) else {
            panic!("a schema")
        };
        assert_eq!(
            schema["properties"]["paths"]["items"]["enum"][0],
            "Alien: directed_by -> directed_by_inv"
        );
        let m = triplets_messages(
            "who directed [Alien]",
            &[],
            &[vec!["directed_by".into()]],
            &[RelationInfo {
                name: "directed_by_inv".into(),
                description: None,
            }],
            &[],
        );
        assert!(m[1].content.contains("- step 1: directed_by\n"));
        assert!(!m[1].content.contains("Facts found"));
        let c = [CandidateInfo {
            name: "Ridley Scott".into(),
            score: 1.0,
            context: vec!["Alien -[directed_by]-> Ridley Scott".into()],
        }];
        assert!(!final_answer_messages("q", &c, false)[1]
            .content
            .contains("-[directed_by]->"));
        assert!(final_answer_messages("q", &c, true)[1]
            .content
            .contains("-[directed_by]->"));
    }
}
