//! `kgbox entity NAME`: an entity of the active bundle with its edges, as
//! `GET /v1/entities/{name}` prints it.

use anyhow::Result;
use kgbox::entity::{describe, Direction, Page, DEFAULT_PAGE};
use kgbox::Config;

/// `kgbox entity NAME`.
#[derive(Debug, clap::Args)]
pub struct EntityArgs {
    pub name: String,
    #[arg(long, default_value_t = DEFAULT_PAGE)]
    pub limit: usize,
    #[arg(long, default_value_t = 0)]
    pub offset: usize,
    /// Which edges to list.
    #[arg(long, value_enum, default_value = "both")]
    pub direction: Direction,
}

pub fn run(cfg: &Config, args: &EntityArgs) -> Result<()> {
    let bundle = super::load_bundle(cfg, &super::BundleArgs::default())?;
    let kg = bundle.kg()?;
    let page = Page {
        offset: args.offset,
        limit: args.limit,
        direction: args.direction,
    };
    let view = describe(&kg, &args.name, &page)?;
    println!("{}", serde_json::to_string_pretty(&view)?);
    Ok(())
}
