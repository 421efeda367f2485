//! `[http]`: the address, limits, CORS, who may read without a key, and
//! HTTPS.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    pub listen: String,
    pub body_limit_bytes: usize,
    pub request_timeout_ms: u64,
    pub max_concurrency: usize,
    /// Origins whose browser pages may call the public API, `/sparql` and
    /// the OpenAI facade (CORS); empty: none, `["*"]`: any. The admin
    /// endpoints never answer other origins.
    pub cors_origins: Vec<String>,
    /// Whether requests without an API key may read. Unset: only when
    /// `listen` is a loopback address; on any other address `serve` refuses
    /// to start without keys unless this is `true`.
    pub allow_anonymous: Option<bool>,
    /// The request rate of a key that has none of its own (`kgbox keys add
    /// --rate`), e.g. `"20/s"`; unset: unlimited.
    pub key_rate_limit: Option<crate::keys::Rate>,
    /// HTTPS: certificate and key files (and client certificates, when
    /// `client_ca_file` is set); unset: plain HTTP.
    pub tls: Option<TlsConfig>,
    /// Serve plain HTTP on an address other than loopback (behind a proxy
    /// that terminates TLS, say); otherwise `serve` refuses to without `tls`.
    pub allow_plaintext: bool,
}

/// `[http.tls]`: PEM files, reread on SIGHUP.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// The certificate chain, leaf first.
    pub cert_file: PathBuf,
    /// Its private key (PKCS#8, PKCS#1 or SEC1).
    pub key_file: PathBuf,
    /// CA certificates that sign client certificates: when set, every
    /// connection must present one they sign.
    #[serde(default)]
    pub client_ca_file: Option<PathBuf>,
}

impl HttpConfig {
    /// Whether `listen` is a loopback address (`127.0.0.0/8`, `::1`, `localhost`).
    pub fn listens_on_loopback(&self) -> bool {
        let host = match self.listen.rsplit_once(':') {
            Some((host, _)) => host.trim_start_matches('[').trim_end_matches(']'),
            None => self.listen.as_str(),
        };
        host == "localhost"
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }

    /// Whether requests without a key may read (see `allow_anonymous`).
    pub fn anonymous_reads(&self) -> bool {
        self.allow_anonymous
            .unwrap_or_else(|| self.listens_on_loopback())
    }
    pub(super) fn check(&self) -> Result<()> {
        for origin in &self.cors_origins {
            check_cors_origin(origin, self.cors_origins.len())?;
        }
        if self.max_concurrency == 0 {
            return Err(Error::Config(
                "http.max_concurrency must be at least 1".into(),
            ));
        }
        if let Some(tls) = &self.tls {
            let files = [
                Some(&tls.cert_file),
                Some(&tls.key_file),
                tls.client_ca_file.as_ref(),
            ];
            for file in files.into_iter().flatten() {
                if file.as_os_str().is_empty() {
                    return Err(Error::Config(
                        "http.tls: cert_file, key_file and client_ca_file must not be empty".into(),
                    ));
                }
            }
        }
        Ok(())
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            listen: "127.0.0.1:8080".into(),
            body_limit_bytes: 1 << 20,
            request_timeout_ms: 10_000,
            max_concurrency: 256,
            cors_origins: Vec::new(),
            allow_anonymous: None,
            key_rate_limit: None,
            tls: None,
            allow_plaintext: false,
        }
    }
}

/// An `http.cors_origins` entry: `*` alone, or a browser origin
/// (`scheme://host[:port]`, no path), as the `Origin` header carries it.
fn check_cors_origin(origin: &str, count: usize) -> Result<()> {
    let bad = |why: &str| {
        Err(Error::Config(format!(
            "http.cors_origins: {origin:?} {why}"
        )))
    };
    if origin == "*" {
        return if count == 1 {
            Ok(())
        } else {
            bad("must be the only entry (any origin)")
        };
    }
    let Some((scheme, rest)) = origin.split_once("://") else {
        return bad("is not an origin such as \"https://app.example.org\"");
    };
    if !matches!(scheme, "http" | "https") {
        return bad("has a scheme other than http or https");
    }
    if rest.is_empty() || rest.contains(['/', '?', '#', ' ']) || !origin.is_ascii() {
        return bad("is not scheme://host[:port] (no path, no trailing slash)");
    }
    Ok(())
}
