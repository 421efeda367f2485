//! Text in, answers out: parse, bind and execute with timings, and the
//! same with query repair ([`run_repaired`]).

use std::time::{Duration, Instant};

use kgbox_bundle::Kg;

use crate::diag::Diagnostic;
use crate::exec::{execute_with, Answers, ExecError, ExecOptions, Projector};
use crate::parse::{parse_with, ParseLimits};
use crate::repair::{repair_text, RepairError, RepairOptions, RepairReport};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum QueryError {
    /// The text does not parse or names something the bundle lacks.
    #[error("{0}")]
    Invalid(Diagnostic),
    #[error(transparent)]
    Exec(#[from] ExecError),
}

/// Time spent in each stage.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Timings {
    pub parse: Duration,
    pub bind: Duration,
    pub execute: Duration,
}

/// Parses `text`, binds it to `kg` and executes it.
pub fn run_query(
    kg: &Kg<'_>,
    text: &str,
    limits: &ParseLimits,
    opts: &ExecOptions,
) -> Result<(Answers, Timings), QueryError> {
    run_query_with(kg, text, limits, opts, None)
}

/// [`run_query`] with a neural projector (for `opts.executor` other than symbolic).
pub fn run_query_with(
    kg: &Kg<'_>,
    text: &str,
    limits: &ParseLimits,
    opts: &ExecOptions,
    projector: Option<&dyn Projector>,
) -> Result<(Answers, Timings), QueryError> {
    let t0 = Instant::now();
    let query = parse_with(text, limits).map_err(QueryError::Invalid)?;
    let t1 = Instant::now();
    let plan = crate::bind::bind(kg, &query, text).map_err(QueryError::Invalid)?;
    let t2 = Instant::now();
    let answers = execute_with(kg, &plan, opts, projector)?;
    let t3 = Instant::now();
    Ok((
        answers,
        Timings {
            parse: t1 - t0,
            bind: t2 - t1,
            execute: t3 - t2,
        },
    ))
}

/// Query repair for [`run_repaired`]: the options, and the entities a
/// tightening constrains the answers by first (names resolved by the caller).
#[derive(Debug, Clone, Copy)]
pub struct RepairSpec<'a> {
    pub options: &'a RepairOptions,
    pub with: &'a [u32],
}

/// A query's answers after repair.
#[derive(Debug, Clone)]
pub struct Repaired<T> {
    /// The answers of `query`.
    pub outcome: T,
    /// The text that produced `outcome`: the repaired query when repair
    /// found one, else the original.
    pub query: String,
    /// What repair did, when it ran and had something to do.
    pub report: Option<RepairReport>,
    /// Time spent repairing (search plus the second run), when repair ran.
    pub repair_time: Option<Duration>,
}

/// Runs `text` with `run`, and when `repair` is given and the answers call
/// for it (none, or too many when tightening), repairs the query (a
/// symbolic search, see [`crate::repair`]) and runs the repaired text with
/// `run` again. `run` gets the text and the entities its answers must not
/// include (none for the query as given; the report's
/// [`RepairReport::excluded`], the query's topic, for the repaired one: to
/// be added to [`ExecOptions::exclude`]). `total` reads the answer count
/// from `run`'s outcome. The one implementation of "run, repair, run
/// again" for every front end.
pub fn run_repaired<T>(
    kg: &Kg<'_>,
    text: &str,
    limits: &ParseLimits,
    opts: &ExecOptions,
    repair: Option<RepairSpec<'_>>,
    run: impl Fn(&str, &[u32]) -> Result<T, QueryError>,
    total: impl Fn(&T) -> usize,
) -> Result<Repaired<T>, QueryError> {
    let first = run(text, &[])?;
    let Some(spec) = repair else {
        return Ok(Repaired {
            outcome: first,
            query: text.to_string(),
            report: None,
            repair_time: None,
        });
    };
    let t = Instant::now();
    let (report, rerun) = repair_then(kg, text, total(&first), spec, limits, opts, &run)?;
    let (outcome, query) = match (rerun, report.as_ref().and_then(|r| r.repaired.clone())) {
        (Some(outcome), Some(repaired)) => (outcome, repaired),
        _ => (first, text.to_string()),
    };
    Ok(Repaired {
        outcome,
        query,
        report,
        repair_time: Some(t.elapsed()),
    })
}

/// Repairs `text` (whose run found `total` answers) when that calls for
/// it, and runs the repaired text with `rerun` (given the entities to
/// exclude from its answers, [`RepairReport::excluded`]): the report, and
/// the rerun's outcome when a repaired query was found.
pub fn repair_then<T>(
    kg: &Kg<'_>,
    text: &str,
    total: usize,
    spec: RepairSpec<'_>,
    limits: &ParseLimits,
    opts: &ExecOptions,
    rerun: impl FnOnce(&str, &[u32]) -> Result<T, QueryError>,
) -> Result<(Option<RepairReport>, Option<T>), QueryError> {
    let report = repair_text(kg, text, total, spec.with, limits, opts, spec.options).map_err(
        |e| match e {
            RepairError::Invalid(d) => QueryError::Invalid(d),
            RepairError::Exec(e) => QueryError::Exec(e),
        },
    )?;
    let outcome = match report.as_ref() {
        Some(RepairReport {
            repaired: Some(repaired),
            excluded,
            ..
        }) => Some(rerun(repaired, excluded)?),
        _ => None,
    };
    Ok((report, outcome))
}
