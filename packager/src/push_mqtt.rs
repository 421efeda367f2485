//! `kgbox-pack push` over MQTT 5: publish the manifest, learn what each
//! device is missing from its progress messages, send the union of those
//! chunks (QoS 1, a bounded number queued), and ask again (re-publish the
//! manifest) when the devices fall silent, until every device is done.

use std::collections::{BTreeMap, VecDeque};
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use kgbox_protocol::topics::progress_device;
use kgbox_protocol::{to_wire, Manifest, Progress, TransferState};
use rumqttc::v5::mqttbytes::v5::{Packet, PubAckReason, SubscribeReasonCode};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::{AsyncClient, Event, EventLoop, MqttOptions};
use tokio::sync::mpsc;

use super::target::Target;
use super::{describe, progress_bar, Bundle, PushArgs};

/// Requests queued in the client (chunks waiting beyond the broker's window).
const CHANNEL: usize = 16;
/// Re-publish the manifest when nothing was heard for this long...
const RESEND_BEGIN: Duration = Duration::from_secs(10);
/// ...or, when every chunk sent is acknowledged and a device still
/// receives, after this long: it reports what it still misses.
const IDLE: Duration = Duration::from_secs(2);
/// A group push waits this long for devices to answer (without --expect).
const DISCOVER: Duration = Duration::from_secs(3);

/// What happened: chunks sent, and each device's last progress message
/// (`None`: it never answered).
pub(crate) struct Report {
    pub sent: u64,
    /// Bytes of the chunks sent (each time it was sent).
    pub bytes: u64,
    pub devices: BTreeMap<String, Option<Progress>>,
}

enum Ev {
    Connected,
    SubAck(bool),
    PubAck(Option<String>),
    Progress(String, Box<Progress>),
    Lost(String),
    Fatal(String),
}

/// Polls the connection, forwarding what matters; reconnects after a loss.
async fn drive(mut el: EventLoop, client: AsyncClient, sub: String, tx: mpsc::UnboundedSender<Ev>) {
    let mut connected = false;
    loop {
        let ev = match el.poll().await {
            Ok(Event::Incoming(Packet::ConnAck(_))) => {
                if connected {
                    // A clean session: subscribe again (not from this task,
                    // whose polling drains the request channel).
                    let (c, s) = (client.clone(), sub.clone());
                    tokio::spawn(async move { c.subscribe(s, QoS::AtLeastOnce).await });
                }
                connected = true;
                Some(Ev::Connected)
            }
            Ok(Event::Incoming(Packet::SubAck(s))) => Some(Ev::SubAck(
                s.return_codes
                    .iter()
                    .all(|c| matches!(c, SubscribeReasonCode::Success(_))),
            )),
            Ok(Event::Incoming(Packet::PubAck(a))) => Some(Ev::PubAck(
                (!matches!(
                    a.reason,
                    PubAckReason::Success | PubAckReason::NoMatchingSubscribers
                ))
                .then(|| format!("{:?}", a.reason)),
            )),
            Ok(Event::Incoming(Packet::Publish(p))) => {
                let topic = String::from_utf8_lossy(&p.topic).to_string();
                let device = progress_device(&topic);
                match (device, serde_json::from_slice::<Progress>(&p.payload)) {
                    (Some(d), Ok(v)) => Some(Ev::Progress(d.to_string(), Box::new(v))),
                    _ => None,
                }
            }
            Ok(_) => None,
            Err(e) if !connected => {
                let _ = tx.send(Ev::Fatal(e.to_string()));
                return;
            }
            Err(e) => {
                let _ = tx.send(Ev::Lost(e.to_string()));
                tokio::time::sleep(Duration::from_secs(1)).await;
                None
            }
        };
        if let Some(ev) = ev {
            if tx.send(ev).is_err() {
                return;
            }
        }
    }
}

/// Runs the push on a small single-threaded runtime.
pub(crate) fn push(args: &PushArgs, target: &Target, bundle: &Bundle) -> Result<Report> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?
        .block_on(session(args, target, bundle))
}

