//! Source IRIs: the optional `kg.{entities,relations}.iris.*` sections of a
//! bundle packed from RDF, and the index that maps an IRI back to its id.
//!
//! For one id space of `n` ids (entities or relations), three sections:
//!
//! - `…iris.offsets`: u64 × (n + 1), string table offsets, as for names;
//! - `…iris.text`: the IRIs' UTF-8 bytes, in id order; an empty string means
//!   the id has no IRI (a literal or a blank node);
//! - `…iris.sorted`: u32 × k, the ids that have an IRI, ordered by their IRI
//!   bytewise (strictly increasing), so an IRI is found by binary search.
//!
//! [`IriTable::open`] checks lengths and end offsets in constant time (it runs
//! at every start); [`IriTable::check`] checks every offset, string and index
//! entry (linear; it runs when a bundle is verified or installed, see
//! [`Collected`](crate::kg::iris::Collected)). Accessors use checked
//! slicing, so a damaged table gives `None`, never a panic.

use crate::error::{BundleError, Result};
use crate::format::Prefix;
use crate::sections as s;

/// The three section names of one id space.
#[derive(Debug, Clone, Copy)]
pub struct IriSections {
    pub offsets: &'static str,
    pub text: &'static str,
    pub sorted: &'static str,
    /// What the ids are, for messages ("entity", "relation").
    pub what: &'static str,
    /// The plural, for messages.
    pub whats: &'static str,
    /// The string table whose length fixes the number of ids.
    pub count_from: &'static str,
}

pub const ENTITY_IRIS: IriSections = IriSections {
    offsets: s::ENTITY_IRI_OFFSETS,
    text: s::ENTITY_IRI_TEXT,
    sorted: s::ENTITY_IRI_SORTED,
    what: "entity",
    whats: "entities",
    count_from: s::ENTITY_OFFSETS,
};

pub const RELATION_IRIS: IriSections = IriSections {
    offsets: s::RELATION_IRI_OFFSETS,
    text: s::RELATION_IRI_TEXT,
    sorted: s::RELATION_IRI_SORTED,
    what: "relation",
    whats: "relations",
    count_from: s::RELATION_OFFSETS,
};

impl IriSections {
    fn names(&self) -> [&'static str; 3] {
        [self.offsets, self.text, self.sorted]
    }
}

/// The source IRIs of one id space and their index.
#[derive(Clone, Copy)]
pub struct IriTable<'a> {
    offsets: &'a [u64],
    text: &'a [u8],
    sorted: &'a [u32],
}

