//! The rollout's view of the fleet: one MQTT connection, on a thread of its
//! own, that keeps every device's latest status (`kgbox/+/status`) and
//! publishes the rollout's check and rollback requests. It reconnects on
//! its own (a broker restart loses nothing: devices republish their status
//! when they reconnect).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use kgbox_protocol::StatusMessage;
use rumqttc::v5::mqttbytes::v5::Packet;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::{Client, Event, MqttOptions};

const ALL_STATUS: &str = "kgbox/+/status";

type Seen = Arc<Mutex<HashMap<String, StatusMessage>>>;

pub struct Watch {
    client: Client,
    seen: Seen,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn lock(
    m: &Mutex<HashMap<String, StatusMessage>>,
) -> MutexGuard<'_, HashMap<String, StatusMessage>> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Watch {
    /// Connects; an error when the broker does not answer within 30 s.
    pub fn start(opts: MqttOptions, broker: &str) -> Result<Watch> {
        let (client, mut connection) = Client::new(opts, 64);
        let seen: Seen = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
        let thread = {
            let (client, seen, stop) = (client.clone(), seen.clone(), stop.clone());
            std::thread::Builder::new()
                .name("rollout-watch".into())
                .spawn(move || {
                    let mut ready = Some(ready_tx);
                    for ev in connection.iter() {
                        if stop.load(Ordering::Relaxed) {
                            return;
                        }
                        match ev {
                            Ok(Event::Incoming(Packet::ConnAck(_))) => {
                                // A clean start each time: subscribe again.
                                let _ = client.try_subscribe(ALL_STATUS, QoS::AtLeastOnce);
                                if let Some(tx) = ready.take() {
                                    let _ = tx.send(Ok(()));
                                }
                            }
                            Ok(Event::Incoming(Packet::Publish(p))) => {
                                if let Ok(m) = serde_json::from_slice::<StatusMessage>(&p.payload) {
                                    let mut seen = lock(&seen);
                                    // The last will carries no bundle: keep the last one known.
                                    let merged = match (seen.remove(&m.device_id), m) {
                                        (Some(old), m) if m.status.is_none() => StatusMessage {
                                            online: m.online,
                                            ..old
                                        },
                                        (_, m) => m,
                                    };
                                    seen.insert(merged.device_id.clone(), merged);
                                }
                            }
                            Ok(_) => {}
                            Err(e) => {
                                if let Some(tx) = ready.take() {
                                    let _ = tx.send(Err(e.to_string()));
                                    return;
                                }
                                std::thread::sleep(Duration::from_millis(500));
                            }
                        }
                    }
                })?
        };
        let mut w = Watch {
            client,
            seen,
            stop,
            thread: Some(thread),
        };
        match ready_rx.recv_timeout(Duration::from_secs(30)) {
            Ok(Ok(())) => Ok(w),
            Ok(Err(e)) => {
                w.close();
                bail!("cannot connect to the broker at {broker}: {e}")
            }
            Err(_) => {
                w.close();
                bail!("cannot connect to the broker at {broker}: no answer within 30 s")
            }
        }
    }

    /// A device's latest status.
    pub fn status(&self, id: &str) -> Option<StatusMessage> {
        lock(&self.seen).get(id).cloned()
    }

    /// Every device's latest status.
    pub fn all(&self) -> HashMap<String, StatusMessage> {
        lock(&self.seen).clone()
    }

    /// Publishes (QoS 1, not retained).
    pub fn publish(&self, topic: &str, payload: String) -> Result<()> {
        self.client
            .publish(topic, QoS::AtLeastOnce, false, payload.into_bytes())
            .map_err(|e| anyhow::anyhow!("the MQTT client stopped: {e}"))
    }

    /// Collects statuses: until `enough` says so, or none new came for
    /// `settle`, or `timeout` passed.
    pub fn discover(
        &self,
        timeout: Duration,
        settle: Duration,
        enough: impl Fn(&HashMap<String, StatusMessage>) -> bool,
    ) {
        let deadline = Instant::now() + timeout;
        let (mut count, mut last_new) = (0, Instant::now());
        while Instant::now() < deadline {
            let all = self.all();
            if enough(&all) {
                return;
            }
            if all.len() != count {
                count = all.len();
                last_new = Instant::now();
            } else if count > 0 && last_new.elapsed() >= settle {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn close(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.client.try_disconnect();
        // The thread ends at its next event; a broker that is gone must
        // not keep the rollout waiting for it.
        drop(self.thread.take());
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.close();
    }
}
