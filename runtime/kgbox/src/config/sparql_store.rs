//! `[sparql_store]`: the graph store the `sparql_store` executor sends
//! queries to (see docs/sparql-store.md), with per-bundle overrides in
//! `[sparql_store.bundles.NAME]` (NAME: the manifest's bundle name).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// `[sparql_store]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SparqlStoreConfig {
    /// The store's SPARQL 1.1 query endpoint (`http://` or `https://`) for
    /// every bundle without one of its own; none: no store.
    pub endpoint: Option<String>,
    /// Time allowed for one request to the store, milliseconds (the
    /// request's own deadline, `http.request_timeout_ms`, also applies).
    pub timeout_ms: u64,
    /// Sent as `default-graph-uri`: the graph the bundle's export was
    /// loaded into; none: the store's default graph.
    pub default_graph: Option<String>,
    /// Environment variable holding the value of the `Authorization`
    /// header sent to the store (`Bearer ...`, `Basic ...`); never the
    /// value itself.
    pub auth_header_env: String,
    /// Or a file holding that value (its first line); used when the
    /// variable is unset or empty.
    pub auth_header_file: Option<PathBuf>,
    /// CA certificates (PEM) that `https://` endpoints are checked
    /// against; not set: the public web roots built into kgbox.
    pub ca_file: Option<PathBuf>,
    /// Most solutions read from one reply: a query with more answers fails
    /// with `query_too_expensive`.
    pub max_rows: usize,
    /// Largest reply read, bytes.
    pub max_reply_bytes: u64,
    /// Per bundle name: `[sparql_store.bundles.NAME]` with any of
    /// `endpoint`, `timeout_ms`, `default_graph`, `auth_header_env`,
    /// `auth_header_file`, `ca_file`. A bundle with its own endpoint uses
    /// only its own auth and CA settings; one without inherits these.
    pub bundles: BTreeMap<String, StoreOverride>,
}

/// `[sparql_store.bundles.NAME]`: settings for one bundle name.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreOverride {
    pub endpoint: Option<String>,
    pub timeout_ms: Option<u64>,
    pub default_graph: Option<String>,
    pub auth_header_env: Option<String>,
    pub auth_header_file: Option<PathBuf>,
    pub ca_file: Option<PathBuf>,
}

impl Default for SparqlStoreConfig {
    fn default() -> Self {
        SparqlStoreConfig {
            endpoint: None,
            timeout_ms: 5_000,
            default_graph: None,
            auth_header_env: "KGBOX_SPARQL_STORE_AUTH".into(),
            auth_header_file: None,
            ca_file: None,
            max_rows: 1_000_000,
            max_reply_bytes: 256 << 20,
            bundles: BTreeMap::new(),
        }
    }
}

/// One bundle's store, resolved: what the client needs.
#[derive(Clone)]
pub struct StoreSettings {
    pub endpoint: String,
    pub timeout: Duration,
    pub default_graph: Option<String>,
    /// The `Authorization` header's value (a secret: never printed).
    pub auth: Option<String>,
    /// CA certificates for `https://` (else the built-in roots).
    pub ca_file: Option<PathBuf>,
    pub max_rows: usize,
    pub max_reply_bytes: u64,
}

impl std::fmt::Debug for StoreSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreSettings")
            .field("endpoint", &self.endpoint)
            .field("timeout", &self.timeout)
            .field("default_graph", &self.default_graph)
            .field("auth", &self.auth.as_ref().map(|_| "(set)"))
            .field("ca_file", &self.ca_file)
            .field("max_rows", &self.max_rows)
            .field("max_reply_bytes", &self.max_reply_bytes)
            .finish()
    }
}

impl SparqlStoreConfig {
    /// Checks the values (`executor_mode`: `executor.mode`, which may name
    /// this store only when an endpoint is set).
    pub fn check(&self, executor_mode: kgbox_query::Executor) -> Result<()> {
        let err = |m: String| Err(Error::Config(m));
        if self.max_rows == 0 || self.max_reply_bytes == 0 {
            return err(
                "sparql_store.max_rows and sparql_store.max_reply_bytes must be at least 1".into(),
            );
        }
        let mut endpoints = vec![("sparql_store.endpoint".to_string(), &self.endpoint)];
        let mut timeouts = vec![("sparql_store.timeout_ms".to_string(), Some(self.timeout_ms))];
        for (name, o) in &self.bundles {
            let key = format!("sparql_store.bundles.{name}");
            endpoints.push((format!("{key}.endpoint"), &o.endpoint));
            timeouts.push((format!("{key}.timeout_ms"), o.timeout_ms));
        }
        for (key, endpoint) in &endpoints {
            if let Some(e) = endpoint {
                check_endpoint(e).map_err(|m| Error::Config(format!("{key}: {m}")))?;
            }
        }
        for (key, t) in timeouts {
            if t == Some(0) {
                return err(format!("{key} must be at least 1"));
            }
        }
        if executor_mode == kgbox_query::Executor::SparqlStore
            && endpoints.iter().all(|(_, e)| e.is_none())
        {
            return err(
                "executor.mode = \"sparql_store\" needs sparql_store.endpoint (or an endpoint in [sparql_store.bundles.NAME])".into(),
            );
        }
        Ok(())
    }

    /// The environment variables naming secrets: `auth_header_env` and the
    /// bundles' own (they are not configuration keys).
    pub fn secret_vars(&self) -> Vec<String> {
        std::iter::once(self.auth_header_env.clone())
            .chain(
                self.bundles
                    .values()
                    .filter_map(|o| o.auth_header_env.clone()),
            )
            .collect()
    }

