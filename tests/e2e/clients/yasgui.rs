//! YASGUI against `/sparql` in a real browser, from another origin:
//! `tests/clients/yasgui.py` serves `tests/browser/yasgui/` (@zazuko/yasgui,
//! installed by `npm ci` in scripts/setup.sh --dev) on a free loopback port
//! and drives Debian's chromium through the `playwright` package against two
//! `kgbox serve` of the built-in demo: one whose `http.cors_origins` lists
//! the page's origin (queries answer; no preflight for YASGUI's form POST,
//! one for a request with `X-Request-Id`, whose reply the page reads) and
//! one whose list is empty (the browser refuses the reply and YASGUI shows
//! the error). Its screenshots are kept under `TARGET_DIR/test-artifacts/`
//! (`yasgui.png`, `yasgui-denied.png`).
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use kgbox_testkit::clients::{browser_client_passes, require_chromium, test_artifacts};
use kgbox_testkit::*;

/// The YASGUI build the page loads (`npm ci --prefix tests/browser/yasgui`).
const YASGUI_JS: &str = "tests/browser/yasgui/node_modules/@zazuko/yasgui/build/yasgui.min.js";

/// How long the browser run may take.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(240);

#[test]
fn yasgui_queries_sparql_across_origins() {
    require_chromium();
    assert!(
        repo_root().join(YASGUI_JS).is_file(),
        "{YASGUI_JS} is missing: run scripts/setup.sh --dev (it runs npm ci --prefix tests/browser/yasgui)"
    );
    let artifacts = test_artifacts();
    let shot = artifacts.join("yasgui.png");
    for name in ["yasgui.png", "yasgui-denied.png"] {
        let _ = std::fs::remove_file(artifacts.join(name));
    }

    // The page's origin: a free port that yasgui.py serves the page on.
    let page = format!("http://127.0.0.1:{}", free_port());
    let allowing = Device::new(&[], &format!("[http]\ncors_origins = [\"{page}\"]"));
    let allowed = allowing.serve();
    let refusing = Device::new(&[], "");
    let refused = refusing.serve();
    let endpoint = |server: &Server| format!("http://127.0.0.1:{}/sparql", server.port);

    let output = browser_client_passes(
        "yasgui.py",
        &[
            &page,
            &endpoint(&allowed),
            &endpoint(&refused),
            shot.to_str().unwrap(),
        ],
        &shot,
        "playwright, chromium and YASGUI",
        SCRIPT_TIMEOUT,
        &|| {
            format!(
                "allowing server log:\n{}\nrefusing server log:\n{}",
                allowed.log(),
                refused.log()
            )
        },
    );
    for line in [
        "ok   the table shows 10 rows",
        "ok   with X-Request-Id the browser sent an OPTIONS preflight",
        "ok   the POST failed on CORS",
    ] {
        assert!(output.contains(line), "no {line:?} in:\n{output}");
    }
    println!("{output}screenshot: {}", shot.display());
}
