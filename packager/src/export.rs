//! `kgbox-pack export`: a bundle's graph as N-Triples, every entity and
//! relation written as the runtime's SPARQL renderer writes it
//! (`kgbox_query::translate::iri`: source IRIs of RDF-packed bundles,
//! kgbox IRIs otherwise, literals for literal values), so a graph store
//! loaded with the file answers the queries the `sparql_store` executor
//! sends it.
//!
//! [`run`] → [`export`]: the bundle is checked by a `BundleReader` (stored
//! hashes, and the signature when keys are given), its image is written to
//! a temporary file beside the output (`image::write_image`, the derived
//! in-edges filled) and memory-mapped, and [`write_ntriples`] streams the
//! triples out in (head, relation, tail) id order: memory does not grow
//! with the graph. `.gz` and `.zst` outputs are compressed; `-` writes to
//! standard output. A file output is written as `OUT.partial` and renamed
//! when complete.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use kgbox_bundle::{BundleReader, ImageView, Kg, Limits, TrustedKeys};
use kgbox_query::render::RenderOptions;
use kgbox_query::translate::iri::{entity_term, relation_iri, EntityTerm, Namespaces};

/// `kgbox-pack export BUNDLE -o OUT`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The bundle (`.kgb`).
    pub bundle: PathBuf,
    /// Write N-Triples (the only format, and the default).
    #[arg(long)]
    pub ntriples: bool,
    /// The output: `.nt`, or compressed `.nt.gz` / `.nt.zst`; `-` for
    /// standard output (uncompressed).
    #[arg(short = 'o', long = "out")]
    pub out: PathBuf,
    /// A public key (`.pub` file or inline `kgbox-ed25519-public ...`) the
    /// bundle's signature must verify against; without one, only the
    /// bundle's stored hashes are checked.
    #[arg(long)]
    pub trust: Vec<String>,
    /// No summary on standard error.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Runs `kgbox-pack export`.
