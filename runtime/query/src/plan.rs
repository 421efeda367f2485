//! A bound query: names resolved to ids, nodes in a flat arena (children
//! before parents), so the executor can keep one fuzzy set per node.

/// One node of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// One entity with membership 1.
    Anchor {
        entity: u32,
    },
    /// Entities reached from `input` over `relation`; with `inverse`, edges
    /// are followed from tail to head.
    Project {
        input: usize,
        relation: u32,
        inverse: bool,
    },
    And(Vec<usize>),
    Or(Vec<usize>),
    /// Complement; only as an operand of `And`.
    Not(usize),
}

/// Nodes in evaluation order; the last one is the root.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    pub nodes: Vec<Node>,
}

impl Plan {
    pub fn root(&self) -> usize {
        self.nodes.len().saturating_sub(1)
    }

    pub(crate) fn push(&mut self, node: Node) -> usize {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    /// Anchor entities below (and including) `node`, sorted.
    pub fn anchors(&self, node: usize) -> Vec<u32> {
        let mut out = Vec::new();
        let mut stack = vec![node];
        while let Some(n) = stack.pop() {
            match self.nodes.get(n) {
                Some(Node::Anchor { entity }) => out.push(*entity),
                Some(Node::Project { input, .. }) | Some(Node::Not(input)) => stack.push(*input),
                Some(Node::And(ops)) | Some(Node::Or(ops)) => stack.extend(ops),
                None => {}
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}
