//! MQTT front end (see docs/mqtt.md): requests answered by the HTTP
//! handlers, a retained status with a last will (and, when configured, Home
//! Assistant discovery configs for it: `homeassistant`), and bundle push
//! ([`bundle`]). MQTT 5 and 3.1.1 share everything but two thin event-loop
//! adapters (`transport_v5`, `transport_v311`) and the reply format
//! (`publisher`).
//!
//! [`run`] connects (`transport_v5::connect` or `transport_v311::connect`)
//! and `drive`s the event loop into `Core`: `Core::on_message` routes a
//! topic (`kgbox_protocol::topics::DeviceTopics`). A request (`ask`,
//! `query`) goes to `requests::Answerer::answer`, which runs it through the
//! HTTP router in process (`requests::call`: a `POST /v1/ask` or
//! `/v1/query`, `tower::ServiceExt::oneshot`), so MQTT shares the HTTP
//! handlers, limits and errors; a bundle chunk goes to
//! [`bundle::BundleReceiver`] (`transfer::Transfer`), which deploys the
//! assembled file through `Deployer::deploy_file`.

pub mod bundle;
mod dedupe;
mod fleet;
mod homeassistant;
mod publisher;
mod requests;
mod settings;
pub(crate) mod stats;
mod status;
mod tls;
mod transfer;
mod transport_v311;
mod transport_v5;

use std::sync::Arc;
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBackoff, ExponentialBuilder};

use tokio::sync::{mpsc, watch, Semaphore};

use crate::config::{Config, MqttProtocol};
use crate::deploy::Deployer;
use bundle::BundleReceiver;
use dedupe::Dedupe;
use kgbox_protocol::topics::{BundleTopic, DeviceTopics as Topics, Route};
use publisher::Publisher;
pub use requests::answer_payload;
use requests::{Answerer, Incoming, Job};
pub(crate) use settings::Settings;
pub use stats::MqttStats;
use stats::Outcome;

/// What the MQTT front end needs from the runtime.
pub struct MqttContext {
    pub cfg: Arc<Config>,
    /// The HTTP router: MQTT requests are answered by the same handlers.
    pub router: axum::Router,
    pub deployer: Arc<Deployer>,
    /// The bundles beside the default, by name (their requests go through
    /// the router at `/b/NAME/`; their statuses go in the retained status).
    pub beside: Vec<(String, Arc<Deployer>)>,
    pub stats: Arc<MqttStats>,
}

#[derive(Debug, thiserror::Error)]
pub enum MqttError {
    #[error("mqtt configuration: {0}")]
    Config(String),
}

/// Runs until `shutdown` turns true; then publishes the offline status and
/// disconnects. Connection problems are logged and retried with backoff;
/// only configuration problems found before connecting end it early.
pub async fn run(ctx: MqttContext, shutdown: watch::Receiver<bool>) -> Result<(), MqttError> {
    let m = &ctx.cfg.mqtt;
    let topics = Arc::new(Topics::new(
        &m.device_id(),
        m.group.as_deref(),
        m.bundle_push,
    ));
    let settings = match Settings::new(m, &topics) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "MQTT is not started");
            return Err(e);
        }
    };
    tracing::info!(
        broker = %m.broker,
        protocol = %m.protocol,
        device_id = %topics.device_id,
        group = m.group.as_deref().unwrap_or(""),
        "connecting to the MQTT broker"
    );
    match m.protocol {
        MqttProtocol::V5 => {
            let (publisher, conn) = transport_v5::connect(&settings);
            drive(conn, Core::start(&ctx, topics, publisher), shutdown).await;
        }
        MqttProtocol::V311 => {
            let (publisher, conn) = transport_v311::connect(&settings);
            drive(conn, Core::start(&ctx, topics, publisher), shutdown).await;
        }
    }
    Ok(())
}

/// An event loop's news, protocol-neutral.
pub(crate) enum Polled {
    ConnAck,
    Message(Incoming),
    /// Our DISCONNECT went out.
    DisconnectSent,
    Other,
}

/// One protocol's event loop. `poll` again after an error reconnects.
pub(crate) trait Connection {
    async fn poll(&mut self) -> Result<Polled, String>;
}

/// Most publishes kept across a reconnect.
const MAX_SALVAGE: usize = 10_000;

/// Keeps the publishes a lost connection had queued, to send them again
/// after the next ConnAck; drops retained ones (the status, republished
/// anyway) and, past [`MAX_SALVAGE`], the newest, with a warning.
pub(crate) fn salvage<P>(
    kept: &mut Vec<P>,
    pending: impl Iterator<Item = P>,
    retained: impl Fn(&P) -> bool,
) {
    let mut dropped = 0usize;
    for p in pending.filter(|p| !retained(p)) {
        if kept.len() < MAX_SALVAGE {
            kept.push(p);
        } else {
            dropped += 1;
        }
    }
    if dropped > 0 {
        tracing::warn!(
            dropped,
            "dropped queued MQTT publishes (replies) during the outage"
        );
    }
}

