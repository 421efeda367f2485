//! Text in, answers out: parse, bind and execute with timings.

use std::time::{Duration, Instant};

use kgbox_bundle::Kg;

use crate::diag::Diagnostic;
use crate::exec::{execute_with, Answers, ExecError, ExecOptions, Projector};
use crate::parse::{parse_with, ParseLimits};

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
