//! Where `kgbox-pack push` sends a bundle over MQTT: the broker and the
//! device's or group's topics, from the command line.

use anyhow::{bail, Result};

use super::PushArgs;

/// Where the push goes.
pub(crate) struct Target {
    pub broker: String,
    pub host: String,
    pub port: u16,
    pub tls: bool,
    /// `kgbox/{device}/bundle/` or `kgbox/group/{group}/bundle/`.
    pub prefix: String,
    /// The progress subscription.
    pub progress: String,
    pub device: Option<String>,
}

fn valid_level(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

impl Target {
    pub(crate) fn from_args(args: &PushArgs) -> Result<Target> {
        let Some(broker) = args.broker.clone() else {
            bail!("--broker mqtt://host:port (or --http URL) is required");
        };
        let bad = |why: &str| {
            anyhow::anyhow!(
                "--broker {broker}: {why} (expected mqtt://host:port or mqtts://host:port)"
            )
        };
        let (tls, rest) = if let Some(r) = broker.strip_prefix("mqtt://") {
            (false, r)
        } else if let Some(r) = broker.strip_prefix("mqtts://") {
            (true, r)
        } else {
            return Err(bad("unknown scheme"));
        };
        let rest = rest.trim_end_matches('/');
        let (host, port) = match rest.rsplit_once(':') {
            Some((h, p)) => (
                h,
                p.parse::<u16>()
                    .map_err(|_| bad("the port is not a number"))?,
            ),
            None => (rest, if tls { 8883 } else { 1883 }),
        };
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        if host.is_empty() {
            return Err(bad("no host"));
        }
        if tls && args.ca_file.is_none() {
            bail!("--broker {broker} uses TLS: pass the broker's CA certificate with --ca-file");
        }
        if !tls && args.ca_file.is_some() {
            bail!("--ca-file is for mqtts:// brokers");
        }
        if args.expect.is_some() && args.group.is_none() {
            bail!("--expect goes with --group");
        }
        let (prefix, progress, device) = match (&args.device, &args.group) {
            (Some(d), None) if valid_level(d) => (
                format!("kgbox/{d}/bundle/"),
                format!("kgbox/{d}/bundle/progress"),
                Some(d.clone()),
            ),
            (None, Some(g)) if valid_level(g) => (
                format!("kgbox/group/{g}/bundle/"),
                "kgbox/+/bundle/progress".to_string(),
                None,
            ),
            (None, None) => {
                bail!("name the device (--device ID) or the group (--group G) to push to")
            }
            _ => bail!("device ids and group names are 1-64 characters of A-Z a-z 0-9 _ - ."),
        };
        Ok(Target {
            broker,
            host,
            port,
            tls,
            prefix,
            progress,
            device,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        push: PushArgs,
    }

    fn target(argv: &[&str]) -> Result<Target> {
        let cli = Cli::try_parse_from(std::iter::once("push").chain(argv.iter().copied()))?;
        Target::from_args(&cli.push)
    }

    #[test]
    fn targets() {
        let t = target(&[
            "b.kgb",
            "--broker",
            "mqtt://10.0.0.1:1884",
            "--device",
            "dev1",
        ])
        .unwrap();
        assert_eq!((t.host.as_str(), t.port, t.tls), ("10.0.0.1", 1884, false));
        assert_eq!(t.prefix, "kgbox/dev1/bundle/");
        assert_eq!(t.progress, "kgbox/dev1/bundle/progress");
        let t = target(&[
            "b.kgb",
            "--broker",
            "mqtts://broker",
            "--group",
            "fleet",
            "--ca-file",
            "ca.pem",
        ])
        .unwrap();
        assert_eq!((t.port, t.tls), (8883, true));
        assert_eq!(t.prefix, "kgbox/group/fleet/bundle/");
        assert_eq!(t.progress, "kgbox/+/bundle/progress");
        for (argv, why) in [
            (
                &["b.kgb", "--broker", "tcp://x:1", "--device", "d"][..],
                "unknown scheme",
            ),
            (
                &["b.kgb", "--broker", "mqtt://x:port", "--device", "d"],
                "port",
            ),
            (&["b.kgb", "--broker", "mqtt://x:1"], "--device ID"),
            (
                &["b.kgb", "--broker", "mqtt://x:1", "--device", "a/#"],
                "1-64 characters",
            ),
            (
                &["b.kgb", "--broker", "mqtts://x:1", "--device", "d"],
                "--ca-file",
            ),
        ] {
            let e = target(argv).err().unwrap();
            assert!(e.to_string().contains(why), "{argv:?}: {e}");
        }
        assert!(
            target(&["b.kgb", "--device", "d"]).is_err(),
            "no broker, no --http"
        );
        assert!(
            target(&["b.kgb", "--broker", "mqtt://x", "--device", "d", "--group", "g"]).is_err()
        );
        assert!(
            target(&["b.kgb", "--broker", "mqtt://x", "--device", "d", "--expect", "2"]).is_err()
        );
    }
}
