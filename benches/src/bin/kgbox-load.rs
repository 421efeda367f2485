//! `kgbox-load`: a bounded, loopback-only HTTP load generator for `POST /v1/query`.
//!
//! ```text
//! cargo build --release -p kgbox -p kgbox-benches
//! cargo run --release -p kgbox-benches --bin kgbox-load -- \
//!     --kb $DATA/metaqa/kb.tsv --queries $SCRATCH/gold2.tsv \
//!     [--queries FILE ...] [--concurrency 32] [--seconds 10] [--warmup 2] [--json]
//! cargo run --release -p kgbox-benches --bin kgbox-load -- \
//!     --url http://127.0.0.1:8080 --queries $SCRATCH/gold2.tsv
//! ```
//!
//! With `--kb` it packs the KB in-process (fixed-seed key) into a temporary
//! directory, installs it with the `kgbox` binary next to this one, starts
//! `kgbox serve` on a free loopback port (`[http] max_concurrency` at least
//! the load concurrency, `[log] level = "warn"`), waits for `/readyz`, runs
//! the load, reads the server's resident memory and stops it (also on
//! errors and on SIGINT/SIGTERM/SIGHUP) and removes the directory. With
//! `--url` it loads a server that is already running (loopback only).
//!
//! Query files hold `<DSL><TAB>answers` lines (see
//! `benches/metaqa/gold_queries.py`); only the DSL is sent, as
//! `{"query": DSL, "top_k": K}`, each request prepared once up front.
//! Several files are mixed (one fixed-seed shuffle of all their lines).
//! `--concurrency` threads each keep one keep-alive HTTP/1.1 connection
//! (hyper's client, TCP_NODELAY; [`kgbox_benches::keepalive`]) and walk the
//! queries round-robin from their own offset, reconnecting after an error. Responses that complete during the warm-up
//! are not counted; the measured window is `--seconds` long, after which no
//! new request is sent. Every exchange, connecting included, has a timeout
//! (`--timeout-ms`).
//!
//! Each worker records its latencies in one HDR histogram per file
//! ([`LatencyHistogram`], 3 significant digits, memory independent of the
//! run's length), merged at the end; the percentiles are nearest rank over
//! every response, the rule of every bench ([`kgbox_benches::quantile`]),
//! the max and mean exact. The CPU time of the window is read from `/proc`
//! ([`Cpu`]); the report, a Markdown table or JSON, is
//! [`kgbox_benches::report::load`]'s.

use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Parser;
use kgbox_benches::keepalive::{self, Client};
use kgbox_benches::proc::{self, load_average, Cpu};
use kgbox_benches::quantile::{percentile, LatencyHistogram};
use kgbox_benches::report::load::{
    self as load_report, latency, Load, Report, Sample, Tally, SAMPLE_EVERY,
};
use kgbox_benches::{http, measure};
use serde_json::{json, Value};
use url::{Host, Url};

#[derive(Parser)]
#[command(
    name = "kgbox-load",
    about = "Bounded loopback load on POST /v1/query: throughput, latency, server RSS"
)]
struct Args {
    /// The KB TSV to pack, install and serve (e.g. $DATA/metaqa/kb.tsv, where $DATA holds the data sets).
    #[arg(long, required_unless_present = "url", conflicts_with = "url")]
    kb: Option<PathBuf>,
    /// Load an already running server instead (http://127.0.0.1:PORT; loopback only).
    #[arg(long)]
    url: Option<String>,
    /// A query file, `<DSL><TAB>answers` per line (repeat to mix several).
    #[arg(long = "queries", required = true)]
    queries: Vec<PathBuf>,
    /// Worker threads, one keep-alive connection each.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=1024))]
    concurrency: u32,
    /// Measured seconds.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=3600))]
    seconds: u32,
    /// Warm-up seconds before the measured window (not counted).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=600))]
    warmup: u32,
    /// `top_k` of every request.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    top_k: u32,
    /// Send `"paths": false` (no provenance paths in the answers).
    #[arg(long)]
    no_paths: bool,
    /// Limit on one whole exchange (connect, write, read).
    #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(u32).range(10..=120_000))]
    timeout_ms: u32,
    /// Print a JSON object instead of the table.
    #[arg(long)]
    json: bool,
    /// The `kgbox` binary (default: next to this executable).
    #[arg(long)]
    kgbox: Option<PathBuf>,
}

