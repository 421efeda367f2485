//! Child processes: spawning `kgbox` so that it cannot outlive us, waiting
//! with a time limit, stopping servers (SIGTERM, then SIGKILL), and reading
//! from `/proc` a process's resident memory, the CPU time used by a server,
//! by this process and by the whole machine ([`Cpu`]), and the load average.

use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

/// How long a stopped server gets between SIGTERM and SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(5);

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Turns SIGINT, SIGTERM and SIGHUP into a flag that the wait loops check
/// ([`check_interrupted`]), so that an interrupted run still stops its
/// servers and removes its temporary files on the way out.
///
/// (Children are not given `PR_SET_PDEATHSIG`: that needs a `pre_exec`
/// hook, which makes `std` fork the whole benchmark process instead of
/// using `posix_spawn`, and that fork alone cost 2 to 10 ms, skewing the
/// start-to-ready figure.)
pub fn catch_interrupts() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic, which is
        // async-signal-safe; signal(2) has no other preconditions.
        unsafe {
            libc::signal(sig, handler);
        }
    }
}

/// Fails once SIGINT, SIGTERM or SIGHUP has arrived.
pub fn check_interrupted() -> Result<()> {
    if INTERRUPTED.load(Ordering::SeqCst) {
        bail!("interrupted");
    }
    Ok(())
}

/// Waits for `child` at most `limit`; kills it (and fails) past that.
/// Polls every millisecond, so the measured exit time is within ~1 ms.
pub fn wait_with_limit(child: &mut Child, limit: Duration) -> Result<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "process {} still running after {limit:?}; killed",
                child.id()
            );
        }
        std::thread::sleep(Duration::from_micros(500));
    }
}

/// Runs `cmd` to completion within `limit`, capturing its output.
/// Returns the output and the time from spawn to exit.
pub fn run_timed(cmd: &mut Command, limit: Duration) -> Result<(Output, Duration)> {
    let dir = tempfile::tempdir()?;
    let out_path = dir.path().join("stdout");
    let err_path = dir.path().join("stderr");
    let stdout = std::fs::File::create(&out_path)?;
    let stderr = std::fs::File::create(&err_path)?;
    cmd.stdin(Stdio::null()).stdout(stdout).stderr(stderr);
    let t = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    let status = wait_with_limit(&mut child, limit)?;
    let elapsed = t.elapsed();
    let output = Output {
        status,
        stdout: std::fs::read(&out_path)?,
        stderr: std::fs::read(&err_path)?,
    };
    Ok((output, elapsed))
}

/// A running `kgbox serve`; stopped (SIGTERM, then SIGKILL) when dropped.
pub struct Server {
    child: Option<Child>,
    log: std::path::PathBuf,
}

