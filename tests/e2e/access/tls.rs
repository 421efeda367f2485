//! HTTPS (`[http.tls]`) with client certificates: the right certificate
//! gets answers; no certificate, one from another CA, an expired one, a
//! client that does not trust the server, and plain HTTP to the TLS port
//! are refused; SIGHUP swaps the server certificate without dropping an
//! open connection.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use ureq::tls::{Certificate, ClientCert, PrivateKey, RootCerts, TlsConfig};

use kgbox_testkit::*;

/// A certificate and its key, as PEM files.
struct Issued {
    cert: PathBuf,
    key: PathBuf,
}

struct Ca {
    cert: rcgen::Certificate,
    key: KeyPair,
    file: PathBuf,
}

fn ca(dir: &Path, name: &str) -> Ca {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, format!("kgbox test {name}"));
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    let file = dir.join(format!("{name}.pem"));
    std::fs::write(&file, cert.pem()).unwrap();
    Ca { cert, key, file }
}

fn issue(dir: &Path, name: &str, ca: &Ca, expired: bool) -> Issued {
    let mut params =
        CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    if expired {
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    }
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca.cert, &ca.key).unwrap();
    let issued = Issued {
        cert: dir.join(format!("{name}.crt")),
        key: dir.join(format!("{name}.key")),
    };
    std::fs::write(&issued.cert, cert.pem()).unwrap();
    std::fs::write(&issued.key, key.serialize_pem()).unwrap();
    issued
}

/// An HTTPS client trusting `roots`, presenting `client` when given.
fn agent(roots: &Path, client: Option<&Issued>) -> ureq::Agent {
    let root = Certificate::from_pem(&std::fs::read(roots).unwrap()).unwrap();
    let cert = client.map(|c| {
        ClientCert::new_with_certs(
            &[Certificate::from_pem(&std::fs::read(&c.cert).unwrap()).unwrap()],
            PrivateKey::from_pem(&std::fs::read(&c.key).unwrap()).unwrap(),
        )
    });
    let tls = TlsConfig::builder()
        .root_certs(RootCerts::new_with_certs(&[root]))
        .client_cert(cert)
        .build();
    ureq::Agent::config_builder()
        .tls_config(tls)
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(20)))
        .build()
        .new_agent()
}

fn get(agent: &ureq::Agent, url: &str) -> Result<(u16, String), String> {
    agent
        .get(url)
        .call()
        .map_err(|e| e.to_string())
        .map(|mut r| {
            (
                r.status().as_u16(),
                r.body_mut().read_to_string().unwrap_or_default(),
            )
        })
}