/// Pause after a failed exchange, so that a dead server is not spun on.
const ERROR_BACKOFF: Duration = Duration::from_millis(5);
const READY_LIMIT: Duration = Duration::from_secs(30);
const INSTALL_RUNS: usize = 1;

fn step(msg: &str) {
    eprintln!("kgbox-load: {msg}");
}

/// `http://HOST[:PORT][/]` with HOST a loopback IP literal or `localhost`
/// (parsed by the `url` crate).
fn parse_url(url: &str) -> Result<SocketAddr> {
    let parsed = Url::parse(url).with_context(|| format!("--url {url:?}: not a URL"))?;
    if parsed.scheme() != "http" {
        bail!("--url {url:?}: only plain http:// URLs are supported");
    }
    if !matches!(parsed.path(), "" | "/") || parsed.query().is_some() || parsed.fragment().is_some()
    {
        bail!("--url {url:?}: give the server's root, without a path");
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        bail!("--url {url:?}: user info is not supported");
    }
    let ip: IpAddr = match parsed.host() {
        Some(Host::Ipv4(a)) => a.into(),
        Some(Host::Ipv6(a)) => a.into(),
        Some(Host::Domain(d)) if d.eq_ignore_ascii_case("localhost") => Ipv4Addr::LOCALHOST.into(),
        _ => bail!("--url {url:?}: the host must be a loopback IP address or `localhost`"),
    };
    if !ip.is_loopback() {
        bail!(
            "--url {url:?}: {ip} is not a loopback address; kgbox-load only loads loopback servers"
        );
    }
    Ok(SocketAddr::new(
        ip,
        parsed.port_or_known_default().unwrap_or(80),
    ))
}

/// One query file: its path and the DSL of each non-empty line.
struct QueryFile {
    path: PathBuf,
    dsl: Vec<String>,
}

fn read_query_file(path: &Path) -> Result<QueryFile> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let dsl: Vec<String> = text
        .lines()
        .map(|l| l.split('\t').next().unwrap_or_default().trim())
        .filter(|d| !d.is_empty())
        .map(str::to_owned)
        .collect();
    if dsl.is_empty() {
        bail!("{}: no queries", path.display());
    }
    Ok(QueryFile {
        path: path.to_path_buf(),
        dsl,
    })
}

/// A request ready to write, and which file it came from.
struct Query {
    request: keepalive::Request,
    file: usize,
}

/// splitmix64: a tiny fixed-seed generator for the shuffle.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Serializes every query once; several files are shuffled together.
fn build_requests(files: &[QueryFile], host: &str, top_k: u32, paths: bool) -> Result<Vec<Query>> {
    let mut out = Vec::new();
    for (i, f) in files.iter().enumerate() {
        for dsl in &f.dsl {
            let body = if paths {
                json!({"query": dsl, "top_k": top_k})
            } else {
                json!({"query": dsl, "top_k": top_k, "paths": false})
            };
            let body = serde_json::to_vec(&body)?;
            out.push(Query {
                request: keepalive::post_json(host, "/v1/query", &body),
                file: i,
            });
        }
    }
    if files.len() > 1 {
        let mut state = 0x6b67_626f_785f_6c64_u64;
        for i in (1..out.len()).rev() {
            let j = (splitmix64(&mut state) % (i as u64 + 1)) as usize;
            out.swap(i, j);
        }
    }
    Ok(out)
}

/// A server this tool started. Fields drop in order: the server is stopped
/// before its temporary directory is removed.
struct Started {
    server: proc::Server,
    pid: u32,
    kgbox: PathBuf,
    rss_ready: proc::Rss,
    pack_s: f64,
    install_s: f64,
    ready_ms: f64,
    work: tempfile::TempDir,
}

