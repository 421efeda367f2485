//! `[planner]` and `[llm]`: question answering and the LLM's privacy policy.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// `[planner]`: how `/v1/ask` and `kgbox ask` turn a question into a query.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PlannerConfig {
    /// learned (the bundle's classifier, no LLM), llm (`[llm]` endpoint),
    /// local (`[llm] local_model`, needs the `local-llm` build feature), or
    /// learned+llm / learned+local (the learned planner, and the LLM when it
    /// is unsure).
    pub kind: kgbox_qa::PlannerKind,
    /// learned+llm / learned+local: ask the LLM when the learned planner's
    /// best template has a lower probability than this (0..1).
    pub fallback_below: f32,
    /// `kind = learned` with `paths = auto` and a planner trained on
    /// examples: weigh the path ranker in when the learned planner's best
    /// template has a lower probability than this (0..1; 1: always).
    pub paths_below: f32,
    /// The path ranker (relation paths from the topic, scored against the
    /// question): auto (with a planner packed without examples, or none,
    /// and with one trained on examples below `paths_below`), on, or
    /// off.
    pub paths: kgbox_qa::planner::PathRanker,
    /// Final answers per question.
    pub top_k: usize,
    /// Candidates the executor returns to the arbitrator.
    pub candidates: usize,
    /// LLM planner: new attempts after an invalid query.
    pub max_retries: usize,
    /// LLM planner: replies asked for per attempt (the first greedy, the
    /// others sampled); the most likely one whose query finds answers is
    /// used.
    pub samples: usize,
    /// LLM planner: relations listed in the prompt at most.
    pub max_relations: usize,
    /// Rerank candidates with the bundle's answer reranker, when it has one.
    pub rerank: bool,
    /// Repair the planned query: relax it when it has no answers, tighten it
    /// by the question's other entities when it has too many.
    pub repair: bool,
    /// `[planner.strategies]`: the fall-through to path following, triplet
    /// retrieval and a final answer when the LLM's query fails.
    pub strategies: kgbox_qa::strategies::StrategyOptions,
}

impl Default for PlannerConfig {
    fn default() -> Self {
        let d = kgbox_qa::AskOptions::default();
        PlannerConfig {
            kind: kgbox_qa::PlannerKind::Learned,
            top_k: d.top_k,
            candidates: d.candidates,
            max_retries: d.max_retries,
            samples: d.samples,
            max_relations: d.max_relations,
            fallback_below: d.fallback_below,
            paths_below: d.paths_below,
            paths: d.paths,
            rerank: d.rerank,
            repair: d.repair,
            strategies: d.strategies,
        }
    }
}

/// `[llm]`: the language model and the privacy policy around it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LlmConfig {
    /// off, local (loopback, unix socket or in-process only) or remote.
    pub mode: kgbox_qa::llm::policy::LlmMode,
    /// OpenAI-compatible base URL (`http://127.0.0.1:8081/v1`) or `unix:/path.sock`.
    pub endpoint: Option<String>,
    /// The `model` field of requests.
    pub model: String,
    /// Name of the environment variable holding the API key (never the key itself).
    pub api_key_env: String,
    pub timeout_ms: u64,
    /// Let the LLM choose the final answers among the candidates.
    pub arbitrate: bool,
    /// Also send the candidates' provenance paths (triples) to the LLM.
    pub share_context: bool,
    /// Where outbound calls are recorded (default: DATA_DIR/llm-audit.jsonl).
    pub audit_log: Option<PathBuf>,
    /// GGUF model file for the `local` planner.
    pub local_model: Option<PathBuf>,
    pub local_threads: usize,
    pub local_context: u32,
    /// Keep llama.cpp's state for the prompts' common start (instructions,
    /// demonstrations) and evaluate only each question's own tokens.
    pub local_prompt_cache: bool,
    /// Prompt starts kept at most (each a few MB of the model's state).
    pub local_prompt_cache_entries: usize,
    /// Decode the planners' replies as choices between the texts they may
    /// take, the text between choices in one batch.
    pub local_choice_decoding: bool,
    /// With choice decoding, check the planner's likeliest reply in the
    /// prompt's batch (one pass instead of one per choice; the same reply).
    pub local_draft: bool,
    /// Rewrite the model's weights at load time into a format llama.cpp
    /// runs faster: `auto` (Q4_1 becomes Q8_0), `off`, `q4_0` or `q8_0`.
    pub local_requantize: kgbox_qa::llm::weights::Requantize,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            mode: kgbox_qa::llm::policy::LlmMode::Off,
            endpoint: None,
            model: "default".into(),
            api_key_env: "KGBOX_LLM_API_KEY".into(),
            timeout_ms: 30_000,
            arbitrate: true,
            share_context: false,
            audit_log: None,
            local_model: None,
            local_threads: 2,
            local_context: 2048,
            local_prompt_cache: true,
            local_prompt_cache_entries: 16,
            local_choice_decoding: true,
            local_draft: true,
            local_requantize: kgbox_qa::llm::weights::Requantize::Auto,
        }
    }
}

impl LlmConfig {
    /// The endpoint, checked against the privacy policy (`None` when no
    /// endpoint is configured or the mode is off).
    pub fn checked_endpoint(&self) -> Result<Option<kgbox_qa::llm::policy::Endpoint>> {
        use kgbox_qa::llm::policy::{check_endpoint, LlmMode};
        match (&self.endpoint, self.mode) {
            (None, _) | (_, LlmMode::Off) => Ok(None),
            (Some(e), mode) => check_endpoint(mode, e)
                .map(Some)
                .map_err(|e| Error::Config(e.to_string())),
        }
    }

    /// The audit log's path.
    pub fn audit_path(&self, data_dir: &Path) -> PathBuf {
        self.audit_log
            .clone()
            .unwrap_or_else(|| data_dir.join("llm-audit.jsonl"))
    }
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use figment::providers::{Format, Toml};
    use figment::Figment;

    fn planner(toml: &str) -> crate::error::Result<Config> {
        let fig = Figment::from(figment::providers::Serialized::defaults(Config::default()))
            .merge(Toml::string(toml));
        Config::from_figment(&fig)
    }

    #[test]
    fn the_ranker_has_its_own_threshold_checked_like_the_llms() {
        let d = planner("").expect("defaults");
        assert_eq!(d.planner.paths_below, 0.95);
        assert_eq!(d.planner.fallback_below, 0.8);
        let set = planner("[planner]\npaths_below = 0.5\n").expect("valid");
        assert_eq!(set.planner.paths_below, 0.5);
        assert_eq!(set.planner.fallback_below, 0.8);
        let err = planner("[planner]\npaths_below = 1.5\n").expect_err("out of range");
        assert!(
            err.to_string()
                .contains("planner.paths_below = 1.5 is outside 0..1"),
            "{err}"
        );
    }
}
