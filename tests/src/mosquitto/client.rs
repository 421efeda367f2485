//! MQTT test clients: MQTT 5 (response topic, correlation data) and 3.1.1,
//! each with its own runtime and blocking helpers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rumqttc::v5::mqttbytes::v5::{Packet, PublishProperties};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::{AsyncClient, Event, MqttOptions};

/// A message received by a test client.
#[derive(Debug, Clone)]
pub struct Msg {
    pub topic: String,
    pub payload: Vec<u8>,
    pub retain: bool,
    pub correlation: Option<Vec<u8>>,
    pub content_type: Option<String>,
    pub user_properties: Vec<(String, String)>,
}

impl Msg {
    /// The payload as JSON (panics when it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.payload).unwrap_or_else(|e| {
            panic!(
                "{}: payload is not JSON ({e}): {}",
                self.topic,
                String::from_utf8_lossy(&self.payload)
            )
        })
    }

    /// A user property's value.
    pub fn property(&self, name: &str) -> Option<&str> {
        self.user_properties
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

fn unique_id(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// An MQTT 5 test client with its own runtime; messages arrive on a channel.
pub struct Client {
    rt: tokio::runtime::Runtime,
    client: AsyncClient,
    rx: Receiver<Msg>,
    connacks: Arc<AtomicU64>,
    subacks: Arc<AtomicU64>,
}

impl Client {
    /// Connects to the broker on `port` and waits for the ConnAck.
    pub fn connect(port: u16) -> Client {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let mut o = MqttOptions::new(unique_id("test"), "127.0.0.1", port);
        o.set_keep_alive(Duration::from_secs(30))
            .set_max_packet_size(Some(16 << 20));
        let mut net = o.network_options();
        net.set_tcp_nodelay(true);
        o.set_network_options(net);
        let (client, mut eventloop) = AsyncClient::new(o, 1000);
        let (tx, rx): (Sender<Msg>, Receiver<Msg>) = std::sync::mpsc::channel();
        let connacks = Arc::new(AtomicU64::new(0));
        let subacks = Arc::new(AtomicU64::new(0));
        let (c, s) = (connacks.clone(), subacks.clone());
        rt.spawn(async move {
            loop {
                match eventloop.poll().await {
                    Ok(Event::Incoming(Packet::ConnAck(_))) => {
                        c.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(Event::Incoming(Packet::SubAck(_))) => {
                        s.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(Event::Incoming(Packet::Publish(p))) => {
                        let props = p.properties.unwrap_or_default();
                        let _ = tx.send(Msg {
                            topic: String::from_utf8_lossy(&p.topic).into_owned(),
                            payload: p.payload.to_vec(),
                            retain: p.retain,
                            correlation: props.correlation_data.map(|c| c.to_vec()),
                            content_type: props.content_type,
                            user_properties: props.user_properties,
                        });
                    }
                    Ok(_) => {}
                    Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
                }
            }
        });
        let me = Client {
            rt,
            client,
            rx,
            connacks,
            subacks,
        };
        wait_until(Duration::from_secs(20), "the test client's ConnAck", || {
            me.connacks.load(Ordering::SeqCst) > 0
        });
        me
    }

    /// Subscribes (QoS 1) and waits for the SubAck.
    pub fn subscribe(&self, filter: &str) {
        let before = self.subacks.load(Ordering::SeqCst);
        self.rt
            .block_on(self.client.subscribe(filter, QoS::AtLeastOnce))
            .unwrap();
        wait_until(Duration::from_secs(20), "a SubAck", || {
            self.subacks.load(Ordering::SeqCst) > before
        });
    }

    /// Publishes `payload` (QoS 1), with an optional response topic and
    /// correlation data.
    pub fn publish(
        &self,
        topic: &str,
        payload: &[u8],
        response_topic: Option<&str>,
        correlation: Option<&[u8]>,
    ) {
        self.publish_with(topic, payload, response_topic, correlation, false, None);
    }

    /// [`Client::publish`], retained or not, with an optional content type.
    pub fn publish_with(
        &self,
        topic: &str,
        payload: &[u8],
        response_topic: Option<&str>,
        correlation: Option<&[u8]>,
        retain: bool,
        content_type: Option<&str>,
    ) {
        let props = PublishProperties {
            response_topic: response_topic.map(str::to_string),
            correlation_data: correlation.map(|c| c.to_vec().into()),
            content_type: content_type.map(str::to_string),
            ..Default::default()
        };
        self.rt
            .block_on(self.client.publish_with_properties(
                topic,
                QoS::AtLeastOnce,
                retain,
                payload.to_vec(),
                props,
            ))
            .unwrap();
    }

    /// The next message, if one arrives within `timeout`.
    pub fn recv(&self, timeout: Duration) -> Option<Msg> {
        match self.rx.recv_timeout(timeout) {
            Ok(m) => Some(m),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => panic!("the test client's event loop ended"),
        }
    }

    /// Every message arriving within `window`.
    pub fn drain(&self, window: Duration) -> Vec<Msg> {
        let deadline = Instant::now() + window;
        let mut out = Vec::new();
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.recv(left) {
                Some(m) => out.push(m),
                None => break,
            }
        }
        out
    }

    /// The first message matching `pred` within `timeout` (others are dropped).
    pub fn recv_matching(&self, timeout: Duration, pred: impl Fn(&Msg) -> bool) -> Option<Msg> {
        let deadline = Instant::now() + timeout;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.recv(left) {
                Some(m) if pred(&m) => return Some(m),
                Some(_) => {}
                None => return None,
            }
        }
        None
    }

    /// A request/response round trip: publishes `payload` on `topic` with a
    /// fresh response topic and correlation data, and waits for the reply.
    pub fn request(&self, topic: &str, payload: &[u8], timeout: Duration) -> Msg {
        let reply_to = format!("test/replies/{}", unique_id("r"));
        let correlation = unique_id("c").into_bytes();
        self.subscribe(&reply_to);
        self.publish(topic, payload, Some(&reply_to), Some(&correlation));
        self.recv_matching(timeout, |m| {
            m.topic == reply_to && m.correlation.as_deref() == Some(&correlation[..])
        })
        .unwrap_or_else(|| panic!("no reply to a request on {topic} within {timeout:?}"))
    }
}

/// Waits until the retained status of `device_id` satisfies `pred`; returns
/// it. Subscribes with a fresh client: the retained message comes first, then
/// every update.
pub fn wait_status(
    port: u16,
    device_id: &str,
    timeout: Duration,
    pred: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let topic = format!("kgbox/{device_id}/status");
    let deadline = Instant::now() + timeout;
    let c = Client::connect(port);
    c.subscribe(&topic);
    let mut last = None;
    while let Some(m) = c.recv_matching(deadline.saturating_duration_since(Instant::now()), |m| {
        m.topic == topic
    }) {
        let v = m.json();
        if pred(&v) {
            return v;
        }
        last = Some(v);
    }
    panic!("the status of {device_id} did not match within {timeout:?}; last: {last:?}");
}

/// Polls `cond` every 20 ms until it holds; panics after `timeout`.
pub fn wait_until(timeout: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An MQTT 3.1.1 test client (rumqttc's v4 module).
pub struct Client311 {
    rt: tokio::runtime::Runtime,
    client: rumqttc::AsyncClient,
    rx: Receiver<(String, Vec<u8>)>,
    subacks: Arc<AtomicU64>,
}

impl Client311 {
    pub fn connect(port: u16) -> Client311 {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let mut o = rumqttc::MqttOptions::new(unique_id("test311"), "127.0.0.1", port);
        o.set_keep_alive(Duration::from_secs(30))
            .set_max_packet_size(16 << 20, 16 << 20);
        let (client, mut eventloop) = rumqttc::AsyncClient::new(o, 1000);
        let mut net = eventloop.network_options();
        net.set_tcp_nodelay(true);
        eventloop.set_network_options(net);
        let (tx, rx) = std::sync::mpsc::channel();
        let connacks = Arc::new(AtomicU64::new(0));
        let subacks = Arc::new(AtomicU64::new(0));
        let (c, s) = (connacks.clone(), subacks.clone());
        rt.spawn(async move {
            loop {
                match eventloop.poll().await {
                    Ok(rumqttc::Event::Incoming(rumqttc::Packet::ConnAck(_))) => {
                        c.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(rumqttc::Event::Incoming(rumqttc::Packet::SubAck(_))) => {
                        s.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(rumqttc::Event::Incoming(rumqttc::Packet::Publish(p))) => {
                        let _ = tx.send((p.topic, p.payload.to_vec()));
                    }
                    Ok(_) => {}
                    Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
                }
            }
        });
        wait_until(
            Duration::from_secs(20),
            "the 3.1.1 client's ConnAck",
            || connacks.load(Ordering::SeqCst) > 0,
        );
        Client311 {
            rt,
            client,
            rx,
            subacks,
        }
    }

    pub fn subscribe(&self, filter: &str) {
        let before = self.subacks.load(Ordering::SeqCst);
        self.rt
            .block_on(self.client.subscribe(filter, rumqttc::QoS::AtLeastOnce))
            .unwrap();
        wait_until(Duration::from_secs(20), "a SubAck", || {
            self.subacks.load(Ordering::SeqCst) > before
        });
    }

    pub fn publish(&self, topic: &str, payload: &[u8]) {
        self.rt
            .block_on(self.client.publish(
                topic,
                rumqttc::QoS::AtLeastOnce,
                false,
                payload.to_vec(),
            ))
            .unwrap();
    }

    /// The next message on `topic` within `timeout`: its payload.
    pub fn recv_on(&self, topic: &str, timeout: Duration) -> Option<Vec<u8>> {
        let deadline = Instant::now() + timeout;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.rx.recv_timeout(left) {
                Ok((t, p)) if t == topic => return Some(p),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
        None
    }
}
