//! Encoders for the packager: the lexical index and string tables in the
//! layout [`super::Kg`] reads (feature `write`).

use super::{POSTINGS_LIST, POSTING_ALIAS};
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
        // A name wins over an alias of the same entity with the same key.
        self.entries.dedup_by(|later, earlier| {
            key(later) == key(earlier) && (later.2 & !POSTING_ALIAS) == (earlier.2 & !POSTING_ALIAS)
        });
        let mut builder = fst::MapBuilder::new(out)?;
        let mut postings: Vec<u32> = Vec::new();
        let entries = &self.entries;
        let mut i = 0;
        while i < entries.len() {
            let k = key(&entries[i]);
            let j = i + entries[i..].iter().take_while(|e| key(e) == k).count();
            let value = if j - i == 1 {
                u64::from(entries[i].2)
            } else {
                let at = postings.len() as u64;
                postings.push((j - i) as u32);
                postings.extend(entries[i..j].iter().map(|e| e.2));
                POSTINGS_LIST + at
            };
            builder.insert(k, value)?;
            i = j;
        }
        Ok((builder.into_inner()?, postings))
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
    let mut end = 0u64;
    offsets.write_all(&end.to_ne_bytes())?;
    for i in 0..count {
        let s = at(i);
        bytes.write_all(s.as_bytes())?;
        end += s.len() as u64;
        offsets.write_all(&end.to_ne_bytes())?;
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
