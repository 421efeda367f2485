//! `kgbox-mqtt-bench`: MQTT request/response through a local mosquitto,
//! compared with the same questions over loopback HTTP and with the answer
//! time inside kgbox; then bundle push and hot-swap times.
//!
//! ```text
//! cargo build --release -p kgbox -p kgbox-pack -p kgbox-benches
//! target/release/kgbox-mqtt-bench [--requests 2000] [--concurrency 16] \
//!     [--push BUNDLE.kgb --trust KEY.pub [--compatible STR]] [--json]
//! ```
//!
//! It starts `mosquitto` (from the system) on a free loopback port and
//! `kgbox serve` (next to this binary) with MQTT on and an empty data dir,
//! so the built-in demo bundle answers. The questions are those of
//! `demo/planner-examples.tsv`, sent as `/v1/ask` requests: one at a time
//! over HTTP (keep-alive) and over MQTT 5 (response topic + correlation
//! data, QoS 1), then `--concurrency` MQTT requests in flight for
//! throughput. "in kgbox" is the ask's own `timings_ms.total`.
//!
//! With `--push`, it then pushes that bundle with `kgbox-pack push` over
//! MQTT and times it, pushes it again over HTTP (`PUT /v1/bundles`), and
//! reports each deployment's install, health-check and swap times.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Parser;
use kgbox_benches::keepalive::{self, Client};
use kgbox_benches::quantile::percentile;
use kgbox_benches::{http, proc};
use rumqttc::v5::mqttbytes::v5::{Packet, PublishProperties};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::{AsyncClient, Event, MqttOptions};
use serde_json::{json, Value};
use tokio::sync::oneshot;

const ADMIN_TOKEN: &str = "mqtt-bench-admin-token-000000";

#[derive(Parser)]
#[command(
    name = "kgbox-mqtt-bench",
    about = "MQTT ask round trip, throughput, bundle push and swap times"
)]
struct Args {
    /// Sequential requests per transport.
    #[arg(long, default_value_t = 2000)]
    requests: usize,
    /// MQTT requests in flight for the throughput run.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// A bundle to push (then to push again over HTTP).
    #[arg(long, requires = "trust")]
    push: Option<PathBuf>,
    /// The public key that signed `--push`.
    #[arg(long)]
    trust: Option<PathBuf>,
    /// The device's `compatible` string (the bundle's).
    #[arg(long, default_value = "kgbox-generic")]
    compatible: String,
    /// The kgbox binary (default: next to this one).
    #[arg(long)]
    kgbox: Option<PathBuf>,
    /// Print only the JSON line.
    #[arg(long)]
    json: bool,
}

/// `n`, p50 and p99 (nearest rank, [`percentile`]; NaN, so JSON null, for none).
fn summary(mut xs: Vec<f64>) -> Value {
    xs.sort_by(f64::total_cmp);
    let pct = |p: f64| percentile(&xs, p).unwrap_or(f64::NAN);
    json!({"n": xs.len(), "p50": pct(50.0), "p99": pct(99.0)})
}

/// Starts mosquitto on `port` with a throwaway config.
fn start_broker(dir: &Path, port: u16) -> Result<proc::Server> {
    let conf = dir.join("mosquitto.conf");
    std::fs::write(
        &conf,
        format!("listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\nset_tcp_nodelay true\n"),
    )?;
    let bin = ["/usr/sbin/mosquitto", "/usr/bin/mosquitto"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("mosquitto"));
    let server = proc::Server::spawn(
        Command::new(bin).arg("-c").arg(&conf),
        &dir.join("mosquitto.log"),
    )
    .context("cannot start mosquitto (scripts/setup.sh --dev installs it)")?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            bail!("mosquitto did not listen on {port}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(server)
}

fn questions() -> Result<Vec<String>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../demo/planner-examples.tsv");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split('\t').next())
        .map(str::to_string)
        .collect())
}

