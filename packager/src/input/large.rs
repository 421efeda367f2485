//! A TSV graph read to disk once it outgrows the in-memory limit, so that
//! reading holds a fixed amount of memory whatever the graph's size:
//! entity names are keyed by a 64-bit hash ([`crate::spill::name_hash`]);
//! each distinct name goes once (per window of [`Seen`]) to an external
//! sort, and the triples and aliases go to partition files by the hash of
//! their head or entity. `graph::large` turns them into the sections.
//!
//! Memory while reading, for a limit of `L` triples: a set of up to `4L`
//! hashes (8 bytes each: 1 GiB for the default 32Mi, enough for 125M
//! names before a name is ever written twice), `4L` bytes of names being
//! sorted (128 MiB), and the partitions' buffers (16 MiB).

use std::io;
use std::path::{Path, PathBuf};

use crate::spill::{name_hash, partition, Partitions, RecordSorter, Seen};

pub struct LargeKg {
    seen: Seen,
    /// Every distinct entity name, as (name, 0) records.
    pub names: RecordSorter,
    /// (head hash, relation id, tail hash), little-endian, 20 bytes, in
    /// the head's partition.
    pub triples: Partitions,
    pub count: u64,
    /// The aliases file and its lines as (entity hash, line, entity name,
    /// alias) records in the entity's partition (see [`AliasRecord`]).
    pub aliases: Option<(PathBuf, Partitions)>,
    dir: Option<PathBuf>,
}

impl std::fmt::Debug for LargeKg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LargeKg")
            .field("triples", &self.count)
            .finish()
    }
}

impl LargeKg {
    /// Sized for an in-memory limit of `limit` triples; files go to `dir`.
    pub fn new(limit: usize, dir: Option<PathBuf>) -> io::Result<LargeKg> {
        Ok(LargeKg {
            seen: Seen::new(limit.saturating_mul(4)),
            names: RecordSorter::new(limit.saturating_mul(4), dir.clone()),
            triples: Partitions::new(dir.as_deref())?,
            count: 0,
            aliases: None,
            dir,
        })
    }

    /// The hash of `name`, which goes to the sort if it is new.
    pub fn name(&mut self, name: &str) -> io::Result<u64> {
        let h = name_hash(name);
        if self.seen.insert(h) {
            self.names.push(name.as_bytes(), 0)?;
        }
        Ok(h)
    }

    /// Adds a triple of hashed names and an interned relation.
    pub fn add_hashed(&mut self, h: u64, r: u32, t: u64) -> io::Result<()> {
        self.count += 1;
        self.triples.write(
            partition(h),
            &[&h.to_le_bytes(), &r.to_le_bytes(), &t.to_le_bytes()],
        )
    }

    /// Adds line `line` of the aliases file `path`: `alias` of `entity`.
    pub fn add_alias(
        &mut self,
        path: &Path,
        line: u64,
        entity: &str,
        alias: &str,
    ) -> io::Result<()> {
        if self.aliases.is_none() {
            self.aliases = Some((path.to_path_buf(), Partitions::new(self.dir.as_deref())?));
        }
        let Some((_, parts)) = &mut self.aliases else {
            return Ok(());
        };
        let h = name_hash(entity);
        parts.write(
            partition(h),
            &[
                &h.to_le_bytes(),
                &line.to_le_bytes(),
                &(entity.len() as u32).to_le_bytes(),
                entity.as_bytes(),
                &(alias.len() as u32).to_le_bytes(),
                alias.as_bytes(),
            ],
        )
    }

    /// The parts the build reads: names, triples and aliases.
    pub fn into_parts(self) -> (RecordSorter, Partitions, Option<(PathBuf, Partitions)>) {
        (self.names, self.triples, self.aliases)
    }

    /// Times the set of seen names filled up (each costs disk, not memory).
    pub fn windows(&self) -> u64 {
        self.seen.windows
    }
}

/// One record of the aliases' partitions.
pub struct AliasRecord {
    pub hash: u64,
    pub line: u64,
    pub entity: String,
    pub alias: String,
}

impl AliasRecord {
    /// The next record of a partition, `None` at its end.
    pub fn read(r: &mut impl io::Read) -> io::Result<Option<AliasRecord>> {
        let Some(hash) = crate::spill::read_array::<8>(r)? else {
            return Ok(None);
        };
        let mut word = [0u8; 8];
        r.read_exact(&mut word)?;
        let line = u64::from_le_bytes(word);
        let entity = read_string(r)?;
        let alias = read_string(r)?;
        Ok(Some(AliasRecord {
            hash: u64::from_le_bytes(hash),
            line,
            entity,
            alias,
        }))
    }
}

fn read_string(r: &mut impl io::Read) -> io::Result<String> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let mut bytes = vec![0u8; u32::from_le_bytes(len) as usize];
    r.read_exact(&mut bytes)?;
    String::from_utf8(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}
