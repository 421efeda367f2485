//! SEPPR, subgraph extraction and the relation graph on the demo bundle.
#![allow(clippy::unwrap_used)]

use kgbox_bundle::{Kg, Limits, OwnedImage, PublicKey, TrustedKeys};
use kgbox_neural::relgraph;
use kgbox_neural::seppr::{top_nodes, top_nodes_many, SepprParams};
use kgbox_neural::subgraph::Subgraph;

const DEMO: &[u8] = include_bytes!("../../../demo/demo.kgb");
const DEMO_KEY: &str = include_str!("../../../demo/DEMO-ONLY.pub");

fn demo() -> OwnedImage {
    let keys = TrustedKeys::new(vec![PublicKey::parse(DEMO_KEY).unwrap()]);
    OwnedImage::from_bundle_bytes(DEMO, &keys, &Limits::default()).unwrap()
}

fn neighbours(kg: &Kg<'_>, v: u32) -> Vec<u32> {
    let mut n: Vec<u32> = kg
        .out
        .edges(v)
        .1
        .iter()
        .chain(kg.inc.edges(v).1)
        .copied()
        .collect();
    n.sort_unstable();
    n.dedup();
    n
}

#[test]
fn seppr_keeps_seeds_and_their_neighbourhood_first() {
    let img = demo();
    let kg = img.kg().unwrap();
    let seed = kg.entity_id("Blade Runner").unwrap();
    let near = neighbours(&kg, seed);
    let k = near.len() + 1;
    let params = SepprParams {
        k,
        ..SepprParams::default()
    };
    let nodes = top_nodes(&kg, &[(seed, 1.0)], &params);
    assert_eq!(nodes.len(), k);
    assert!(nodes.windows(2).all(|w| w[0] < w[1]), "sorted, unique");
    assert!(nodes.contains(&seed));
    // With room for exactly the seed and its neighbours, those are the ones kept:
    // direct neighbours hold far more mass than anything two hops away.
    let mut want = near.clone();
    want.push(seed);
    want.sort_unstable();
    assert_eq!(nodes, want);
    // Deterministic.
    assert_eq!(top_nodes(&kg, &[(seed, 1.0)], &params), nodes);

    // Fuzzy seeds: a low-weight seed is kept even when k is tiny.
    let other = kg.entity_id("Malcolm X").unwrap();
    let tiny = SepprParams {
        k: 1,
        ..SepprParams::default()
    };
    let nodes = top_nodes(&kg, &[(seed, 1.0), (other, 0.01)], &tiny);
    assert!(nodes.contains(&seed) && nodes.contains(&other), "{nodes:?}");
    // No seeds, no nodes.
    assert!(top_nodes(&kg, &[], &params).is_empty());
    assert!(top_nodes(&kg, &[(seed, 0.0)], &params).is_empty());
}

/// SEPPR written out over dense vectors, in f64: the definition the
/// direction-optimizing implementation must agree with.
fn reference_masses(kg: &Kg<'_>, seeds: &[(u32, f32)], p: &SepprParams) -> Vec<f64> {
    let n = kg.entity_count();
    let total: f64 = seeds.iter().map(|s| f64::from(s.1)).sum();
    let mut x0 = vec![0f64; n];
    for &(v, w) in seeds {
        x0[v as usize] += f64::from(w) / total;
    }
    let mut x = x0.clone();
    for _ in 0..p.iterations {
        let mut next = vec![0f64; n];
        for u in 0..n as u32 {
            let (_, outs) = kg.out.edges(u);
            let (_, ins) = kg.inc.edges(u);
            let d = outs.len() + ins.len();
            if d == 0 {
                continue;
            }
            for &v in outs.iter().chain(ins) {
                next[v as usize] += x[u as usize] / d as f64;
            }
        }
        for v in 0..n {
            x[v] = f64::from(p.alpha) * next[v] + (1.0 - f64::from(p.alpha)) * x0[v];
        }
    }
    x
}