impl<'a> IriTable<'a> {
    /// The table of `which` for `count` ids, when the bundle has it: all
    /// three sections or none (a partial set is an error). Constant time.
    pub fn open(
        which: &IriSections,
        count: usize,
        get: impl Fn(&str) -> Option<&'a [u8]>,
    ) -> Result<Option<IriTable<'a>>> {
        let [o, t, x] = which.names().map(&get);
        let (offsets, text, sorted) = match (o, t, x) {
            (None, None, None) => return Ok(None),
            (Some(o), Some(t), Some(x)) => (o, t, x),
            _ => {
                let missing: Vec<&str> = which
                    .names()
                    .into_iter()
                    .filter(|n| get(n).is_none())
                    .collect();
                return Err(BundleError::bad_section(
                    which.offsets,
                    format!(
                        "the {} IRI sections come together; missing: {}",
                        which.what,
                        missing.join(", ")
                    ),
                ));
            }
        };
        let offsets: &[u64] = super::view::cast(which.offsets, offsets)?;
        let sorted: &[u32] = super::view::cast(which.sorted, sorted)?;
        if offsets.len() != count + 1 {
            return Err(BundleError::bad_section(
                which.offsets,
                format!(
                    "has {} offsets for {count} {} (needs {})",
                    offsets.len(),
                    which.whats,
                    count + 1
                ),
            ));
        }
        if offsets.first() != Some(&0) || offsets.last() != Some(&(text.len() as u64)) {
            return Err(BundleError::bad_section(
                which.offsets,
                format!(
                    "offsets must start at 0 and end at the IRI data length {}",
                    text.len()
                ),
            ));
        }
        if sorted.len() > count {
            return Err(BundleError::bad_section(
                which.sorted,
                format!(
                    "indexes {} IRIs, more than the {count} {}",
                    sorted.len(),
                    which.whats
                ),
            ));
        }
        Ok(Some(IriTable {
            offsets,
            text,
            sorted,
        }))
    }

    /// Number of ids.
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The IRI of `id`; `None` when it has none (or the table is damaged).
    pub fn get(&self, id: u32) -> Option<&'a str> {
        let i = usize::try_from(id).ok()?;
        let a = usize::try_from(*self.offsets.get(i)?).ok()?;
        let b = usize::try_from(*self.offsets.get(i.checked_add(1)?)?).ok()?;
        let iri = std::str::from_utf8(self.text.get(a..b)?).ok()?;
        (!iri.is_empty()).then_some(iri)
    }

    /// The id whose IRI is `iri`: a binary search over the sorted index,
    /// O(log n). `None` when no id has it.
    pub fn find(&self, iri: &str) -> Option<u32> {
        if iri.is_empty() {
            return None;
        }
        let (mut lo, mut hi) = (0usize, self.sorted.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let id = *self.sorted.get(mid)?;
            match self.get(id)?.cmp(iri) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(id),
            }
        }
        None
    }

    /// Checks every entry (linear): offsets never decrease, each IRI is
    /// UTF-8, and the index lists every id that has an IRI exactly once, in
    /// strictly increasing IRI order.
    pub fn check(&self, which: &IriSections) -> Result<()> {
        let bad = |name: &str, problem: String| Err(BundleError::bad_section(name, problem));
        let mut with_iri = 0usize;
        for (i, w) in self.offsets.windows(2).enumerate() {
            if w[0] > w[1] {
                return bad(
                    which.offsets,
                    format!(
                        "offsets decrease at {} {i} ({} > {})",
                        which.what, w[0], w[1]
                    ),
                );
            }
            // Within bounds: offsets rise to the last, which is the length.
            let Some(bytes) = usize::try_from(w[0])
                .ok()
                .zip(usize::try_from(w[1]).ok())
                .and_then(|(a, b)| self.text.get(a..b))
            else {
                return bad(
                    which.offsets,
                    format!("the IRI of {} {i} is out of bounds", which.what),
                );
            };
            if std::str::from_utf8(bytes).is_err() {
                return bad(
                    which.text,
                    format!("the IRI of {} {i} is not valid UTF-8", which.what),
                );
            }
            with_iri += usize::from(!bytes.is_empty());
        }
        if self.sorted.len() != with_iri {
            return bad(
                which.sorted,
                format!(
                    "indexes {} IRIs, but {with_iri} {} have one",
                    self.sorted.len(),
                    which.whats
                ),
            );
        }
        let mut previous: Option<&str> = None;
        for (k, &id) in self.sorted.iter().enumerate() {
            let Some(iri) = self.get(id) else {
                return bad(
                    which.sorted,
                    format!(
                        "entry {k} is {} {id}, which has no IRI or does not exist",
                        which.what
                    ),
                );
            };
            if previous.is_some_and(|p| p >= iri) {
                return bad(
                    which.sorted,
                    format!("entry {k} ({iri}) is not after the one before it"),
                );
            }
            previous = Some(iri);
        }
        Ok(())
    }
}

/// The IRI sections of a bundle kept in memory while it is verified or
/// installed, to be checked in full ([`IriTable::check`]) once they are all
/// decompressed, and the RDF statement sections likewise. They are the only
/// sections kept: the others stream through.
#[derive(Default)]
pub struct Collected {
    sections: Vec<(String, Vec<u8>)>,
}

impl Collected {
    /// Whether `name` is a section this collects.
    pub fn wants(name: &str) -> bool {
        [ENTITY_IRIS, RELATION_IRIS]
            .iter()
            .any(|w| w.names().contains(&name))
            || super::statements::SECTIONS.contains(&name)
    }

    pub fn keep(&mut self, name: &str, raw: Vec<u8>) {
        self.sections.push((name.to_string(), raw));
    }

