//! Turning the measurements into a Markdown table ([`table`]) or a JSON
//! object: kgbox-perf's figures here, kgbox-load's in [`load`].

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};

use crate::measure::{PackFigures, ServeRun, PACK_LEVEL};
use crate::quantile::percentile;

pub mod load;

pub const TARGET_PACK_S: f64 = 5.0;
pub const TARGET_READY_MS: f64 = 50.0;
/// MB = 10^6 bytes.
pub const TARGET_RSS_MB: f64 = 50.0;

pub struct Figures {
    pub kb: String,
    pub runs: usize,
    pub kgbox: String,
    pub pack: PackFigures,
    pub tsv_bytes: u64,
    pub zstd19_bytes: u64,
    pub install: Vec<Duration>,
    pub image_bytes: u64,
    pub image_allocated: u64,
    pub serve: Vec<ServeRun>,
    pub entity_names: usize,
    /// `/proc/loadavg` before and after (other load skews the timings).
    pub load_before: String,
    pub load_after: String,
}

/// The median of unsorted values: their nearest-rank p50 ([`percentile`]),
/// the middle value, the lower of the two middle ones for an even count; 0
/// for none.
pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    percentile(&v, 50.0).unwrap_or(0.0)
}

pub fn max(xs: &[f64]) -> f64 {
    xs.iter().copied().fold(0.0, f64::max)
}

fn secs(ds: &[Duration]) -> Vec<f64> {
    ds.iter().map(Duration::as_secs_f64).collect()
}

fn mb(bytes: f64) -> f64 {
    bytes / 1e6
}

struct Derived {
    pack_s: f64,
    install_s: f64,
    ready_ms: Vec<f64>,
    ready_med_ms: f64,
    ready_max_ms: f64,
    reported_ms: Vec<f64>,
    rss_ready: Vec<f64>,
    rss_after: Vec<f64>,
    anon_ready: Vec<f64>,
    file_ready: Vec<f64>,
    anon_after: Vec<f64>,
    file_after: Vec<f64>,
    peak: Vec<f64>,
    statuses: BTreeMap<u16, usize>,
    requests: usize,
    request_ms: f64,
    forced_kills: usize,
}

fn derive(f: &Figures) -> Derived {
    let ready_ms: Vec<f64> = f
        .serve
        .iter()
        .map(|r| r.ready.as_secs_f64() * 1e3)
        .collect();
    let col = |g: &dyn Fn(&ServeRun) -> u64| -> Vec<f64> {
        f.serve.iter().map(|r| g(r) as f64).collect()
    };
    let mut statuses = BTreeMap::new();
    for r in &f.serve {
        for (s, n) in &r.statuses {
            *statuses.entry(*s).or_insert(0) += n;
        }
    }
    let requests: usize = f.serve.iter().map(|r| r.requests).sum();
    let req_time: f64 = f.serve.iter().map(|r| r.requests_time.as_secs_f64()).sum();
    Derived {
        pack_s: median(&secs(&f.pack.times)),
        install_s: median(&secs(&f.install)),
        ready_med_ms: median(&ready_ms),
        ready_max_ms: max(&ready_ms),
        ready_ms,
        reported_ms: f
            .serve
            .iter()
            .filter_map(|r| r.startup_reported.map(|s| s * 1e3))
            .collect(),
        rss_ready: col(&|r| r.rss_ready.total),
        rss_after: col(&|r| r.rss_after.total),
        anon_ready: col(&|r| r.rss_ready.anon),
        file_ready: col(&|r| r.rss_ready.file),
        anon_after: col(&|r| r.rss_after.anon),
        file_after: col(&|r| r.rss_after.file),
        peak: col(&|r| r.rss_after.peak),
        statuses,
        requests,
        request_ms: if requests == 0 {
            0.0
        } else {
            req_time * 1e3 / requests as f64
        },
        forced_kills: f.serve.iter().filter(|r| !r.graceful).count(),
    }
}

/// A Markdown table with a header row, every column padded to its widest
/// cell.
pub fn table<const N: usize>(header: [&str; N], rows: &[[String; N]]) -> String {
    let mut widths = header.map(|h| h.chars().count());
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: [&str; N]| -> String {
        let mut s = String::from("|");
        for (c, w) in cells.iter().zip(widths) {
            s.push_str(&format!(" {c:<w$} |"));
        }
        s.push('\n');
        s
    };
    let mut out = line(header);
    out.push_str(&line(
        widths.map(|w| "-".repeat(w)).each_ref().map(String::as_str),
    ));
    for r in rows {
        out.push_str(&line(r.each_ref().map(String::as_str)));
    }
    out
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "ok"
    } else {
        "MISSED"
    }
}

