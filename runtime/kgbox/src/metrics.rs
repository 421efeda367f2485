//! Prometheus text exposition, hand-rolled: a few counters and gauges.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

#[derive(Default)]
struct RouteStats {
    by_status: BTreeMap<u16, u64>,
    seconds_sum: f64,
    count: u64,
}

/// Request counters by route.
#[derive(Default)]
pub struct Metrics {
    routes: Mutex<BTreeMap<String, RouteStats>>,
}

impl Metrics {
    pub fn record(&self, route: &str, status: u16, elapsed: Duration) {
        if let Ok(mut routes) = self.routes.lock() {
            let r = routes.entry(route.to_string()).or_default();
            *r.by_status.entry(status).or_default() += 1;
            r.seconds_sum += elapsed.as_secs_f64();
            r.count += 1;
        }
    }

    /// Appends the request metrics to `out`.
    pub fn render(&self, out: &mut String) {
        let Ok(routes) = self.routes.lock() else {
            return;
        };
        out.push_str("# HELP kgbox_http_requests_total HTTP requests by route and status.\n");
        out.push_str("# TYPE kgbox_http_requests_total counter\n");
        for (route, r) in routes.iter() {
            for (status, n) in &r.by_status {
                let _ = writeln!(
                    out,
                    "kgbox_http_requests_total{{route=\"{}\",status=\"{status}\"}} {n}",
                    escape(route)
                );
            }
        }
        out.push_str("# HELP kgbox_http_request_duration_seconds Time spent answering requests.\n");
        out.push_str("# TYPE kgbox_http_request_duration_seconds summary\n");
        for (route, r) in routes.iter() {
            let _ = writeln!(
                out,
                "kgbox_http_request_duration_seconds_sum{{route=\"{}\"}} {}",
                escape(route),
                r.seconds_sum
            );
            let _ = writeln!(
                out,
                "kgbox_http_request_duration_seconds_count{{route=\"{}\"}} {}",
                escape(route),
                r.count
            );
        }
    }
}

/// Escapes a label value (backslash, quote, newline).
pub fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Appends a gauge with optional labels.
pub fn gauge(out: &mut String, name: &str, help: &str, labels: &[(&str, &str)], value: f64) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
    let labels: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    if labels.is_empty() {
        let _ = writeln!(out, "{name} {value}");
    } else {
        let _ = writeln!(out, "{name}{{{}}} {value}", labels.join(","));
    }
}

/// Resident set size of this process, from /proc/self/statm.
pub fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no memory-safety preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

/// Uses and answers of the retrieval strategies by questions planned by an
/// LLM (`kgbox_retrieval_strategy_*_total`). The planned query counts as
/// strategy `query` for every such question; the others count when the
/// fall-through ran (see [`kgbox_qa::strategies`]).
#[derive(Default)]
pub struct StrategyCounters {
    /// Strategy name to (uses, answers).
    by: Mutex<BTreeMap<&'static str, (u64, u64)>>,
}

impl StrategyCounters {
    /// Counts what answering one question did.
    pub fn record(&self, planner: kgbox_qa::PlannerKind, result: &kgbox_qa::AskResult) {
        use kgbox_qa::strategies::StrategyName;
        if planner.chat().is_none() {
            return;
        }
        let Ok(mut by) = self.by.lock() else {
            return;
        };
        if result.strategies.is_empty() {
            let c = by.entry(StrategyName::Query.as_str()).or_default();
            c.0 += 1;
            c.1 += u64::from(!result.answers.is_empty());
        }
        for s in &result.strategies {
            let c = by.entry(s.name.as_str()).or_default();
            c.0 += 1;
            c.1 += u64::from(s.answered);
        }
    }

    /// Appends the counters to `out`, every strategy listed.
    pub fn render(&self, out: &mut String) {
        let by = self.by.lock().map(|b| b.clone()).unwrap_or_default();
        type Field = fn(&(u64, u64)) -> u64;
        let series: [(&str, &str, Field); 2] = [
            (
                "kgbox_retrieval_strategy_uses_total",
                "Retrieval strategies tried for questions planned by an LLM.",
                |c| c.0,
            ),
            (
                "kgbox_retrieval_strategy_answers_total",
                "Retrieval strategies whose candidates were in the final answers.",
                |c| c.1,
            ),
        ];
        for (name, help, get) in series {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            for s in kgbox_qa::strategies::StrategyName::ALL {
                let n = by.get(s.as_str()).map_or(0, get);
                let _ = writeln!(out, "{name}{{strategy=\"{}\"}} {n}", s.as_str());
            }
        }
    }
}

/// Which planner wrote each question's query, by the planner asked for
/// (`kgbox_plans_total`): with `learned+llm` / `learned+local` it shows how
/// often the LLM was used and how often the learned plan stood.
#[derive(Default)]
pub struct PlanCounters {
    /// (asked for, wrote the query) to questions.
    by: Mutex<BTreeMap<(String, String), u64>>,
}

impl PlanCounters {
    /// Counts one answered question.
    pub fn record(&self, asked: kgbox_qa::PlannerKind, result: &kgbox_qa::AskResult) {
        if let Ok(mut by) = self.by.lock() {
            *by.entry((asked.to_string(), result.planner.to_string()))
                .or_default() += 1;
        }
    }

    /// Appends the counter to `out` (the learned planner's row always).
    pub fn render(&self, out: &mut String) {
        let mut by = self.by.lock().map(|b| b.clone()).unwrap_or_default();
        by.entry(("learned".into(), "learned".into())).or_default();
        out.push_str("# HELP kgbox_plans_total Questions planned, by the planner asked for and the planner whose query ran.
");
        out.push_str(
            "# TYPE kgbox_plans_total counter
",
        );
        for ((asked, wrote), n) in by {
            let _ = writeln!(
                out,
                "kgbox_plans_total{{asked=\"{}\",planner=\"{}\"}} {n}",
                escape(&asked),
                escape(&wrote)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategy_counters_list_every_strategy() {
        let c = StrategyCounters::default();
        let mut out = String::new();
        c.render(&mut out);
        for s in ["query", "paths", "triplets", "final_answer"] {
            assert!(
                out.contains(&format!(
                    "kgbox_retrieval_strategy_uses_total{{strategy=\"{s}\"}} 0"
                )),
                "{out}"
            );
        }
        assert!(out.contains("# TYPE kgbox_retrieval_strategy_answers_total counter"));
    }

    #[test]
    fn plan_counters_start_with_the_learned_row() {
        let mut out = String::new();
        PlanCounters::default().render(&mut out);
        assert!(out.contains("# TYPE kgbox_plans_total counter"), "{out}");
        assert!(
            out.contains("kgbox_plans_total{asked=\"learned\",planner=\"learned\"} 0"),
            "{out}"
        );
    }
}
