//! `kgbox-pack rollout` against a real mosquitto and fifty real devices
//! (`kgbox serve` with MQTT and bundle push on, small bundles), one fleet
//! through five rollouts:
//!
//! 1. a good bundle in three waves (a canary of 5, then 50%, then 100%);
//! 2. a bundle that fails the golden questions of 10% of the devices (their
//!    own site questions ask about a film it dropped): the rollout stops at
//!    the canary and rolls the canary back;
//! 3. a good bundle (a delta where the base matches) while three devices of
//!    the second wave are killed, two of them coming back;
//! 4. a good bundle while the broker restarts in the middle of a wave;
//! 5. a good bundle while the operator's process is killed in the middle of
//!    a wave, then run again: it resumes from its state file.
//!
//! After each, every device runs a known version, none is half-updated,
//! the report says why for each device, and `kgbox-pack fleet status`
//! shows the fifty as they are.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use kgbox_testkit::mosquitto::Mosquitto;
use kgbox_testkit::*;

/// Devices in the fleet (the bench sets more or fewer).
fn fleet_size() -> usize {
    std::env::var("KGBOX_FLEET_DEVICES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50)
}

const BASE: &str = "Blade Runner\tdirected_by\tRidley Scott\n\
                    Blade Runner\tstarred_actors\tHarrison Ford\n\
                    Blade Runner\trelease_year\t1982\n\
                    Alien\tdirected_by\tRidley Scott\n\
                    Alien\trelease_year\t1979\n";
const WITNESS: &str = "Witness\tstarred_actors\tHarrison Ford\n\
                       Witness\tdirected_by\tPeter Weir\n";

/// A site question: answered while the bundle keeps Witness.
const SITE_GOLDEN: &str =
    "{\"query\": \"\\\"Witness\\\" -> starred_actors\", \"expect\": [\"Harrison Ford\"]}\n";

pub(crate) struct Fleet {
    pub work: tempfile::TempDir,
    pub keys: Keys,
    pub broker: Mosquitto,
    pub devices: Vec<(String, Device, Option<Server>)>,
}

fn id(i: usize) -> String {
    format!("dev-{i:02}")
}

impl Fleet {
    /// `n` devices in group `plant`, each serving `first`; every tenth
    /// (dev-03, dev-13, ...) has the site golden question.
    pub fn start(n: usize, first: &Path, keys: Keys, work: tempfile::TempDir) -> Fleet {
        let broker = Mosquitto::start();
        let golden = work.path().join("site-golden.jsonl");
        std::fs::write(&golden, SITE_GOLDEN).unwrap();
        let mut devices: Vec<(String, Device, Option<Server>)> = (0..n)
            .map(|i| {
                let site = if i % 10 == 3 {
                    format!("[health]\ngolden_file = {:?}\n", golden.display().to_string())
                } else {
                    String::new()
                };
                let device = Device::new(
                    &[&keys.public],
                    &format!(
                        "[mqtt]\nenabled = true\nbroker = {:?}\ndevice_id = {:?}\ngroup = \"plant\"\n\
                         keep_alive_s = 5\nreconnect_min_ms = 100\nreconnect_max_ms = 1000\n{site}",
                        broker.url(),
                        id(i)
                    ),
                );
                device.install_ok(first);
                (id(i), device, None)
            })
            .collect();
        std::thread::scope(|s| {
            for chunk in devices.chunks_mut(10) {
                s.spawn(move || {
                    for (_, d, server) in chunk {
                        *server = Some(d.serve());
                    }
                });
            }
        });
        let mut fleet = Fleet {
            work,
            keys,
            broker,
            devices,
        };
        fleet.wait_online(n);
        fleet
    }

    /// Waits until `n` devices report online, by `fleet status`.
    pub fn wait_online(&mut self, n: usize) -> BTreeMap<String, Value> {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let rows = self.fleet_status();
            let online = rows.values().filter(|r| r["online"] == true).count();
            if online >= n {
                return rows;
            }
            if Instant::now() >= deadline {
                panic!(
                    "only {online} of {n} devices online\n{}",
                    self.offline_report(&rows)
                );
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// For each device `fleet status` does not show online: its row, whether
    /// its process runs, and the end of its log; then the broker's log.
    fn offline_report(&mut self, rows: &BTreeMap<String, Value>) -> String {
        let mut out = String::new();
        for (id, _, server) in &mut self.devices {
            if rows.get(id.as_str()).is_some_and(|r| r["online"] == true) {
                continue;
            }
            let process = match server.as_mut() {
                None => "not started (killed by the test)".to_string(),
                Some(s) => match s.exited() {
                    Some(status) => format!("exited with {status}"),
                    None => "running".to_string(),
                },
            };
            let log = server.as_ref().map(Server::log).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(15).collect();
            out.push_str(&format!(
                "{id}: row {:?}, process {process}, log ends:\n{}\n",
                rows.get(id.as_str()),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ));
        }
        let log = self.broker.log();
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        out.push_str(&format!(
            "mosquitto log ends:\n{}",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ));
        out
    }

    /// `kgbox-pack fleet status --json`, by device.
    pub fn fleet_status(&self) -> BTreeMap<String, Value> {
        let n = self.devices.len().to_string();
        let o = run(Command::new(bin("kgbox-pack")).args([
            "fleet",
            "status",
            "--broker",
            &self.broker.url(),
            "--json",
            "--expect",
            &n,
            "--timeout",
            "10s",
        ]));
        assert!(o.status.success(), "{}", stderr(&o));
        let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
        v["devices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["device_id"].as_str().unwrap().to_string(), r.clone()))
            .collect()
    }

    /// Packs `films` at `version` from `tsv` text.
    pub fn bundle(&self, version: &str, tsv: &str) -> PathBuf {
        bundle(self.work.path(), &self.keys, version, tsv)
    }

    pub fn kill(&mut self, i: usize) {
        if let Some(mut s) = self.devices[i].2.take() {
            s.kill_now();
        }
    }

    pub fn restart(&mut self, i: usize) {
        if self.devices[i].2.is_none() {
            self.devices[i].2 = Some(self.devices[i].1.serve());
        }
    }

    /// Writes a plan for `bundle` (and a delta from `delta_from`).
    pub fn plan(
        &self,
        name: &str,
        bundle: &Path,
        delta_from: Option<&Path>,
        extra: &str,
    ) -> PathBuf {
        let delta = delta_from.map_or(String::new(), |old| {
            format!(
                "delta_from = {:?}\nkey = {:?}\n",
                old.display().to_string(),
                self.keys.secret.display().to_string()
            )
        });
        let p = self.work.path().join(format!("{name}.toml"));
        std::fs::write(
            &p,
            format!(
                "bundle = {:?}\n{delta}\
                 [broker]\nurl = {:?}\n\
                 [targets]\ngroup = \"plant\"\nexpect = {}\ndiscover_timeout = \"60s\"\n\
                 [waves]\ncanary = 5\npercent = [50, 100]\nwait = \"1s\"\npush_timeout = \"20s\"\nmax_parallel = 16\n\
                 [criteria]\nmax_error_rate = 0.05\nmax_p99_ms = 5000\ncheck_timeout = \"30s\"\n\
                 [[criteria.golden]]\nquery = '\"Blade Runner\" -> directed_by'\nexpect = [\"Ridley Scott\"]\n\
                 [abort]\nmax_failed_percent = 5\nmax_unreachable_percent = 20\n{extra}",
                bundle.display().to_string(),
                self.broker.url(),
                self.devices.len()
            ),
        )
        .unwrap();
        p
    }
}

pub(crate) fn bundle(dir: &Path, keys: &Keys, version: &str, tsv: &str) -> PathBuf {
    let t = dir.join(format!("films-{version}.tsv"));
    std::fs::write(&t, tsv).unwrap();
    let out = dir.join(format!("films-{version}.kgb"));
    pack(&t, "films", version, keys, &out, &[]);
    out
}

/// A running `kgbox-pack rollout`, its stderr lines on a channel.
pub(crate) struct Rollout {
    child: Child,
    lines: mpsc::Receiver<String>,
    pub log: String,
}

impl Rollout {
    pub fn start(plan: &Path) -> Rollout {
        let mut child = Command::new(bin("kgbox-pack"))
            .args(["rollout", "--json"])
            .arg(plan)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, lines) = mpsc::channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Rollout {
            child,
            lines,
            log: String::new(),
        }
    }

    /// Waits for a line containing `text`.
    pub fn wait_line(&mut self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(180);
        while Instant::now() < deadline {
            if let Ok(line) = self.lines.recv_timeout(Duration::from_millis(200)) {
                self.log.push_str(&line);
                self.log.push('\n');
                if line.contains(text) {
                    return;
                }
            }
        }
        panic!("no line with {text:?} from the rollout: {}", self.log);
    }

    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for the end: (succeeded, the JSON report, its stderr).
    pub fn finish(mut self) -> (bool, Value, String) {
        let mut out = String::new();
        std::io::Read::read_to_string(self.child.stdout.as_mut().unwrap(), &mut out).unwrap();
        let status = self.child.wait().unwrap();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(500)) {
            self.log.push_str(&line);
            self.log.push('\n');
        }
        let report = serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("no JSON report ({e}): {out}\n{}", self.log));
        eprintln!("{}", self.log);
        (status.success(), report, self.log)
    }
}

/// Each device's report row, by id.
fn rows(report: &Value) -> BTreeMap<String, Value> {
    report["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["device_id"].as_str().unwrap().to_string(), d.clone()))
        .collect()
}

/// Every device ended on a known version, none pending or half-way, each
/// with a reason unless it was updated; the fleet view agrees with the
/// report for every online device.
fn assert_known(fleet: &Fleet, report: &Value, log: &str) {
    let status = fleet.fleet_status();
    for (id, d) in rows(report) {
        let outcome = d["outcome"].as_str().unwrap();
        assert!(
            !matches!(outcome, "pending" | "installed"),
            "{id} left {outcome}: {d}\n{log}"
        );
        if !matches!(outcome, "updated" | "already_current") {
            assert!(
                d["reason"].is_string(),
                "{id}: {outcome} without a reason: {d}"
            );
        }
        let ended = d["ended_on"]["version"].as_str();
        assert!(ended.is_some(), "{id}: no known version: {d}");
        let row = &status[&id];
        if row["online"] == true {
            assert_eq!(
                row["version"].as_str(),
                ended,
                "{id}: fleet {row} vs report {d}\n{log}"
            );
            assert_eq!(row["health"], "good", "{id}: {row}");
        }
    }
}

fn count(report: &Value, outcome: &str) -> u64 {
    report["outcomes"][outcome].as_u64().unwrap_or(0)
}

#[test]
fn rollouts_across_fifty_devices_stop_resume_and_survive() {
    let n = fleet_size();
    let work = tempfile::tempdir().unwrap();
    let keys = Keys::new(work.path(), "fleet", 11);
    let v100 = bundle(work.path(), &keys, "1.0.0", &format!("{BASE}{WITNESS}"));
    let mut fleet = Fleet::start(n, &v100, keys, work);

    // 1. A good bundle, in three waves, the whole bundle to each.
    let v110 = fleet.bundle(
        "1.1.0",
        &format!("{BASE}{WITNESS}Alien\tstarred_actors\tSigourney Weaver\n"),
    );
    let plan = fleet.plan("good", &v110, None, "");
    let (ok, report, log) = Rollout::start(&plan).finish();
    assert!(ok, "{log}");
    assert_eq!(report["outcome"], "completed", "{report}");
    assert_eq!(count(&report, "updated"), n as u64, "{report}");
    assert_eq!(report["waves"].as_array().unwrap().len(), 3, "{report}");
    assert_eq!(report["sent_full"], n, "{report}");
    for (id, d) in rows(&report) {
        assert!(
            d["golden"].as_str().unwrap().contains("answered"),
            "{id}: {d}"
        );
        assert!(d["bytes"].as_u64().unwrap() > 0, "{id}: {d}");
    }
    assert_known(&fleet, &report, &log);
    eprintln!(
        "good rollout (full bundles): {} s, {} bytes",
        report["seconds"], report["bytes"]
    );

    // 2. A bundle without Witness: dev-03's site question fails in the canary.
    let bad = fleet.bundle(
        "1.2.0",
        &format!("{BASE}Alien\tstarred_actors\tSigourney Weaver\n"),
    );
    let plan = fleet.plan("bad", &bad, Some(&v110), "");
    let (ok, report, log) = Rollout::start(&plan).finish();
    assert!(!ok, "an aborted rollout fails: {log}");
    assert_eq!(report["outcome"], "aborted", "{report}");
    let r = rows(&report);
    let d3 = &r["dev-03"];
    assert_eq!(d3["outcome"], "rolled_back", "{d3}");
    assert!(d3["reason"].as_str().unwrap().contains("Witness"), "{d3}");
    for i in [0, 1, 2, 4] {
        let d = &r[&id(i)];
        assert_eq!(d["outcome"], "rolled_back", "{d}");
        assert!(d["reason"].as_str().unwrap().contains("stopped"), "{d}");
    }
    assert_eq!(count(&report, "not_touched"), n as u64 - 5, "{report}");
    for d in r.values() {
        assert_eq!(d["ended_on"]["version"], "1.1.0", "{d}");
    }
    assert_known(&fleet, &report, &log);

    // 3. Devices of the second wave die during it; two come back.
    let v121 = fleet.bundle(
        "1.2.1",
        &format!("{BASE}{WITNESS}Alien\tstarred_actors\tSigourney Weaver\nGladiator\tdirected_by\tRidley Scott\n"),
    );
    let plan = fleet.plan("offline", &v121, Some(&v110), "");
    let mut rollout = Rollout::start(&plan);
    rollout.wait_line("wave 2/3:");
    for i in [5, 6, 7] {
        fleet.kill(i);
    }
    std::thread::sleep(Duration::from_secs(3));
    fleet.restart(5);
    fleet.restart(6);
    let (ok, report, log) = rollout.finish();
    assert!(ok, "{log}");
    let r = rows(&report);
    assert!(report["sent_delta"].as_u64().unwrap() > 0, "{report}");
    for i in [5, 6] {
        assert_eq!(r[&id(i)]["outcome"], "updated", "{}\n{log}", r[&id(i)]);
    }
    let d7 = &r["dev-07"];
    assert_eq!(d7["outcome"], "unreachable", "{d7}");
    assert_eq!(count(&report, "updated"), n as u64 - 1, "{report}");
    assert_known(&fleet, &report, &log);
    let status = fleet.fleet_status();
    assert_eq!(status["dev-07"]["online"], false, "{}", status["dev-07"]);
    // Back online, it serves a version it had, checked good: never half-updated.
    fleet.restart(7);
    let status = fleet.wait_online(n);
    let v = status["dev-07"]["version"].as_str().unwrap();
    assert!(v == "1.1.0" || v == "1.2.1", "{}", status["dev-07"]);
    assert_eq!(status["dev-07"]["health"], "good");

    // 4. The broker restarts during the second wave.
    let v130 = fleet.bundle(
        "1.3.0",
        &format!("{BASE}{WITNESS}Alien\tstarred_actors\tSigourney Weaver\nGladiator\tdirected_by\tRidley Scott\nGladiator\trelease_year\t2000\n"),
    );
    let plan = fleet.plan("broker", &v130, Some(&v121), "");
    let mut rollout = Rollout::start(&plan);
    rollout.wait_line("wave 2/3:");
    fleet.broker.stop();
    std::thread::sleep(Duration::from_secs(2));
    fleet.broker.restart();
    let (ok, report, log) = rollout.finish();
    assert!(ok, "{log}");
    assert_eq!(count(&report, "updated"), n as u64, "{report}\n{log}");
    assert_known(&fleet, &report, &log);

    // 5. The operator's process dies during the second wave; run again.
    let v140 = fleet.bundle(
        "1.4.0",
        &format!("{BASE}{WITNESS}Alien\tstarred_actors\tSigourney Weaver\nGladiator\tdirected_by\tRidley Scott\nGladiator\trelease_year\t2000\nThelma & Louise\tdirected_by\tRidley Scott\n"),
    );
    let plan = fleet.plan("resume", &v140, Some(&v130), "");
    let mut rollout = Rollout::start(&plan);
    rollout.wait_line("wave 2/3:");
    rollout.wait_line(": delta");
    rollout.kill();
    let state: Value =
        serde_json::from_slice(&std::fs::read(plan.with_file_name("resume.state.json")).unwrap())
            .unwrap();
    assert_eq!(state["finished"], false, "{state}");
    let (ok, report, log) = Rollout::start(&plan).finish();
    assert!(ok, "{log}");
    assert!(log.contains("resuming rollout"), "{log}");
    assert_eq!(count(&report, "updated"), n as u64, "{report}\n{log}");
    assert_known(&fleet, &report, &log);
    let status = fleet.fleet_status();
    assert!(
        status
            .values()
            .all(|r| r["version"] == "1.4.0" && r["online"] == true),
        "{status:?}"
    );
}