/// The human-readable report: a Markdown table plus a few notes.
pub fn markdown(f: &Figures) -> String {
    let d = derive(f);
    let n = f.runs;
    let per_run = f.serve.first().map(|r| r.requests).unwrap_or_default();
    let rows: Vec<[String; 4]> = vec![
        [
            format!("Pack time (median of {n}, in-process, zstd level {PACK_LEVEL})"),
            format!("{:.2} s", d.pack_s),
            format!("<= {TARGET_PACK_S} s"),
            verdict(d.pack_s <= TARGET_PACK_S).into(),
        ],
        [
            "  read / build / compress+sign+write (last run)".into(),
            format!(
                "{:.2} / {:.2} / {:.2} s",
                f.pack.read.as_secs_f64(),
                f.pack.build.as_secs_f64(),
                f.pack.write.as_secs_f64()
            ),
            String::new(),
            String::new(),
        ],
        [
            "TSV size".into(),
            format!("{:.2} MB", mb(f.tsv_bytes as f64)),
            String::new(),
            String::new(),
        ],
        [
            "zstd -19 of the TSV".into(),
            format!("{:.2} MB", mb(f.zstd19_bytes as f64)),
            String::new(),
            String::new(),
        ],
        [
            "Bundle size".into(),
            format!("{:.2} MB", mb(f.pack.bundle_bytes as f64)),
            String::new(),
            String::new(),
        ],
        [
            "Bundle / zstd -19".into(),
            format!(
                "{:.2}x",
                f.pack.bundle_bytes as f64 / f.zstd19_bytes.max(1) as f64
            ),
            String::new(),
            String::new(),
        ],
        [
            format!("Install time (median of {n}, `kgbox install`, fresh data dir)"),
            format!("{:.0} ms", d.install_s * 1e3),
            String::new(),
            String::new(),
        ],
        [
            "Image size on disk".into(),
            format!(
                "{:.2} MB ({:.2} MB allocated)",
                mb(f.image_bytes as f64),
                mb(f.image_allocated as f64)
            ),
            String::new(),
            String::new(),
        ],
        [
            format!("Start to ready, median of {n} (spawn to first 200 from /readyz)"),
            format!("{:.1} ms", d.ready_med_ms),
            format!("<= {TARGET_READY_MS} ms"),
            verdict(d.ready_med_ms <= TARGET_READY_MS).into(),
        ],
        [
            format!("Start to ready, max of {n}"),
            format!("{:.1} ms", d.ready_max_ms),
            format!("<= {TARGET_READY_MS} ms"),
            verdict(d.ready_max_ms <= TARGET_READY_MS).into(),
        ],
        [
            "  server's own kgbox_startup_seconds, median".into(),
            if d.reported_ms.is_empty() {
                "n/a".into()
            } else {
                format!("{:.1} ms", median(&d.reported_ms))
            },
            String::new(),
            String::new(),
        ],
        [
            "RSS once ready (VmRSS, median)".into(),
            format!(
                "{:.1} MB (anon {:.1}, file {:.1})",
                mb(median(&d.rss_ready)),
                mb(median(&d.anon_ready)),
                mb(median(&d.file_ready))
            ),
            format!("<= {TARGET_RSS_MB} MB"),
            verdict(mb(max(&d.rss_ready)) <= TARGET_RSS_MB).into(),
        ],
        [
            format!("RSS after {per_run} entity GETs (VmRSS, median)"),
            format!(
                "{:.1} MB (anon {:.1}, file {:.1})",
                mb(median(&d.rss_after)),
                mb(median(&d.anon_after)),
                mb(median(&d.file_after))
            ),
            format!("<= {TARGET_RSS_MB} MB"),
            verdict(mb(max(&d.rss_after)) <= TARGET_RSS_MB).into(),
        ],
        [
            "  peak RSS (VmHWM, max)".into(),
            format!("{:.1} MB", mb(max(&d.peak))),
            String::new(),
            String::new(),
        ],
    ];
    let mut out = format!(
        "kgbox foundation performance: {} ({} triples, {} entities, {} relations), {n} runs\n\n",
        f.kb, f.pack.triples, f.pack.entities, f.pack.relations
    );
    out.push_str(&table(["Figure", "Value", "Target", ""], &rows));
    let statuses: Vec<String> = d
        .statuses
        .iter()
        .map(|(s, c)| format!("{c} x {s}"))
        .collect();
    out.push_str(&format!(
        "\nstart to ready, each run (ms): {}\n",
        d.ready_ms
            .iter()
            .map(|x| format!("{x:.1}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let spawn_ms: Vec<f64> = f
        .serve
        .iter()
        .map(|r| r.spawn.as_secs_f64() * 1e3)
        .collect();
    let connect_ms: Vec<f64> = f
        .serve
        .iter()
        .map(|r| r.first_connect.as_secs_f64() * 1e3)
        .collect();
    out.push_str(&format!(
        "start to ready, medians: spawn() returned {:.2} ms, first TCP connect {:.2} ms, first 200 {:.2} ms\n",
        median(&spawn_ms),
        median(&connect_ms),
        d.ready_med_ms
    ));
    out.push_str(&format!(
        "entity GETs: {} over {} distinct heads, {:.2} ms each on average (new connection each); statuses: {}\n",
        d.requests,
        f.entity_names,
        d.request_ms,
        statuses.join(", ")
    ));
    if d.forced_kills > 0 {
        out.push_str(&format!(
            "warning: {} server(s) ignored SIGTERM for 5 s and were killed\n",
            d.forced_kills
        ));
    }
    out.push_str(&format!(
        "load average before / after: {} / {}; kgbox binary: {}\n",
        f.load_before, f.load_after, f.kgbox
    ));
    out
}

pub fn json(f: &Figures) -> Value {
    let d = derive(f);
    let serve_runs: Vec<Value> = f
        .serve
        .iter()
        .map(|r| {
            json!({
                "ready_ms": r.ready.as_secs_f64() * 1e3,
                "ready_attempts": r.attempts,
                "spawn_ms": r.spawn.as_secs_f64() * 1e3,
                "first_connect_ms": r.first_connect.as_secs_f64() * 1e3,
                "startup_reported_ms": r.startup_reported.map(|s| s * 1e3),
                "rss_ready_bytes": r.rss_ready.total,
                "rss_ready_anon_bytes": r.rss_ready.anon,
                "rss_ready_file_bytes": r.rss_ready.file,
                "rss_after_bytes": r.rss_after.total,
                "rss_after_anon_bytes": r.rss_after.anon,
                "rss_after_file_bytes": r.rss_after.file,
                "rss_peak_bytes": r.rss_after.peak,
                "requests": r.requests,
                "requests_ms": r.requests_time.as_secs_f64() * 1e3,
                "statuses": r.statuses.iter().map(|(s, n)| (s.to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
                "stopped_by_sigterm": r.graceful,
            })
        })
        .collect();
    json!({
        "kb": f.kb,
        "runs": f.runs,
        "kgbox": f.kgbox,
        "load_average_before": f.load_before,
        "load_average_after": f.load_after,
        "graph": {
            "triples": f.pack.triples,
            "entities": f.pack.entities,
            "relations": f.pack.relations,
        },
        "pack": {
            "level": PACK_LEVEL,
            "median_s": d.pack_s,
            "runs_s": secs(&f.pack.times),
            "last_read_s": f.pack.read.as_secs_f64(),
            "last_build_s": f.pack.build.as_secs_f64(),
            "last_write_s": f.pack.write.as_secs_f64(),
            "target_s": TARGET_PACK_S,
            "ok": d.pack_s <= TARGET_PACK_S,
        },
        "sizes": {
            "tsv_bytes": f.tsv_bytes,
            "tsv_zstd19_bytes": f.zstd19_bytes,
            "bundle_bytes": f.pack.bundle_bytes,
            "bundle_over_zstd19": f.pack.bundle_bytes as f64 / f.zstd19_bytes.max(1) as f64,
            "image_bytes": f.image_bytes,
            "image_allocated_bytes": f.image_allocated,
        },
        "install": {
            "median_s": d.install_s,
            "runs_s": secs(&f.install),
        },
        "start_to_ready": {
            "median_ms": d.ready_med_ms,
            "max_ms": d.ready_max_ms,
            "runs_ms": d.ready_ms,
            "startup_reported_median_ms": (!d.reported_ms.is_empty()).then(|| median(&d.reported_ms)),
            "target_ms": TARGET_READY_MS,
            "ok": d.ready_max_ms <= TARGET_READY_MS,
        },
        "rss": {
            "ready_median_bytes": median(&d.rss_ready) as u64,
            "ready_max_bytes": max(&d.rss_ready) as u64,
            "after_requests_median_bytes": median(&d.rss_after) as u64,
            "after_requests_max_bytes": max(&d.rss_after) as u64,
            "peak_max_bytes": max(&d.peak) as u64,
            "requests_per_run": f.serve.first().map(|r| r.requests),
            "target_bytes": (TARGET_RSS_MB * 1e6) as u64,
            "ok": max(&d.rss_ready).max(max(&d.rss_after)) <= TARGET_RSS_MB * 1e6,
        },
        "serve_runs": serve_runs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_pads_every_column_to_its_widest_cell() {
        let rows = [
            ["a".to_string(), "12 µs".to_string()],
            ["longer name".to_string(), "1".to_string()],
        ];
        assert_eq!(
            table(["Figure", "Value"], &rows),
            "| Figure      | Value |\n\
             | ----------- | ----- |\n\
             | a           | 12 µs |\n\
             | longer name | 1     |\n"
        );
    }
}
