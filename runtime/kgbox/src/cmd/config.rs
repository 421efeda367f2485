//! `kgbox config check` and `kgbox config defaults`.

use std::path::{Path, PathBuf};

use anyhow::Result;
use kgbox::config_print::{self, Effective, Notes};
use kgbox::Config;

#[derive(Debug, clap::Subcommand)]
pub enum ConfigCommand {
    /// Load a config file as `serve` does (defaults, the file, then KGBOX_*
    /// variables), check it, and print the effective configuration as TOML.
    ///
    /// Every key is printed; optional keys that are not set show as
    /// `# key = (not set)`, and keys set by a KGBOX_* variable end with
    /// `# from KGBOX_...`. Exits non-zero, naming the key, when the
    /// configuration is invalid.
    Check {
        /// The config file; default: --config, KGBOX_CONFIG, else
        /// /etc/kgbox/config.toml when it exists.
        file: Option<PathBuf>,
    },
    /// Print the built-in defaults as TOML (every key).
    Defaults,
}

/// `config` and `data_dir`: the global `--config` and `--data-dir`.
pub fn run(cmd: &ConfigCommand, config: Option<&Path>, data_dir: Option<&Path>) -> Result<()> {
    match cmd {
        ConfigCommand::Defaults => {
            println!("# kgbox built-in defaults (`kgbox config defaults`).");
            println!(
                "# Optional keys that are not set show as `# key = {}`.",
                config_print::NOT_SET
            );
            println!();
            print!(
                "{}",
                config_print::to_toml(&Config::default(), &Notes::new())?
            );
        }
        ConfigCommand::Check { file } => {
            let mut eff = Effective::load(file.as_deref().or(config))?;
            if let Some(d) = data_dir {
                eff.config.data_dir = d.to_path_buf();
                eff.notes.insert("data_dir".into(), "--data-dir".into());
            }
            config_print::check_files(&eff.config)?;
            let text = eff.to_toml()?;
            let source = match &eff.file {
                Some(f) => f.display().to_string(),
                None => "no file (built-in defaults)".into(),
            };
            println!("# Effective kgbox configuration (`kgbox config check`).");
            println!("# Built-in defaults, then {source}, then KGBOX_* variables;");
            println!("# keys set by a variable or flag end with `# from ...`.");
            println!(
                "# Optional keys that are not set show as `# key = {}`.",
                config_print::NOT_SET
            );
            println!("# Secrets (values are never shown):");
            for (key, var, set) in config_print::secrets(&eff.config) {
                let state = if set { "set" } else { "not set" };
                println!("#   {var} ({key}): {state}");
            }
            println!();
            print!("{text}");
            eprintln!("{source}: the configuration is valid");
        }
    }
    Ok(())
}
