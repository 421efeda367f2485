//! Zero-copy views of the knowledge graph inside an image, and the encoders
//! the packager uses to produce those sections.
//!
//! Lengths and end offsets are checked once, in [`Kg::from_sections`], in
//! constant time. Accessors use checked slicing, so a corrupt offset yields
//! `None` or an empty slice, never a panic or an out-of-bounds read.

use std::ops::Range;

use crate::error::{BundleError, Result};
use crate::kg::iris::{IriTable, ENTITY_IRIS, RELATION_IRIS};
use crate::kg::statements::Statements;
pub use crate::kg::strings::StringTable;
use crate::kg::view::cast;
use crate::sections as s;

pub use crate::kg::postings::{POSTINGS_LIST, POSTING_ALIAS};
/// The longest index key [`Kg::check_index`] accepts, in bytes.
const MAX_KEY_BYTES: usize = 64 << 10;
/// Transitions [`Kg::check_index`] follows per declared key, at most
/// (the bytes of key that are not shared with the key before).
const MAX_AVG_KEY: usize = 1024;
/// Entity ids must fit in 31 bits (the top bit of a posting is the alias flag).
pub const MAX_ENTITIES: usize = (1 << 31) - 1;

/// Compressed sparse rows: for node `n`, edges `offsets[n]..offsets[n+1]`
/// sorted by (relation, other end).
#[derive(Clone, Copy)]
pub struct Csr<'a> {
    offsets: &'a [u64],
    relations: &'a [u32],
    others: &'a [u32],
}

impl<'a> Csr<'a> {
    fn new(
        names: [&str; 3],
        nodes: usize,
        offsets: &'a [u8],
        relations: &'a [u8],
        others: &'a [u8],
    ) -> Result<Self> {
        let offsets: &[u64] = cast(names[0], offsets)?;
        let relations: &[u32] = cast(names[1], relations)?;
        let others: &[u32] = cast(names[2], others)?;
        if offsets.len() != nodes + 1 {
            return Err(BundleError::bad_section(
                names[0],
                format!("has {} offsets for {nodes} entities", offsets.len()),
            ));
        }
        if relations.len() != others.len()
            || offsets.first() != Some(&0)
            || offsets.last() != Some(&(others.len() as u64))
        {
            return Err(BundleError::bad_section(
                names[0],
                "offsets do not match the edge arrays",
            ));
        }
        Ok(Csr {
            offsets,
            relations,
            others,
        })
    }

    fn range(&self, node: u32) -> Range<usize> {
        let i = node as usize;
        match (self.offsets.get(i), self.offsets.get(i + 1)) {
            (Some(&a), Some(&b)) if a <= b && b as usize <= self.others.len() => {
                a as usize..b as usize
            }
            _ => 0..0,
        }
    }

    /// Number of edges of `node`.
    pub fn degree(&self, node: u32) -> usize {
        self.range(node).len()
    }

    /// All edges of `node` as parallel (relation, other end) slices.
    pub fn edges(&self, node: u32) -> (&'a [u32], &'a [u32]) {
        let r = self.range(node);
        (&self.relations[r.clone()], &self.others[r])
    }

    /// The neighbours of `node` over `relation`: one sorted slice.
    pub fn neighbours(&self, node: u32, relation: u32) -> &'a [u32] {
        let (rels, others) = self.edges(node);
        let lo = rels.partition_point(|&r| r < relation);
        let hi = rels.partition_point(|&r| r <= relation);
        &others[lo..hi]
    }

    pub fn edge_count(&self) -> usize {
        self.others.len()
    }
}

/// How a lexical match was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Posting {
    pub entity: u32,
    pub via_alias: bool,
}

