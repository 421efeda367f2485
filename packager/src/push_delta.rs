//! `kgbox-pack push NEW.kgb --delta-from OLD.kgb --key K` (or `--delta
//! UPDATE.kgbd`): sends the delta update when the device reports that it
//! runs the delta's base (its `/v1/status`, or its retained MQTT status,
//! carries the served bundle's digest), the full bundle otherwise, and says
//! which and why.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use kgbox_bundle::delta::{BundleId, DeltaReader};
use kgbox_bundle::{BundleReader, SecretKey};
use kgbox_protocol::push::StatusMessage;
use kgbox_protocol::topics::status_topic;
use kgbox_protocol::DeviceStatus;
use rumqttc::v5::mqttbytes::v5::Packet;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::{AsyncClient, Event};

use super::target::Target;
use super::PushArgs;

/// How long to wait for a device's retained status.
const STATUS_WAIT: Duration = Duration::from_secs(5);

/// The file to send.
pub(crate) struct Picked {
    pub path: PathBuf,
    /// A delta made for the push: a temporary file of an unpredictable
    /// name, deleted on drop.
    _made: Option<tempfile::TempPath>,
}

fn full(args: &PushArgs) -> Picked {
    Picked {
        path: args.bundle.clone(),
        _made: None,
    }
}

/// The delta's base and target, from its signed info.
pub(crate) fn delta_ids(path: &Path) -> Result<(BundleId, BundleId)> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let d = DeltaReader::open(BufReader::new(file))
        .with_context(|| format!("{} is not a valid delta update", path.display()))?;
    let info = &d.prefix().info;
    Ok((info.base.clone(), info.target.clone()))
}

/// A bundle as a delta names it (its name, version and digest).
pub(crate) fn bundle_id(path: &Path) -> Result<BundleId> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let r = BundleReader::open(BufReader::new(file))
        .with_context(|| format!("{} is not a valid bundle", path.display()))?;
    let m = &r.prefix().manifest;
    Ok(BundleId {
        name: m.name.clone(),
        version: m.version.to_string(),
        digest: hex::encode(r.prefix().digest()),
    })
}

/// Chooses between the bundle and a delta (when one was asked for). The
/// device is asked for its bundle first; a delta is made (`--delta-from`)
/// only for a device that runs its base.
pub(crate) fn pick(args: &PushArgs, target: Option<&Target>) -> Result<Picked> {
    if args.delta.is_none() && args.delta_from.is_none() {
        return Ok(full(args));
    }
    if args.group.is_some() {
        bail!("a delta is chosen per device: push it with --device or --http, not --group");
    }
    let new_digest = bundle_id(&args.bundle)?.digest;
    let check_target = |made_for: &BundleId| -> Result<()> {
        if made_for.digest != new_digest {
            bail!(
                "the delta makes {made_for}, not {} (digest {})",
                args.bundle.display(),
                &new_digest[..16]
            );
        }
        Ok(())
    };
    // The delta's base: from a given delta's signed info, or the old bundle.
    let base = match (&args.delta, &args.delta_from) {
        (Some(d), _) => {
            let (base, made_for) = delta_ids(d)?;
            check_target(&made_for)?;
            base
        }
        (None, Some(old)) => {
            if args.key.is_none() {
                bail!("--delta-from needs --key (the secret key that signs the delta)");
            }
            bundle_id(old)?
        }
        (None, None) => return Ok(full(args)),
    };
    let status = match (&args.http, target) {
        (Some(url), _) => http_status(url, args.timeout),
        (None, Some(t)) => mqtt_status(args, t),
        (None, None) => Err(anyhow::anyhow!("no device to ask")),
    };
    let device = args
        .device
        .clone()
        .or_else(|| args.http.clone())
        .unwrap_or_default();
    let reason = match status {
        Ok(Some(s)) if s.digest.as_deref() == Some(base.digest.as_str()) => {
            let picked = match (&args.delta, &args.delta_from, &args.key) {
                (Some(d), _, _) => Picked {
                    path: d.clone(),
                    _made: None,
                },
                (None, Some(old), Some(key)) => make(old, key, args)?,
                _ => return Ok(full(args)),
            };
            let (made_base, made_for) = delta_ids(&picked.path)?;
            check_target(&made_for)?;
            if made_base.digest != base.digest {
                bail!("the delta is for {made_base}, not {base}");
            }
            println!(
                "{device} runs {base}, the delta's base: sending the delta update ({})",
                picked.path.display()
            );
            return Ok(picked);
        }
        Ok(Some(s)) => match s.digest {
            Some(d) => format!(
                "it runs {} {} (digest {}…), not the delta's base {base}",
                s.bundle.name,
                s.bundle.version,
                d.get(..16).unwrap_or(&d)
            ),
            None => "it does not report an installed bundle's digest \
                     (nothing installed, or an older kgbox)"
                .into(),
        },
        Ok(None) => "it reported no status".into(),
        Err(e) => format!("its status could not be read: {e:#}"),
    };
    println!("{device}: {reason}: sending the full bundle");
    Ok(full(args))
}

