//! `kgbox query`.

use anyhow::Result;
use kgbox::Config;

pub struct QueryArgs {
    pub query: String,
    pub top_k: usize,
    pub paths: usize,
    pub include_anchors: bool,
    pub json: bool,
    /// Print the query in this language instead of running it.
    pub render: Option<kgbox_query::render::Language>,
    pub repair: RepairArgs,
    pub source: super::BundleArgs,
    pub exec: super::ExecArgs,
}

/// `--repair`, `--tighten`, `--max-answers`, `--tighten-with`: query repair
/// (docs/query-language.md, "Query repair").
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RepairArgs {
    /// auto: relax a query with no answers (and tighten with --tighten); off.
    #[arg(long, default_value = "auto")]
    pub repair: kgbox_query::repair::RepairMode,
    /// Tighten a query with more than --max-answers answers.
    #[arg(long)]
    pub tighten: bool,
    /// Answers a tightened query keeps at most.
    #[arg(long, default_value_t = 50)]
    pub max_answers: usize,
    /// An entity a tightening constrains the answers by first; repeatable.
    #[arg(long, value_name = "ENTITY")]
    pub tighten_with: Vec<String>,
}

impl RepairArgs {
    /// The repair options, `None` with `--repair off`.
    pub fn options(&self) -> Option<kgbox_query::repair::RepairOptions> {
        (self.repair == kgbox_query::repair::RepairMode::Auto).then(|| {
            kgbox_query::repair::RepairOptions {
                tighten: self.tighten || !self.tighten_with.is_empty(),
                max_answers: self.max_answers.max(1),
                ..Default::default()
            }
        })
    }
}

/// `names` (or `#id`s) as entity ids.
fn resolve_names(kg: &kgbox_bundle::Kg<'_>, names: &[String]) -> Result<Vec<u32>> {
    names
        .iter()
        .map(|name| {
            kgbox_query::bind::resolve_entity_text(kg, name).map_err(|d| anyhow::anyhow!("{d}"))
        })
        .collect()
}

pub fn run(cfg: &Config, args: &QueryArgs) -> Result<()> {
    let bundle = super::load_bundle(cfg, &args.source)?;
    let kg = bundle.kg()?;
    if let Some(lang) = args.render {
        let opts = kgbox_query::render::RenderOptions {
            exclude_anchors: !args.include_anchors,
            ..Default::default()
        };
        let text = kgbox_query::render::render_text(
            &kg,
            &args.query,
            &cfg.query.parse_limits(),
            lang,
            &opts,
        )?;
        if args.json {
            println!("{}", serde_json::json!({"language": lang, "text": text}));
        } else {
            println!("{text}");
        }
        return Ok(());
    }
    let mut opts = cfg.query.exec_options();
    opts.top_k = args.top_k;
    opts.max_paths = args.paths;
    opts.exclude_anchors = !args.include_anchors;
    let exec = args.exec.apply(&cfg.executor);
    opts.executor = exec.mode;
    let model = super::load_model(&bundle, &exec, false)?;
    let run = |text: &str| {
        kgbox::neural::run_query(
            &kg,
            model.as_ref(),
            text,
            &cfg.query.parse_limits(),
            &opts,
            exec.seppr(exec.seppr_k),
        )
    };
    let (mut answers, mut timings) = run(&args.query)?;
    let mut report = None;
    if let Some(ropts) = args.repair.options() {
        let with = resolve_names(&kg, &args.repair.tighten_with)?;
        report = kgbox_query::repair::repair_text(
            &kg,
            &args.query,
            answers.total,
            &with,
            &cfg.query.parse_limits(),
            &opts,
            &ropts,
        )?;
        if let Some(text) = report.as_ref().and_then(|r| r.repaired.as_deref()) {
            (answers, timings) = run(text)?;
        }
    }
    let name = |e: u32| kg.entity_name(e).unwrap_or("?").to_string();
    if args.json {
        let out: Vec<_> = answers
            .answers
            .iter()
            .map(|a| {
                serde_json::json!({
                    "id": a.entity,
                    "name": name(a.entity),
                    "score": a.score,
                    "paths": a.paths.iter().map(|p| p.iter().map(|t| kgbox::http::name_triple(&kg, t)).collect::<Vec<_>>()).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "answers": out,
                "total": answers.total,
                "executor": exec.mode,
                "repair": report,
            }))?
        );
        return Ok(());
    }
    if let Some(r) = &report {
        print_repair(r);
    }
    println!(
        "{} answers ({} shown, {} executor), {} edges visited, {:.3} ms",
        answers.total,
        answers.answers.len(),
        exec.mode,
        answers.edge_visits,
        (timings.parse + timings.bind + timings.execute).as_secs_f64() * 1e3
    );
    for (i, a) in answers.answers.iter().enumerate() {
        println!(
            "{:>3}. {}  (score {:.3}, #{})",
            i + 1,
            name(a.entity),
            a.score,
            a.entity
        );
        for p in &a.paths {
            let steps: Vec<String> = p
                .iter()
                .map(|t| {
                    let [h, r, t] = kgbox::http::name_triple(&kg, t);
                    format!("({h} -{r}-> {t})")
                })
                .collect();
            println!("       {}", steps.join(" "));
        }
    }
    Ok(())
}