pub(crate) fn options(args: &PushArgs, target: &Target) -> Result<MqttOptions> {
    let opts = broker_options(
        &target.addr,
        args.username.as_deref(),
        args.password_env.as_deref(),
        args.ca_file.as_deref(),
    )?;
    Ok(opts)
}

/// A client's options for the broker at `addr`: a random client id, a clean
/// start, credentials (the password from the variable named), and TLS with
/// the CA in `ca_file` for `mqtts://`.
pub fn broker_options(
    addr: &kgbox_protocol::BrokerUrl,
    username: Option<&str>,
    password_env: Option<&str>,
    ca_file: Option<&std::path::Path>,
) -> Result<MqttOptions> {
    let mut id = [0u8; 6];
    getrandom::fill(&mut id).map_err(|e| anyhow::anyhow!("no random numbers: {e}"))?;
    let mut opts = MqttOptions::new(
        format!("kgbox-pack-{}", hex::encode(id)),
        &addr.host,
        addr.port,
    );
    opts.set_keep_alive(Duration::from_secs(30))
        .set_clean_start(true)
        .set_max_packet_size(Some(1 << 20))
        .set_request_channel_capacity(CHANNEL);
    let mut net = opts.network_options();
    net.set_tcp_nodelay(true);
    opts.set_network_options(net);
    if let Some(user) = username {
        let password = match password_env {
            Some(var) => std::env::var(var)
                .with_context(|| format!("--password-env {var}: the variable is not set"))?,
            None => String::new(),
        };
        opts.set_credentials(user, password);
    }
    if addr.tls {
        let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
        let path = ca_file.unwrap_or(std::path::Path::new(""));
        let ca = std::fs::read(path)
            .with_context(|| format!("cannot read --ca-file {}", path.display()))?;
        opts.set_transport(rumqttc::Transport::tls_with_config(
            rumqttc::TlsConfiguration::Simple {
                ca,
                alpn: None,
                client_auth: None,
            },
        ));
    }
    Ok(opts)
}

/// Waits for an event that `pick` accepts (it sees all of them).
async fn wait_for<T>(
    rx: &mut mpsc::UnboundedReceiver<Ev>,
    until: Instant,
    mut pick: impl FnMut(Ev) -> Option<T>,
) -> Option<T> {
    loop {
        match tokio::time::timeout_at(until.into(), rx.recv()).await {
            Ok(Some(ev)) => {
                if let Some(t) = pick(ev) {
                    return Some(t);
                }
            }
            _ => return None,
        }
    }
}

async fn session(args: &PushArgs, target: &Target, bundle: &Bundle) -> Result<Report> {
    let (client, el) = AsyncClient::new(options(args, target)?, CHANNEL);
    let (tx, mut rx) = mpsc::unbounded_channel();
    tokio::spawn(drive(
        el,
        client.clone(),
        target.topics.progress.clone(),
        tx,
    ));
    let broker = &target.broker;
    let connected = wait_for(
        &mut rx,
        Instant::now() + Duration::from_secs(30),
        |ev| match ev {
            Ev::Connected => Some(Ok(())),
            Ev::Fatal(e) => Some(Err(e)),
            _ => None,
        },
    )
    .await;
    match connected {
        Some(Ok(())) => {}
        Some(Err(e)) => bail!("cannot connect to the broker at {broker}: {e}"),
        None => bail!("cannot connect to the broker at {broker}: no answer within 30 s"),
    }
    client
        .subscribe(target.topics.progress.clone(), QoS::AtLeastOnce)
        .await
        .context("the MQTT client stopped")?;
    let subscribed = wait_for(
        &mut rx,
        Instant::now() + Duration::from_secs(30),
        |ev| match ev {
            Ev::SubAck(ok) => Some(ok),
            _ => None,
        },
    )
    .await;
    if subscribed != Some(true) {
        bail!(
            "the broker at {broker} refused the subscription to {} (check its ACLs)",
            target.topics.progress
        );
    }
    let mut p = Pusher::new(args, target, bundle);
    let result = p.run(&client, &mut rx).await;
    p.bar.finish_and_clear();
    let _ = tokio::time::timeout(Duration::from_secs(2), client.disconnect()).await;
    result?;
    let mut devices: BTreeMap<String, Option<Progress>> =
        p.devices.into_iter().map(|(d, m)| (d, Some(m))).collect();
    if let Some(d) = &target.device {
        devices.entry(d.clone()).or_insert(None);
    }
    Ok(Report {
        sent: p.sent,
        bytes: p.bytes,
        devices,
    })
}

