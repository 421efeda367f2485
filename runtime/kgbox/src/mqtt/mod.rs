//! MQTT front end (see docs/mqtt.md). Placeholder until the transport lands.

pub mod bundle;

use std::sync::Arc;

use crate::config::Config;
use crate::deploy::Deployer;

/// What the MQTT front end needs from the runtime.
pub struct MqttContext {
    pub cfg: Arc<Config>,
    /// The HTTP router: MQTT requests are answered by the same handlers.
    pub router: axum::Router,
    pub deployer: Arc<Deployer>,
    pub stats: Arc<MqttStats>,
}

/// Counters for `/metrics`.
#[derive(Debug, Default)]
pub struct MqttStats {}

impl MqttStats {
    /// Appends the `kgbox_mqtt_*` series.
    pub fn render(&self, _out: &mut String) {}
}

#[derive(Debug, thiserror::Error)]
pub enum MqttError {
    #[error("mqtt configuration: {0}")]
    Config(String),
}

/// Runs until `shutdown` turns true.
pub async fn run(
    _ctx: MqttContext,
    _shutdown: tokio::sync::watch::Receiver<bool>,
) -> Result<(), MqttError> {
    Err(MqttError::Config("MQTT is not built yet".into()))
}
