//! The web console (`GET /`) in a real browser: `tests/clients/console.py`
//! drives Debian's chromium through the `playwright` package against
//! `kgbox serve` on the built-in demo (ask, entity page, query, SPARQL,
//! status, a phone-size layout, no request to another origin). Its
//! screenshots are kept under `TARGET_DIR/test-artifacts/` (`console.png`
//! and `console-*.png`).
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use kgbox_testkit::clients::{browser_client_passes, require_chromium, test_artifacts};
use kgbox_testkit::*;

/// How long the browser run may take.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(240);

#[test]
fn console_in_a_browser() {
    require_chromium();
    let artifacts = test_artifacts();
    let shot = artifacts.join("console.png");
    for suffix in ["", "-entity", "-query", "-sparql", "-status", "-desktop"] {
        let _ = std::fs::remove_file(artifacts.join(format!("console{suffix}.png")));
    }

    let device = Device::new(&[], "");
    let server = device.serve();
    let base = format!("http://127.0.0.1:{}", server.port);

    let output = browser_client_passes(
        "console.py",
        &[&base, shot.to_str().unwrap()],
        &shot,
        "playwright and chromium",
        SCRIPT_TIMEOUT,
        &|| format!("server log:\n{}", server.log()),
    );
    assert!(output.contains("ok   asked"), "{output}");
    println!("{output}screenshot: {}", shot.display());
}
