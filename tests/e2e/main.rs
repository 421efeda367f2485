//! The end-to-end tests, one binary with one module per area: each test runs
//! the real `kgbox` and `kgbox-pack` (built first: `cargo build -p kgbox -p
//! kgbox-pack`) as processes over real sockets, through the harness in the
//! `kgbox_testkit` library.
//!
//! One area: `cargo test -p kgbox-testkit --test e2e ask::`; one test:
//! `cargo test -p kgbox-testkit --test e2e -- --exact serve::NAME`.
//!
//! The tests share one process: none may set environment variables, change
//! the current directory or hold a fixed port; each child process gets its
//! own environment, temporary directories and free ports.

mod ask;
mod clients_console;
mod clients_openai;
mod clients_openapi;
mod clients_python;
mod clients_sparql;
mod config;
mod crash_points;
mod delta;
mod dense;
mod deploy;
mod derived;
mod faults;
mod homeassistant;
mod llm_server;
mod logs;
mod metrics;
mod mqtt;
mod mqtt_abuse;
mod neural;
mod power_loss;
mod push;
mod query_api;
mod rerank;
mod security;
mod serve;
mod service;
mod sparql_store;
mod strategies;
mod update_hooks;