struct Serving(Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn https_with_client_certificates_refuses_strangers_and_reloads() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let (ca1, ca2, stranger_ca) = (ca(dir, "ca1"), ca(dir, "ca2"), ca(dir, "stranger"));
    let server_cert = issue(dir, "server", &ca1, false);
    let client = issue(dir, "client", &ca1, false);
    let expired = issue(dir, "expired", &ca1, true);
    let stranger = issue(dir, "stranger-client", &stranger_ca, false);
    let device = Device::new(
        &[],
        &format!(
            "[http.tls]\ncert_file = {:?}\nkey_file = {:?}\nclient_ca_file = {:?}",
            server_cert.cert.display().to_string(),
            server_cert.key.display().to_string(),
            ca1.file.display().to_string()
        ),
    );
    let port = free_port();
    let child = device
        .command(&["serve", "--listen", &format!("127.0.0.1:{port}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut serving = Serving(child);
    let base = format!("https://127.0.0.1:{port}");
    let good = agent(&ca1.file, Some(&client));
    let deadline = Instant::now() + Duration::from_secs(30);
    while get(&good, &format!("{base}/readyz")).map(|r| r.0) != Ok(200) {
        assert!(
            serving.0.try_wait().unwrap().is_none(),
            "kgbox serve exited"
        );
        assert!(Instant::now() < deadline, "not ready over HTTPS after 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }

    // The right certificate: answers.
    let (status, body) = good
        .post(&format!("{base}/v1/query"))
        .header("Content-Type", "application/json")
        .send(r#"{"query": "\"Blade Runner\" -> directed_by"}"#)
        .map(|mut r| (r.status().as_u16(), r.body_mut().read_to_string().unwrap()))
        .unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Ridley Scott"), "{body}");

    // Refused at the handshake: no client certificate, another CA's, an
    // expired one; a client that does not trust the server refuses it.
    for (what, refused) in [
        ("no client certificate", agent(&ca1.file, None)),
        (
            "another CA's certificate",
            agent(&ca1.file, Some(&stranger)),
        ),
        ("an expired certificate", agent(&ca1.file, Some(&expired))),
        (
            "a client trusting another CA",
            agent(&stranger_ca.file, Some(&client)),
        ),
    ] {
        let r = get(&refused, &format!("{base}/v1/models"));
        assert!(r.is_err(), "{what}: answered {r:?}");
    }

    // Plain HTTP to the TLS port: a plain 400 that says so.
    let (status, body) = status_and_text(
        client_any_status(Duration::from_secs(10))
            .get(&format!("http://127.0.0.1:{port}/v1/models"))
            .call()
            .unwrap(),
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("tls_required"), "{body}");

    // SIGHUP: a new certificate (from another CA) for new connections; the
    // open keep-alive connection goes on.
    let renewed = issue(dir, "server-renewed", &ca2, false);
    std::fs::copy(&renewed.cert, &server_cert.cert).unwrap();
    std::fs::copy(&renewed.key, &server_cert.key).unwrap();
    let trusts_ca2 = agent(&ca2.file, Some(&client));
    assert!(get(&trusts_ca2, &format!("{base}/readyz")).is_err());
    // SAFETY: kill(2) with the pid of a child this test owns and has not reaped.
    let rc = unsafe { libc::kill(serving.0.id() as i32, libc::SIGHUP) };
    assert_eq!(rc, 0);
    let deadline = Instant::now() + Duration::from_secs(20);
    while get(&trusts_ca2, &format!("{base}/readyz")).map(|r| r.0) != Ok(200) {
        assert!(
            serving.0.try_wait().unwrap().is_none(),
            "kgbox serve exited on SIGHUP"
        );
        assert!(
            Instant::now() < deadline,
            "the renewed certificate is not served"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The first client's pooled connection, made before the reload, still answers.
    assert_eq!(get(&good, &format!("{base}/readyz")).map(|r| r.0), Ok(200));
}

#[test]
fn a_bad_certificate_stops_the_start_with_an_error_naming_it() {
    let work = tempfile::tempdir().unwrap();
    let missing = work.path().join("missing.crt");
    let garbage = work.path().join("garbage.pem");
    std::fs::write(&garbage, "not a certificate").unwrap();
    for (cert, expect) in [(&missing, "missing.crt"), (&garbage, "garbage.pem")] {
        let device = Device::new(
            &[],
            &format!(
                "[http.tls]\ncert_file = {:?}\nkey_file = {:?}",
                cert.display().to_string(),
                garbage.display().to_string()
            ),
        );
        let o = run(device
            .command(&["serve", "--listen", &format!("127.0.0.1:{}", free_port())])
            .stdin(Stdio::null()));
        assert!(!o.status.success());
        assert!(stderr(&o).contains(expect), "{}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    }
}

/// `kgbox healthcheck` asks an HTTPS server over HTTPS (on loopback, where
/// the certificate's names do not matter).
#[test]
fn healthcheck_speaks_https_to_an_https_server() {
    let work = tempfile::tempdir().unwrap();
    let ca = ca(work.path(), "ca");
    let server_cert = issue(work.path(), "device.example", &ca, false);
    let port = free_port();
    let device = Device::new(
        &[],
        &format!(
            "[http]\nlisten = \"127.0.0.1:{port}\"\n[http.tls]\ncert_file = {:?}\nkey_file = {:?}",
            server_cert.cert.display().to_string(),
            server_cert.key.display().to_string(),
        ),
    );
    let o = device.kgbox(&["healthcheck"]);
    assert!(!o.status.success(), "ready before serving?");
    let child = device
        .command(&["serve"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _serving = Serving(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let o = device.kgbox(&["healthcheck"]);
        if o.status.success() {
            assert!(stdout(&o).contains("https://127.0.0.1"), "{}", stdout(&o));
            break;
        }
        assert!(Instant::now() < deadline, "{}", stderr(&o));
        std::thread::sleep(Duration::from_millis(100));
    }
}