impl Server {
    /// Spawns `cmd` with its stdout and stderr going to `log`.
    pub fn spawn(cmd: &mut Command, log: &Path) -> Result<Server> {
        let file = std::fs::File::create(log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        let file2 = file.try_clone()?;
        cmd.stdin(Stdio::null()).stdout(file).stderr(file2);
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {cmd:?}"))?;
        Ok(Server {
            child: Some(child),
            log: log.to_path_buf(),
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).unwrap_or(0)
    }

    /// `Some(status)` when the server has already exited.
    pub fn exited(&mut self) -> Result<Option<ExitStatus>> {
        match &mut self.child {
            Some(c) => Ok(c.try_wait()?),
            None => Ok(None),
        }
    }

    /// The server's log so far (for error messages), at most the last 4 KiB.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let start = text.len().saturating_sub(4096);
        let start = (start..text.len())
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(text.len());
        text[start..].to_string()
    }

    /// SIGTERM, wait up to [`TERM_GRACE`], then SIGKILL. Returns the exit
    /// status and whether SIGTERM alone was enough.
    pub fn stop(&mut self) -> Result<(ExitStatus, bool)> {
        let mut child = self
            .child
            .take()
            .ok_or_else(|| anyhow!("server already stopped"))?;
        if let Some(status) = child.try_wait()? {
            return Ok((status, true));
        }
        let pid = libc::pid_t::try_from(child.id()).context("pid out of range")?;
        // SAFETY: kill(2) has no memory-safety preconditions; `pid` is our
        // own child, not yet reaped, so it cannot have been reused.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
        let deadline = Instant::now() + TERM_GRACE;
        loop {
            if let Some(status) = child.try_wait()? {
                return Ok((status, true));
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                return Ok((child.wait()?, false));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.child.is_some() {
            let _ = self.stop();
        }
    }
}

/// Resident memory of a process, from `/proc/<pid>/status` (bytes).
#[derive(Debug, Clone, Copy, Default)]
pub struct Rss {
    /// VmRSS: all resident pages.
    pub total: u64,
    /// RssAnon: heap, stacks and other private memory.
    pub anon: u64,
    /// RssFile: resident file-backed pages (the binary, libraries, the mapped image).
    pub file: u64,
    /// VmHWM: peak VmRSS so far.
    pub peak: u64,
}

pub fn rss(pid: u32) -> Result<Rss> {
    let path = format!("/proc/{pid}/status");
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    let field = |name: &str| -> Result<u64> {
        let line = text
            .lines()
            .find(|l| l.starts_with(name) && l[name.len()..].starts_with(':'))
            .ok_or_else(|| anyhow!("{path} has no {name}"))?;
        let kb: u64 = line[name.len() + 1..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .with_context(|| format!("{path}: cannot parse {line:?}"))?;
        Ok(kb * 1024)
    };
    Ok(Rss {
        total: field("VmRSS")?,
        anon: field("RssAnon")?,
        file: field("RssFile")?,
        peak: field("VmHWM")?,
    })
}

/// CPU seconds used so far (or, from [`Cpu::since`], over a span): by a
/// server, by this process (all threads) and by the whole machine, busy and
/// in all; `None` where `/proc` could not be read.
#[derive(Debug, Clone, Copy)]
pub struct Cpu {
    pub server: Option<f64>,
    pub own: Option<f64>,
    pub machine_busy: Option<f64>,
    pub machine_total: Option<f64>,
}

impl Cpu {
    /// The counters now; `server` is the server's pid.
    pub fn now(server: Option<u32>) -> Cpu {
        let machine = machine_cpu_s();
        Cpu {
            server: server.and_then(|p| process_cpu_s(&p.to_string())),
            own: process_cpu_s("self"),
            machine_busy: machine.map(|m| m.0),
            machine_total: machine.map(|m| m.1),
        }
    }

    /// What was used from `before` to `self`.
    pub fn since(&self, before: &Cpu) -> Cpu {
        let diff = |a: Option<f64>, b: Option<f64>| Some(b? - a?);
        Cpu {
            server: diff(before.server, self.server),
            own: diff(before.own, self.own),
            machine_busy: diff(before.machine_busy, self.machine_busy),
            machine_total: diff(before.machine_total, self.machine_total),
        }
    }
}

/// CPU time of a process (all threads), from `/proc/<pid>/stat`, seconds.
fn process_cpu_s(pid: &str) -> Option<f64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(stat_cpu_ticks(&text)? as f64 / clock_ticks())
}

/// `utime + stime` of a `/proc/<pid>/stat` line, in clock ticks.
fn stat_cpu_ticks(stat: &str) -> Option<u64> {
    // Fields after the command name (which may hold spaces) start at field 3.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// Machine-wide (busy, total) CPU seconds from `/proc/stat`.
fn machine_cpu_s() -> Option<(f64, f64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().next()?.strip_prefix("cpu ")?;
    let v: Vec<u64> = line
        .split_whitespace()
        .take(8)
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let total: u64 = v.iter().sum();
    let idle = v.get(3)? + v.get(4)?;
    let hz = clock_ticks();
    Some(((total - idle) as f64 / hz, total as f64 / hz))
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf(3) only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as f64
    } else {
        100.0
    }
}

/// The 1-, 5- and 15-minute load averages, as `/proc/loadavg` gives them.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// The `kgbox` binary: `explicit` when given, else the one next to this
/// executable (`tool` names the caller in the error).
pub fn find_kgbox(explicit: Option<std::path::PathBuf>, tool: &str) -> Result<std::path::PathBuf> {
    if let Some(p) = explicit {
        if !p.is_file() {
            bail!("--kgbox {}: no such file", p.display());
        }
        return Ok(p);
    }
    let exe = std::env::current_exe().context("cannot find this executable's path")?;
    let dir = exe
        .parent()
        .context("this executable has no parent directory")?;
    let kgbox = dir.join("kgbox");
    if !kgbox.is_file() {
        anyhow::bail!(
            "the `kgbox` binary is not in {} (it must sit next to {tool}); \
             run `cargo build --release -p kgbox` first (same profile as {tool})",
            dir.display()
        );
    }
    Ok(kgbox)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ticks_are_read_after_the_command_name() {
        // A command name with spaces and parentheses; utime 250, stime 50.
        let stat = "4242 (kgbox (x) y) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 50 0 0 20 0 9";
        assert_eq!(stat_cpu_ticks(stat), Some(300));
        assert_eq!(stat_cpu_ticks("4242 (kgbox) S 1 2"), None);
    }

    #[test]
    fn cpu_over_a_span_is_the_difference() {
        let before = Cpu::now(Some(std::process::id()));
        let after = Cpu::now(Some(std::process::id()));
        let used = after.since(&before);
        for x in [used.server, used.own, used.machine_busy, used.machine_total] {
            assert!(x.is_some_and(|s| s >= 0.0), "{used:?}");
        }
        assert!(Cpu::now(None).since(&before).server.is_none());
        let (Some(busy), Some(total)) = (after.machine_busy, after.machine_total) else {
            panic!("no machine-wide CPU time: {after:?}");
        };
        assert!(busy <= total, "{after:?}");
    }
}
