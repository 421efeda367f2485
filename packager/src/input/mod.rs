//! Reading the packager's inputs: triples (TSV, N-Triples, Turtle or
//! N-Quads, each plain or compressed with gzip or zstd), aliases and relation
//! descriptions. Every input is read as a stream; malformed input is reported
//! with file and line.
//!
//! - `source.rs`: the format and compression from a file name; opening a
//!   file through its decompressor.
//! - `tsv.rs`: tab-separated triples, aliases, relation descriptions.
//! - `rdf.rs`: the RDF syntaxes (oxttl).
//! - `literals.rs`: the literal triples of an RDF file, held until the
//!   name predicates are chosen; long texts.
//! - `label_predicates.rs`: which predicates name entities (known,
//!   detected or given with `--label-predicate`).
//! - `names.rs`: entity and relation names from IRIs and labels.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use indicatif::ProgressBar;

mod interner;
mod label_predicates;
mod large;
mod literals;
mod names;
mod rdf;
mod source;
mod statements;
mod triples;
mod tsv;
pub mod wikidata;

pub use interner::Interner;
pub use large::{AliasRecord, LargeKg};
pub use rdf::read_rdf;
pub use source::{Compression, SUPPORTED};
pub use statements::RdfStatements;
pub use triples::{Triples, DEFAULT_LIMIT};
pub use tsv::{
    read_aliases, read_relation_aliases, read_relation_descriptions, read_tsv, skipped_aliases,
};

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
    #[error("{file}: --label-predicate <{iri}> is not a predicate of this graph")]
    UnknownLabelPredicate { file: PathBuf, iri: String },
    #[error(
        "{file}: --label-predicate <{iri}> has no literal objects to name entities with \
         (its objects are IRIs or blank nodes)"
    )]
    LabelPredicateWithoutLiterals { file: PathBuf, iri: String },
    #[error("{file}: --label-predicate applies to RDF input, and this file is TSV")]
    LabelPredicateOnTsv { file: PathBuf },
}

/// How the triples are read.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// RDF only: the predicates whose literals name entities, best first
    /// (full IRIs, `<IRI>` or a known prefix such as `rdfs:label`); empty:
    /// the known name predicates and the detected ones (see
    /// `label_predicates.rs`).
    pub label_predicates: Vec<String>,
    /// RDF only: leave out the statements as given (`rdf.*` sections,
    /// what `/sparql` answers from); `--no-rdf-statements`.
    pub no_statements: bool,
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
    /// W3C N-Quads (`.nq`); graph names are kept in the RDF statements
    /// only (the question-answering graph is one graph).
    Nquads,
    /// W3C TriG (`.trig`); graph names as for N-Quads.
    Trig,
    /// W3C RDF/XML (`.rdf`, `.owl`, `.xml`).
    RdfXml,
    /// W3C JSON-LD 1.0 (`.jsonld`); contexts must be inline (nothing is
    /// fetched); graph names as for N-Quads.
    JsonLd,
}

impl Format {
    /// The syntax from the file name, after any `.gz` or `.zst`: `.tsv` and
    /// `.txt` are TSV, `.nt` N-Triples, `.ttl` Turtle, `.nq` N-Quads,
    /// `.trig` TriG, `.rdf`, `.owl` and `.xml` RDF/XML, `.jsonld` JSON-LD
    /// (`x.ttl.gz` is Turtle through gzip). Anything else is an error that
    /// lists the supported formats.
    pub fn from_path(path: &Path) -> Result<Format, InputError> {
        source::format_of(path)
    }

    /// The RDF syntax for oxrdfio; `None` for TSV.
    pub fn rdf_format(self) -> Option<oxrdfio::RdfFormat> {
        use oxrdfio::RdfFormat;
        Some(match self {
            Format::Tsv => return None,
            Format::Ntriples => RdfFormat::NTriples,
            Format::Turtle => RdfFormat::Turtle,
            Format::Nquads => RdfFormat::NQuads,
            Format::Trig => RdfFormat::TriG,
            Format::RdfXml => RdfFormat::RdfXml,
            Format::JsonLd => RdfFormat::JsonLd {
                profile: oxrdfio::JsonLdProfileSet::empty(),
            },
        })
    }
}

/// Reads the triples file in `format`, or in the format its name gives.
pub fn read_triples(
    path: &Path,
    format: Option<Format>,
    kg: &mut RawKg,
    progress: &ProgressBar,
) -> Result<(), InputError> {
    read_triples_with(path, format, &ReadOptions::default(), kg, progress)
}

