//! `kgbox healthcheck`: asks the running server whether it is ready, for a
//! container `HEALTHCHECK` or a script. Exit code 0 when `GET /readyz`
//! answers 200, 1 otherwise (not running, not ready, too slow).

use std::time::Duration;

use anyhow::{bail, Result};
use kgbox::Config;

/// `kgbox healthcheck`.
#[derive(Debug, clap::Args)]
pub struct HealthcheckArgs {
    /// The server's base URL; default: http:// (https:// with http.tls) and
    /// the config's http.listen (a wildcard address is asked on loopback).
    #[arg(long)]
    pub url: Option<String>,
    /// Give up after this many milliseconds.
    #[arg(long, default_value_t = 3000)]
    pub timeout_ms: u64,
}

pub fn run(cfg: &Config, args: &HealthcheckArgs) -> Result<()> {
    let base = match &args.url {
        Some(u) => u.trim_end_matches('/').to_string(),
        None if cfg.http.tls.is_some() => format!("https://{}", loopback(&cfg.http.listen)),
        None => format!("http://{}", loopback(&cfg.http.listen)),
    };
    let url = format!("{base}/readyz");
    // Not through a proxy from the environment: the server is this machine's.
    // Its certificate names the device, not the loopback address asked here,
    // and the answer is only "ready" or not: not verified (a server that
    // wants client certificates refuses this probe; give it --url through a
    // path that does not).
    let tls = ureq::tls::TlsConfig::builder()
        .disable_verification(args.url.is_none())
        .build();
    let agent = ureq::Agent::config_builder()
        .tls_config(tls)
        .timeout_global(Some(Duration::from_millis(args.timeout_ms)))
        .http_status_as_error(false)
        .proxy(None)
        .build()
        .new_agent();
    match agent.get(&url).call() {
        Ok(r) if r.status() == 200 => {
            println!("ready: {url}");
            Ok(())
        }
        Ok(r) => bail!("not ready: {url} answered {}", r.status().as_u16()),
        Err(e) => bail!("not ready: {url}: {e}"),
    }
}

/// `listen` with a wildcard host replaced by the loopback address.
fn loopback(listen: &str) -> String {
    if let Some(port) = listen.strip_prefix("0.0.0.0:") {
        format!("127.0.0.1:{port}")
    } else if let Some(port) = listen.strip_prefix("[::]:") {
        format!("[::1]:{port}")
    } else {
        listen.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::loopback;

    #[test]
    fn wildcards_are_asked_on_loopback() {
        assert_eq!(loopback("0.0.0.0:8080"), "127.0.0.1:8080");
        assert_eq!(loopback("[::]:9000"), "[::1]:9000");
        assert_eq!(loopback("127.0.0.1:8080"), "127.0.0.1:8080");
        assert_eq!(loopback("device.local:80"), "device.local:80");
    }
}
