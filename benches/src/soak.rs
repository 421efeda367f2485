//! Soak and abuse over HTTP (`kgbox-soak`): live clients that check every
//! answer against the first one seen, a sampler of the server's memory and
//! open files, and the abuse a device on a shared network meets (idle and
//! slow sockets, oversized and deeply nested bodies, fan-out queries).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::keepalive::{post_json, Client, Request};

/// The answer names of a `/v1/query` body, sorted (the comparison key).
pub fn answer_names(body: &[u8]) -> Option<Vec<String>> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let mut names: Vec<String> = v["answers"]
        .as_array()?
        .iter()
        .filter_map(|a| a["name"].as_str().map(str::to_string))
        .collect();
    names.sort();
    Some(names)
}

/// What the live clients saw.
#[derive(Debug, Default)]
pub struct LiveTally {
    pub requests: AtomicU64,
    /// Transport errors and statuses other than 200.
    pub errors: AtomicU64,
    /// 200s whose answers differ from the first answer to that query.
    pub wrong: AtomicU64,
    /// Latencies in µs, by phase (0: before the abuse, 1: during, 2: after).
    pub latencies: Mutex<[Vec<u32>; 3]>,
    pub first_error: Mutex<Option<String>>,
}

/// Which phase the run is in (see [`LiveTally::latencies`]).
pub static PHASE: AtomicU64 = AtomicU64::new(0);

/// One live client: `queries` round-robin from `offset`, one every
/// `interval`, each answer compared with `gold` (the answers first seen).
pub fn live_client(
    addr: SocketAddr,
    queries: Arc<Vec<(String, Request)>>,
    gold: Arc<HashMap<String, Vec<String>>>,
    offset: usize,
    interval: Duration,
    stop: Arc<AtomicBool>,
    tally: Arc<LiveTally>,
) {
    let mut client = Client::new(addr, Duration::from_secs(30));
    let mut next = Instant::now();
    let mut i = offset;
    while !stop.load(Ordering::Relaxed) {
        let (query, request) = &queries[i % queries.len()];
        i += 1;
        let t = Instant::now();
        let outcome = client.exchange(request);
        let micros = t.elapsed().as_micros().min(u32::MAX as u128) as u32;
        tally.requests.fetch_add(1, Ordering::Relaxed);
        let phase = PHASE.load(Ordering::Relaxed).min(2) as usize;
        if let Ok(mut l) = tally.latencies.lock() {
            l[phase].push(micros);
        }
        let problem = match outcome {
            Ok(r) if r.status == 200 => match (answer_names(client.body()), gold.get(query)) {
                (Some(names), Some(expected)) if &names == expected => None,
                (got, _) => {
                    tally.wrong.fetch_add(1, Ordering::Relaxed);
                    Some(format!("{query}: answers {got:?}"))
                }
            },
            Ok(r) => {
                tally.errors.fetch_add(1, Ordering::Relaxed);
                Some(format!("{query}: status {}", r.status))
            }
            Err(e) => {
                tally.errors.fetch_add(1, Ordering::Relaxed);
                Some(format!("{query}: {e}"))
            }
        };
        if let Some(p) = problem {
            if let Ok(mut f) = tally.first_error.lock() {
                f.get_or_insert(p);
            }
        }
        next += interval;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            next = now;
        }
    }
}

/// One sample of the server process.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub at_s: f64,
    /// The run's phase then (see [`PHASE`]).
    pub phase: u64,
    pub rss: u64,
    pub anon: u64,
    pub fds: usize,
}

