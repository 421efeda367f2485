//! kgbox runtime: installs signed KG bundles into A/B slots, memory-maps the
//! active one, and serves it over HTTP.
//!
//! Layers, each importing only from those after it: [`server`] (the front
//! ends together) → the front ends ([`http`], the only module that knows
//! the wire format; [`mqtt`]) →
//! [`service`] (query and ask, no transport) → [`served`] and [`deploy`]
//! (the bundle being served and how it changes) → [`install`] (verify,
//! write image, flip) → [`loaded`] (the mapped bundle) → [`store`] (slots,
//! LMDB state) → [`config`].

pub mod bundles;
pub mod config;
pub mod config_print;
pub mod demo;
pub mod dense;
pub mod deploy;
pub mod entity;
pub mod error;
pub mod http;
pub mod install;
pub mod keys;
pub mod loaded;
pub mod logging;
pub mod metrics;
pub mod mqtt;
pub mod qa;
pub mod request_id;
pub mod served;
pub mod server;
pub mod service;
pub mod serving_stats;
pub mod sparql_store;
pub mod store;
pub mod systemd;

pub use config::Config;
pub use error::{Error, Result};
pub use loaded::LoadedBundle;
