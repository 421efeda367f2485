//! Service glue: systemd notifications (`READY=1`, `WATCHDOG=1` that stop
//! when the process is stopped, `STOPPING=1`) read from a notify socket the
//! test creates, as systemd would; `kgbox healthcheck`'s exit codes;
//! `mark-good` / `mark-bad`; completions and the man page.
#![allow(clippy::unwrap_used)]

use std::os::unix::net::UnixDatagram;
use std::process::Command;
use std::time::{Duration, Instant};

use kgbox_testkit::*;

/// The messages that arrive on `sock` within `window`.
fn messages(sock: &UnixDatagram, window: Duration) -> Vec<String> {
    let end = Instant::now() + window;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        sock.set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .unwrap();
        match sock.recv(&mut buf) {
            Ok(n) => out.push(String::from_utf8_lossy(&buf[..n]).trim_end().to_string()),
            Err(_) => break,
        }
    }
    out
}

fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill(2) has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, sig) }, 0);
}

#[test]
fn systemd_hears_ready_then_watchdog_pings_that_stop_while_the_process_is_stopped() {
    let device = Device::new(&[], "");
    let path = device.dir.path().join("notify.sock");
    let sock = UnixDatagram::bind(&path).unwrap();
    // WatchdogSec=0.4s: pings every 200 ms.
    let server = device.serve_with_env(&[
        ("NOTIFY_SOCKET", path.to_str().unwrap()),
        ("WATCHDOG_USEC", "400000"),
    ]);
    let first = messages(&sock, Duration::from_millis(1000));
    let ready = first
        .iter()
        .find(|m| m.contains("READY=1"))
        .unwrap_or_else(|| panic!("no READY=1 in {first:?}"));
    assert!(
        ready.contains(&format!(
            "STATUS=serving on http://127.0.0.1:{}",
            server.port
        )),
        "{ready}"
    );
    let pings = first.iter().filter(|m| *m == "WATCHDOG=1").count();
    assert!(pings >= 3, "{pings} pings in 1 s: {first:?}");

    // kill -STOP: no ping while stopped (systemd would restart it after
    // WatchdogSec); kill -CONT: the pings come back.
    signal(server.pid(), libc::SIGSTOP);
    let _ = messages(&sock, Duration::from_millis(50));
    let stopped = messages(&sock, Duration::from_millis(1200));
    assert_eq!(stopped, Vec::<String>::new(), "pings while stopped");
    signal(server.pid(), libc::SIGCONT);
    let resumed = messages(&sock, Duration::from_millis(1000));
    assert!(
        resumed.iter().filter(|m| *m == "WATCHDOG=1").count() >= 2,
        "{resumed:?}"
    );

    // SIGTERM: STOPPING=1 before it exits.
    signal(server.pid(), libc::SIGTERM);
    let last = messages(&sock, Duration::from_millis(3000));
    assert!(last.iter().any(|m| m.starts_with("STOPPING=1")), "{last:?}");
}

#[test]
fn without_a_watchdog_there_are_no_pings() {
    let device = Device::new(&[], "");
    let path = device.dir.path().join("notify.sock");
    let sock = UnixDatagram::bind(&path).unwrap();
    let _server = device.serve_with_env(&[("NOTIFY_SOCKET", path.to_str().unwrap())]);
    let got = messages(&sock, Duration::from_millis(800));
    assert_eq!(got.iter().filter(|m| m.contains("READY=1")).count(), 1);
    assert!(!got.iter().any(|m| m == "WATCHDOG=1"), "{got:?}");
}

