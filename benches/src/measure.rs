//! The measurements: pack (in-process), sizes, install and serve (child
//! `kgbox` processes).

use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use kgbox_bundle::SecretKey;
use kgbox_pack::pack::DEFAULT_COMPATIBLE;
use kgbox_pack::{pack, PackOptions};

use crate::http;
use crate::proc::{self, Rss, Server};

/// Fixed signing-key seed: every run signs with the same (throwaway) key.
const KEY_SEED: [u8; 32] = *b"kgbox-perf fixed benchmark seed!";
/// Fixed creation time, so that every pack writes the same bytes.
const CREATED_UNIX: u64 = 1_700_000_000;
/// The packager's default zstd level (`kgbox-pack build --level`).
pub const PACK_LEVEL: i32 = kgbox_pack::pack::DEFAULT_LEVEL;

/// A guard against a hung install, not a target: a 100M-triple image takes minutes.
const INSTALL_LIMIT: Duration = Duration::from_secs(3600);
const READY_LIMIT: Duration = Duration::from_secs(10);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Upper bound on the whole request phase of one serve run.
const REQUESTS_LIMIT: Duration = Duration::from_secs(60);

pub fn signing_key() -> SecretKey {
    SecretKey::from_seed(KEY_SEED, "kgbox-perf")
}

pub struct PackFigures {
    pub times: Vec<Duration>,
    /// Sub-steps of the last run.
    pub read: Duration,
    pub build: Duration,
    pub write: Duration,
    pub entities: u64,
    pub relations: u64,
    pub triples: u64,
    pub bundle_bytes: u64,
}

/// The benches' pack options for `kb`: fixed level and time, nothing but
/// the graph.
pub fn pack_options(kb: &Path, name: &str, version: semver::Version) -> PackOptions {
    PackOptions {
        triples: kb.to_path_buf(),
        name: name.into(),
        version,
        level: PACK_LEVEL,
        created_unix: Some(CREATED_UNIX),
        progress: false,
        planner: None,
        ..Default::default()
    }
}

/// Packs `kb` into `out` `runs` times, in-process.
pub fn pack_runs(kb: &Path, key: &SecretKey, out: &Path, runs: usize) -> Result<PackFigures> {
    let opts = pack_options(kb, "kgbox-perf", semver::Version::new(1, 0, 0));
    let mut times = Vec::with_capacity(runs);
    let mut last = None;
    for _ in 0..runs {
        proc::check_interrupted()?;
        let t = Instant::now();
        let report = pack(&opts, key, out).with_context(|| format!("packing {}", kb.display()))?;
        times.push(t.elapsed());
        last = Some(report);
    }
    let Some(r) = last else {
        bail!("no pack run");
    };
    Ok(PackFigures {
        times,
        read: r.read_time,
        build: r.build_time,
        write: r.write_time,
        entities: r.stats.entities,
        relations: r.stats.relations,
        triples: r.stats.triples,
        bundle_bytes: std::fs::metadata(out)?.len(),
    })
}

/// Size of `zstd -19` of the file, compressed in-process (one frame, the
/// source size known, as the `zstd` CLI does for a regular file).
pub fn zstd19_size(data: &[u8]) -> Result<u64> {
    Ok(zstd::bulk::compress(data, 19)
        .context("zstd-compressing the TSV")?
        .len() as u64)
}

