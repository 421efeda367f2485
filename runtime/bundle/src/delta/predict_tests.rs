//! The transforms and predictions on small graphs where entities,
//! relations, triples and aliases are added and removed.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;

use super::*;
use crate::delta::format::Transform;
use crate::delta::transform::{applies, offsets_diff, offsets_undiff, Context};

/// A graph's KG sections (no index), laid out as the packager does.
fn sections(triples: &[(&str, &str, &str)], aliases: &[(&str, &str)]) -> HashMap<String, Vec<u8>> {
    let mut names: Vec<&str> = triples.iter().flat_map(|t| [t.0, t.2]).collect();
    names.sort_unstable();
    names.dedup();
    let mut rels: Vec<&str> = triples.iter().map(|t| t.1).collect();
    rels.sort_unstable();
    rels.dedup();
    let id = |list: &[&str], x: &str| list.binary_search(&x).unwrap() as u32;
    let table = |strings: &[&str]| {
        let mut offsets = vec![0u64];
        let mut bytes = Vec::new();
        for x in strings {
            bytes.extend_from_slice(x.as_bytes());
            offsets.push(bytes.len() as u64);
        }
        (u64_bytes(&offsets), bytes)
    };
    let csr = |mut edges: Vec<(u32, u32, u32)>| {
        edges.sort_unstable();
        edges.dedup();
        let mut offsets = vec![0u64; names.len() + 1];
        for e in &edges {
            offsets[e.0 as usize + 1] += 1;
        }
        for i in 0..names.len() {
            offsets[i + 1] += offsets[i];
        }
        let r: Vec<u32> = edges.iter().map(|e| e.1).collect();
        let o: Vec<u32> = edges.iter().map(|e| e.2).collect();
        (u64_bytes(&offsets), u32_bytes(&r), u32_bytes(&o))
    };
    let ids: Vec<(u32, u32, u32)> = triples
        .iter()
        .map(|t| (id(&names, t.0), id(&rels, t.1), id(&names, t.2)))
        .collect();
    let mut out = HashMap::new();
    let mut put = |n: &str, b: Vec<u8>| {
        out.insert(n.to_string(), b);
    };
    let (o, b) = table(&names);
    put(s::ENTITY_OFFSETS, o);
    put(s::ENTITY_NAMES, b);
    let (o, b) = table(&rels);
    put(s::RELATION_OFFSETS, o);
    put(s::RELATION_NAMES, b);
    let (o, r, t) = csr(ids.clone());
    put(s::OUT_OFFSETS, o);
    put(s::OUT_RELATIONS, r);
    put(s::OUT_TARGETS, t);
    let (o, r, t) = csr(ids.iter().map(|&(h, r, t)| (t, r, h)).collect());
    put(s::IN_OFFSETS, o);
    put(s::IN_RELATIONS, r);
    put(s::IN_SOURCES, t);
    let mut al: Vec<(u32, &str)> = aliases.iter().map(|a| (id(&names, a.0), a.1)).collect();
    al.sort_unstable();
    let mut owners = vec![0u64; names.len() + 1];
    for a in &al {
        owners[a.0 as usize + 1] += 1;
    }
    for i in 0..names.len() {
        owners[i + 1] += owners[i];
    }
    let (o, b) = table(&al.iter().map(|a| a.1).collect::<Vec<_>>());
    put(s::ALIAS_OWNERS, u64_bytes(&owners));
    put(s::ALIAS_OFFSETS, o);
    put(s::ALIAS_NAMES, b);
    // One text per relation, and one 2-byte row per entity.
    let desc: Vec<String> = rels.iter().map(|r| format!("about {r}")).collect();
    let (o, b) = table(&desc.iter().map(String::as_str).collect::<Vec<_>>());
    put(s::RELATION_DESC_OFFSETS, o);
    put(s::RELATION_DESC_TEXT, b);
    let said: Vec<String> = rels
        .iter()
        .map(|r| format!("{r} word\nsaid of {r}"))
        .collect();
    let (o, b) = table(&said.iter().map(String::as_str).collect::<Vec<_>>());
    put(s::RELATION_ALIAS_OFFSETS, o);
    put(s::RELATION_ALIAS_TEXT, b);
    put(
        s::DENSE_VECTORS,
        names
            .iter()
            .flat_map(|n| [n.len() as u8, n.as_bytes()[0]])
            .collect(),
    );
    #[cfg(feature = "write")]
    {
        let pairs: Vec<(u32, &str)> = al.clone();
        let (fst, postings) = crate::kg::encode::lexical_index(&names, &pairs).unwrap();
        put(s::INDEX_FST, fst);
        put(s::INDEX_POSTINGS, postings);
    }
    out
}

