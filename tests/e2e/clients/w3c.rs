//! The W3C SPARQL 1.1 query evaluation tests (third_party/rdf-tests/) on
//! kgbox and on pyoxigraph: `tests/clients/w3c_sparql.py` packs each test's
//! dataset with the real `kgbox-pack`, runs its query with `kgbox sparql
//! --bundle`, and fails when kgbox passes less than 95% of the tests that
//! pyoxigraph passes. The list of kgbox's failures is kept as
//! `TARGET_DIR/test-artifacts/w3c-sparql-failures.md` (the table of
//! docs/sparql.md, "W3C test suite").
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use kgbox_testkit::clients::{client_passes, require_python_modules, test_artifacts};
use kgbox_testkit::*;

/// The whole suite takes seconds with a debug build; this leaves room for a loaded CI machine.
const SUITE_LIMIT: Duration = Duration::from_secs(600);

#[test]
fn w3c_sparql11_query_tests_pass_as_on_pyoxigraph() {
    require_python_modules(&["pyoxigraph"]);
    let kgbox = bin("kgbox");
    let pack = bin("kgbox-pack");
    let table = test_artifacts().join("w3c-sparql-failures.md");
    let output = client_passes(
        "w3c_sparql.py",
        &[
            "--kgbox",
            kgbox.to_str().unwrap(),
            "--kgbox-pack",
            pack.to_str().unwrap(),
            "--min-share",
            "0.95",
            "--markdown",
            table.to_str().unwrap(),
        ],
        &[],
        SUITE_LIMIT,
    );
    assert!(output.contains("pyoxigraph passes"), "{output}");
    println!("{output}failures: {}", table.display());
}
