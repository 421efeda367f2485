//! Reading the packager's inputs: triples (TSV, N-Triples, Turtle or
//! N-Quads, each plain or compressed with gzip or zstd), aliases and relation
//! descriptions. Every input is read as a stream; malformed input is reported
//! with file and line.
//!
//! - `source.rs`: the format and compression from a file name; opening a
//!   file through its decompressor.
//! - `tsv.rs`: tab-separated triples, aliases, relation descriptions.
//! - `rdf.rs`: the RDF syntaxes (oxttl), labels.
//! - `names.rs`: entity and relation names from IRIs and labels.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use indicatif::ProgressBar;

mod interner;
mod names;
mod rdf;
mod source;
mod triples;
mod tsv;

pub use interner::Interner;
pub use rdf::read_rdf;
pub use source::{Compression, SUPPORTED};
pub use triples::{Triples, DEFAULT_LIMIT};
pub use tsv::{read_aliases, read_relation_descriptions, read_tsv};

/// An input problem, always naming the file (and the line where there is one).
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{file}:{line}: {problem}")]
    Malformed {
        file: PathBuf,
        line: u64,
        problem: String,
    },
    #[error("{file}: {problem}")]
    Rdf { file: PathBuf, problem: String },
    #[error("cannot read {file}")]
    Io {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}: the {codec} stream is truncated or damaged")]
    Decompress {
        file: PathBuf,
        codec: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{file}: unknown triples format `{extension}`; supported: {SUPPORTED} \
         (or name the syntax with --format)"
    )]
    UnknownFormat { file: PathBuf, extension: String },
    #[error("{file}: no triples found")]
    Empty { file: PathBuf },
    #[error("cannot spill triples to the temporary directory (see --spill-dir)")]
    Spill(#[source] std::io::Error),
}

/// Triples file syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// `head<TAB>relation<TAB>tail`, one triple a line (`.tsv`, `.txt`).
    Tsv,
    /// W3C N-Triples (`.nt`).
    Ntriples,
    /// W3C Turtle (`.ttl`).
    Turtle,
    /// W3C N-Quads (`.nq`); the graph name is ignored.
    Nquads,
}

impl Format {
    /// The syntax from the file name, after any `.gz` or `.zst`: `.tsv` and
    /// `.txt` are TSV, `.nt` N-Triples, `.ttl` Turtle, `.nq` N-Quads
    /// (`x.ttl.gz` is Turtle through gzip). Anything else is an error that
    /// lists the supported formats.
    pub fn from_path(path: &Path) -> Result<Format, InputError> {
        source::format_of(path)
    }
}

/// Reads the triples file in `format`, or in the format its name gives.
pub fn read_triples(
    path: &Path,
    format: Option<Format>,
    kg: &mut RawKg,
    progress: &ProgressBar,
) -> Result<(), InputError> {
    let format = match format {
        Some(f) => f,
        None => Format::from_path(path)?,
    };
    match format {
        Format::Tsv => read_tsv(path, kg, progress),
        rdf => read_rdf(path, rdf, kg, progress),
    }
}

/// The KG as read, before ids are sorted and the graph is built.
#[derive(Debug, Default)]
pub struct RawKg {
    pub entities: Interner,
    pub relations: Interner,
    /// (head, relation, tail) in interned ids; may hold duplicates.
    pub triples: Triples,
    /// (entity, alias).
    pub aliases: Vec<(u32, String)>,
    pub relation_descriptions: HashMap<u32, String>,
    /// Source IRIs of entities read from RDF, by interned id (literal values
    /// and blank nodes have none).
    pub entity_iris: HashMap<u32, String>,
    /// Source predicate IRIs of relations read from RDF, by interned id.
    pub relation_iris: HashMap<u32, String>,
    /// Input lines that named entities or relations absent from the triples.
    pub warnings: Vec<String>,
}

impl RawKg {
    /// An empty graph whose triples spill to `dir` beyond `limit` in memory.
    pub fn with_spill(limit: usize, dir: Option<PathBuf>) -> RawKg {
        RawKg {
            triples: Triples::with_limit(limit, dir),
            ..RawKg::default()
        }
    }

    pub fn add_triple(&mut self, h: &str, r: &str, t: &str) -> std::io::Result<()> {
        let h = self.entities.intern(h);
        let r = self.relations.intern(r);
        let t = self.entities.intern(t);
        self.triples.push([h, r, t])
    }
}
