//! `/metrics` as a Prometheus server sees it: `promtool check metrics` is
//! clean on a real scrape, the standard `process_*` series are there, and a
//! real Prometheus (Debian's `prometheus`) scraping the device computes
//! `histogram_quantile(0.99, …)` of the request latency, which must equal
//! the same interpolation done here from the scraped buckets.
#![allow(clippy::unwrap_used)]

use std::io::Write as _;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kgbox_testkit::*;

const QUERY: &str = r#"{"query": "\"Blade Runner\" -> directed_by"}"#;
const ROUTE: &str = "/v1/query";

/// A device serving the demo that answered `n` queries and a few errors.
fn busy_server(n: usize) -> (Device, Server) {
    let device = Device::new(&[], "");
    let server = device.serve();
    for _ in 0..n {
        let (status, body) = server.post(ROUTE, "application/json", QUERY);
        assert_eq!(status, 200, "{body}");
    }
    for _ in 0..3 {
        assert_eq!(server.get("/v1/entities/No%20Such%20Film").0, 404);
    }
    (device, server)
}

/// (upper bound, cumulative count) of `series`'s buckets in a scrape.
fn buckets(text: &str, series: &str, route: &str) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = text
        .lines()
        .filter(|l| l.starts_with(&format!("{series}_bucket{{")))
        .filter(|l| l.contains(&format!("route=\"{route}\"")))
        .map(|l| {
            let le = l.split("le=\"").nth(1).unwrap().split('"').next().unwrap();
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().unwrap()
            };
            let count: f64 = l.rsplit(' ').next().unwrap().parse().unwrap();
            (le, count)
        })
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

/// `histogram_quantile` as Prometheus defines it: the bucket holding rank
/// q·count, linear interpolation inside it (from 0 for the first bucket);
/// the last finite bound when the rank falls in `+Inf`.
fn quantile(q: f64, buckets: &[(f64, f64)]) -> f64 {
    let total = buckets.last().unwrap().1;
    let rank = q * total;
    let mut lower = (0.0, 0.0);
    for &(le, count) in buckets {
        if count >= rank {
            if le.is_infinite() {
                return lower.0;
            }
            let (lo, below) = lower;
            return lo + (le - lo) * (rank - below) / (count - below);
        }
        lower = (le, count);
    }
    unreachable!("the +Inf bucket holds every sample")
}

#[test]
fn promtool_accepts_a_real_scrape_with_histograms_process_series_and_error_codes() {
    let (device, server) = busy_server(40);
    let (status, text) = server.get("/metrics");
    assert_eq!(status, 200);
    let file = device.dir.path().join("scrape.txt");
    std::fs::write(&file, &text).unwrap();
    let o = run(Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(&file).unwrap()));
    assert!(
        o.status.success() && o.stdout.is_empty() && o.stderr.is_empty(),
        "promtool check metrics: {}{}",
        stdout(&o),
        stderr(&o)
    );

    // A histogram per route, 40 samples in the query route's.
    assert!(text.contains("# TYPE kgbox_http_request_duration_seconds histogram"));
    let b = buckets(&text, "kgbox_http_request_duration_seconds", ROUTE);
    assert_eq!(b.len(), 19, "18 bounds and +Inf: {b:?}");
    assert_eq!(b.last().unwrap(), &(f64::INFINITY, 40.0));
    assert!(b.windows(2).all(|w| w[0].1 <= w[1].1), "cumulative: {b:?}");
    assert!(text.contains(&format!(
        "kgbox_http_request_duration_seconds_count{{route=\"{ROUTE}\"}} 40"
    )));
    // Counters by route and status, and by error code.
    assert_eq!(
        metric_in(
            &text,
            "kgbox_http_requests_total{route=\"/v1/query\",status=\"200\"}"
        ),
        40
    );
    assert_eq!(
        metric_in(
            &text,
            "kgbox_http_errors_total{route=\"/v1/entities/{*name}\",code=\"entity_not_found\"}"
        ),
        3
    );
    // The standard process series, not kgbox_-prefixed ones.
    for series in [
        "process_resident_memory_bytes",
        "process_virtual_memory_bytes",
        "process_start_time_seconds",
        "process_open_fds",
        "process_max_fds",
        "process_cpu_seconds_total",
        "process_threads",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(&format!("{series} "))),
            "{series} missing:\n{text}"
        );
    }
    assert!(!text.contains("kgbox_process_resident_memory_bytes"));
    assert!(metric_in(&text, "process_open_fds") > 3);
    // An asked question times its stages.
    let (status, body) = server.post(
        "/v1/ask",
        "application/json",
        r#"{"question": "who directed [Blade Runner]"}"#,
    );
    assert_eq!(status, 200, "{body}");
    let (_, text) = server.get("/metrics");
    for stage in ["link", "plan", "execute", "total"] {
        assert!(
            text.contains(&format!(
                "kgbox_ask_stage_duration_seconds_count{{stage=\"{stage}\"}} 1"
            )),
            "{stage}:\n{text}"
        );
    }
    assert!(text.contains("kgbox_execute_duration_seconds_count{executor="));
}

/// A Prometheus server scraping `target` every second, its data in `dir`.
struct Prometheus {
    child: Child,
    port: u16,
}

impl Prometheus {
    fn start(dir: &std::path::Path, target: u16) -> Prometheus {
        let config = dir.join("prometheus.yml");
        let mut f = std::fs::File::create(&config).unwrap();
        write!(
            f,
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: kgbox\n    static_configs:\n      - targets: ['127.0.0.1:{target}']\n"
        )
        .unwrap();
        let port = free_port();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus (Debian package `prometheus`; scripts/setup.sh --dev installs it)");
        Prometheus { child, port }
    }

    /// The value of an instant `query`, once it has one.
    fn value(&self, query: &str) -> f64 {
        let url = format!("http://127.0.0.1:{}/api/v1/query", self.port);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(mut r) = client(Duration::from_secs(5))
                .get(&url)
                .query("query", query)
                .call()
            {
                let v: serde_json::Value = r.body_mut().read_json().unwrap();
                if let Some(x) = v["data"]["result"][0]["value"][1].as_str() {
                    return x.parse().unwrap();
                }
            }
            assert!(Instant::now() < deadline, "no value for {query}");
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_real_prometheus_computes_the_p99_of_the_request_latency() {
    let (device, server) = busy_server(60);
    let prometheus = Prometheus::start(device.dir.path(), server.port);
    let count = prometheus.value(&format!(
        "kgbox_http_request_duration_seconds_count{{route=\"{ROUTE}\"}}"
    ));
    assert_eq!(count, 60.0);
    let p99 = prometheus.value(&format!(
        "histogram_quantile(0.99, sum by (le) (kgbox_http_request_duration_seconds_bucket{{route=\"{ROUTE}\"}}))"
    ));
    // The same rule applied here to the device's own buckets.
    let (_, text) = server.get("/metrics");
    let b = buckets(&text, "kgbox_http_request_duration_seconds", ROUTE);
    assert_eq!(b.last().unwrap().1, 60.0, "no request since");
    let expected = quantile(0.99, &b);
    eprintln!("p99 of {ROUTE} over 60 requests: {:.3} ms", p99 * 1000.0);
    assert!(p99 > 0.0 && p99 <= 10.0, "{p99}");
    assert!(
        (p99 - expected).abs() <= 1e-9 * expected.max(1e-6),
        "Prometheus {p99}, from the buckets {expected}"
    );
}
