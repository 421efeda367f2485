//! `kgbox-pack keygen` and `kgbox-pack inspect`, run as the binary.
#![allow(clippy::unwrap_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::{assert_fails, build_args, cli, load, stderr, stdout, write, write_key};
use kgbox_bundle::{BundleError, BundleReader, PublicKey, SecretKey, TrustedKeys};

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn keygen(dir: &Path, name: &str, force: bool) -> std::process::Output {
    let mut args = vec!["keygen", "--out", dir.to_str().unwrap(), "--name", name];
    if force {
        args.push("--force");
    }
    cli(&args, &[])
}

const TRIPLES: &str = "Blade Runner\tdirected_by\tRidley Scott\nAlien\tdirected_by\tRidley Scott\n";

/// The arguments that build a two-triple bundle in `dir` (key and
/// triples written there), and the bundle's path.
fn small_build(dir: &Path) -> (Vec<String>, PathBuf) {
    let key = write_key(dir);
    let triples = write(dir, "t.tsv", TRIPLES);
    let bundle = dir.join("b.kgb");
    let args = build_args(
        triples.to_str().unwrap(),
        key.to_str().unwrap(),
        bundle.to_str().unwrap(),
    )
    .into_iter()
    .map(String::from)
    .collect();
    (args, bundle)
}

#[test]
fn keygen_writes_a_private_secret_and_a_readable_public_key() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys/nested");
    let out = keygen(&keys, "fleet", false);
    assert!(out.status.success(), "{}", stderr(&out));
    let (secret, public) = (keys.join("fleet.key"), keys.join("fleet.pub"));
    assert!(stdout(&out).contains(&secret.display().to_string()));
    assert!(stdout(&out).contains(&public.display().to_string()));

    assert_eq!(mode(&secret), 0o600, "secret key mode {:o}", mode(&secret));
    let pmode = mode(&public);
    assert_eq!(pmode & 0o600, 0o600, "public key mode {pmode:o}");
    assert_eq!(pmode & 0o133, 0, "public key mode {pmode:o}");

    let sk = SecretKey::read(&secret).unwrap();
    let pk = PublicKey::read(&public).unwrap();
    assert_eq!(sk.public().key_id(), pk.key_id());
    assert_eq!(pk.comment, "fleet");
    // The secret file holds the secret tag, not the public one, and vice versa.
    assert!(PublicKey::read(&secret).is_err());
    assert!(SecretKey::read(&public).is_err());
}

#[test]
fn keygen_refuses_to_overwrite_without_force() {
    let dir = tempfile::tempdir().unwrap();
    assert!(keygen(dir.path(), "k", false).status.success());
    let secret = dir.path().join("k.key");
    let public = dir.path().join("k.pub");
    let before = (
        std::fs::read(&secret).unwrap(),
        std::fs::read(&public).unwrap(),
    );

    let err = assert_fails(&keygen(dir.path(), "k", false));
    assert!(err.contains("already exists"), "{err}");
    assert!(err.contains("k.key"), "{err}");
    assert!(err.contains("--force"), "{err}");
    let after = (
        std::fs::read(&secret).unwrap(),
        std::fs::read(&public).unwrap(),
    );
    assert_eq!(before, after, "a refused keygen changed the key files");

    // A lone public key also blocks, and no secret key appears beside it.
    let lone = tempfile::tempdir().unwrap();
    write(lone.path(), "k.pub", "kept");
    let err = assert_fails(&keygen(lone.path(), "k", false));
    assert!(
        err.contains("k.pub") && err.contains("already exists"),
        "{err}"
    );
    assert!(!lone.path().join("k.key").exists());
    assert_eq!(
        std::fs::read_to_string(lone.path().join("k.pub")).unwrap(),
        "kept"
    );

    // --force replaces both with a new pair, still private.
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = keygen(dir.path(), "k", true);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_ne!(std::fs::read(&secret).unwrap(), before.0);
    assert_ne!(std::fs::read(&public).unwrap(), before.1);
    assert_eq!(mode(&secret), 0o600);
    let sk = SecretKey::read(&secret).unwrap();
    assert_eq!(
        sk.public().key_id(),
        PublicKey::read(&public).unwrap().key_id()
    );
}

