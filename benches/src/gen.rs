//! A deterministic synthetic knowledge graph for the scale bench: power-law
//! degrees with hub entities, a skewed relation mix, word-like unique names
//! and aliases.
//!
//! Triple `i` is a pure function of `(seed, i)`, so any range of triples can
//! be made on any thread and the whole file is the same bytes every time.
//! A *changed* graph (`change > 0`) replaces a fixed fraction of the
//! triples with new ones, some of them on entities the base graph does not
//! have: what a delta update ships.

use std::io::{self, Write};

use rayon::prelude::*;

/// Syllables of the generated names (48, a multiple of 3 and 16).
const SYLLABLES: [&str; 48] = [
    "ka", "ro", "vi", "ten", "mu", "so", "la", "ne", "pa", "dor", "fi", "gu", "ha", "jin", "ke",
    "lo", "ma", "nu", "or", "pe", "qui", "ra", "si", "tu", "ul", "va", "we", "xa", "yo", "za",
    "bre", "cla", "dri", "fle", "gro", "pli", "sta", "tho", "ver", "wil", "an", "el", "is", "ob",
    "ur", "mon", "tar", "bel",
];
/// Relation name stems; the relation's number makes each name unique.
const VERBS: [&str; 12] = [
    "has",
    "part_of",
    "made_by",
    "located_in",
    "member_of",
    "related_to",
    "cites",
    "owns",
    "follows",
    "precedes",
    "works_for",
    "written_by",
];
/// Triples made per parallel work item.
const CHUNK: u64 = 1 << 16;

/// What to generate.
#[derive(Debug, Clone)]
pub struct Spec {
    pub triples: u64,
    pub seed: u64,
    pub relations: u64,
    /// Entities of the base graph (default: one per 8 triples).
    pub entities: u64,
    /// Fraction of triples replaced (0 for the base graph).
    pub change: f64,
}

impl Spec {
    pub fn new(triples: u64, seed: u64) -> Spec {
        Spec {
            triples,
            seed,
            relations: 1000,
            entities: (triples / 8).max(16),
            change: 0.0,
        }
    }

    /// Entities a changed graph may add (a tenth of the replaced triples
    /// start at a new entity).
    fn new_entities(&self) -> u64 {
        ((self.triples as f64 * self.change) / 10.0).ceil() as u64
    }

    fn total_entities(&self) -> u64 {
        self.entities + self.new_entities()
    }

    /// The id space names are made for: twice the base entities, so a
    /// changed graph's new entities get names and the old ones keep theirs.
    fn name_space(&self) -> u64 {
        self.entities * 2
    }
}

/// splitmix64: the stream of independent 64-bit values every choice draws from.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

struct Draws(u64);

