//! The web console (`GET /`) in a real browser: `tests/clients/console.py`
//! drives Debian's chromium through the `playwright` package against
//! `kgbox serve` on the built-in demo (ask, entity page, query, SPARQL,
//! status, a phone-size layout, no request to another origin), and against
//! a device that needs API keys (the console asks for one once). Its
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
    for suffix in [
        "", "-entity", "-query", "-sparql", "-status", "-desktop", "-key",
    ] {
        let _ = std::fs::remove_file(artifacts.join(format!("console{suffix}.png")));
    }

    let device = Device::new(&[], "");
    let server = device.serve();
    let base = format!("http://127.0.0.1:{}", server.port);
    let keyed_device = Device::new(&[], "[http]\nallow_anonymous = false");
    let o = keyed_device.kgbox(&[
        "keys", "add", "--name", "console", "--scope", "read", "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let key = stdout(&o).trim().to_string();
    let keyed = keyed_device.serve();
    let keyed_base = format!("http://127.0.0.1:{}", keyed.port);

    let output = browser_client_passes(
        "console.py",
        &[&base, shot.to_str().unwrap(), &keyed_base, &key],
        &shot,
        "playwright and chromium",
        SCRIPT_TIMEOUT,
        &|| {
            format!(
                "server log:\n{}\nkeyed server log:\n{}",
                server.log(),
                keyed.log()
            )
        },
    );
    assert!(output.contains("ok   asked"), "{output}");
    assert!(
        output.contains("ok   with the key given once, the console answers"),
        "{output}"
    );
    println!("{output}screenshot: {}", shot.display());
}
