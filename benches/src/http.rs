//! A minimal HTTP/1.1 client over `std::net`: one request per connection
//! (`Connection: close`), bounded by time and by response size.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use crate::proc::Server;

/// Responses larger than this are cut off (the benchmark only needs the
/// status and small bodies).
const MAX_RESPONSE: u64 = 8 << 20;

/// A port that was free a moment ago on 127.0.0.1.
pub fn free_port() -> Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0").context("cannot find a free port")?;
    Ok(l.local_addr()?.port())
}

/// Sends `GET path` on a connected stream and reads the whole response.
fn exchange(mut s: TcpStream, path: &str, timeout: Duration) -> io::Result<(u16, Vec<u8>)> {
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").as_bytes(),
    )?;
    let mut buf = Vec::with_capacity(1024);
    s.take(MAX_RESPONSE).read_to_end(&mut buf)?;
    let status = parse_status(&buf).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "not an HTTP response: {:?}",
                String::from_utf8_lossy(&buf[..buf.len().min(64)])
            ),
        )
    })?;
    let body = match buf.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(i) => buf[i + 4..].to_vec(),
        None => Vec::new(),
    };
    Ok((status, body))
}

fn parse_status(buf: &[u8]) -> Option<u16> {
    let line = buf.split(|&b| b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut parts = line.split_whitespace();
    if !parts.next()?.starts_with("HTTP/1.") {
        return None;
    }
    parts.next()?.parse().ok()
}

/// One `GET`; returns the status and the body (chunked bodies are left as sent).
pub fn get(addr: SocketAddr, path: &str, timeout: Duration) -> io::Result<(u16, Vec<u8>)> {
    let s = TcpStream::connect_timeout(&addr, timeout)?;
    exchange(s, path, timeout)
}

/// What waiting for readiness saw.
pub struct Ready {
    /// When the first `200` from `/readyz` had been read.
    pub at: Instant,
    /// When the first TCP connect succeeded (the listener was bound).
    pub first_connect: Instant,
    /// Connection attempts, refused ones included.
    pub attempts: u32,
}

/// Polls `GET /readyz` in a tight loop (raw connect + request, ~0.2 ms
/// between tries) until the first `200`, the server exits, or `limit` passes.
pub fn wait_ready(addr: SocketAddr, server: &mut Server, limit: Duration) -> Result<Ready> {
    let deadline = Instant::now() + limit;
    let mut attempts = 0u32;
    let mut first_connect = None;
    loop {
        attempts += 1;
        if let Ok(s) = TcpStream::connect(addr) {
            let connected = *first_connect.get_or_insert_with(Instant::now);
            if let Ok((200, _)) = exchange(s, "/readyz", Duration::from_secs(2)) {
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
    fn status_line() {
        assert_eq!(parse_status(b"HTTP/1.1 200 OK\r\n\r\n"), Some(200));
        assert_eq!(parse_status(b"HTTP/1.1 404 Not Found\r\n"), Some(404));
        assert_eq!(parse_status(b"garbage"), None);
        assert_eq!(parse_status(b""), None);
    }

    #[test]
    fn encoding() {
        assert_eq!(encode_segment("The Prowler"), "The%20Prowler");
        assert_eq!(encode_segment("a/b?c#d"), "a%2Fb%3Fc%23d");
        assert_eq!(encode_segment("Amélie"), "Am%C3%A9lie");
    }
}
