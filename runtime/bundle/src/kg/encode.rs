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
    let mut keys: Vec<(String, u32)> = Vec::with_capacity(names.len() + aliases.len());
    for (id, name) in names.iter().enumerate() {
        keys.push((normalize(name.as_ref()), id as u32));
    }
    for (e, a) in aliases {
        keys.push((normalize(a.as_ref()), e | POSTING_ALIAS));
    }
    keys.retain(|(k, _)| !k.is_empty());
    keys.sort_unstable_by(|a, b| {
        (&a.0, a.1 & !POSTING_ALIAS, a.1).cmp(&(&b.0, b.1 & !POSTING_ALIAS, b.1))
    });
    keys.dedup_by(|later, earlier| {
        later.0 == earlier.0 && (later.1 & !POSTING_ALIAS) == (earlier.1 & !POSTING_ALIAS)
    });
    let mut builder = fst::MapBuilder::memory();
    let mut postings: Vec<u32> = Vec::new();
    let mut i = 0;
    while i < keys.len() {
        let j = i + keys[i..].iter().take_while(|k| k.0 == keys[i].0).count();
        let value = if j - i == 1 {
            u64::from(keys[i].1)
        } else {
            let at = postings.len() as u64;
            postings.push((j - i) as u32);
            postings.extend(keys[i..j].iter().map(|k| k.1));
            POSTINGS_LIST + at
        };
        builder.insert(&keys[i].0, value)?;
        i = j;
    }
    Ok((builder.into_inner()?, u32s(&postings)))
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