/// The knowledge graph of a loaded image.
#[derive(Clone)]
pub struct Kg<'a> {
    pub entities: StringTable<'a>,
    pub relations: StringTable<'a>,
    relation_desc: Option<StringTable<'a>>,
    relation_aliases: Option<StringTable<'a>>,
    alias_owners: &'a [u64],
    aliases: StringTable<'a>,
    /// Edges by head: (relation, tail).
    pub out: Csr<'a>,
    /// Edges by tail: (relation, head).
    pub inc: Csr<'a>,
    index: fst::Map<&'a [u8]>,
    postings: &'a [u32],
    entity_iris: Option<IriTable<'a>>,
    relation_iris: Option<IriTable<'a>>,
    statements: Option<Statements<'a>>,
}

impl<'a> Kg<'a> {
    /// Builds the views from the image's sections; `get` returns a section's bytes.
    pub fn from_sections(get: impl Fn(&str) -> Option<&'a [u8]>) -> Result<Kg<'a>> {
        let need = |name: &str| get(name).ok_or_else(|| BundleError::MissingSection(name.into()));
        let entities = StringTable::new(
            s::ENTITY_OFFSETS,
            need(s::ENTITY_OFFSETS)?,
            need(s::ENTITY_NAMES)?,
        )?;
        let relations = StringTable::new(
            s::RELATION_OFFSETS,
            need(s::RELATION_OFFSETS)?,
            need(s::RELATION_NAMES)?,
        )?;
        // One string per relation, or no table.
        let per_relation =
            |offsets: &str, text: &str, what: &str| -> Result<Option<StringTable<'a>>> {
                match (get(offsets), get(text)) {
                    (Some(o), Some(t)) => {
                        let t = StringTable::new(offsets, o, t)?;
                        if t.len() != relations.len() {
                            return Err(BundleError::bad_section(
                                offsets,
                                format!("{} {what} for {} relations", t.len(), relations.len()),
                            ));
                        }
                        Ok(Some(t))
                    }
                    (None, None) => Ok(None),
                    (Some(_), None) => Err(BundleError::MissingSection(text.into())),
                    (None, Some(_)) => Err(BundleError::MissingSection(offsets.into())),
                }
            };
        let relation_desc = per_relation(
            s::RELATION_DESC_OFFSETS,
            s::RELATION_DESC_TEXT,
            "descriptions",
        )?;
        let relation_aliases = per_relation(
            s::RELATION_ALIAS_OFFSETS,
            s::RELATION_ALIAS_TEXT,
            "alias lists",
        )?;
        let n = entities.len();
        if n > MAX_ENTITIES {
            return Err(BundleError::bad_section(
                s::ENTITY_OFFSETS,
                "too many entities",
            ));
        }
        let alias_owners: &[u64] = cast(s::ALIAS_OWNERS, need(s::ALIAS_OWNERS)?)?;
        let aliases = StringTable::new(
            s::ALIAS_OFFSETS,
            need(s::ALIAS_OFFSETS)?,
            need(s::ALIAS_NAMES)?,
        )?;
        if alias_owners.len() != n + 1
            || alias_owners.first() != Some(&0)
            || alias_owners.last() != Some(&(aliases.len() as u64))
        {
            return Err(BundleError::bad_section(
                s::ALIAS_OWNERS,
                "offsets do not match the entity and alias tables",
            ));
        }
        let out = Csr::new(
            [s::OUT_OFFSETS, s::OUT_RELATIONS, s::OUT_TARGETS],
            n,
            need(s::OUT_OFFSETS)?,
            need(s::OUT_RELATIONS)?,
            need(s::OUT_TARGETS)?,
        )?;
        let inc = Csr::new(
            [s::IN_OFFSETS, s::IN_RELATIONS, s::IN_SOURCES],
            n,
            need(s::IN_OFFSETS)?,
            need(s::IN_RELATIONS)?,
            need(s::IN_SOURCES)?,
        )?;
        if out.edge_count() != inc.edge_count() {
            return Err(BundleError::bad_section(
                s::IN_OFFSETS,
                "forward and reverse graphs have different edge counts",
            ));
        }
        let index = fst::Map::new(need(s::INDEX_FST)?)
            .map_err(|e| BundleError::bad_section(s::INDEX_FST, e.to_string()))?;
        let postings: &[u32] = cast(s::INDEX_POSTINGS, need(s::INDEX_POSTINGS)?)?;
        let entity_iris = IriTable::open(&ENTITY_IRIS, n, &get)?;
        let relation_iris = IriTable::open(&RELATION_IRIS, relations.len(), &get)?;
        let statements = Statements::open(&get)?;
        Ok(Kg {
            entities,
            relations,
            relation_desc,
            relation_aliases,
            alias_owners,
            aliases,
            out,
            inc,
            index,
            postings,
            entity_iris,
            relation_iris,
            statements,
        })
    }

