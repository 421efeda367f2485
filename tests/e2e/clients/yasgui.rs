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

use std::path::Path;
use std::time::Duration;

use kgbox_testkit::clients::{require_python_modules, run_python_client};
use kgbox_testkit::*;

use super::console::target_dir;

/// The browser yasgui.py drives (Debian's package; scripts/setup.sh --dev installs it).
const CHROMIUM: &str = "/usr/bin/chromium";

/// The YASGUI build the page loads (`npm ci --prefix tests/browser/yasgui`).
const YASGUI_JS: &str = "tests/browser/yasgui/node_modules/@zazuko/yasgui/build/yasgui.min.js";

/// How long the browser run may take.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(240);

#[test]
fn yasgui_queries_sparql_across_origins() {
    require_python_modules(&["playwright"]);
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: run scripts/setup.sh --dev (it installs chromium)"
    );
    assert!(
        repo_root().join(YASGUI_JS).is_file(),
        "{YASGUI_JS} is missing: run scripts/setup.sh --dev (it runs npm ci --prefix tests/browser/yasgui)"
    );
    let artifacts = target_dir().join("test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
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

    let run = run_python_client(
        "yasgui.py",
        &[
            &page,
            &endpoint(&allowed),
            &endpoint(&refused),
            shot.to_str().unwrap(),
        ],
        &[],
        SCRIPT_TIMEOUT,
    );
    let output = run.output;
    assert_ne!(
        run.code,
        Some(2),
        "yasgui.py cannot run here: run scripts/setup.sh --dev (it installs playwright, chromium and YASGUI):\n{output}"
    );
    assert_eq!(
        run.code,
        Some(0),
        "yasgui.py failed (None: killed after {SCRIPT_TIMEOUT:?}):\n{output}\nallowing server log:\n{}\nrefusing server log:\n{}",
        allowed.log(),
        refused.log()
    );
    for line in [
        "ok   the table shows 10 rows",
        "ok   with X-Request-Id the browser sent an OPTIONS preflight",
        "ok   the POST failed on CORS",
    ] {
        assert!(output.contains(line), "no {line:?} in:\n{output}");
    }
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n"),
        "{} is not a PNG",
        shot.display()
    );
    println!("{output}screenshot: {}", shot.display());
}
