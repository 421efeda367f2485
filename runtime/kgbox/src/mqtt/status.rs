//! The retained status topic and the connection's housekeeping: subscribe
//! and announce on every ConnAck, republish on changes and periodically,
//! forward bundle-push progress.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::MissedTickBehavior;

use super::publisher::Publisher;
use super::stats::MqttStats;
use crate::deploy::Deployer;
use kgbox_protocol::topics::DeviceTopics as Topics;
use kgbox_protocol::{to_wire, StatusMessage};

/// The retained status: the default bundle's status plus `device_id` and
/// `online`, and under `beside` each other bundle's.
pub(crate) fn online(
    topics: &Topics,
    deployer: &Deployer,
    beside: &[(String, Arc<Deployer>)],
) -> Vec<u8> {
    let mut message = StatusMessage::online(&topics.device_id, deployer.status());
    message.group = topics.group.clone();
    for (name, d) in beside {
        message.beside.insert(name.clone(), d.status());
    }
    message.reported_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs());
    to_wire(&message).into_bytes()
}

/// The last will, also published on a clean shutdown: the device's id
/// and group, offline.
pub(crate) fn offline(topics: &Topics) -> Vec<u8> {
    let mut m = StatusMessage::offline(&topics.device_id);
    m.group = topics.group.clone();
    to_wire(&m).into_bytes()
}

/// What the event loop tells the housekeeping task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// A ConnAck: subscribe again and republish the status.
    Connected,
}

/// The housekeeping task's inputs.
pub(crate) struct Housekeeping {
    pub publisher: Publisher,
    pub topics: Arc<Topics>,
    pub deployer: Arc<Deployer>,
    /// The bundles beside the default, by name.
    pub beside: Vec<(String, Arc<Deployer>)>,
    pub stats: Arc<MqttStats>,
    pub interval: Duration,
    pub events: UnboundedReceiver<Event>,
    /// Bundle-push progress messages (none when bundle push is off).
    pub progress: Option<UnboundedReceiver<Vec<u8>>>,
    /// Home Assistant discovery configs (topic, payload), published
    /// retained on every ConnAck; empty when discovery is off.
    pub discovery: Vec<(String, Vec<u8>)>,
}

impl Housekeeping {
    /// Runs until the event channel closes (the event loop ended).
    pub(crate) async fn run(mut self) {
        let mut changed = self.deployer.subscribe();
        // A deployment of a bundle beside the default republishes too.
        let (beside_tx, mut beside_changed) = tokio::sync::mpsc::unbounded_channel::<()>();
        for (_, d) in &self.beside {
            let mut rx = d.subscribe();
            let tx = beside_tx.clone();
            tokio::spawn(async move { while rx.changed().await.is_ok() && tx.send(()).is_ok() {} });
        }
        drop(beside_tx);
        let mut beside_open = !self.beside.is_empty();
        let mut deploys_open = true;
        let period = self.interval.max(Duration::from_secs(1));
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                ev = self.events.recv() => match ev {
                    Some(Event::Connected) => self.on_connected().await,
                    None => return,
                },
                r = changed.changed(), if deploys_open => match r {
                    Ok(()) => self.publish_status("changed").await,
                    Err(_) => deploys_open = false,
                },
                r = beside_changed.recv(), if beside_open => match r {
                    Some(()) => self.publish_status("changed beside").await,
                    None => beside_open = false,
                },
                _ = tick.tick() => self.publish_status("periodic").await,
                p = recv_progress(&mut self.progress), if self.progress.is_some() => match p {
                    Some(bytes) => self.publish_progress(bytes).await,
                    None => self.progress = None,
                },
            }
        }
    }

    async fn on_connected(&self) {
        for filter in &self.topics.subscriptions {
            if let Err(e) = self.publisher.subscribe(filter).await {
                tracing::warn!(%filter, error = %e, "cannot subscribe");
            }
        }
        tracing::info!(subscriptions = ?self.topics.subscriptions, "subscribing to the request topics");
        // Before the status: a client that sees the device online finds
        // its discovery configs already retained.
        self.publish_discovery().await;
        self.publish_status("connected").await;
    }

    async fn publish_discovery(&self) {
        for (topic, payload) in &self.discovery {
            if let Err(e) = self.publisher.publish(topic, payload.clone(), true).await {
                tracing::warn!(%topic, error = %e, "cannot publish a Home Assistant discovery config");
            }
        }
        if !self.discovery.is_empty() {
            tracing::debug!(
                configs = self.discovery.len(),
                "published the Home Assistant discovery configs"
            );
        }
    }

    async fn publish_status(&self, why: &str) {
        if !self.stats.is_connected() {
            return;
        }
        let payload = online(&self.topics, &self.deployer, &self.beside);
        match self
            .publisher
            .publish(&self.topics.status, payload, true)
            .await
        {
            Ok(()) => tracing::debug!(why, "published the MQTT status"),
            Err(e) => tracing::warn!(why, error = %e, "cannot publish the MQTT status"),
        }
    }

    async fn publish_progress(&self, bytes: Vec<u8>) {
        if let Err(e) = self
            .publisher
            .publish(&self.topics.progress, bytes, false)
            .await
        {
            tracing::warn!(error = %e, "cannot publish bundle progress");
        }
    }
}

async fn recv_progress(rx: &mut Option<UnboundedReceiver<Vec<u8>>>) -> Option<Vec<u8>> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn offline_is_the_last_will() {
        let t = Topics::new("edge-7", None, false);
        let v: serde_json::Value = serde_json::from_slice(&offline(&t)).unwrap_or_default();
        assert_eq!(v, json!({"device_id": "edge-7", "online": false}));
        let t = Topics::new("edge-7", Some("plant"), false);
        let v: serde_json::Value = serde_json::from_slice(&offline(&t)).unwrap_or_default();
        assert_eq!(
            v,
            json!({"device_id": "edge-7", "group": "plant", "online": false})
        );
    }
}
