//! A question in, answers out: link → plan → execute (and repair) → the
//! retrieval strategies → rerank → arbitrate, each stage timed into
//! [`StageTimings`]. The caller supplies the stages that depend on how the
//! bundle is served ([`crate::pipeline::Stages`]); the functions below only
//! hand each stage its inputs from the [`Context`] and the options.

#[cfg(test)]
mod empty_plan_tests;
#[cfg(test)]
mod privacy_tests;
#[cfg(test)]
mod strategies_tests;
#[cfg(test)]
mod test_stages;

use std::time::Instant;

use kgbox_query::repair::RepairReport;
use kgbox_query::Answers;

use crate::answer_order;
use crate::arbitrate::{arbitrate, ArbitrateInput, Arbitrated, Arbitration};
use crate::confidence::judge;
use crate::pipeline::{
    ms, timed, AskError, AskOptions, AskResult, Context, ExecSpec, LinkedEntity, StageTimings,
};
use crate::planner::{self, answer_threshold, PlanRequest, Planned, PlannerKind, Planners};
use crate::query_repair::repair_found;
use crate::question::{choose_topic, linked_entities, Topic};
use crate::rerank::apply::{rerank_candidates, RerankInput, Reranked};
use crate::strategies::{after_query, FallThrough, FirstQuery, StrategyReport};

/// Answers `question`.
pub fn ask(
    ctx: &Context<'_, '_>,
    question: &str,
    opts: &AskOptions,
) -> Result<AskResult, AskError> {
    let t_all = Instant::now();
    let mut timings = StageTimings::default();
    let (topic, linked) = timed(&mut timings.link, || link(ctx, question))?;
    let t = topic.as_ref();
    let mut planned = timed(&mut timings.plan, || plan(ctx, opts, question, t, &linked))?;
    let (mut found, repair) = timed(&mut timings.execute, || {
        let noun = answer_noun(question, t);
        execute(ctx, opts, &mut planned, t, &linked, noun.as_deref())
    })?;
    let threshold = answer_threshold(ctx.learned);
    let first = FirstQuery {
        llm_calls: planned.info.attempts.unwrap_or(0),
        ms: timings.plan + timings.execute,
        threshold,
        topic: t.map(|t| t.entity),
        guided: planned.info.guided,
    };
    let (strategies, preset) = timed(&mut timings.strategies, || {
        fall_through(
            ctx,
            opts,
            question,
            &linked,
            planned.planner,
            first,
            &mut found,
        )
    });
    // Answers the strategies found skip the reranker and the arbitrator
    // (their final answer call chose them).
    let skip_rerank = preset.is_some();
    let question_vec = planned.question_vec.take();
    let reranked = timed(&mut timings.rerank, || {
        if skip_rerank {
            return Ok(Reranked::default());
        }
        rerank(ctx, opts, question, t, &linked, question_vec, &mut found)
    })?;
    let Arbitrated {
        answers,
        arbitration,
    } = timed(&mut timings.arbitrate, || {
        let input = ArbitrateInput {
            kg: ctx.kg,
            chat: ctx.chat.filter(|_| opts.llm_arbitrate),
            question,
            share_context: opts.share_context,
            top_k: opts.top_k,
            threshold,
            reranked: reranked.probabilities.as_ref(),
            preset,
        };
        arbitrate(input, &found)
    });
    // The repair's answers stand unless the strategies replaced them.
    let repaired = repair.as_ref().filter(|_| !skip_rerank);
    let best = answers.iter().map(|a| a.score).reduce(f32::max);
    let (confidence, caveat) = judge(best, repaired, opts.strategies.min_score);
    timings.total = ms(t_all);
    Ok(AskResult {
        answers,
        query: planned.query,
        topic,
        linked,
        planner: planned.planner,
        plan: planned.info,
        arbitration,
        rerank: reranked.info,
        features: reranked.features,
        repair,
        confidence,
        caveat,
        candidates: found.total,
        strategies,
        timings_ms: timings,
    })
}

/// Link: the question's mentions, its topic entity and linked entities.
fn link(
    ctx: &Context<'_, '_>,
    question: &str,
) -> Result<(Option<Topic>, Vec<LinkedEntity>), AskError> {
    let mentions = ctx.stages.link(question).map_err(AskError::Embed)?;
    Ok((
        choose_topic(question, &mentions),
        linked_entities(&mentions),
    ))
}

/// Plan: the query, by the planner the options name.
fn plan(
    ctx: &Context<'_, '_>,
    opts: &AskOptions,
    question: &str,
    topic: Option<&Topic>,
    linked: &[LinkedEntity],
) -> Result<Planned, AskError> {
    let planners = Planners {
        kg: ctx.kg,
        learned: ctx.learned,
        relvecs: ctx.relvecs,
        embedder: ctx.embedder,
        chat: ctx.chat,
        steps: ctx.steps,
    };
    let request = PlanRequest {
        kind: opts.planner,
        question,
        topic,
        linked,
        max_retries: opts.max_retries,
        samples: opts.samples,
        max_relations: opts.max_relations,
        fallback_below: opts.fallback_below,
        paths_below: opts.paths_below,
        paths: opts.paths,
    };
    Ok(planner::plan(&planners, &request)?)
}

