//! The question pipeline's stages for tests: lexical linking and the exact
//! executor over a graph.

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
            ..ExecOptions::default()
        };
        kgbox_query::run_query(self.0, spec.query, &ParseLimits::default(), &exec).map(|(a, _)| a)
    }
}
