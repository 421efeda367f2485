//! `kgbox-pack push`: sends a bundle to devices (see docs/mqtt.md, "Bundle push"):
//! in chunks over MQTT to one device or a group, resumably, or in one
//! `PUT /v1/bundles` to one device over HTTP. With `--delta-from` or
//! `--delta`, a delta update instead when the device runs its base.
//!
//! [`run`] → `delta::pick` (`push_delta.rs`: the device's digest from its
//! `/v1/status` or retained MQTT status; the delta when the device runs its
//! base, else the bundle) → `mqtt::push` (`push_mqtt.rs`: chunks, progress,
//! resume; the broker and topics from `push_target.rs`) or `push_http`.

#[path = "push_delta.rs"]
mod delta;
#[path = "push_mqtt.rs"]
mod mqtt;
pub(crate) use delta::{bundle_id, delta_ids};
pub(crate) use mqtt::broker_options;
#[path = "push_target.rs"]
mod target;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use kgbox_protocol::http::{ErrorBody, HEALTH_CHECK_FAILED};
use kgbox_protocol::{BundleRef, DeployReport, Progress, Slot, TransferState};
use sha2::{Digest, Sha256};

#[derive(Debug, clap::Args)]
pub struct PushArgs {
    /// The bundle file.
    pub bundle: PathBuf,
    /// The MQTT broker: mqtt://host:port or mqtts://host:port.
    #[arg(long, value_name = "URL", required_unless_present = "http")]
    pub broker: Option<String>,
    /// The device to push to (its mqtt.device_id).
    #[arg(long, value_name = "ID", conflicts_with = "group")]
    pub device: Option<String>,
    /// Push to every device of this group (mqtt.group) at once.
    #[arg(long, value_name = "G")]
    pub group: Option<String>,
    /// With --group: wait for this many devices (else: those that answer
    /// within a few seconds).
    #[arg(long, value_name = "N")]
    pub expect: Option<usize>,
    /// Chunk size, bytes (devices accept up to mqtt.bundle_chunk_max_bytes).
    #[arg(long, default_value_t = 262_144)]
    pub chunk_bytes: u64,
    /// Give up after this long (e.g. 90s, 10m).
    #[arg(long, default_value = "600s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
    /// Let devices install a version older than the one they run.
    #[arg(long)]
    pub allow_downgrade: bool,
    /// MQTT user name.
    #[arg(long, value_name = "U")]
    pub username: Option<String>,
    /// Environment variable holding the MQTT password.
    #[arg(long, value_name = "VAR", requires = "username")]
    pub password_env: Option<String>,
    /// CA certificate (PEM) for an mqtts:// broker.
    #[arg(long, value_name = "F")]
    pub ca_file: Option<PathBuf>,
    /// Instead of MQTT: PUT the bundle to this device's /v1/bundles
    /// (http://host:port).
    #[arg(long, value_name = "URL", conflicts_with_all = ["broker", "group"])]
    pub http: Option<String>,
    /// Environment variable holding the device's admin token (with --http).
    #[arg(long, value_name = "VAR", default_value = "KGBOX_ADMIN_TOKEN")]
    pub token_env: String,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// Send a delta update from this bundle instead, made now (with
    /// --key), when the device reports that it runs it; else the bundle.
    #[arg(
        long,
        value_name = "OLD.kgb",
        requires = "key",
        conflicts_with = "delta"
    )]
    pub delta_from: Option<PathBuf>,
    /// Send this delta update (from `kgbox-pack delta`) when the device
    /// reports that it runs its base; else the bundle.
    #[arg(long, value_name = "UPDATE.kgbd")]
    pub delta: Option<PathBuf>,
    /// Secret key that signs the delta made with --delta-from.
    #[arg(long, value_name = "F")]
    pub key: Option<PathBuf>,
    /// No line per device state either (a rollout prints its own).
    #[arg(skip)]
    pub silent: bool,
}

/// The bundle to send.
pub(crate) struct Bundle {
    pub path: PathBuf,
    pub file: std::fs::File,
    pub size: u64,
    pub sha256: String,
}

impl Bundle {
    fn open(path: &Path) -> Result<Bundle> {
        let file = std::fs::File::open(path)
            .with_context(|| format!("cannot open the bundle {}", path.display()))?;
        let meta = file
            .metadata()
            .with_context(|| format!("cannot read {}", path.display()))?;
        if !meta.is_file() {
            bail!("{} is not a file", path.display());
        }
        if meta.len() == 0 {
            bail!("{} is empty", path.display());
        }
        Ok(Bundle {
            path: path.to_path_buf(),
            file,
            size: meta.len(),
            sha256: String::new(),
        })
    }

    fn hash(&mut self) -> Result<()> {
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 1 << 20];
        let mut f = &self.file;
        loop {
            let n = f
                .read(&mut buf)
                .with_context(|| format!("cannot read {}", self.path.display()))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
        }
        self.sha256 = hex::encode(hasher.finalize());
        Ok(())
    }
}

