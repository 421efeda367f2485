//! The web console (`GET /`) in a real browser: `tests/clients/console.py`
//! drives Debian's chromium through the `playwright` package against
//! `kgbox serve` on the built-in demo (ask, entity page, query, SPARQL,
//! status, a phone-size layout, no request to another origin). Its
//! screenshots are kept under `TARGET_DIR/test-artifacts/` (`console.png`
//! and `console-*.png`).
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use kgbox_testkit::clients::{require_python_modules, run_python_client};
use kgbox_testkit::*;

/// The browser console.py drives (Debian's package; scripts/setup.sh --dev installs it).
const CHROMIUM: &str = "/usr/bin/chromium";

/// How long the browser run may take.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(240);

/// `CARGO_TARGET_DIR` when set (relative to the repository root), else the
/// directory above the profile directory the binaries were built into.
pub(super) fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
        return repo_root().join(dir);
    }
    let kgbox = bin("kgbox");
    kgbox
        .parent()
        .and_then(|profile| profile.parent())
        .unwrap()
        .to_path_buf()
}

#[test]
fn console_in_a_browser() {
    require_python_modules(&["playwright"]);
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: run scripts/setup.sh --dev (it installs chromium)"
    );
    let artifacts = target_dir().join("test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join("console.png");
    for suffix in ["", "-entity", "-query", "-sparql", "-status", "-desktop"] {
        let _ = std::fs::remove_file(artifacts.join(format!("console{suffix}.png")));
    }

    let device = Device::new(&[], "");
    let server = device.serve();
    let base = format!("http://127.0.0.1:{}", server.port);

    let run = run_python_client(
        "console.py",
        &[&base, shot.to_str().unwrap()],
        &[],
        SCRIPT_TIMEOUT,
    );
    let output = run.output;
    assert_ne!(
        run.code,
        Some(2),
        "console.py cannot run here: run scripts/setup.sh --dev (it installs playwright and chromium):\n{output}"
    );
    assert_eq!(
        run.code,
        Some(0),
        "console.py failed (None: killed after {SCRIPT_TIMEOUT:?}):\n{output}\nserver log:\n{}",
        server.log()
    );
    assert!(output.contains("ok   asked"), "{output}");
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n"),
        "{} is not a PNG",
        shot.display()
    );
    println!("{output}screenshot: {}", shot.display());
}
