//! An LLM chooses among the path ranker's best plans: discriminate, don't
//! generate. The `llm` and `local` planners, on a bundle whose planner was
//! synthesised from the graph (or with none), do not write a query; they
//! are shown the ranker's best chains from the topic ([`CHOICES`] at most)
//! and may only reply with one of them (a JSON-schema enum: a GBNF grammar
//! for the local model), so even a 135M model writes a plan that binds.
//!
//! The model's probability of each chain is weighed in with the ranker's
//! score: `score + CHOICE_WEIGHT * ln p`, where the chains the sampled
//! replies did not choose share the probability the replies left over.
//! Demonstrations come from the learned planner's stored questions
//! ([`super::guided::Guide`]) when it has them: questions of the offered
//! chains, the ranker's best first, so that the model learns what each
//! option means rather than which one the planner prefers (the ranker's
//! score holds that already). When the model fails, the
//! ranker's plan stands and the plan's report says why.

use serde_json::json;

use super::guided::{Guide, Shown};
use super::learned::{LearnedPlanner, Prediction};
use super::llm::{self, Candidate, Tries};
use super::path_plan::PathCandidate;
use super::{NextQuery, PlanError, PlanRequest, Planned, Planners};
use crate::llm::{ChatBackend, Constraint, Message};

/// Chains the model chooses among, at most: those the ranker's plan
/// reports ([`super::PlanInfo::paths`], 5).
pub const CHOICES: usize = 5;
/// Weight of the model's log-probability of a chain against the ranker's
/// score.
pub const CHOICE_WEIGHT: f32 = 0.01;
/// The least probability a chain is scored with.
const CHOICE_FLOOR: f32 = 1e-3;

const INSTRUCTION: &str = "Each question is about the entity in [brackets]. \
Reply with the path of relations from it that leads to the answers, as JSON.";

/// A chain as the model reads and writes it: `written_by_inv -> directed_by`.
fn path_text(path: &[String]) -> String {
    path.join(" -> ")
}

/// The relations a chain query follows from its topic, as text (`None`
/// for a query that is not a chain).
fn chain_text(query: &str) -> Option<String> {
    let mut names = Vec::new();
    let mut q = kgbox_query::parse(query).ok()?;
    loop {
        match q {
            kgbox_query::Query::Project { relation, input } => {
                names.push(relation.name);
                q = *input;
            }
            kgbox_query::Query::Entity { .. } => break,
            _ => return None,
        }
    }
    names.reverse();
    Some(path_text(&names))
}

/// What the model is shown and may reply.
struct Choice {
    demos: Vec<Shown>,
    /// One text per offered chain, in the ranker's order.
    options: Vec<String>,
}

impl Choice {
    fn messages(&self, question: &str) -> Vec<Message> {
        let mut out = Vec::new();
        for (i, d) in self.demos.iter().enumerate() {
            let mut user = String::new();
            if i == 0 {
                user.push_str(INSTRUCTION);
                user.push('\n');
            }
            user.push_str("Question: ");
            user.push_str(&d.question);
            out.push(Message::user(user));
            out.push(Message::assistant(reply_json(&path_text(&d.path))));
        }
        let mut user = String::new();
        if self.demos.is_empty() {
            user.push_str(INSTRUCTION);
            user.push('\n');
        }
        user.push_str("Question: ");
        user.push_str(question);
        user.push_str("\nPaths: ");
        user.push_str(&self.options.join(" | "));
        out.push(Message::user(user));
        out
    }

    fn constraint(&self) -> Constraint {
        Constraint::JsonSchema {
            name: "kgbox_path_choice".into(),
            schema: json!({
                "type": "object",
                "properties": {"path": {"type": "string", "enum": self.options}},
                "required": ["path"],
                "additionalProperties": false,
            }),
        }
    }

