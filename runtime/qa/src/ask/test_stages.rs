//! The question pipeline's stages for tests: lexical linking and the exact
//! executor over a graph; and the check that a prompt carries no triple.

use kgbox_bundle::Kg;
use kgbox_query::exec::ExecOptions;
use kgbox_query::link::{link_text, LinkOptions, Mention};
use kgbox_query::{Answers, ParseLimits, QueryError};

use crate::pipeline::{ExecSpec, Stages};

/// Lexical linking and the exact executor over a graph.
pub(crate) struct Plain<'a, 'k>(pub &'a Kg<'k>);

impl Stages for Plain<'_, '_> {
    fn link(&self, text: &str) -> Result<Vec<Mention>, String> {
        Ok(link_text(self.0, text, &LinkOptions::default()))
    }
    fn execute(&self, spec: &ExecSpec<'_>) -> Result<Answers, QueryError> {
        let exec = ExecOptions {
            top_k: spec.candidates,
            exclude_anchors: !spec.keep_anchors,
            exclude: spec.exclude.to_vec(),
            ..ExecOptions::default()
        };
        kgbox_query::run_query(self.0, spec.query, &ParseLimits::default(), &exec).map(|(a, _)| a)
    }
}

/// The triples of `graph` found in `text`, in the forms a prompt could
/// carry them (a path, a tuple, tab- or space-separated, a JSON triple).
pub(crate) fn leaks(graph: &[(&str, &str, &str)], text: &str) -> Vec<String> {
    graph
        .iter()
        .flat_map(|(h, r, t)| {
            [
                format!("{h} -[{r}]-> {t}"),
                format!("{h} {r} {t}"),
                format!("{h}\t{r}\t{t}"),
                format!("({h}, {r}, {t})"),
                format!("{h} -> {r} -> {t}"),
                format!("\"{h}\" -> {r} -> \"{t}\""),
                serde_json::json!([h, r, t]).to_string(),
            ]
        })
        .filter(|f| text.contains(f.as_str()))
        .collect()
}