/// What a push to one device (a rollout's) came to.
pub(crate) struct DevicePush {
    /// The device's last progress message (`None`: it never answered).
    pub last: Option<Progress>,
    /// Bytes of chunks sent.
    pub bytes: u64,
}

/// Pushes `file` (a bundle or a delta, of `sha256`) to the one device of
/// `args` over MQTT, without a progress bar: a rollout's step.
pub(crate) fn push_file(args: &PushArgs, file: &Path, sha256: &str) -> Result<DevicePush> {
    let target = target::Target::from_args(args)?;
    let mut bundle = Bundle::open(file)?;
    bundle.sha256 = sha256.to_string();
    let report = mqtt::push(args, &target, &bundle)?;
    Ok(DevicePush {
        last: report.devices.into_values().next().flatten(),
        bytes: report.bytes,
    })
}

/// The hex sha256 of a file.
pub(crate) fn file_sha256(path: &Path) -> Result<String> {
    let mut b = Bundle::open(path)?;
    b.hash()?;
    Ok(b.sha256)
}

/// One line on a device's progress message.
pub(crate) fn describe(m: &Progress) -> String {
    let bundle = |b: &Option<BundleRef>| b.as_ref().map_or("? ?".to_string(), BundleRef::to_string);
    let or_unknown = |s: &Option<String>| s.as_deref().unwrap_or("?").to_string();
    match m.state {
        TransferState::Installed => format!(
            "installed {} (slot {})",
            bundle(&m.bundle),
            m.slot.map_or("?", Slot::name)
        ),
        TransferState::RolledBack => {
            let mut line = format!("rolled_back: {}", or_unknown(&m.reason));
            if let Some(serving) = &m.serving {
                line.push_str(&format!("; {serving} keeps serving"));
            }
            line
        }
        TransferState::Failed => format!("failed: {}", or_unknown(&m.error)),
        other => format!("{other} ({}/{} chunks)", m.received, m.total),
    }
}

/// A progress message in `state` for a device pushed to over HTTP (no
/// transfer, no chunks), to [`describe`] what it answered.
fn http_outcome(state: TransferState) -> Progress {
    Progress::new("", "", state, 0, 0)
}

pub fn run(args: &PushArgs) -> Result<()> {
    if args.chunk_bytes < 1024 || args.chunk_bytes > 64 << 20 {
        bail!("--chunk-bytes must be between 1024 and 67108864");
    }
    let target = match &args.http {
        Some(_) => None,
        None => Some(target::Target::from_args(args)?),
    };
    let picked = delta::pick(args, target.as_ref())?;
    let mut bundle = Bundle::open(&picked.path)?;
    let Some(target) = target else {
        let url = args.http.as_deref().unwrap_or_default();
        return push_http(args, url, &bundle);
    };
    bundle.hash()?;
    let started = Instant::now();
    let report = mqtt::push(args, &target, &bundle)?;
    println!(
        "pushed {} ({} bytes, transfer {}): sent {} of {} chunks in {:.1} s",
        bundle.path.display(),
        bundle.size,
        &bundle.sha256[..16],
        report.sent,
        bundle.size.div_ceil(args.chunk_bytes),
        started.elapsed().as_secs_f64()
    );
    let mut failed = 0;
    for (device, m) in &report.devices {
        match m {
            Some(m) if m.state.is_terminal() => println!("{device}: {}", describe(m)),
            Some(m) => println!("{device}: timeout (last state: {})", describe(m)),
            None => {
                println!("{device}: timeout (no answer: is it online, with mqtt.bundle_push on?)")
            }
        }
        failed += usize::from(m.as_ref().map(|m| m.state) != Some(TransferState::Installed));
    }
    let total = report.devices.len();
    if let Some(n) = args.expect.filter(|n| *n > total) {
        bail!("only {total} of {n} expected devices answered");
    }
    if total == 0 {
        bail!(
            "no device answered within {}",
            humantime::format_duration(args.timeout)
        );
    }
    if failed > 0 {
        bail!("{failed} of {total} devices did not install the bundle");
    }
    Ok(())
}

/// Counts bytes read, for the progress bar.
struct Counting<R> {
    inner: R,
    bar: indicatif::ProgressBar,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bar.inc(n as u64);
        Ok(n)
    }
}

/// The HTTP client for a device: each exchange within `timeout`, error
/// statuses read as replies (a device's error body says why), and no proxy
/// from the environment (devices are on the local network).
fn http_agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .proxy(None)
        .build()
        .new_agent()
}

pub(crate) fn progress_bar(len: u64, quiet: bool) -> indicatif::ProgressBar {
    if quiet {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{bar:30} {bytes}/{total_bytes} {bytes_per_sec} {msg}",
    ) {
        bar.set_style(style);
    }
    bar
}