/// Samples `pid` every `every` until `stop`.
pub fn sample(pid: u32, every: Duration, stop: Arc<AtomicBool>, out: Arc<Mutex<Vec<Sample>>>) {
    let start = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        if let Ok(r) = crate::proc::rss(pid) {
            let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
                .map(|d| d.count())
                .unwrap_or(0);
            if let Ok(mut o) = out.lock() {
                o.push(Sample {
                    at_s: start.elapsed().as_secs_f64(),
                    phase: PHASE.load(Ordering::Relaxed),
                    rss: r.total,
                    anon: r.anon,
                    fds,
                });
            }
        }
        let until = Instant::now() + every;
        while Instant::now() < until && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// What the abuse threads did and got back.
#[derive(Debug, Default)]
pub struct AbuseTally {
    /// Idle and slow sockets opened, and how many the server closed.
    pub sockets_opened: AtomicU64,
    pub sockets_closed_by_server: AtomicU64,
    /// Hostile requests sent, and their answers by status (0: no answer).
    pub statuses: Mutex<HashMap<(String, u16), u64>>,
}

impl AbuseTally {
    fn count(&self, what: &str, status: u16) {
        if let Ok(mut s) = self.statuses.lock() {
            *s.entry((what.to_string(), status)).or_default() += 1;
        }
    }
}

/// Holds `n` sockets open until `stop`: half send nothing, half an
/// unfinished request head. Counts those the server closes.
pub fn idle_sockets(addr: SocketAddr, n: usize, stop: Arc<AtomicBool>, tally: Arc<AbuseTally>) {
    let mut socks = Vec::new();
    for i in 0..n {
        let Ok(mut s) = TcpStream::connect(addr) else {
            continue;
        };
        if i % 2 == 1 {
            let _ = s.write_all(b"POST /v1/query HTTP/1.1\r\nHost: soak\r\n");
        }
        let _ = s.set_nonblocking(true);
        tally.sockets_opened.fetch_add(1, Ordering::Relaxed);
        socks.push(Some(s));
    }
    let mut buf = [0u8; 512];
    while !stop.load(Ordering::Relaxed) {
        for slot in socks.iter_mut() {
            if let Some(s) = slot {
                // Ok(0): the server closed it; WouldBlock: still open.
                if matches!(s.read(&mut buf), Ok(0)) {
                    tally
                        .sockets_closed_by_server
                        .fetch_add(1, Ordering::Relaxed);
                    *slot = None;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Slow-loris: `n` sockets each sending its request head (`body` false) or
/// a declared 100 kB body (`body` true) one byte every `every`.
pub fn slow_sockets(
    addr: SocketAddr,
    n: usize,
    body: bool,
    every: Duration,
    stop: Arc<AtomicBool>,
    tally: Arc<AbuseTally>,
) {
    let what = if body { "slow body" } else { "slow headers" };
    let head = if body {
        "POST /v1/query HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"query\": \"".to_string()
    } else {
        "POST /v1/query HTTP/1.1\r\nHost: soak\r\nX-Slow: ".to_string()
    };
    let mut socks: Vec<Option<TcpStream>> = Vec::new();
    for _ in 0..n {
        if let Ok(mut s) = TcpStream::connect(addr) {
            let start = if body {
                head.as_bytes()
            } else {
                &head.as_bytes()[..16]
            };
            let _ = s.write_all(start);
            tally.sockets_opened.fetch_add(1, Ordering::Relaxed);
            socks.push(Some(s));
        }
    }
    while !stop.load(Ordering::Relaxed) {
        for slot in socks.iter_mut() {
            if let Some(s) = slot {
                if s.write_all(b"a").is_err() {
                    tally
                        .sockets_closed_by_server
                        .fetch_add(1, Ordering::Relaxed);
                    tally.count(what, 0);
                    *slot = None;
                }
            }
        }
        std::thread::sleep(every);
    }
}

/// Sends hostile requests, about 20 a second, until `stop`: a body over the limit,
/// deeply nested JSON, and `fanout` queries (hub-touching; each must be
/// answered or refused, never a 5xx). Records every status.
pub fn hostile_requests(
    addr: SocketAddr,
    body_limit: usize,
    fanout: Vec<String>,
    stop: Arc<AtomicBool>,
    tally: Arc<AbuseTally>,
) {
    let host = addr.to_string();
    let oversized = post_json(&host, "/v1/query", &vec![b' '; body_limit + 1]);
    let depth = 100_000;
    let mut nested = b"{\"query\": ".to_vec();
    nested.extend(std::iter::repeat_n(b'[', depth));
    nested.extend(std::iter::repeat_n(b']', depth));
    nested.push(b'}');
    let nested = post_json(&host, "/v1/query", &nested);
    let fanout: Vec<Request> = fanout
        .iter()
        .map(|q| {
            let body = serde_json::json!({"query": q, "top_k": 10}).to_string();
            post_json(&host, "/v1/query", body.as_bytes())
        })
        .collect();
    let mut client = Client::new(addr, Duration::from_secs(60));
    let mut i = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let (what, req) = match i % 3 {
            0 => ("oversized body", &oversized),
            1 => ("nested JSON", &nested),
            _ if !fanout.is_empty() => ("fan-out query", &fanout[i / 3 % fanout.len()]),
            _ => ("nested JSON", &nested),
        };
        i += 1;
        let status = client.exchange(req).map(|r| r.status).unwrap_or(0);
        tally.count(what, status);
        // About 20 a second: abuse, not a benchmark of the attacker.
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// p-th percentile of µs latencies in ms, by the nearest-rank rule of
/// [`crate::quantile::percentile`] (exact); 0 for none.
pub fn percentile_ms(v: &mut [u32], p: f64) -> f64 {
    v.sort_unstable();
    crate::quantile::percentile(v, p).map_or(0.0, |us| f64::from(us) / 1e3)
}
