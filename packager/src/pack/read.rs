//! The read stage: the graph's triples, aliases, relation descriptions and relation aliases
//! into a [`RawKg`] (to disk past `--sort-run`), and the planner examples.

use anyhow::{Context, Result};
use kgbox_qa::planner::train::{parse_examples, Example};

use super::options::PackOptions;
use super::progress::read_bar;
use crate::input::{self, InputError, RawKg};

/// What the read stage gives the graph and model stages.
pub(super) struct Inputs {
    /// The graph as read, with the warnings and notes of reading.
    pub raw: RawKg,
    /// The planner examples (`--planner-examples`), empty when there are none.
    pub examples: Vec<Example>,
}

/// Reads the inputs that `opts` names.
pub(super) fn inputs(opts: &PackOptions) -> Result<Inputs> {
    let mut raw = graph(opts)?;
    if let Some(note) = read_to_disk_note(&raw, opts.scale.sort_run) {
        raw.notes.push(note);
    }
    let examples = planner_examples(opts)?;
    Ok(Inputs { raw, examples })
}

/// The triples, then the aliases and the relation descriptions, with a
/// progress bar of the bytes read; no triples at all is an error.
fn graph(opts: &PackOptions) -> Result<RawKg> {
    let bar = read_bar(opts.progress);
    let mut raw = RawKg::with_spill(opts.scale.sort_run, opts.scale.spill_dir.clone());
    bar.set_message("reading triples");
    let read = input::ReadOptions {
        label_predicates: opts.label_predicates.clone(),
        no_statements: !opts.rdf_statements,
    };
    input::read_triples_with(&opts.triples, opts.format, &read, &mut raw, &bar)?;
    if raw.is_empty() && !opts.allow_empty {
        return Err(InputError::Empty {
            file: opts.triples.clone(),
        }
        .into());
    }
    if let Some(path) = &opts.aliases {
        bar.set_message("reading aliases");
        input::read_aliases(path, &mut raw, &bar)?;
    }
    if let Some(path) = &opts.relations {
        input::read_relation_descriptions(path, &mut raw, &bar)?;
    }
    if let Some(path) = &opts.relation_aliases {
        input::read_relation_aliases(path, &mut raw, &bar)?;
    }
    bar.finish_and_clear();
    Ok(raw)
}

/// The operator's note on a graph read to disk whole.
fn read_to_disk_note(raw: &RawKg, sort_run: usize) -> Option<String> {
    let large = raw.large.as_ref()?;
    Some(format!(
        "read to disk: {} triples (past --sort-run {} triples or 8 bytes of names per \
         triple); the set of seen names \
         filled {} times",
        large.count,
        sort_run,
        large.windows()
    ))
}

/// The planner examples of `opts.planner`, parsed (none without a file).
fn planner_examples(opts: &PackOptions) -> Result<Vec<Example>> {
    let Some(path) = opts.planner.as_ref().and_then(|p| p.examples.as_deref()) else {
        return Ok(Vec::new());
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the planner examples {}", path.display()))?;
    parse_examples(&text).with_context(|| format!("in {}", path.display()))
}