struct Pusher<'a> {
    args: &'a PushArgs,
    target: &'a Target,
    bundle: &'a Bundle,
    transfer: String,
    chunks: u64,
    begin: String,
    /// Chunks sent since the manifest was last re-published after an idle spell.
    sent_round: Vec<bool>,
    queued: Vec<bool>,
    queue: VecDeque<u64>,
    devices: BTreeMap<String, Progress>,
    /// QoS 1 publishes made and acknowledged.
    published: u64,
    acked: u64,
    sent: u64,
    bytes: u64,
    started: Instant,
    first_reply: Option<Instant>,
    last_heard: Instant,
    last_begin: Instant,
    bar: indicatif::ProgressBar,
}

impl<'a> Pusher<'a> {
    fn new(args: &'a PushArgs, target: &'a Target, bundle: &'a Bundle) -> Pusher<'a> {
        let chunks = bundle.size.div_ceil(args.chunk_bytes);
        let transfer = bundle.sha256[..16].to_string();
        let begin = to_wire(&Manifest {
            transfer: transfer.clone(),
            size: bundle.size,
            sha256: bundle.sha256.clone(),
            chunk_bytes: args.chunk_bytes,
            allow_downgrade: args.allow_downgrade,
        });
        let n = usize::try_from(chunks).unwrap_or(usize::MAX);
        let now = Instant::now();
        Pusher {
            args,
            target,
            bundle,
            transfer,
            chunks,
            begin,
            sent_round: vec![false; n],
            queued: vec![false; n],
            queue: VecDeque::new(),
            devices: BTreeMap::new(),
            published: 0,
            acked: 0,
            sent: 0,
            bytes: 0,
            started: now,
            first_reply: None,
            last_heard: now,
            last_begin: now,
            bar: progress_bar(bundle.size, args.quiet),
        }
    }

    fn say(&self, line: String) {
        if self.args.silent {
            return;
        }
        self.bar.suspend(|| eprintln!("{line}"));
    }

    fn handle(&mut self, ev: Ev) -> Result<()> {
        match ev {
            Ev::PubAck(refused) => {
                self.acked += 1;
                if let Some(why) = refused {
                    bail!(
                        "the broker at {} refused a publish under {} ({why}): check its ACLs",
                        self.target.broker,
                        self.target.topics.prefix
                    );
                }
            }
            Ev::Lost(e) => self.say(format!(
                "connection to {} lost ({e}); reconnecting",
                self.target.broker
            )),
            Ev::Progress(device, m) => self.progress(device, *m),
            // A reconnect: acknowledgements of what was in flight may never
            // come; what the devices lack is asked for again anyway.
            Ev::Connected => self.acked = self.published,
            Ev::SubAck(_) | Ev::Fatal(_) => {}
        }
        Ok(())
    }

    fn progress(&mut self, device: String, m: Progress) {
        if m.transfer != self.transfer || self.target.device.as_ref().is_some_and(|d| *d != device)
        {
            return;
        }
        let prev = self.devices.get(&device).map(|p| p.state);
        if prev.is_some_and(TransferState::is_terminal) && !m.state.is_terminal() {
            return;
        }
        if prev != Some(m.state) {
            self.say(format!("{device}: {}", describe(&m)));
        }
        self.last_heard = Instant::now();
        self.first_reply.get_or_insert(self.last_heard);
        if m.state == TransferState::Receiving {
            let last = self.chunks.saturating_sub(1);
            for &[a, b] in m.missing.iter().flatten() {
                for i in a..=b.min(last) {
                    let k = i as usize;
                    if !self.sent_round[k] && !self.queued[k] {
                        self.queued[k] = true;
                        self.queue.push_back(i);
                    }
                }
            }
        }
        self.devices.insert(device, m);
        let summary: Vec<String> = self
            .devices
            .iter()
            .map(|(d, m)| format!("{d}: {} {}/{}", m.state, m.received, m.total))
            .collect();
        self.bar.set_message(summary.join(", "));
    }

    fn finished(&self) -> bool {
        let done = !self.devices.is_empty() && self.devices.values().all(|m| m.state.is_terminal());
        let everyone = match (&self.target.device, self.args.expect) {
            (Some(d), _) => self.devices.contains_key(d),
            (None, Some(n)) => self.devices.len() >= n,
            (None, None) => self.first_reply.is_some_and(|t| t.elapsed() >= DISCOVER),
        };
        done && everyone
    }

    async fn publish(
        &mut self,
        topic: String,
        payload: Vec<u8>,
        client: &AsyncClient,
        until: Instant,
    ) -> Result<bool> {
        match tokio::time::timeout_at(
            until.into(),
            client.publish(topic, QoS::AtLeastOnce, false, payload),
        )
        .await
        {
            Err(_) => Ok(false),
            Ok(r) => {
                r.context("the MQTT client stopped")?;
                self.published += 1;
                Ok(true)
            }
        }
    }

    /// Publishes the transfer manifest (`begin`); `false` past `until`.
    async fn send_begin(&mut self, client: &AsyncClient, until: Instant) -> Result<bool> {
        let topic = self.target.topics.begin();
        let payload = self.begin.clone().into_bytes();
        self.publish(topic, payload, client, until).await
    }

    async fn run(
        &mut self,
        client: &AsyncClient,
        rx: &mut mpsc::UnboundedReceiver<Ev>,
    ) -> Result<()> {
        let deadline = self.started + self.args.timeout;
        if !self.send_begin(client, deadline).await? {
            return Ok(());
        }
        let chunk = usize::try_from(self.args.chunk_bytes).unwrap_or(usize::MAX);
        let mut buf = vec![0u8; chunk];
        loop {
            while let Ok(ev) = rx.try_recv() {
                self.handle(ev)?;
            }
            if self.finished() || Instant::now() >= deadline {
                return Ok(());
            }
            if let Some(i) = self.queue.pop_front() {
                let k = i as usize;
                self.queued[k] = false;
                if self.sent_round[k] {
                    continue;
                }
                let off = i * self.args.chunk_bytes;
                let len = (self.bundle.size - off).min(self.args.chunk_bytes) as usize;
                self.bundle
                    .file
                    .read_exact_at(&mut buf[..len], off)
                    .with_context(|| format!("cannot read {}", self.bundle.path.display()))?;
                let topic = self.target.topics.chunk(&self.transfer, i);
                if !self
                    .publish(topic, buf[..len].to_vec(), client, deadline)
                    .await?
                {
                    return Ok(());
                }
                self.sent_round[k] = true;
                self.sent += 1;
                self.bytes += len as u64;
                self.bar.inc(len as u64);
                if self.bar.position() > self.bar.length().unwrap_or(0) {
                    self.bar.set_length(self.bar.position());
                }
                continue;
            }
            let silent = self.last_heard.elapsed().min(self.last_begin.elapsed());
            let receiving = self
                .devices
                .values()
                .any(|m| m.state == TransferState::Receiving);
            let idle = receiving && self.acked >= self.published && silent >= IDLE;
            if idle || silent >= RESEND_BEGIN {
                // Nothing is queued: what a device still misses (chunks
                // lost in a reconnect, say) must go again.
                self.sent_round.fill(false);
                if !self.send_begin(client, deadline).await? {
                    return Ok(());
                }
                self.last_begin = Instant::now();
                continue;
            }
            match tokio::time::timeout(Duration::from_millis(200), rx.recv()).await {
                Ok(Some(ev)) => self.handle(ev)?,
                Ok(None) => bail!("the connection to {} ended", self.target.broker),
                Err(_) => {}
            }
        }
    }
}