fn start_server(kb: &Path, kgbox: PathBuf, concurrency: u32) -> Result<(SocketAddr, Started)> {
    let work = tempfile::Builder::new()
        .prefix("kgbox-load-")
        .tempdir()
        .context("cannot create a temporary directory")?;
    let key = measure::signing_key();
    let pub_key = work.path().join("kgbox-load.pub");
    std::fs::write(&pub_key, key.public().to_text())?;
    let bundle = work.path().join("kb.kgb");
    step(&format!("packing {}", kb.display()));
    let pack = measure::pack_runs(kb, &key, &bundle, 1)?;
    step(&format!(
        "packed {} triples in {:.2} s; installing with {}",
        pack.triples,
        pack.times.iter().map(Duration::as_secs_f64).sum::<f64>(),
        kgbox.display()
    ));
    let (install, installed) =
        measure::install_runs(&kgbox, work.path(), &bundle, &pub_key, INSTALL_RUNS)?;
    let mut config = std::fs::OpenOptions::new()
        .append(true)
        .open(&installed.config)
        .with_context(|| format!("opening {}", installed.config.display()))?;
    write!(
        config,
        "\n[http]\nmax_concurrency = {}\n\n[log]\nlevel = \"warn\"\n",
        concurrency.max(256)
    )?;
    drop(config);

    let port = http::free_port()?;
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut cmd = Command::new(&kgbox);
    cmd.arg("--config")
        .arg(&installed.config)
        .arg("serve")
        .arg("--listen")
        .arg(addr.to_string())
        .env_remove("RUST_LOG");
    step(&format!("starting kgbox serve on {addr}"));
    let spawned = Instant::now();
    let mut server = proc::Server::spawn(&mut cmd, &work.path().join("serve.log"))?;
    let ready = http::wait_ready(addr, &mut server, READY_LIMIT)?;
    let pid = server.pid();
    let rss_ready = proc::rss(pid)?;
    Ok((
        addr,
        Started {
            server,
            pid,
            kgbox,
            rss_ready,
            pack_s: pack.times.iter().map(Duration::as_secs_f64).sum(),
            install_s: install.iter().map(Duration::as_secs_f64).sum(),
            ready_ms: (ready.at - spawned).as_secs_f64() * 1e3,
            work,
        },
    ))
}

/// The server's own timings for one sampled response, from its body.
fn sample(body: &[u8]) -> Option<Sample> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let t = v.get("timings_ms")?;
    Some(Sample {
        total_ms: t.get("total")?.as_f64()?,
        execute_ms: t.get("execute")?.as_f64()?,
        answers: v.get("answers")?.as_array()?.len(),
    })
}

/// What all workers share (read-only, apart from the stop flag).
struct Plan<'a> {
    queries: &'a [Query],
    files: usize,
    addr: SocketAddr,
    timeout: Duration,
    measure_from: Instant,
    end: Instant,
    stop: AtomicBool,
}

fn worker(plan: &Plan<'_>, id: usize, workers: usize) -> Tally {
    let n = plan.queries.len();
    let mut i = id * n / workers;
    let mut t = Tally {
        latency: vec![LatencyHistogram::new(); plan.files],
        ..Tally::default()
    };
    let mut client = Client::new(plan.addr, plan.timeout);
    let mut until_sample = SAMPLE_EVERY;
    loop {
        if Instant::now() >= plan.end || plan.stop.load(Ordering::Relaxed) {
            break;
        }
        let q = &plan.queries[i];
        i += 1;
        if i == n {
            i = 0;
        }
        let t0 = Instant::now();
        let r = client.exchange(&q.request);
        let t1 = Instant::now();
        let in_window = t1 >= plan.measure_from && t1 <= plan.end;
        match r {
            Ok(resp) => {
                if resp.closed {
                    t.server_closes += 1;
                }
                if !in_window {
                    if t1 < plan.measure_from {
                        t.warmup_responses += 1;
                    }
                    continue;
                }
                t.latency[q.file].record((t1 - t0).as_nanos() as u64);
                *t.statuses.entry(resp.status).or_insert(0) += 1;
                t.body_bytes += resp.body_len as u64;
                if resp.status == 200 {
                    until_sample -= 1;
                    if until_sample == 0 {
                        until_sample = SAMPLE_EVERY;
                        if let Some(s) = sample(client.body()) {
                            t.samples.push(s);
                        }
                    }
                }
            }
            Err(e) => {
                if in_window {
                    t.errors += 1;
                    *t.error_kinds.entry(e.to_string()).or_insert(0) += 1;
                } else {
                    t.errors_outside += 1;
                }
                std::thread::sleep(ERROR_BACKOFF);
            }
        }
    }
    t.connects = client.connects;
    t
}