#[test]
fn healthcheck_exits_0_when_ready_and_1_when_nothing_answers() {
    let device = Device::new(&[], "");
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let o = device.kgbox(&["healthcheck", "--url", &url, "--timeout-ms", "500"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stderr(&o).contains("not ready"), "{}", stderr(&o));

    let server = device.serve();
    let url = format!("http://127.0.0.1:{}", server.port);
    let o = device.kgbox(&["healthcheck", "--url", &url]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("ready"));
    // Without --url: the config's http.listen.
    let o = device
        .command(&["healthcheck"])
        .env("KGBOX_HTTP__LISTEN", format!("0.0.0.0:{}", server.port))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    // The container image's HEALTHCHECK, as firmware-config/Containerfile
    // writes it (its config path replaced by the device's; the image sets
    // KGBOX_HTTP__LISTEN to a wildcard address).
    let file = std::fs::read_to_string(repo_root().join("firmware-config/Containerfile")).unwrap();
    let cmd = file
        .lines()
        .find_map(|l| l.trim().strip_prefix("CMD "))
        .expect("a HEALTHCHECK CMD");
    let argv: Vec<String> = serde_json::from_str(cmd).unwrap();
    assert_eq!(argv[..2], ["kgbox", "healthcheck"], "{cmd}");
    let args: Vec<&std::ffi::OsStr> = argv[1..]
        .iter()
        .map(|a| match a.as_str() {
            "/etc/kgbox/config.toml" => device.config.as_os_str(),
            a => std::ffi::OsStr::new(a),
        })
        .collect();
    let o = Command::new(bin("kgbox"))
        .args(args)
        .env("KGBOX_HTTP__LISTEN", format!("0.0.0.0:{}", server.port))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{cmd}: {}", stderr(&o));
}

#[test]
fn mark_good_confirms_and_mark_bad_goes_back_to_the_previous_bundle() {
    let work = tempfile::tempdir().unwrap();
    let keys = Keys::new(work.path(), "operator", 7);
    let tsv = small_tsv(work.path());
    let (v1, v2) = (work.path().join("v1.kgb"), work.path().join("v2.kgb"));
    pack(&tsv, "films", "1.0.0", &keys, &v1, &[]);
    pack(&tsv, "films", "2.0.0", &keys, &v2, &[]);
    let device = Device::new(&[&keys.public], "");

    let o = device.kgbox(&["mark-good"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("no bundle is installed"),
        "{}",
        stderr(&o)
    );

    device.install_ok(&v1);
    device.install_ok(&v2);
    assert_eq!(device.active_health(), ("2.0.0".into(), "pending".into()));
    let o = device.kgbox(&["mark-good"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("marked films 2.0.0"), "{}", stdout(&o));
    assert_eq!(device.active_health(), ("2.0.0".into(), "good".into()));

    let o = device.kgbox(&["mark-bad", "--reason", "the site check failed"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("1.0.0"), "{}", stdout(&o));
    assert_eq!(device.active().unwrap().2, "1.0.0");
    let s = device.status();
    let bad = ["a", "b"]
        .iter()
        .map(|slot| &s["state"][*slot])
        .find(|r| r["version"] == "2.0.0")
        .unwrap();
    assert_eq!(bad["health"], "bad");
    assert_eq!(bad["error"], "the site check failed");
    // The next start serves 1.0.0.
    let server = device.serve();
    assert_eq!(server.get_json("/v1/status")["bundle"]["version"], "1.0.0");
}

#[test]
fn completions_and_the_man_page_name_every_subcommand() {
    let device = Device::new(&[], "");
    for shell in ["bash", "zsh", "fish"] {
        let o = device.kgbox(&["completions", shell]);
        assert!(o.status.success(), "{shell}: {}", stderr(&o));
        let text = stdout(&o);
        for sub in ["serve", "install", "healthcheck", "mark-bad"] {
            assert!(text.contains(sub), "{shell} completions lack {sub}");
        }
    }
    let o = device.kgbox(&["completions", "tcsh"]);
    assert!(!o.status.success());
    let o = device.kgbox(&["man"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let man = stdout(&o);
    assert!(man.contains(".TH kgbox 1"), "{man}");
    assert!(
        man.contains("healthcheck") && man.contains("mark\\-good"),
        "{man}"
    );
}

#[test]
fn every_man_page_the_main_one_names_is_written_for_both_programs() {
    for program in ["kgbox", "kgbox-pack"] {
        let dir = tempfile::tempdir().unwrap();
        let o = run(Command::new(bin(program))
            .args(["man", "--dir"])
            .arg(dir.path()));
        assert!(o.status.success(), "{program}: {}", stderr(&o));
        let main = std::fs::read_to_string(dir.path().join(format!("{program}.1"))).unwrap();
        // The SUBCOMMANDS section refers to `kgbox\-serve(1)` and the like.
        let named: Vec<String> = main
            .lines()
            .filter_map(|l| l.strip_suffix("(1)"))
            .map(|page| page.replace("\\-", "-"))
            .collect();
        assert!(named.len() >= 8, "{program}: {named:?}");
        for page in &named {
            assert!(
                dir.path().join(format!("{page}.1")).exists(),
                "{program}: {page}.1 is named but not written"
            );
        }
    }
    // Nested: `kgbox eval qa`.
    let dir = tempfile::tempdir().unwrap();
    run(Command::new(bin("kgbox"))
        .args(["man", "--dir"])
        .arg(dir.path()));
    assert!(dir.path().join("kgbox-eval-qa.1").exists());
}

#[test]
fn generated_text_into_a_closed_pipe_is_no_error() {
    let cases: [(&str, &[&str]); 3] = [
        ("kgbox", &["completions", "fish"]),
        ("kgbox", &["man"]),
        ("kgbox-pack", &["completions", "bash"]),
    ];
    for (program, args) in cases {
        // The reader is gone before the program writes (`| head` that exited).
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = Command::new(bin(program))
            .args(args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        assert!(o.status.success(), "{program} {args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    }
}
