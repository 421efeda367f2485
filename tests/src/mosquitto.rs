//! A real `mosquitto` broker on a free loopback port, and MQTT test clients
//! (MQTT 5 with response topic and correlation data, and 3.1.1) with
//! blocking helpers for the end-to-end tests.

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::free_port;

mod client;
pub use client::{wait_status, wait_until, Client, Client311, Msg};

/// The broker binary: `MOSQUITTO`, else `mosquitto` from the usual places.
pub fn mosquitto_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("MOSQUITTO").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    for p in ["/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto"] {
        if std::path::Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    PathBuf::from("mosquitto")
}

/// A running `mosquitto`, killed on drop.
pub struct Mosquitto {
    dir: TempDir,
    pub port: u16,
    child: Option<Child>,
    /// Lines added after the `listener` line (TLS settings).
    listener_extra: String,
}

impl Mosquitto {
    /// Starts a broker on a free port (anonymous access, no persistence).
    pub fn start() -> Mosquitto {
        Mosquitto::start_with("")
    }

    /// Starts a TLS-only broker with the certificates of [`TestPki`].
    pub fn start_tls(pki: &TestPki) -> Mosquitto {
        Mosquitto::start_with(&format!(
            "cafile {}\ncertfile {}\nkeyfile {}\n",
            pki.ca.display(),
            pki.server_cert.display(),
            pki.server_key.display()
        ))
    }

    /// Starts a broker that admits only `user` with `password` (a
    /// `password_file` made by `mosquitto_passwd`).
    pub fn start_with_password(user: &str, password: &str) -> Mosquitto {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("passwd");
        let out = Command::new("mosquitto_passwd")
            .arg("-b")
            .arg("-c")
            .arg(&file)
            .args([user, password])
            .output()
            .expect("mosquitto_passwd (package mosquitto) runs");
        assert!(out.status.success(), "mosquitto_passwd: {out:?}");
        let mut m = Mosquitto {
            dir,
            port: free_port(),
            child: None,
            listener_extra: format!("allow_anonymous false\npassword_file {}\n", file.display()),
        };
        m.spawn();
        m
    }

    fn start_with(listener_extra: &str) -> Mosquitto {
        let dir = tempfile::tempdir().unwrap();
        let mut m = Mosquitto {
            dir,
            port: free_port(),
            child: None,
            listener_extra: listener_extra.to_string(),
        };
        m.spawn();
        m
    }

    /// `mqtt://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("mqtt://127.0.0.1:{}", self.port)
    }

    /// Starts the broker and waits until it accepts connections; retries
    /// while the port is still held by a previous instance.
    fn spawn(&mut self) {
        let conf = self.dir.path().join("mosquitto.conf");
        let log = self.dir.path().join("mosquitto.log");
        std::fs::write(
            &conf,
            format!(
                "listener {} 127.0.0.1\n{}{}persistence false\nset_tcp_nodelay true\nlog_dest stderr\n",
                self.port,
                self.listener_extra,
                if self.listener_extra.contains("allow_anonymous") {
                    ""
                } else {
                    "allow_anonymous true\n"
                }
            ),
        )
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let log_file = std::fs::File::create(&log).unwrap();
            let mut child = Command::new(mosquitto_bin())
                .arg("-c")
                .arg(&conf)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log_file)
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {}: {e}", mosquitto_bin().display()));
            loop {
                if let Ok(Some(status)) = child.try_wait() {
                    assert!(
                        Instant::now() < deadline,
                        "mosquitto exited with {status}: {}",
                        self.log()
                    );
                    break;
                }
                if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                    // It listens before it loads certificates: make sure it stays up.
                    std::thread::sleep(Duration::from_millis(200));
                    if let Ok(Some(status)) = child.try_wait() {
                        panic!("mosquitto exited with {status}: {}", self.log());
                    }
                    self.child = Some(child);
                    return;
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "mosquitto is not accepting connections on port {} after 30 s: {}",
                        self.port,
                        self.log()
                    );
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            // The port is probably still held: try again shortly.
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The broker's log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("mosquitto.log")).unwrap_or_default()
    }

    /// Kills the broker (SIGKILL) and waits until the port is closed.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the broker again on the same port (stopping it first if needed).
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }
}

/// A throwaway CA and a server certificate for 127.0.0.1, made with the
/// `openssl` command.
pub struct TestPki {
    _dir: TempDir,
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
}

impl TestPki {
    pub fn new() -> TestPki {
        let dir = tempfile::tempdir().unwrap();
        let p = |name: &str| dir.path().join(name);
        std::fs::write(
            p("ext.cnf"),
            "subjectAltName = IP:127.0.0.1, DNS:localhost\n\
             basicConstraints = CA:FALSE\n",
        )
        .unwrap();
        let steps: [&[&str]; 3] = [
            &[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "2",
                "-subj",
                "/CN=kgbox test CA",
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
            ],
            &[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-subj",
                "/CN=127.0.0.1",
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
            ],
            &[
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "2",
                "-extfile",
                "ext.cnf",
                "-out",
                "server.pem",
            ],
        ];
        for args in steps {
            let o = Command::new("openssl")
                .args(args)
                .current_dir(dir.path())
                .stdin(Stdio::null())
                .output()
                .expect("the openssl command is needed for the TLS test");
            assert!(
                o.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        // mosquitto started as root reads them as the `mosquitto` user.
        use std::os::unix::fs::PermissionsExt;
        let readable = |path: &std::path::Path, mode: u32| {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        readable(dir.path(), 0o755);
        for f in ["ca.pem", "server.pem", "server.key"] {
            readable(&p(f), 0o644);
        }
        TestPki {
            ca: p("ca.pem"),
            server_cert: p("server.pem"),
            server_key: p("server.key"),
            _dir: dir,
        }
    }
}

impl Default for TestPki {
    fn default() -> Self {
        TestPki::new()
    }
}

impl Drop for Mosquitto {
    fn drop(&mut self) {
        self.stop();
    }
}
