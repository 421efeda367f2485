//! The RDF statements as given: the optional `rdf.*` sections of a bundle
//! packed from RDF, which `/sparql` answers from exactly as the file said
//! (every literal with its datatype and language, blank nodes, the file's
//! own label triples, named graphs), beside the question-answering graph
//! (`kg.*`), which keeps only what questions need.
//!
//! - `rdf.terms.offsets`, `rdf.terms.text`: a string table of every term,
//!   written as in N-Quads (`<iri>`, `_:label`, `"lexical"^^<datatype>`,
//!   `"lexical"@lang`, `"lexical"` for an `xsd:string`), sorted bytewise
//!   with no duplicates: a term's id is its index, found by binary search.
//! - `rdf.quads`: u32 × 4 per statement (subject, predicate, object, graph
//!   ids; graph [`DEFAULT_GRAPH`] for the default graph), sorted by
//!   (s, p, o, g), no duplicates.
//! - `rdf.quads.pos`, `rdf.quads.osp`, `rdf.quads.gsp`: u32 × Q each, the
//!   statement indices ordered by (p, o, s, g), (o, s, p, g) and
//!   (g, s, p, o): every pattern with a bound term is a binary search.
//!
//! [`Statements::open`] checks lengths in constant time (at every start);
//! [`Statements::check`] checks every order (linear; at verification and
//! install). Accessors use checked slicing: damaged sections give fewer
//! statements, never a panic.

use std::cmp::Ordering;

use super::strings::StringTable;
use super::view::cast;
use crate::error::{BundleError, Result};
use crate::sections as s;

/// The graph id of the default graph.
pub const DEFAULT_GRAPH: u32 = u32::MAX;

/// The section names, all present or all absent.
pub const SECTIONS: [&str; 6] = [
    s::RDF_TERM_OFFSETS,
    s::RDF_TERM_TEXT,
    s::RDF_QUADS,
    s::RDF_QUADS_POS,
    s::RDF_QUADS_OSP,
    s::RDF_QUADS_GSP,
];

/// One statement: subject, predicate, object and graph term ids.
pub type Quad = [u32; 4];

/// An order of the statements and the positions of its key in a [`Quad`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    Spog,
    Posg,
    Ospg,
    Gspo,
}

impl Order {
    const ALL: [Order; 4] = [Order::Spog, Order::Posg, Order::Ospg, Order::Gspo];

    /// Quad positions, most significant first.
    fn positions(self) -> [usize; 4] {
        match self {
            Order::Spog => [0, 1, 2, 3],
            Order::Posg => [1, 2, 0, 3],
            Order::Ospg => [2, 0, 1, 3],
            Order::Gspo => [3, 0, 1, 2],
        }
    }

    fn key(self, q: &Quad) -> Quad {
        self.positions().map(|i| q[i])
    }

    fn section(self) -> &'static str {
        match self {
            Order::Spog => s::RDF_QUADS,
            Order::Posg => s::RDF_QUADS_POS,
            Order::Ospg => s::RDF_QUADS_OSP,
            Order::Gspo => s::RDF_QUADS_GSP,
        }
    }
}

/// The statements of a bundle and their indexes.
#[derive(Clone, Copy)]
pub struct Statements<'a> {
    terms: StringTable<'a>,
    quads: &'a [u32],
    pos: &'a [u32],
    osp: &'a [u32],
    gsp: &'a [u32],
}

/// Which statements a pattern asks for: a bound term id or any, and the
/// graph (`Some(DEFAULT_GRAPH)` for the default graph; `None`, any named
/// graph but not the default one, as SPARQL's `GRAPH ?g`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Pattern {
    pub subject: Option<u32>,
    pub predicate: Option<u32>,
    pub object: Option<u32>,
    pub graph: Option<u32>,
}

