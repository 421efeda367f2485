//! `kgbox link`: entity mentions in text.

use anyhow::Result;
use kgbox::Config;

/// `kgbox link TEXT`.
#[derive(Debug, clap::Args)]
pub struct LinkArgs {
    pub text: String,
    /// Candidates per mention.
    #[arg(long, default_value_t = 5)]
    pub top_m: usize,
    #[arg(long)]
    pub json: bool,
}

pub fn run(cfg: &Config, args: &LinkArgs) -> Result<()> {
    let LinkArgs { text, top_m, json } = args;
    let (text, top_m, json) = (text.as_str(), *top_m, *json);
    let bundle = super::load_bundle(cfg, &super::BundleArgs::default())?;
    let kg = bundle.kg()?;
    let opts = kgbox_query::link::LinkOptions {
        top_m,
        ..Default::default()
    };
    let encoder = kgbox::dense::load_encoder(&bundle, &cfg.executor)
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
