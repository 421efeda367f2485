//! Embeds the names of a TSV graph's entities in bulk, as `kgbox-pack build
//! --embed` does, and prints names per second, tokens per name (real and
//! padded), and the engine.
//!
//! `cargo run --release -p kgbox-neural --example embed_names -- MODEL.onnx TOKENIZER.json KB.tsv [LIMIT]`
#![allow(clippy::unwrap_used, clippy::expect_used)]

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let onnx = std::fs::read(&args[1]).unwrap();
    let tok = std::fs::read(&args[2]).unwrap();
    let text = std::fs::read_to_string(&args[3]).unwrap();
    let limit: usize = args
        .get(4)
        .and_then(|a| a.parse().ok())
        .unwrap_or(usize::MAX);
    let mut names: Vec<&str> = text
        .lines()
        .flat_map(|l| {
            let p: Vec<&str> = l.split('\t').collect();
            [p.first().copied(), p.get(2).copied()]
        })
        .flatten()
        .collect();
    // ORDER=file: in the order of first appearance (entity id order, as
    // the packer has them); otherwise sorted.
    if std::env::var("ORDER").is_ok_and(|o| o == "file") {
        let mut seen = std::collections::HashSet::new();
        names.retain(|n| seen.insert(*n));
    } else {
        names.sort_unstable();
        names.dedup();
    }
    names.truncate(limit);
    let tokenizer = kgbox_neural::encoder::load_tokenizer(&tok).unwrap();
    let t = std::time::Instant::now();
    let enc = tokenizer.encode_batch(names.clone(), true).unwrap();
    let tok_s = t.elapsed().as_secs_f64();
    let real: usize = enc.iter().map(|e| e.len()).sum();
    let kind: kgbox_neural::EngineKind = std::env::var("ENGINE")
        .unwrap_or_else(|_| "native".into())
        .parse()
        .unwrap();
    let encoder =
        kgbox_neural::Encoder::load(kind, kgbox_neural::Device::Cpu, &onnx, &tok).unwrap();
    let t = std::time::Instant::now();
    // CHUNK=N: in chunks of N names, as the packer passes them.
    let chunk: usize = std::env::var("CHUNK")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(names.len().max(1));
    let mut v = Vec::new();
    for c in names.chunks(chunk) {
        v.extend(encoder.embed(c).unwrap());
    }
    let s = t.elapsed().as_secs_f64();
    println!(
        "{} names in {s:.2} s: {:.0} names/s on {}; {:.2} tokens per name; tokenizing alone {tok_s:.2} s",
        v.len(),
        v.len() as f64 / s,
        encoder.engine(),
        real as f64 / names.len() as f64
    );
}