    pub fn entity_count(&self) -> usize {
        self.entities.len()
    }

    pub fn relation_count(&self) -> usize {
        self.relations.len()
    }

    pub fn triple_count(&self) -> usize {
        self.out.edge_count()
    }

    pub fn entity_name(&self, id: u32) -> Option<&'a str> {
        self.entities.get(id as usize)
    }

    pub fn relation_name(&self, id: u32) -> Option<&'a str> {
        self.relations.get(id as usize)
    }

    pub fn relation_description(&self, id: u32) -> Option<&'a str> {
        self.relation_desc
            .as_ref()
            .and_then(|t| t.get(id as usize))
            .filter(|d| !d.is_empty())
    }

    /// The words people say for the relation besides its name
    /// (`--relation-aliases`: "helmed", "filmmaker" for `directed_by`);
    /// none for an unknown id or a bundle without them.
    pub fn relation_aliases(&self, id: u32) -> impl Iterator<Item = &'a str> {
        self.relation_aliases
            .as_ref()
            .and_then(|t| t.get(id as usize))
            .unwrap_or("")
            .split('\n')
            .filter(|a| !a.is_empty())
    }

    /// The relation's description when it is words to read: `None` when it
    /// is only the predicate's IRI (what an RDF relation carries until the
    /// operator describes it), which says nothing an encoder or a phrase
    /// could use.
    pub fn relation_gloss(&self, id: u32) -> Option<&'a str> {
        self.relation_description(id).filter(|d| !is_bare_iri(d))
    }

    /// Entity id by exact name (binary search; names are sorted).
    pub fn entity_id(&self, name: &str) -> Option<u32> {
        self.entities.find_sorted(name).map(|i| i as u32)
    }

    pub fn relation_id(&self, name: &str) -> Option<u32> {
        self.relations.find_sorted(name).map(|i| i as u32)
    }

    /// The source IRI of an entity, for bundles packed from RDF (section
    /// `kg.entities.iris.*`). `None` when the bundle has no IRIs, or the
    /// entity has none (a literal value or a blank node), or `id` is out of
    /// range.
    pub fn entity_iri(&self, id: u32) -> Option<&'a str> {
        self.entity_iris.as_ref()?.get(id)
    }

    /// The entity whose source IRI is exactly `iri` (no normalization): a
    /// binary search over the IRI index stored in the bundle, O(log n), with
    /// nothing built at start-up. `None` when no entity has it.
    pub fn entity_by_iri(&self, iri: &str) -> Option<u32> {
        self.entity_iris.as_ref()?.find(iri)
    }

    /// The source predicate IRI of a relation (`kg.relations.iris.*`);
    /// `None` as for [`Kg::entity_iri`].
    pub fn relation_iri(&self, id: u32) -> Option<&'a str> {
        self.relation_iris.as_ref()?.get(id)
    }

    /// The relation whose predicate IRI is exactly `iri`, O(log n).
    pub fn relation_by_iri(&self, iri: &str) -> Option<u32> {
        self.relation_iris.as_ref()?.find(iri)
    }

    /// Whether the bundle carries source IRIs (entities or relations).
    /// The RDF statements as the input gave them (`rdf.*`), when the bundle
    /// was packed from RDF with them.
    pub fn statements(&self) -> Option<Statements<'a>> {
        self.statements
    }

    pub fn has_iris(&self) -> bool {
        self.entity_iris.is_some() || self.relation_iris.is_some()
    }

    /// Checks the IRI sections in full (linear; [`Kg::from_sections`] only
    /// checks their lengths). Verification and installation run the same
    /// check on the decompressed sections (`iris::Collected`).
    pub fn check_iris(&self) -> Result<()> {
        if let Some(t) = &self.entity_iris {
            t.check(&ENTITY_IRIS)?;
        }
        if let Some(t) = &self.relation_iris {
            t.check(&RELATION_IRIS)?;
        }
        Ok(())
    }

    /// Aliases of an entity.
    pub fn aliases(&self, id: u32) -> impl Iterator<Item = &'a str> + '_ {
        let i = id as usize;
        let range = match (self.alias_owners.get(i), self.alias_owners.get(i + 1)) {
            (Some(&a), Some(&b)) if a <= b && b as usize <= self.aliases.len() => {
                a as usize..b as usize
            }
            _ => 0..0,
        };
        range.filter_map(move |k| self.aliases.get(k))
    }

    /// Entities whose normalized name or alias equals `normalized` exactly
    /// (none when the index is damaged).
    pub fn lookup_normalized(&self, normalized: &str) -> Vec<Posting> {
        match self.with_index(|index| index.get(normalized)).flatten() {
            Some(v) => self.decode_postings(v),
            None => Vec::new(),
        }
    }

    /// Runs `f` over the lexical index (for fuzzy and prefix search).
    ///
    /// The `fst` crate checks only the header and footer when a map is opened
    /// and panics on damaged node bytes while walking it. Images are hashed at
    /// install but not at every start (that would make startup linear in the
    /// graph's size), so a disk error after install could reach here: the
    /// panic is caught and reported as `None`.
    pub fn with_index<T>(&self, f: impl FnOnce(&fst::Map<&'a [u8]>) -> T) -> Option<T> {
        let index = &self.index;
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(index))).ok()
    }

    /// Walks the whole lexical index (linear in its size): every node must
    /// decode, the keys must come in order and as many as the FST's footer
    /// says (at most one per name and alias), and every value must name
    /// entities that exist. [`Kg::from_sections`] checks only the FST's
    /// header and footer, so install and verify run this once on a new
    /// image: a signed bundle with a damaged index is refused, rather than
    /// found by [`Kg::with_index`] at query time.
    ///
    /// The walk is depth-first in key order over the FST's nodes. A node is
    /// written after its children, so every transition must lead to a
    /// lower address: that, a bound on key length and a bound on the
    /// transitions followed make the walk end on any bytes.
    pub fn check_index(&self) -> Result<()> {
        let bad = |problem: String| BundleError::bad_section(s::INDEX_FST, problem);
        let entities = self.entity_count() as u64;
        let names = self.entity_count() + self.aliases.len();
        let declared = self.index.len();
        if declared > names {
            return Err(bad(format!(
                "its footer declares {declared} keys for {names} names and aliases"
            )));
        }
        let budget = declared.saturating_mul(MAX_AVG_KEY).saturating_add(1 << 16);
        let walked = self.with_index(|index| {
            let fst = index.as_fst();
            // (node address, key length there, output so far, byte in).
            let mut stack = vec![(fst.root().addr(), 0usize, 0u64, None::<u8>)];
            let (mut key, mut last) = (Vec::new(), Vec::new());
            let (mut keys, mut followed) = (0usize, 0usize);
            while let Some((addr, depth, out, inp)) = stack.pop() {
                key.truncate(depth.saturating_sub(1));
                key.extend(inp);
                let node = fst.node(addr);
                if node.is_final() {
                    if keys > 0 && key <= last {
                        return Err(format!("key {keys} is out of order"));
                    }
                    keys += 1;
                    if keys > declared {
                        return Err(format!("more keys than its footer's {declared}"));
                    }
                    let value = out.wrapping_add(node.final_output().value());
                    if let Err(why) = self.check_postings(value, entities) {
                        return Err(format!("key {keys}: {why}"));
                    }
                    last.clone_from(&key);
                }
                if depth >= MAX_KEY_BYTES {
                    return Err(format!("a key is longer than {MAX_KEY_BYTES} bytes"));
                }
                for t in node.transitions().collect::<Vec<_>>().into_iter().rev() {
                    followed += 1;
                    if t.addr >= addr || followed > budget {
                        return Err(format!("a transition at byte {addr} is out of place"));
                    }
                    stack.push((
                        t.addr,
                        depth + 1,
                        out.wrapping_add(t.out.value()),
                        Some(t.inp),
                    ));
                }
            }
            if keys != declared {
                return Err(format!("{keys} keys, but its footer says {declared}"));
            }
            Ok(())
        });
        match walked {
            Some(Ok(())) => Ok(()),
            Some(Err(problem)) => Err(bad(problem)),
            None => Err(bad("a node cannot be read (the FST is damaged)".into())),
        }
    }

    /// Checks one index value: an entity id, or a postings list in range
    /// whose entries are entity ids.
    fn check_postings(&self, value: u64, entities: u64) -> std::result::Result<(), String> {
        let entity = |p: u32| {
            let e = u64::from(p & !POSTING_ALIAS);
            if e < entities {
                Ok(())
            } else {
                Err(format!("entity {e} does not exist ({entities} entities)"))
            }
        };
        if value < POSTINGS_LIST {
            return entity(value as u32);
        }
        let at = usize::try_from(value - POSTINGS_LIST).map_err(|_| "postings out of range")?;
        let count = *self
            .postings
            .get(at)
            .ok_or_else(|| format!("postings at {at} are past the end"))?;
        let list = self
            .postings
            .get(at + 1..at + 1 + count as usize)
            .filter(|l| !l.is_empty())
            .ok_or_else(|| {
                format!("the postings list at {at} ({count} entries) is empty or past the end")
            })?;
        list.iter().try_for_each(|&p| entity(p))
    }

    /// Expands an fst value into postings (tolerates corrupt values by returning fewer).
    pub fn decode_postings(&self, value: u64) -> Vec<Posting> {
        let one = |p: u32| Posting {
            entity: p & !POSTING_ALIAS,
            via_alias: p & POSTING_ALIAS != 0,
        };
        if value < POSTINGS_LIST {
            return vec![one(value as u32)];
        }
        let at = (value - POSTINGS_LIST) as usize;
        let Some(&count) = self.postings.get(at) else {
            return Vec::new();
        };
        self.postings
            .get(at + 1..at + 1 + count as usize)
            .unwrap_or_default()
            .iter()
            .map(|&p| one(p))
            .collect()
    }
}

/// Source IRIs (optional sections) and their index.
pub mod iris;
mod postings;
/// The RDF statements as given (optional sections).
pub mod statements;
mod strings;
mod view;

/// Encoders for the packager (feature `write`).
#[cfg(feature = "write")]
pub mod encode;

/// Whether `text` is one IRI and nothing else (`https://ex.org/v/name`,
/// `urn:x:y`).
fn is_bare_iri(text: &str) -> bool {
    let t = text.trim();
    !t.contains(char::is_whitespace) && (t.contains("://") || t.starts_with("urn:"))
}

#[cfg(test)]
mod gloss_tests {
    use super::is_bare_iri;

    #[test]
    fn an_iri_is_no_gloss_but_words_are() {
        assert!(is_bare_iri("https://swapi.co/vocabulary/homeworld"));
        assert!(is_bare_iri("urn:ex:director"));
        assert!(!is_bare_iri("the director of a film"));
        assert!(!is_bare_iri("the page at https://ex.org/x about it"));
        assert!(!is_bare_iri("homeworld"));
    }
}
