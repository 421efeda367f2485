//! kgbox-load's figures and its report: what the workers count ([`Tally`]),
//! the load phase's result ([`Load`]), the latency summary ([`Latency`]),
//! and everything shown ([`Report`]) as a Markdown table ([`markdown`]) or
//! a JSON object ([`json`]).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;

use serde_json::{json, Value};

use super::{mb, table, verdict};
use crate::proc::{Cpu, Rss};
use crate::quantile::LatencyHistogram;

/// The figure the project aims at, requests per second.
pub const TARGET_RPS: f64 = 5000.0;
/// Every this many counted `200`s per worker, the body is parsed for the
/// server's `timings_ms` and answer count.
pub const SAMPLE_EVERY: u64 = 16;

/// The server's own timings for one sampled response.
#[derive(Clone, Copy)]
pub struct Sample {
    pub total_ms: f64,
    pub execute_ms: f64,
    pub answers: usize,
}

/// What the workers count (each its own, merged at the end).
#[derive(Default)]
pub struct Tally {
    /// Latency (ns) of every response completed in the window, by file.
    pub latency: Vec<LatencyHistogram>,
    pub statuses: BTreeMap<u16, u64>,
    pub errors: u64,
    pub error_kinds: BTreeMap<String, u64>,
    /// Exchanges that failed outside the window (warm-up, or after it).
    pub errors_outside: u64,
    pub warmup_responses: u64,
    pub connects: u64,
    pub server_closes: u64,
    pub body_bytes: u64,
    pub samples: Vec<Sample>,
}

impl Tally {
    /// Adds `o`'s counts to these.
    pub fn merge(&mut self, o: Tally) {
        if self.latency.len() < o.latency.len() {
            self.latency
                .resize_with(o.latency.len(), LatencyHistogram::new);
        }
        for (a, b) in self.latency.iter_mut().zip(&o.latency) {
            a.add(b);
        }
        for (s, n) in o.statuses {
            *self.statuses.entry(s).or_insert(0) += n;
        }
        self.errors += o.errors;
        for (k, n) in o.error_kinds {
            *self.error_kinds.entry(k).or_insert(0) += n;
        }
        self.errors_outside += o.errors_outside;
        self.warmup_responses += o.warmup_responses;
        self.connects += o.connects;
        self.server_closes += o.server_closes;
        self.body_bytes += o.body_bytes;
        self.samples.extend(o.samples);
    }
}

/// The result of the load phase.
pub struct Load {
    pub tally: Tally,
    /// Measured window, seconds (as planned; the window is fixed).
    pub window_s: f64,
    /// CPU seconds used during the window: by the server, by kgbox-load
    /// (`own`) and machine-wide.
    pub cpu: Cpu,
    /// From the end of the window to the last worker's exit.
    pub drain_ms: f64,
}

