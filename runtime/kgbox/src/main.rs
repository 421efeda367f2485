//! `kgbox`: the on-device runtime.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;
use clap::{Parser, Subcommand};
use kgbox::Config;

mod cmd;

#[derive(Parser)]
#[command(
    name = "kgbox",
    version,
    about = "Install, check and serve kgbox KG bundles"
)]
struct Cli {
    /// Config file (TOML). Default: /etc/kgbox/config.toml when it exists.
    #[arg(long, global = true, env = "KGBOX_CONFIG")]
    config: Option<PathBuf>,
    /// Data directory (slots and state); overrides the config.
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the active bundle (or the built-in demo when none is installed) over HTTP.
    Serve {
        /// Address to listen on; overrides http.listen.
        #[arg(long)]
        listen: Option<String>,
    },
    /// Verify a bundle and install it into the inactive slot, then make it active.
    Install {
        bundle: PathBuf,
        /// Accept a version lower than the active one.
        #[arg(long)]
        allow_downgrade: bool,
    },
    /// Check a bundle (signature, hashes, limits, compatibility) without installing it.
    Verify {
        bundle: PathBuf,
        /// Trusted public key (file or inline); repeatable. Default: the config's keys.
        #[arg(long)]
        trust: Vec<String>,
    },
    /// Show the slots, their bundles and which is active.
    Status {
        #[arg(long)]
        json: bool,
        /// Also load the active image and re-hash every section.
        #[arg(long)]
        verify: bool,
    },
    /// Make the previous slot active again.
    Rollback,
    /// Run a DSL query, e.g. `"Blade Runner" -> directed_by`.
    Query {
        query: String,
        #[arg(long, default_value_t = 10)]
        top_k: usize,
        /// Provenance paths per answer.
        #[arg(long, default_value_t = 3)]
        paths: usize,
        /// Keep anchor entities in multi-hop answers.
        #[arg(long)]
        include_anchors: bool,
        #[arg(long)]
        json: bool,
        /// Print the query as openCypher or SPARQL (cypher | sparql) instead of running it.
        #[arg(long, value_name = "LANGUAGE")]
        render: Option<kgbox_query::render::Language>,
        #[command(flatten)]
        repair: cmd::query::RepairArgs,
        #[command(flatten)]
        source: cmd::BundleArgs,
        #[command(flatten)]
        exec: cmd::ExecArgs,
    },
    /// Answer a question in natural language, e.g. `"who directed [Blade Runner]"`.
    Ask {
        question: String,
        /// Final answers at most.
        #[arg(long, default_value_t = 5)]
        top_k: usize,
        /// learned, llm or local (default: planner.kind).
        #[arg(long)]
        planner: Option<kgbox_qa::PlannerKind>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        source: cmd::BundleArgs,
        #[command(flatten)]
        exec: cmd::ExecArgs,
    },
    /// Render DSL queries (one per line of FILE, `-` for stdin; text after a
    /// tab is ignored) as openCypher and SPARQL, one JSON line each with the
    /// symbolic executor's answers, for cross-checking with graph databases.
    Render {
        file: PathBuf,
        /// Keep anchor entities in multi-hop answers (and renderings).
        #[arg(long)]
        include_anchors: bool,
        #[command(flatten)]
        source: cmd::BundleArgs,
    },
    /// Find entity mentions in text (`[bracketed]` mentions are taken as given).
    Link {
        text: String,
        /// Candidates per mention.
        #[arg(long, default_value_t = 5)]
        top_m: usize,
        #[arg(long)]
        json: bool,
    },
    /// Evaluate against gold data.
    #[command(subcommand)]
    Eval(EvalCommand),
    /// Check a config file and print the effective configuration, or print the defaults.
    #[command(subcommand)]
    Config(cmd::config::ConfigCommand),
    /// Print an entity of the active bundle with its edges (JSON), as the HTTP API does.
    Entity {
        name: String,
        #[arg(long, default_value_t = kgbox::entity::DEFAULT_PAGE)]
        limit: usize,
        #[arg(long, default_value_t = 0)]
        offset: usize,
        /// Which edges to list: both, out or in.
        #[arg(long, default_value = "both", value_parser = ["both", "out", "in"])]
        direction: String,
    },
}

