//! `kgbox-soak`: a soak with abuse over HTTP, as a device on a shared
//! network meets it.
//!
//! ```text
//! cargo build --release -p kgbox -p kgbox-benches
//! target/release/kgbox-soak --seconds 3600 --rate 200          # the long run
//! target/release/kgbox-soak --seconds 30 --idle 300 --json     # CI's short run
//! ```
//!
//! Packs `--kb` (default `demo/movies.tsv`) as versions 1.0.0 and 2.0.0 of
//! one graph, installs 1.0.0 and starts `kgbox serve` with an admin token.
//! Live clients send `"head" -> relation` queries drawn from the graph at
//! `--rate` requests/s for `--seconds`; every answer must equal the first
//! answer seen for that query (wrong answers and errors are counted). The
//! server's resident memory and open files are sampled every 5 s.
//!
//! The middle third of the run is under abuse: `--idle` sockets held open
//! (half silent, half with an unfinished request head), slow-loris sockets
//! sending their headers or body one byte a second, a loop of bodies over
//! the body limit, deeply nested JSON and fan-out queries from the graph's
//! hubs, and version 2.0.0 pushed to `PUT /v1/bundles` halfway through.
//!
//! It passes when the live clients saw no error and no wrong answer, the
//! deploy succeeded, no hostile request got a 5xx, and memory and open
//! files at the end are back near where they were after the warm-up.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write as _};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Parser;
use kgbox_benches::keepalive::{post_json, Client};
use kgbox_benches::soak::{self, AbuseTally, LiveTally, Sample, PHASE};
use kgbox_benches::{http, measure, proc};
use serde_json::json;

const TOKEN: &str = "kgbox-soak-admin-token-0123456789";

#[derive(Parser)]
#[command(
    name = "kgbox-soak",
    about = "Soak and abuse over HTTP, with answers checked"
)]
struct Args {
    /// The graph to pack and serve (TSV).
    #[arg(long, default_value = "demo/movies.tsv")]
    kb: PathBuf,
    /// Length of the run.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// Live requests per second, over all clients.
    #[arg(long, default_value_t = 100)]
    rate: u32,
    /// Live clients (keep-alive connections).
    #[arg(long, default_value_t = 4)]
    clients: u32,
    /// Idle sockets held open during the abuse.
    #[arg(long, default_value_t = 2000)]
    idle: usize,
    /// Slow-loris sockets during the abuse (half on headers, half on a body).
    #[arg(long, default_value_t = 40)]
    slow: usize,
    /// The `kgbox` binary (default: next to this one).
    #[arg(long)]
    kgbox: Option<PathBuf>,
    /// Print the figures as JSON.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("kgbox-soak: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// `"head" -> relation` for the first `n` distinct pairs of the TSV, and
/// fan-out queries from its most connected tails (`"tail" -> r_inv -> s`).
fn queries(kb: &std::path::Path, n: usize) -> Result<(Vec<String>, Vec<String>)> {
    let file = std::fs::File::open(kb).with_context(|| format!("opening {}", kb.display()))?;
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    let mut tails: HashMap<(String, String), usize> = HashMap::new();
    let mut relations = Vec::new();
    for line in BufReader::new(file).lines() {
        let line = line?;
        let mut f = line.split('\t');
        let (Some(h), Some(r), Some(t)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let quote = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
        if out.len() < n && seen.insert((h.to_string(), r.to_string())) {
            out.push(format!("\"{}\" -> {r}", quote(h)));
        }
        *tails.entry((quote(t), r.to_string())).or_default() += 1;
        if !relations.contains(&r.to_string()) {
            relations.push(r.to_string());
        }
    }
    let mut hubs: Vec<_> = tails.into_iter().collect();
    hubs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let fanout = hubs
        .iter()
        .take(5)
        .flat_map(|((t, r), _)| {
            relations
                .iter()
                .take(3)
                .map(move |s| format!("\"{t}\" -> {r}_inv -> {s} -> {s}_inv"))
        })
        .collect();
    if out.is_empty() {
        bail!("{} has no triples", kb.display());
    }
    Ok((out, fanout))
}

fn run(args: Args) -> Result<bool> {
    let kgbox = proc::find_kgbox(args.kgbox.clone(), "kgbox-soak")?;
    let work = tempfile::Builder::new().prefix("kgbox-soak-").tempdir()?;
    let key = measure::signing_key();
    let pub_key = work.path().join("soak.pub");
    std::fs::write(&pub_key, key.public().to_text())?;
    let mut bundles = Vec::new();
    for v in [1, 2] {
        let out = work.path().join(format!("v{v}.kgb"));
        let opts = measure::pack_options(&args.kb, "soak", semver::Version::new(v, 0, 0));
        kgbox_pack::pack(&opts, &key, &out)
            .with_context(|| format!("packing {}", args.kb.display()))?;
        bundles.push(out);
    }
    let (_, installed) = measure::install_runs(&kgbox, work.path(), &bundles[0], &pub_key, 1)?;
    let mut config = std::fs::OpenOptions::new()
        .append(true)
        .open(&installed.config)?;
    write!(
        config,
        "\n[health]\nsettle_ms = 0\n\n[log]\nlevel = \"warn\"\n"
    )?;
    drop(config);
    let data_dir = work.path().join("data-0");

    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, http::free_port()?));
    let mut cmd = Command::new(&kgbox);
    cmd.arg("--config")
        .arg(&installed.config)
        .arg("--data-dir")
        .arg(&data_dir)
        .args(["serve", "--listen", &addr.to_string()])
        .env("KGBOX_ADMIN_TOKEN", TOKEN)
        .env_remove("RUST_LOG");
    let mut server = proc::Server::spawn(&mut cmd, &work.path().join("serve.log"))?;
    http::wait_ready(addr, &mut server, Duration::from_secs(60))?;
    let pid = server.pid();