/// [`read_triples`] with options (`--label-predicate`).
pub fn read_triples_with(
    path: &Path,
    format: Option<Format>,
    opts: &ReadOptions,
    kg: &mut RawKg,
    progress: &ProgressBar,
) -> Result<(), InputError> {
    let format = match format {
        Some(f) => f,
        None => Format::from_path(path)?,
    };
    match format {
        Format::Tsv if !opts.label_predicates.is_empty() => Err(InputError::LabelPredicateOnTsv {
            file: path.to_path_buf(),
        }),
        Format::Tsv => read_tsv(path, kg, progress),
        rdf => rdf::read_rdf_with(path, rdf, opts, kg, progress),
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
    /// (relation, a word people say for it), in file order.
    pub relation_aliases: Vec<(u32, String)>,
    /// Source IRIs of entities read from RDF, by interned id (literal values
    /// and blank nodes have none).
    pub entity_iris: HashMap<u32, String>,
    /// Source predicate IRIs of relations read from RDF, by interned id.
    pub relation_iris: HashMap<u32, String>,
    /// The RDF statements as given, for the `rdf.*` sections (empty for
    /// TSV input).
    pub statements: RdfStatements,
    /// Input lines that named entities or relations absent from the triples.
    pub warnings: Vec<String>,
    /// What the reading chose, for the pack log (which predicates name
    /// entities and why, long texts kept out of the graph).
    pub notes: Vec<String>,
    /// The graph read to disk, once a TSV input outgrew the in-memory
    /// limit (see [`RawKg::with_spill`]); `entities` and `triples` are then
    /// empty and unused.
    pub large: Option<LargeKg>,
    /// Whether the graph may go to disk (`large`) when it outgrows memory.
    names_on_disk: bool,
}

impl RawKg {
    /// An empty graph held in memory up to `limit` triples (and names of up
    /// to `8 * limit` bytes). Beyond that,
    /// a TSV graph goes to disk in `dir` whole (`large`: names, triples and
    /// aliases, in bounded memory); an RDF graph, whose names are chosen
    /// after reading, keeps its names in memory and spills only its
    /// triples.
    pub fn with_spill(limit: usize, dir: Option<PathBuf>) -> RawKg {
        RawKg {
            triples: Triples::with_limit(limit, dir),
            names_on_disk: true,
            ..RawKg::default()
        }
    }

    /// Keeps the names in memory whatever the size (for inputs whose
    /// names are changed after reading).
    pub fn keep_names_in_memory(&mut self) {
        self.names_on_disk = false;
    }

    pub fn add_triple(&mut self, h: &str, r: &str, t: &str) -> std::io::Result<()> {
        if self.large.is_none() && self.names_on_disk && self.outgrew_memory() {
            self.go_to_disk()?;
        }
        if let Some(large) = &mut self.large {
            let r = self.relations.intern(r);
            let (h, t) = (large.name(h)?, large.name(t)?);
            return large.add_hashed(h, r, t);
        }
        let h = self.entities.intern(h);
        let r = self.relations.intern(r);
        let t = self.entities.intern(t);
        self.triples.push([h, r, t])
    }

    /// Whether nothing at all was read: no triples for the
    /// question-answering graph and no RDF statements.
    pub fn is_empty(&self) -> bool {
        self.triple_count() == 0 && self.statements.is_empty()
    }

    /// Triples read (duplicates included).
    pub fn triple_count(&self) -> u64 {
        match &self.large {
            Some(large) => large.count,
            None => self.triples.len(),
        }
    }

    /// Whether the graph read so far has more triples than the limit, or
    /// names that take more than 8 bytes per triple of it (256 MiB at the
    /// default: a graph with many names per triple goes to disk early).
    fn outgrew_memory(&self) -> bool {
        let (read, limit) = (self.triples.len(), self.triples.limit());
        read >= limit as u64
            || (read % 4096 == 0 && self.entities.memory() > limit.saturating_mul(8))
    }

    /// Moves what was read so far to a [`LargeKg`] and frees its memory.
    fn go_to_disk(&mut self) -> std::io::Result<()> {
        let mut large = LargeKg::new(self.triples.limit(), self.triples.dir())?;
        let hashes = self
            .entities
            .iter()
            .map(|name| large.name(name))
            .collect::<std::io::Result<Vec<u64>>>()?;
        for &[h, r, t] in self.triples.in_memory() {
            large.add_hashed(hashes[h as usize], r, hashes[t as usize])?;
        }
        self.entities = Interner::default();
        self.triples = Triples::with_limit(self.triples.limit(), self.triples.dir());
        self.large = Some(large);
        Ok(())
    }
}