/// A basic TOML string.
fn toml_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Writes a config for `data_dir` trusting `pub_key`; returns its path.
/// Its limits admit the images of the largest graphs the scale bench packs
/// (a billion triples is about 20 GB installed; the default bound is 16 GiB).
pub fn write_config(path: &Path, data_dir: &Path, pub_key: &Path) -> Result<()> {
    let utf8 = |p: &Path| {
        p.to_str()
            .map(str::to_owned)
            .with_context(|| format!("path {} is not UTF-8", p.display()))
    };
    let text = format!(
        "data_dir = {}\ndemo = false\ncompatible = {}\n\n[trust]\nkeys = [{}]\n\n\
         [limits]\nmax_section_bytes = {}\nmax_image_bytes = {}\n",
        toml_str(&utf8(data_dir)?),
        toml_str(DEFAULT_COMPATIBLE),
        toml_str(&utf8(pub_key)?),
        16u64 << 30,
        64u64 << 30,
    );
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

pub struct Installed {
    pub config: PathBuf,
    pub image: PathBuf,
    pub image_bytes: u64,
    /// Blocks allocated to the image (st_blocks × 512).
    pub image_allocated: u64,
}

/// `kgbox install` of `bundle` into a fresh `work/data-<i>` `runs` times
/// (each run's data dir is removed after the next one is made); the last
/// data dir is kept for serving.
pub fn install_runs(
    kgbox: &Path,
    work: &Path,
    bundle: &Path,
    pub_key: &Path,
    runs: usize,
) -> Result<(Vec<Duration>, Installed)> {
    let mut times = Vec::with_capacity(runs);
    let mut previous: Option<PathBuf> = None;
    let mut last = None;
    for i in 0..runs {
        let data_dir = work.join(format!("data-{i}"));
        let config = work.join(format!("config-{i}.toml"));
        write_config(&config, &data_dir, pub_key)?;
        let (out, elapsed) = proc::run_timed(
            Command::new(kgbox)
                .arg("--config")
                .arg(&config)
                .arg("--data-dir")
                .arg(&data_dir)
                .arg("install")
                .arg(bundle),
            INSTALL_LIMIT,
        )?;
        if !out.status.success() {
            bail!(
                "kgbox install failed ({}):\n{}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        times.push(elapsed);
        if let Some(p) = previous.take() {
            let _ = std::fs::remove_dir_all(p);
        }
        previous = Some(data_dir.clone());
        last = Some((config, data_dir));
    }
    let Some((config, data_dir)) = last else {
        bail!("no install run");
    };
    let image = find_image(&data_dir)?;
    let meta = std::fs::metadata(&image)?;
    use std::os::unix::fs::MetadataExt;
    Ok((
        times,
        Installed {
            config,
            image,
            image_bytes: meta.len(),
            image_allocated: meta.blocks() * 512,
        },
    ))
}

/// The one `*.kgbi` under `DATA_DIR/slots/`.
fn find_image(data_dir: &Path) -> Result<PathBuf> {
    let slots = data_dir.join("slots");
    let mut found = Vec::new();
    for slot in std::fs::read_dir(&slots).with_context(|| format!("listing {}", slots.display()))? {
        let slot = slot?.path();
        if !slot.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&slot)? {
            let f = f?.path();
            if f.extension().is_some_and(|e| e == "kgbi") {
                found.push(f);
            }
        }
    }
    match found.len() {
        1 => Ok(found.remove(0)),
        n => bail!("expected one image under {}, found {n}", slots.display()),
    }
}

/// Up to `n` distinct heads spread over the TSV (the MetaQA heads are movies).
pub fn sample_heads(kb: &Path, n: usize) -> Result<Vec<String>> {
    let file = std::fs::File::open(kb).with_context(|| format!("opening {}", kb.display()))?;
    let mut seen = HashSet::new();
    let mut heads = Vec::new();
    for line in BufReader::new(file).lines() {
        let line = line?;
        if let Some(h) = line.split('\t').next() {
            let h = h.trim();
            if !h.is_empty() && seen.insert(h.to_string()) {
                heads.push(h.to_string());
            }
        }
    }
    let step = (heads.len() / n.max(1)).max(1);
    Ok(heads.into_iter().step_by(step).take(n).collect())
}

pub struct ServeRun {
    /// Spawn to the first `200` from `/readyz`.
    pub ready: Duration,
    /// How long `spawn()` itself took (fork + exec in this process).
    pub spawn: Duration,
    /// Spawn to the first successful TCP connect.
    pub first_connect: Duration,
    pub attempts: u32,
    /// The server's own figure (`kgbox_startup_seconds`): process start to ready.
    pub startup_reported: Option<f64>,
    pub rss_ready: Rss,
    pub rss_after: Rss,
    pub requests: usize,
    pub requests_time: Duration,
    /// Responses by status.
    pub statuses: BTreeMap<u16, usize>,
    /// Whether SIGTERM alone stopped it.
    pub graceful: bool,
}

/// One cold start of `kgbox serve`: spawn, wait for ready, read RSS, make
/// `requests` entity lookups, read RSS again, ask `/metrics`, stop.
pub fn serve_run(
    kgbox: &Path,
    config: &Path,
    log: &Path,
    names: &[String],
    requests: usize,
) -> Result<ServeRun> {
    let port = http::free_port()?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut cmd = Command::new(kgbox);
    cmd.arg("--config")
        .arg(config)
        .arg("serve")
        .arg("--listen")
        .arg(addr.to_string());
    let spawned = Instant::now();
    let mut server = Server::spawn(&mut cmd, log)?;
    let spawn = spawned.elapsed();
    let ready = http::wait_ready(addr, &mut server, READY_LIMIT)?;
    let ready_after = ready.at - spawned;
    let pid = server.pid();
    let rss_ready = proc::rss(pid)?;

    let mut statuses = BTreeMap::new();
    let t = Instant::now();
    let deadline = t + REQUESTS_LIMIT;
    let mut made = 0;
    for name in names
        .iter()
        .cycle()
        .take(if names.is_empty() { 0 } else { requests })
    {
        proc::check_interrupted()?;
        if Instant::now() >= deadline {
            bail!("{made} of {requests} entity requests took over {REQUESTS_LIMIT:?}");
        }
        let path = format!("/v1/entities/{}", http::encode_segment(name));
        let (status, _) =
            http::get(addr, &path, REQUEST_TIMEOUT).with_context(|| format!("GET {path}"))?;
        *statuses.entry(status).or_insert(0) += 1;
        made += 1;
    }
    let requests_time = t.elapsed();
    let rss_after = proc::rss(pid)?;

    let startup_reported =
        http::get(addr, "/metrics", REQUEST_TIMEOUT)
            .ok()
            .and_then(|(_, body)| {
                String::from_utf8_lossy(&body)
                    .lines()
                    .find(|l| l.starts_with("kgbox_startup_seconds"))
                    .and_then(|l| l.split_whitespace().last()?.parse().ok())
            });
    let (status, graceful) = server.stop()?;
    if graceful && !status.success() {
        bail!(
            "kgbox serve exited with {status} on SIGTERM; its log:\n{}",
            server.log_tail()
        );
    }
    Ok(ServeRun {
        ready: ready_after,
        spawn,
        first_connect: ready.first_connect - spawned,
        attempts: ready.attempts,
        startup_reported,
        rss_ready,
        rss_after,
        requests: made,
        requests_time,
        statuses,
        graceful,
    })
}
