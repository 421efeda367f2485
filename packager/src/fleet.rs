//! `kgbox-pack fleet status`: which device runs what, from the devices'
//! retained status messages (`kgbox/{id}/status`, docs/mqtt.md): the bundle
//! and version each serves, its health, whether it is online, and when it
//! last reported. A table, or JSON.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use kgbox_protocol::{BrokerUrl, StatusMessage};
use rumqttc::v5::mqttbytes::v5::Packet;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::{AsyncClient, Event};
use serde_json::json;

/// Every device's status topic.
const ALL_STATUS: &str = "kgbox/+/status";

/// `kgbox-pack fleet`.
#[derive(Debug, clap::Subcommand)]
pub enum FleetCommand {
    /// Which device runs which bundle version, its health, and when it last
    /// reported, from the retained status messages.
    Status(FleetStatusArgs),
}

#[derive(Debug, clap::Args)]
pub struct FleetStatusArgs {
    /// The broker, mqtt://host:port or mqtts://host:port.
    #[arg(long, value_name = "URL")]
    pub broker: String,
    #[arg(long, value_name = "U")]
    pub username: Option<String>,
    /// The environment variable that holds the password.
    #[arg(long, value_name = "VAR", requires = "username")]
    pub password_env: Option<String>,
    /// The broker's CA certificate (mqtts://).
    #[arg(long, value_name = "F")]
    pub ca_file: Option<PathBuf>,
    /// How long to collect statuses after the last new one arrives.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub settle: Duration,
    /// Stop waiting once this many devices reported (at most --timeout).
    #[arg(long, value_name = "N")]
    pub expect: Option<usize>,
    /// Give up waiting for statuses after this long.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
    /// One JSON object: {"devices": [...]}.
    #[arg(long)]
    pub json: bool,
}

pub fn run(cmd: &FleetCommand) -> Result<()> {
    match cmd {
        FleetCommand::Status(args) => status(args),
    }
}

fn status(args: &FleetStatusArgs) -> Result<()> {
    let addr = BrokerUrl::parse(&args.broker)
        .map_err(|e| anyhow::anyhow!("--broker {}: {e}", args.broker))?;
    if addr.tls && args.ca_file.is_none() {
        bail!(
            "--broker {} uses TLS: pass the broker's CA certificate with --ca-file",
            args.broker
        );
    }
    let opts = crate::push::broker_options(
        &addr,
        args.username.as_deref(),
        args.password_env.as_deref(),
        args.ca_file.as_deref(),
    )?;
    let devices = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?
        .block_on(collect(opts, args))?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    if args.json {
        let rows: Vec<_> = devices.values().map(|m| row_json(m, now)).collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({ "devices": rows }))?
        );
    } else {
        print!("{}", table(&devices, now));
    }
    Ok(())
}

/// The retained (and any fresh) status of every device, by id.
async fn collect(
    opts: rumqttc::v5::MqttOptions,
    args: &FleetStatusArgs,
) -> Result<BTreeMap<String, StatusMessage>> {
    let (client, mut el) = AsyncClient::new(opts, 16);
    client
        .try_subscribe(ALL_STATUS, QoS::AtLeastOnce)
        .context("the MQTT client stopped")?;
    let deadline = Instant::now() + args.timeout;
    let mut last_new = Instant::now();
    let mut devices = BTreeMap::new();
    loop {
        // Retained statuses come right after the subscription: without
        // --expect, stop once none has come for --settle.
        let until = match args.expect {
            Some(n) if devices.len() >= n => break,
            Some(_) => deadline,
            None => (last_new + args.settle).min(deadline),
        };
        match tokio::time::timeout_at(until.into(), el.poll()).await {
            Err(_) => break,
            Ok(Err(e)) => bail!("cannot reach the broker at {}: {e}", args.broker),
            Ok(Ok(Event::Incoming(Packet::Publish(p)))) => {
                let topic = String::from_utf8_lossy(&p.topic).to_string();
                match serde_json::from_slice::<StatusMessage>(&p.payload) {
                    Ok(m) => {
                        if devices.insert(m.device_id.clone(), m).is_none() {
                            last_new = Instant::now();
                        }
                    }
                    Err(e) => {
                        eprintln!("fleet status: {topic}: not a status message ({e}); left out")
                    }
                }
            }
            Ok(Ok(_)) => {}
        }
    }
    let _ = client.try_disconnect();
    Ok(devices)
}

fn ago(reported: Option<u64>, now: u64) -> String {
    match reported {
        Some(t) => format!("{}s ago", now.saturating_sub(t)),
        None => "-".into(),
    }
}

fn row_json(m: &StatusMessage, now: u64) -> serde_json::Value {
    let beside: BTreeMap<_, _> = m
        .beside
        .iter()
        .map(|(name, s)| {
            (
                name.clone(),
                json!({"version": s.bundle.version, "health": s.health}),
            )
        })
        .collect();
    json!({
        "device_id": m.device_id,
        "online": m.online,
        "bundle": m.status.as_ref().map(|s| &s.bundle.name),
        "version": m.status.as_ref().map(|s| &s.bundle.version),
        "health": m.status.as_ref().map(|s| s.health),
        "source": m.status.as_ref().map(|s| &s.source),
        "digest": m.status.as_ref().and_then(|s| s.digest.as_ref()),
        "reported_unix": m.reported_unix,
        "seconds_since_report": m.reported_unix.map(|t| now.saturating_sub(t)),
        "beside": beside,
    })
}

fn table(devices: &BTreeMap<String, StatusMessage>, now: u64) -> String {
    if devices.is_empty() {
        return "no device has a status on this broker\n".into();
    }
    let mut out = format!(
        "{:<24} {:<8} {:<20} {:<10} {:<8} {}\n",
        "DEVICE", "STATE", "BUNDLE", "VERSION", "HEALTH", "REPORTED"
    );
    let (mut online, mut versions) = (0, BTreeMap::<String, usize>::new());
    for m in devices.values() {
        let state = if m.online { "online" } else { "offline" };
        online += usize::from(m.online);
        let (bundle, version, health) = match &m.status {
            Some(s) => (
                s.bundle.name.clone(),
                s.bundle.version.clone(),
                s.health.to_string(),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        if m.status.is_some() {
            *versions.entry(format!("{bundle} {version}")).or_default() += 1;
        }
        out.push_str(&format!(
            "{:<24} {:<8} {:<20} {:<10} {:<8} {}\n",
            m.device_id,
            state,
            bundle,
            version,
            health,
            ago(m.reported_unix, now)
        ));
        for (name, s) in &m.beside {
            out.push_str(&format!(
                "{:<24} {:<8} {:<20} {:<10} {:<8}\n",
                "", "beside", name, s.bundle.version, s.health
            ));
        }
    }
    let summary: Vec<String> = versions
        .iter()
        .map(|(v, n)| format!("{n} on {v}"))
        .collect();
    out.push_str(&format!(
        "{} devices, {online} online; {}\n",
        devices.len(),
        if summary.is_empty() {
            "no bundle reported".into()
        } else {
            summary.join(", ")
        }
    ));
    out
}
