//! `[mqtt]`: the MQTT front end's settings.

use std::path::PathBuf;

/// Whether `s` can be one level of an MQTT topic in kgbox's scheme.
pub use kgbox_protocol::topics::valid_topic_level;
use kgbox_protocol::BrokerUrl;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// MQTT protocol version spoken to the broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MqttProtocol {
    /// MQTT 5: replies use the request's response topic and correlation data.
    #[serde(rename = "v5")]
    V5,
    /// MQTT 3.1.1: the request envelope carries `reply_to` and `correlation_id`.
    #[serde(rename = "v3.1.1")]
    V311,
}

impl std::fmt::Display for MqttProtocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MqttProtocol::V5 => "v5",
            MqttProtocol::V311 => "v3.1.1",
        })
    }
}

/// `[mqtt]`: requests, status and bundle push over an MQTT broker
/// (see docs/mqtt.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MqttConfig {
    pub enabled: bool,
    /// `mqtt://host:port` or `mqtts://host:port` (TLS); an IPv6 host in
    /// brackets. No user name or password in it: see `username`, `password_env`.
    pub broker: String,
    /// This device's id in topics (`kgbox/{device_id}/...`); default: the host name.
    pub device_id: Option<String>,
    /// Shared-subscription group (`$share/{group}/kgbox/ask`); none when unset.
    pub group: Option<String>,
    pub protocol: MqttProtocol,
    /// MQTT client id; default `kgbox-{device_id}`.
    pub client_id: Option<String>,
    pub username: Option<String>,
    /// Environment variable holding the password (never the password itself).
    pub password_env: String,
    /// CA certificate (PEM) for `mqtts://`; default: none (required for TLS).
    pub ca_file: Option<PathBuf>,
    /// Client certificate and key (PEM) for mutual TLS.
    pub client_cert: Option<PathBuf>,
    pub client_key: Option<PathBuf>,
    pub keep_alive_s: u64,
    /// Redelivered requests (same response topic and correlation data) remembered.
    pub dedupe_capacity: usize,
    /// Retained status republished this often, seconds.
    pub status_interval_s: u64,
    /// Reconnect backoff: first and longest wait, milliseconds (each wait
    /// gets a random jitter of up to itself added).
    pub reconnect_min_ms: u64,
    pub reconnect_max_ms: u64,
    /// Largest request payload, bytes (bundle chunks: `bundle_chunk_max_bytes`).
    pub max_request_bytes: usize,
    /// Requests answered at once.
    pub max_concurrency: usize,
    /// Accept bundle pushes on `kgbox/{device_id}/bundle/...`.
    pub bundle_push: bool,
    /// Largest bundle chunk accepted, bytes.
    pub bundle_chunk_max_bytes: usize,
    /// Publish Home Assistant MQTT discovery configs for the status
    /// (retained, on every connect; docs/mqtt.md, "Home Assistant").
    pub homeassistant_discovery: bool,
    /// Home Assistant's discovery prefix: one or more topic levels.
    pub homeassistant_prefix: String,
}

impl Default for MqttConfig {
    fn default() -> Self {
        MqttConfig {
            enabled: false,
            broker: "mqtt://127.0.0.1:1883".into(),
            device_id: None,
            group: None,
            protocol: MqttProtocol::V5,
            client_id: None,
            username: None,
            password_env: "KGBOX_MQTT_PASSWORD".into(),
            ca_file: None,
            client_cert: None,
            client_key: None,
            keep_alive_s: 30,
            dedupe_capacity: 4096,
            status_interval_s: 60,
            reconnect_min_ms: 200,
            reconnect_max_ms: 30_000,
            max_request_bytes: 64 * 1024,
            max_concurrency: 64,
            bundle_push: true,
            bundle_chunk_max_bytes: 1 << 20,
            homeassistant_discovery: false,
            homeassistant_prefix: "homeassistant".into(),
        }
    }
}

/// Whether `s` can be the first levels of a topic the device publishes to
/// (`mqtt.homeassistant_prefix`): not empty, at most 256 bytes, no empty
/// level, no wildcard (`+`, `#`), no NUL, not a `$` topic.
pub fn valid_topic_prefix(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 256
        && !s.starts_with('$')
        && s.split('/').all(|level| !level.is_empty())
        && !s.contains(['+', '#', '\0'])
}