const OLD: &[(&str, &str, &str)] = &[
    ("Alien", "directed_by", "Ridley Scott"),
    ("Alien", "release_year", "1979"),
    ("Blade Runner", "directed_by", "Ridley Scott"),
    ("Blade Runner", "starred_actors", "Harrison Ford"),
    ("Blade Runner", "starred_actors", "Rutger Hauer"),
    ("Ladyhawke", "starred_actors", "Rutger Hauer"),
    ("Witness", "starred_actors", "Harrison Ford"),
    ("Witness", "written_by", "Earl Wallace"),
];

/// Ladyhawke, Rutger Hauer and `written_by` go; Dune, Denis Villeneuve,
/// Zelig and `genre` come; some triples between kept entities change.
const NEW: &[(&str, &str, &str)] = &[
    ("Alien", "directed_by", "Ridley Scott"),
    ("Alien", "genre", "Horror"),
    ("Alien", "release_year", "1979"),
    ("Blade Runner", "directed_by", "Ridley Scott"),
    ("Blade Runner", "starred_actors", "Harrison Ford"),
    ("Dune", "directed_by", "Denis Villeneuve"),
    ("Witness", "starred_actors", "Harrison Ford"),
    ("Witness", "release_year", "1979"),
    ("Zelig", "genre", "Comedy"),
];

const OLD_ALIASES: &[(&str, &str)] = &[
    ("Blade Runner", "Bladerunner"),
    ("Harrison Ford", "Harry"),
    ("Ladyhawke", "Lady Hawke"),
];
const NEW_ALIASES: &[(&str, &str)] = &[
    ("Blade Runner", "Bladerunner"),
    ("Dune", "Dune Part One"),
    ("Harrison Ford", "Indy"),
    // Normalizes to the entity's own key: the name's posting wins.
    ("Alien", "ALIEN"),
];

/// Every transform that applies to a section makes it back exactly.
#[test]
fn every_transform_round_trips() {
    let old = sections(OLD, OLD_ALIASES);
    let new = sections(NEW, NEW_ALIASES);
    let base = |n: &str| old.get(n).map(Vec::as_slice);
    let mut ctx = Context::new(&base, u64::MAX);
    for (k, name) in Context::EARLY.iter().enumerate() {
        if k == Context::NAME_TABLES {
            ctx.enable_maps().unwrap();
        }
        ctx.add_new(name, new[*name].clone());
    }
    let mut tried = 0;
    for (name, raw) in &new {
        for t in [
            Transform::Raw,
            Transform::Predict,
            Transform::Lengths,
            Transform::OffsetsDiff,
        ] {
            if !applies(t, name) {
                assert!(ctx.encode(t, name, raw).is_err(), "{name} {t:?}");
                continue;
            }
            let x = ctx.encode(t, name, raw).unwrap().into_owned();
            assert_eq!(x.len(), raw.len(), "{name} {t:?}: the length is kept");
            ctx.reference(t, name).unwrap();
            assert_eq!(&ctx.finish(t, name, x).unwrap(), raw, "{name} {t:?}");
            tried += 1;
        }
    }
    assert!(tried > 30, "{tried}");
}

#[test]
fn the_maps_pair_kept_names() {
    let old = sections(OLD, OLD_ALIASES);
    let new = sections(NEW, NEW_ALIASES);
    let m = maps(&|n: &str| old.get(n).map(Vec::as_slice), &|n: &str| {
        new.get(n).map(Vec::as_slice)
    })
    .unwrap();
    // Old: 1979 Alien Blade Runner Earl Wallace Harrison Ford Ladyhawke
    //      Ridley Scott Rutger Hauer Witness.
    // New: 1979 Alien Blade Runner Comedy Denis Villeneuve Dune Harrison Ford
    //      Horror Ridley Scott Witness Zelig.
    assert_eq!(
        m.entities.old_to_new,
        vec![0, 1, 2, GONE, 6, GONE, 8, GONE, 9]
    );
    // directed_by release_year starred_actors written_by
    // -> directed_by genre release_year starred_actors
    assert_eq!(m.relations.old_to_new, vec![0, 2, 3, GONE]);
}

/// Removing entities and triples only: the predictions are the new sections.
#[test]
fn removals_alone_are_predicted_exactly() {
    let old = sections(OLD, OLD_ALIASES);
    let kept: Vec<_> = OLD.iter().filter(|t| t.0 != "Ladyhawke").copied().collect();
    let kept_aliases: Vec<_> = OLD_ALIASES
        .iter()
        .filter(|a| a.0 != "Ladyhawke")
        .copied()
        .collect();
    let new = sections(&kept, &kept_aliases);
    let base = |n: &str| old.get(n).map(Vec::as_slice);
    let mut ctx = Context::new(&base, u64::MAX);
    for (k, name) in Context::EARLY.iter().enumerate() {
        if k == Context::NAME_TABLES {
            ctx.enable_maps().unwrap();
        }
        ctx.add_new(name, new[*name].clone());
    }
    for (name, raw) in &new {
        if applies(Transform::Predict, name) {
            let predicted = ctx.reference(Transform::Predict, name).unwrap();
            assert_eq!(&*predicted, raw.as_slice(), "{name}");
        }
    }
}

