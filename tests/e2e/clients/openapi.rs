//! `/openapi.json` against the tools that read it: openapi-spec-validator
//! checks the description, and schemathesis sends generated requests to
//! every described operation of a live server on the demo bundle, failing
//! on any 5xx, undocumented status, wrong content type or response that
//! does not match its schema.
#![allow(clippy::unwrap_used)]

use std::process::Command;

use kgbox_testkit::clients::require_python_modules;
use kgbox_testkit::*;

#[test]
fn openapi_description_validates_and_the_server_keeps_to_it() {
    require_python_modules(&["openapi_spec_validator", "schemathesis"]);
    let device = Device::new(&[], "");
    let server = device.serve();
    let (status, spec) = server.get("/openapi.json");
    assert_eq!(status, 200, "{spec}");
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
}