/// Requests waiting for a reply, by correlation data.
type Waiting = Arc<Mutex<HashMap<Vec<u8>, oneshot::Sender<Vec<u8>>>>>;

/// An MQTT 5 requester: correlation data → the waiting request.
struct Requester {
    client: AsyncClient,
    waiting: Waiting,
    reply_topic: String,
}

impl Requester {
    async fn connect(port: u16) -> Result<Requester> {
        let mut opts = MqttOptions::new("kgbox-mqtt-bench", "127.0.0.1", port);
        opts.set_keep_alive(Duration::from_secs(30));
        opts.set_max_packet_size(Some(16 << 20));
        let mut net = opts.network_options();
        net.set_tcp_nodelay(true);
        opts.set_network_options(net);
        let (client, mut eventloop) = AsyncClient::new(opts, 1024);
        let waiting: Waiting = Arc::default();
        let reply_topic = "bench/replies".to_string();
        client
            .subscribe(reply_topic.clone(), QoS::AtLeastOnce)
            .await?;
        let w = waiting.clone();
        let (subscribed_tx, subscribed_rx) = oneshot::channel();
        let mut subscribed_tx = Some(subscribed_tx);
        tokio::spawn(async move {
            loop {
                match eventloop.poll().await {
                    Ok(Event::Incoming(Packet::SubAck(_))) => {
                        if let Some(tx) = subscribed_tx.take() {
                            let _ = tx.send(());
                        }
                    }
                    Ok(Event::Incoming(Packet::Publish(p))) => {
                        let key = p.properties.and_then(|pr| pr.correlation_data);
                        if let Some(key) = key {
                            let tx = w.lock().ok().and_then(|mut m| m.remove(key.as_ref()));
                            if let Some(tx) = tx {
                                let _ = tx.send(p.payload.to_vec());
                            }
                        }
                    }
                    Ok(_) => {}
                    Err(e) => {
                        eprintln!("kgbox-mqtt-bench: mqtt: {e}");
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                }
            }
        });
        tokio::time::timeout(Duration::from_secs(10), subscribed_rx)
            .await
            .context("no SUBACK from the broker")??;
        Ok(Requester {
            client,
            waiting,
            reply_topic,
        })
    }

    /// Publishes one request and waits for its reply: (round trip ms, body).
    async fn ask(&self, topic: &str, id: u64, body: Vec<u8>) -> Result<(f64, Vec<u8>)> {
        let key = id.to_be_bytes().to_vec();
        let (tx, rx) = oneshot::channel();
        self.waiting
            .lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))?
            .insert(key.clone(), tx);
        let props = PublishProperties {
            response_topic: Some(self.reply_topic.clone()),
            correlation_data: Some(key.into()),
            ..Default::default()
        };
        let t = Instant::now();
        self.client
            .publish_with_properties(topic, QoS::AtLeastOnce, false, body, props)
            .await?;
        let reply = tokio::time::timeout(Duration::from_secs(30), rx)
            .await
            .context("no reply within 30 s")??;
        Ok((t.elapsed().as_secs_f64() * 1e3, reply))
    }
}

fn total_ms(reply: &[u8]) -> Result<f64> {
    let v: Value = serde_json::from_slice(reply)?;
    v["timings_ms"]["total"]
        .as_f64()
        .with_context(|| format!("not an answer: {v}"))
}

