//! The `kgbox-pack` binary's own commands: their arguments, turned into
//! the library's options, and what they print. `main.rs` dispatches to
//! them.

pub mod build;
pub mod graph;
pub mod keygen;
pub mod paraphrase;
