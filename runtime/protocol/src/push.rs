//! Bundle push over MQTT (docs/mqtt.md, "Bundle push"): the transfer
//! [`Manifest`] a pusher publishes to `.../bundle/begin`, the [`Progress`]
//! a device answers on `kgbox/{id}/bundle/progress`, and the retained
//! [`StatusMessage`] on `kgbox/{id}/status`.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::deploy::{BundleRef, DeployOutcome, DeviceStatus, ProbeOutcome, Slot, Stage};

/// Most ranges in a progress message's `missing`.
pub const MAX_RANGES: usize = 64;
/// Most chunks in one transfer.
pub const MAX_CHUNKS: u64 = 1 << 24;

/// A transfer id: 1-64 characters of `A-Za-z0-9_-`.
pub fn valid_transfer_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The transfer manifest a pusher publishes to `.../bundle/begin`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub transfer: String,
    /// Bytes.
    pub size: u64,
    /// Hex of the bundle's sha256.
    pub sha256: String,
    /// Every chunk is this long but the last.
    pub chunk_bytes: u64,
    #[serde(default)]
    pub allow_downgrade: bool,
}

/// A manifest that cannot be accepted: the transfer id it names (if any) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error}")]
pub struct BadManifest {
    pub transfer: String,
    pub error: String,
}

impl Manifest {
    /// Parses and checks a `begin` payload against a device's limits: the
    /// largest bundle (`admin.max_bundle_bytes`) and the largest chunk
    /// (`mqtt.bundle_chunk_max_bytes`). Lower-cases `sha256`.
    pub fn parse(payload: &[u8], max_size: u64, max_chunk: u64) -> Result<Manifest, BadManifest> {
        let value: serde_json::Value =
            serde_json::from_slice(payload).map_err(|e| BadManifest {
                transfer: String::new(),
                error: format!("the transfer manifest is not JSON: {e}"),
            })?;
        let transfer = value
            .get("transfer")
            .and_then(|t| t.as_str())
            .unwrap_or_default()
            .to_string();
        let bad = |error: String| BadManifest {
            transfer: transfer.clone(),
            error,
        };
        let mut m: Manifest = serde_json::from_value(value)
            .map_err(|e| bad(format!("bad transfer manifest: {e}")))?;
        if !valid_transfer_id(&m.transfer) {
            return Err(bad(format!(
                "transfer id {:?} must be 1-64 characters of A-Z a-z 0-9 _ -",
                m.transfer
            )));
        }
        if m.size == 0 || m.size > max_size {
            return Err(bad(format!(
                "size {} must be between 1 and admin.max_bundle_bytes ({max_size})",
                m.size
            )));
        }
        if m.chunk_bytes < 1024 || m.chunk_bytes > max_chunk {
            return Err(bad(format!(
                "chunk_bytes {} must be between 1024 and mqtt.bundle_chunk_max_bytes ({max_chunk})",
                m.chunk_bytes
            )));
        }
        if m.sha256.len() != 64 || !m.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad("sha256 must be 64 hex digits".into()));
        }
        m.sha256.make_ascii_lowercase();
        if m.chunks() > MAX_CHUNKS {
            return Err(bad(format!(
                "{} chunks of {} bytes is too many (at most {MAX_CHUNKS}): use larger chunks",
                m.chunks(),
                m.chunk_bytes
            )));
        }
        Ok(m)
    }

    pub fn chunks(&self) -> u64 {
        self.size.div_ceil(self.chunk_bytes.max(1))
    }

    /// The length chunk `index` must have, `None` when out of range.
    pub fn chunk_len(&self, index: u64) -> Option<u64> {
        let start = index.checked_mul(self.chunk_bytes)?;
        (start < self.size).then(|| (self.size - start).min(self.chunk_bytes))
    }
}

/// Where a transfer stands. The last three end it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransferState {
    /// Waiting for chunks (the message says which are `missing`).
    Receiving,
    /// Every chunk is in: checking the size and sha256.
    Verifying,
    Installing,
    HealthCheck,
    Settling,
    Installed,
    RolledBack,
    Failed,
}

