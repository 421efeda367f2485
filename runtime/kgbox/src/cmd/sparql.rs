//! `kgbox sparql`: a SPARQL 1.1 query over the active bundle or a bundle
//! file, answered as `/sparql` answers it by spareval
//! ([`kgbox::service::sparql`]), the results on stdout.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use kgbox::service::sparql::{answer, Bounds, Formats};
use kgbox::Config;
use oxrdfio::RdfFormat;
use sparesults::QueryResultsFormat;

/// `kgbox sparql QUERY`.
#[derive(Debug, clap::Args)]
pub struct SparqlArgs {
    /// The query text; `-` reads it from stdin.
    pub query: String,
    /// The results' syntax: json, xml, csv or tsv (SELECT, ASK), turtle or
    /// ntriples (CONSTRUCT, DESCRIBE), or a media type such as
    /// `application/sparql-results+json`. Default: json, turtle.
    #[arg(long, alias = "accept", value_name = "FORMAT")]
    pub format: Option<String>,
    /// Stop after this many seconds (default: http.request_timeout_ms).
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    #[command(flatten)]
    pub source: super::BundleArgs,
}

/// The syntaxes `--format` names.
fn formats(name: Option<&str>) -> Result<Formats> {
    let mut f = Formats {
        results: QueryResultsFormat::Json,
        graph: RdfFormat::Turtle,
    };
    let Some(name) = name else {
        return Ok(f);
    };
    let lower = name.trim().to_ascii_lowercase();
    match lower.as_str() {
        "json" | "srj" => f.results = QueryResultsFormat::Json,
        "xml" | "srx" => f.results = QueryResultsFormat::Xml,
        "csv" => f.results = QueryResultsFormat::Csv,
        "tsv" => f.results = QueryResultsFormat::Tsv,
        "turtle" | "ttl" => f.graph = RdfFormat::Turtle,
        "ntriples" | "nt" | "n-triples" => f.graph = RdfFormat::NTriples,
        media => {
            let media = media.split(';').next().unwrap_or_default().trim();
            if let Some(r) = QueryResultsFormat::from_media_type(media) {
                f.results = r;
            } else if let Some(g) = RdfFormat::from_media_type(media)
                .filter(|g| matches!(g, RdfFormat::Turtle | RdfFormat::NTriples))
            {
                f.graph = g;
            } else {
                bail!(
                    "unknown --format {name}: json, xml, csv, tsv, turtle, ntriples or one of \
                     their media types"
                );
            }
        }
    }
    Ok(f)
}

pub fn run(cfg: &Config, args: &SparqlArgs) -> Result<()> {
    let formats = formats(args.format.as_deref())?;
    let text = if args.query == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the query from stdin")?;
        text
    } else {
        args.query.clone()
    };
    let query = kgbox_query::translate::parse_sparql(&text)?;
    let timeout = match args.timeout {
        Some(s) if s.is_finite() && s > 0.0 => Duration::from_secs_f64(s),
        Some(s) => bail!("--timeout must be a positive number of seconds, not {s}"),
        None => Duration::from_millis(cfg.http.request_timeout_ms),
    };
    let bundle = super::load_bundle(cfg, &args.source)?;
    let kg = bundle.kg()?;
    let bounds = Bounds {
        deadline: Instant::now() + timeout,
        max_rows: cfg.query.max_sparql_rows,
    };
    let (body, _) = answer(&kg, &query, formats, &bounds)?;
    let mut out = std::io::stdout().lock();
    out.write_all(&body)?;
    out.flush()?;
    Ok(())
}