    // The answers first seen for each query: what every later answer must equal.
    let (texts, fanout) = queries(&args.kb, 300)?;
    let host = addr.to_string();
    let mut client = Client::new(addr, Duration::from_secs(30));
    let mut gold = HashMap::new();
    let mut requests = Vec::new();
    for q in texts {
        let req = post_json(
            &host,
            "/v1/query",
            json!({"query": q, "top_k": 20}).to_string().as_bytes(),
        );
        let r = client.exchange(&req)?;
        if r.status == 200 {
            if let Some(names) = soak::answer_names(client.body()) {
                gold.insert(q.clone(), names);
                requests.push((q, req));
            }
        }
    }
    if requests.is_empty() {
        bail!("no query of {} was answered", args.kb.display());
    }
    let (requests, gold) = (Arc::new(requests), Arc::new(gold));

    let stop = Arc::new(AtomicBool::new(false));
    let samples = Arc::new(Mutex::new(Vec::<Sample>::new()));
    let sampler = {
        let (stop, samples) = (stop.clone(), samples.clone());
        std::thread::spawn(move || soak::sample(pid, Duration::from_secs(5), stop, samples))
    };
    let live = Arc::new(LiveTally::default());
    let clients = args.clients.max(1);
    let interval = Duration::from_secs_f64(f64::from(clients) / f64::from(args.rate.max(1)));
    let mut threads = Vec::new();
    for c in 0..clients as usize {
        let (requests, gold, stop, live) =
            (requests.clone(), gold.clone(), stop.clone(), live.clone());
        let offset = c * requests.len() / clients as usize;
        threads.push(std::thread::spawn(move || {
            soak::live_client(addr, requests, gold, offset, interval, stop, live)
        }));
    }

    let third = Duration::from_secs(args.seconds.max(3)) / 3;
    let started = Instant::now();
    sleep_checked(third)?;
    eprintln!(
        "kgbox-soak: abuse starts ({} idle, {} slow sockets)",
        args.idle, args.slow
    );
    PHASE.store(1, Ordering::Relaxed);
    let abuse_stop = Arc::new(AtomicBool::new(false));
    let abuse = Arc::new(AbuseTally::default());
    let mut attackers = Vec::new();
    {
        let (s, t) = (abuse_stop.clone(), abuse.clone());
        let idle = args.idle;
        attackers.push(std::thread::spawn(move || {
            soak::idle_sockets(addr, idle, s, t)
        }));
    }
    for body in [false, true] {
        let (s, t) = (abuse_stop.clone(), abuse.clone());
        let n = args.slow / 2;
        attackers.push(std::thread::spawn(move || {
            soak::slow_sockets(addr, n, body, Duration::from_secs(1), s, t)
        }));
    }
    {
        let (s, t) = (abuse_stop.clone(), abuse.clone());
        attackers.push(std::thread::spawn(move || {
            soak::hostile_requests(addr, 1 << 20, fanout, s, t)
        }));
    }
    sleep_checked(third / 2)?;
    let bundle = std::fs::read(&bundles[1])?;
    let deploy = ureq::put(&format!("http://{addr}/v1/bundles"))
        .header("Authorization", format!("Bearer {TOKEN}"))
        .config()
        .timeout_global(Some(Duration::from_secs(120)))
        .http_status_as_error(false)
        .build()
        .send(&bundle[..]);
    let deploy_status = match &deploy {
        Ok(r) => r.status().as_u16(),
        Err(_) => 0,
    };
    sleep_checked(third / 2)?;
    abuse_stop.store(true, Ordering::Relaxed);
    for a in attackers {
        let _ = a.join();
    }
    PHASE.store(2, Ordering::Relaxed);
    eprintln!("kgbox-soak: abuse over; deploy answered {deploy_status}");
    let remaining = Duration::from_secs(args.seconds.max(3)).saturating_sub(started.elapsed());
    sleep_checked(remaining)?;
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    let _ = sampler.join();
    let exited = server.exited()?;
    let _ = server.stop();

