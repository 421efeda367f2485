//! Path following (BYOKG-RAG's path retrieval): kgbox enumerates the
//! relation paths of length up to `max_path_length` that exist from each
//! linked entity (breadth first, shorter paths first, at most `max_paths`
//! per entity, hubs pruned), the LLM picks among their names, and the
//! picked paths' end entities become candidates.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use kgbox_bundle::Kg;
use kgbox_query::ast::{EntityRef, Query, RelationRef, Span};
use kgbox_query::exec::Answer;
use serde::Deserialize;

use super::walk::{hops_from, start, step, Budget, Hop, Reached};
use super::{parse_reply, Source, StrategyOptions, Yield};
use crate::llm::{ChatBackend, ChatRequest};
use crate::prompt::{self, EntityInfo, EntityPaths, RelationInfo};

/// One path that exists from a source, with what it reaches.
struct Offered {
    source: usize,
    hops: Vec<Hop>,
    /// `r1 -> r2`.
    text: String,
    reached: Reached,
}

/// The relation paths from `source` (at most `opts.max_paths`), each with
/// the entities it reaches other than the source.
fn enumerate(
    kg: &Kg<'_>,
    index: usize,
    source: u32,
    opts: &StrategyOptions,
    budget: &mut Budget,
) -> Vec<Offered> {
    let mut out = Vec::new();
    let mut queue: VecDeque<(Vec<Hop>, Reached)> = VecDeque::new();
    queue.push_back((Vec::new(), start(&[source])));
    while let Some((hops, frontier)) = queue.pop_front() {
        if hops.len() >= opts.max_path_length {
            continue;
        }
        for hop in hops_from(kg, frontier.keys().copied(), budget) {
            if out.len() >= opts.max_paths || budget.exhausted() {
                return out;
            }
            let s = step(kg, &frontier, &[hop], opts.fanout, budget);
            let mut path = hops.clone();
            path.push(hop);
            let next = s.frontier();
            let mut reached = s.reached;
            reached.remove(&source);
            if reached.is_empty() {
                continue;
            }
            let names: Option<Vec<String>> = path.iter().map(|h| h.name(kg)).collect();
            let Some(names) = names else { continue };
            if path.len() < opts.max_path_length && !next.is_empty() {
                queue.push_back((path.clone(), next));
            }
            out.push(Offered {
                source: index,
                hops: path,
                text: names.join(" -> "),
                reached,
            });
        }
    }
    out
}

/// A path in the query language, for the report.
fn as_query(kg: &Kg<'_>, source: &str, hops: &[Hop]) -> String {
    let mut q = Query::Entity {
        entity: EntityRef::Name(source.to_string()),
        span: Span::default(),
    };
    for h in hops {
        q = Query::Project {
            input: Box::new(q),
            relation: RelationRef {
                name: h.name(kg).unwrap_or_default(),
                span: Span::default(),
            },
        };
    }
    q.to_string()
}

#[derive(Deserialize)]
struct Reply {
    paths: Vec<String>,
}