    /// The offered chain a reply chose (its index, as text).
    fn read(&self, reply: &str) -> Result<String, String> {
        let v: serde_json::Value = serde_json::from_str(reply.trim())
            .map_err(|_| "the reply is not a JSON object {\"path\": ...}")?;
        let path = v
            .get("path")
            .and_then(|p| p.as_str())
            .ok_or("the reply has no \"path\" string")?;
        self.options
            .iter()
            .position(|o| o == path)
            .map(|i| i.to_string())
            .ok_or_else(|| {
                format!(
                    "{path:?} is not one of the paths: {}",
                    self.options.join(" | ")
                )
            })
    }
}

/// A reply as the local model writes it (`{"path": "..."}`, see
/// [`crate::llm::shape`]).
fn reply_json(path: &str) -> String {
    format!("{{\"path\": {}}}", json!(path))
}

/// The model's log-probability of each of `n` options from its candidates
/// (their queries are option indices): an option no reply chose shares
/// what the chosen ones left, at least [`CHOICE_FLOOR`].
fn option_logprobs(candidates: &[Candidate], n: usize) -> Vec<f32> {
    let replies: usize = candidates.iter().map(|c| c.votes).sum();
    let chosen: Vec<Option<f32>> = (0..n)
        .map(|i| {
            let c = candidates.iter().find(|c| c.query == i.to_string())?;
            Some(
                c.logprob
                    .unwrap_or_else(|| (c.votes as f32 / replies.max(1) as f32).ln()),
            )
        })
        .collect();
    let mass: f32 = chosen.iter().flatten().map(|lp| lp.exp()).sum();
    let unchosen = chosen.iter().filter(|c| c.is_none()).count().max(1);
    let rest = ((1.0 - mass).max(0.0) / unchosen as f32).max(CHOICE_FLOOR);
    chosen
        .into_iter()
        .map(|c| c.unwrap_or(rest.ln()).max(CHOICE_FLOOR.ln()))
        .collect()
}

/// The learned planner's templates of the `offered` chains, in the
/// ranker's order and equally likely: demonstrations then show what each
/// option means, not what the planner prefers (which the ranker's score
/// holds already).
fn offered_templates(learned: &LearnedPlanner, offered: &[String]) -> Vec<Prediction> {
    let share = 1.0 / offered.len().max(1) as f32;
    offered
        .iter()
        .filter_map(|text| {
            let (class, template) = learned
                .meta
                .templates
                .iter()
                .enumerate()
                .find(|(_, t)| t.chain().is_some_and(|c| c.join(" -> ") == *text))?;
            Some(Prediction {
                class,
                template: template.clone(),
                probability: share,
            })
        })
        .collect()
}