    fn get(&self, name: &str) -> Option<&[u8]> {
        self.sections
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b.as_slice())
    }

    /// Checks what was kept. The number of ids comes from the signed section
    /// table (the raw length of the names' offsets section).
    pub fn check(&self, prefix: &Prefix) -> Result<()> {
        for which in [ENTITY_IRIS, RELATION_IRIS] {
            let count = prefix
                .section(which.count_from)
                .map(|e| (e.raw_len / 8).saturating_sub(1))
                .and_then(|c| usize::try_from(c).ok());
            let aligned = self.aligned(&which.names());
            let get = |name: &str| aligned.get(name);
            let count = match count {
                Some(c) => c,
                None => get(which.offsets).map_or(0, |o| (o.len() / 8).saturating_sub(1)),
            };
            if let Some(table) = IriTable::open(&which, count, get)? {
                table.check(&which)?;
            }
        }
        let aligned = self.aligned(&super::statements::SECTIONS);
        if let Some(statements) = super::statements::Statements::open(|n| aligned.get(n))? {
            statements.check()?;
        }
        Ok(())
    }

    /// Copies of the kept sections among `names` in u64-aligned memory (a
    /// `Vec<u8>` need not be aligned).
    fn aligned(&self, names: &[&'static str]) -> Aligned {
        Aligned(
            names
                .iter()
                .filter_map(|&n| self.get(n).map(|b| (n, aligned_copy(b), b.len())))
                .collect(),
        )
    }
}