impl<'a> Statements<'a> {
    /// The statements, when the bundle has them: all six sections or none
    /// (a partial set is an error). Constant time.
    pub fn open(get: impl Fn(&str) -> Option<&'a [u8]>) -> Result<Option<Statements<'a>>> {
        let found = SECTIONS.map(&get);
        if found.iter().all(Option::is_none) {
            return Ok(None);
        }
        let [Some(o), Some(t), Some(q), Some(p), Some(x), Some(g)] = found else {
            let missing: Vec<&str> = SECTIONS
                .iter()
                .zip(found)
                .filter(|(_, f)| f.is_none())
                .map(|(n, _)| *n)
                .collect();
            return Err(BundleError::bad_section(
                s::RDF_QUADS,
                format!(
                    "the RDF statement sections come together; missing: {}",
                    missing.join(", ")
                ),
            ));
        };
        let terms = StringTable::new(s::RDF_TERM_OFFSETS, o, t)?;
        let quads: &[u32] = cast(s::RDF_QUADS, q)?;
        if !quads.len().is_multiple_of(4) {
            return Err(BundleError::bad_section(
                s::RDF_QUADS,
                format!("{} ids are not whole statements of 4", quads.len()),
            ));
        }
        let count = quads.len() / 4;
        let [pos, osp, gsp] = [
            (s::RDF_QUADS_POS, p),
            (s::RDF_QUADS_OSP, x),
            (s::RDF_QUADS_GSP, g),
        ]
        .map(|(name, bytes)| (name, cast::<u32>(name, bytes)));
        let mut orders = [&[][..]; 3];
        for (slot, (name, order)) in orders.iter_mut().zip([pos, osp, gsp]) {
            let order = order?;
            if order.len() != count {
                return Err(BundleError::bad_section(
                    name,
                    format!("orders {} statements of {count}", order.len()),
                ));
            }
            *slot = order;
        }
        Ok(Some(Statements {
            terms,
            quads,
            pos: orders[0],
            osp: orders[1],
            gsp: orders[2],
        }))
    }

    /// Number of statements.
    pub fn len(&self) -> usize {
        self.quads.len() / 4
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of distinct terms.
    pub fn term_count(&self) -> usize {
        self.terms.len()
    }

    /// Term `id` in N-Quads syntax.
    pub fn term(&self, id: u32) -> Option<&'a str> {
        self.terms.get(usize::try_from(id).ok()?)
    }

    /// The id of a term written in N-Quads syntax, O(log n).
    pub fn term_id(&self, text: &str) -> Option<u32> {
        self.terms
            .find_sorted(text)
            .and_then(|i| u32::try_from(i).ok())
    }

    /// Statement `i` of the (s, p, o, g) order.
    pub fn quad(&self, i: usize) -> Option<Quad> {
        let at = i.checked_mul(4)?;
        let q = self.quads.get(at..at.checked_add(4)?)?;
        Some([q[0], q[1], q[2], q[3]])
    }

    /// The `k`-th statement of `order`.
    fn nth(&self, order: Order, k: usize) -> Option<Quad> {
        let i = match order {
            Order::Spog => k,
            Order::Posg => *self.pos.get(k)? as usize,
            Order::Ospg => *self.osp.get(k)? as usize,
            Order::Gspo => *self.gsp.get(k)? as usize,
        };
        self.quad(i)
    }

    /// The first position of `order` whose key is not below `prefix`
    /// (compared on the prefix's length), or past it with `after`.
    fn bound(&self, order: Order, prefix: &[u32], after: bool) -> usize {
        let (mut lo, mut hi) = (0usize, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let Some(q) = self.nth(order, mid) else {
                return lo;
            };
            let key = order.key(&q);
            let below = match key[..prefix.len()].cmp(prefix) {
                Ordering::Less => true,
                Ordering::Equal => after,
                Ordering::Greater => false,
            };
            if below {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The statements matching `pattern`, from the order whose key it
    /// binds the longest prefix of.
    pub fn matching(self, pattern: Pattern) -> impl Iterator<Item = Quad> + 'a {
        let Pattern {
            subject: s,
            predicate: p,
            object: o,
            graph: g,
        } = pattern;
        let (order, prefix): (Order, Vec<u32>) = match (s, p, o) {
            (Some(s), Some(p), Some(o)) => (Order::Spog, vec![s, p, o]),
            (Some(s), Some(p), None) => (Order::Spog, vec![s, p]),
            (Some(s), None, Some(o)) => (Order::Ospg, vec![o, s]),
            (Some(s), None, None) => (Order::Spog, vec![s]),
            (None, Some(p), Some(o)) => (Order::Posg, vec![p, o]),
            (None, Some(p), None) => (Order::Posg, vec![p]),
            (None, None, Some(o)) => (Order::Ospg, vec![o]),
            (None, None, None) => match g {
                Some(g) => (Order::Gspo, vec![g]),
                // Every named graph: they sort before the default one.
                None => (Order::Gspo, Vec::new()),
            },
        };
        let (from, to) = if prefix.is_empty() {
            let named = self.bound(Order::Gspo, &[DEFAULT_GRAPH], false);
            (
                0,
                if order == Order::Gspo {
                    named
                } else {
                    self.len()
                },
            )
        } else {
            (
                self.bound(order, &prefix, false),
                self.bound(order, &prefix, true),
            )
        };
        (from..to).filter_map(move |k| {
            let q = self.nth(order, k)?;
            let fits = s.is_none_or(|s| q[0] == s)
                && p.is_none_or(|p| q[1] == p)
                && o.is_none_or(|o| q[2] == o)
                && match g {
                    Some(g) => q[3] == g,
                    None => q[3] != DEFAULT_GRAPH,
                };
            fits.then_some(q)
        })
    }

    /// The ids of the named graphs, each once, in id order.
    pub fn named_graphs(self) -> impl Iterator<Item = u32> + 'a {
        let end = self.bound(Order::Gspo, &[DEFAULT_GRAPH], false);
        let mut last = None;
        (0..end).filter_map(move |k| {
            let g = self.nth(Order::Gspo, k)?[3];
            (last.replace(g) != Some(g)).then_some(g)
        })
    }

    /// Checks every term and order (linear): terms are UTF-8 and strictly
    /// increasing, statement ids are terms (or the default graph), and
    /// each order is strictly increasing by its key.
    pub fn check(&self) -> Result<()> {
        let mut previous: Option<&str> = None;
        for i in 0..self.terms.len() {
            let Some(term) = self.terms.get(i) else {
                return Err(BundleError::bad_section(
                    s::RDF_TERM_OFFSETS,
                    format!("term {i} is out of bounds or not UTF-8"),
                ));
            };
            if term.is_empty() || previous.is_some_and(|p| p >= term) {
                return Err(BundleError::bad_section(
                    s::RDF_TERM_TEXT,
                    format!("term {i} ({term}) is empty or not after the one before it"),
                ));
            }
            previous = Some(term);
        }
        let terms = self.terms.len();
        for i in 0..self.len() {
            let q = self.quad(i).unwrap_or([u32::MAX; 4]);
            let fine = q[..3].iter().all(|&t| (t as usize) < terms)
                && (q[3] == DEFAULT_GRAPH || (q[3] as usize) < terms);
            if !fine {
                return Err(BundleError::bad_section(
                    s::RDF_QUADS,
                    format!("statement {i} names a term that does not exist"),
                ));
            }
        }
        for order in Order::ALL {
            let mut last: Option<Quad> = None;
            for k in 0..self.len() {
                let Some(q) = self.nth(order, k) else {
                    return Err(BundleError::bad_section(
                        order.section(),
                        format!("entry {k} is not a statement"),
                    ));
                };
                let key = order.key(&q);
                if last.is_some_and(|l| l >= key) {
                    return Err(BundleError::bad_section(
                        order.section(),
                        format!("entry {k} is not after the one before it"),
                    ));
                }
                last = Some(key);
            }
        }
        Ok(())
    }
}

/// The encoded `rdf.*` sections (feature `write`), from statements in any
/// order over terms in any order: terms are sorted and deduplicated, and
/// statements renumbered, sorted and deduplicated.
#[cfg(feature = "write")]
pub fn encode(terms: &[impl AsRef<str>], quads: &mut Vec<Quad>) -> Vec<(&'static str, Vec<u8>)> {
    use super::encode::{string_table, u32s};
    let mut order: Vec<u32> = (0..terms.len() as u32).collect();
    order.sort_unstable_by(|&a, &b| terms[a as usize].as_ref().cmp(terms[b as usize].as_ref()));
    // Old id → new id; equal texts share the first new id.
    let mut map = vec![0u32; terms.len()];
    let mut sorted: Vec<&str> = Vec::with_capacity(terms.len());
    for &old in &order {
        let text = terms[old as usize].as_ref();
        if sorted.last() != Some(&text) {
            sorted.push(text);
        }
        map[old as usize] = (sorted.len() - 1) as u32;
    }
    let renumber = |t: u32| {
        if t == DEFAULT_GRAPH {
            t
        } else {
            map[t as usize]
        }
    };
    for q in quads.iter_mut() {
        *q = q.map(renumber);
    }
    quads.sort_unstable();
    quads.dedup();
    let index = |order: Order| -> Vec<u32> {
        let mut ix: Vec<u32> = (0..quads.len() as u32).collect();
        ix.sort_unstable_by_key(|&i| order.key(&quads[i as usize]));
        ix
    };
    let (offsets, text) = string_table(&sorted);
    let flat: Vec<u32> = quads.iter().flatten().copied().collect();
    vec![
        (s::RDF_TERM_OFFSETS, offsets),
        (s::RDF_TERM_TEXT, text),
        (s::RDF_QUADS, u32s(&flat)),
        (s::RDF_QUADS_POS, u32s(&index(Order::Posg))),
        (s::RDF_QUADS_OSP, u32s(&index(Order::Ospg))),
        (s::RDF_QUADS_GSP, u32s(&index(Order::Gspo))),
    ]
}

#[cfg(all(test, feature = "write"))]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn open<'a>(sections: &'a [(&'static str, Vec<u8>)]) -> Statements<'a> {
        Statements::open(|n| {
            sections
                .iter()
                .find(|(m, _)| *m == n)
                .map(|(_, b)| b.as_slice())
        })
        .unwrap()
        .unwrap()
    }