/// Reconnect waits (backon's exponential backoff): doubling from the
/// minimum up to the maximum, each with a random jitter of up to the wait
/// itself added (so between the wait and twice it), so devices that lost
/// the broker together do not reconnect in lockstep.
#[derive(Debug)]
struct Backoff {
    builder: ExponentialBuilder,
    waits: ExponentialBackoff,
}

impl Backoff {
    fn new(min_ms: u64, max_ms: u64) -> Backoff {
        let min = Duration::from_millis(min_ms.max(1));
        let max = Duration::from_millis(max_ms).max(min);
        let builder = ExponentialBuilder::new()
            .with_min_delay(min)
            .with_max_delay(max)
            .with_jitter()
            .without_max_times();
        Backoff {
            builder,
            waits: builder.build(),
        }
    }

    fn reset(&mut self) {
        self.waits = self.builder.build();
    }

    /// The wait before the next attempt.
    fn next(&mut self) -> Duration {
        self.waits
            .next()
            .unwrap_or(self.builder.build().next().unwrap_or_default())
    }
}

/// The protocol-neutral part of the connection.
struct Core {
    topics: Arc<Topics>,
    protocol: MqttProtocol,
    stats: Arc<MqttStats>,
    answerer: Arc<Answerer>,
    dedupe: Dedupe,
    bundle: Option<BundleReceiver>,
    /// A rollout's golden checks and rollbacks (with bundle push on).
    fleet: Arc<fleet::FleetRequests>,
    events: mpsc::UnboundedSender<status::Event>,
    housekeeping: tokio::task::JoinHandle<()>,
    publisher: Publisher,
    backoff: Backoff,
}

impl Core {
    fn start(ctx: &MqttContext, topics: Arc<Topics>, publisher: Publisher) -> Core {
        let m = &ctx.cfg.mqtt;
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let (bundle, progress) = if m.bundle_push {
            let (tx, rx) = mpsc::unbounded_channel();
            let receiver = BundleReceiver::new(
                ctx.cfg.clone(),
                topics.device_id.clone(),
                ctx.deployer.clone(),
                tx,
            );
            (Some(receiver), Some(rx))
        } else {
            (None, None)
        };
        let housekeeping = status::Housekeeping {
            publisher: publisher.clone(),
            topics: topics.clone(),
            deployer: ctx.deployer.clone(),
            beside: ctx.beside.clone(),
            stats: ctx.stats.clone(),
            interval: Duration::from_secs(m.status_interval_s),
            events: events_rx,
            progress,
            discovery: if m.homeassistant_discovery {
                homeassistant::configs(
                    &m.homeassistant_prefix,
                    &topics.device_id,
                    &topics.status,
                    crate::install::RUNTIME_VERSION,
                )
            } else {
                Vec::new()
            },
        };
        Core {
            protocol: m.protocol,
            stats: ctx.stats.clone(),
            answerer: Arc::new(Answerer {
                router: ctx.router.clone(),
                publisher: publisher.clone(),
                stats: ctx.stats.clone(),
                permits: Arc::new(Semaphore::new(m.max_concurrency.max(1))),
                max_request_bytes: m.max_request_bytes,
                deployer: ctx.deployer.clone(),
            }),
            dedupe: Dedupe::new(m.dedupe_capacity),
            bundle,
            fleet: Arc::new(fleet::FleetRequests {
                router: ctx.router.clone(),
                deployer: ctx.deployer.clone(),
                checks: Default::default(),
            }),
            events: events_tx,
            housekeeping: tokio::spawn(housekeeping.run()),
            publisher,
            backoff: Backoff::new(m.reconnect_min_ms, m.reconnect_max_ms),
            topics,
        }
    }

    fn on_connack(&mut self) {
        self.backoff.reset();
        self.stats.set_connected(true);
        let _ = self.events.send(status::Event::Connected);
    }

    /// Logs a connection error; returns how long to wait before retrying.
    fn on_error(&mut self, error: &str) -> Duration {
        let was_connected = self.stats.is_connected();
        self.stats.set_connected(false);
        let wait = self.backoff.next();
        if was_connected {
            tracing::warn!(%error, retry_ms = wait.as_millis() as u64, "lost the MQTT connection");
        } else {
            tracing::warn!(%error, retry_ms = wait.as_millis() as u64, "cannot connect to the MQTT broker");
        }
        wait
    }

