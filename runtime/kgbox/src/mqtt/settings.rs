//! Connection settings, checked before connecting.

use std::sync::Arc;
use std::time::Duration;

use kgbox_protocol::topics::DeviceTopics as Topics;

use super::{status, tls, MqttError};
use crate::config::MqttConfig;

/// Connection settings, checked before connecting.
pub(crate) struct Settings {
    pub client_id: String,
    pub host: String,
    pub port: u16,
    pub tls: Option<Arc<tokio_rustls::rustls::ClientConfig>>,
    pub credentials: Option<(String, String)>,
    pub keep_alive: Duration,
    /// Largest packet accepted from the broker (bundle chunks, requests).
    pub max_incoming: usize,
    pub channel_capacity: usize,
    pub will_topic: String,
    pub will_payload: Vec<u8>,
}

impl Settings {
    pub(crate) fn new(m: &MqttConfig, topics: &Topics) -> Result<Settings, MqttError> {
        let broker = m
            .broker_addr()
            .map_err(|e| MqttError::Config(e.to_string()))?;
        let client_id = m
            .client_id
            .clone()
            .unwrap_or_else(|| format!("kgbox-{}", topics.device_id));
        if client_id.trim().is_empty() || client_id.len() > 256 {
            return Err(MqttError::Config(format!(
                "mqtt.client_id {client_id:?} must be 1-256 characters"
            )));
        }
        let tls = if broker.tls {
            Some(tls::client_config(m)?)
        } else {
            None
        };
        let credentials = m.username.as_ref().map(|u| {
            let password = std::env::var(&m.password_env).unwrap_or_default();
            (u.clone(), password)
        });
        Ok(Settings {
            client_id,
            host: broker.host,
            port: broker.port,
            tls,
            credentials,
            keep_alive: Duration::from_secs(m.keep_alive_s.max(5)),
            max_incoming: m.bundle_chunk_max_bytes.max(m.max_request_bytes) + 4096,
            channel_capacity: m.max_concurrency.clamp(16, 1024) + 16,
            will_topic: topics.status.clone(),
            will_payload: status::offline(topics),
        })
    }
}
