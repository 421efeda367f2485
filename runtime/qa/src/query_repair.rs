//! Query repair after the execute stage of [`crate::ask::ask`]: a planned
//! query with no answers is relaxed; one with more than
//! [`RepairOptions::max_answers`] is tightened, but only by the question's
//! other linked entities (constraints that the answers merely share carry no
//! evidence from the question). See `docs/query-language.md`, "Query repair".

use kgbox_query::exec::ExecOptions;
use kgbox_query::repair::{repair_text, RepairError, RepairOptions, RepairReport};
use kgbox_query::{Answers, ParseLimits, QueryError};

use crate::pipeline::{AskError, Context, ExecSpec};

/// Repairs the query of `spec` when `found` calls for it and runs the
/// repaired query with the served executor ([`crate::pipeline::Stages`]),
/// replacing `found`. `with` are the question's linked entities other than
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
    let report = repair_text(
        ctx.kg,
        query,
        found.total,
        with,
        &ParseLimits::default(),
        &exec,
        &opts,
    )
    .map_err(|e| match e {
        RepairError::Invalid(d) => fail(QueryError::Invalid(d)),
        RepairError::Exec(e) => fail(QueryError::Exec(e)),
    })?;
    if let Some(text) = report.as_ref().and_then(|r| r.repaired.as_deref()) {
        let repaired = ExecSpec {
            query: text,
            ..*spec
        };
        *found = ctx
            .stages
            .execute(&repaired)
            .map_err(|error| AskError::Query {
                query: text.to_string(),
                error: Box::new(error),
            })?;
    }
    Ok(report)
}
