//! Graph stores for the `sparql_store` executor's tests: a real Oxigraph
//! server (the PyPI package `oxigraph`, pinned in scripts/setup.sh --dev) loaded
//! with a bundle's export, and [`FakeStore`], a socket that misbehaves on
//! demand (hangs, error statuses, garbage results).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::{free_port, run, stderr};

/// The Oxigraph CLI, checked: a missing one fails the test with a pointer
/// to scripts/setup.sh --dev (these tests never skip).
pub fn oxigraph_bin() -> &'static str {
    match Command::new("oxigraph").arg("--version").output() {
        Ok(o) if o.status.success() => "oxigraph",
        _ => panic!(
            "the `oxigraph` server is not on PATH: run scripts/setup.sh --dev (it installs the pinned PyPI package oxigraph)"
        ),
    }
}

/// A running `oxigraph serve` on a free loopback port, killed on drop.
pub struct Oxigraph {
    child: Child,
    pub port: u16,
    _dir: TempDir,
}

impl Oxigraph {
    /// Loads `files` (N-Triples, by extension; `graph`: into that named
    /// graph) into a new store and serves it.
    pub fn start(files: &[&Path], graph: Option<&str>) -> Oxigraph {
        let bin = oxigraph_bin();
        let dir = tempfile::tempdir().expect("a store directory");
        let db = dir.path().join("db");
        for f in files {
            let mut load = Command::new(bin);
            load.arg("load")
                .arg("--location")
                .arg(&db)
                .arg("--file")
                .arg(f);
            if let Some(g) = graph {
                load.args(["--graph", g]);
            }
            let o = run(&mut load);
            assert!(o.status.success(), "oxigraph load: {}", stderr(&o));
        }
        let port = free_port();
        let child = Command::new(bin)
            .arg("serve-read-only")
            .arg("--location")
            .arg(&db)
            .arg("--bind")
            .arg(format!("127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn oxigraph serve");
        let mut server = Oxigraph {
            child,
            port,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("oxigraph serve exited with {status}");
            }
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return server;
            }
            assert!(Instant::now() < deadline, "oxigraph not up after 30 s");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The SPARQL query endpoint.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/query", self.port)
    }
}

impl Drop for Oxigraph {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How [`FakeStore`] answers.
#[derive(Debug, Clone)]
pub enum Behaviour {
    /// Reads the request and never answers.
    Hang,
    /// Answers with this status, `Content-Type` and body.
    Reply(u16, &'static str, String),
}

/// One request the fake store received.
#[derive(Debug, Clone)]
pub struct StoreCall {
    /// The request line's target (path and query string).
    pub target: String,
    /// Header names lowercased, with their values.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

struct Shared {
    behaviour: Mutex<Behaviour>,
    calls: Mutex<Vec<StoreCall>>,
    stop: AtomicBool,
}

/// A fake SPARQL endpoint on a free loopback port, stopped on drop.
pub struct FakeStore {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl FakeStore {
    pub fn start(behaviour: Behaviour) -> FakeStore {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake store");
        listener.set_nonblocking(true).expect("non-blocking accept");
        let addr = listener.local_addr().expect("its address");
        let shared = Arc::new(Shared {
            behaviour: Mutex::new(behaviour),
            calls: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        let acceptor = std::thread::spawn(move || {
            while !s.stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let s = s.clone();
                        std::thread::spawn(move || serve(stream, &s));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        FakeStore {
            addr,
            shared,
            acceptor: Some(acceptor),
        }
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}/sparql", self.addr)
    }

    pub fn set(&self, behaviour: Behaviour) {
        *self
            .shared
            .behaviour
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = behaviour;
    }

    pub fn calls(&self) -> Vec<StoreCall> {
        self.shared
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for FakeStore {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
    }
}

/// Reads one request and answers it as the current behaviour says.
fn serve(stream: TcpStream, s: &Shared) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(r) => r,
        Err(_) => return,
    });
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let target = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_string());
            if k == "content-length" {
                length = v.parse().unwrap_or(0);
            }
            headers.push((k, v));
        }
    }
    let mut body = vec![0u8; length.min(1 << 20)];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    s.calls
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(StoreCall {
            target,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        });
    let behaviour = s
        .behaviour
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let mut stream = stream;
    match behaviour {
        Behaviour::Hang => {
            // Holds the connection until the client gives up or the store stops.
            let deadline = Instant::now() + Duration::from_secs(60);
            while !s.stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Behaviour::Reply(status, content_type, body) => {
            let _ = write!(
                stream,
                "HTTP/1.1 {status} Fake\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.flush();
        }
    }
}
