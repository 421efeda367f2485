//! `kgbox serve` on an address other than loopback refuses to start with no
//! API key (unless `http.allow_anonymous = true`) or with no TLS (unless
//! `http.allow_plaintext = true`); on loopback it serves anonymous reads as
//! before.
#![allow(clippy::unwrap_used)]

use std::process::Stdio;
use std::time::{Duration, Instant};

use kgbox_testkit::*;

/// Runs `kgbox serve --listen ADDR` for at most `limit`: `Some(stderr)` when
/// it exited by itself, `None` when it was still serving.
fn serve_briefly(device: &Device, listen: &str, limit: Duration) -> Option<String> {
    let mut child = device
        .command(&["serve", "--listen", listen])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            assert!(!out.status.success());
            return Some(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
fn an_open_address_needs_keys_or_an_explicit_yes() {
    let listen = format!("0.0.0.0:{}", free_port());
    let device = Device::new(&[], "");
    let err = serve_briefly(&device, &listen, Duration::from_secs(20))
        .expect("serve on 0.0.0.0 without keys must refuse to start");
    assert!(err.contains("http.allow_anonymous"), "{err}");
    assert!(err.contains("kgbox keys add"), "{err}");

    // With a key but no TLS: refused too, naming the TLS settings.
    let o = device.kgbox(&["keys", "add", "--name", "a", "--scope", "read", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = serve_briefly(&device, &listen, Duration::from_secs(20))
        .expect("serve on 0.0.0.0 without TLS must refuse to start");
    assert!(
        err.contains("http.tls.cert_file") && err.contains("http.allow_plaintext"),
        "{err}"
    );

    // Keys, and TLS terminated by a proxy in front: it serves.
    let proxied = Device::new(&[], "[http]\nallow_plaintext = true");
    let o = proxied.kgbox(&["keys", "add", "--name", "a", "--scope", "read", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        serve_briefly(&proxied, &listen, Duration::from_secs(3)),
        None
    );

    // Told both, it serves without keys in plain HTTP.
    let open = Device::new(
        &[],
        "[http]\nallow_anonymous = true\nallow_plaintext = true",
    );
    assert_eq!(serve_briefly(&open, &listen, Duration::from_secs(3)), None);

    // Loopback: anonymous reads, as before.
    let local = Device::new(&[], "");
    let server = local.serve();
    let (status, body) = server.post(
        "/v1/query",
        "application/json",
        r#"{"query": "\"Blade Runner\" -> directed_by"}"#,
    );
    assert_eq!(status, 200, "{body}");
    // An OpenAI client's placeholder key is no claim to a kgbox key; a
    // kgbox key that is wrong is refused all the same.
    let r = server.send(
        "GET",
        "/v1/models",
        &[("Authorization", "Bearer sk-no-key")],
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let wrong = format!("Bearer kgb_{}_{}", "1".repeat(12), "2".repeat(64));
    let r = server.send(
        "GET",
        "/v1/models",
        &[("Authorization", wrong.as_str())],
        None,
    );
    assert_eq!(r.status, 401, "{}", r.body);
}