impl MqttConfig {
    /// The device id: configured, else the host name, else `kgbox`.
    pub fn device_id(&self) -> String {
        if let Some(id) = &self.device_id {
            return id.clone();
        }
        std::fs::read_to_string("/etc/hostname")
            .ok()
            .map(|h| h.trim().to_string())
            .filter(|h| valid_topic_level(h))
            .unwrap_or_else(|| "kgbox".into())
    }

    /// Host, port and whether TLS is on, from `broker`.
    pub fn broker_addr(&self) -> Result<BrokerUrl> {
        BrokerUrl::parse(&self.broker)
            .map_err(|e| Error::Config(format!("mqtt.broker {:?}: {e}", self.broker)))
    }

    pub(super) fn check(&self) -> Result<()> {
        let tls = self.broker_addr()?.tls;
        for (key, v) in [("device_id", &self.device_id), ("group", &self.group)] {
            if let Some(v) = v {
                if !valid_topic_level(v) {
                    return Err(Error::Config(format!(
                        "mqtt.{key} {v:?} must be 1-64 characters of A-Z a-z 0-9 _ - ."
                    )));
                }
            }
        }
        if !valid_topic_prefix(&self.homeassistant_prefix) {
            return Err(Error::Config(format!(
                "mqtt.homeassistant_prefix {:?} must be a topic name of 1-256 bytes: \
                 no empty level (leading, trailing or double /), no + # or NUL, \
                 not starting with $",
                self.homeassistant_prefix
            )));
        }
        if tls && self.ca_file.is_none() {
            return Err(Error::Config(
                "mqtt.broker uses mqtts:// but mqtt.ca_file is not set".into(),
            ));
        }
        if !tls && (self.ca_file.is_some() || self.client_cert.is_some()) {
            return Err(Error::Config(
                "mqtt.ca_file / mqtt.client_cert are set but mqtt.broker is not mqtts://".into(),
            ));
        }
        if self.client_cert.is_some() != self.client_key.is_some() {
            return Err(Error::Config(
                "mqtt.client_cert and mqtt.client_key go together".into(),
            ));
        }
        if self.keep_alive_s < 5 {
            return Err(Error::Config("mqtt.keep_alive_s must be at least 5".into()));
        }
        if self.reconnect_min_ms == 0 || self.reconnect_min_ms > self.reconnect_max_ms {
            return Err(Error::Config(
                "mqtt.reconnect_min_ms must be between 1 and mqtt.reconnect_max_ms".into(),
            ));
        }
        if self.max_concurrency == 0 || self.dedupe_capacity == 0 {
            return Err(Error::Config(
                "mqtt.max_concurrency and mqtt.dedupe_capacity must be at least 1".into(),
            ));
        }
        if self.bundle_chunk_max_bytes < 1024 || self.max_request_bytes < 1024 {
            return Err(Error::Config(
                "mqtt.max_request_bytes and mqtt.bundle_chunk_max_bytes must be at least 1024"
                    .into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_prefixes_are_topic_names_without_empty_levels() {
        for good in ["homeassistant", "site/ha", "a-b_c.d/e f"] {
            assert!(valid_topic_prefix(good), "{good}");
        }
        for bad in [
            "", "/ha", "ha/", "a//b", "ha/+", "ha/#", "h+a", "$SYS", "a\0b",
        ] {
            assert!(!valid_topic_prefix(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_bad_homeassistant_prefix_fails_naming_the_key() {
        let defaults = MqttConfig::default();
        assert!(!defaults.homeassistant_discovery);
        assert_eq!(defaults.homeassistant_prefix, "homeassistant");
        assert!(defaults.check().is_ok());
        for bad in ["", "ha/", "ha/#"] {
            let c = MqttConfig {
                homeassistant_prefix: bad.into(),
                ..MqttConfig::default()
            };
            let err = c.check().err().map(|e| e.to_string()).unwrap_or_default();
            assert!(err.contains("mqtt.homeassistant_prefix"), "{bad:?}: {err}");
        }
    }
}
