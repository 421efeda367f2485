//! Malformed inputs and arguments: the binary exits with status 1 (2 for
//! argument errors) and a message naming the file and line, never a panic,
//! and leaves no bundle behind.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{assert_fails, build_args, cli, options, stderr, stdout, test_key, write, write_key};

struct Case {
    dir: tempfile::TempDir,
    key: PathBuf,
    out: PathBuf,
}

impl Case {
    fn new() -> Case {
        let dir = tempfile::tempdir().unwrap();
        let key = write_key(dir.path());
        let out = dir.path().join("out.kgb");
        Case { dir, key, out }
    }

    fn file(&self, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        write(self.dir.path(), name, bytes)
    }

    /// Runs `build` on `triples` with `extra` arguments appended.
    fn build(&self, triples: &Path, extra: &[&str]) -> Output {
        let (t, k, o) = (s(triples), s(&self.key), s(&self.out));
        let mut args = build_args(t, k, o);
        args.extend_from_slice(extra);
        cli(&args, &[])
    }

    /// Runs `build`, expects a clean failure, and checks nothing was written.
    fn fails(&self, triples: &Path, extra: &[&str]) -> String {
        let out = self.build(triples, extra);
        let err = assert_fails(&out);
        assert!(!self.out.exists(), "a bundle was written despite: {err}");
        let partial = self.dir.path().join("out.kgb.partial");
        assert!(!partial.exists(), "a partial bundle was left behind");
        err
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

const GOOD: &str = "a\tr\tb\nb\tr\tc\n";

#[test]
fn wrong_field_count_names_file_and_line() {
    let c = Case::new();
    let t = c.file("triples.tsv", "a\tr\tb\n# comment\nc\td\n");
    let err = c.fails(&t, &[]);
    assert!(err.contains(&format!("{}:3:", t.display())), "{err}");
    assert!(err.contains("expected 3 tab-separated fields"), "{err}");
    assert!(err.contains("found 2"), "{err}");

    let t = c.file("four.tsv", "a\tr\tb\n\n\na\tr\tb\tx\n");
    let err = c.fails(&t, &[]);
    assert!(err.contains(&format!("{}:4:", t.display())), "{err}");
    assert!(err.contains("found 4"), "{err}");

    // Spaces are not separators.
    let t = c.file("spaces.tsv", "a r b\n");
    let err = c.fails(&t, &[]);
    assert!(err.contains(&format!("{}:1:", t.display())), "{err}");
    assert!(err.contains("found 1"), "{err}");
}

#[test]
fn empty_field_names_file_line_and_field() {
    let c = Case::new();
    let t = c.file("triples.tsv", "a\tr\tb\nc\t\td\n");
    let err = c.fails(&t, &[]);
    assert!(
        err.contains(&format!("{}:2: field 2 is empty", t.display())),
        "{err}"
    );

    // Whitespace-only fields are empty once trimmed.
    let t = c.file("blank.tsv", "a\tr\t  \n");
    let err = c.fails(&t, &[]);
    assert!(
        err.contains(&format!("{}:1: field 3 is empty", t.display())),
        "{err}"
    );
}

#[test]
fn invalid_utf8_names_file_and_line() {
    let c = Case::new();
    let t = c.file("latin1.tsv", b"a\tr\tb\nCaf\xe9\tr\tb\n");
    let err = c.fails(&t, &[]);
    assert!(err.contains(&format!("{}:2:", t.display())), "{err}");
    assert!(err.contains("not valid UTF-8"), "{err}");
}

#[test]
fn empty_input_has_no_triples() {
    let c = Case::new();
    for (name, text) in [("empty.tsv", ""), ("comments.tsv", "# nothing\n\n   \n")] {
        let t = c.file(name, text);
        let err = c.fails(&t, &[]);
        assert!(
            err.contains(&format!("{}: no triples found", t.display())),
            "{err}"
        );
    }
    let t = c.file("empty.nt", "# no triples here\n");
    let err = c.fails(&t, &[]);
    assert!(err.contains("empty.nt: no triples found"), "{err}");
}

#[test]
fn missing_input_files_are_named() {
    let c = Case::new();
    let missing = c.dir.path().join("missing.tsv");
    let err = c.fails(&missing, &[]);
    assert!(
        err.contains(&format!("cannot read {}", missing.display())),
        "{err}"
    );

    let t = c.file("triples.tsv", GOOD);
    let aliases = c.dir.path().join("no-aliases.tsv");
    let err = c.fails(&t, &["--aliases", s(&aliases)]);
    assert!(
        err.contains(&format!("cannot read {}", aliases.display())),
        "{err}"
    );

    let mut args = build_args(s(&t), "/nonexistent/key", s(&c.out));
    args.retain(|a| *a != "--quiet");
    let err = assert_fails(&cli(&args, &[]));
    assert!(err.contains("cannot load the signing key"), "{err}");
    assert!(err.contains("/nonexistent/key"), "{err}");
}

#[test]
fn malformed_ntriples_name_file_and_position() {
    let c = Case::new();
    let cases = [
        (
            "bad-dot.nt",
            "<http://a> <http://b> <http://c> .\n\n<http://a> <http://b> <http://c> <http://d> .\n",
            3,
        ),
        (
            "bad-subject.nt",
            "<http://a> <http://b> <http://c> .\nfoo <http://b> <http://c> .\n",
            2,
        ),
        ("bad-literal.nt", "<http://a> <http://b> \"open .\n", 1),
    ];
    for (name, text, line) in cases {
        let t = c.file(name, text);
        let err = c.fails(&t, &[]);
        assert!(
            err.contains(&format!("{}:{line}: ", t.display())),
            "{name}: {err}"
        );
        assert!(err.contains("(column "), "{name}: {err}");
    }
}

#[test]
fn malformed_aliases_and_relations_files_name_their_file() {
    let c = Case::new();
    let t = c.file("triples.tsv", GOOD);
    let a = c.file("aliases.tsv", "a\tfirst\nb\n");
    let err = c.fails(&t, &["--aliases", s(&a)]);
    assert!(err.contains(&format!("{}:2:", a.display())), "{err}");
    assert!(
        err.contains("expected 2 tab-separated fields (entity, alias)"),
        "{err}"
    );

    let r = c.file("relations.tsv", "r\tsome\ttext\n");
    let err = c.fails(&t, &["--relations", s(&r)]);
    assert!(err.contains(&format!("{}:1:", r.display())), "{err}");
    assert!(err.contains("(relation, description)"), "{err}");
}

#[test]
fn aliases_of_unknown_entities_are_a_warning() {
    let c = Case::new();
    let t = c.file("triples.tsv", GOOD);
    let a = c.file("aliases.tsv", "a\tAy\nzz\tZed\nb\tBee\nyy\tWhy\n");
    let out = c.build(&t, &["--aliases", s(&a)]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.starts_with("warning: "), "{err}");
    assert!(err.contains(&a.display().to_string()), "{err}");
    assert!(err.contains("skipped 2 aliases"), "{err}");
    assert!(err.contains("first: line 2, `zz`"), "{err}");
    assert!(stdout(&out).contains("2 aliases"), "{}", stdout(&out));
    assert!(c.out.exists());
}

#[test]
fn bad_version_and_level_are_argument_errors() {
    let c = Case::new();
    let t = c.file("triples.tsv", GOOD);
    for bad in [
        ["--version", "1.0"],
        ["--version", "one"],
        ["--level", "0"],
        ["--level", "23"],
    ] {
        let mut args = build_args(s(&t), s(&c.key), s(&c.out));
        let at = args.iter().position(|a| *a == bad[0]).unwrap();
        args[at + 1] = bad[1];
        let out = cli(&args, &[]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {err}");
        assert!(err.contains("invalid value"), "{bad:?}: {err}");
        assert!(err.contains(bad[0]), "{bad:?}: {err}");
        assert!(!c.out.exists());
    }
    let out = cli(&["build", "--triples", s(&t)], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("required"), "{}", stderr(&out));
}

#[test]
fn bad_bundle_name_compatible_and_epoch_are_refused() {
    let c = Case::new();
    let t = c.file("triples.tsv", GOOD);
    for name in ["bad name", "", "slash/name", "ünïcode", &"x".repeat(129)] {
        let mut args = build_args(s(&t), s(&c.key), s(&c.out));
        let at = args.iter().position(|a| *a == "cli-test").unwrap();
        args[at] = name;
        let err = assert_fails(&cli(&args, &[]));
        assert!(err.contains("bundle name"), "{name:?}: {err}");
    }
    let err = c.fails(&t, &["--compatible", "two words"]);
    assert!(err.contains("--compatible"), "{err}");

    let mut args = build_args(s(&t), s(&c.key), s(&c.out));
    args.retain(|a| *a != "--quiet");
    let err = assert_fails(&cli(&args, &[("SOURCE_DATE_EPOCH", "yesterday")]));
    assert!(err.contains("SOURCE_DATE_EPOCH"), "{err}");
}

#[test]
fn library_errors_carry_the_same_messages() {
    let dir = tempfile::tempdir().unwrap();
    let t = write(dir.path(), "t.tsv", "a\tr\tb\nx\ty\n");
    let out = dir.path().join("o.kgb");
    let Err(err) = kgbox_pack::pack(&options(&t), &test_key(), &out) else {
        panic!("packing a malformed file succeeded");
    };
    let msg = format!("{err:#}");
    assert!(msg.starts_with(&format!("{}:2: ", t.display())), "{msg}");
    let input = err
        .downcast_ref::<kgbox_pack::input::InputError>()
        .expect("an InputError");
    assert!(
        matches!(
            input,
            kgbox_pack::input::InputError::Malformed { line: 2, .. }
        ),
        "{input:?}"
    );
    assert!(!out.exists());
}
