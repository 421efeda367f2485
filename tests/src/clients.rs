//! The Python clients of `tests/clients/`, run against a live server.
//!
//! A missing python3 or client package fails the test with a pointer to
//! scripts/setup.sh --dev: these tests never skip.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{bin, repo_root};

/// The browser the playwright clients drive (Debian's package;
/// scripts/setup.sh --dev installs it).
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// What a client run printed and how it ended.
pub struct ClientRun {
    /// The exit code; `None` when it was killed at the time limit.
    pub code: Option<i32>,
    /// stdout and stderr, interleaved.
    pub output: String,
}

/// Fails unless python3 can import every module of `modules`.
pub fn require_python_modules(modules: &[&str]) {
    let probe = Command::new("python3")
        .arg("-c")
        .arg(format!("import {}", modules.join(", ")))
        .output();
    match probe {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!(
            "python3 lacks {modules:?} (run scripts/setup.sh --dev): {}",
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => panic!("python3 cannot be run ({e}): run scripts/setup.sh --dev"),
    }
}

/// Runs `python3 tests/clients/SCRIPT ARGS...` with loopback-only proxy
/// settings, killing it after `limit`.
pub fn run_python_client(
    script: &str,
    args: &[&str],
    env: &[(&str, &str)],
    limit: Duration,
) -> ClientRun {
    let mut cmd = Command::new("python3");
    cmd.arg(repo_root().join("tests/clients").join(script))
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_python(cmd, script, limit)
}

/// Runs `cmd` (a `python3` command) with loopback-only proxy settings and
/// stdout and stderr captured together, killing it after `limit`.
pub fn run_python(mut cmd: Command, what: &str, limit: Duration) -> ClientRun {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out_path = dir.path().join("client.out");
    let out = std::fs::File::create(&out_path).expect("the output file");
    let err = out.try_clone().expect("the output file");
    cmd.env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost");
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        cmd.env_remove(var);
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap_or_else(|e| {
            panic!("python3 {what} cannot be started ({e}): run scripts/setup.sh --dev")
        });
    let deadline = Instant::now() + limit;
    let code = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status.code(),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let output = std::fs::read_to_string(&out_path).unwrap_or_default();
    ClientRun { code, output }
}

/// Runs a client and fails the test unless it exits 0.
pub fn client_passes(script: &str, args: &[&str], env: &[(&str, &str)], limit: Duration) -> String {
    let run = run_python_client(script, args, env, limit);
    assert_eq!(
        run.code,
        Some(0),
        "python3 tests/clients/{script} {args:?} failed (None: killed after {limit:?}):\n{}",
        run.output
    );
    run.output
}

/// Runs a browser client (playwright and chromium) that takes a screenshot
/// to `shot`, and fails the test unless it exits 0 and the screenshot is a
/// PNG. Exit status 2 means the machine lacks what `needs` names; `logs` are
/// the servers' logs, shown on a failure.
pub fn browser_client_passes(
    script: &str,
    args: &[&str],
    shot: &Path,
    needs: &str,
    limit: Duration,
    logs: &dyn Fn() -> String,
) -> String {
    let run = run_python_client(script, args, &[], limit);
    let output = run.output;
    assert_ne!(
        run.code,
        Some(2),
        "{script} cannot run here: run scripts/setup.sh --dev (it installs {needs}):\n{output}"
    );
    assert_eq!(
        run.code,
        Some(0),
        "{script} failed (None: killed after {limit:?}):\n{output}\n{}",
        logs()
    );
    let png = std::fs::read(shot).unwrap_or_default();
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n"),
        "{} is not a PNG",
        shot.display()
    );
    output
}

/// Fails the test unless playwright and Debian's chromium are installed.
pub fn require_chromium() {
    require_python_modules(&["playwright"]);
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: run scripts/setup.sh --dev (it installs chromium)"
    );
}

/// `TARGET_DIR/test-artifacts/`, made if missing: what the tests keep for a
/// person to look at (screenshots, failure tables). `TARGET_DIR` is
/// `CARGO_TARGET_DIR` when set (relative to the repository root), else the
/// directory above the profile directory the binaries were built into.
pub fn test_artifacts() -> PathBuf {
    let target = match std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => repo_root().join(dir),
        None => bin("kgbox")
            .parent()
            .and_then(|profile| profile.parent())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| repo_root().join("target")),
    };
    let dir = target.join("test-artifacts");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot make {}: {e}", dir.display()));
    dir
}
