//! Reading the packager's inputs: triples (TSV or N-Triples), aliases and
//! relation descriptions. Malformed input is reported with file and line.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use indicatif::ProgressBar;

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
    #[error("{file}: no triples found")]
    Empty { file: PathBuf },
}

/// Triples file syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// `head<TAB>relation<TAB>tail`, one triple a line.
    Tsv,
    /// W3C N-Triples.
    Ntriples,
}

impl Format {
    /// Guesses from the extension: `.nt` is N-Triples, anything else TSV.
    pub fn from_path(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("nt") => Format::Ntriples,
            _ => Format::Tsv,
        }
    }
}

/// Strings to dense ids, in first-seen order.
#[derive(Debug, Default)]
pub struct Interner {
    ids: HashMap<String, u32>,
    pub names: Vec<String>,
}

impl Interner {
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.names.len() as u32;
        self.ids.insert(s.to_string(), id);
        self.names.push(s.to_string());
        id
    }

    pub fn get(&self, s: &str) -> Option<u32> {
        self.ids.get(s).copied()
    }

    /// Renames every string; `f` must keep them distinct.
    pub fn rename(&mut self, f: impl Fn(usize, &str) -> String) {
        self.names = self
            .names
            .iter()
            .enumerate()
            .map(|(i, n)| f(i, n))
            .collect();
        self.ids = self
            .names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i as u32))
            .collect();
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// The KG as read, before ids are sorted and the graph is built.
#[derive(Debug, Default)]
pub struct RawKg {
    pub entities: Interner,
    pub relations: Interner,
    /// (head, relation, tail) in interned ids; may hold duplicates.
    pub triples: Vec<[u32; 3]>,
    /// (entity, alias).
    pub aliases: Vec<(u32, String)>,
    pub relation_descriptions: HashMap<u32, String>,
    /// Input lines that named entities or relations absent from the triples.
    pub warnings: Vec<String>,
}

impl RawKg {
    pub fn add_triple(&mut self, h: &str, r: &str, t: &str) {
        let h = self.entities.intern(h);
        let r = self.relations.intern(r);
        let t = self.entities.intern(t);
        self.triples.push([h, r, t]);
    }
}

fn open(path: &Path, progress: &ProgressBar) -> Result<Box<dyn BufRead>, InputError> {
    let file = File::open(path).map_err(|source| InputError::Io {
        file: path.to_path_buf(),
        source,
    })?;
    if let Ok(meta) = file.metadata() {
        progress.set_length(meta.len());
    }
    progress.set_position(0);
    progress.set_message(path.display().to_string());
    Ok(Box::new(BufReader::with_capacity(
        1 << 20,
        progress.wrap_read(file),
    )))
}

/// Calls `f(line_number, fields)` for each non-empty, non-comment line of a
/// tab-separated file with exactly `n` non-empty fields.
fn for_each_tsv_line(
    path: &Path,
    n: usize,
    what: &str,
    progress: &ProgressBar,
    mut f: impl FnMut(u64, &[&str]),
) -> Result<(), InputError> {
    let mut reader = open(path, progress)?;
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    let malformed = |line: u64, problem: String| InputError::Malformed {
        file: path.to_path_buf(),
        line,
        problem,
    };
    loop {
        buf.clear();
        let read = reader
            .read_until(b'\n', &mut buf)
            .map_err(|source| InputError::Io {
                file: path.to_path_buf(),
                source,
            })?;
        if read == 0 {
            break;
        }
        line_no += 1;
        let line = std::str::from_utf8(&buf)
            .map_err(|e| malformed(line_no, format!("not valid UTF-8 ({e})")))?;
        let line = line.trim_end_matches(['\n', '\r']);
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').map(str::trim).collect();
        if fields.len() != n {
            return Err(malformed(
                line_no,
                format!(
                    "expected {n} tab-separated fields ({what}), found {}",
                    fields.len()
                ),
            ));
        }
        if let Some(i) = fields.iter().position(|f| f.is_empty()) {
            return Err(malformed(line_no, format!("field {} is empty", i + 1)));
        }
        f(line_no, &fields);
    }
    Ok(())
}

/// Reads `head<TAB>relation<TAB>tail` lines.
pub fn read_tsv(path: &Path, kg: &mut RawKg, progress: &ProgressBar) -> Result<(), InputError> {
    for_each_tsv_line(path, 3, "head, relation, tail", progress, |_, f| {
        kg.add_triple(f[0], f[1], f[2])
    })
}

const LABEL_PREDICATES: &[&str] = &[
    "http://www.w3.org/2000/01/rdf-schema#label",
    "http://www.w3.org/2004/02/skos/core#prefLabel",
    "http://www.w3.org/2004/02/skos/core#altLabel",
    "http://schema.org/name",
    "https://schema.org/name",
];

