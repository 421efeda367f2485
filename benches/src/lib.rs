//! Code shared by the benchmark binaries `kgbox-perf` and `kgbox-load`:
//! child processes, resident memory and CPU time ([`proc`]), a one-shot HTTP
//! client and readiness polling ([`http`]), packing and installing a bundle
//! ([`measure`]), a keep-alive HTTP/1.1 client for load ([`keepalive`]), the
//! one percentile rule of every bench, over exact samples or a latency
//! histogram ([`quantile`]), and their reports as Markdown tables or JSON
//! ([`report`]).

pub mod gen;
pub mod http;
pub mod keepalive;
pub mod measure;
pub mod plot;
pub mod proc;
pub mod quantile;
pub mod report;
pub mod scale;
pub mod soak;