/// Sections copied into aligned memory: (name, words, byte length).
struct Aligned(Vec<(&'static str, Vec<u64>, usize)>);

impl Aligned {
    fn get(&self, name: &str) -> Option<&[u8]> {
        self.0
            .iter()
            .find(|(n, _, _)| *n == name)
            .and_then(|(_, words, len)| bytemuck::cast_slice::<u64, u8>(words).get(..*len))
    }
}

/// `bytes` in 8-byte aligned memory (zero-padded to whole words).
fn aligned_copy(bytes: &[u8]) -> Vec<u64> {
    let mut words = vec![0u64; bytes.len().div_ceil(8)];
    bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..bytes.len()].copy_from_slice(bytes);
    words
}

#[cfg(test)]
mod tests {
    use crate::kg::iris::*;

    /// Sections of one id space, built by hand as the packager would.
    struct Raw {
        offsets: Vec<u64>,
        text: Vec<u8>,
        sorted: Vec<u32>,
    }

    impl Raw {
        fn new(iris: &[&str]) -> Raw {
            let mut offsets = vec![0u64];
            let mut text = Vec::new();
            for i in iris {
                text.extend_from_slice(i.as_bytes());
                offsets.push(text.len() as u64);
            }
            let mut sorted: Vec<u32> = (0..iris.len() as u32)
                .filter(|&i| !iris[i as usize].is_empty())
                .collect();
            sorted.sort_by_key(|&i| iris[i as usize]);
            Raw {
                offsets,
                text,
                sorted,
            }
        }

        fn open(&self, count: usize) -> Result<Option<IriTable<'_>>> {
            let o: &[u8] = bytemuck::cast_slice(&self.offsets);
            let x: &[u8] = bytemuck::cast_slice(&self.sorted);
            IriTable::open(&ENTITY_IRIS, count, |n| match n {
                s::ENTITY_IRI_OFFSETS => Some(o),
                s::ENTITY_IRI_TEXT => Some(&self.text[..]),
                s::ENTITY_IRI_SORTED => Some(x),
                _ => None,
            })
        }

        /// Opens and checks in full; the error's text.
        fn refusal(&self, count: usize) -> String {
            match self.open(count) {
                Err(e) => e.to_string(),
                Ok(Some(t)) => match t.check(&ENTITY_IRIS) {
                    Err(e) => e.to_string(),
                    Ok(()) => panic!("accepted"),
                },
                Ok(None) => panic!("no table"),
            }
        }
    }

    const IRIS: &[&str] = &[
        "http://ex.org/b",
        "",
        "http://ex.org/a",
        "http://ex.org/é",
        "http://ex.org/c",
    ];

    #[test]
    fn iris_round_trip_both_ways() {
        let raw = Raw::new(IRIS);
        let t = raw.open(IRIS.len()).unwrap().unwrap();
        t.check(&ENTITY_IRIS).unwrap();
        for (id, iri) in IRIS.iter().enumerate() {
            let id = id as u32;
            if iri.is_empty() {
                assert_eq!(t.get(id), None);
            } else {
                assert_eq!(t.get(id), Some(*iri));
                assert_eq!(t.find(iri), Some(id));
            }
        }
        assert_eq!(t.get(99), None);
        assert_eq!(t.find(""), None);
        assert_eq!(t.find("http://ex.org/"), None);
        assert_eq!(t.find("http://ex.org/d"), None);
        assert_eq!(t.find("zzz"), None);
        assert_eq!(t.len(), 5);
    }

    #[test]
    fn no_sections_is_no_table_and_a_partial_set_is_refused() {
        let none = IriTable::open(&ENTITY_IRIS, 3, |_| None).unwrap();
        assert!(none.is_none());
        let offsets = [0u64];
        let o: &[u8] = bytemuck::cast_slice(&offsets);
        let err = IriTable::open(&ENTITY_IRIS, 0, |n| {
            (n == s::ENTITY_IRI_OFFSETS).then_some(o)
        })
        .err()
        .unwrap()
        .to_string();
        assert!(
            err.contains("kg.entities.iris.text") && err.contains("kg.entities.iris.sorted"),
            "{err}"
        );
    }

    #[test]
    fn lengths_are_checked_at_open() {
        let raw = Raw::new(IRIS);
        let err = raw.open(4).err().unwrap().to_string();
        assert!(
            err.contains("has 6 offsets for 4 entities (needs 5)"),
            "{err}"
        );
        let mut long = Raw::new(IRIS);
        *long.offsets.last_mut().unwrap() += 1;
        let err = long.open(5).err().unwrap().to_string();
        assert!(err.contains("end at the IRI data length"), "{err}");
        let mut many = Raw::new(IRIS);
        many.sorted.extend([0, 0, 0]);
        let err = many.open(5).err().unwrap().to_string();
        assert!(
            err.contains("indexes 7 IRIs, more than the 5 entities"),
            "{err}"
        );
    }

    #[test]
    fn hostile_tables_are_refused_by_the_full_check() {
        // Offsets that go down and up again (first and last still right).
        let mut r = Raw::new(IRIS);
        r.offsets[2] = r.offsets[3] + 1;
        let err = r.refusal(5);
        assert!(err.contains("offsets decrease at entity 2"), "{err}");
        // One past the end of the text.
        let mut r = Raw::new(IRIS);
        r.offsets[2] = 1000;
        let err = r.refusal(5);
        assert!(
            err.contains("the IRI of entity 1 is out of bounds"),
            "{err}"
        );
        // A cut through a multi-byte character.
        let mut r = Raw::new(IRIS);
        r.offsets[4] -= 1;
        let err = r.refusal(5);
        assert!(err.contains("not valid UTF-8"), "{err}");
        // An index entry out of range.
        let mut r = Raw::new(IRIS);
        r.sorted[0] = 77;
        let err = r.refusal(5);
        assert!(err.contains("does not exist"), "{err}");
        // An index entry pointing at an id without an IRI.
        let mut r = Raw::new(IRIS);
        r.sorted[0] = 1;
        assert!(r.refusal(5).contains("has no IRI"));
        // Out of order, and a duplicate.
        let mut r = Raw::new(IRIS);
        r.sorted.swap(0, 1);
        assert!(r.refusal(5).contains("not after"));
        let mut r = Raw::new(IRIS);
        r.sorted[1] = r.sorted[0];
        assert!(r.refusal(5).contains("not after"));
        // An IRI missing from the index.
        let mut r = Raw::new(IRIS);
        r.sorted.pop();
        assert!(r.refusal(5).contains("indexes 3 IRIs, but 4"));
    }

    #[test]
    fn damaged_tables_never_panic() {
        let good = Raw::new(IRIS);
        for i in 0..good.offsets.len() {
            for v in [0, 1, 7, u64::MAX, u64::MAX / 2] {
                let mut r = Raw::new(IRIS);
                r.offsets[i] = v;
                if let Ok(Some(t)) = r.open(5) {
                    let _ = t.check(&ENTITY_IRIS);
                    for id in 0..8 {
                        let _ = t.get(id);
                    }
                    for iri in IRIS {
                        let _ = t.find(iri);
                    }
                }
            }
        }
        for i in 0..good.sorted.len() {
            for v in [0, 4, 5, u32::MAX] {
                let mut r = Raw::new(IRIS);
                r.sorted[i] = v;
                if let Ok(Some(t)) = r.open(5) {
                    let _ = t.check(&ENTITY_IRIS);
                    for iri in IRIS {
                        let _ = t.find(iri);
                    }
                }
            }
        }
    }
}
