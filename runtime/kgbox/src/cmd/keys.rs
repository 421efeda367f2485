//! `kgbox keys add|list|revoke`: the API keys of this device
//! (`DATA_DIR/keys.json`; see [`kgbox::keys`]). A running server sees a
//! change at its next request.

use anyhow::Result;
use kgbox::keys::{self, KeyRecord, Rate, Scope};
use kgbox::Config;

/// `kgbox keys`.
#[derive(Debug, clap::Subcommand)]
pub enum KeysCommand {
    /// Make a key and print it (once: the device keeps only its hash).
    Add {
        /// Who or what the key is for, e.g. `plant-a-dashboard`.
        #[arg(long)]
        name: String,
        /// read (every bundle), read:BUNDLE (one bundle, by name) or admin;
        /// repeat for several.
        #[arg(long = "scope", required = true)]
        scopes: Vec<Scope>,
        /// Its request rate, e.g. 20/s or 600/min; default: http.key_rate_limit.
        #[arg(long)]
        rate: Option<Rate>,
        /// Print only the key (for a script).
        #[arg(long)]
        quiet: bool,
    },
    /// List the keys (ids, names, scopes, rates; never the keys themselves).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Revoke a key by its id or name: refused from the next request on.
    Revoke {
        /// The key's id (12 hex digits) or name.
        key: String,
    },
}

pub fn run(cfg: &Config, cmd: KeysCommand) -> Result<()> {
    let dir = &cfg.data_dir;
    match cmd {
        KeysCommand::Add {
            name,
            scopes,
            rate,
            quiet,
        } => {
            let (text, record) = keys::add(dir, &name, scopes, rate)?;
            if quiet {
                println!("{text}");
            } else {
                println!("{text}");
                eprintln!(
                    "key {} ({}) made with scopes {}: give it to the client as `Authorization: Bearer <key>`; it is not shown again",
                    record.id,
                    record.name,
                    scopes_text(&record)
                );
            }
        }
        KeysCommand::List { json } => {
            let all = keys::list(dir)?;
            if json {
                let rows: Vec<_> = all.iter().map(public).collect();
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else if all.is_empty() {
                println!("no API keys in {}", dir.display());
            } else {
                println!(
                    "{:<12}  {:<24}  {:<20}  {:<9}  STATE",
                    "ID", "NAME", "SCOPES", "RATE"
                );
                for k in &all {
                    let state = match &k.revoked {
                        Some(at) => format!("revoked {at}"),
                        None => format!("active since {}", k.created),
                    };
                    let rate = k.rate.map_or_else(|| "-".to_string(), |r| r.to_string());
                    println!(
                        "{:<12}  {:<24}  {:<20}  {:<9}  {state}",
                        k.id,
                        k.name,
                        scopes_text(k),
                        rate
                    );
                }
            }
        }
        KeysCommand::Revoke { key } => {
            let record = keys::revoke(dir, &key)?;
            println!("revoked key {} ({})", record.id, record.name);
        }
    }
    Ok(())
}

fn scopes_text(k: &KeyRecord) -> String {
    k.scopes
        .iter()
        .map(Scope::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// A key as `list --json` shows it: everything but the hash.
fn public(k: &KeyRecord) -> serde_json::Value {
    serde_json::json!({
        "id": k.id,
        "name": k.name,
        "scopes": k.scopes,
        "rate": k.rate,
        "created": k.created,
        "revoked": k.revoked,
    })
}
