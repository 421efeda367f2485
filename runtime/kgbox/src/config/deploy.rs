//! `[admin]` and `[health]`: who may deploy bundles, and the check a new
//! bundle must pass.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// `[admin]`: the bearer token that guards the admin endpoints
/// (`PUT /v1/bundles`, `POST /v1/bundles/rollback`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdminConfig {
    /// Environment variable holding the token (never the token itself).
    pub token_env: String,
    /// Or a file holding the token (first line); used when the variable is unset.
    pub token_file: Option<PathBuf>,
    /// Largest bundle accepted by `PUT /v1/bundles` or an MQTT push, bytes.
    pub max_bundle_bytes: u64,
    /// Time allowed for one upload, milliseconds.
    pub upload_timeout_ms: u64,
}

impl Default for AdminConfig {
    fn default() -> Self {
        AdminConfig {
            token_env: "KGBOX_ADMIN_TOKEN".into(),
            token_file: None,
            max_bundle_bytes: 4 << 30,
            upload_timeout_ms: 600_000,
        }
    }
}

impl AdminConfig {
    /// The admin token: the variable `token_env`, else the first line of
    /// `token_file`; `Ok(None)` when neither is set (the admin API is off).
    pub fn token(&self) -> Result<Option<String>> {
        if let Ok(t) = std::env::var(&self.token_env) {
            if !t.trim().is_empty() {
                return Ok(Some(t.trim().to_string()));
            }
        }
        let Some(path) = &self.token_file else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Config(format!("admin.token_file {}: {e}", path.display())))?;
        let t = text.lines().next().unwrap_or("").trim().to_string();
        if t.len() < 16 {
            return Err(Error::Config(format!(
                "admin.token_file {}: the token must be at least 16 characters",
                path.display()
            )));
        }
        Ok(Some(t))
    }
}

/// `[health]`: the check a newly installed bundle must pass before it is
/// marked good (load, then the manifest's probe queries).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HealthConfig {
    /// After the probes pass, serve the new bundle this long before marking it
    /// good; if the process dies meanwhile, the next start rolls back.
    pub settle_ms: u64,
    /// Time allowed for all probe queries together, milliseconds.
    pub probe_timeout_ms: u64,
    /// This site's golden questions (JSON lines of `{"question" or "query",
    /// "expect": [names]}`), answered with every golden-question check a
    /// rollout sends (docs/fleet.md) besides the rollout's own.
    pub golden_file: Option<PathBuf>,
}

impl Default for HealthConfig {
    fn default() -> Self {
        HealthConfig {
            settle_ms: 0,
            probe_timeout_ms: 30_000,
            golden_file: None,
        }
    }
}
