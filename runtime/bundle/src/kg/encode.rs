//! Encoders for the packager: the lexical index and string tables in the
//! layout [`super::Kg`] reads (feature `write`).

use super::postings::{POSTINGS_LIST, POSTING_ALIAS};
use crate::normalize::normalize;

/// The lexical index (fst bytes, postings bytes) over entity `names`
/// (index = id) and `aliases` (entity id, alias). Keys are normalized;
/// when a name and an alias of the same entity share a key, the name wins.
pub fn lexical_index<S: AsRef<str>, A: AsRef<str>>(
    names: &[S],
    aliases: &[(u32, A)],
) -> Result<(Vec<u8>, Vec<u8>), fst::Error> {
    let mut keys = IndexKeys::default();
    for (id, name) in names.iter().enumerate() {
        keys.add(name.as_ref(), id as u32);
    }
    for (e, a) in aliases {
        keys.add(a.as_ref(), e | POSTING_ALIAS);
    }
    let (fst, postings) = keys.build_into(Vec::new())?;
    Ok((fst, u32s(&postings)))
}

/// The keys of a lexical index, gathered in one byte arena (about a third
/// of the memory of a `String` per key), then sorted and written as the
/// `fst` (to any writer, so a large index streams to a file) and the
/// postings.
#[derive(Default)]
pub struct IndexKeys {
    text: Vec<u8>,
    /// (start in `text`, length, posting).
    entries: Vec<(u64, u32, u32)>,
}

impl IndexKeys {
    /// Adds `name` of entity `posting` (with [`POSTING_ALIAS`] for an alias).
    pub fn add(&mut self, name: &str, posting: u32) {
        let key = normalize(name);
        if key.is_empty() {
            return;
        }
        self.entries
            .push((self.text.len() as u64, key.len() as u32, posting));
        self.text.extend_from_slice(key.as_bytes());
    }

    /// Writes the `fst` into `out`; returns it with the postings.
    pub fn build_into<W: std::io::Write>(mut self, out: W) -> Result<(W, Vec<u32>), fst::Error> {
        let text = &self.text;
        let key = |e: &(u64, u32, u32)| &text[e.0 as usize..e.0 as usize + e.1 as usize];
        let order = |e: &(u64, u32, u32)| (key(e), e.2 & !POSTING_ALIAS, e.2);
        self.entries
            .sort_unstable_by(|a, b| order(a).cmp(&order(b)));
        let mut index = IndexWriter::new(out, Vec::new())?;
        for e in &self.entries {
            index.push(key(e), e.2)?;
        }
        let (fst, postings) = index.finish()?;
        let postings = postings
            .chunks_exact(4)
            .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Ok((fst, postings))
    }
}

/// The order an [`IndexWriter`] takes its entries in, as one number that
/// sorts with the key: (`posting` without the alias bit, `posting`).
pub fn index_order(posting: u32) -> u64 {
    (u64::from(posting & !POSTING_ALIAS) << 32) | u64::from(posting)
}

/// The lexical index written as its entries arrive, sorted by (key,
/// [`index_order`]): the `fst` to one writer and the postings (native
/// `u32`s) to another, so an index larger than memory streams from an
/// external sort. Where one entity has a key both as a name and as an
/// alias, the name (which sorts first) wins.
pub struct IndexWriter<W: std::io::Write, P: std::io::Write> {
    builder: fst::MapBuilder<W>,
    postings: P,
    written: u64,
    key: Vec<u8>,
    group: Vec<u32>,
}

impl<W: std::io::Write, P: std::io::Write> IndexWriter<W, P> {
    pub fn new(out: W, postings: P) -> Result<Self, fst::Error> {
        Ok(IndexWriter {
            builder: fst::MapBuilder::new(out)?,
            postings,
            written: 0,
            key: Vec::new(),
            group: Vec::new(),
        })
    }

    /// Adds `posting` under the normalized `key`; entries come in
    /// (key, [`index_order`]) order.
    pub fn push(&mut self, key: &[u8], posting: u32) -> Result<(), fst::Error> {
        if key != self.key.as_slice() {
            self.flush()?;
            self.key.clear();
            self.key.extend_from_slice(key);
        } else if self
            .group
            .last()
            .is_some_and(|&p| p & !POSTING_ALIAS == posting & !POSTING_ALIAS)
        {
            return Ok(());
        }
        self.group.push(posting);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), fst::Error> {
        let value = match self.group.as_slice() {
            [] => return Ok(()),
            [one] => u64::from(*one),
            many => {
                let at = self.written;
                self.postings
                    .write_all(&(many.len() as u32).to_ne_bytes())?;
                for p in many {
                    self.postings.write_all(&p.to_ne_bytes())?;
                }
                self.written += 1 + many.len() as u64;
                POSTINGS_LIST + at
            }
        };
        self.builder.insert(&self.key, value)?;
        self.group.clear();
        Ok(())
    }

