//! The HTTP error body, `{"error": {"code": ..., "message": ...}}`, as a
//! pusher reads it from `PUT /v1/bundles`. The success bodies are
//! [`crate::DeployReport`] and [`crate::DeviceStatus`].

use serde::{Deserialize, Serialize};

use crate::deploy::DeployReport;

/// The error code of `PUT /v1/bundles` when the bundle failed its health
/// check and was rolled back (HTTP 422; the error carries `report`).
pub const HEALTH_CHECK_FAILED: &str = "health_check_failed";

/// An HTTP error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// The `error` object. Other endpoints add other fields (ignored here).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorDetail {
    pub code: String,
    pub message: String,
    /// With [`HEALTH_CHECK_FAILED`]: what the deployment did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<DeployReport>,
}
