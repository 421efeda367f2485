//! A graph from a few named triples, for unit tests.

use kgbox_bundle::tiny::TinyGraph;
use kgbox_bundle::Kg;

/// Calls `f` with the graph of `triples` (head, relation, tail names).
#[allow(clippy::expect_used)]
pub fn graph<T>(triples: &[(&str, &str, &str)], f: impl FnOnce(&Kg<'_>) -> T) -> T {
    let g = TinyGraph::from_triples(triples).expect("graph");
    f(&g.kg().expect("kg"))
}
