//! A bundle that leaves its in-edges to the device (`kgbox-pack build
//! --in-edges derive`): smaller, installed by `kgbox install` and over
//! `PUT /v1/bundles`, it passes `status --verify` and answers every query,
//! inverse hops included, as the bundle that carries them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kgbox_testkit::*;

const QUERIES: &[&str] = &[
    "\"Ridley Scott\" -> directed_by_inv",
    "\"Blade Runner\" -> directed_by -> directed_by_inv",
    "1982 -> release_year_inv -> starred_actors",
    "AND(\"Harrison Ford\" -> starred_actors_inv, Drama -> has_genre_inv) -> directed_by",
];

#[test]
fn a_bundle_without_its_in_edges_answers_as_the_one_with_them() {
    let kb = metaqa_kb();
    if !kb.exists() {
        eprintln!("skipped: no MetaQA KB at {}", kb.display());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::new(dir.path(), "derived", 41);
    let (ship, lean) = (dir.path().join("ship.kgb"), dir.path().join("lean.kgb"));
    pack(
        &kb,
        "metaqa",
        "1.0.0",
        &keys,
        &ship,
        &["--in-edges", "ship"],
    );
    pack(
        &kb,
        "metaqa",
        "1.0.0",
        &keys,
        &lean,
        &["--in-edges", "derive"],
    );
    let size = |p: &std::path::Path| std::fs::metadata(p).unwrap().len();
    assert!(
        size(&lean) * 10 < size(&ship) * 8,
        "derive {} bytes, ship {}",
        size(&lean),
        size(&ship)
    );

    let shipped = Device::new(&[&keys.public], "");
    shipped.install_ok(&ship);
    let derived = Device::new(&[&keys.public], "");
    derived.install_ok(&lean);
    let o = derived.kgbox(&["status", "--verify"]);
    assert!(o.status.success(), "status --verify: {}", stderr(&o));

    // The same bundle again over HTTP, as a live deploy to a running device.
    let token = "derived-test-admin-token-0123456789";
    let live = Device::new(&[&keys.public], "");
    live.install_ok(&ship);
    let server_live = live.serve_with_env(&[("KGBOX_ADMIN_TOKEN", token)]);
    let (code, body) = server_live.put_bytes("/v1/bundles", Some(token), &read(&lean));
    assert_eq!(code, 200, "{body}");

    let (a, b) = (shipped.serve(), derived.serve());
    for q in QUERIES {
        let want = a.query_names(q);
        assert!(!want.is_empty(), "{q}: no answers");
        assert_eq!(b.query_names(q), want, "{q}");
        assert_eq!(server_live.query_names(q), want, "{q} (live deploy)");
    }
}