/// Reads N-Triples with a real RDF parser. IRIs and blank nodes become
/// entities named by the IRI (`_:id` for blank nodes); a literal object
/// becomes an entity named by its lexical form, except for label predicates
/// (`rdfs:label`, `skos:prefLabel`/`altLabel`, `schema:name`), whose literals
/// become aliases of the subject. A relation is named by the predicate IRI's
/// local name (after the last `#` or `/`), or by the full IRI when several
/// predicates share a local name (whatever the input order); the full IRI is
/// kept as its description.
pub fn read_ntriples(
    path: &Path,
    kg: &mut RawKg,
    progress: &ProgressBar,
) -> Result<(), InputError> {
    let reader = open(path, progress)?;
    let first_relation = kg.relations.len();
    let mut pending_labels: Vec<(String, String)> = Vec::new();
    for triple in oxttl::NTriplesParser::new().for_reader(reader) {
        let triple = triple.map_err(|e| InputError::Rdf {
            file: path.to_path_buf(),
            problem: e.to_string(),
        })?;
        let subject = match &triple.subject {
            oxrdf::NamedOrBlankNode::NamedNode(n) => n.as_str().to_string(),
            oxrdf::NamedOrBlankNode::BlankNode(b) => format!("_:{}", b.as_str()),
        };
        let predicate = triple.predicate.as_str();
        let object = match &triple.object {
            oxrdf::Term::NamedNode(n) => n.as_str().to_string(),
            oxrdf::Term::BlankNode(b) => format!("_:{}", b.as_str()),
            oxrdf::Term::Literal(l) => {
                if LABEL_PREDICATES.contains(&predicate) {
                    pending_labels.push((subject, l.value().to_string()));
                    continue;
                }
                l.value().to_string()
            }
            #[allow(unreachable_patterns)]
            _ => {
                return Err(InputError::Rdf {
                    file: path.to_path_buf(),
                    problem: format!("unsupported object term in triple {triple}"),
                })
            }
        };
        // Relations are interned by IRI here and named below.
        kg.add_triple(&subject, predicate, &object);
    }
    let iris = kg.relations.names[first_relation..].to_vec();
    let mut locals: HashMap<&str, usize> = HashMap::new();
    for iri in &iris {
        *locals.entry(local_name(iri)).or_default() += 1;
    }
    let all: std::collections::HashSet<&str> = iris.iter().map(String::as_str).collect();
    kg.relations.rename(|i, name| {
        let local = local_name(name);
        // A short name must be unique and must not be another predicate's IRI.
        if i < first_relation
            || local.is_empty()
            || locals.get(local) != Some(&1)
            || all.contains(local)
        {
            name.to_string()
        } else {
            local.to_string()
        }
    });
    for (k, iri) in iris.iter().enumerate() {
        let id = (first_relation + k) as u32;
        kg.relation_descriptions
            .entry(id)
            .or_insert_with(|| iri.clone());
    }
    for (subject, label) in pending_labels {
        let id = kg.entities.intern(&subject);
        kg.aliases.push((id, label));
    }
    Ok(())
}

fn local_name(iri: &str) -> &str {
    iri.rsplit(['#', '/']).next().unwrap_or(iri)
}

/// Reads `entity<TAB>alias` lines. Aliases of entities that appear in no
/// triple are skipped with a warning.
pub fn read_aliases(path: &Path, kg: &mut RawKg, progress: &ProgressBar) -> Result<(), InputError> {
    let mut skipped = 0u64;
    let mut first_skipped = None;
    let (entities, aliases) = (&kg.entities, &mut kg.aliases);
    for_each_tsv_line(
        path,
        2,
        "entity, alias",
        progress,
        |line, f| match entities.get(f[0]) {
            Some(id) => aliases.push((id, f[1].to_string())),
            None => {
                skipped += 1;
                first_skipped.get_or_insert((line, f[0].to_string()));
            }
        },
    )?;
    if let Some((line, name)) = first_skipped {
        kg.warnings.push(format!(
            "{}: skipped {skipped} aliases of entities that are in no triple (first: line {line}, `{name}`)",
            path.display()
        ));
    }
    Ok(())
}

/// Reads `relation<TAB>description` lines.
pub fn read_relation_descriptions(
    path: &Path,
    kg: &mut RawKg,
    progress: &ProgressBar,
) -> Result<(), InputError> {
    let mut unknown = Vec::new();
    let (relations, descriptions) = (&kg.relations, &mut kg.relation_descriptions);
    for_each_tsv_line(
        path,
        2,
        "relation, description",
        progress,
        |line, f| match relations.get(f[0]) {
            Some(id) => {
                descriptions.insert(id, f[1].to_string());
            }
            None => unknown.push(format!("line {line}: `{}`", f[0])),
        },
    )?;
    if !unknown.is_empty() {
        kg.warnings.push(format!(
            "{}: skipped descriptions of relations that are in no triple: {}",
            path.display(),
            unknown.join(", ")
        ));
    }
    Ok(())
}
