//! The graph's input files, as `build` and `paraphrase` take them.

use std::path::PathBuf;

use kgbox_pack::input::Format;

/// The graph's input files.
#[derive(clap::Args)]
pub struct GraphArgs {
    /// Triples: TSV `head<TAB>relation<TAB>tail` (`.tsv`, `.txt`),
    /// N-Triples (`.nt`), Turtle (`.ttl`), N-Quads (`.nq`), TriG (`.trig`),
    /// RDF/XML (`.rdf`, `.owl`, `.xml`) or JSON-LD (`.jsonld`), each also
    /// compressed (`.gz`, `.zst`).
    #[arg(long)]
    pub triples: PathBuf,
    /// Input syntax (default: from the extension, looking past `.gz`/`.zst`).
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Aliases: `entity<TAB>alias` lines.
    #[arg(long)]
    pub aliases: Option<PathBuf>,
}
