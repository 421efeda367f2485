//! The end-to-end tests, one binary with one module per area, each a folder
//! of modules (`clients/`, `deploy/`, `mqtt/`, ...): each test runs the real
//! `kgbox` and `kgbox-pack` (built first: `cargo build -p kgbox -p
//! kgbox-pack`) as processes over real sockets, through the harness in the
//! `kgbox_testkit` library.
//!
//! One area: `cargo test -p kgbox-testkit --test e2e mqtt::`; one module:
//! `cargo test -p kgbox-testkit --test e2e qa::ask::`; one test:
//! `cargo test -p kgbox-testkit --test e2e -- --exact serve::NAME`.
//!
//! The tests share one process: none may set environment variables, change
//! the current directory or hold a fixed port; each child process gets its
//! own environment, temporary directories and free ports.

mod access;
mod clients;
mod deploy;
mod mqtt;
mod ops;
mod qa;
mod query;
mod reliability;
mod serve;
