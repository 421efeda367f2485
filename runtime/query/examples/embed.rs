//! Prints the embeddings of texts as JSON (for checking the encoder against
//! another runtime, see `models/minilm/check-onnxruntime.py`).
//!
//! `cargo run -p kgbox-query --features dense --example embed -- MODEL.onnx TOKENIZER.json TEXT...`
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
    let encoder = kgbox_query::dense::Encoder::from_bytes(&onnx, &tokenizer).unwrap();
    eprintln!("loaded in {:?}, opset {}", t.elapsed(), encoder.opset());
    let texts: Vec<&str> = args[3..].iter().map(String::as_str).collect();
    let t = std::time::Instant::now();
    let vectors = encoder.embed(&texts).unwrap();
    eprintln!("embedded {} texts in {:?}", texts.len(), t.elapsed());
    println!("{}", serde_json::to_string(&vectors).unwrap());
}