pub fn run(args: &ExportArgs) -> Result<()> {
    let keys = if args.trust.is_empty() {
        None
    } else {
        let keys = args
            .trust
            .iter()
            .map(|k| {
                let parsed = if k.trim_start().starts_with(kgbox_bundle::keys::PUBLIC_TAG) {
                    kgbox_bundle::PublicKey::parse(k)
                } else {
                    kgbox_bundle::PublicKey::read(Path::new(k))
                };
                parsed.with_context(|| format!("trusted key {k:?}"))
            })
            .collect::<Result<Vec<_>>>()?;
        Some(TrustedKeys::new(keys))
    };
    let t = std::time::Instant::now();
    let r = export(&args.bundle, &args.out, keys.as_ref())?;
    if !args.quiet {
        eprintln!(
            "exported {} triples ({} entities, {} relations) of {} to {} in {:.1} s",
            r.triples,
            r.entities,
            r.relations,
            args.bundle.display(),
            args.out.display(),
            t.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportReport {
    pub triples: u64,
    pub entities: usize,
    pub relations: usize,
}

/// The output's compression, from its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Compression {
    None,
    Gzip,
    Zstd,
}

impl Compression {
    fn of(path: &Path) -> Compression {
        match path.extension().and_then(|e| e.to_str()) {
            Some("gz") => Compression::Gzip,
            Some("zst") => Compression::Zstd,
            _ => Compression::None,
        }
    }
}

/// Exports the graph of the bundle at `bundle` to `out` (`-`: stdout).
/// With `keys`, the signature must verify against them.
pub fn export(bundle: &Path, out: &Path, keys: Option<&TrustedKeys>) -> Result<ExportReport> {
    let file = File::open(bundle).with_context(|| format!("cannot open {}", bundle.display()))?;
    let mut reader = BundleReader::open(BufReader::new(file))
        .with_context(|| format!("{} is not a valid bundle", bundle.display()))?;
    if let Some(keys) = keys {
        reader
            .verify_signature(keys)
            .with_context(|| format!("{}: the signature does not verify", bundle.display()))?;
    }
    // The operator's own bundle: no bound below what the format allows.
    let limits = Limits {
        max_section_bytes: u64::MAX,
        max_total_bytes: u64::MAX,
        ..Limits::default()
    };
    let include = kgbox_bundle::sections::include_in_image;
    reader
        .check_stored(&limits, include)
        .with_context(|| format!("{} is damaged", bundle.display()))?;
    let to_stdout = out == Path::new("-");
    let dir = match out.parent() {
        Some(d) if !to_stdout && !d.as_os_str().is_empty() => d.to_path_buf(),
        _ if to_stdout => std::env::temp_dir(),
        _ => PathBuf::from("."),
    };
    let mut image = tempfile::Builder::new()
        .prefix(".kgbox-export-")
        .suffix(".kgbi")
        .tempfile_in(&dir)
        .with_context(|| format!("cannot make a temporary image in {}", dir.display()))?;
    let plan = {
        let mut w = BufWriter::new(image.as_file_mut());
        let plan = kgbox_bundle::image::write_image(&mut reader, &limits, include, &mut w)
            .with_context(|| format!("cannot decompress {}", bundle.display()))?;
        w.flush().context("writing the temporary image")?;
        plan
    };
    // SAFETY: the temporary file is ours, created above and not shared;
    // nothing writes to it while it is mapped.
    let mut map =
        unsafe { memmap2::MmapMut::map_mut(image.as_file()) }.context("mapping the image")?;
    kgbox_bundle::derive::fill(reader.prefix(), &plan.ranges, &mut map)
        .context("deriving the in-edges")?;
    let map = map.make_read_only().context("mapping the image")?;
    let view = ImageView::parse(&map, include).context("reading the image")?;
    let kg = Kg::from_sections(|name| view.section(&map, name)).context("reading the graph")?;
    let ns_owner = RenderOptions::default();
    let ns = ns_owner.namespaces();
    if to_stdout {
        let stdout = std::io::stdout();
        let report = write_compressed(&kg, ns, stdout.lock(), Compression::None)?;
        return Ok(report);
    }
    let partial = partial_path(out);
    let f =
        File::create(&partial).with_context(|| format!("cannot create {}", partial.display()))?;
    let written = write_compressed(&kg, ns, f, Compression::of(out))
        .with_context(|| format!("writing {}", partial.display()));
    let report = match written {
        Ok(r) => r,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
    };
    std::fs::rename(&partial, out)
        .with_context(|| format!("cannot rename {} to {}", partial.display(), out.display()))?;
    Ok(report)
}

fn partial_path(out: &Path) -> PathBuf {
    let mut s = out.as_os_str().to_owned();
    s.push(".partial");
    PathBuf::from(s)
}

/// Writes the triples through the compression `c` and finishes it.
fn write_compressed<W: Write>(
    kg: &Kg<'_>,
    ns: Namespaces<'_>,
    out: W,
    c: Compression,
) -> Result<ExportReport> {
    let report = match c {
        Compression::None => {
            let mut w = BufWriter::with_capacity(1 << 20, out);
            let r = write_ntriples(kg, ns, &mut w)?;
            w.flush()?;
            w.into_inner()
                .map_err(|e| e.into_error())?
                .flush()
                .context("flushing the output")?;
            r
        }
        Compression::Gzip => {
            let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
            let r = {
                let mut w = BufWriter::with_capacity(1 << 20, &mut gz);
                let r = write_ntriples(kg, ns, &mut w)?;
                w.flush()?;
                r
            };
            gz.finish()?.flush()?;
            r
        }
        Compression::Zstd => {
            let mut z = zstd::stream::write::Encoder::new(out, 3)?;
            let r = {
                let mut w = BufWriter::with_capacity(1 << 20, &mut z);
                let r = write_ntriples(kg, ns, &mut w)?;
                w.flush()?;
                r
            };
            z.finish()?.flush()?;
            r
        }
    };
    Ok(report)
}

/// Every triple of `kg` as an N-Triples line.
pub fn write_ntriples<W: Write>(
    kg: &Kg<'_>,
    ns: Namespaces<'_>,
    w: &mut W,
) -> Result<ExportReport> {
    let mut predicates = Vec::with_capacity(kg.relation_count());
    for r in 0..kg.relation_count() as u32 {
        let iri = relation_iri(kg, r, ns).context("a relation id the bundle lacks")?;
        predicates.push(
            iri_ref(&iri)
                .with_context(|| format!("relation {:?}", kg.relation_name(r).unwrap_or("?")))?,
        );
    }
    let mut triples = 0u64;
    for head in 0..kg.entity_count() as u32 {
        let (rels, tails) = kg.out.edges(head);
        if rels.is_empty() {
            continue;
        }
        let subject = match term(kg, head, ns)? {
            Term::Iri(s) => s,
            Term::Literal(_) => bail!(
                "entity {:?} heads triples but would be written as a literal",
                kg.entity_name(head).unwrap_or("?")
            ),
        };
        for (&r, &tail) in rels.iter().zip(tails) {
            let predicate = predicates
                .get(r as usize)
                .with_context(|| format!("relation #{r} out of range"))?;
            let object = match term(kg, tail, ns)? {
                Term::Iri(s) | Term::Literal(s) => s,
            };
            writeln!(w, "{subject} {predicate} {object} .")?;
            triples += 1;
        }
    }
    Ok(ExportReport {
        triples,
        entities: kg.entity_count(),
        relations: kg.relation_count(),
    })
}

/// An entity as N-Triples text.
enum Term {
    Iri(String),
    Literal(String),
}

fn term(kg: &Kg<'_>, id: u32, ns: Namespaces<'_>) -> Result<Term> {
    let name = || kg.entity_name(id).unwrap_or("?").to_string();
    match entity_term(kg, id, ns).with_context(|| format!("entity #{id} out of range"))? {
        EntityTerm::Iri(iri) => Ok(Term::Iri(
            iri_ref(&iri).with_context(|| format!("entity {:?}", name()))?,
        )),
        EntityTerm::Literal(v) => Ok(Term::Literal(
            oxrdf::Literal::new_simple_literal(v).to_string(),
        )),
    }
}

/// `<iri>`, refused when N-Triples cannot hold it.
fn iri_ref(iri: &str) -> Result<String> {
    let bad =
        |c: char| c <= ' ' || matches!(c, '<' | '>' | '"' | '{' | '}' | '|' | '^' | '`' | '\\');
    if iri.is_empty() || iri.chars().any(bad) {
        bail!("its IRI {iri:?} cannot be written in N-Triples");
    }
    Ok(format!("<{iri}>"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iris_that_ntriples_cannot_hold_are_refused() {
        assert_eq!(
            iri_ref("http://e/a%20b").ok().as_deref(),
            Some("<http://e/a%20b>")
        );
        for bad in [
            "",
            "http://e/a b",
            "http://e/<x>",
            "http://e/\"",
            "http://e/\\",
        ] {
            assert!(iri_ref(bad).is_err(), "{bad}");
        }
        assert_eq!(Compression::of(Path::new("g.nt.zst")), Compression::Zstd);
        assert_eq!(Compression::of(Path::new("g.nt.gz")), Compression::Gzip);
        assert_eq!(Compression::of(Path::new("g.nt")), Compression::None);
    }
}
