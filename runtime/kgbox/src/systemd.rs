//! systemd service notifications for `Type=notify` units (sd_notify(3)):
//! `READY=1` once the listener is bound and the bundle loaded, `STOPPING=1`
//! at shutdown, and `WATCHDOG=1` at half of `WatchdogSec` while the async
//! runtime runs, so a stalled or stopped process stops pinging and systemd
//! restarts it. Outside systemd (no `NOTIFY_SOCKET`) every call does nothing.

use std::time::Duration;

use sd_notify::NotifyState;

/// Tells systemd the service is ready, with a status line.
pub fn ready(status: &str) {
    send(&[NotifyState::Ready, NotifyState::Status(status)]);
}

/// Tells systemd the service is stopping.
pub fn stopping() {
    send(&[NotifyState::Stopping, NotifyState::Status("shutting down")]);
}

/// The watchdog ping interval (half of `WatchdogSec`), when the service
/// manager asked for pings: `WATCHDOG_USEC` set and `WATCHDOG_PID` unset or
/// this process, as sd_watchdog_enabled(3) reads them.
pub fn watchdog_interval() -> Option<Duration> {
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.parse().ok()?;
    let for_us = match std::env::var("WATCHDOG_PID") {
        Ok(pid) => pid.parse::<u32>().ok() == Some(std::process::id()),
        Err(_) => true,
    };
    (for_us && usec > 0).then(|| Duration::from_micros(usec / 2))
}

/// Pings the watchdog every `every`, forever. Runs as a task of the
/// serving runtime: when the runtime stalls, the pings stop.
pub async fn watchdog(every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        send(&[NotifyState::Watchdog]);
    }
}

fn send(state: &[NotifyState<'_>]) {
    if let Err(e) = sd_notify::notify(false, state) {
        tracing::warn!(error = %e, "cannot notify systemd (NOTIFY_SOCKET)");
    }
}