/// Runs the path strategy. The candidates are ordered by how many of the
/// chosen paths reach them (their score is that share).
pub(super) fn run(
    kg: &Kg<'_>,
    chat: &dyn ChatBackend,
    question: &str,
    sources: &[Source],
    opts: &StrategyOptions,
) -> Yield {
    let mut y = Yield::default();
    let mut budget = Budget::new(opts.max_edge_visits);
    let offered: Vec<Offered> = sources
        .iter()
        .enumerate()
        .flat_map(|(i, s)| enumerate(kg, i, s.entity, opts, &mut budget))
        .collect();
    if offered.is_empty() {
        y.note = Some("no relation path leads from the question's entities".into());
        return y;
    }
    let mut lists: Vec<EntityPaths> = sources
        .iter()
        .map(|s| EntityPaths {
            name: s.name.clone(),
            paths: Vec::new(),
        })
        .collect();
    let mut used: BTreeSet<u32> = BTreeSet::new();
    for o in &offered {
        if let Some(l) = lists.get_mut(o.source) {
            l.paths.push(o.text.clone());
        }
        used.extend(o.hops.iter().map(|h| h.relation));
    }
    let relations: Vec<RelationInfo> = used
        .into_iter()
        .filter_map(|r| {
            Hop {
                relation: r,
                inverse: false,
            }
            .info(kg)
        })
        .collect();
    let entities: Vec<EntityInfo> = sources.iter().map(Source::info).collect();
    let choices: Vec<String> = offered
        .iter()
        .filter_map(|o| {
            let s = sources.get(o.source)?;
            Some(prompt::path_choice(&s.name, &o.text))
        })
        .collect();
    y.llm_calls += 1;
    let reply = chat.complete(&ChatRequest {
        messages: prompt::paths_messages(question, &entities, &lists, &relations),
        constraint: prompt::paths_constraint(&choices),
        max_tokens: 256,
        temperature: 0.0,
        purpose: "paths",
        draft: None,
    });
    let picked: Reply = match reply.and_then(|r| parse_reply(&r)) {
        Ok(p) => p,
        Err(e) => {
            y.error = Some(e);
            return y;
        }
    };
    let chosen: Vec<&Offered> = offered
        .iter()
        .zip(&choices)
        .filter(|(_, c)| picked.paths.iter().any(|p| p.trim() == c.as_str()))
        .map(|(o, _)| o)
        .collect();
    if chosen.is_empty() {
        y.note = Some("the LLM chose no path".into());
        return y;
    }
    let is_source = |e: &u32| sources.iter().any(|s| s.entity == *e);
    // entity -> (paths reaching it, first path).
    let mut hits: BTreeMap<u32, (usize, Vec<kgbox_query::exec::Triple>)> = BTreeMap::new();
    for o in &chosen {
        if let Some(s) = sources.get(o.source) {
            y.followed.push(as_query(kg, &s.name, &o.hops));
        }
        for (e, path) in &o.reached {
            if is_source(e) {
                continue;
            }
            hits.entry(*e).or_insert_with(|| (0, path.clone())).0 += 1;
        }
    }
    let n = chosen.len() as f32;
    let mut candidates: Vec<Answer> = hits
        .into_iter()
        .map(|(entity, (count, path))| Answer {
            entity,
            score: count as f32 / n,
            paths: vec![path],
        })
        .collect();
    candidates.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.entity.cmp(&b.entity)));
    y.candidates = candidates;
    y
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rerank::test_graph::graph;

    const FILMS: &[(&str, &str, &str)] = &[
        ("Alien", "directed_by", "Ridley Scott"),
        ("Blade Runner", "directed_by", "Ridley Scott"),
        ("Blade Runner", "written_by", "Philip K. Dick"),
        ("Philip K. Dick", "born_in", "Chicago"),
    ];

    #[test]
    fn enumerates_existing_paths_shortest_first() {
        graph(FILMS, |kg| {
            let br = kg.entity_id("Blade Runner").unwrap();
            let opts = StrategyOptions::default();
            let mut budget = Budget::new(1000);
            let texts: Vec<String> = enumerate(kg, 0, br, &opts, &mut budget)
                .into_iter()
                .map(|o| o.text)
                .collect();
            assert_eq!(
                texts,
                [
                    "directed_by",
                    "written_by",
                    "directed_by -> directed_by_inv",
                    "written_by -> born_in",
                ],
                "directed_by -> directed_by_inv reaches Alien; back to the source alone is dropped"
            );
            let short = StrategyOptions {
                max_paths: 1,
                ..opts
            };
            assert_eq!(enumerate(kg, 0, br, &short, &mut budget).len(), 1);
            assert_eq!(
                as_query(
                    kg,
                    "Say \"hi\"",
                    &[Hop {
                        relation: 0,
                        inverse: true
                    }]
                ),
                "\"Say \\\"hi\\\"\" -> born_in_inv"
            );
        });
    }
}
