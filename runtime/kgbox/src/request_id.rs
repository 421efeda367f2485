//! Request ids: one per HTTP or MQTT request, in its access-log line and in
//! its reply (`x-request-id` header, MQTT `request_id` field), so that an
//! operator can find the log line of a reply a client got.
//!
//! A client may bring its own id (`x-request-id`); it is kept when it is
//! sane (see [`RequestId::from_client`]), else a new one is made.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The HTTP header that carries a request id, both ways.
pub const HEADER: &str = "x-request-id";

/// Longest id taken from a client, bytes.
pub const MAX_LEN: usize = 128;

/// A request id: 1 to [`MAX_LEN`] visible ASCII characters (`!` to `~`),
/// so that it goes into a header, a log line or JSON as it is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RequestId(String);

impl RequestId {
    /// A client's id, when it is sane: 1 to [`MAX_LEN`] bytes, each visible
    /// ASCII (no spaces, no control characters, nothing beyond ASCII).
    pub fn from_client(value: &[u8]) -> Option<RequestId> {
        let sane = !value.is_empty()
            && value.len() <= MAX_LEN
            && value.iter().all(|b| b.is_ascii_graphic());
        if !sane {
            return None;
        }
        std::str::from_utf8(value)
            .ok()
            .map(|s| RequestId(s.to_string()))
    }

    /// The client's id when it is sane, else a new one.
    pub fn from_client_or_new(value: Option<&[u8]>) -> RequestId {
        value
            .and_then(RequestId::from_client)
            .unwrap_or_else(RequestId::generate)
    }

    /// A new id: 128 random bits as 32 lowercase hex digits. Should the
    /// system have no randomness to give, the start time, process id and a
    /// counter instead (unique on this device all the same).
    pub fn generate() -> RequestId {
        let mut bytes = [0u8; 16];
        if getrandom::fill(&mut bytes).is_err() {
            bytes = fallback_bytes();
        }
        RequestId(hex::encode(bytes))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Clock, process id and a counter: 16 bytes that never repeat in this process.
fn fallback_bytes() -> [u8; 16] {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let high = nanos ^ (u64::from(std::process::id()) << 32);
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&high.to_be_bytes());
    out[8..].copy_from_slice(&n.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn sane_client_ids_are_kept() {
        for id in [
            "a",
            "req-42",
            "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
            "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
        ] {
            let got = RequestId::from_client(id.as_bytes());
            assert_eq!(got.as_ref().map(RequestId::as_str), Some(id), "{id:?}");
        }
        let longest = "x".repeat(MAX_LEN);
        assert!(RequestId::from_client(longest.as_bytes()).is_some());
    }

    #[test]
    fn insane_client_ids_are_refused() {
        let too_long = "x".repeat(MAX_LEN + 1);
        let cases: [&[u8]; 10] = [
            b"",
            too_long.as_bytes(),
            b"has space",
            b"tab\there",
            b"new\nline",
            b"\x1b[31mred\x1b[0m",
            b"nul\0",
            b"del\x7f",
            "caf\u{e9}".as_bytes(),
            &[0xff, 0xfe],
        ];
        for value in cases {
            assert_eq!(RequestId::from_client(value), None, "{value:?}");
        }
    }

    #[test]
    fn a_refused_id_is_replaced_by_a_new_one() {
        let kept = RequestId::from_client_or_new(Some(b"mine"));
        assert_eq!(kept.as_str(), "mine");
        for value in [None, Some(&b"bad id"[..]), Some(&b""[..])] {
            let id = RequestId::from_client_or_new(value);
            assert_eq!(id.as_str().len(), 32, "{id}");
        }
    }

    #[test]
    fn generated_ids_are_128_bit_hex_and_distinct() {
        let ids: HashSet<String> = (0..1000)
            .map(|_| RequestId::generate().as_str().to_string())
            .collect();
        assert_eq!(ids.len(), 1000);
        for id in &ids {
            assert_eq!(id.len(), 32, "{id}");
            assert!(
                id.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
                "{id}"
            );
            // A generated id is itself a sane client id (it can be passed on).
            assert!(RequestId::from_client(id.as_bytes()).is_some());
        }
    }

    #[test]
    fn fallback_ids_are_distinct() {
        let (a, b) = (fallback_bytes(), fallback_bytes());
        assert_ne!(a, b);
    }
}