/// Sleeps until `until`, failing early on a signal or a dead server.
fn wait_until(until: Instant, started: &mut Option<Started>) -> Result<()> {
    loop {
        proc::check_interrupted()?;
        if let Some(s) = started.as_mut() {
            if let Some(status) = s.server.exited()? {
                bail!(
                    "kgbox serve exited ({status}) during the load; its log:\n{}",
                    s.server.log_tail()
                );
            }
        }
        let now = Instant::now();
        if now >= until {
            return Ok(());
        }
        std::thread::sleep((until - now).min(Duration::from_millis(50)));
    }
}

fn run_load(
    args: &Args,
    addr: SocketAddr,
    queries: &[Query],
    files: usize,
    started: &mut Option<Started>,
) -> Result<Load> {
    let workers = args.concurrency as usize;
    let start = Instant::now();
    let measure_from = start + Duration::from_secs(args.warmup.into());
    let end = measure_from + Duration::from_secs(args.seconds.into());
    let plan = Plan {
        queries,
        files,
        addr,
        timeout: Duration::from_millis(args.timeout_ms.into()),
        measure_from,
        end,
        stop: AtomicBool::new(false),
    };
    let server_pid = started.as_ref().map(|s| s.pid);
    std::thread::scope(|scope| -> Result<Load> {
        let handles: Vec<_> = (0..workers)
            .map(|id| {
                let plan = &plan;
                std::thread::Builder::new()
                    .name(format!("load-{id}"))
                    .spawn_scoped(scope, move || worker(plan, id, workers))
            })
            .collect::<std::io::Result<_>>()
            .inspect_err(|_| plan.stop.store(true, Ordering::SeqCst))
            .context("cannot start the worker threads")?;
        step(&format!(
            "{workers} connections: {} s warm-up, then {} s measured",
            args.warmup, args.seconds
        ));
        let watched = wait_until(measure_from, started).and_then(|()| {
            let before = Cpu::now(server_pid);
            wait_until(end, started)?;
            Ok(Cpu::now(server_pid).since(&before))
        });
        plan.stop.store(true, Ordering::SeqCst);
        let stopped = Instant::now();
        let mut tally = Tally::default();
        for h in handles {
            match h.join() {
                Ok(t) => tally.merge(t),
                Err(_) => bail!("a worker thread panicked"),
            }
        }
        let drain_ms = stopped.elapsed().as_secs_f64() * 1e3;
        Ok(Load {
            tally,
            window_s: (end - measure_from).as_secs_f64(),
            cpu: watched?,
            drain_ms,
        })
    })
}

fn report(
    args: &Args,
    addr: SocketAddr,
    files: &[QueryFile],
    load: Load,
    started: Option<&Started>,
    rss_end: Option<proc::Rss>,
    load_before: String,
) -> Report {
    let mut every = LatencyHistogram::new();
    for h in &load.tally.latency {
        every.add(h);
    }
    let all = latency(&every);
    let per_file = load.tally.latency.iter().map(latency).collect();
    let requests: u64 = load.tally.statuses.values().sum();
    let non_200 = requests - load.tally.statuses.get(&200).copied().unwrap_or(0);
    let mut totals: Vec<f64> = load.tally.samples.iter().map(|s| s.total_ms).collect();
    totals.sort_by(f64::total_cmp);
    let mut execs: Vec<f64> = load.tally.samples.iter().map(|s| s.execute_ms).collect();
    execs.sort_by(f64::total_cmp);
    Report {
        target: match started {
            Some(s) => format!(
                "kgbox serve started by kgbox-load ({}) from {}",
                s.kgbox.display(),
                args.kb
                    .as_deref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            ),
            None => format!(
                "already running server at {}",
                args.url.as_deref().unwrap_or_default()
            ),
        },
        addr,
        files: files
            .iter()
            .map(|f| (f.path.display().to_string(), f.dsl.len()))
            .collect(),
        queries: files.iter().map(|f| f.dsl.len()).sum(),
        concurrency: args.concurrency,
        warmup_s: args.warmup,
        top_k: args.top_k,
        paths: !args.no_paths,
        nproc: std::thread::available_parallelism()
            .map(usize::from)
            .unwrap_or(0),
        load_before,
        load_after: load_average(),
        rps: requests as f64 / load.window_s,
        all,
        per_file,
        requests,
        non_200,
        server_total_ms: (
            percentile(&totals, 50.0).unwrap_or(0.0),
            percentile(&totals, 99.0).unwrap_or(0.0),
        ),
        server_execute_ms: percentile(&execs, 50.0).unwrap_or(0.0),
        samples: load.tally.samples.len(),
        sampled_with_answers: load.tally.samples.iter().filter(|s| s.answers > 0).count(),
        load,
        rss_ready: started.map(|s| s.rss_ready),
        rss_end,
        setup: started.map(|s| (s.pack_s, s.install_s, s.ready_ms)),
        stopped_by_sigterm: None,
    }
}