/// Reorders `planned` (the ranker's plan, with its best candidates in
/// `info.paths`) by the chat model's choice among them.
pub(super) fn choose(
    p: &Planners<'_, '_>,
    req: &PlanRequest<'_>,
    chat: &dyn ChatBackend,
    mut planned: Planned,
) -> Result<Planned, PlanError> {
    let kind = req.kind.chat().unwrap_or(req.kind);
    let offered: Vec<(PathCandidate, String)> = planned
        .info
        .paths
        .iter()
        .filter_map(|c| Some((c.clone(), chain_text(&c.query)?)))
        .take(CHOICES)
        .collect();
    if offered.len() < 2 {
        planned.info.fallback = Some(format!(
            "{} path(s) from the topic: {kind} was not asked",
            offered.len()
        ));
        return Ok(planned);
    }
    let topics: Vec<String> = req.linked.iter().map(|l| l.name.clone()).collect();
    let options: Vec<String> = offered.iter().map(|(_, t)| t.clone()).collect();
    let demos = p
        .learned
        .and_then(|l| {
            Guide::new(
                l,
                &offered_templates(l, &options),
                req.question,
                planned.question_vec.as_deref(),
                topics,
            )
        })
        .map(|g| g.demos)
        .unwrap_or_default();
    let choice = Choice { demos, options };
    let tries = Tries {
        max_retries: req.max_retries,
        samples: req.samples,
    };
    let read = |reply: &str| choice.read(reply);
    let chosen = match llm::plan_with(
        chat,
        choice.messages(req.question),
        choice.constraint(),
        tries,
        None,
        &read,
    ) {
        Ok(c) => c,
        Err(e) => {
            planned.info.fallback = Some(format!("{kind} failed, kept the ranker's plan: {e}"));
            return Ok(planned);
        }
    };
    let lps = option_logprobs(&chosen.candidates, offered.len());
    let mut order: Vec<(f32, usize)> = offered
        .iter()
        .zip(&lps)
        .enumerate()
        .map(|(i, ((c, _), lp))| (c.score + CHOICE_WEIGHT * lp, i))
        .collect();
    order.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut ranked = order.iter().map(|&(_, i)| NextQuery {
        query: offered[i].0.query.clone(),
        keep_anchors: offered[i].0.keep_anchors,
    });
    if let Some(best) = ranked.next() {
        planned.query = best.query;
        planned.keep_anchors = best.keep_anchors;
    }
    planned.next = ranked.take(super::NEXT_QUERIES).collect();
    planned.planner = kind;
    planned.info.guided = true;
    planned.info.attempts = Some(chosen.attempts);
    planned.info.replies = Some(chosen.replies);
    planned.info.rejected = chosen.rejected;
    planned.info.candidates = order
        .iter()
        .map(|&(score, i)| {
            let c = chosen.candidates.iter().find(|c| c.query == i.to_string());
            Candidate {
                query: offered[i].0.query.clone(),
                logprob: Some(lps[i]),
                votes: c.map_or(0, |c| c.votes),
                score: Some(score),
            }
        })
        .collect();
    planned.info.fallback = Some(format!(
        "{kind} chose among the ranker's {} best paths",
        offered.len()
    ));
    Ok(planned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unchosen_options_share_the_probability_left() {
        let c = |i: usize, p: f32| Candidate {
            query: i.to_string(),
            logprob: Some(p.ln()),
            votes: 1,
            score: None,
        };
        let lps = option_logprobs(&[c(0, 0.6), c(2, 0.2)], 4);
        let ps: Vec<f32> = lps.iter().map(|lp| lp.exp()).collect();
        for (got, want) in ps.iter().zip([0.6, 0.1, 0.2, 0.1]) {
            assert!((got - want).abs() < 1e-5, "{ps:?}");
        }
        // A sure model leaves the others the floor.
        let lps = option_logprobs(&[c(1, 1.0)], 3);
        assert!((lps[0] - CHOICE_FLOOR.ln()).abs() < 1e-5);
        assert!(lps[1].abs() < 1e-6);
    }

    #[test]
    fn demonstrations_are_of_the_offered_chains_in_the_rankers_order() {
        use crate::planner::fallback_tests::two_templates;
        // A planner sure of `pilot` (bias 5 on its first class).
        let l = two_templates(
            5.0,
            ["{topic} -> pilot", "{topic} -> pilot -> homeworld"],
            vec![],
        );
        let offered = ["pilot -> homeworld", "film", "pilot"].map(String::from);
        let shown = offered_templates(&l, &offered);
        let classes: Vec<usize> = shown.iter().map(|p| p.class).collect();
        // `film` is no template; the rest keep the ranker's order.
        assert_eq!(classes, [1, 0]);
        assert!(shown
            .iter()
            .all(|p| (p.probability - 1.0 / 3.0).abs() < 1e-6));
    }

    #[test]
    fn chains_are_read_as_relation_paths() {
        assert_eq!(
            chain_text(r#""A \"B\"" -> written_by_inv -> directed_by"#).as_deref(),
            Some("written_by_inv -> directed_by")
        );
        assert_eq!(chain_text("AND(a -> r, b -> s)"), None);
        let choice = Choice {
            demos: vec![],
            options: vec!["a".into(), "a -> b".into()],
        };
        assert_eq!(choice.read(r#"{"path": "a -> b"}"#), Ok("1".into()));
        assert!(choice.read(r#"{"path": "b"}"#).is_err());
        assert!(choice.read("a").is_err());
    }
}