#[derive(Subcommand)]
enum EvalCommand {
    /// Gold queries: lines `<DSL><TAB>ans1|ans2|...`; prints Hits@1/10, F1, latency.
    Queries {
        #[arg(long)]
        file: PathBuf,
        /// Only the first N queries.
        #[arg(long, conflicts_with = "sample")]
        limit: Option<usize>,
        /// N queries spread evenly over the file (every len/N-th).
        #[arg(long)]
        sample: Option<usize>,
        /// Answers scoring at least this form the predicted set for F1 and
        /// exact match (default: any score for symbolic, 0.5 for neural,
        /// 0.25 for hybrid, i.e. an inferred answer the model gives p >= 0.5).
        #[arg(long)]
        threshold: Option<f32>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        source: cmd::BundleArgs,
        #[command(flatten)]
        exec: cmd::ExecArgs,
    },
    /// Questions with their answers (MetaQA or PathQuestion files): Hits@1,
    /// answer-set F1 and latency per stage.
    Qa {
        #[arg(long)]
        questions: PathBuf,
        #[arg(long, value_enum, default_value = "metaqa")]
        format: cmd::ask::QaFormat,
        /// Only the first N questions.
        #[arg(long, conflicts_with = "sample")]
        limit: Option<usize>,
        /// N questions spread evenly over the file.
        #[arg(long)]
        sample: Option<usize>,
        /// Final answers per question at most (the predicted set for F1).
        #[arg(long, default_value_t = 1000)]
        top_k: usize,
        /// learned, llm or local (default: planner.kind).
        #[arg(long)]
        planner: Option<kgbox_qa::PlannerKind>,
        /// One JSON object on the last line.
        #[arg(long)]
        json: bool,
        /// Answer without the bundle's reranker (to compare).
        #[arg(long)]
        no_rerank: bool,
        /// Write the reranker features of every scored candidate, labelled
        /// with the gold answers, to FILE (TSV; input of models/reranker/train.py).
        #[arg(long, value_name = "FILE")]
        export_features: Option<PathBuf>,
        /// Rerank with PREFIX.onnx and PREFIX.json (from models/reranker/train.py)
        /// instead of the bundle's reranker, to try one before packing it.
        #[arg(long, value_name = "PREFIX", conflicts_with = "no_rerank")]
        reranker: Option<PathBuf>,
        #[command(flatten)]
        source: cmd::BundleArgs,
        #[command(flatten)]
        exec: cmd::ExecArgs,
    },
    /// Query repair over gold queries (`<DSL><TAB>ans1|ans2|...`): relax the
    /// queries with no answers (or, with --tighten, tighten those with more
    /// than --max-answers) and score the repaired answers; one JSON line.
    Repair {
        #[arg(long)]
        queries: PathBuf,
        /// Only the first N queries.
        #[arg(long, conflicts_with = "sample")]
        limit: Option<usize>,
        /// N queries spread evenly over the file.
        #[arg(long)]
        sample: Option<usize>,
        /// Tighten queries with too many answers instead of relaxing empty ones.
        #[arg(long)]
        tighten: bool,
        #[arg(long, default_value_t = 50)]
        max_answers: usize,
        #[arg(long, default_value_t = 4)]
        beam: usize,
        #[arg(long, default_value_t = 2)]
        max_edits: usize,
        /// Smallest type fit of a replacement relation.
        #[arg(long, default_value_t = 0.5)]
        min_fit: f32,
        /// Print the first N repairs to stderr.
        #[arg(long, default_value_t = 0)]
        examples: usize,
        #[command(flatten)]
        source: cmd::BundleArgs,
    },
    /// Link prediction with the bundle's ULTRA model: MRR and Hits@1/3/10,
    /// filtered, head and tail queries, over every entity.
    Kgc {
        /// Test facts, `head<TAB>relation<TAB>tail` (names as in the bundle).
        #[arg(long)]
        test: PathBuf,
        /// Known facts to filter from the ranking (e.g. train and valid); the
        /// test facts always are.
        #[arg(long)]
        filter: Vec<PathBuf>,
        /// Only the first N test facts.
        #[arg(long)]
        limit: Option<usize>,
        /// Queries per model run.
        #[arg(long, default_value_t = 4)]
        batch: usize,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        source: cmd::BundleArgs,
        #[command(flatten)]
        exec: cmd::ExecArgs,
    },
}

