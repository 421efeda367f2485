//! The protocol between a kgbox device and whoever pushes bundles to it or
//! watches it, typed once for both sides (see docs/mqtt.md and
//! docs/bundle-format.md): the device (`kgbox`) and the packager
//! (`kgbox-pack push`) use these types, so a change to the protocol is a
//! compile error on the side that does not follow.
//!
//! - [`broker`]: broker URLs (`mqtt://host:port`, `mqtts://host:port`).
//! - [`topics`]: the MQTT topic scheme and the routing of incoming topics.
//! - [`push`]: the bundle-push messages (the transfer manifest, progress,
//!   the retained status).
//! - [`deploy`]: what a deployment reports and what a device serves, the
//!   bodies of `PUT /v1/bundles`, `POST /v1/bundles/rollback` and
//!   `GET /v1/status`.
//! - [`fleet`]: what a rollout asks of a device (golden-question checks,
//!   guarded rollbacks) and the golden results a device reports.
//! - [`http`]: the HTTP error body.
//! - [`stats`]: the one percentile rule of every reported latency figure
//!   (nearest rank), shared by the device's `eval`/`bench` and the benches.
//!
//! Only serde and url: no I/O, no async, no MQTT client.
//!
//! On the wire every message has its keys in alphabetical order at every
//! level (they have always been built as `serde_json::Value`): send them
//! with [`to_wire`].

pub mod broker;
pub mod deploy;
pub mod fleet;
pub mod http;
pub mod push;
pub mod stats;
pub mod topics;

pub use broker::{BrokerUrl, BrokerUrlError};
pub use deploy::{
    BundleRef, DeployOutcome, DeployReport, DeployTimings, DeviceStatus, Health, ProbeOutcome,
    ServingStats, Slot, Stage,
};
pub use fleet::{CheckRequest, GoldenFailure, GoldenQuestion, GoldenResults, RollbackRequest};
pub use push::{Manifest, Progress, StatusMessage, TransferState};

/// A message as JSON text for the wire: keys in alphabetical order at
/// every level. `{}` for a value JSON cannot hold (none of this crate's).
pub fn to_wire<T: serde::Serialize + ?Sized>(msg: &T) -> String {
    serde_json::to_value(msg)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| "{}".to_string())
}