    report(
        &args,
        &live,
        &abuse,
        &samples,
        deploy_status,
        exited.is_none(),
    )
}

fn sleep_checked(d: Duration) -> Result<()> {
    let until = Instant::now() + d;
    while Instant::now() < until {
        proc::check_interrupted()?;
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

/// Prints the figures; whether the run passed.
fn report(
    args: &Args,
    live: &LiveTally,
    abuse: &AbuseTally,
    samples: &Mutex<Vec<Sample>>,
    deploy_status: u16,
    alive: bool,
) -> Result<bool> {
    let samples = samples.lock().map(|s| s.clone()).unwrap_or_default();
    let mut lat = live.latencies.lock().map(|l| l.clone()).unwrap_or_default();
    let p = |v: &mut Vec<u32>, q| soak::percentile_ms(v, q);
    let phases: Vec<_> = ["before", "during", "after"]
        .iter()
        .zip(lat.iter_mut())
        .map(|(name, v)| json!({"phase": name, "requests": v.len(), "p50_ms": p(v, 50.0), "p99_ms": p(v, 99.0)}))
        .collect();
    // Flat: within the quiet phases, memory at the end of each phase is
    // near where it started (after a warm-up sample), and the open files
    // after the abuse are back to what they were before it.
    let phase = |p: u64| {
        samples
            .iter()
            .filter(|s| s.phase == p)
            .copied()
            .collect::<Vec<_>>()
    };
    let (before, after) = (phase(0), phase(2));
    let (Some(start), Some(end)) = (
        before.get(1).or(before.first()).copied(),
        after.last().copied(),
    ) else {
        bail!("too few memory samples (run for at least 30 s)");
    };
    let grew = |from: &Sample, to: &Sample| to.anon > from.anon + from.anon / 10 + (4 << 20);
    let anon_grew = before.last().is_some_and(|b| grew(&start, b))
        || after.first().is_some_and(|a| grew(a, &end));
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let statuses: BTreeMap<String, u64> = abuse
        .statuses
        .lock()
        .map(|s| {
            s.iter()
                .map(|((w, st), n)| (format!("{w} {st}"), *n))
                .collect()
        })
        .unwrap_or_default();
    let server_errors: u64 = statuses
        .iter()
        .filter(|(k, _)| {
            k.rsplit(' ')
                .next()
                .and_then(|s| s.parse::<u16>().ok())
                .is_some_and(|s| s >= 500)
        })
        .map(|(_, n)| n)
        .sum();
    let errors = live.errors.load(Ordering::Relaxed);
    let wrong = live.wrong.load(Ordering::Relaxed);
    let fds_grew = end.fds > start.fds + 8;
    let passed = alive
        && errors == 0
        && wrong == 0
        && deploy_status == 200
        && server_errors == 0
        && !anon_grew
        && !fds_grew;
    let figures = json!({
        "seconds": args.seconds,
        "rate": args.rate,
        "live_requests": live.requests.load(std::sync::atomic::Ordering::Relaxed),
        "live_errors": errors,
        "wrong_answers": wrong,
        "first_error": live.first_error.lock().ok().and_then(|f| f.clone()),
        "latency": phases,
        "deploy_status": deploy_status,
        "idle_and_slow_sockets": abuse.sockets_opened.load(Ordering::Relaxed),
        "closed_by_server": abuse.sockets_closed_by_server.load(Ordering::Relaxed),
        "hostile_statuses": statuses,
        "rss_mib": [mib(start.rss), mib(end.rss)],
        "anon_mib": [mib(start.anon), mib(end.anon)],
        "max_anon_mib": mib(samples.iter().map(|s| s.anon).max().unwrap_or(0)),
        "fds": [start.fds, end.fds],
        "max_fds": samples.iter().map(|s| s.fds).max(),
        "server_alive": alive,
        "passed": passed,
    });
    if args.json {
        println!("{}", serde_json::to_string_pretty(&figures)?);
    } else {
        println!("{figures:#}");
    }
    Ok(passed)
}
