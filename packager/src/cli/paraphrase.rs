//! `kgbox-pack paraphrase`: its arguments, the [`ParaphraseOptions`] they
//! make, and the summary printed after the rewording.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use kgbox_pack::paraphrase::{paraphrase, ParaphraseOptions, ParaphraseReport};

use super::graph::GraphArgs;

/// `kgbox-pack paraphrase`.
#[derive(clap::Args)]
pub struct ParaphraseArgs {
    /// The graph the examples are about (as for `build`).
    #[command(flatten)]
    graph: GraphArgs,
    /// Planner examples (`question<TAB>DSL[<TAB>answers]`) to reword.
    #[arg(long)]
    examples: PathBuf,
    /// OpenAI-compatible base URL of the model that rewords, e.g.
    /// `http://127.0.0.1:8080/v1` (`python3 -m llama_cpp.server --model M.gguf`).
    #[arg(long)]
    endpoint: String,
    /// The requests' `model` field.
    #[arg(long, default_value = "default")]
    model: String,
    /// Environment variable holding the endpoint's API key.
    #[arg(long)]
    api_key_env: Option<String>,
    /// Per-call timeout in seconds.
    #[arg(long, default_value_t = 120)]
    timeout_s: u64,
    /// Examples reworded per query template.
    #[arg(long, default_value_t = 4)]
    per_template: usize,
    /// Rewordings asked for per example.
    #[arg(long, default_value_t = 3)]
    variants: usize,
    /// Record every call (request and reply sizes, bodies) as JSON lines.
    #[arg(long)]
    audit_log: Option<PathBuf>,
    /// The kept rewordings, to pass to `build --planner-examples` together
    /// with the original examples (concatenate the files).
    #[arg(short, long)]
    out: PathBuf,
    #[arg(long)]
    quiet: bool,
}

impl From<ParaphraseArgs> for ParaphraseOptions {
    fn from(args: ParaphraseArgs) -> ParaphraseOptions {
        ParaphraseOptions {
            triples: args.graph.triples,
            format: args.graph.format,
            aliases: args.graph.aliases,
            examples: args.examples,
            endpoint: args.endpoint,
            model: args.model,
            api_key_env: args.api_key_env,
            timeout: Duration::from_secs(args.timeout_s.max(1)),
            per_template: args.per_template,
            variants: args.variants,
            audit_log: args.audit_log,
            progress: !args.quiet,
        }
    }
}

/// Rewords the examples as `args` ask and prints what was kept.
pub fn run(args: ParaphraseArgs) -> Result<()> {
    let out = args.out.clone();
    let report = paraphrase(&ParaphraseOptions::from(args), &out)?;
    print_report(&report, &out);
    Ok(())
}

/// The rewordings written and kept, and why the others were dropped.
fn print_report(r: &ParaphraseReport, out: &Path) {
    println!(
        "{} examples reworded: {} rewordings written, {} kept in {}{}",
        r.examples,
        r.written,
        r.kept,
        out.display(),
        if r.failed_calls > 0 {
            format!(" ({} calls failed)", r.failed_calls)
        } else {
            String::new()
        }
    );
    for (why, n) in &r.dropped {
        println!("  dropped {n}: {why}");
    }
}
