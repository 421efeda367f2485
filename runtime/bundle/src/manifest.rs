//! The bundle manifest: a small JSON document covered by the signature.

use serde::{Deserialize, Serialize};

use crate::error::{BundleError, Result};

/// What a bundle is, who can run it and what it holds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    /// Bundle name, e.g. `metaqa-movies`.
    pub name: String,
    /// Semantic version; installs refuse a lower version than the active one.
    pub version: semver::Version,
    /// Must equal the device's configured `compatible` string (RAUC-style).
    pub compatible: String,
    /// Creation time, RFC 3339 UTC.
    pub created: String,
    /// Creation time, seconds since the Unix epoch.
    pub created_unix: u64,
    /// Oldest runtime that can load this bundle.
    pub min_runtime: semver::Version,
    /// The program that wrote the bundle.
    pub generator: String,
    /// Entity-name normalizer used to build the lexical index.
    pub normalizer: String,
    pub stats: KgStats,
    /// ONNX models and other engines' files held in sections.
    #[serde(default)]
    pub models: Vec<ModelInfo>,
    /// Probe queries a device runs after installing the bundle: its health
    /// check. A failing probe rolls the install back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<Probe>,
}

/// One health-check query: it must run without error and return answers,
/// and every name in `expect` must be among them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Probe {
    /// A DSL query, e.g. `"Blade Runner" -> directed_by`.
    pub query: String,
    /// Entity names that must be among the answers (any rank).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect: Vec<String>,
}

/// Size of the knowledge graph.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct KgStats {
    pub entities: u64,
    pub relations: u64,
    pub triples: u64,
    pub aliases: u64,
    pub duplicates_removed: u64,
}

/// A model carried in a section.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ModelInfo {
    pub name: String,
    pub section: String,
    /// e.g. `onnx`.
    pub engine: String,
    pub opset: u32,
    /// What the model does, e.g. `query-executor`, `reranker`.
    pub role: String,
    /// How the packager trained it on this bundle's graph (steps, seed, data
    /// hash, metrics), when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub training: Option<serde_json::Value>,
}

/// Whether `name` is a valid bundle name: 1 to 128 characters of
/// `A-Z a-z 0-9 - _ .`. The packer writes only such names, and a device
/// refuses a manifest with any other (a name shows in paths of tools,
/// logs, metrics labels and MQTT status messages).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

impl Manifest {
    /// Parses a manifest and checks its name ([`valid_name`]).
    pub fn from_json(bytes: &[u8]) -> Result<Manifest> {
        let m: Manifest =
            serde_json::from_slice(bytes).map_err(|e| BundleError::Manifest(e.to_string()))?;
        if !valid_name(&m.name) {
            return Err(BundleError::Manifest(format!(
                "bundle name {:?} must be 1 to 128 characters of A-Z a-z 0-9 - _ .",
                m.name
            )));
        }
        Ok(m)
    }

    pub fn to_json(&self) -> Result<Vec<u8>> {
        serde_json::to_vec_pretty(self).map_err(|e| BundleError::Manifest(e.to_string()))
    }
}
