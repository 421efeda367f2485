//! The update-framework hooks of `firmware-config/update-hooks/` run as
//! Mender, RAUC and SWUpdate would run them, against a real device: each
//! installs, commits or rolls back, and a failed install changes nothing.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kgbox_testkit::*;

struct Setup {
    work: tempfile::TempDir,
    device: Device,
    /// films 1.0.0, 2.0.0, 3.0.0.
    versions: Vec<PathBuf>,
}

fn setup() -> Setup {
    let work = tempfile::tempdir().unwrap();
    let keys = Keys::new(work.path(), "operator", 9);
    let tsv = small_tsv(work.path());
    let versions: Vec<PathBuf> = (1..=3)
        .map(|v| {
            let out = work.path().join(format!("v{v}.kgb"));
            pack(&tsv, "films", &format!("{v}.0.0"), &keys, &out, &[]);
            out
        })
        .collect();
    let device = Device::new(&[&keys.public], "");
    device.install_ok(&versions[0]);
    Setup {
        work,
        device,
        versions,
    }
}

fn hook(name: &str) -> PathBuf {
    repo_root().join("firmware-config/update-hooks").join(name)
}

/// Runs a hook for `device`, with `restart` as HOOK_RESTART.
fn run_hook(
    device: &Device,
    script: &str,
    args: &[&str],
    restart: &str,
    env: &[(&str, &Path)],
) -> Output {
    let mut c = Command::new("bash");
    c.arg(hook(script))
        .args(args)
        .env("HOOK_KGBOX", bin("kgbox"))
        .env("HOOK_RESTART", restart)
        .env("HOOK_READY_S", "2")
        .env("KGBOX_CONFIG", &device.config)
        .env_remove("RUST_LOG");
    for (k, v) in env {
        c.env(k, v);
    }
    run(&mut c)
}

fn version(device: &Device) -> String {
    device.active_health().0
}

fn health(device: &Device) -> String {
    device.active_health().1
}

/// A Mender module FILES dir whose payload is `bundle`.
fn mender_files(work: &Path, name: &str, bundle: &Path) -> PathBuf {
    let files = work.join(name);
    std::fs::create_dir_all(files.join("files")).unwrap();
    std::fs::create_dir_all(files.join("tmp")).unwrap();
    std::fs::copy(bundle, files.join("files/update.kgb")).unwrap();
    files
}

#[test]
fn mender_module_installs_commits_rolls_back_and_leaves_a_failed_install_alone() {
    let s = setup();
    let d = &s.device;
    let m = |args: &[&str]| run_hook(d, "mender-kgbox", args, "", &[]);
    assert_eq!(stdout(&m(&["SupportsRollback"])).trim(), "Yes");
    assert_eq!(stdout(&m(&["NeedsArtifactReboot"])).trim(), "No");

    // 2.0.0: install, commit.
    let f2 = mender_files(s.work.path(), "a2", &s.versions[1]);
    let f2 = f2.to_str().unwrap();
    let o = m(&["ArtifactInstall", f2]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(version(d), "2.0.0");
    assert_eq!(health(d), "pending");
    let o = m(&["ArtifactCommit", f2]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(health(d), "good");

    // 3.0.0: install, then Mender rolls back.
    let f3 = mender_files(s.work.path(), "a3", &s.versions[2]);
    let f3 = f3.to_str().unwrap();
    assert!(m(&["ArtifactInstall", f3]).status.success());
    assert_eq!(version(d), "3.0.0");
    let o = m(&["ArtifactRollback", f3]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(version(d), "2.0.0");

    // A damaged payload: the install fails, and the rollback and failure
    // states that Mender runs next leave 2.0.0 active.
    let bad = s.work.path().join("bad.kgb");
    std::fs::write(&bad, b"not a bundle").unwrap();
    let fb = mender_files(s.work.path(), "bad", &bad);
    let fb = fb.to_str().unwrap();
    let o = m(&["ArtifactInstall", fb]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(m(&["ArtifactRollback", fb]).status.success());
    assert!(m(&["ArtifactFailure", fb]).status.success());
    assert_eq!(version(d), "2.0.0");
    assert_eq!(health(d), "good");
    assert!(!m(&["NoSuchState"]).status.success());
}

#[test]
fn rauc_hook_installs_and_waits_for_the_restarted_server() {
    let s = setup();
    let d = &s.device;
    // A server on 1.0.0 that "restart" leaves running; the hook's
    // healthcheck finds it through the config's listen address.
    let server = d.serve();
    let listen = format!("127.0.0.1:{}", server.port);
    let mut c = Command::new("bash");
    c.arg(hook("rauc-hook.sh"))
        .arg("slot-install")
        .env("HOOK_KGBOX", bin("kgbox"))
        .env("HOOK_RESTART", "true")
        .env("HOOK_READY_S", "5")
        .env("KGBOX_CONFIG", &d.config)
        .env("KGBOX_HTTP__LISTEN", &listen)
        .env("RAUC_IMAGE_NAME", &s.versions[1]);
    let o = run(&mut c);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("restarting: true"), "{}", stderr(&o));
    assert_eq!(version(d), "2.0.0");
}

#[test]
fn swupdate_script_rolls_back_a_bundle_that_does_not_come_up() {
    let s = setup();
    let d = &s.device;
    let incoming = s.work.path().join("incoming/update.kgb");
    let env = [("HOOK_BUNDLE", incoming.as_path())];
    let o = run_hook(d, "swupdate-kgbox.sh", &["preinst"], "", &env);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::copy(&s.versions[1], &incoming).unwrap();
    let o = run_hook(d, "swupdate-kgbox.sh", &["postinst"], "", &env);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(version(d), "2.0.0");
    assert!(!incoming.exists(), "the installed file is removed");

    // 3.0.0 whose service does not come back (the restart fails): rolled
    // back to 2.0.0, and SWUpdate hears the failure.
    std::fs::copy(&s.versions[2], &incoming).unwrap();
    let o = run_hook(d, "swupdate-kgbox.sh", &["postinst"], "false", &env);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("rolling back"), "{}", stderr(&o));
    assert_eq!(version(d), "2.0.0");
}
