//! The LLM privacy policy: where a model may run (`llm.mode`) and what may be
//! sent to it.
//!
//! - `off`: no LLM; planners and the arbitrator that need one are refused.
//! - `local`: the endpoint must be on this machine: a loopback address
//!   (`127.0.0.0/8`, `::1`, `localhost`) or a unix socket (`unix:PATH`), or
//!   the in-process model. Anything else is refused at startup.
//! - `remote`: any endpoint. Only the question, entity and relation names
//!   (with relation descriptions) and candidate answers' names and scores
//!   are sent; triples and provenance paths only with `share_context = true`.

use std::net::IpAddr;
use std::path::PathBuf;

use percent_encoding::percent_decode_str;
use serde::{Deserialize, Serialize};
use url::{Host, Url};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LlmMode {
    #[default]
    Off,
    Local,
    Remote,
}

impl std::fmt::Display for LlmMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LlmMode::Off => "off",
            LlmMode::Local => "local",
            LlmMode::Remote => "remote",
        })
    }
}

/// Where chat requests go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// `http(s)://host[:port]/base`: requests go to `base + /chat/completions`.
    Http { url: String, host: String },
    /// `unix:PATH`: HTTP over a unix socket, to `/v1/chat/completions`.
    Unix { socket: PathBuf },
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Http { url, .. } => f.write_str(url),
            Endpoint::Unix { socket } => write!(f, "unix:{}", socket.display()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error(
        "llm.endpoint {0:?} is not a URL (http://host:port/v1, https://... or unix:/path/to.sock)"
    )]
    BadUrl(String),
    #[error("llm.mode = \"local\" allows only loopback addresses or unix sockets; {endpoint:?} is on host {host:?} (use llm.mode = \"remote\" to send questions off this machine)")]
    NotLocal { endpoint: String, host: String },
    #[error("llm.mode = \"off\": no LLM may be called")]
    Off,
}

/// Parses an endpoint string with the `url` crate. The HTTP client reads
/// URLs with another parser (`http::Uri`, ureq's) and refuses to send
/// where that one reads another host (`openai::request_uri`), so the host
/// checked here is the host called.
pub fn parse_endpoint(endpoint: &str) -> Result<Endpoint, PolicyError> {
    let bad = || PolicyError::BadUrl(endpoint.to_string());
    let url = Url::parse(endpoint).map_err(|_| bad())?;
    match url.scheme() {
        "unix" => {
            // `unix:/path` or `unix:///path`: no host, an absolute path.
            if url.host_str().is_some_and(|h| !h.is_empty())
                || url.query().is_some()
                || url.fragment().is_some()
                || !url.path().starts_with('/')
            {
                return Err(bad());
            }
            let path = percent_decode_str(url.path())
                .decode_utf8()
                .map_err(|_| bad())?;
            Ok(Endpoint::Unix {
                socket: PathBuf::from(path.as_ref()),
            })
        }
        "http" | "https" => {
            let host = match url.host() {
                Some(Host::Domain(d)) => d.to_ascii_lowercase(),
                Some(Host::Ipv4(a)) => a.to_string(),
                Some(Host::Ipv6(a)) => a.to_string(),
                None => String::new(),
            };
            if host.is_empty() {
                return Err(bad());
            }
            Ok(Endpoint::Http {
                url: endpoint.trim_end_matches('/').to_string(),
                host,
            })
        }
        _ => Err(bad()),
    }
}

/// Whether a host name or address is this machine's loopback.
pub fn is_loopback(host: &str) -> bool {
    if host == "localhost" || host.ends_with(".localhost") {
        return true;
    }
    host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Checks `endpoint` against `mode`; the parsed endpoint when allowed.
pub fn check_endpoint(mode: LlmMode, endpoint: &str) -> Result<Endpoint, PolicyError> {
    if mode == LlmMode::Off {
        return Err(PolicyError::Off);
    }
    let parsed = parse_endpoint(endpoint)?;
    if mode == LlmMode::Local {
        if let Endpoint::Http { host, .. } = &parsed {
            if !is_loopback(host) {
                return Err(PolicyError::NotLocal {
                    endpoint: endpoint.to_string(),
                    host: host.clone(),
                });
            }
        }
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_mode_allows_loopback_and_unix_only() {
        for ok in [
            "http://127.0.0.1:8080/v1",
            "http://localhost:11434/v1",
            "http://[::1]:8000/v1",
            "http://127.8.9.10/v1",
            "unix:/run/llm.sock",
            "unix:///run/llm.sock",
        ] {
            assert!(check_endpoint(LlmMode::Local, ok).is_ok(), "{ok}");
        }
        // What the HTTP client (also the `url` crate) would call.
        for (url, host) in [
            ("http://LocalHost:1/v1", "localhost"),
            ("http://[::1]:8000/v1", "::1"),
            ("http://0x7f.1/v1", "127.0.0.1"),
            ("http://u:p@127.0.0.1/v1", "127.0.0.1"),
        ] {
            match check_endpoint(LlmMode::Local, url) {
                Ok(Endpoint::Http { host: h, .. }) => assert_eq!(h, host, "{url}"),
                other => panic!("{url}: {other:?}"),
            }
        }
        assert_eq!(
            parse_endpoint("unix:/run/my%20llm.sock"),
            Ok(Endpoint::Unix {
                socket: PathBuf::from("/run/my llm.sock")
            })
        );
        for bad in [
            "https://api.example.com/v1",
            "http://10.0.0.2:8080/v1",
            "http://192.168.1.5/v1",
            "http://user@evil.example@127.0.0.1.example.com/v1",
            "http://[2001:db8::1]/v1",
        ] {
            let e = check_endpoint(LlmMode::Local, bad).expect_err(bad);
            assert!(matches!(e, PolicyError::NotLocal { .. }), "{bad}: {e}");
            assert!(e.to_string().contains("loopback"));
        }
    }

    #[test]
    fn remote_allows_any_url_off_allows_none() {
        assert!(check_endpoint(LlmMode::Remote, "https://api.example.com/v1").is_ok());
        assert_eq!(
            check_endpoint(LlmMode::Off, "http://127.0.0.1/v1"),
            Err(PolicyError::Off)
        );
        for bad in [
            "ftp://x",
            "127.0.0.1:8080",
            "http://",
            "unix:relative.sock",
            "unix://host/run/llm.sock",
            "",
        ] {
            assert!(
                matches!(
                    check_endpoint(LlmMode::Remote, bad),
                    Err(PolicyError::BadUrl(_))
                ),
                "{bad}"
            );
        }
    }
}