impl Draws {
    fn next(&mut self) -> u64 {
        self.0 = mix(self.0);
        self.0
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// An odd multiplier coprime with `n`, so `rank * mult mod n` is a
/// bijection of `0..n` that scatters hubs over the id space.
fn scatter_multiplier(n: u64) -> u64 {
    let gcd = |mut a: u64, mut b: u64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let mut m = 2_654_435_761 % n.max(2);
    while gcd(m, n) != 1 {
        m += 1;
    }
    m
}

/// Power-law rank in `0..n`: `n * u^a` puts most of the mass on low ranks.
fn skewed(d: &mut Draws, n: u64, a: f64) -> u64 {
    ((n as f64 * d.unit().powf(a)) as u64).min(n - 1)
}

/// The name of entity `id`: syllables of `id` in base 48 after a bijective
/// scramble, split into two capitalized words ("Kavi Tenmuso").
pub fn entity_name(id: u64, space: u64) -> String {
    let mut digits = 1;
    let mut cap = 48u64;
    while cap < space {
        cap = cap.saturating_mul(48);
        digits += 1;
    }
    let digits = digits.max(3);
    let cap = 48u64.pow(digits);
    // 48^k = 3^k * 16^k: an odd multiplier not divisible by 3 permutes 0..cap.
    let x = ((u128::from(id) * 0x9E37_79B9_7F4A_7C13u128 + 12_345) % u128::from(cap)) as u64;
    let mut out = String::with_capacity(digits as usize * 3 + 1);
    let mut rest = x;
    let split = digits.div_ceil(2);
    for k in 0..digits {
        if k == split {
            out.push(' ');
        }
        let d = ((rest % 48) + k as u64 * 7) % 48;
        rest /= 48;
        let syl = SYLLABLES[d as usize];
        if k == 0 || k == split {
            let mut c = syl.chars();
            if let Some(first) = c.next() {
                out.extend(first.to_uppercase());
                out.push_str(c.as_str());
            }
        } else {
            out.push_str(syl);
        }
    }
    out
}

pub fn relation_name(r: u64) -> String {
    format!(
        "{}_{}{}",
        VERBS[(r % VERBS.len() as u64) as usize],
        SYLLABLES[(r / 48 % 48) as usize],
        SYLLABLES[(r % 48) as usize]
    )
}

/// The alias of entity `id`, for about one entity in five: the first
/// word's initial and the second word ("K. Tenmuso").
pub fn alias(id: u64, space: u64, seed: u64) -> Option<String> {
    if !mix(seed ^ 0xa11a5 ^ id.wrapping_mul(31)).is_multiple_of(5) {
        return None;
    }
    let name = entity_name(id, space);
    let (first, second) = name.split_once(' ')?;
    let initial = first.chars().next()?;
    Some(format!("{initial}. {second}"))
}

/// Triple `i` as (head, relation, tail) ids.
fn triple(spec: &Spec, i: u64, mult: u64) -> [u64; 3] {
    let n = spec.entities;
    let changed = spec.change > 0.0 && {
        let mut d = Draws(spec.seed ^ 0x00c4_a96e ^ i.wrapping_mul(0x2545_f491_4f6c_dd1d));
        d.unit() < spec.change
    };
    let stream = if changed {
        spec.seed ^ 0x5eed
    } else {
        spec.seed
    };
    let mut d = Draws(stream ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let rel = skewed(&mut d, spec.relations, 2.0);
    let head = if changed && d.unit() < 0.1 {
        n + d.next() % spec.new_entities().max(1)
    } else if d.unit() < 0.6 {
        d.next() % n
    } else {
        skewed(&mut d, n, 3.0) * mult % n
    };
    let tail = if d.unit() < 0.5 {
        d.next() % n
    } else {
        skewed(&mut d, n, 4.0) * mult % n
    };
    [head, rel, tail]
}

/// Writes the triples as TSV (`head<TAB>relation<TAB>tail`), made on all
/// cores and written in order; `progress` gets the triples written so far.
pub fn write_triples(
    spec: &Spec,
    out: &mut impl Write,
    mut progress: impl FnMut(u64),
) -> io::Result<()> {
    let mult = scatter_multiplier(spec.entities);
    let space = spec.name_space();
    let rel_names: Vec<String> = (0..spec.relations).map(relation_name).collect();
    let chunks = spec.triples.div_ceil(CHUNK);
    let batch = (rayon::current_num_threads() as u64 * 4).max(1);
    let mut first = 0;
    while first < chunks {
        let last = (first + batch).min(chunks);
        let bufs: Vec<Vec<u8>> = (first..last)
            .into_par_iter()
            .map(|c| {
                let mut buf = Vec::with_capacity(CHUNK as usize * 40);
                for i in c * CHUNK..((c + 1) * CHUNK).min(spec.triples) {
                    let [h, r, t] = triple(spec, i, mult);
                    buf.extend_from_slice(entity_name(h, space).as_bytes());
                    buf.push(b'\t');
                    buf.extend_from_slice(rel_names[r as usize].as_bytes());
                    buf.push(b'\t');
                    buf.extend_from_slice(entity_name(t, space).as_bytes());
                    buf.push(b'\n');
                }
                buf
            })
            .collect();
        for buf in bufs {
            out.write_all(&buf)?;
        }
        progress((last * CHUNK).min(spec.triples));
        first = last;
    }
    out.flush()
}

/// Writes the aliases as TSV (`entity<TAB>alias`).
pub fn write_aliases(spec: &Spec, out: &mut impl Write) -> io::Result<()> {
    let space = spec.name_space();
    let ids: Vec<u64> = (0..spec.total_entities()).collect();
    for chunk in ids.chunks(CHUNK as usize * 4) {
        let bufs: Vec<Vec<u8>> = chunk
            .par_chunks(CHUNK as usize / 4)
            .map(|part| {
                let mut buf = Vec::new();
                for &id in part {
                    if let Some(a) = alias(id, space, spec.seed) {
                        buf.extend_from_slice(entity_name(id, space).as_bytes());
                        buf.push(b'\t');
                        buf.extend_from_slice(a.as_bytes());
                        buf.push(b'\n');
                    }
                }
                buf
            })
            .collect();
        for buf in bufs {
            out.write_all(&buf)?;
        }
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};

    #[test]
    fn names_are_unique_and_word_like() {
        let names: HashSet<String> = (0..100_000).map(|i| entity_name(i, 100_000)).collect();
        assert_eq!(names.len(), 100_000);
        let one = entity_name(42, 100_000);
        assert!(one.contains(' ') && one.chars().next().is_some_and(char::is_uppercase));
        let rels: HashSet<String> = (0..1000).map(relation_name).collect();
        assert_eq!(rels.len(), 1000);
    }

    #[test]
    fn the_same_spec_gives_the_same_bytes() {
        let spec = Spec::new(200_000, 7);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        write_triples(&spec, &mut a, |_| {}).unwrap();
        write_triples(&spec, &mut b, |_| {}).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.iter().filter(|&&c| c == b'\n').count(), 200_000);
        let mut other = Vec::new();
        write_triples(&Spec::new(200_000, 8), &mut other, |_| {}).unwrap();
        assert_ne!(a, other);
    }

    #[test]
    fn degrees_follow_a_power_law_with_hubs() {
        let spec = Spec::new(400_000, 1);
        let mult = scatter_multiplier(spec.entities);
        let mut degree: HashMap<u64, u64> = HashMap::new();
        for i in 0..spec.triples {
            let [h, _, t] = triple(&spec, i, mult);
            *degree.entry(h).or_default() += 1;
            *degree.entry(t).or_default() += 1;
        }
        let mut d: Vec<u64> = degree.into_values().collect();
        d.sort_unstable_by(|a, b| b.cmp(a));
        let mean = 2.0 * spec.triples as f64 / spec.entities as f64;
        // The biggest hub has hundreds of times the mean degree; the median
        // entity is below the mean.
        assert!(
            d[0] as f64 > 200.0 * mean,
            "top degree {} mean {mean}",
            d[0]
        );
        assert!((d[d.len() / 2] as f64) < mean);
    }

    #[test]
    fn a_change_replaces_about_that_fraction_and_adds_entities() {
        let base = Spec::new(100_000, 3);
        let changed = Spec {
            change: 0.01,
            ..base.clone()
        };
        let (mb, mc) = (
            scatter_multiplier(base.entities),
            scatter_multiplier(changed.entities),
        );
        let differ = (0..base.triples)
            .filter(|&i| triple(&base, i, mb) != triple(&changed, i, mc))
            .count();
        assert!((800..1200).contains(&differ), "{differ} triples changed");
        let new_heads = (0..changed.triples)
            .filter(|&i| triple(&changed, i, mc)[0] >= base.entities)
            .count();
        assert!(new_heads > 50, "{new_heads} triples on new entities");
    }
}
