//! What answering questions did: stage latencies, the planner that wrote
//! each query and the retrieval strategies used.

use metrics::{counter, describe_counter, describe_histogram, histogram, Unit};

use kgbox_qa::strategies::StrategyName;
use kgbox_qa::{AskResult, PlannerKind};

pub(super) fn describe() {
    describe_histogram!(
        "kgbox_ask_stage_duration_seconds",
        Unit::Seconds,
        "Time spent in each stage of answering a question (link, plan, execute, strategies, rerank, arbitrate, total)."
    );
    describe_histogram!(
        "kgbox_execute_duration_seconds",
        Unit::Seconds,
        "Time spent running a question's query, by executor (symbolic, neural, ...)."
    );
    describe_counter!(
        "kgbox_retrieval_strategy_uses_total",
        "Retrieval strategies tried for questions planned by an LLM."
    );
    describe_counter!(
        "kgbox_retrieval_strategy_answers_total",
        "Retrieval strategies whose candidates were in the final answers."
    );
    describe_counter!(
        "kgbox_plans_total",
        "Questions planned, by the planner asked for and the planner whose query ran."
    );
    for s in StrategyName::ALL {
        counter!("kgbox_retrieval_strategy_uses_total", "strategy" => s.as_str()).absolute(0);
        counter!("kgbox_retrieval_strategy_answers_total", "strategy" => s.as_str()).absolute(0);
    }
    counter!("kgbox_plans_total", "asked" => "learned", "planner" => "learned").absolute(0);
}

/// Records one answered question's stage times (`timings` are in ms) and
/// its query's time under `executor`.
pub fn record_ask(executor: &str, result: &AskResult) {
    let t = &result.timings_ms;
    let stages = [
        ("link", t.link),
        ("plan", t.plan),
        ("execute", t.execute),
        ("strategies", t.strategies),
        ("rerank", t.rerank),
        ("arbitrate", t.arbitrate),
        ("total", t.total),
    ];
    for (stage, ms) in stages {
        histogram!("kgbox_ask_stage_duration_seconds", "stage" => stage).record(ms / 1000.0);
    }
    histogram!("kgbox_execute_duration_seconds", "executor" => executor.to_string())
        .record(t.execute / 1000.0);
}

/// Uses and answers of the retrieval strategies by questions planned by an
/// LLM (`kgbox_retrieval_strategy_*_total`). The planned query counts as
/// strategy `query` for every such question; the others count when the
/// fall-through ran (see [`kgbox_qa::strategies`]).
#[derive(Default)]
pub struct StrategyCounters;

impl StrategyCounters {
    /// Counts what answering one question did.
    pub fn record(&self, planner: PlannerKind, result: &AskResult) {
        if planner.chat().is_none() {
            return;
        }
        let count = |name: &'static str, answered: bool| {
            counter!("kgbox_retrieval_strategy_uses_total", "strategy" => name).increment(1);
            counter!("kgbox_retrieval_strategy_answers_total", "strategy" => name)
                .increment(u64::from(answered));
        };
        if result.strategies.is_empty() {
            count(StrategyName::Query.as_str(), !result.answers.is_empty());
        }
        for s in &result.strategies {
            count(s.name.as_str(), s.answered);
        }
    }
}

/// Which planner wrote each question's query, by the planner asked for
/// (`kgbox_plans_total`): with `learned+llm` / `learned+local` it shows how
/// often the LLM was used and how often the learned plan stood.
#[derive(Default)]
pub struct PlanCounters;

impl PlanCounters {
    /// Counts one answered question.
    pub fn record(&self, asked: PlannerKind, result: &AskResult) {
        counter!("kgbox_plans_total", "asked" => asked.to_string(), "planner" => result.planner.to_string())
            .increment(1);
    }
}

#[cfg(test)]
mod tests {
    use metrics_exporter_prometheus::PrometheusBuilder;

    #[test]
    fn every_strategy_and_the_learned_row_start_at_zero() {
        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, super::describe);
        let out = handle.render();
        for s in ["query", "paths", "triplets", "final_answer"] {
            assert!(
                out.contains(&format!(
                    "kgbox_retrieval_strategy_uses_total{{strategy=\"{s}\"}} 0"
                )),
                "{out}"
            );
        }
        assert!(out.contains("# TYPE kgbox_retrieval_strategy_answers_total counter"));
        assert!(
            out.contains("kgbox_plans_total{asked=\"learned\",planner=\"learned\"} 0"),
            "{out}"
        );
    }
}