fn run(args: Args) -> Result<Value> {
    let kgbox = proc::find_kgbox(args.kgbox.clone(), "kgbox-mqtt-bench")?;
    let pack = kgbox.with_file_name("kgbox-pack");
    let dir = tempfile::tempdir()?;
    let broker_port = http::free_port()?;
    let _broker = start_broker(dir.path(), broker_port)?;
    let http_port = http::free_port()?;
    let config = dir.path().join("kgbox.toml");
    let trust = match &args.trust {
        Some(p) => format!("[trust]\nkeys = [{:?}]\n", p.display().to_string()),
        None => String::new(),
    };
    std::fs::write(
        &config,
        format!(
            "data_dir = {:?}\ncompatible = {:?}\n[log]\nlevel = \"warn\"\n[mqtt]\nenabled = true\nbroker = \"mqtt://127.0.0.1:{broker_port}\"\ndevice_id = \"bench\"\n{trust}",
            dir.path().join("data").display().to_string(),
            args.compatible
        ),
    )?;
    let mut server = proc::Server::spawn(
        Command::new(&kgbox)
            .arg("--config")
            .arg(&config)
            .args(["serve", "--listen", &format!("127.0.0.1:{http_port}")])
            .env("KGBOX_ADMIN_TOKEN", ADMIN_TOKEN),
        &dir.path().join("kgbox.log"),
    )?;
    let addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), http_port);
    http::wait_ready(addr, &mut server, Duration::from_secs(60))?;
    let questions = questions()?;
    let bodies: Vec<Vec<u8>> = questions
        .iter()
        .map(|q| serde_json::to_vec(&json!({"question": q, "paths": false})))
        .collect::<Result<_, _>>()?;
    let n = args.requests;

    // HTTP, one at a time, keep-alive.
    let mut client = Client::new(addr, Duration::from_secs(30));
    let host = format!("127.0.0.1:{http_port}");
    let (mut http_rt, mut inside) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let req = keepalive::post_json(&host, "/v1/ask", &bodies[i % bodies.len()]);
        let t = Instant::now();
        let resp = client.exchange(&req)?;
        http_rt.push(t.elapsed().as_secs_f64() * 1e3);
        if resp.status == 200 {
            inside.push(total_ms(client.body())?);
        }
    }

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let (mqtt_rt, mqtt_inside, throughput) = rt.block_on(async {
        let requester = Arc::new(Requester::connect(broker_port).await?);
        // The device subscribes after it connects: wait for its first answer.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let r = tokio::time::timeout(
                Duration::from_secs(2),
                requester.ask("kgbox/bench/ask", u64::MAX, bodies[0].clone()),
            )
            .await;
            if matches!(r, Ok(Ok(_))) {
                break;
            }
            if Instant::now() > deadline {
                bail!("the device never answered over MQTT");
            }
        }
        let (mut rts, mut ins) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for i in 0..n {
            let (ms, reply) = requester
                .ask(
                    "kgbox/bench/ask",
                    i as u64,
                    bodies[i % bodies.len()].clone(),
                )
                .await?;
            rts.push(ms);
            ins.push(total_ms(&reply)?);
        }
        // Throughput: `concurrency` requests in flight.
        let total = n * 2;
        let t = Instant::now();
        let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..args.concurrency.max(1) {
            let (r, next, bodies) = (requester.clone(), next.clone(), bodies.clone());
            tasks.push(tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
                    if i >= total {
                        return Ok::<(), anyhow::Error>(());
                    }
                    r.ask(
                        "kgbox/bench/ask",
                        (n + i) as u64,
                        bodies[i % bodies.len()].clone(),
                    )
                    .await?;
                }
            }));
        }
        for t in tasks {
            t.await??;
        }
        let per_s = total as f64 / t.elapsed().as_secs_f64();
        Ok::<_, anyhow::Error>((rts, ins, per_s))
    })?;

    let mut out = json!({
        "requests": n,
        "concurrency": args.concurrency,
        "in_kgbox_ms": summary(inside),
        "http_ms": summary(http_rt),
        "mqtt_ms": summary(mqtt_rt),
        "mqtt_in_kgbox_ms": summary(mqtt_inside),
        "mqtt_throughput_per_s": throughput,
    });
    out["mqtt_overhead_p50_ms"] = json!(
        out["mqtt_ms"]["p50"].as_f64().unwrap_or(f64::NAN)
            - out["mqtt_in_kgbox_ms"]["p50"].as_f64().unwrap_or(f64::NAN)
    );

    if let Some(bundle) = &args.push {
        let size = std::fs::metadata(bundle)
            .with_context(|| format!("cannot read {}", bundle.display()))?
            .len();
        let t = Instant::now();
        let (o, _) = proc::run_timed(
            Command::new(&pack).arg("push").arg(bundle).args([
                "--broker",
                &format!("mqtt://127.0.0.1:{broker_port}"),
                "--device",
                "bench",
            ]),
            Duration::from_secs(1800),
        )?;
        let mqtt_push_s = t.elapsed().as_secs_f64();
        if !o.status.success() {
            bail!(
                "kgbox-pack push failed: {}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
        }
        let (_, status) = http::get(addr, "/v1/status", Duration::from_secs(10))?;
        let status: Value = serde_json::from_slice(&status)?;
        let mqtt_deploy = status["last_deploy"]["timings_ms"].clone();
        // Again over HTTP (the same version is not a downgrade).
        let body = std::fs::read(bundle)?;
        let t = Instant::now();
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(1800)))
            .build()
            .new_agent();
        let report: Value = agent
            .put(&format!("http://{host}/v1/bundles"))
            .header("Authorization", format!("Bearer {ADMIN_TOKEN}"))
            .send(&body[..])
            .context("PUT /v1/bundles")?
            .body_mut()
            .read_json()?;
        let http_push_s = t.elapsed().as_secs_f64();
        out["push"] = json!({
            "bundle_bytes": size,
            "mqtt_s": mqtt_push_s,
            "mqtt_deploy_ms": mqtt_deploy,
            "http_s": http_push_s,
            "http_deploy_ms": report["timings_ms"],
        });
    }
    server.stop()?;
    Ok(out)
}

