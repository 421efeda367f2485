//! Crash points, enumerated as SQLite and RAUC test them: every file-system
//! system call of `kgbox install`, of an upload to `PUT /v1/bundles` and of
//! `serve`'s start-up state writes is listed with strace, then the process
//! is killed (SIGKILL, injected by strace) at each one in turn. After each
//! kill the device must come up answering from the old or the new bundle,
//! never neither, and a later install must succeed.
//!
//! strace counts an injection's `when=N` per system call and per thread, so
//! a point is the N-th call of one system call in the traced process (any
//! thread). A point that no thread reaches lets the run finish: counted as
//! such, and still checked.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kgbox_testkit::*;

/// The system calls that change files or their durability.
/// (`?`: a call this architecture may not have, e.g. `rename` on aarch64.)
const FS_CALLS: &str = "openat,?creat,write,pwrite64,writev,pwritev,fsync,fdatasync,msync,\
sync_file_range,?rename,renameat,?renameat2,?unlink,unlinkat,?mkdir,mkdirat,ftruncate,fallocate,\
?link,linkat,flock";

const TOKEN: &str = "crash-point-admin-token-0123";

fn strace_available() -> bool {
    Command::new("strace")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Three versions of a small graph; `probe` answers 1, 2 and 3 edges of `e0`.
struct Bundles {
    _dir: tempfile::TempDir,
    keys: Keys,
    versions: Vec<PathBuf>,
}

fn bundles() -> Bundles {
    assert!(
        strace_available(),
        "strace is not installed (scripts/setup.sh --dev installs it)"
    );
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::new(dir.path(), "operator", 31);
    let mut versions = Vec::new();
    for v in 1..=3 {
        let tsv = dir.path().join(format!("v{v}.tsv"));
        let mut w = std::io::BufWriter::new(std::fs::File::create(&tsv).unwrap());
        for i in 0..2000 {
            writeln!(w, "e{}\tr{}\te{}", i % 700, i % 7, (i * 31) % 700).unwrap();
        }
        for p in 0..v {
            writeln!(w, "e0\tprobe\tp{p}").unwrap();
        }
        drop(w);
        let out = dir.path().join(format!("v{v}.kgb"));
        pack(
            &tsv,
            "points",
            &format!("{v}.0.0"),
            &keys,
            &out,
            &["--level", "1"],
        );
        versions.push(out);
    }
    Bundles {
        _dir: dir,
        keys,
        versions,
    }
}

/// The device's answer: (active version, `e0 -probe->` edge count), read
/// by a fresh `serve`, which must come up.
fn served_answer(device: &Device) -> (String, u64) {
    let server = device.serve_with_env(&[("KGBOX_ADMIN_TOKEN", TOKEN)]);
    let bundle = server.get_json("/v1/bundle");
    let version = bundle["manifest"]["version"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let (status, body) = server.post_json(
        "/v1/query",
        &serde_json::json!({"query": "e0 -> probe", "top_k": 10}),
    );
    assert_eq!(status, 200, "{body}");
    (version, answer_names(&body).len() as u64)
}

/// Checks the device after a kill: it serves `old` or `new`, with that
/// version's answer.
fn check_after_kill(device: &Device, old: &str, new: &str, point: &str) -> bool {
    let (version, answer) = served_answer(device);
    assert!(
        version == old || version == new,
        "{point}: serving {version:?}, neither {old} nor {new}"
    );
    let expected: u64 = version[..1].parse().unwrap();
    assert_eq!(answer, expected, "{point}: version {version}");
    version == new
}

/// (system call, calls) in a strace `-o` log of `FS_CALLS`.
fn count_calls(log: &Path) -> Vec<(String, usize)> {
    let text = std::fs::read_to_string(log).unwrap();
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for line in text.lines() {
        // `PID name(args...` (a call), not `PID <... name resumed>` or `+++`.
        let rest = line.split_once(' ').map_or(line, |(_, r)| r).trim_start();
        if let Some((name, _)) = rest.split_once('(') {
            if !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                *counts.entry(name.to_string()).or_default() += 1;
            }
        }
    }
    counts.into_iter().collect()
}

/// Every (system call, N) of a traced run.
fn points(log: &Path) -> Vec<(String, usize)> {
    count_calls(log)
        .into_iter()
        .flat_map(|(name, n)| (1..=n).map(move |i| (name.clone(), i)))
        .collect()
}

fn strace_cmd(log: &Path, inject: Option<&(String, usize)>) -> Command {
    let mut c = Command::new("strace");
    c.args(["-f", "-qq", "-o"]).arg(log);
    match inject {
        Some((name, n)) => c.args([
            "-e",
            &format!("trace={name}"),
            "-e",
            &format!("inject={name}:signal=KILL:when={n}"),
        ]),
        None => c.args(["-e", &format!("trace={FS_CALLS}")]),
    };
    c
}

/// Runs the operation once per point, killed there (`kill_at` returns
/// whether the process died), checks the device after each, and calls
/// `reset` (with whether it served the new bundle) to set up the next.
/// Prints the tally and checks that most points were reached.
fn run_points(
    what: &str,
    device: &Device,
    points: &[(String, usize)],
    mut kill_at: impl FnMut(&(String, usize)) -> bool,
    mut reset: impl FnMut(bool),
) {
    let (mut killed, mut old, mut new) = (0, 0, 0);
    for p in points {
        if kill_at(p) {
            killed += 1;
        }
        let point = format!("{what}, {} #{}", p.0, p.1);
        let served_new = check_after_kill(device, "1.0.0", "2.0.0", &point);
        if served_new {
            new += 1;
        } else {
            old += 1;
        }
        reset(served_new);
    }
    eprintln!(
        "crash points of {what}: {} enumerated, {killed} killed the process there, afterwards serving the old bundle {old} times and the new one {new} times",
        points.len()
    );
    assert!(
        points.len() >= 5,
        "{what}: only {} points found",
        points.len()
    );
    assert!(
        killed * 2 >= points.len(),
        "{what}: only {killed} of {} points were reached",
        points.len()
    );
}

/// The three bundles and a device running 1.0.0 (marked good at once),
/// with the path for strace's log.
fn device_on_1() -> (Bundles, Device, PathBuf) {
    let b = bundles();
    let device = Device::new(&[&b.keys.public], "[health]\nsettle_ms = 0");
    device.install_ok(&b.versions[0]);
    let log = device.dir.path().join("trace.log");
    (b, device, log)
}

/// After a point that left 2.0.0 serving, 1.0.0 again for the next.
fn back_to_1(device: &Device, b: &Bundles, served_new: bool) {
    if served_new {
        reinstall(device, &b.versions[0]);
    }
}

/// After all the points: a later install of 3.0.0 succeeds and serves.
fn later_install_serves_3(device: &Device, b: &Bundles) {
    device.install_ok(&b.versions[2]);
    assert_eq!(served_answer(device), ("3.0.0".to_string(), 3));
}

/// 1.0.0 served (so marked good), then 2.0.0 installed but not yet served:
/// the next `serve` checks it and writes its health (pending, trial, good).
fn pending_2(device: &Device, b: &Bundles) {
    reinstall(device, &b.versions[0]);
    let _ = served_answer(device);
    reinstall(device, &b.versions[1]);
}

/// `kgbox install --allow-downgrade BUNDLE`, which must succeed.
fn reinstall(device: &Device, bundle: &Path) {
    let o = device.kgbox(&["install", "--allow-downgrade", bundle.to_str().unwrap()]);
    assert!(
        o.status.success(),
        "installing {}: {}",
        bundle.display(),
        stderr(&o)
    );
}

#[test]
fn every_crash_point_of_install_leaves_a_device_that_answers() {
    let (b, device, log) = device_on_1();
    let v2 = b.versions[1].to_str().unwrap();

    // A device on 1.0.0 installs 2.0.0: trace one install to list its calls.
    let probe = Device::new(&[&b.keys.public], "[health]\nsettle_ms = 0");
    probe.install_ok(&b.versions[0]);
    let o = run(strace_cmd(&log, None)
        .arg(bin("kgbox"))
        .arg("--config")
        .arg(&probe.config)
        .args(["install", v2]));
    assert!(o.status.success(), "{}", stderr(&o));
    run_points(
        "kgbox install",
        &device,
        &points(&log),
        |p| {
            let o = run(strace_cmd(&log, Some(p))
                .arg(bin("kgbox"))
                .arg("--config")
                .arg(&device.config)
                .args(["install", "--allow-downgrade", v2]));
            !o.status.success()
        },
        |served_new| back_to_1(&device, &b, served_new),
    );
    // A later install succeeds.
    later_install_serves_3(&device, &b);
}

#[test]
fn every_crash_point_of_start_up_leaves_a_device_that_answers() {
    let b = bundles();
    // 2.0.0 installed but not yet served: the first `serve` checks it and
    // writes its health (pending, trial, good).
    let fresh = |device: &Device| pending_2(device, &b);
    let device = Device::new(&[&b.keys.public], "");
    let log = device.dir.path().join("trace.log");
    fresh(&device);
    let points = trace_serve_start(&device, &log, None);
    fresh(&device);
    run_points(
        "serve's start-up",
        &device,
        &points,
        |p| trace_serve_start(&device, &log, Some(p)).is_empty(),
        |_| fresh(&device),
    );
    later_install_serves_3(&device, &b);
}

/// Runs `serve` under strace until it is ready and its bundle is marked
/// good (or it dies): the calls it made, or none when it was killed.
fn trace_serve_start(
    device: &Device,
    log: &Path,
    inject: Option<&(String, usize)>,
) -> Vec<(String, usize)> {
    let mut cmd = strace_cmd(log, inject);
    cmd.arg(bin("kgbox")).arg("--config").arg(&device.config);
    if !serve_until_good(cmd) {
        return Vec::new();
    }
    if inject.is_some() {
        return vec![("finished".into(), 0)];
    }
    points(log)
}

/// Runs `cmd serve` (with `settle_ms` 200) until its bundle is marked good
/// and a moment more, then kills it and its children: whether it got there
/// (false: it died first).
fn serve_until_good(mut cmd: Command) -> bool {
    let port = free_port();
    let mut child = cmd
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .env("KGBOX_HEALTH__SETTLE_MS", "200")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut ready_at = None;
    loop {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        let url = format!("http://127.0.0.1:{port}/v1/status");
        if let Ok(mut r) = client(Duration::from_secs(5)).get(&url).call() {
            let v: serde_json::Value = r.body_mut().read_json().unwrap_or_default();
            let marked_good = v.to_string().contains("\"good\"");
            if marked_good && ready_at.is_none() {
                ready_at = Some(Instant::now());
            }
        }
        // Past settling and a moment more: the start-up writes are done.
        if ready_at.is_some_and(|t| t.elapsed() > Duration::from_millis(300)) {
            break;
        }
        assert!(Instant::now() < deadline, "serve did not settle");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Under strace, kill `serve` (strace's child) first: strace then exits
    // on its own. Killing strace first would detach it and leave `serve`
    // running.
    for pid in children(child.id()) {
        // SAFETY: kill(2) has no memory-safety preconditions.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let _ = child.kill();
    let _ = child.wait();
    true
}

/// The child processes of `pid` (from `/proc/PID/task/*/children`).
fn children(pid: u32) -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<i32>>()
        })
        .collect()
}

/// Waits until `strace` has attached to every thread of `pid`: at once
/// when strace has exited (it could not attach), else up to a minute (the
/// other tests may load every core).
fn wait_attached(pid: u32, strace: &mut std::process::Child) {
    const PTRACE: &str = "ptrace not allowed? run as root or set kernel.yama.ptrace_scope=0";
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(Some(status)) = strace.try_wait() {
            panic!("strace exited ({status}) before it attached to kgbox serve ({PTRACE})");
        }
        let all = std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|tasks| {
                tasks.filter_map(Result::ok).all(|t| {
                    std::fs::read_to_string(t.path().join("status")).is_ok_and(|st| {
                        st.lines().any(|l| {
                            l.strip_prefix("TracerPid:")
                                .is_some_and(|v| v.trim() != "0")
                        })
                    })
                })
            })
            .unwrap_or(false);
        if all {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "strace did not attach to every thread of kgbox serve in 60 s ({PTRACE})"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn every_crash_point_of_an_upload_leaves_a_device_that_answers() {
    let (b, device, log) = device_on_1();
    let body = read(&b.versions[1]);
    let points = traced_upload(&device, &log, None, &body);
    reinstall(&device, &b.versions[0]);
    run_points(
        "PUT /v1/bundles",
        &device,
        &points,
        |p| traced_upload(&device, &log, Some(p), &body).is_empty(),
        |served_new| back_to_1(&device, &b, served_new),
    );
    let server = device.serve_with_env(&[("KGBOX_ADMIN_TOKEN", TOKEN)]);
    let (status, v) = server.put_bytes("/v1/bundles", Some(TOKEN), &read(&b.versions[2]));
    assert_eq!(status, 200, "{v}");
    drop(server);
    assert_eq!(served_answer(&device), ("3.0.0".to_string(), 3));
}

/// Starts `serve`, attaches strace once it is ready and uploads `body`:
/// the calls the upload made, or none when the server was killed.
fn traced_upload(
    device: &Device,
    log: &Path,
    inject: Option<&(String, usize)>,
    body: &[u8],
) -> Vec<(String, usize)> {
    let server = device.serve_with_env(&[("KGBOX_ADMIN_TOKEN", TOKEN)]);
    let _ = std::fs::remove_file(log);
    let mut strace = strace_cmd(log, inject)
        .arg("-p")
        .arg(server.pid().to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_attached(server.pid(), &mut strace);
    let url = format!("http://127.0.0.1:{}/v1/bundles", server.port);
    let answered = client(Duration::from_secs(120))
        .put(&url)
        .header("Authorization", format!("Bearer {TOKEN}"))
        .send(body)
        .is_ok();
    drop(server);
    let _ = strace.wait();
    if inject.is_some() {
        return if answered {
            vec![("finished".into(), 0)]
        } else {
            Vec::new()
        };
    }
    assert!(answered, "the traced upload failed");
    points(log)
}

/// Builds `tests/shim/lost_writes.c` (see its header) into `dir`.
fn lost_writes_shim(dir: &Path) -> PathBuf {
    let out = dir.join("lost_writes.so");
    let src = repo_root().join("tests/shim/lost_writes.c");
    let o = run(Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&out)
        .arg(&src)
        .arg("-ldl"));
    assert!(o.status.success(), "building the shim: {}", stderr(&o));
    out
}

/// A power cut that also loses every write not yet made durable: at each
/// write or sync call of `kgbox install`, the shim undoes the writes no
/// fsync covered, then kills the process. The device must come up on the
/// old or the new bundle all the same.
#[test]
fn every_point_of_install_with_unflushed_writes_lost_leaves_a_device_that_answers() {
    let (b, device, _) = device_on_1();
    let shim = lost_writes_shim(device.dir.path());
    let v2 = b.versions[1].to_str().unwrap();

    let probe = Device::new(&[&b.keys.public], "[health]\nsettle_ms = 0");
    probe.install_ok(&b.versions[0]);
    let count = probe.dir.path().join("count");
    let o = run(probe
        .command(&["install", v2])
        .env("LD_PRELOAD", &shim)
        .env("LOST_WRITES_COUNT", &count));
    assert!(o.status.success(), "{}", stderr(&o));
    let points = counted_points(&count);
    run_points(
        "kgbox install with unflushed writes lost",
        &device,
        &points,
        |p| {
            let o = run(device
                .command(&["install", "--allow-downgrade", v2])
                .env("LD_PRELOAD", &shim)
                .env("LOST_WRITES_AT", p.1.to_string()));
            !o.status.success()
        },
        |served_new| back_to_1(&device, &b, served_new),
    );
    later_install_serves_3(&device, &b);
}

/// Whether process `pid` is running (not gone, not a zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|st| {
        st.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

/// The points `1..=N` for the N calls the shim counted into `count`.
fn counted_points(count: &Path) -> Vec<(String, usize)> {
    let text = std::fs::read_to_string(count).unwrap_or_default();
    let calls: usize = match text.trim() {
        "" => 0,
        n => n.parse().unwrap(),
    };
    (1..=calls).map(|n| ("call".to_string(), n)).collect()
}

/// `serve`'s start-up with a power cut that loses unflushed writes at each
/// write or sync of its state (pending, trial, good).
#[test]
fn every_point_of_start_up_with_unflushed_writes_lost_leaves_a_device_that_answers() {
    let b = bundles();
    let fresh = |device: &Device| pending_2(device, &b);
    let device = Device::new(&[&b.keys.public], "");
    let shim = lost_writes_shim(device.dir.path());
    let count = device.dir.path().join("count");
    fresh(&device);
    let mut cmd = device.command(&[]);
    cmd.env("LD_PRELOAD", &shim)
        .env("LOST_WRITES_COUNT", &count);
    assert!(serve_until_good(cmd), "serve with the shim did not start");
    let points = counted_points(&count);
    fresh(&device);
    run_points(
        "serve's start-up with unflushed writes lost",
        &device,
        &points,
        |p| {
            let mut cmd = device.command(&[]);
            cmd.env("LD_PRELOAD", &shim)
                .env("LOST_WRITES_AT", p.1.to_string());
            !serve_until_good(cmd)
        },
        |_| fresh(&device),
    );
    later_install_serves_3(&device, &b);
}

/// An upload to `PUT /v1/bundles` with a power cut that loses unflushed
/// writes at each write or sync from the moment the upload starts (the
/// shim is armed by a file the test creates then).
#[test]
fn every_point_of_an_upload_with_unflushed_writes_lost_leaves_a_device_that_answers() {
    let (b, device, _) = device_on_1();
    let shim = lost_writes_shim(device.dir.path());
    let count = device.dir.path().join("count");
    let arm = device.dir.path().join("arm");
    let body = read(&b.versions[1]);
    let upload = |at: Option<usize>| -> bool {
        let _ = std::fs::remove_file(&arm);
        let mut env = vec![
            ("KGBOX_ADMIN_TOKEN", TOKEN.to_string()),
            ("LD_PRELOAD", shim.to_str().unwrap().to_string()),
            ("LOST_WRITES_ARM", arm.to_str().unwrap().to_string()),
        ];
        match at {
            Some(n) => env.push(("LOST_WRITES_AT", n.to_string())),
            None => env.push(("LOST_WRITES_COUNT", count.to_str().unwrap().to_string())),
        }
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let server = device.serve_with_env(&env);
        std::fs::write(&arm, b"").unwrap();
        let url = format!("http://127.0.0.1:{}/v1/bundles", server.port);
        let answered = client(Duration::from_secs(120))
            .put(&url)
            .header("Authorization", format!("Bearer {TOKEN}"))
            .send(&body[..])
            .is_ok();
        // The new bundle's trial and good marks follow the answer.
        let status = format!("http://127.0.0.1:{}/v1/status", server.port);
        let deadline = Instant::now() + Duration::from_secs(10);
        while answered && Instant::now() < deadline {
            let good = client(Duration::from_secs(5))
                .get(&status)
                .call()
                .ok()
                .and_then(|mut r| r.body_mut().read_json::<serde_json::Value>().ok())
                .is_some_and(|v| v.to_string().contains("\"good\""));
            if good {
                std::thread::sleep(Duration::from_millis(300));
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        answered && alive(server.pid())
    };
    assert!(
        upload(None),
        "the upload with the shim failed or the server died"
    );
    let points = counted_points(&count);
    reinstall(&device, &b.versions[0]);
    run_points(
        "PUT /v1/bundles with unflushed writes lost",
        &device,
        &points,
        |p| !upload(Some(p.1)),
        |served_new| back_to_1(&device, &b, served_new),
    );
    later_install_serves_3(&device, &b);
}
