//! The question service: a question with its options in, answers and how
//! they were found out (see [`crate::qa`]). `kgbox ask`, `POST /v1/ask`,
//! the OpenAI-compatible facade and MQTT's `ask` requests (through
//! `/v1/ask`) answer with [`answer`].

use std::time::Instant;

use kgbox_qa::{AskResult, PlannerKind};
use kgbox_query::Executor;
use serde::Deserialize;
use serde_json::json;

use super::executors::{Overrides, Paths};
use super::schema::ExecutorName;
use super::RequestError;
use crate::config::Config;
use crate::qa::AskParams;
use crate::served::Served;

/// Longest question accepted, in bytes.
pub const MAX_QUESTION: usize = 2000;

/// A question and how to answer it; `AskRequest { question,
/// ..Default::default() }` asks with every setting at its configured default.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AskRequest {
    /// The question, at most 2,000 bytes.
    pub question: String,
    pub top_k: Option<usize>,
    /// learned, llm, local, learned+llm or learned+local (default: `planner.kind`).
    #[schema(value_type = Option<String>)]
    pub planner: Option<PlannerKind>,
    /// symbolic, neural, hybrid or sparql_store (default: `executor.mode`).
    #[schema(value_type = Option<ExecutorName>)]
    pub executor: Option<Executor>,
    pub seppr_k: Option<usize>,
    /// Provenance paths per answer: `true` (the configured number), `false`, or a number (at most 100).
    pub paths: Option<Paths>,
    /// Rerank with the bundle's reranker (default: `planner.rerank`).
    pub rerank: Option<bool>,
    /// Repair the planned query (default: `planner.repair`).
    pub repair: Option<bool>,
    /// LLM planner: fall through to the retrieval strategies (default:
    /// `planner.strategies.enabled`).
    pub strategies: Option<bool>,
}

/// Answers a question with the served bundle: checks the request (the
/// options through [`crate::service::executors::Executors::options`]),
/// then links, plans, executes, reranks and arbitrates. Also returns the
/// executor that ran. It blocks for as long as the planners and the
/// executor take (an LLM call: seconds).
pub fn answer(
    served: &Served,
    cfg: &Config,
    req: AskRequest,
    deadline: Option<Instant>,
) -> Result<(AskResult, Executor), RequestError> {
    let question = req.question.trim();
    if question.is_empty() {
        return Err(RequestError::BadRequest(
            "question must not be empty".into(),
        ));
    }
    if question.len() > MAX_QUESTION {
        return Err(RequestError::BadRequest(format!(
            "question must be at most {MAX_QUESTION} bytes"
        )));
    }
    let overrides = Overrides::new(req.executor, req.top_k, req.paths, req.seppr_k, deadline);
    let run = served.executors.options(&cfg.query, &overrides)?;
    let executor = run.exec.executor;
    let params = AskParams {
        planner: req.planner,
        top_k: req.top_k,
        rerank: req.rerank,
        repair: req.repair,
        strategies: req.strategies,
        ..AskParams::new(run)
    };
    let result = served.ask(cfg, question, &params)?;
    Ok((result, executor))
}

/// The body of a `/v1/ask` reply (and `kgbox ask --json`): the result
/// with the executor that ran.
pub fn result_json(
    result: &AskResult,
    executor: Executor,
) -> Result<serde_json::Value, RequestError> {
    let mut v = serde_json::to_value(result).map_err(|e| RequestError::Internal(e.to_string()))?;
    v["executor"] = json!(executor);
    // The answer's id under the name `/v1/ask` gave it before the answer
    // schema was shared (deprecated).
    if let Some(answers) = v["answers"].as_array_mut() {
        for a in answers {
            a["entity"] = a["id"].clone();
        }
    }
    Ok(v)
}