/// Execute: the planned query's candidates. A plan that finds nothing
/// gives way to the planner's next choices ([`Planned::next`]: the learned
/// planner's next templates, the LLM's next candidates), in order, until
/// one finds answers (the skipped queries go to [`PlanInfo::found_nothing`]).
///
/// [`PlanInfo::found_nothing`]: crate::planner::PlanInfo::found_nothing
fn execute(
    ctx: &Context<'_, '_>,
    opts: &AskOptions,
    planned: &mut Planned,
    topic: Option<&Topic>,
    linked: &[LinkedEntity],
    noun: Option<&str>,
) -> Result<(Answers, Option<RepairReport>), AskError> {
    let plan = PlanToRun {
        query: &planned.query,
        keep_anchors: planned.keep_anchors,
        noun,
    };
    // Repair relaxes a query that found nothing only once no next choice
    // finds anything: a query that binds here beats a repaired guess.
    let last = planned.next.is_empty();
    let first = execute_plan(ctx, opts, &plan, topic, linked, last)?;
    if !first.0.answers.is_empty() || last {
        return Ok(first);
    }
    let mut skipped = vec![planned.query.clone()];
    for next in std::mem::take(&mut planned.next) {
        // A query that does not run here is passed over like an empty one.
        let plan = PlanToRun {
            query: &next.query,
            keep_anchors: next.keep_anchors,
            noun,
        };
        match execute_plan(ctx, opts, &plan, topic, linked, false) {
            Ok(found) if !found.0.answers.is_empty() => {
                planned.query = next.query;
                planned.keep_anchors = next.keep_anchors;
                planned.info.found_nothing = skipped;
                return Ok(found);
            }
            _ => skipped.push(next.query),
        }
    }
    // None found anything: the planner's first choice stands, repaired
    // (run again, as nothing it found was kept: an empty query is cheap).
    if !opts.repair {
        return Ok(first);
    }
    execute_plan(ctx, opts, &plan, topic, linked, true)
}

/// The noun the question names its answer's type with
/// ([`chunks::answer_noun`]), its topic masked.
///
/// [`chunks::answer_noun`]: crate::planner::paths::chunks::answer_noun
fn answer_noun(question: &str, topic: Option<&Topic>) -> Option<String> {
    use crate::question::{mask, MASK};
    let masked = match topic {
        Some(t) => mask(question, t.range),
        None => question.to_lowercase(),
    };
    crate::planner::paths::chunks::answer_noun(&masked, MASK)
}

/// A query to run and what orders its answers.
struct PlanToRun<'a> {
    query: &'a str,
    keep_anchors: bool,
    /// The noun the question names its answer's type with.
    noun: Option<&'a str>,
}

/// One query's candidates, then query repair (when on), which may replace
/// them with the repaired query's; it relaxes a query that found nothing
/// only when `relax` is set. Unless the plan keeps anchors, neither
/// answers with the query's topic ([`kgbox_query::repair::topic`]).
fn execute_plan(
    ctx: &Context<'_, '_>,
    opts: &AskOptions,
    plan: &PlanToRun<'_>,
    topic: Option<&Topic>,
    linked: &[LinkedEntity],
    relax: bool,
) -> Result<(Answers, Option<RepairReport>), AskError> {
    let (query, keep_anchors) = (plan.query, plan.keep_anchors);
    let exclude = match (keep_anchors, kgbox_query::parse(query)) {
        (false, Ok(q)) => kgbox_query::repair::topic(ctx.kg, &q),
        _ => Vec::new(),
    };
    let spec = ExecSpec {
        query,
        candidates: opts.candidates.max(opts.top_k),
        keep_anchors,
        exclude: &exclude,
    };
    let mut found = ctx.stages.execute(&spec).map_err(|error| AskError::Query {
        query: query.to_string(),
        error: Box::new(error),
    })?;
    answer_order::reorder(ctx.kg, query, plan.noun, &mut found);
    let repair = if opts.repair && (relax || !found.answers.is_empty()) {
        let topic_id = topic.map(|t| t.entity);
        let with: Vec<u32> = linked
            .iter()
            .map(|l| l.entity)
            .filter(|&e| Some(e) != topic_id)
            .collect();
        repair_found(ctx, &spec, &with, &mut found)?
    } else {
        None
    };
    Ok((found, repair))
}

/// Strategies: a failed or low-confidence LLM query falls through to the
/// other retrieval strategies. When they find the answers, `found` becomes
/// what they gathered and the chosen answers are returned with the
/// reports. `wrote` is the planner whose query ran: with `learned+llm`, a
/// plan the learned planner kept does not fall through.
#[allow(clippy::too_many_arguments)]
fn fall_through(
    ctx: &Context<'_, '_>,
    opts: &AskOptions,
    question: &str,
    linked: &[LinkedEntity],
    wrote: PlannerKind,
    first: FirstQuery,
    found: &mut Answers,
) -> (Vec<StrategyReport>, Option<(Vec<usize>, Arbitration)>) {
    let input = FallThrough {
        kg: ctx.kg,
        chat: ctx.chat,
        planner: wrote,
        question,
        linked,
        opts: &opts.strategies,
        candidates: opts.candidates,
        top_k: opts.top_k,
        max_relations: opts.max_relations,
        share_context: opts.share_context,
    };
    let fell = after_query(&input, found, first);
    let preset = fell.answer.map(|a| {
        *found = a.found;
        (a.chosen, a.arbitration)
    });
    (fell.reports, preset)
}

/// Rerank: the bundle's reranker reorders the candidates (when on), and
/// their features are kept when they are to be exported.
fn rerank(
    ctx: &Context<'_, '_>,
    opts: &AskOptions,
    question: &str,
    topic: Option<&Topic>,
    linked: &[LinkedEntity],
    question_vec: Option<Vec<f32>>,
    found: &mut Answers,
) -> Result<Reranked, AskError> {
    let input = RerankInput {
        kg: ctx.kg,
        reranker: ctx.reranker.filter(|_| opts.rerank),
        export_features: opts.export_features,
        candidates: opts.candidates,
        embedder: ctx.embedder,
        name_similarity: ctx.name_similarity,
        question,
        topic,
        linked,
        question_vec,
    };
    Ok(rerank_candidates(input, found)?)
}