impl TransferState {
    pub fn as_str(self) -> &'static str {
        match self {
            TransferState::Receiving => "receiving",
            TransferState::Verifying => "verifying",
            TransferState::Installing => "installing",
            TransferState::HealthCheck => "health_check",
            TransferState::Settling => "settling",
            TransferState::Installed => "installed",
            TransferState::RolledBack => "rolled_back",
            TransferState::Failed => "failed",
        }
    }

    /// `installed`, `rolled_back` or `failed`.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TransferState::Installed | TransferState::RolledBack | TransferState::Failed
        )
    }
}

impl fmt::Display for TransferState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<Stage> for TransferState {
    fn from(s: Stage) -> TransferState {
        match s {
            Stage::Installing => TransferState::Installing,
            Stage::HealthCheck => TransferState::HealthCheck,
            Stage::Settling => TransferState::Settling,
        }
    }
}

impl From<DeployOutcome> for TransferState {
    fn from(o: DeployOutcome) -> TransferState {
        match o {
            DeployOutcome::Installed => TransferState::Installed,
            DeployOutcome::RolledBack => TransferState::RolledBack,
        }
    }
}

/// A progress message on `kgbox/{id}/bundle/progress`. `received` and
/// `total` count chunks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub device_id: String,
    pub transfer: String,
    pub state: TransferState,
    pub received: u64,
    pub total: u64,
    /// In `receiving`: inclusive ranges of the chunk indexes still missing,
    /// at most [`MAX_RANGES`] (the last reaches to the end when there are more).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<Vec<[u64; 2]>>,
    /// In `failed`: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// In `rolled_back`: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// In `installed` and `rolled_back`: the bundle offered...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<BundleRef>,
    /// ...the slot it went to...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<Slot>,
    /// ...the bundle serving now...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serving: Option<BundleRef>,
    /// ...and each probe's outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<Vec<ProbeOutcome>>,
}

impl Progress {
    /// A message with no optional field.
    pub fn new(
        device_id: &str,
        transfer: &str,
        state: TransferState,
        received: u64,
        total: u64,
    ) -> Progress {
        Progress {
            device_id: device_id.to_string(),
            transfer: transfer.to_string(),
            state,
            received,
            total,
            missing: None,
            error: None,
            reason: None,
            bundle: None,
            slot: None,
            serving: None,
            probes: None,
        }
    }

    /// `failed` with `error`.
    pub fn failed(
        device_id: &str,
        transfer: &str,
        received: u64,
        total: u64,
        error: String,
    ) -> Progress {
        Progress {
            error: Some(error),
            ..Progress::new(device_id, transfer, TransferState::Failed, received, total)
        }
    }
}

/// The retained status on `kgbox/{id}/status`: the device's
/// [`DeviceStatus`] with `device_id` and `online`; the last will (and
/// the goodbye of a clean shutdown) is only `device_id` and `"online": false`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusMessage {
    pub device_id: String,
    pub online: bool,
    /// The device's group (`mqtt.group`), which a rollout may target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(flatten)]
    pub status: Option<DeviceStatus>,
    /// The bundles served beside the default one, by name, each with its
    /// own status (absent when there are none).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub beside: std::collections::BTreeMap<String, DeviceStatus>,
    /// When the device published it (Unix seconds): how recent a retained
    /// status is. Absent from the last will (the broker sends it later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_unix: Option<u64>,
}

impl StatusMessage {
    pub fn online(device_id: &str, status: DeviceStatus) -> StatusMessage {
        StatusMessage {
            device_id: device_id.to_string(),
            online: true,
            group: None,
            status: Some(status),
            beside: Default::default(),
            reported_unix: None,
        }
    }

    pub fn offline(device_id: &str) -> StatusMessage {
        StatusMessage {
            device_id: device_id.to_string(),
            online: false,
            group: None,
            status: None,
            beside: Default::default(),
            reported_unix: None,
        }
    }
}
