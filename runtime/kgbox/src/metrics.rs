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
