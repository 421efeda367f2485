//! One case of the scale bench: pack a graph with `kgbox-pack`, install it,
//! serve it, time it with `kgbox bench` and load it with `kgbox-load`, and
//! collect the figures as one JSON object.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::proc::{self, Server};
use crate::{http, measure};

const PACK_LIMIT: Duration = Duration::from_secs(4 * 3600);
const BENCH_LIMIT: Duration = Duration::from_secs(3600);
const READY_LIMIT: Duration = Duration::from_secs(60);

/// The tools a case runs (all from the same build).
pub struct Tools {
    pub kgbox: PathBuf,
    pub pack: PathBuf,
    pub load: PathBuf,
}

/// One graph to measure.
pub struct Case {
    pub name: String,
    pub triples: PathBuf,
    pub aliases: Option<PathBuf>,
    /// `--ultra PREFIX` for the neural figures.
    pub ultra: Option<PathBuf>,
    /// Already packed in the case's folder (`--packed`): measured from
    /// install on, with the pack's figures from its `pack.json`.
    pub packed: bool,
}

/// What `pack.json` in a case's folder keeps of the pack: enough to
/// measure the rest of the case again without packing again.
struct PackRecord {
    wall_s: f64,
    peak_rss_bytes: u64,
    log_tail: Vec<String>,
}

/// Exit status, wall time and peak resident memory of a child process.
pub struct Measured {
    pub wall: Duration,
    pub peak_rss: u64,
    pub stderr: String,
}

