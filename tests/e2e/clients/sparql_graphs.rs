//! Three public RDF graphs (benches/owngraph: music, Star Wars, ISWC), each
//! packed with the real `kgbox-pack` and served: 70-odd queries per graph
//! (tests/fixtures/sparql: the graph's own and the ones that fit any graph,
//! among them two columns with a date, OPTIONAL, COUNT, date and number
//! FILTERs, `SELECT * { ?s ?p ?o } LIMIT 10`, `<s> ?p ?o`, CONSTRUCT and
//! DESCRIBE) give through `/sparql` what pyoxigraph gives over the same file:
//! terms with their datatypes and languages, rows in order where ordered,
//! isomorphic graphs.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use kgbox_testkit::clients::{client_passes, require_python_modules};
use kgbox_testkit::*;

/// About 75 queries over 40k statements with a debug build take seconds;
/// this leaves room for a loaded CI machine.
const GRAPH_LIMIT: Duration = Duration::from_secs(300);

#[test]
fn public_graphs_answer_as_pyoxigraph_does() {
    require_python_modules(&["pyoxigraph", "rdflib"]);
    let work = tempfile::tempdir().unwrap();
    let keys = Keys::new(work.path(), "operator", 1);
    let queries = repo_root().join("tests/fixtures/sparql");
    for graph in ["music", "starwars", "iswc"] {
        let src = repo_root().join(format!("benches/owngraph/{graph}/graph.nt.gz"));
        let bundle = work.path().join(format!("{graph}.kgb"));
        pack(&src, graph, "1.0.0", &keys, &bundle, &[]);
        let device = Device::new(&[&keys.public], "");
        device.install_ok(&bundle);
        let server = device.serve();
        let url = format!("http://127.0.0.1:{}/sparql", server.port);
        let out = client_passes(
            "sparql_graphs.py",
            &[
                &url,
                src.to_str().unwrap(),
                queries.join("any-graph.rq").to_str().unwrap(),
                queries.join(format!("{graph}.rq")).to_str().unwrap(),
                "--min-queries",
                "50",
            ],
            &[],
            GRAPH_LIMIT,
        );
        assert!(out.contains("queries equal to pyoxigraph's"), "{out}");
        println!("{out}");
    }
}
