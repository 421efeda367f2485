//! `kgbox-pack inspect`: the manifest and section table of a bundle.

use std::fmt::Write as _;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use anyhow::{Context, Result};
use kgbox_bundle::format::{COMPRESSION_DERIVED, COMPRESSION_ZSTD};
use kgbox_bundle::BundleReader;

/// Renders the header, manifest and section table as text.
pub fn inspect(path: &Path) -> Result<String> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let reader = BundleReader::open(BufReader::new(file))
        .with_context(|| format!("{} is not a valid bundle", path.display()))?;
    let p = reader.prefix();
    let mut s = String::new();
    writeln!(s, "bundle      {}", path.display())?;
    writeln!(s, "format      v{}", p.header.format_version)?;
    writeln!(s, "size        {} bytes", reader.file_len())?;
    writeln!(s, "signed by   key {}", p.header.key_id)?;
    writeln!(s, "digest      {}", hex::encode(p.digest()))?;
    writeln!(s, "\nmanifest:")?;
    let manifest = serde_json::to_string_pretty(&p.manifest)?;
    for line in manifest.lines() {
        writeln!(s, "  {line}")?;
    }
    writeln!(s, "\nsections:")?;
    writeln!(
        s,
        "  {:<28} {:>4} {:>12} {:>12} {:>6}  {:<8} sha256(raw)",
        "name", "req", "stored", "raw", "ratio", "codec"
    )?;
    for e in &p.sections {
        let ratio = if e.stored_len == 0 {
            1.0
        } else {
            e.raw_len as f64 / e.stored_len as f64
        };
        writeln!(
            s,
            "  {:<28} {:>4} {:>12} {:>12} {:>6.2}  {:<8} {}",
            e.name,
            if e.required() { "yes" } else { "no" },
            e.stored_len,
            e.raw_len,
            ratio,
            match e.compression {
                COMPRESSION_ZSTD => "zstd",
                COMPRESSION_DERIVED => "derived",
                _ => "none",
            },
            &hex::encode(e.sha256_raw)[..16]
        )?;
    }
    Ok(s)
}