    fn on_message(&mut self, mut msg: Incoming) {
        let (kind, bundle) = match self.topics.route(&msg.topic) {
            Route::Request(kind, bundle) => (kind, bundle.map(str::to_string)),
            Route::Bundle(rest) => {
                // Checks and rollbacks are for one device, never a group.
                let own = self.topics.is_own_bundle_topic(&msg.topic);
                match (BundleTopic::parse(rest), &self.bundle) {
                    (_, None) => {}
                    (BundleTopic::Check, Some(_)) if own => self.fleet.check(&msg.payload),
                    (BundleTopic::Rollback, Some(_)) if own => self.fleet.rollback(&msg.payload),
                    (BundleTopic::Check | BundleTopic::Rollback, Some(_)) => {
                        tracing::warn!(topic = %msg.topic, "checks and rollbacks go to one device's topic, not a group's: ignored");
                    }
                    (_, Some(b)) => b.on_message(rest, &msg.payload),
                }
                return;
            }
            Route::Other => {
                tracing::debug!(topic = %msg.topic, "ignoring a message");
                return;
            }
        };
        if self.protocol == MqttProtocol::V311 {
            requests::unwrap_envelope(&mut msg);
        }
        let Some(reply_to) = msg.response_topic.take().filter(|t| !t.is_empty()) else {
            self.stats.request(Outcome::NoResponseTopic);
            tracing::warn!(topic = %msg.topic, "dropped a request without a response topic");
            return;
        };
        if let Some(c) = &msg.correlation {
            if !self.dedupe.insert((reply_to.clone(), c.clone())) {
                self.stats.request(Outcome::Duplicate);
                tracing::debug!(%reply_to, "ignored a redelivered request");
                return;
            }
        }
        let job = Job {
            kind,
            bundle,
            reply_to,
            correlation: msg.correlation,
            payload: msg.payload,
        };
        tokio::spawn(self.answerer.clone().answer(job));
    }

    /// Stops housekeeping and queues the offline status and a DISCONNECT
    /// (sent while the caller keeps polling).
    fn finish(self) -> tokio::task::JoinHandle<()> {
        self.housekeeping.abort();
        let publisher = self.publisher;
        let topic = self.topics.status.clone();
        let payload = status::offline(&self.topics);
        tokio::spawn(async move {
            if let Err(e) = publisher.publish(&topic, payload, true).await {
                tracing::warn!(error = %e, "cannot publish the offline status");
            }
            let _ = publisher.disconnect().await;
        })
    }
}

async fn stopped(rx: &mut watch::Receiver<bool>) {
    // A dropped sender can never say stop: treat it as stop.
    let _ = rx.wait_for(|s| *s).await;
}

/// Polls `conn` until shutdown, reconnecting with backoff; then says goodbye.
async fn drive<C: Connection>(mut conn: C, mut core: Core, mut shutdown: watch::Receiver<bool>) {
    loop {
        let polled = tokio::select! {
            biased;
            _ = stopped(&mut shutdown) => break,
            p = conn.poll() => p,
        };
        match polled {
            Ok(Polled::ConnAck) => {
                tracing::info!("connected to the MQTT broker");
                core.on_connack();
            }
            Ok(Polled::Message(m)) => core.on_message(m),
            Ok(Polled::DisconnectSent | Polled::Other) => {}
            Err(e) => {
                let wait = core.on_error(&e);
                tokio::select! {
                    biased;
                    _ = stopped(&mut shutdown) => break,
                    _ = tokio::time::sleep(wait) => {}
                }
            }
        }
    }
    let connected = core.stats.is_connected();
    let stats = core.stats.clone();
    let goodbye = core.finish();
    if connected {
        let drain = async {
            loop {
                match conn.poll().await {
                    Ok(Polled::DisconnectSent) | Err(_) => break,
                    Ok(_) => {}
                }
            }
        };
        if tokio::time::timeout(Duration::from_secs(5), drain)
            .await
            .is_err()
        {
            tracing::warn!("the MQTT broker did not take the goodbye in time");
        }
    }
    goodbye.abort();
    stats.set_connected(false);
    tracing::info!("MQTT stopped");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn salvage_keeps_unretained_publishes_up_to_the_limit() {
        let mut kept = vec![];
        salvage(
            &mut kept,
            [(1, false), (2, true), (3, false)].into_iter(),
            |p| p.1,
        );
        assert_eq!(kept, vec![(1, false), (3, false)]);
        let mut kept: Vec<usize> = (0..MAX_SALVAGE - 1).collect();
        salvage(&mut kept, [7, 8, 9].into_iter(), |_| false);
        assert_eq!(kept.len(), MAX_SALVAGE);
        assert_eq!(kept.last(), Some(&7));
    }

    #[test]
    fn backoff_doubles_up_to_the_maximum_with_jitter_and_resets() {
        // Over many devices: each wait lies in [base, 2 * base), the bases
        // doubling from 100 ms to the 350 ms cap, and the waits differ.
        let mut firsts = std::collections::BTreeSet::new();
        for _ in 0..50 {
            let mut b = Backoff::new(100, 350);
            let waits: Vec<u128> = (0..5).map(|_| b.next().as_millis()).collect();
            for (w, base) in waits.iter().zip([100, 200, 350, 350, 350]) {
                assert!((base..2 * base).contains(w), "{waits:?}");
            }
            firsts.insert(waits[0]);
            b.reset();
            assert!((100..200).contains(&b.next().as_millis()));
        }
        assert!(firsts.len() > 10, "no jitter: {firsts:?}");
    }
}