#[test]
fn generated_key_signs_bundles_that_verify_with_its_public_key() {
    let dir = tempfile::tempdir().unwrap();
    assert!(keygen(dir.path(), "signer", false).status.success());
    assert!(keygen(dir.path(), "stranger", false).status.success());
    let key = dir.path().join("signer.key");
    let triples = write(dir.path(), "t.tsv", TRIPLES);
    let bundle = dir.path().join("b.kgb");
    let out = cli(
        &build_args(
            triples.to_str().unwrap(),
            key.to_str().unwrap(),
            bundle.to_str().unwrap(),
        ),
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let public = PublicKey::read(&dir.path().join("signer.pub")).unwrap();
    assert!(stdout(&out).contains(&public.key_id().to_string()));

    let loaded = load(&bundle, &public);
    assert_eq!(loaded.signer.key_id(), public.key_id());
    assert_eq!(loaded.kg().triple_count(), 2);

    let stranger = PublicKey::read(&dir.path().join("stranger.pub")).unwrap();
    let reader = BundleReader::open(std::fs::File::open(&bundle).unwrap()).unwrap();
    let err = reader
        .verify_signature(&TrustedKeys::new(vec![stranger]))
        .unwrap_err();
    assert!(matches!(err, BundleError::UntrustedKey { .. }), "{err}");
}

#[test]
fn inspect_prints_the_manifest_and_every_section() {
    let dir = tempfile::tempdir().unwrap();
    let key = write_key(dir.path());
    let triples = write(dir.path(), "t.tsv", TRIPLES);
    let relations = write(dir.path(), "r.tsv", "directed_by\tdirector\n");
    let bundle = dir.path().join("b.kgb");
    let mut args = build_args(
        triples.to_str().unwrap(),
        key.to_str().unwrap(),
        bundle.to_str().unwrap(),
    );
    let v = args.iter().position(|a| *a == "1.0.0").unwrap();
    args[v] = "2.3.4-rc.1";
    let n = args.iter().position(|a| *a == "cli-test").unwrap();
    args[n] = "inspect-me";
    args.extend(["--relations", relations.to_str().unwrap()]);
    assert!(cli(&args, &[]).status.success());

    let out = cli(&["inspect", bundle.to_str().unwrap()], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("\"name\": \"inspect-me\""), "{text}");
    assert!(text.contains("\"version\": \"2.3.4-rc.1\""), "{text}");
    assert!(text.contains("\"triples\": 2"), "{text}");
    let size = std::fs::metadata(&bundle).unwrap().len();
    assert!(
        text.contains(&format!("size        {size} bytes")),
        "{text}"
    );
    let key_id = common::test_key().public().key_id().to_string();
    assert!(
        text.contains(&format!("signed by   key {key_id}")),
        "{text}"
    );

    let reader = BundleReader::open(std::fs::File::open(&bundle).unwrap()).unwrap();
    let sections = &reader.prefix().sections;
    assert_eq!(sections.len(), 17, "15 required and 2 description sections");
    for s in sections {
        let row = text
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{} ", s.name)))
            .unwrap_or_else(|| panic!("no row for section {}: {text}", s.name));
        let want = if s.required() { " yes " } else { " no " };
        assert!(row.contains(want), "{row}");
        assert!(row.contains(&s.stored_len.to_string()), "{row}");
    }
}

#[test]
fn inspect_refuses_files_that_are_not_bundles() {
    let dir = tempfile::tempdir().unwrap();
    let text = write(dir.path(), "notes.txt", "this is not a bundle\n");
    let err = assert_fails(&cli(&["inspect", text.to_str().unwrap()], &[]));
    assert!(
        err.contains(&format!("{} is not a valid bundle", text.display())),
        "{err}"
    );

    let empty = write(dir.path(), "empty.kgb", "");
    let err = assert_fails(&cli(&["inspect", empty.to_str().unwrap()], &[]));
    assert!(err.contains("is not a valid bundle"), "{err}");

    // A real bundle cut short.
    let (args, bundle) = small_build(dir.path());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert!(cli(&args, &[]).status.success());
    let bytes = std::fs::read(&bundle).unwrap();
    let cut = write(dir.path(), "cut.kgb", &bytes[..bytes.len() - 10]);
    let err = assert_fails(&cli(&["inspect", cut.to_str().unwrap()], &[]));
    assert!(err.contains("cut.kgb is not a valid bundle"), "{err}");

    let missing = dir.path().join("missing.kgb");
    let err = assert_fails(&cli(&["inspect", missing.to_str().unwrap()], &[]));
    assert!(
        err.contains(&format!("cannot open {}", missing.display())),
        "{err}"
    );
}

#[test]
fn keygen_refuses_names_that_are_not_plain_file_names() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["../escape", "a/b", ".hidden", ""] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_kgbox-pack"))
            .args(["keygen", "--out"])
            .arg(dir.path())
            .args(["--name", bad])
            .output()
            .unwrap();
        assert!(!o.status.success(), "{bad:?} was accepted");
        assert!(String::from_utf8_lossy(&o.stderr).contains("key name"));
    }
    assert!(!dir.path().parent().unwrap().join("escape.key").exists());
}

#[test]
fn an_exported_train_python_does_not_make_a_build_train() {
    let dir = tempfile::tempdir().unwrap();
    let (args, bundle) = small_build(dir.path());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = cli(&args, &[("KGBOX_TRAIN_PYTHON", "/nonexistent/python")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(bundle.exists());
}
