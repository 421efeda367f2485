//! What a deployment reports and what a device serves: the bodies of
//! `PUT /v1/bundles` ([`DeployReport`]), `POST /v1/bundles/rollback` and
//! `GET /v1/status` ([`DeviceStatus`]), also inside the MQTT status and
//! the final progress message of a bundle push.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A bundle's name and version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleRef {
    pub name: String,
    pub version: String,
}

impl fmt::Display for BundleRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.name, self.version)
    }
}

/// One of a device's two install slots (`"a"`, `"b"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Slot {
    A,
    B,
}

impl Slot {
    pub fn other(self) -> Slot {
        match self {
            Slot::A => Slot::B,
            Slot::B => Slot::A,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Slot::A => "a",
            Slot::B => "b",
        }
    }

    pub fn parse(s: &str) -> Option<Slot> {
        match s {
            "a" => Some(Slot::A),
            "b" => Some(Slot::B),
            _ => None,
        }
    }
}

impl fmt::Display for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether a ready slot's bundle passed its health check (RAUC's mark-good).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Health {
    /// Installed and made active, not yet started: the next start checks it.
    Pending,
    /// Being checked (or settling). A start that finds the active slot in
    /// trial knows the last run died before mark-good, and rolls back.
    Trial,
    /// Passed its health check. (Records from before health existed read as good.)
    #[default]
    Good,
    /// Failed its health check; never made active again by a rollback.
    Bad,
}

impl fmt::Display for Health {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Health::Pending => "pending",
            Health::Trial => "trial",
            Health::Good => "good",
            Health::Bad => "bad",
        })
    }
}

/// What one probe query (a bundle's health check) found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeOutcome {
    pub query: String,
    pub passed: bool,
    /// Answers the query returned (all of them, not only the top ones).
    pub answers: usize,
    /// Expected names that were not among the answers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// Why the query did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub ms: f64,
}

impl ProbeOutcome {
    /// One line for logs and error messages.
    pub fn describe(&self) -> String {
        if let Some(e) = &self.error {
            format!("`{}`: {e}", self.query)
        } else if self.answers == 0 {
            format!("`{}`: no answers", self.query)
        } else if !self.missing.is_empty() {
            format!(
                "`{}`: {} answers, but not {}",
                self.query,
                self.answers,
                self.missing.join(", ")
            )
        } else {
            format!("`{}`: passed ({} answers)", self.query, self.answers)
        }
    }
}

/// How a deployment ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeployOutcome {
    Installed,
    RolledBack,
}

/// How long each step of a deployment took, milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeployTimings {
    /// Verify, decompress into the slot, flip.
    pub install: f64,
    /// Map the image and load its models.
    pub load: f64,
    pub probes: f64,
    /// The hot swap itself.
    pub swap: f64,
    pub settle: f64,
    pub total: f64,
}

/// What a deployment did: the body of `PUT /v1/bundles` (and of its
/// `health_check_failed` error, as `report`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeployReport {
    /// `installed` or `rolled_back`.
    pub outcome: DeployOutcome,
    /// The bundle that was offered.
    pub bundle: BundleRef,
    pub slot: Slot,
    /// Why the bundle was rolled back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub probes: Vec<ProbeOutcome>,
    /// The bundle serving now.
    pub serving: BundleRef,
    pub timings_ms: DeployTimings,
}

/// Stages of a deployment, reported as they begin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Installing,
    HealthCheck,
    Settling,
}

/// What the device is serving: the body of `GET /v1/status` and
/// `POST /v1/bundles/rollback`, and the MQTT status without
/// `device_id` and `online`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceStatus {
    pub bundle: BundleRef,
    /// Hex sha256 of the served bundle's signed prefix (its digest): the
    /// base a delta update must be made against. Absent from devices that
    /// predate delta updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// `slot-a`, `slot-b` or `demo`.
    pub source: String,
    pub slot: Option<Slot>,
    pub health: Health,
    pub uptime_s: u64,
    pub kgbox_version: String,
    /// The last deployment's outcome, if any since start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_deploy: Option<DeployReport>,
    /// The requests the served bundle answered since it was deployed (or
    /// the device started): what a rollout's criteria read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_deploy: Option<ServingStats>,
    /// The served bundle's answers to the last golden-question check
    /// (`kgbox/{id}/bundle/check`); absent before one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub golden: Option<crate::fleet::GoldenResults>,
}

/// Requests answered by one bundle since it was deployed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServingStats {
    /// When the bundle began serving (Unix seconds).
    pub since_unix: u64,
    /// Read requests answered (API keys admitted).
    pub requests: u64,
    /// Of those, answered with a server error (5xx).
    pub errors: u64,
    /// Of those, refused as the client's error (4xx).
    pub client_errors: u64,
    /// The 99th percentile of their latencies, milliseconds (an upper
    /// bound: the top of its histogram bucket); absent before any request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ms: Option<f64>,
}