/// A repair report, as text.
fn print_repair(r: &kgbox_query::repair::RepairReport) {
    match &r.repaired {
        Some(q) => println!(
            "repair ({}): {} answers -> {}: {q}",
            r.kind, r.answers_before, r.answers_after
        ),
        None => println!(
            "repair ({}): no candidate qualified ({} examined{})",
            r.kind,
            r.candidates,
            if r.exhausted {
                ", search limit reached"
            } else {
                ""
            }
        ),
    }
    for e in &r.edits {
        println!("  {e}");
    }
}

/// `kgbox link`.
pub fn link(cfg: &Config, text: &str, top_m: usize, json: bool) -> Result<()> {
    let bundle = super::load_bundle(cfg, &super::BundleArgs::default())?;
    let kg = bundle.kg()?;
    let opts = kgbox_query::link::LinkOptions {
        top_m,
        ..Default::default()
    };
    let encoder = kgbox::dense::load_encoder(&bundle)
        .map_err(|e| anyhow::anyhow!("cannot load the bundle's entity encoder: {e}"))?;
    let mentions = kgbox::dense::link_text(&bundle, &kg, encoder.as_ref(), text, &opts)
        .map_err(|e| anyhow::anyhow!(e))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&mentions)?);
        return Ok(());
    }
    if mentions.is_empty() {
        println!("no mentions found");
    }
    for m in &mentions {
        println!(
            "{:?} at {}..{}{}",
            m.text,
            m.start,
            m.end,
            if m.bracketed { " (bracketed)" } else { "" }
        );
        if m.candidates.is_empty() {
            println!("    no matching entity");
        }
        for c in &m.candidates {
            let distance = match c.embedding_distance {
                Some(d) => format!("embedding distance {d:.3}"),
                None => format!("distance {}", c.distance),
            };
            println!(
                "    {:.3}  {}  (#{}, {:?}, {distance})",
                c.probability, c.name, c.entity, c.method
            );
        }
    }
    Ok(())
}

/// `kgbox render FILE`: one JSON line per query with its renderings and
/// its answers (all of them, symbolic executor), or its error.
pub fn render_file(
    cfg: &Config,
    file: &std::path::Path,
    include_anchors: bool,
    source: &super::BundleArgs,
) -> Result<()> {
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
    let mut opts = cfg.query.exec_options();
    opts.exclude_anchors = !include_anchors;
    opts.top_k = kg.entity_count().max(1);
    opts.max_paths = 0;
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
