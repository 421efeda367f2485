//! `kgbox`: the on-device runtime. Parses the command line and dispatches
//! to one module of `cmd/` per subcommand.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;
use clap::{CommandFactory, Parser, Subcommand};
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
    Serve(cmd::serve::ServeArgs),
    /// Verify a bundle and install it into the inactive slot, then make it active.
    Install(cmd::install::InstallArgs),
    /// Manage the API keys that may read (and administer) this device.
    #[command(subcommand)]
    Keys(cmd::keys::KeysCommand),
    /// Check a bundle (signature, hashes, limits, compatibility) without installing it.
    Verify(cmd::verify::VerifyArgs),
    /// Show the slots, their bundles and which is active.
    Status(cmd::status::StatusArgs),
    /// Make the previous slot active again.
    Rollback(cmd::rollback::RollbackArgs),
    /// Run a DSL query, e.g. `"Blade Runner" -> directed_by`.
    Query(cmd::query::QueryArgs),
    /// Run a SPARQL 1.1 query (all of it, as /sparql answers it), e.g.
    /// `"SELECT * WHERE { ?s ?p ?o } LIMIT 10"`; results on stdout.
    Sparql(cmd::sparql::SparqlArgs),
    /// Answer a question in natural language, e.g. `"who directed [Blade Runner]"`.
    Ask(cmd::ask::AskArgs),
    /// Render DSL queries (one per line of FILE, `-` for stdin; text after a
    /// tab is ignored) as openCypher and SPARQL, one JSON line each with the
    /// symbolic executor's answers, for cross-checking with graph databases.
    Render(cmd::render::RenderArgs),
    /// Find entity mentions in text (`[bracketed]` mentions are taken as given).
    Link(cmd::link::LinkArgs),
    /// Evaluate against gold data.
    #[command(subcommand)]
    Eval(cmd::eval::EvalCommand),
    /// Time the executors (1-3 hop random walks, non-hub and hub-touching),
    /// entity linking and neural projection on the bundle's own graph.
    Bench(cmd::bench::BenchArgs),
    /// Check a config file and print the effective configuration, or print the defaults.
    #[command(subcommand)]
    Config(cmd::config::ConfigCommand),
    /// Print an entity of the active bundle with its edges (JSON), as the HTTP API does.
    Entity(cmd::entity::EntityArgs),
    /// Ask the running server whether it is ready (GET /readyz): exit code 0
    /// when it is, 1 when not (for a container HEALTHCHECK or a script).
    Healthcheck(cmd::healthcheck::HealthcheckArgs),
    /// Mark the active bundle good (its trial is over), e.g. from an update
    /// framework's hook after its own checks.
    MarkGood,
    /// Mark the active bundle bad; the previous slot becomes active again
    /// when it holds a usable bundle (served from the next start).
    MarkBad(cmd::health::MarkBadArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions { shell: clap_complete::Shell },
    /// Print the man page (roff), e.g. `kgbox man > /usr/share/man/man1/kgbox.1`;
    /// with --dir, write one page per command and subcommand there.
    Man {
        /// Write kgbox.1, kgbox-serve.1, kgbox-eval-qa.1, ... into this directory.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

fn run(started: Instant) -> Result<()> {
    let cli = Cli::parse();
    match &cli.command {
        // Before loading: it loads (or not) a config itself.
        Command::Config(c) => {
            return cmd::config::run(c, cli.config.as_deref(), cli.data_dir.as_deref())
        }
        Command::Completions { shell } => return cmd::manual::completions(*shell, Cli::command()),
        Command::Man { dir } => return cmd::manual::man(Cli::command(), dir.as_deref()),
        _ => {}
    }
    let mut cfg = Config::load(cli.config.as_deref())?;
    if let Some(d) = cli.data_dir {
        cfg.data_dir = d;
    }
    match cli.command {
        Command::Serve(args) => cmd::serve::run(cfg, args, started),
        Command::Install(args) => cmd::install::run(&cfg, &args),
        Command::Verify(args) => cmd::verify::run(&cfg, &args),
        Command::Status(args) => cmd::status::run(&cfg, &args),
        Command::Keys(c) => cmd::keys::run(&cfg, c),
        Command::Rollback(args) => cmd::rollback::run(&cfg, &args),
        Command::Query(args) => cmd::query::run(&cfg, &args),
        Command::Ask(args) => cmd::ask::run(&cfg, &args),
        Command::Sparql(args) => cmd::sparql::run(&cfg, &args),
        Command::Render(args) => cmd::render::run(&cfg, &args),
        Command::Link(args) => cmd::link::run(&cfg, &args),
        Command::Eval(command) => cmd::eval::run(&cfg, &command),
        Command::Bench(args) => cmd::bench::run(&cfg, &args),
        Command::Entity(args) => cmd::entity::run(&cfg, &args),
        Command::Healthcheck(args) => cmd::healthcheck::run(&cfg, &args),
        Command::MarkGood => cmd::health::mark_good(&cfg),
        Command::MarkBad(args) => cmd::health::mark_bad(&cfg, &args),
        Command::Config(_) | Command::Completions { .. } | Command::Man { .. } => {
            unreachable!("handled before the config is loaded")
        }
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