    #[test]
    fn every_pattern_finds_what_a_scan_finds() {
        let terms = ["<b>", "<a>", "\"1\"^^<int>", "<p>", "<q>", "<g>", "<a>"];
        let mut quads = vec![
            [1, 3, 0, DEFAULT_GRAPH],
            [1, 3, 2, DEFAULT_GRAPH],
            [0, 4, 1, DEFAULT_GRAPH],
            [6, 3, 0, 5],
            [1, 3, 0, DEFAULT_GRAPH],
        ];
        let sections = encode(&terms, &mut quads);
        let st = open(&sections);
        st.check().unwrap();
        assert_eq!(st.len(), 4, "duplicates and equal terms are merged");
        assert_eq!(st.term_count(), 6);
        let id = |t: &str| st.term_id(t).unwrap();
        assert_eq!(st.term(id("<a>")), Some("<a>"));
        let all: Vec<Quad> = (0..st.len()).filter_map(|i| st.quad(i)).collect();
        let ids = [None, Some(id("<a>")), Some(id("<p>")), Some(id("<b>"))];
        for s in ids {
            for p in ids {
                for o in ids {
                    for g in [None, Some(DEFAULT_GRAPH), Some(id("<g>"))] {
                        let pattern = Pattern {
                            subject: s,
                            predicate: p,
                            object: o,
                            graph: g,
                        };
                        let mut got: Vec<Quad> = st.matching(pattern).collect();
                        got.sort_unstable();
                        let want: Vec<Quad> = all
                            .iter()
                            .filter(|q| {
                                s.is_none_or(|s| q[0] == s)
                                    && p.is_none_or(|p| q[1] == p)
                                    && o.is_none_or(|o| q[2] == o)
                                    && g.map_or(q[3] != DEFAULT_GRAPH, |g| q[3] == g)
                            })
                            .copied()
                            .collect();
                        assert_eq!(got, want, "{pattern:?}");
                    }
                }
            }
        }
        assert_eq!(st.named_graphs().collect::<Vec<_>>(), vec![id("<g>")]);
    }

    #[test]
    fn a_partial_set_and_damaged_orders_are_refused() {
        let mut quads = vec![[0, 1, 0, DEFAULT_GRAPH], [1, 1, 0, DEFAULT_GRAPH]];
        let sections = encode(&["<a>", "<b>"], &mut quads);
        let partial = Statements::open(|n| {
            sections
                .iter()
                .find(|(m, _)| *m == n && n != s::RDF_QUADS_OSP)
                .map(|(_, b)| b.as_slice())
        });
        assert!(partial
            .err()
            .unwrap()
            .to_string()
            .contains(s::RDF_QUADS_OSP));
        let mut damaged = sections.clone();
        for (name, bytes) in &mut damaged {
            if *name == s::RDF_QUADS_POS {
                bytes.swap(0, 4);
            }
        }
        let st = open(&damaged);
        assert!(st
            .check()
            .unwrap_err()
            .to_string()
            .contains(s::RDF_QUADS_POS));
        // Damage gives wrong or fewer answers, never a panic.
        let _ = st.matching(Pattern::default()).count();
    }
}
