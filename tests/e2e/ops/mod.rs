//! Running the device: its configuration files, its log, `/metrics` as
//! Prometheus reads it, and the systemd and command-line service glue.

mod config;
mod logs;
mod metrics;
mod service;
