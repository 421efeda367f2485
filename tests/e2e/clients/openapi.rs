//! `/openapi.json` against the tools that read it: openapi-spec-validator
//! checks the description, and schemathesis sends generated requests to
//! every described operation of a live server on the demo bundle that
//! needs API keys, with a read key, failing on any 5xx, undocumented status,
//! wrong content type or response that does not match its schema.
#![allow(clippy::unwrap_used)]

use std::process::Command;

use kgbox_testkit::clients::require_python_modules;
use kgbox_testkit::*;

#[test]
fn openapi_description_validates_and_the_server_keeps_to_it() {
    require_python_modules(&["openapi_spec_validator", "schemathesis"]);
    let device = Device::new(&[], "[http]\nallow_anonymous = false");
    let o = device.kgbox(&[
        "keys",
        "add",
        "--name",
        "schemathesis",
        "--scope",
        "read",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let key = stdout(&o).trim().to_string();
    let server = device.serve();
    let (status, spec) = server.get("/openapi.json");
    assert_eq!(status, 200, "{spec}");
    let doc: serde_json::Value = serde_json::from_str(&spec).unwrap();
    let schemes = &doc["components"]["securitySchemes"];
    assert_eq!(schemes["api_key"]["scheme"], "bearer", "{schemes}");
    assert_eq!(schemes["admin_token"]["scheme"], "bearer", "{schemes}");
    let ask = &doc["paths"]["/v1/ask"]["post"];
    assert!(ask["security"][0]["api_key"].is_array(), "{ask}");
    for status in ["401", "403", "429"] {
        assert!(ask["responses"][status].is_object(), "{status}: {ask}");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, &spec).unwrap();
    let o = run(Command::new("python3")
        .args(["-m", "openapi_spec_validator"])
        .arg(&file));
    assert!(
        o.status.success(),
        "openapi-spec-validator: {}{}",
        stdout(&o),
        stderr(&o)
    );

    let url = format!("http://127.0.0.1:{}/openapi.json", server.port);
    let o = run(Command::new("python3")
        .args(["-m", "schemathesis.cli", "run", &url])
        .args([
            "--checks",
            "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
            "--max-examples",
            "25",
            "--generation-deterministic",
            "--request-timeout",
            "30",
            "--header",
            &format!("Authorization: Bearer {key}"),
        ])
        .env("NO_PROXY", "127.0.0.1")
        .env("SCHEMATHESIS_HOOKS", "")
        .current_dir(dir.path()));
    assert!(
        o.status.success(),
        "schemathesis found problems:\n{}\n{}\nserver log:\n{}",
        stdout(&o),
        stderr(&o),
        server.log()
    );
    // It ran as the key: answered reads in the access log name it.
    let id = key.split('_').nth(1).unwrap();
    let log = server.log();
    assert!(
        log.lines().any(|l| l.contains("kgbox::access")
            && l.contains("status=200")
            && l.contains(&format!("key={id}"))),
        "no answered read with the key in:\n{log}"
    );
}