/// `PUT URL/v1/bundles` with the admin token.
fn push_http(args: &PushArgs, url: &str, bundle: &Bundle) -> Result<()> {
    let token = std::env::var(&args.token_env)
        .ok()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .with_context(|| {
            format!(
                "the environment variable {} (--token-env) must hold the device's admin token",
                args.token_env
            )
        })?;
    let base = url.trim_end_matches('/');
    // The device's `host:port`, to label its lines.
    let device = url::Url::parse(base)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .and_then(|u| {
            let host = u.host_str().filter(|h| !h.is_empty())?.to_string();
            Some(match u.port() {
                Some(port) => format!("{host}:{port}"),
                None => host,
            })
        })
        .with_context(|| format!("--http {url}: expected http://host:port"))?;
    let mut endpoint = if base.ends_with("/v1/bundles") {
        base.to_string()
    } else {
        format!("{base}/v1/bundles")
    };
    if args.allow_downgrade {
        endpoint.push_str("?allow_downgrade=true");
    }
    let bar = progress_bar(bundle.size, args.quiet);
    let mut body = Counting {
        inner: &bundle.file,
        bar: bar.clone(),
    };
    let started = Instant::now();
    // Error statuses are replies: their JSON body says why.
    let resp = http_agent(args.timeout)
        .put(&endpoint)
        .header("Authorization", format!("Bearer {token}"))
        .header("Content-Type", "application/octet-stream")
        .header("Content-Length", bundle.size.to_string())
        .send(ureq::SendBody::from_reader(&mut body));
    bar.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();
    let (status, text) = match resp {
        Ok(mut r) => (
            r.status().as_u16(),
            r.body_mut().read_to_string().unwrap_or_default(),
        ),
        Err(e) => bail!("cannot reach {endpoint}: {e}"),
    };
    println!(
        "pushed {} ({} bytes) over HTTP in {secs:.1} s",
        bundle.path.display(),
        bundle.size
    );
    if status == 200 {
        let report = serde_json::from_str::<DeployReport>(&text).ok();
        let state = Progress {
            bundle: report.as_ref().map(|r| r.bundle.clone()),
            slot: report.as_ref().map(|r| r.slot),
            ..http_outcome(TransferState::Installed)
        };
        println!("{device}: {}", describe(&state));
        return Ok(());
    }
    let err = serde_json::from_str::<ErrorBody>(&text)
        .ok()
        .map(|b| b.error);
    if let Some(e) = err.as_ref().filter(|e| e.code == HEALTH_CHECK_FAILED) {
        let r = e.report.as_ref();
        let state = Progress {
            reason: r.and_then(|r| r.reason.clone()),
            serving: r.map(|r| r.serving.clone()),
            ..http_outcome(TransferState::RolledBack)
        };
        println!("{device}: {}", describe(&state));
        bail!("{device} rolled the bundle back");
    }
    let message = err.as_ref().map_or(text, |e| e.message.clone());
    let state = Progress {
        error: Some(message.clone()),
        ..http_outcome(TransferState::Failed)
    };
    println!("{device}: {}", describe(&state));
    match err {
        Some(e) => bail!("{endpoint}: HTTP {status} {}: {message}", e.code),
        None => bail!("{endpoint}: HTTP {status}: {message}"),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn films(version: &str) -> Option<BundleRef> {
        Some(BundleRef {
            name: "films".into(),
            version: version.into(),
        })
    }

    #[test]
    fn describes_final_states() {
        let m = Progress {
            bundle: films("1.1.0"),
            slot: Some(Slot::B),
            ..http_outcome(TransferState::Installed)
        };
        assert_eq!(describe(&m), "installed films 1.1.0 (slot b)");
        assert_eq!(
            describe(&http_outcome(TransferState::Installed)),
            "installed ? ? (slot ?)"
        );
        let m = Progress {
            reason: Some("1 of 1 probe queries failed".into()),
            serving: films("1.0.0"),
            ..http_outcome(TransferState::RolledBack)
        };
        assert_eq!(
            describe(&m),
            "rolled_back: 1 of 1 probe queries failed; films 1.0.0 keeps serving"
        );
        let m = Progress::failed("d", "t1", 0, 0, "bad signature".into());
        assert_eq!(describe(&m), "failed: bad signature");
        let m = Progress::new("d", "t1", TransferState::Receiving, 3, 9);
        assert_eq!(describe(&m), "receiving (3/9 chunks)");
        let m = Progress::new("d", "t1", TransferState::HealthCheck, 9, 9);
        assert_eq!(describe(&m), "health_check (9/9 chunks)");
    }

    #[test]
    fn hashes_the_bundle() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b.kgb");
        std::fs::write(&p, b"abc").unwrap();
        let mut b = Bundle::open(&p).unwrap();
        b.hash().unwrap();
        assert_eq!(
            b.sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(b.size, 3);
        let e = Bundle::open(&dir.path().join("missing.kgb")).err().unwrap();
        assert!(format!("{e:#}").contains("cannot open the bundle"), "{e:#}");
        std::fs::write(&p, b"").unwrap();
        assert!(format!("{:#}", Bundle::open(&p).err().unwrap()).contains("is empty"));
    }
}
