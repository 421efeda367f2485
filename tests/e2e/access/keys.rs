//! A hostile-client suite against a device that needs keys
//! (`http.allow_anonymous = false`): no key, a malformed, wrong, revoked or
//! other bundle's key, keys in the URL and in odd headers, floods past a
//! key's rate. Each is refused with its documented status and code, nothing
//! of the graph is in a refusal, and the access log names keys by id only.
#![allow(clippy::unwrap_used)]

use serde_json::Value;

use kgbox_testkit::*;

const QUERY: &str = r#"{"query": "\"Blade Runner\" -> directed_by"}"#;
const READ_ROUTES: &[(&str, &str, Option<&str>)] = &[
    ("POST", "/v1/query", Some(QUERY)),
    (
        "POST",
        "/v1/ask",
        Some(r#"{"question": "who directed [Blade Runner]"}"#),
    ),
    ("GET", "/sparql?query=ASK%20%7B%7D", None),
    (
        "POST",
        "/v1/chat/completions",
        Some(
            r#"{"model": "demo-movies", "messages": [{"role": "user", "content": "who directed [Blade Runner]"}]}"#,
        ),
    ),
    ("GET", "/v1/entities/Blade%20Runner", None),
    ("GET", "/v1/models", None),
    ("GET", "/v1/status", None),
    ("GET", "/v1/bundle", None),
    ("GET", "/metrics", None),
    ("POST", "/v1/link", Some(r#"{"text": "Blade Runner"}"#)),
];

/// `kgbox keys add` on the device: the key's text and id.
fn add_key(device: &Device, name: &str, scopes: &[&str], rate: Option<&str>) -> (String, String) {
    let mut args = vec!["keys", "add", "--name", name, "--quiet"];
    for s in scopes {
        args.extend(["--scope", s]);
    }
    if let Some(r) = rate {
        args.extend(["--rate", r]);
    }
    let o = device.kgbox(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let key = stdout(&o).trim().to_string();
    let id = key.split('_').nth(1).unwrap().to_string();
    (key, id)
}

fn code(reply: &Reply) -> String {
    let v: Value = serde_json::from_str(&reply.body).unwrap_or(Value::Null);
    v["error"]["code"].as_str().unwrap_or("").to_string()
}

fn bearer(key: &str) -> String {
    format!("Bearer {key}")
}

#[test]
fn keys_are_required_scoped_revocable_and_rate_limited() {
    let device = Device::new(&[], "[http]\nallow_anonymous = false");
    let (reader, reader_id) = add_key(&device, "reader", &["read"], None);
    let (other, _) = add_key(&device, "other-department", &["read:other-graph"], None);
    let (own, _) = add_key(&device, "own-department", &["read:demo-movies"], None);
    let (admin, _) = add_key(&device, "operator", &["admin"], None);
    let (limited, limited_id) = add_key(&device, "dashboard", &["read"], Some("3/min"));
    let (gone, _) = add_key(&device, "former", &["read"], None);
    assert!(device.kgbox(&["keys", "revoke", "former"]).status.success());
    let server = device.serve();
    let send = |method: &str, path: &str, headers: &[(&str, &str)], body: Option<&str>| {
        server.send(method, path, headers, body)
    };

    // Open to anyone: health, readiness, the description, the console page.
    for path in [
        "/healthz",
        "/readyz",
        "/v2/health/live",
        "/openapi.json",
        "/",
    ] {
        assert_eq!(send("GET", path, &[], None).status, 200, "{path}");
    }
    let wrong_secret = format!("{}_{}", reader.rsplit_once('_').unwrap().0, "0".repeat(64));
    let unknown = format!("kgb_{}_{}", "a".repeat(12), "b".repeat(64));
    for (method, path, body) in READ_ROUTES {
        // No key.
        let r = send(method, path, &[], *body);
        assert_eq!(
            (r.status, code(&r).as_str()),
            (401, "missing_key"),
            "{path}: {}",
            r.body
        );
        assert_eq!(
            r.header("www-authenticate"),
            Some("Bearer realm=\"kgbox\""),
            "{path}"
        );
        // Keys that are not keys, or not this device's, or revoked.
        for bad in [
            wrong_secret.as_str(),
            unknown.as_str(),
            "kgb_short",
            gone.as_str(),
            "",
        ] {
            let auth = bearer(bad);
            let r = send(method, path, &[("Authorization", auth.as_str())], *body);
            assert_eq!(
                (r.status, code(&r).as_str()),
                (401, "invalid_key"),
                "{path} {bad}: {}",
                r.body
            );
            assert!(!r.body.contains("Ridley"), "{}", r.body);
        }
        // A key in an odd header or scheme.
        for (name, value) in [
            ("X-API-Key", reader.clone()),
            ("Api-Key", reader.clone()),
            ("Authorization", format!("Basic {reader}")),
            ("Authorization", reader.clone()),
        ] {
            let r = send(method, path, &[(name, value.as_str())], *body);
            assert_eq!(
                (r.status, code(&r).as_str()),
                (401, "invalid_key"),
                "{path} {name}"
            );
        }
        // Another bundle's key.
        let auth = bearer(&other);
        let r = send(method, path, &[("Authorization", auth.as_str())], *body);
        if *path == "/v1/models" {
            // The models it may read: none here.
            assert_eq!(r.status, 200, "{}", r.body);
            assert!(r.body.contains(r#""data":[]"#), "{}", r.body);
        } else {
            assert_eq!(
                (r.status, code(&r).as_str()),
                (403, "forbidden"),
                "{path}: {}",
                r.body
            );
        }
        assert!(
            !r.body.contains("Ridley") && !r.body.contains("demo"),
            "{}",
            r.body
        );
        // The right keys: every scope that reads this bundle, any case of the
        // scheme. The metrics are the whole device's: not for a key of one bundle.
        let mut goods = vec![bearer(&reader), bearer(&admin), format!("bearer {reader}")];
        if *path == "/metrics" {
            let auth = bearer(&own);
            let r = send(method, path, &[("Authorization", auth.as_str())], *body);
            assert_eq!(
                (r.status, code(&r).as_str()),
                (403, "forbidden"),
                "{}",
                r.body
            );
        } else {
            goods.push(bearer(&own));
        }
        for good in goods {
            let r = send(method, path, &[("Authorization", good.as_str())], *body);
            assert!(
                r.status < 300,
                "{path} with {good}: {} {}",
                r.status,
                r.body
            );
        }
    }
    let auth = bearer(&reader);
    let r = send(
        "POST",
        "/v1/query",
        &[("Authorization", auth.as_str())],
        Some(QUERY),
    );
    assert!(r.body.contains("Ridley Scott"), "{}", r.body);

    // A key in the URL is refused, whoever's it is, and not logged.
    for param in ["access_token", "api_key", "key"] {
        let path = format!("/sparql?query=ASK%20%7B%7D&{param}={reader}");
        let r = send("GET", &path, &[("Authorization", auth.as_str())], None);
        assert_eq!(
            (r.status, code(&r).as_str()),
            (400, "key_in_url"),
            "{}",
            r.body
        );
    }

    // Admin routes: the admin key, not a reader's.
    let r = send(
        "POST",
        "/v1/bundles/rollback",
        &[("Authorization", auth.as_str())],
        None,
    );
    assert_eq!(
        (r.status, code(&r).as_str()),
        (403, "forbidden"),
        "{}",
        r.body
    );
    let admin_auth = bearer(&admin);
    let r = send(
        "POST",
        "/v1/bundles/rollback",
        &[("Authorization", admin_auth.as_str())],
        None,
    );
    assert!(![401, 403].contains(&r.status), "{} {}", r.status, r.body);
    let r = send("POST", "/v1/bundles/rollback", &[], None);
    assert_eq!(
        (r.status, code(&r).as_str()),
        (401, "unauthorized"),
        "{}",
        r.body
    );

    // A flood past the key's rate (3 a minute): 429 with Retry-After; other
    // keys keep answering.
    let limited_auth = bearer(&limited);
    let statuses: Vec<u16> = (0..8)
        .map(|_| {
            send(
                "GET",
                "/v1/models",
                &[("Authorization", limited_auth.as_str())],
                None,
            )
            .status
        })
        .collect();
    assert_eq!(&statuses[..3], &[200, 200, 200], "{statuses:?}");
    assert!(statuses[3..].iter().all(|&s| s == 429), "{statuses:?}");
    let r = send(
        "GET",
        "/v1/models",
        &[("Authorization", limited_auth.as_str())],
        None,
    );
    assert_eq!(code(&r), "rate_limited");
    let wait: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    assert_eq!(
        send(
            "GET",
            "/v1/models",
            &[("Authorization", auth.as_str())],
            None
        )
        .status,
        200
    );
    let metrics = send(
        "GET",
        "/metrics",
        &[("Authorization", admin_auth.as_str())],
        None,
    )
    .body;
    let limited_series =
        format!("kgbox_key_requests_total{{key=\"{limited_id}\",outcome=\"rate_limited\"}} 6");
    assert!(
        metrics.contains(&limited_series),
        "{limited_series} not in:\n{metrics}"
    );
    assert!(
        metrics.contains(&format!("key=\"{reader_id}\",outcome=\"ok\"")),
        "{metrics}"
    );

    // Revoked while serving: refused from the next request on.
    assert!(device
        .kgbox(&["keys", "revoke", &reader_id])
        .status
        .success());
    let r = send(
        "POST",
        "/v1/query",
        &[("Authorization", auth.as_str())],
        Some(QUERY),
    );
    assert_eq!(
        (r.status, code(&r).as_str()),
        (401, "invalid_key"),
        "{}",
        r.body
    );

    // The access log names keys by id, never by their text.
    let log = server.log();
    assert!(log.contains(&format!("key={reader_id}")), "{log}");
    for secret in [&reader, &other, &own, &admin, &limited, &gone] {
        let tail = secret.rsplit_once('_').unwrap().1;
        assert!(!log.contains(tail), "a key's secret is in the log");
    }
}

#[test]
fn keys_list_and_revoke_from_the_command_line() {
    let device = Device::new(&[], "");
    let (_, id) = add_key(&device, "plant-a", &["read:plant-a", "admin"], Some("20/s"));
    let o = device.kgbox(&["keys", "list", "--json"]);
    let listed: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(
        listed[0]["scopes"],
        serde_json::json!(["read:plant-a", "admin"])
    );
    assert_eq!(listed[0]["rate"], "20/s");
    assert!(listed[0].get("hash").is_none(), "{listed}");
    // The file keeps hashes only, readable by the device's user alone.
    let file = device.data_dir.join("keys.json");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // Bad input: clear errors, nothing written.
    let before = std::fs::read(&file).unwrap();
    for args in [
        &["keys", "add", "--name", "x", "--scope", "write"][..],
        &[
            "keys", "add", "--name", "x", "--scope", "read", "--rate", "5/day",
        ][..],
        &["keys", "add", "--name", "plant-a", "--scope", "read"][..],
        &["keys", "revoke", "nobody"][..],
    ] {
        let o = device.kgbox(args);
        assert!(!o.status.success(), "{args:?}");
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    }
    assert_eq!(std::fs::read(&file).unwrap(), before);
    let o = device.kgbox(&["keys", "revoke", "plant-a"]);
    assert!(stdout(&o).contains(&id), "{}", stdout(&o));
    let o = device.kgbox(&["keys", "list"]);
    assert!(stdout(&o).contains("revoked"), "{}", stdout(&o));
}