#[test]
fn seppr_agrees_with_the_dense_definition() {
    let img = demo();
    let kg = img.kg().unwrap();
    let seeds = [
        vec![(kg.entity_id("Blade Runner").unwrap(), 1.0)],
        vec![
            (kg.entity_id("Malcolm X").unwrap(), 0.7),
            (kg.entity_id("Blade Runner").unwrap(), 0.2),
        ],
    ];
    for s in &seeds {
        for k in [5, 20, 60] {
            // The iteration count decides whether the mass spreads far enough
            // to switch to the dense (pull) step.
            for iterations in [1, 2, 5] {
                let p = SepprParams {
                    k,
                    iterations,
                    ..SepprParams::default()
                };
                let got = top_nodes(&kg, s, &p);
                let mass = reference_masses(&kg, s, &p);
                // Every kept non-seed node has at least the mass of every
                // dropped node (up to f32 rounding).
                let kept_min = got
                    .iter()
                    .filter(|v| !s.iter().any(|x| x.0 == **v))
                    .map(|&v| mass[v as usize])
                    .fold(f64::INFINITY, f64::min);
                let dropped_max = (0..kg.entity_count() as u32)
                    .filter(|v| !got.contains(v))
                    .map(|v| mass[v as usize])
                    .fold(0.0, f64::max);
                assert!(
                    kept_min + 1e-6 >= dropped_max,
                    "k {k}, T {iterations}: kept {kept_min} < dropped {dropped_max}"
                );
                let reached = mass.iter().filter(|m| **m > 0.0).count();
                assert_eq!(
                    got.len(),
                    k.min(reached).max(s.len()),
                    "k {k}, T {iterations}"
                );
            }
        }
    }
}

#[test]
fn seppr_of_many_seed_sets_at_once_equals_one_by_one() {
    let img = demo();
    let kg = img.kg().unwrap();
    let id = |name: &str| kg.entity_id(name).unwrap();
    let seeds: Vec<Vec<(u32, f32)>> = vec![
        vec![(id("Blade Runner"), 1.0)],
        vec![(id("Malcolm X"), 0.7), (id("Blade Runner"), 0.2)],
        vec![(id("Ridley Scott"), 0.5)],
        vec![(id("Malcolm X"), 1.0)],
        vec![(id("Blade Runner"), 0.0)],
        vec![
            (id("Spike Lee"), 0.9),
            (id("Harrison Ford"), 0.3),
            (id("Malcolm X"), 0.1),
        ],
    ];
    for iterations in [1, 5] {
        let sets: Vec<(&[(u32, f32)], SepprParams)> = seeds
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let p = SepprParams {
                    k: 3 + 7 * i,
                    iterations,
                    ..SepprParams::default()
                };
                (s.as_slice(), p)
            })
            .collect();
        let together = top_nodes_many(&kg, &sets);
        for (i, (s, p)) in sets.iter().enumerate() {
            assert_eq!(together[i], top_nodes(&kg, s, p), "set {i}, T {iterations}");
        }
    }
}

#[test]
fn subgraph_edges_come_in_both_directions() {
    let img = demo();
    let kg = img.kg().unwrap();
    let full = Subgraph::full(&kg);
    assert_eq!(full.edge_count(), 2 * kg.triple_count());
    let r = kg.relation_count() as i64;
    let e = kg.triple_count();
    for i in 0..e {
        // Direct edge i: message from the tail into the head, type r;
        // its inverse: from the head into the tail, type r + R.
        assert_eq!(full.src[i], full.dst[e + i]);
        assert_eq!(full.dst[i], full.src[e + i]);
        assert_eq!(full.kind[i] + r, full.kind[e + i]);
        assert!(full.kind[i] < r);
    }
    // Induced: only edges with both ends inside, in local ids.
    let seed = kg.entity_id("Blade Runner").unwrap();
    let mut nodes = neighbours(&kg, seed);
    nodes.push(seed);
    nodes.sort_unstable();
    let g = Subgraph::induced(&kg, nodes.clone());
    assert_eq!(g.nodes, nodes);
    let n = nodes.len() as i64;
    assert!(g.src.iter().chain(&g.dst).all(|&x| x >= 0 && x < n));
    // Every fact of the seed is inside (its neighbours are all kept).
    let facts = kg.out.degree(seed) + kg.inc.degree(seed);
    assert!(g.edge_count() >= 2 * facts);
}

#[test]
fn relation_graph_from_the_bundle_matches_the_one_from_facts() {
    let img = demo();
    let kg = img.kg().unwrap();
    let mut facts = Vec::new();
    for h in 0..kg.entity_count() as u32 {
        let (rels, tails) = kg.out.edges(h);
        for (&r, &t) in rels.iter().zip(tails) {
            facts.push([h, r, t]);
        }
    }
    let a = relgraph::build(&kg);
    let b = relgraph::build_from_facts(kg.entity_count(), kg.relation_count(), &facts);
    assert_eq!(a, b);
    let nr = 2 * kg.relation_count() as u32;
    // Every relation type has a head-head self loop (it has heads), and
    // edge types are 0..4.
    for x in 0..nr {
        assert!(a.contains(&[x, x, 0]), "no self loop for {x}");
    }
    assert!(a.iter().all(|e| e[2] < 4 && e[0] < nr && e[1] < nr));
    assert_eq!(relgraph::encode(&a).len(), a.len() * 12);
}
