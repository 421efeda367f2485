//! Prints the embeddings of texts as JSON (for checking the encoder against
//! another runtime, see `models/minilm/check-onnxruntime.py`).
//!
//! `cargo run -p kgbox-neural --example embed -- MODEL.onnx TOKENIZER.json TEXT...`
//! (`ENGINE=ort` with `--features ort` runs it on ONNX Runtime; `EACH=1`
//! embeds one text per call and prints the median time instead).
#![allow(clippy::unwrap_used, clippy::expect_used)]

fn main() {
    let args: Vec<String> = std::env::args().collect();
    assert!(
        args.len() >= 3,
        "usage: embed MODEL.onnx TOKENIZER.json TEXT..."
    );
    let onnx = std::fs::read(&args[1]).expect("reading the model");
    let tokenizer = std::fs::read(&args[2]).expect("reading the tokenizer");
    let t = std::time::Instant::now();
    let kind: kgbox_neural::EngineKind = std::env::var("ENGINE")
        .unwrap_or_else(|_| "tract".into())
        .parse()
        .unwrap();
    let encoder =
        kgbox_neural::Encoder::load(kind, kgbox_neural::Device::Cpu, &onnx, &tokenizer).unwrap();
    let opset = kgbox_neural::engine::tract::opset(&onnx).unwrap();
    eprintln!(
        "loaded on {} in {:?}, opset {opset}",
        encoder.engine(),
        t.elapsed()
    );
    let texts: Vec<&str> = args[3..].iter().map(String::as_str).collect();
    if std::env::var("EACH").is_ok_and(|v| v == "1") {
        // One text per call (as a question is embedded), timed; the texts
        // should differ, or the vector cache answers.
        let mut ms: Vec<f64> = texts
            .iter()
            .map(|t| {
                let start = std::time::Instant::now();
                encoder.embed(&[t]).unwrap();
                start.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        ms.sort_by(f64::total_cmp);
        eprintln!(
            "one text per call: p50 {:.2} ms over {}",
            kgbox_protocol::stats::percentile(&ms, 50.0).unwrap_or(f64::NAN),
            ms.len()
        );
        return;
    }
    let t = std::time::Instant::now();
    let vectors = encoder.embed(&texts).unwrap();
    eprintln!("embedded {} texts in {:?}", texts.len(), t.elapsed());
    println!("{}", serde_json::to_string(&vectors).unwrap());
}