    /// The store of the bundle named `bundle`: `Ok(None)` when no endpoint
    /// applies; an error when its auth header cannot be read.
    pub fn for_bundle(&self, bundle: &str) -> Result<Option<StoreSettings>> {
        let o = self.bundles.get(bundle).cloned().unwrap_or_default();
        let own_endpoint = o.endpoint.is_some();
        let Some(endpoint) = o.endpoint.or_else(|| self.endpoint.clone()) else {
            return Ok(None);
        };
        let (env, file, ca_file) = if own_endpoint {
            (o.auth_header_env, o.auth_header_file, o.ca_file)
        } else {
            (
                o.auth_header_env
                    .or_else(|| Some(self.auth_header_env.clone())),
                o.auth_header_file.or_else(|| self.auth_header_file.clone()),
                o.ca_file.or_else(|| self.ca_file.clone()),
            )
        };
        Ok(Some(StoreSettings {
            endpoint,
            timeout: Duration::from_millis(o.timeout_ms.unwrap_or(self.timeout_ms)),
            default_graph: o.default_graph.or_else(|| self.default_graph.clone()),
            auth: auth_header(env.as_deref(), file.as_ref())?,
            ca_file,
            max_rows: self.max_rows,
            max_reply_bytes: self.max_reply_bytes,
        }))
    }
}

/// An endpoint must be an absolute `http://` or `https://` URL with a host
/// (parsed by the `url` crate) and no whitespace (which the URL parser
/// would silently strip or encode), which the HTTP client's own parser
/// (`http::Uri`, ureq's) takes too: a request to it cannot fail on its URL.
fn check_endpoint(e: &str) -> std::result::Result<(), String> {
    if e.chars().any(char::is_whitespace) {
        return Err(format!("{e:?} contains whitespace"));
    }
    let url = url::Url::parse(e).map_err(|err| format!("{e:?} is not a URL: {err}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("{e:?} is not an http:// or https:// URL"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("{e:?} has no host"));
    }
    e.parse::<ureq::http::Uri>()
        .map_err(|err| format!("{e:?} is not a URL the HTTP client takes: {err}"))?;
    Ok(())
}

/// The `Authorization` value: the variable `env` when set and not empty,
/// else the first line of `file`.
fn auth_header(env: Option<&str>, file: Option<&PathBuf>) -> Result<Option<String>> {
    if let Some(v) = env.and_then(|name| std::env::var(name).ok()) {
        if !v.trim().is_empty() {
            return Ok(Some(v.trim().to_string()));
        }
    }
    let Some(path) = file else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::Config(format!(
            "sparql_store auth_header_file {}: {e}",
            path.display()
        ))
    })?;
    let value = text.lines().next().unwrap_or("").trim().to_string();
    if value.is_empty() {
        return Err(Error::Config(format!(
            "sparql_store auth_header_file {} is empty",
            path.display()
        )));
    }
    Ok(Some(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundles_override_the_defaults_and_keep_their_own_auth() {
        let mut c = SparqlStoreConfig {
            endpoint: Some("http://store:7878/query".into()),
            default_graph: Some("urn:g".into()),
            auth_header_env: "SPARQL_STORE_TEST_UNSET_VAR".into(),
            ..Default::default()
        };
        c.bundles.insert(
            "big".into(),
            StoreOverride {
                endpoint: Some("https://other/sparql".into()),
                timeout_ms: Some(9),
                ..Default::default()
            },
        );
        c.check(kgbox_query::Executor::SparqlStore).expect("valid");
        let s = c.for_bundle("movies").expect("ok").expect("a store");
        assert_eq!(s.endpoint, "http://store:7878/query");
        assert_eq!(s.default_graph.as_deref(), Some("urn:g"));
        assert_eq!(s.timeout, Duration::from_millis(5000));
        let b = c.for_bundle("big").expect("ok").expect("a store");
        assert_eq!(b.endpoint, "https://other/sparql");
        assert_eq!(b.timeout, Duration::from_millis(9));
        assert!(b.auth.is_none());
        assert!(!format!("{b:?}").contains("Bearer"));

        c.endpoint = None;
        assert!(c.for_bundle("movies").expect("ok").is_none());
        c.bundles.clear();
        assert!(c.check(kgbox_query::Executor::SparqlStore).is_err());
        assert!(c.check(kgbox_query::Executor::Symbolic).is_ok());
    }

    #[test]
    fn bad_endpoints_and_auth_files_are_refused() {
        for bad in [
            "store:7878",
            "ftp://x/",
            "http://",
            "http://a b/",
            "http://x:port/",
            "http:/ /x",
            // The `url` crate takes these; the HTTP client does not.
            "http://store/q<x>",
            "http://store/`q`",
        ] {
            let c = SparqlStoreConfig {
                endpoint: Some(bad.into()),
                ..Default::default()
            };
            assert!(c.check(kgbox_query::Executor::Symbolic).is_err(), "{bad}");
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("auth");
        std::fs::write(&file, "Bearer s3cret\nignored\n").expect("write");
        let c = SparqlStoreConfig {
            endpoint: Some("http://store/q".into()),
            auth_header_env: "SPARQL_STORE_TEST_UNSET_VAR".into(),
            auth_header_file: Some(file.clone()),
            ..Default::default()
        };
        let s = c.for_bundle("x").expect("ok").expect("a store");
        assert_eq!(s.auth.as_deref(), Some("Bearer s3cret"));
        std::fs::write(&file, "\n").expect("write");
        assert!(c.for_bundle("x").is_err());
    }
}
