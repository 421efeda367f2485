//! `kgbox render FILE`.

use std::path::PathBuf;

use anyhow::Result;
use kgbox::Config;

/// `kgbox render FILE`.
#[derive(Debug, clap::Args)]
pub struct RenderArgs {
    /// One DSL query per line (`-` for stdin; text after a tab is ignored).
    pub file: PathBuf,
    /// Keep anchor entities in multi-hop answers (and renderings).
    #[arg(long)]
    pub include_anchors: bool,
    #[command(flatten)]
    pub source: super::BundleArgs,
}

/// `kgbox render FILE`: one JSON line per query with its renderings and
/// its answers (all of them, symbolic executor), or its error.
pub fn run(cfg: &Config, args: &RenderArgs) -> Result<()> {
    let (file, include_anchors, source) = (&args.file, args.include_anchors, &args.source);
    use kgbox_query::render::{render_text, Language, RenderOptions};
    use std::io::{BufRead, Write};
    let bundle = super::load_bundle(cfg, source)?;
    let kg = bundle.kg()?;
    let input: Box<dyn BufRead> = if file.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::io::BufReader::new(std::fs::File::open(file).map_err(
            |e| anyhow::anyhow!("cannot read {}: {e}", file.display()),
        )?))
    };
    let limits = cfg.query.parse_limits();
    let opts = kgbox_query::ExecOptions {
        exclude_anchors: !include_anchors,
        ..cfg.query.every_answer()
    };
    let ropts = RenderOptions {
        exclude_anchors: !include_anchors,
        ..Default::default()
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for line in input.lines() {
        let line = line?;
        let dsl = line.split('\t').next().unwrap_or("").trim();
        if dsl.is_empty() || dsl.starts_with('#') {
            continue;
        }
        let render = |lang| render_text(&kg, dsl, &limits, lang, &ropts).map_err(|e| e.to_string());
        let answers = kgbox_query::run_query(&kg, dsl, &limits, &opts).map(|(a, _)| {
            a.answers
                .iter()
                .map(|x| kg.entity_name(x.entity).unwrap_or("?").to_string())
                .collect::<Vec<_>>()
        });
        let v = match (answers, render(Language::Cypher), render(Language::Sparql)) {
            (Ok(answers), Ok(cypher), Ok(sparql)) => serde_json::json!({
                "query": dsl, "answers": answers, "cypher": cypher, "sparql": sparql,
            }),
            (a, c, s) => serde_json::json!({
                "query": dsl,
                "error": a.err().map(|e| e.to_string()).or(c.err()).or(s.err()),
            }),
        };
        writeln!(out, "{v}")?;
    }
    out.flush()?;
    Ok(())
}