/// Runs `cmd` to completion (stdout and stderr to `log`), and reads its
/// peak resident memory from the kernel (`wait4`'s `ru_maxrss`).
pub fn run_measured(cmd: &mut Command, log: &Path, limit: Duration) -> Result<Measured> {
    let out = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    cmd.stdin(std::process::Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out);
    let t = Instant::now();
    let child = cmd
        .spawn()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    let pid = child.id() as libc::pid_t;
    loop {
        let mut status = 0;
        // SAFETY: plain syscall on our own child; `usage` is a valid,
        // zeroed rusage for the kernel to fill.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: as above; the pointers live across the call.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            let wall = t.elapsed();
            let stderr = std::fs::read_to_string(log).unwrap_or_default();
            let exited = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
            if !exited {
                bail!("{cmd:?} failed (status {status}); its output:\n{stderr}");
            }
            return Ok(Measured {
                wall,
                peak_rss: usage.ru_maxrss as u64 * 1024,
                stderr,
            });
        }
        if r < 0 {
            bail!("waiting for {cmd:?}: {}", std::io::Error::last_os_error());
        }
        proc::check_interrupted()?;
        if t.elapsed() > limit {
            // SAFETY: signalling and reaping our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            bail!("{cmd:?} still running after {limit:?}; killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

/// Measures one case in `work` (left there for inspection; the caller
/// removes it).
pub fn run_case(tools: &Tools, case: &Case, work: &Path) -> Result<Value> {
    let key_dir = work.join("key");
    let bundle = work.join("bundle.kgb");
    let record = work.join("pack.json");
    let packed = if case.packed {
        let text = std::fs::read_to_string(&record)
            .with_context(|| format!("--packed: reading {}", record.display()))?;
        let v: Value = serde_json::from_str(&text)
            .with_context(|| format!("--packed: {}", record.display()))?;
        PackRecord {
            wall_s: v["wall_s"].as_f64().unwrap_or(f64::NAN),
            peak_rss_bytes: v["peak_rss_bytes"].as_u64().unwrap_or(0),
            log_tail: v["log_tail"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|l| l.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default(),
        }
    } else {
        let packed = pack(tools, case, work, &key_dir, &bundle)?;
        let r = PackRecord {
            wall_s: packed.wall.as_secs_f64(),
            peak_rss_bytes: packed.peak_rss,
            // Without the scratch folder's path (the results are published).
            log_tail: packed
                .stderr
                .lines()
                .rev()
                .take(3)
                .map(|l| l.replace(&format!("{}/", work.display()), ""))
                .collect(),
        };
        let json = json!({
            "wall_s": r.wall_s,
            "peak_rss_bytes": r.peak_rss_bytes,
            "log_tail": r.log_tail,
        });
        std::fs::write(&record, serde_json::to_string_pretty(&json)?)?;
        r
    };
    measure_packed(tools, case, work, &key_dir, &bundle, &packed)
}

/// Makes a key and packs the case's graph into `bundle`.
fn pack(
    tools: &Tools,
    case: &Case,
    work: &Path,
    key_dir: &Path,
    bundle: &Path,
) -> Result<Measured> {
    std::fs::create_dir_all(work)?;
    let (out, _) = proc::run_timed(
        Command::new(&tools.pack)
            .arg("keygen")
            .arg("--out")
            .arg(key_dir),
        Duration::from_secs(30),
    )?;
    if !out.status.success() {
        bail!("keygen failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let spill = work.join("spill");
    std::fs::create_dir_all(&spill)?;
    let mut pack = Command::new(&tools.pack);
    pack.arg("build")
        .arg("--triples")
        .arg(&case.triples)
        .args(["--name", "scale", "--version", "1.0.0", "--quiet"])
        .arg("--key")
        .arg(key_dir.join("kgbox.key"))
        .arg("--spill-dir")
        .arg(&spill)
        .arg("-o")
        .arg(bundle)
        .env("SOURCE_DATE_EPOCH", "1700000000");
    if let Some(a) = &case.aliases {
        pack.arg("--aliases").arg(a);
    }
    if let Some(u) = &case.ultra {
        pack.arg("--ultra").arg(u);
    }
    eprintln!("[{}] packing", case.name);
    run_measured(&mut pack, &work.join("pack.log"), PACK_LIMIT)
}

/// Installs, benches, serves and loads a packed case.
fn measure_packed(
    tools: &Tools,
    case: &Case,
    work: &Path,
    key_dir: &Path,
    bundle: &Path,
    packed: &PackRecord,
) -> Result<Value> {
    let bundle_bytes = std::fs::metadata(bundle)?.len();

    eprintln!("[{}] installing", case.name);
    let pub_key = key_dir.join("kgbox.pub");
    let (times, installed) = measure::install_runs(&tools.kgbox, work, bundle, &pub_key, 1)?;
    let install = times.first().copied().unwrap_or_default();

    eprintln!("[{}] kgbox bench", case.name);
    let queries = work.join("queries.tsv");
    let mut bench = Command::new(&tools.kgbox);
    bench
        .arg("--config")
        .arg(&installed.config)
        .args(["bench", "--json", "--seppr-k", "500", "--write-queries"])
        .arg(&queries);
    let (out, _) = proc::run_timed(&mut bench, BENCH_LIMIT)?;
    if !out.status.success() {
        bail!(
            "kgbox bench failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let bench: Value = serde_json::from_slice(&out.stdout).context("kgbox bench's JSON")?;

    eprintln!("[{}] serving", case.name);
    let port = http::free_port()?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let spawned = Instant::now();
    let mut server = Server::spawn(
        Command::new(&tools.kgbox)
            .arg("--config")
            .arg(&installed.config)
            .arg("serve")
            .arg("--listen")
            .arg(addr.to_string()),
        &work.join("serve.log"),
    )?;
    let ready = http::wait_ready(addr, &mut server, READY_LIMIT)?;
    let ready_ms = (ready.at - spawned).as_secs_f64() * 1e3;
    let rss_ready = proc::rss(server.pid())?;
    let (out, _) = proc::run_timed(
        Command::new(&tools.load)
            .arg("--url")
            .arg(format!("http://{addr}"))
            .arg("--queries")
            .arg(&queries)
            .args([
                "--concurrency",
                "8",
                "--seconds",
                "10",
                "--warmup",
                "2",
                "--json",
            ]),
        Duration::from_secs(120),
    )?;
    if !out.status.success() {
        bail!(
            "kgbox-load failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let load: Value = serde_json::from_slice(&out.stdout).context("kgbox-load's JSON")?;
    let rss_after = proc::rss(server.pid())?;
    server.stop()?;

    let triples = bench["triples"].as_u64().unwrap_or(0);
    Ok(json!({
        "case": case.name,
        "entities": bench["entities"],
        "triples": triples,
        "pack_s": packed.wall_s,
        "pack_peak_rss_mib": mib(packed.peak_rss_bytes),
        "bundle_bytes": bundle_bytes,
        "bytes_per_triple": bundle_bytes as f64 / triples.max(1) as f64,
        "install_s": install.as_secs_f64(),
        "image_bytes": installed.image_bytes,
        "ready_ms": ready_ms,
        "rss_ready_mib": mib(rss_ready.total),
        "rss_ready_anon_mib": mib(rss_ready.anon),
        "rss_after_mix_mib": mib(rss_after.total),
        "rss_after_mix_anon_mib": mib(rss_after.anon),
        "bench": bench,
        "http_rps": load["throughput_rps"],
        "http_latency": load["latency"],
        "pack_log_tail": packed.log_tail,
    }))
}
