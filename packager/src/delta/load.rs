//! A bundle read whole into memory for making a delta: its prefix, the raw
//! bytes of the sections that go into an image, and every section's
//! stored bytes (a `full` instruction copies them).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use anyhow::{Context, Result};
use kgbox_bundle::sections::include_in_image;
use kgbox_bundle::{BundleReader, Limits, Prefix};

/// A bundle in memory.
pub struct Loaded {
    pub prefix: Prefix,
    /// Raw bytes of the sections an image holds, by name.
    pub raw: HashMap<String, Vec<u8>>,
    /// Stored bytes of every section, by name.
    pub stored: HashMap<String, Vec<u8>>,
    pub file_len: u64,
}

/// The most a section's buffer is given before its bytes arrive.
const INITIAL_CAPACITY_MAX: u64 = 64 << 20;

/// No limits but memory: this is the operator's own file.
fn limits() -> Limits {
    Limits {
        max_section_bytes: u64::MAX,
        max_total_bytes: u64::MAX,
        window_log_max: 31,
    }
}

impl Loaded {
    /// Reads `path`, checking its structure and every stored and raw hash
    /// (not its signature: the packager need not trust the key that made it).
    pub fn read(path: &Path) -> Result<Loaded> {
        let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        let mut reader = BundleReader::open(BufReader::with_capacity(1 << 20, file))
            .with_context(|| format!("{} is not a valid bundle", path.display()))?;
        reader
            .check_stored(&limits(), include_in_image)
            .with_context(|| format!("{} is damaged", path.display()))?;
        let prefix = reader.prefix().clone();
        let mut raw = HashMap::new();
        for entry in prefix.sections.iter().filter(|e| include_in_image(e)) {
            // `raw_len` is the file's word, unchecked until decompressed:
            // the first allocation is capped, the rest grows as it comes.
            let cap = entry.raw_len.min(INITIAL_CAPACITY_MAX);
            let mut bytes = Vec::with_capacity(usize::try_from(cap).unwrap_or(0));
            reader
                .copy_section(entry, &limits(), &mut bytes)
                .with_context(|| format!("{}: section `{}`", path.display(), entry.name))?;
            raw.insert(entry.name.clone(), bytes);
        }
        let derived = kgbox_bundle::derive::owned(&prefix, |n| raw.get(n).map(Vec::as_slice))
            .with_context(|| format!("{}: deriving the in-edges", path.display()))?;
        for (name, bytes) in derived {
            raw.insert(name.to_string(), bytes);
        }
        let mut file = File::open(path)?;
        let mut stored = HashMap::new();
        for entry in &prefix.sections {
            let mut bytes = vec![0u8; usize::try_from(entry.stored_len)?];
            file.seek(SeekFrom::Start(entry.offset))?;
            file.read_exact(&mut bytes)
                .with_context(|| format!("reading {}", path.display()))?;
            stored.insert(entry.name.clone(), bytes);
        }
        Ok(Loaded {
            file_len: reader.file_len(),
            prefix,
            raw,
            stored,
        })
    }

    pub fn section(&self, name: &str) -> Option<&[u8]> {
        self.raw.get(name).map(Vec::as_slice)
    }
}