/// The latency of a set of responses, in ms.
#[derive(Clone, Copy, Default)]
pub struct Latency {
    pub count: u64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

/// Nearest-rank percentiles of every latency, from the histogram to 3
/// significant digits ([`LatencyHistogram::percentile`]); max and mean
/// exact; in ms, 0 for none.
pub fn latency(h: &LatencyHistogram) -> Latency {
    let ms = |x: Option<u64>| x.map_or(0.0, |ns| ns as f64 / 1e6);
    Latency {
        count: h.count(),
        p50: ms(h.percentile(50.0)),
        p95: ms(h.percentile(95.0)),
        p99: ms(h.percentile(99.0)),
        max: ms(h.max()),
        mean: h.mean().map_or(0.0, |ns| ns / 1e6),
    }
}

fn latency_json(l: &Latency) -> Value {
    json!({
        "count": l.count,
        "p50_ms": l.p50,
        "p95_ms": l.p95,
        "p99_ms": l.p99,
        "max_ms": l.max,
        "mean_ms": l.mean,
    })
}

/// Everything the report shows.
pub struct Report {
    pub target: String,
    pub addr: SocketAddr,
    pub files: Vec<(String, usize)>,
    pub queries: usize,
    pub concurrency: u32,
    pub warmup_s: u32,
    pub top_k: u32,
    pub paths: bool,
    pub nproc: usize,
    pub load_before: String,
    pub load_after: String,
    pub load: Load,
    pub all: Latency,
    pub per_file: Vec<Latency>,
    pub requests: u64,
    pub non_200: u64,
    pub rps: f64,
    pub server_total_ms: (f64, f64),
    pub server_execute_ms: f64,
    pub samples: usize,
    pub sampled_with_answers: usize,
    pub rss_ready: Option<Rss>,
    pub rss_end: Option<Rss>,
    pub setup: Option<(f64, f64, f64)>,
    pub stopped_by_sigterm: Option<bool>,
}

/// CPU seconds over `window_s` as cores busy.
fn cores(cpu_s: Option<f64>, window_s: f64) -> String {
    cpu_s.map_or("n/a".into(), |s| format!("{:.2}", s / window_s))
}

/// The human-readable report: a Markdown table plus a few notes.
pub fn markdown(r: &Report) -> String {
    let l = &r.load;
    let t = &l.tally;
    let mut rows: Vec<[String; 2]> = Vec::new();
    let files: Vec<String> = r.files.iter().map(|(p, n)| format!("{p} ({n})")).collect();
    rows.push([
        "Queries".into(),
        format!(
            "{} from {}{}",
            r.queries,
            files.join(" + "),
            if r.files.len() > 1 { ", shuffled" } else { "" }
        ),
    ]);
    rows.push([
        "Load".into(),
        format!(
            "{} keep-alive connections, {} s warm-up + {:.0} s measured, top_k {}, paths {}",
            r.concurrency,
            r.warmup_s,
            l.window_s,
            r.top_k,
            if r.paths { "on" } else { "off" }
        ),
    ]);
    rows.push([
        "Requests completed in the window".into(),
        r.requests.to_string(),
    ]);
    rows.push(["Errors (transport)".into(), t.errors.to_string()]);
    let statuses: Vec<String> = t
        .statuses
        .iter()
        .filter(|(s, _)| **s != 200)
        .map(|(s, n)| format!("{n} x {s}"))
        .collect();
    rows.push([
        "Non-200 responses".into(),
        if statuses.is_empty() {
            "0".into()
        } else {
            format!("{} ({})", r.non_200, statuses.join(", "))
        },
    ]);
    rows.push([
        "Throughput".into(),
        format!(
            "{:.0} req/s (target >= {TARGET_RPS:.0}: {})",
            r.rps,
            verdict(r.rps >= TARGET_RPS)
        ),
    ]);
    rows.push([
        "Latency p50 / p95 / p99 (3 significant digits) / max".into(),
        format!(
            "{:.2} / {:.2} / {:.2} / {:.2} ms (mean {:.2})",
            r.all.p50, r.all.p95, r.all.p99, r.all.max, r.all.mean
        ),
    ]);
    if r.files.len() > 1 {
        for ((p, _), lat) in r.files.iter().zip(&r.per_file) {
            let name = Path::new(p)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| p.clone());
            rows.push([
                format!("  {name}: requests, p50 / p99"),
                format!("{}, {:.2} / {:.2} ms", lat.count, lat.p50, lat.p99),
            ]);
        }
    }
    rows.push([
        format!(
            "Server timings_ms.total p50 / p99 (every {SAMPLE_EVERY}th 200, n = {})",
            r.samples
        ),
        format!(
            "{:.3} / {:.3} ms (execute p50 {:.3}); {} of {} with answers",
            r.server_total_ms.0,
            r.server_total_ms.1,
            r.server_execute_ms,
            r.sampled_with_answers,
            r.samples
        ),
    ]);
    rows.push([
        "Response body, mean".into(),
        format!(
            "{:.0} bytes",
            t.body_bytes as f64 / r.requests.max(1) as f64
        ),
    ]);
    rows.push([
        "Connections opened / closed by the server".into(),
        format!("{} / {}", t.connects, t.server_closes),
    ]);
    rows.push([
        "CPU in the window: server / kgbox-load / whole machine".into(),
        format!(
            "{} / {} / {} cores busy (of {})",
            cores(l.cpu.server, l.window_s),
            cores(l.cpu.own, l.window_s),
            cores(l.cpu.machine_busy, l.window_s),
            r.nproc
        ),
    ]);
    if let (Some(ready), Some(end)) = (r.rss_ready, r.rss_end) {
        rows.push([
            "Server RSS ready / end / peak (VmRSS, VmHWM)".into(),
            format!(
                "{:.1} / {:.1} / {:.1} MB (end: anon {:.1}, file {:.1})",
                mb(ready.total as f64),
                mb(end.total as f64),
                mb(end.peak as f64),
                mb(end.anon as f64),
                mb(end.file as f64)
            ),
        ]);
    }
    rows.push(["nproc".into(), r.nproc.to_string()]);
    let mut out = format!("kgbox-load: POST /v1/query on {}, {}\n\n", r.addr, r.target);
    out.push_str(&table(["Figure", "Value"], &rows));
    if !t.error_kinds.is_empty() {
        let kinds: Vec<String> = t
            .error_kinds
            .iter()
            .map(|(k, n)| format!("{n} x {k}"))
            .collect();
        out.push_str(&format!("\nerrors: {}\n", kinds.join("; ")));
    }
    out.push_str(&format!(
        "\nwarm-up responses (not counted): {}; exchanges failed outside the window: {}; \
         workers stopped {:.1} ms after the window\n",
        t.warmup_responses, t.errors_outside, l.drain_ms
    ));
    if let Some((pack, install, ready)) = r.setup {
        out.push_str(&format!(
            "setup: pack {pack:.2} s, install {install:.2} s, start to ready {ready:.1} ms\n"
        ));
    }
    if r.stopped_by_sigterm == Some(false) {
        out.push_str("warning: the server ignored SIGTERM for 5 s and was killed\n");
    }
    out.push_str(&format!(
        "load average before / after: {} / {}\n\
         note: kgbox-load runs on the same {} cores as the server, so its own CPU (above) \
         is taken from the server's budget\n",
        r.load_before, r.load_after, r.nproc
    ));
    out
}

