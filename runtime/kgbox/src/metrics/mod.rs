//! `/metrics`: the Prometheus text format (0.0.4), written by
//! `metrics-exporter-prometheus` from series recorded through the `metrics`
//! facade; the standard `process_*` series come from `metrics-process`.
//!
//! Latencies are histograms with the buckets of [`LATENCY_BUCKETS`] (20 µs
//! to 10 s), so `histogram_quantile` gives any percentile. Values owned by
//! other parts are copied in at each scrape: the served bundle and the LLM
//! audit log as a [`Scrape`], a front end's counters (MQTT's) as a
//! [`Source`] it added. This module imports no part that reports into it.

mod counters;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use metrics::{counter, describe_counter, describe_gauge, describe_histogram, gauge, Label, Unit};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

pub use counters::{record_ask, PlanCounters, StrategyCounters};

/// Histogram buckets for every latency, in seconds: 20 µs (a one-hop query)
/// to 10 s (an LLM call on a small CPU).
pub const LATENCY_BUCKETS: &[f64] = &[
    0.000_02, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1,
    0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// How often recorded histogram samples are folded into their buckets
/// between scrapes (so memory stays flat on a device nobody scrapes).
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// The process-wide exporter: installed as the `metrics` recorder once.
static EXPORTER: OnceLock<Result<PrometheusHandle, String>> = OnceLock::new();

fn exporter() -> Result<&'static PrometheusHandle, &'static str> {
    EXPORTER
        .get_or_init(|| {
            let handle = PrometheusBuilder::new()
                .set_buckets(LATENCY_BUCKETS)
                .and_then(PrometheusBuilder::install_recorder)
                .map_err(|e| format!("the metrics recorder could not be installed: {e}"))?;
            describe();
            let upkeep = handle.clone();
            let spawned = std::thread::Builder::new()
                .name("metrics-upkeep".into())
                .spawn(move || loop {
                    std::thread::sleep(UPKEEP_EVERY);
                    upkeep.run_upkeep();
                });
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "no metrics upkeep thread: histograms are folded at scrapes only");
            }
            Ok(handle)
        })
        .as_ref()
        .map_err(String::as_str)
}

/// HELP texts, units, and the series that exist from the start at 0.
fn describe() {
    describe_counter!(
        "kgbox_http_requests_total",
        "HTTP requests by route and status."
    );
    describe_counter!(
        "kgbox_http_errors_total",
        "HTTP error answers by route and error code."
    );
    describe_histogram!(
        "kgbox_http_request_duration_seconds",
        Unit::Seconds,
        "Time spent answering HTTP requests, by route."
    );
    describe_gauge!("kgbox_bundle_info", "The bundle being served.");
    describe_gauge!("kgbox_graph_entities", "Entities in the served graph.");
    describe_gauge!("kgbox_graph_relations", "Relations in the served graph.");
    describe_gauge!("kgbox_graph_triples", "Triples in the served graph.");
    describe_gauge!(
        "kgbox_image_bytes",
        Unit::Bytes,
        "Size of the served image."
    );
    describe_gauge!(
        "kgbox_startup_seconds",
        Unit::Seconds,
        "Process start to ready."
    );
    describe_counter!("kgbox_llm_calls_total", "LLM calls made.");
    describe_counter!("kgbox_llm_errors_total", "LLM calls that failed.");
    describe_counter!(
        "kgbox_llm_bytes_sent_total",
        Unit::Bytes,
        "Request bytes sent to the LLM."
    );
    describe_counter!(
        "kgbox_llm_bytes_received_total",
        Unit::Bytes,
        "Reply bytes received from the LLM."
    );
    counter!("kgbox_llm_calls_total", "purpose" => "plan").absolute(0);
    counters::describe();
    metrics_process::Collector::default().describe();
}

