//! One-shot HTTP requests and `/readyz` polling, over the keep-alive
//! client of [`crate::keepalive`] (hyper): no HTTP is parsed here.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use crate::keepalive::{self, Client};
use crate::proc::Server;

/// Responses larger than this are refused (the benchmarks only need the
/// status and small bodies).
const MAX_RESPONSE: usize = 8 << 20;

/// A port that was free a moment ago on 127.0.0.1.
pub fn free_port() -> Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0").context("cannot find a free port")?;
    Ok(l.local_addr()?.port())
}

/// One `GET` on a fresh connection, bounded by `timeout` as a whole;
/// returns the status and the (de-chunked) body.
pub fn get(addr: SocketAddr, path: &str, timeout: Duration) -> io::Result<(u16, Vec<u8>)> {
    let mut client = Client::new(addr, timeout).body_limit(MAX_RESPONSE);
    let r = client.exchange(&keepalive::get(&addr.to_string(), path))?;
    Ok((r.status, client.take_body()))
}

/// What waiting for readiness saw.
pub struct Ready {
    /// When the first `200` from `/readyz` had been read.
    pub at: Instant,
    /// When the first TCP connect succeeded (the listener was bound).
    pub first_connect: Instant,
    /// Polls: requests sent and connects refused.
    pub attempts: u32,
}

/// Polls `GET /readyz` in a tight loop (one keep-alive connection,
/// reopened after an error; ~0.2 ms between tries) until the first `200`,
/// the server exits, or `limit` passes.
pub fn wait_ready(addr: SocketAddr, server: &mut Server, limit: Duration) -> Result<Ready> {
    let deadline = Instant::now() + limit;
    let mut attempts = 0u32;
    let mut client = Client::new(addr, Duration::from_secs(2)).body_limit(MAX_RESPONSE);
    let readyz = keepalive::get(&addr.to_string(), "/readyz");
    loop {
        attempts += 1;
        if let Ok(r) = client.exchange(&readyz) {
            if let (200, Some(connected)) = (r.status, client.first_connect) {
                return Ok(Ready {
                    at: Instant::now(),
                    first_connect: connected,
                    attempts,
                });
            }
        }
        crate::proc::check_interrupted()?;
        if let Some(status) = server.exited()? {
            bail!(
                "kgbox serve exited ({status}) before it was ready; its log:\n{}",
                server.log_tail()
            );
        }
        if Instant::now() >= deadline {
            bail!(
                "kgbox serve was not ready within {limit:?} ({attempts} attempts); its log:\n{}",
                server.log_tail()
            );
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Everything but RFC 3986's unreserved bytes (`A-Z a-z 0-9 - . _ ~`).
const NOT_UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Percent-encodes a path segment (everything but RFC 3986 unreserved bytes).
pub fn encode_segment(s: &str) -> String {
    utf8_percent_encode(s, NOT_UNRESERVED).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding() {
        assert_eq!(encode_segment("The Prowler"), "The%20Prowler");
        assert_eq!(encode_segment("a/b?c#d"), "a%2Fb%3Fc%23d");
        assert_eq!(encode_segment("Amélie"), "Am%C3%A9lie");
    }
}
