//! Where `kgbox-pack push` sends a bundle over MQTT: the broker and the
//! device's or group's topics, from the command line.

use anyhow::{bail, Result};
use kgbox_protocol::topics::{valid_topic_level, PushTopics};
use kgbox_protocol::BrokerUrl;

use super::PushArgs;

/// Where the push goes.
pub(crate) struct Target {
    /// As given.
    pub broker: String,
    pub addr: BrokerUrl,
    /// The device's or the group's bundle topics and the progress subscription.
    pub topics: PushTopics,
    pub device: Option<String>,
}

impl Target {
    pub(crate) fn from_args(args: &PushArgs) -> Result<Target> {
        let Some(broker) = args.broker.clone() else {
            bail!("--broker mqtt://host:port (or --http URL) is required");
        };
        let addr =
            BrokerUrl::parse(&broker).map_err(|e| anyhow::anyhow!("--broker {broker}: {e}"))?;
        let tls = addr.tls;
        if tls && args.ca_file.is_none() {
            bail!("--broker {broker} uses TLS: pass the broker's CA certificate with --ca-file");
        }
        if !tls && args.ca_file.is_some() {
            bail!("--ca-file is for mqtts:// brokers");
        }
        if args.expect.is_some() && args.group.is_none() {
            bail!("--expect goes with --group");
        }
        let (topics, device) = match (&args.device, &args.group) {
            (Some(d), None) if valid_topic_level(d) => (PushTopics::device(d), Some(d.clone())),
            (None, Some(g)) if valid_topic_level(g) => (PushTopics::group(g), None),
            (None, None) => {
                bail!("name the device (--device ID) or the group (--group G) to push to")
            }
            _ => bail!("device ids and group names are 1-64 characters of A-Z a-z 0-9 _ - ."),
        };
        Ok(Target {
            broker,
            addr,
            topics,
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
        assert_eq!(
            (t.addr.host.as_str(), t.addr.port, t.addr.tls),
            ("10.0.0.1", 1884, false)
        );
        assert_eq!(t.topics.prefix, "kgbox/dev1/bundle/");
        assert_eq!(t.topics.progress, "kgbox/dev1/bundle/progress");
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
        assert_eq!((t.addr.port, t.addr.tls), (8883, true));
        assert_eq!(t.topics.prefix, "kgbox/group/fleet/bundle/");
        assert_eq!(t.topics.progress, "kgbox/+/bundle/progress");
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
