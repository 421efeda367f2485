//! Triplet retrieval with the LLM choosing relations (BYOKG-RAG's agentic
//! retrieval, Algorithm 1, without the entity-selection half: entity names
//! reached stay in the box). Each step shows the LLM the names of the
//! relations leaving the current frontier (starting at the linked
//! entities); kgbox follows the chosen ones. It stops when the LLM says the
//! entities reached answer the question, chooses nothing, nothing is left
//! to expand, or `max_steps` steps are done. The entities reached by the
//! last step are the candidates.

use std::collections::BTreeSet;

use kgbox_bundle::Kg;
use kgbox_query::exec::Answer;
use serde::Deserialize;

use super::walk::{hops_from, start, step, Budget, Hop, Reached};
use super::{parse_reply, Source, StrategyOptions, Yield};
use crate::llm::{ChatBackend, ChatRequest};
use crate::prompt::{self, EntityInfo};

/// Facts shown per step at most (only with context sharing).
const MAX_FACTS: usize = 30;

#[derive(Deserialize)]
struct Reply {
    relations: Vec<String>,
    reached_answer: String,
}

/// The last triples of the paths to the frontier, as `head -[r]-> tail`.
fn facts(kg: &Kg<'_>, reached: &Reached) -> Vec<String> {
    let name = |e: u32| kg.entity_name(e).unwrap_or("?");
    reached
        .values()
        .filter_map(|p| p.last())
        .take(MAX_FACTS)
        .map(|&[h, r, t]| {
            format!(
                "{} -[{}]-> {}",
                name(h),
                kg.relation_name(r).unwrap_or("?"),
                name(t)
            )
        })
        .collect()
}

/// Runs the triplet strategy. `max_relations` bounds the relations listed
/// per step; `share_context` adds the facts reached so far to the prompt.
pub(super) fn run(
    kg: &Kg<'_>,
    chat: &dyn ChatBackend,
    question: &str,
    sources: &[Source],
    opts: &StrategyOptions,
    max_relations: usize,
    share_context: bool,
) -> Yield {
    let mut y = Yield::default();
    let mut budget = Budget::new(opts.max_edge_visits);
    let ids: Vec<u32> = sources.iter().map(|s| s.entity).collect();
    let entities: Vec<EntityInfo> = sources.iter().map(Source::info).collect();
    let mut frontier = start(&ids);
    let mut visited: BTreeSet<u32> = ids.iter().copied().collect();
    let mut steps: Vec<Vec<String>> = Vec::new();
    let mut last = Reached::new();
    for _ in 0..opts.max_steps {
        let hops: Vec<(Hop, crate::prompt::RelationInfo)> =
            hops_from(kg, frontier.keys().copied(), &mut budget)
                .into_iter()
                .filter_map(|h| Some((h, h.info(kg)?)))
                .take(max_relations.max(1))
                .collect();
        if hops.is_empty() {
            y.note = Some("no relation leads on from the entities reached".into());
            break;
        }
        let names: Vec<String> = hops.iter().map(|(_, i)| i.name.clone()).collect();
        let infos: Vec<_> = hops.iter().map(|(_, i)| i.clone()).collect();
        let shown = if share_context && !steps.is_empty() {
            facts(kg, &frontier)
        } else {
            Vec::new()
        };
        y.llm_calls += 1;
        let reply = chat
            .complete(&ChatRequest {
                messages: prompt::triplets_messages(question, &entities, &steps, &infos, &shown),
                constraint: prompt::triplets_constraint(&names),
                max_tokens: 256,
                temperature: 0.0,
                purpose: "triplets",
                draft: None,
            })
            .and_then(|r| parse_reply::<Reply>(&r));
        let reply = match reply {
            Ok(r) => r,
            Err(e) => {
                y.error = Some(e);
                break;
            }
        };
        let chosen: Vec<(Hop, String)> = hops
            .iter()
            .filter(|(_, i)| reply.relations.iter().any(|r| r.trim() == i.name))
            .map(|(h, i)| (*h, i.name.clone()))
            .collect();
        if chosen.is_empty() {
            y.note = Some(format!(
                "the LLM chose no relation at step {}",
                steps.len() + 1
            ));
            break;
        }
        let chosen_hops: Vec<Hop> = chosen.iter().map(|(h, _)| *h).collect();
        let s = step(kg, &frontier, &chosen_hops, opts.fanout, &mut budget);
        steps.push(chosen.into_iter().map(|(_, n)| n).collect());
        let mut next = s.frontier();
        next.retain(|e, _| !visited.contains(e));
        visited.extend(next.keys().copied());
        last = s.reached;
        if reply.reached_answer.trim().eq_ignore_ascii_case("yes") {
            break;
        }
        if s.truncated {
            y.note = Some("the edge budget ran out".into());
            break;
        }
        frontier = next;
        if frontier.is_empty() {
            break;
        }
    }
    y.followed = steps.iter().map(|s| s.join(", ")).collect();
    y.candidates = last
        .into_iter()
        .filter(|(e, _)| !ids.contains(e))
        .map(|(entity, path)| Answer {
            entity,
            score: 1.0,
            paths: vec![path],
        })
        .collect();
    y
}