/// Makes the delta `old` -> the pushed bundle, signed by `key`, in a
/// temporary file (deleted when the push is done).
fn make(old: &Path, key: &Path, args: &PushArgs) -> Result<Picked> {
    let key = SecretKey::read(key).context("cannot load the signing key")?;
    let made = tempfile::Builder::new()
        .prefix("kgbox-push-")
        .suffix(".kgbd")
        .tempfile()
        .context("cannot create a temporary file for the delta")?
        .into_temp_path();
    let out = made.to_path_buf();
    // Owned from here: removed on any error below.
    let picked = Picked {
        path: out.clone(),
        _made: Some(made),
    };
    let r = crate::delta::make_delta(old, &args.bundle, &key, &out, &Default::default())?;
    println!(
        "made a delta update {} -> {}: {} bytes ({:.2}% of the bundle)",
        r.base,
        r.target,
        r.bytes,
        100.0 * r.bytes as f64 / r.full_bytes.max(1) as f64
    );
    Ok(picked)
}

/// `GET URL/v1/status`.
fn http_status(url: &str, timeout: Duration) -> Result<Option<DeviceStatus>> {
    let base = url.trim_end_matches('/');
    let base = base.strip_suffix("/v1/bundles").unwrap_or(base);
    let mut resp = super::http_agent(timeout.min(Duration::from_secs(30)))
        .get(&format!("{base}/v1/status"))
        .call()
        .with_context(|| format!("GET {base}/v1/status"))?;
    let status = resp.status();
    if !status.is_success() {
        bail!("GET {base}/v1/status answered {status}");
    }
    Ok(Some(resp.body_mut().read_json::<DeviceStatus>()?))
}

/// The device's retained status message (`kgbox/{id}/status`).
fn mqtt_status(args: &PushArgs, target: &Target) -> Result<Option<DeviceStatus>> {
    let Some(device) = &target.device else {
        return Ok(None);
    };
    let topic = status_topic(device);
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?
        .block_on(async {
            let (client, mut el) = AsyncClient::new(super::mqtt::options(args, target)?, 8);
            client
                .try_subscribe(topic.clone(), QoS::AtLeastOnce)
                .context("the MQTT client stopped")?;
            let until = Instant::now() + STATUS_WAIT;
            let found = loop {
                match tokio::time::timeout_at(until.into(), el.poll()).await {
                    Err(_) => break None,
                    Ok(Err(e)) => bail!("cannot reach the broker at {}: {e}", target.broker),
                    Ok(Ok(Event::Incoming(Packet::Publish(p)))) if p.topic == topic.as_bytes() => {
                        let m: StatusMessage = serde_json::from_slice(&p.payload)
                            .context("the device's status message is not valid")?;
                        break m.status;
                    }
                    Ok(Ok(_)) => {}
                }
            };
            let _ = client.try_disconnect();
            Ok(found)
        })
}