fn print_readable(v: &Value) {
    let row = |name: &str, s: &Value| {
        println!(
            "{name:<28} p50 {:>8.3} ms   p99 {:>8.3} ms   (n = {})",
            s["p50"].as_f64().unwrap_or(f64::NAN),
            s["p99"].as_f64().unwrap_or(f64::NAN),
            s["n"]
        );
    };
    row("ask, time inside kgbox", &v["in_kgbox_ms"]);
    row("ask over HTTP (loopback)", &v["http_ms"]);
    row("ask over MQTT (mosquitto)", &v["mqtt_ms"]);
    println!(
        "MQTT adds {:.3} ms at p50 over the answer inside kgbox; throughput {:.0} asks/s with {} in flight",
        v["mqtt_overhead_p50_ms"].as_f64().unwrap_or(f64::NAN),
        v["mqtt_throughput_per_s"].as_f64().unwrap_or(f64::NAN),
        v["concurrency"]
    );
    if let Some(p) = v.get("push") {
        println!(
            "push of a {} byte bundle, wall clock: MQTT {:.0} ms (kgbox-pack push), HTTP {:.0} ms (PUT)",
            p["bundle_bytes"],
            p["mqtt_s"].as_f64().unwrap_or(f64::NAN) * 1e3,
            p["http_s"].as_f64().unwrap_or(f64::NAN) * 1e3,
        );
        for (how, d) in [
            ("MQTT", &p["mqtt_deploy_ms"]),
            ("HTTP", &p["http_deploy_ms"]),
        ] {
            let f = |k: &str| d[k].as_f64().unwrap_or(f64::NAN);
            println!(
                "  {how} deploy on the device: install {:.1} ms, load {:.2} ms, probes {:.2} ms, swap {:.3} ms, total {:.1} ms",
                f("install"),
                f("load"),
                f("probes"),
                f("swap"),
                f("total")
            );
        }
    }
}

fn main() -> ExitCode {
    proc::catch_interrupts();
    let args = Args::parse();
    let json_only = args.json;
    match run(args) {
        Ok(v) => {
            if !json_only {
                print_readable(&v);
            }
            println!("{v}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("kgbox-mqtt-bench: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