/// The index predicted from the base and the new tables is the one the
/// packager builds, byte for byte, with entities and aliases added and
/// removed.
#[cfg(feature = "write")]
#[test]
fn the_index_is_predicted_exactly() {
    let old = sections(OLD, OLD_ALIASES);
    let new = sections(NEW, NEW_ALIASES);
    let base = |n: &str| old.get(n).map(Vec::as_slice);
    let mut ctx = Context::new(&base, u64::MAX);
    for (k, name) in Context::EARLY.iter().enumerate() {
        if k == Context::NAME_TABLES {
            ctx.enable_maps().unwrap();
        }
        ctx.add_new(name, new[*name].clone());
    }
    for name in [s::INDEX_FST, s::INDEX_POSTINGS] {
        let predicted = ctx.reference(Transform::Predict, name).unwrap();
        assert_eq!(&*predicted, new[name].as_slice(), "{name}");
    }
}

/// A prediction depends on the base and the new tables only, not on what
/// was computed or released before (the device releases each section's
/// prediction once made; the packager tries every transform).
#[cfg(feature = "write")]
#[test]
fn predictions_do_not_depend_on_what_came_before() {
    let old = sections(OLD, OLD_ALIASES);
    let new = sections(NEW, NEW_ALIASES);
    let base = |n: &str| old.get(n).map(Vec::as_slice);
    let context = || {
        let mut ctx = Context::new(&base, u64::MAX);
        for (k, name) in Context::EARLY.iter().enumerate() {
            if k == Context::NAME_TABLES {
                ctx.enable_maps().unwrap();
            }
            ctx.add_new(name, new[*name].clone());
        }
        ctx
    };
    let mut fresh = context();
    let expected = fresh
        .reference(Transform::Predict, s::INDEX_FST)
        .unwrap()
        .into_owned();
    let mut used = context();
    used.reference(Transform::Predict, s::ALIAS_OFFSETS)
        .unwrap();
    used.release(s::ALIAS_OFFSETS);
    let got = used.reference(Transform::Predict, s::INDEX_FST).unwrap();
    assert_eq!(&*got, expected.as_slice());
}

#[test]
fn offsets_diff_is_mostly_zeros_and_wraps() {
    let new = u64_bytes(&[0, 3, 3, 7, 7]);
    let predicted = u64_bytes(&[0, 3, 3, 6, 6]);
    let d = offsets_diff("x", &new, &predicted).unwrap();
    assert_eq!(&*u64s("x", &d).unwrap(), &[0, 0, 0, 1, 0]);
    assert_eq!(offsets_undiff("x", &d, &predicted).unwrap(), new);
    // Shrinking rows wrap around and back.
    let fewer = u64_bytes(&[0, 1, 1, 1, 1]);
    let d = offsets_diff("x", &fewer, &predicted).unwrap();
    assert_eq!(offsets_undiff("x", &d, &predicted).unwrap(), fewer);
    // A prediction shorter than the section counts zeros past its end.
    let d = offsets_diff("x", &new, &u64_bytes(&[0])).unwrap();
    assert_eq!(offsets_undiff("x", &d, &u64_bytes(&[0])).unwrap(), new);
    assert!(offsets_diff("x", &[1, 2, 3], &predicted).is_err());
}

/// A base that does not match its own tables is an error, not a panic.
#[test]
fn a_damaged_base_is_an_error() {
    let mut old = sections(OLD, OLD_ALIASES);
    let new = sections(NEW, NEW_ALIASES);
    old.insert(s::OUT_OFFSETS.into(), u64_bytes(&[0, 99, 1]));
    old.insert(s::ALIAS_OWNERS.into(), u64_bytes(&[5; 10]));
    old.insert(s::INDEX_FST.into(), vec![7; 40]);
    old.insert(s::DENSE_VECTORS.into(), vec![1; 7]);
    let base = |n: &str| old.get(n).map(Vec::as_slice);
    let mut ctx = Context::new(&base, u64::MAX);
    for (k, name) in Context::EARLY.iter().enumerate() {
        if k == Context::NAME_TABLES {
            ctx.enable_maps().unwrap();
        }
        ctx.add_new(name, new[*name].clone());
    }
    for name in [
        s::OUT_TARGETS,
        s::ALIAS_NAMES,
        s::INDEX_POSTINGS,
        s::DENSE_VECTORS,
    ] {
        assert!(ctx.reference(Transform::Predict, name).is_err(), "{name}");
    }
    // A prediction over the size limit is refused.
    let base = |n: &str| old.get(n).map(Vec::as_slice);
    let mut small = Context::new(&base, 4);
    for (k, name) in Context::EARLY.iter().enumerate() {
        if k == Context::NAME_TABLES {
            small.enable_maps().unwrap();
        }
        small.add_new(name, new[*name].clone());
    }
    assert!(small.reference(Transform::Predict, s::IN_SOURCES).is_err());
}
