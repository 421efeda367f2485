//! The fuzz targets' bodies: one function per parser that takes input from
//! outside the device (docs/reliability.md lists them). Each takes the
//! fuzzer's bytes, runs them through the same code the device runs, and
//! panics only on a defect: a panic inside kgbox, a 5xx answer to a bad
//! request, or an answer that breaks the code's own promises. An input that
//! is refused with an error is a pass.
//!
//! `fuzz/` wraps each function in a libFuzzer target (`cargo fuzz run
//! NAME`); `tests/corpus.rs` replays every committed corpus and regression
//! file through them on stable Rust, so a crash once found stays fixed.

mod bundle;
mod config;
mod protocol;
mod serve;
mod text;

pub use bundle::{bundle_file, bundle_sections, delta_file};
pub use config::config;
pub use protocol::{broker_url, push_manifest, topic};
pub use serve::{http_request, mqtt_request};
pub use text::{cypher, link_text, query_dsl, sparql, tokenizer};

/// A target: takes the fuzzer's bytes, panics only on a defect.
pub type Target = fn(&[u8]);

/// Every target by name, as `fuzz/fuzz_targets/` and the corpora name them.
pub const TARGETS: &[(&str, Target)] = &[
    ("bundle_file", bundle_file),
    ("bundle_sections", bundle_sections),
    ("delta_file", delta_file),
    ("query_dsl", query_dsl),
    ("sparql", sparql),
    ("cypher", cypher),
    ("link_text", link_text),
    ("tokenizer", tokenizer),
    ("config", config),
    ("http_request", http_request),
    ("mqtt_request", mqtt_request),
    ("push_manifest", push_manifest),
    ("broker_url", broker_url),
    ("topic", topic),
];

/// Lets panics inside the `fst` crate unwind to their catch. `fst` checks
/// only an index's header and footer and panics on damaged node bytes;
/// kgbox contains that by design ([`kgbox_bundle::Kg::with_index`] catches
/// it, and install walks a new index whole under that catch). libFuzzer's
/// panic hook aborts on every panic, caught or not: this hook passes those
/// of `fst` by and hands every other panic to it.
fn contain_index_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let next = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let in_fst = info.location().is_some_and(|l| l.file().contains("/fst-"));
            if !in_fst {
                next(info);
            }
        }));
    });
}

/// The demo's public key as one `kgbox-ed25519-public ...` line (the
/// form `trust.keys` takes inline).
fn demo_key_line() -> String {
    kgbox_bundle::PublicKey::parse(kgbox::demo::DEMO_PUBLIC_KEY)
        .expect("the demo public key parses")
        .to_text()
}

/// Splits `data` at the first `sep` byte: (before, after); no `sep`: (data, []).
fn split_at_byte(data: &[u8], sep: u8) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == sep) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}