fn run(started: Instant) -> Result<()> {
    let cli = Cli::parse();
    if let Command::Config(c) = &cli.command {
        // Before loading: it loads (or not) a config itself.
        return cmd::config::run(c, cli.config.as_deref(), cli.data_dir.as_deref());
    }
    let mut cfg = Config::load(cli.config.as_deref())?;
    if let Some(d) = cli.data_dir {
        cfg.data_dir = d;
    }
    match cli.command {
        Command::Serve { listen } => {
            if let Some(l) = listen {
                cfg.http.listen = l;
            }
            cmd::serve::run(cfg, started)
        }
        Command::Install {
            bundle,
            allow_downgrade,
        } => cmd::install::run(&cfg, &bundle, allow_downgrade),
        Command::Verify { bundle, trust } => cmd::verify::run(&cfg, &bundle, &trust),
        Command::Status { json, verify } => cmd::status::run(&cfg, json, verify),
        Command::Rollback => cmd::status::rollback(&cfg),
        Command::Query {
            query,
            top_k,
            paths,
            include_anchors,
            json,
            render,
            repair,
            source,
            exec,
        } => cmd::query::run(
            &cfg,
            &cmd::query::QueryArgs {
                query,
                top_k,
                paths,
                include_anchors,
                json,
                render,
                repair,
                source,
                exec,
            },
        ),
        Command::Ask {
            question,
            top_k,
            planner,
            json,
            source,
            exec,
        } => cmd::ask::ask(
            &cfg,
            &cmd::ask::AskArgs {
                question,
                top_k,
                planner,
                json,
                source,
                exec,
            },
        ),
        Command::Eval(EvalCommand::Qa {
            questions,
            format,
            limit,
            sample,
            top_k,
            planner,
            json,
            no_rerank,
            export_features,
            reranker,
            source,
            exec,
        }) => cmd::ask::eval_qa(
            &cfg,
            &cmd::ask::EvalQaArgs {
                questions,
                format,
                limit,
                sample,
                top_k,
                planner,
                json,
                no_rerank,
                export_features,
                reranker,
                source,
                exec,
            },
        ),
        Command::Render {
            file,
            include_anchors,
            source,
        } => cmd::query::render_file(&cfg, &file, include_anchors, &source),
        Command::Link { text, top_m, json } => cmd::query::link(&cfg, &text, top_m, json),
        Command::Eval(EvalCommand::Queries {
            file,
            limit,
            sample,
            threshold,
            json,
            source,
            exec,
        }) => cmd::eval::queries(
            &cfg,
            &cmd::eval::EvalArgs {
                file,
                limit,
                sample,
                threshold,
                json,
                source,
                exec,
            },
        ),
        Command::Eval(EvalCommand::Repair {
            queries,
            limit,
            sample,
            tighten,
            max_answers,
            beam,
            max_edits,
            min_fit,
            examples,
            source,
        }) => cmd::repair::run(
            &cfg,
            &cmd::repair::RepairEvalArgs {
                queries,
                limit,
                sample,
                tighten,
                max_answers,
                beam,
                max_edits,
                min_fit,
                examples,
                source,
            },
        ),
        Command::Eval(EvalCommand::Kgc {
            test,
            filter,
            limit,
            batch,
            json,
            source,
            exec,
        }) => cmd::kgc::run(
            &cfg,
            &cmd::kgc::KgcArgs {
                test,
                filter,
                limit,
                batch,
                json,
                source,
                exec,
            },
        ),
        Command::Entity {
            name,
            limit,
            offset,
            direction,
        } => cmd::status::entity(&cfg, &name, limit, offset, &direction),
        Command::Config(_) => unreachable!("handled before the config is loaded"),
    }
}

fn main() -> ExitCode {
    let started = Instant::now();
    match run(started) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