/// Copies a value another part counts into a counter, by what it grew
/// since the last scrape: the source may start again from 0 (the LLM
/// counters belong to the served bundle), the counter never goes back.
#[derive(Default)]
pub struct Totals {
    last: Mutex<HashMap<(&'static str, Vec<Label>), u64>>,
}

impl Totals {
    pub fn sync(&self, name: &'static str, labels: Vec<Label>, value: u64) {
        let Ok(mut last) = self.last.lock() else {
            return;
        };
        let before = last.insert((name, labels.clone()), value).unwrap_or(0);
        let grown = if value >= before {
            value - before
        } else {
            value
        };
        counter!(name, labels).increment(grown);
    }
}

/// What a scrape copies in: the served bundle and the counters kept
/// elsewhere.
pub struct Scrape<'a> {
    pub bundle: (&'a str, String, String),
    pub graph: (u64, u64, u64),
    pub image_bytes: u64,
    pub startup_seconds: f64,
    pub llm: &'a std::collections::BTreeMap<String, kgbox_qa::llm::audit::CallStats>,
}

/// Counters another part owns (a front end's), reported into the
/// exposition at each scrape.
pub trait Source: Send + Sync {
    /// Sets the HELP texts of its series (once, when it is added).
    fn describe(&self);
    /// Copies its values in: counters through `totals`, gauges directly.
    fn report(&self, totals: &Totals);
}

/// The request counters and the exposition.
#[derive(Default)]
pub struct Metrics {
    process: metrics_process::Collector,
    totals: Totals,
    /// The labels of the `kgbox_bundle_info` series last set to 1.
    bundle: Mutex<Option<[String; 3]>>,
    /// What reports into each scrape.
    sources: Vec<Arc<dyn Source>>,
}

impl Metrics {
    /// Installs the process-wide recorder (at the first call): a server
    /// makes one at start-up.
    pub fn new() -> Metrics {
        if let Err(e) = exporter() {
            tracing::warn!("{e}: /metrics will say so");
        }
        Metrics::default()
    }

    /// Adds counters another part owns to every scrape.
    pub fn with_source(mut self, source: Arc<dyn Source>) -> Metrics {
        source.describe();
        self.sources.push(source);
        self
    }

    /// Counts an HTTP answer: its route (the matched template), status,
    /// error code (for an error answer that has one) and time.
    pub fn record(&self, route: &str, status: u16, code: Option<&str>, elapsed: Duration) {
        let route = route.to_string();
        counter!("kgbox_http_requests_total", "route" => route.clone(), "status" => status.to_string())
            .increment(1);
        if let Some(code) = code {
            counter!("kgbox_http_errors_total", "route" => route.clone(), "code" => code.to_string())
                .increment(1);
        }
        metrics::histogram!("kgbox_http_request_duration_seconds", "route" => route)
            .record(elapsed.as_secs_f64());
    }

    /// The exposition, after copying in `scrape`'s values and the process's.
    pub fn render(&self, scrape: &Scrape<'_>) -> Result<String, &'static str> {
        let handle = exporter()?;
        self.copy_in(scrape);
        self.process.collect();
        handle.run_upkeep();
        Ok(handle.render())
    }

    fn copy_in(&self, s: &Scrape<'_>) {
        let (name, version, source) = &s.bundle;
        let now = [name.to_string(), version.clone(), source.clone()];
        if let Ok(mut last) = self.bundle.lock() {
            if let Some(old) = last.as_ref().filter(|old| **old != now) {
                gauge!("kgbox_bundle_info", bundle_labels(old)).set(0.0);
            }
            gauge!("kgbox_bundle_info", bundle_labels(&now)).set(1.0);
            *last = Some(now);
        }
        gauge!("kgbox_graph_entities").set(s.graph.0 as f64);
        gauge!("kgbox_graph_relations").set(s.graph.1 as f64);
        gauge!("kgbox_graph_triples").set(s.graph.2 as f64);
        gauge!("kgbox_image_bytes").set(s.image_bytes as f64);
        gauge!("kgbox_startup_seconds").set(s.startup_seconds);
        for (purpose, c) in s.llm {
            let labels = || vec![Label::new("purpose", purpose.clone())];
            self.totals.sync("kgbox_llm_calls_total", labels(), c.calls);
            self.totals
                .sync("kgbox_llm_errors_total", labels(), c.errors);
            self.totals
                .sync("kgbox_llm_bytes_sent_total", labels(), c.bytes_sent);
            self.totals
                .sync("kgbox_llm_bytes_received_total", labels(), c.bytes_received);
        }
        for source in &self.sources {
            source.report(&self.totals);
        }
    }
}

fn bundle_labels(v: &[String; 3]) -> Vec<Label> {
    vec![
        Label::new("name", v[0].clone()),
        Label::new("version", v[1].clone()),
        Label::new("source", v[2].clone()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_buckets_rise() {
        assert!(LATENCY_BUCKETS.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(LATENCY_BUCKETS.first(), Some(&0.000_02));
        assert_eq!(LATENCY_BUCKETS.last(), Some(&10.0));
    }

    #[test]
    fn totals_follow_a_source_that_starts_again() {
        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, || {
            let t = Totals::default();
            let l = || vec![Label::new("purpose", "plan")];
            t.sync("x_total", l(), 3);
            t.sync("x_total", l(), 5);
            // The source restarted (a new bundle): 2 more, not -3.
            t.sync("x_total", l(), 2);
        });
        let text = handle.render();
        assert!(text.contains("x_total{purpose=\"plan\"} 7"), "{text}");
    }
}