    /// The `fst` writer and the postings writer.
    pub fn finish(mut self) -> Result<(W, P), fst::Error> {
        self.flush()?;
        Ok((self.builder.into_inner()?, self.postings))
    }
}

/// A [`super::StringTable`] written one string at a time: offsets (native
/// `u64`s, from 0) to one writer, bytes to another.
pub struct StringTableWriter<W: std::io::Write> {
    offsets: W,
    bytes: W,
    end: u64,
    count: u64,
}

impl<W: std::io::Write> StringTableWriter<W> {
    pub fn new(mut offsets: W, bytes: W) -> std::io::Result<Self> {
        offsets.write_all(&0u64.to_ne_bytes())?;
        Ok(StringTableWriter {
            offsets,
            bytes,
            end: 0,
            count: 0,
        })
    }

    pub fn push(&mut self, s: &str) -> std::io::Result<()> {
        self.bytes.write_all(s.as_bytes())?;
        self.end += s.len() as u64;
        self.count += 1;
        self.offsets.write_all(&self.end.to_ne_bytes())
    }

    /// Strings written so far.
    pub fn len(&self) -> u64 {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The (offsets, bytes) writers.
    pub fn finish(self) -> (W, W) {
        (self.offsets, self.bytes)
    }
}

/// Writes `count` strings given by `at` as a [`super::StringTable`]'s
/// offsets and bytes, to any writers.
pub fn string_table_into<'a, W: std::io::Write>(
    count: usize,
    at: impl Fn(usize) -> &'a str,
    offsets: &mut W,
    bytes: &mut W,
) -> std::io::Result<()> {
    let mut table = StringTableWriter::new(offsets, bytes)?;
    for i in 0..count {
        table.push(at(i))?;
    }
    Ok(())
}

/// Encodes strings as (offsets, bytes) for a [`super::StringTable`].
pub fn string_table<S: AsRef<str>>(strings: &[S]) -> (Vec<u8>, Vec<u8>) {
    let mut offsets = Vec::with_capacity(strings.len() + 1);
    let mut bytes = Vec::new();
    offsets.push(0u64);
    for s in strings {
        bytes.extend_from_slice(s.as_ref().as_bytes());
        offsets.push(bytes.len() as u64);
    }
    (u64s(&offsets), bytes)
}

pub fn u64s(v: &[u64]) -> Vec<u8> {
    bytemuck::cast_slice(v).to_vec()
}

pub fn u32s(v: &[u32]) -> Vec<u8> {
    bytemuck::cast_slice(v).to_vec()
}

/// The three sections of a [`super::iris::IriTable`].
pub struct EncodedIris {
    pub offsets: Vec<u8>,
    pub text: Vec<u8>,
    pub sorted: Vec<u8>,
}

/// Encodes source IRIs for a [`super::iris::IriTable`]. `iris[id]` is the
/// IRI of `id`, `None` (or empty) for none. Two ids with the same IRI are
/// refused: the index maps an IRI to one id.
pub fn iri_table<S: AsRef<str>>(iris: &[Option<S>]) -> Result<EncodedIris, crate::BundleError> {
    let strings: Vec<&str> = iris
        .iter()
        .map(|i| i.as_ref().map_or("", AsRef::as_ref))
        .collect();
    let (offsets, text) = string_table(&strings);
    let mut sorted: Vec<u32> = (0..strings.len() as u32)
        .filter(|&id| !strings[id as usize].is_empty())
        .collect();
    sorted.sort_unstable_by_key(|&id| strings[id as usize]);
    if let Some(w) = sorted
        .windows(2)
        .find(|w| strings[w[0] as usize] == strings[w[1] as usize])
    {
        return Err(crate::BundleError::Build(format!(
            "ids {} and {} have the same IRI {}",
            w[0], w[1], strings[w[0] as usize]
        )));
    }
    Ok(EncodedIris {
        offsets,
        text,
        sorted: u32s(&sorted),
    })
}
