//! Query repair after the execute stage of [`crate::ask::ask`]: a planned
//! query with no answers is relaxed; one with more than
//! [`RepairOptions::max_answers`] is tightened, but only by the question's
//! other linked entities (constraints that the answers merely share carry no
//! evidence from the question). See `docs/query-language.md`, "Query repair".

use kgbox_query::exec::ExecOptions;
use kgbox_query::repair::{RepairOptions, RepairReport};
use kgbox_query::{repair_then, Answers, ParseLimits, QueryError, RepairSpec};

use crate::pipeline::{AskError, Context, ExecSpec};

/// Repairs the query of `spec` when `found` calls for it and runs the
/// repaired query with the served executor ([`crate::pipeline::Stages`]),
/// replacing `found`; the repaired query's answers exclude the topic
/// ([`kgbox_query::repair::RepairReport::excluded`]). `with` are the question's linked entities other than
/// the topic.
pub(crate) fn repair_found(
    ctx: &Context<'_, '_>,
    spec: &ExecSpec<'_>,
    with: &[u32],
    found: &mut Answers,
) -> Result<Option<RepairReport>, AskError> {
    let query = spec.query;
    let fail = |error: QueryError| AskError::Query {
        query: query.to_string(),
        error: Box::new(error),
    };
    let opts = RepairOptions {
        tighten: !with.is_empty(),
        tighten_shared: false,
        ..RepairOptions::default()
    };
    let exec = ExecOptions {
        exclude_anchors: !spec.keep_anchors,
        ..ExecOptions::default()
    };
    let spec_repair = RepairSpec {
        options: &opts,
        with,
    };
    let rerun = |text: &str, exclude: &[u32]| {
        let mut all = spec.exclude.to_vec();
        all.extend_from_slice(exclude);
        let repaired = ExecSpec {
            query: text,
            exclude: &all,
            ..*spec
        };
        ctx.stages
            .execute(&repaired)
            .map_err(|error| AskError::Query {
                query: text.to_string(),
                error: Box::new(error),
            })
    };
    // A rerun failure is already an AskError naming the repaired query;
    // keep it apart from repair's own errors, which name the planned one.
    let (report, rerun) = repair_then(
        ctx.kg,
        query,
        found.total,
        spec_repair,
        &ParseLimits::default(),
        &exec,
        |text, exclude| Ok(rerun(text, exclude)),
    )
    .map_err(fail)?;
    if let Some(answers) = rerun {
        *found = answers?;
    }
    Ok(report)
}