fn run(args: Args) -> Result<()> {
    let load_before = load_average();
    let files = args
        .queries
        .iter()
        .map(|p| read_query_file(p))
        .collect::<Result<Vec<_>>>()?;
    let (addr, mut started) = match (&args.url, &args.kb) {
        (Some(url), _) => {
            let addr = parse_url(url)?;
            match http::get(addr, "/readyz", Duration::from_secs(5)) {
                Ok((200, _)) => {}
                Ok((status, _)) => bail!("{url}/readyz answered {status}, not 200"),
                Err(e) => bail!("cannot reach {url}/readyz: {e}"),
            }
            (addr, None)
        }
        (None, Some(kb)) => {
            let kgbox = proc::find_kgbox(args.kgbox.clone(), "kgbox-load")?;
            let (addr, s) = start_server(kb, kgbox, args.concurrency)?;
            (addr, Some(s))
        }
        (None, None) => bail!("give --kb or --url"),
    };
    let host = addr.to_string();
    let queries = build_requests(&files, &host, args.top_k, !args.no_paths)?;
    let load = run_load(&args, addr, &queries, files.len(), &mut started)?;
    let rss_end = match &started {
        Some(s) => Some(proc::rss(s.pid)?),
        None => None,
    };
    let mut r = report(
        &args,
        addr,
        &files,
        load,
        started.as_ref(),
        rss_end,
        load_before,
    );
    if let Some(mut s) = started.take() {
        let (status, graceful) = s.server.stop()?;
        r.stopped_by_sigterm = Some(graceful);
        if graceful && !status.success() {
            bail!(
                "kgbox serve exited with {status} on SIGTERM; its log:\n{}",
                s.server.log_tail()
            );
        }
        let Started { work, .. } = s;
        work.close().context("removing the temporary directory")?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&load_report::json(&r))?);
    } else {
        print!("{}", load_report::markdown(&r));
    }
    Ok(())
}

fn main() -> ExitCode {
    proc::catch_interrupts();
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kgbox-load: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let ok = |u: &str| parse_url(u).expect(u).to_string();
        assert_eq!(ok("http://127.0.0.1:8080"), "127.0.0.1:8080");
        assert_eq!(ok("http://127.0.0.1:8080/"), "127.0.0.1:8080");
        assert_eq!(ok("http://localhost:9"), "127.0.0.1:9");
        assert_eq!(ok("http://[::1]:8080"), "[::1]:8080");
        assert_eq!(ok("http://127.1.2.3"), "127.1.2.3:80");
        for bad in [
            "https://127.0.0.1:8080",
            "http://10.0.0.1:8080",
            "http://0.0.0.0:8080",
            "http://example.com:8080",
            "http://127.0.0.1:8080/v1/query",
            "http://user@127.0.0.1:8080",
            "http://[::1",
            "http://127.0.0.1:http",
            "127.0.0.1:8080",
            "http://127.0.0.1:8080/?x=1",
        ] {
            assert!(parse_url(bad).is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn requests_are_json() {
        let files = vec![
            QueryFile {
                path: "a".into(),
                dsl: vec![r#""Joel \"Z\"" -> directed_by_inv"#.into()],
            },
            QueryFile {
                path: "b".into(),
                dsl: vec!["x".into(), "y".into()],
            },
        ];
        let q = build_requests(&files, "127.0.0.1:1", 10, true).expect("requests");
        assert_eq!(q.len(), 3);
        let one = q.iter().find(|q| q.file == 0).expect("file 0");
        let body = one.request.body();
        let v: Value = serde_json::from_slice(body).expect("json");
        assert_eq!(v["query"], r#""Joel \"Z\"" -> directed_by_inv"#);
        assert_eq!(v["top_k"], 10);
        let len = body.len().to_string();
        assert_eq!(one.request.header("content-length"), Some(len.as_str()));
        assert_eq!(one.request.header("host"), Some("127.0.0.1:1"));
    }
}
