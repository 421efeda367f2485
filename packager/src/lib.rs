//! kgbox packager: reads a KG slice and writes a signed bundle.
//!
//! Runs on an operator's workstation; nothing here is linked into the
//! on-device runtime.

pub mod delta;
pub mod embed;
pub mod example_facts;
pub mod export;
pub mod fleet;
pub mod fusion;
pub mod graph;
pub mod input;
pub mod inspect;
pub mod keygen;
pub mod pack;
pub mod paraphrase;
pub mod planner;
pub mod probes;
pub mod push;
pub mod reranker;
pub mod rollout;
pub mod section;
pub mod spill;
pub mod synth;
pub mod train;
pub mod ultra;

pub use pack::{pack, pack_with, PackOptions, PackReport};
