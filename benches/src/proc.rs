//! Child processes: spawning `kgbox` so that it cannot outlive us, waiting
//! with a time limit, stopping servers (SIGTERM, then SIGKILL), and reading
//! a process's resident memory from `/proc`.

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