fn rss_json(r: &Rss) -> Value {
    json!({
        "vmrss_bytes": r.total,
        "anon_bytes": r.anon,
        "file_bytes": r.file,
        "vmhwm_bytes": r.peak,
    })
}

/// The report as one JSON object.
pub fn json(r: &Report) -> Value {
    let l = &r.load;
    let t = &l.tally;
    let per_core = |s: Option<f64>| s.map(|s| s / l.window_s);
    json!({
        "target": r.target,
        "addr": r.addr.to_string(),
        "query_files": r.files.iter().zip(&r.per_file).map(|((p, n), lat)| json!({
            "path": p,
            "queries": n,
            "latency": latency_json(lat),
        })).collect::<Vec<_>>(),
        "queries": r.queries,
        "concurrency": r.concurrency,
        "warmup_s": r.warmup_s,
        "window_s": l.window_s,
        "top_k": r.top_k,
        "paths": r.paths,
        "nproc": r.nproc,
        "load_average_before": r.load_before,
        "load_average_after": r.load_after,
        "requests": r.requests,
        "errors": t.errors,
        "error_kinds": t.error_kinds,
        "non_200": r.non_200,
        "statuses": t.statuses.iter().map(|(s, n)| (s.to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
        "throughput_rps": r.rps,
        "target_rps": TARGET_RPS,
        "ok": r.rps >= TARGET_RPS,
        "latency": latency_json(&r.all),
        "server_timings_sample": {
            "every": SAMPLE_EVERY,
            "count": r.samples,
            "total_p50_ms": r.server_total_ms.0,
            "total_p99_ms": r.server_total_ms.1,
            "execute_p50_ms": r.server_execute_ms,
            "with_answers": r.sampled_with_answers,
        },
        "response_body_mean_bytes": t.body_bytes as f64 / r.requests.max(1) as f64,
        "connections_opened": t.connects,
        "connections_closed_by_server": t.server_closes,
        "warmup_responses": t.warmup_responses,
        "errors_outside_window": t.errors_outside,
        "drain_ms": l.drain_ms,
        "cpu_cores_busy": {
            "server": per_core(l.cpu.server),
            "kgbox_load": per_core(l.cpu.own),
            "machine": per_core(l.cpu.machine_busy),
            "machine_total_s": l.cpu.machine_total,
        },
        "server_rss_ready": r.rss_ready.as_ref().map(rss_json),
        "server_rss_end": r.rss_end.as_ref().map(rss_json),
        "setup": r.setup.map(|(pack, install, ready)| json!({
            "pack_s": pack,
            "install_s": install,
            "ready_ms": ready,
        })),
        "stopped_by_sigterm": r.stopped_by_sigterm,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_is_nearest_rank_in_ms() {
        let mut h = LatencyHistogram::new();
        for x in (1..=100u64).rev() {
            h.record(x * 1_000_000);
        }
        let l = latency(&h);
        assert_eq!((l.count, l.max, l.mean), (100, 100.0, 50.5));
        // The 50th, 95th and 99th value, to 3 significant digits, never below.
        for (got, want) in [(l.p50, 50.0), (l.p95, 95.0), (l.p99, 99.0)] {
            assert!(
                got >= want && got - want <= want / 1000.0,
                "{got} against {want}"
            );
        }
        let none = latency(&LatencyHistogram::new());
        assert_eq!(
            (none.count, none.p50, none.max, none.mean),
            (0, 0.0, 0.0, 0.0)
        );
    }
}
