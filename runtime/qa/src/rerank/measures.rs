//! Measures of a small subgraph, taken as an undirected multigraph (every
//! triple one edge): the reranking seed's graph features.

use super::subgraph::Subgraph;

/// The graph features of one subgraph, for its node 0 (the candidate).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measures {
    pub nodes: f32,
    pub edges: f32,
    /// `m / (n (n - 1))`.
    pub density: f32,
    /// Independent cycles: `m - n + components`.
    pub cycles: f32,
    /// Edges whose removal disconnects their ends.
    pub bridges: f32,
    /// The candidate's Katz centrality (the vector L2-normalized).
    pub katz: f32,
    /// The candidate's PageRank (damping 0.85).
    pub pagerank: f32,
}

const ITERATIONS: usize = 50;

fn adjacency(g: &Subgraph) -> Vec<Vec<(usize, usize)>> {
    let mut adj = vec![Vec::new(); g.nodes.len()];
    for (e, &(h, _, t)) in g.triples.iter().enumerate() {
        if h == t {
            continue;
        }
        if let Some(a) = adj.get_mut(h) {
            a.push((t, e));
        }
        if let Some(a) = adj.get_mut(t) {
            a.push((h, e));
        }
    }
    adj
}

fn components(adj: &[Vec<(usize, usize)>]) -> usize {
    let mut seen = vec![false; adj.len()];
    let mut count = 0;
    for start in 0..adj.len() {
        if seen[start] {
            continue;
        }
        count += 1;
        seen[start] = true;
        let mut stack = vec![start];
        while let Some(u) = stack.pop() {
            for &(v, _) in &adj[u] {
                if !seen[v] {
                    seen[v] = true;
                    stack.push(v);
                }
            }
        }
    }
    count
}

/// Bridges by Tarjan's low-link, iteratively; parallel edges are never bridges.
fn bridges(adj: &[Vec<(usize, usize)>]) -> usize {
    let n = adj.len();
    let mut order = vec![usize::MAX; n];
    let mut low = vec![0usize; n];
    let mut clock = 0;
    let mut count = 0;
    for root in 0..n {
        if order[root] != usize::MAX {
            continue;
        }
        // (node, edge id it was entered by, next neighbour index)
        let mut stack: Vec<(usize, usize, usize)> = vec![(root, usize::MAX, 0)];
        order[root] = clock;
        low[root] = clock;
        clock += 1;
        while let Some(&mut (u, via, ref mut next)) = stack.last_mut() {
            if let Some(&(v, e)) = adj[u].get(*next) {
                *next += 1;
                if e == via {
                    continue;
                }
                if order[v] == usize::MAX {
                    order[v] = clock;
                    low[v] = clock;
                    clock += 1;
                    stack.push((v, e, 0));
                } else {
                    low[u] = low[u].min(order[v]);
                }
            } else {
                stack.pop();
                if let Some(&(parent, _, _)) = stack.last() {
                    low[parent] = low[parent].min(low[u]);
                    if low[u] > order[parent] {
                        count += 1;
                    }
                }
            }
        }
    }
    count
}

fn katz(adj: &[Vec<(usize, usize)>]) -> Vec<f64> {
    let n = adj.len();
    let max_degree = adj.iter().map(Vec::len).max().unwrap_or(0).max(1);
    // The largest eigenvalue is at most the largest degree.
    let alpha = 0.9 / max_degree as f64;
    let mut x = vec![1.0f64; n];
    for _ in 0..ITERATIONS {
        let next: Vec<f64> = adj
            .iter()
            .map(|a| 1.0 + alpha * a.iter().map(|&(v, _)| x[v]).sum::<f64>())
            .collect();
        x = next;
    }
    let norm = x.iter().map(|v| v * v).sum::<f64>().sqrt();
    if norm > 0.0 {
        x.iter_mut().for_each(|v| *v /= norm);
    }
    x
}

fn pagerank(adj: &[Vec<(usize, usize)>]) -> Vec<f64> {
    let n = adj.len();
    if n == 0 {
        return Vec::new();
    }
    let d = 0.85;
    let base = (1.0 - d) / n as f64;
    let mut x = vec![1.0 / n as f64; n];
    for _ in 0..ITERATIONS {
        // Dangling nodes spread their rank evenly.
        let dangling: f64 = adj
            .iter()
            .zip(&x)
            .filter(|(a, _)| a.is_empty())
            .map(|(_, v)| v)
            .sum();
        let mut next = vec![base + d * dangling / n as f64; n];
        for (u, a) in adj.iter().enumerate() {
            if a.is_empty() {
                continue;
            }
            let share = d * x[u] / a.len() as f64;
            for &(v, _) in a {
                next[v] += share;
            }
        }
        x = next;
    }
    x
}

impl Measures {
    pub fn of(g: &Subgraph) -> Measures {
        let n = g.nodes.len();
        let m = g.triples.len();
        let adj = adjacency(g);
        let comps = components(&adj);
        let density = if n > 1 {
            m as f64 / (n as f64 * (n as f64 - 1.0))
        } else {
            0.0
        };
        Measures {
            nodes: n as f32,
            edges: m as f32,
            density: density as f32,
            cycles: ((m + comps) as f64 - n as f64).max(0.0) as f32,
            bridges: bridges(&adj) as f32,
            katz: katz(&adj).first().copied().unwrap_or(0.0) as f32,
            pagerank: pagerank(&adj).first().copied().unwrap_or(0.0) as f32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(n: usize, edges: &[(usize, usize)]) -> Subgraph {
        Subgraph {
            nodes: (0..n as u32).collect(),
            triples: edges.iter().map(|&(h, t)| (h, 0, t)).collect(),
            ..Subgraph::default()
        }
    }

    #[test]
    fn a_path_is_all_bridges_and_no_cycles() {
        let m = Measures::of(&sub(4, &[(0, 1), (1, 2), (2, 3)]));
        assert_eq!(
            (m.nodes, m.edges, m.cycles, m.bridges),
            (4.0, 3.0, 0.0, 3.0)
        );
        assert!((m.density - 0.25).abs() < 1e-6);
    }

    #[test]
    fn a_square_with_a_tail() {
        // 0-1-2-3-0 and 3-4: one cycle, one bridge.
        let m = Measures::of(&sub(5, &[(0, 1), (1, 2), (2, 3), (3, 0), (3, 4)]));
        assert_eq!((m.cycles, m.bridges), (1.0, 1.0));
        // Parallel edges make a cycle and are not bridges.
        let m = Measures::of(&sub(2, &[(0, 1), (1, 0)]));
        assert_eq!((m.cycles, m.bridges), (1.0, 0.0));
    }

    #[test]
    fn centre_of_a_star_ranks_highest() {
        // Node 0 is the centre of a star with four leaves.
        let star = sub(5, &[(0, 1), (0, 2), (0, 3), (0, 4)]);
        let adj = adjacency(&star);
        let pr = pagerank(&adj);
        assert!((pr.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        assert!(pr[0] > 2.0 * pr[1], "{pr:?}");
        let k = katz(&adj);
        assert!(k[0] > k[1]);
        assert!((k.iter().map(|v| v * v).sum::<f64>() - 1.0).abs() < 1e-9);
        // A lone node.
        let m = Measures::of(&sub(1, &[]));
        assert_eq!(
            (m.nodes, m.edges, m.density, m.pagerank),
            (1.0, 0.0, 0.0, 1.0)
        );
    }
}
