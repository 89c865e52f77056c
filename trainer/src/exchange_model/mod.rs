//! What the gradient exchange would cost at scales one machine cannot
//! run: the alpha-beta-gamma model of collective operations (Hockney,
//! Parallel Computing 20(3), 1994; Thakur, Rabenseifner & Gropp, IJHPCA
//! 19(1), 2005, Sec. 2 and 4) applied to the ring algorithms that both
//! exchanges use (`cluster::allreduce`; Patarasuk & Yuan, JPDC 69(2),
//! 2009, for the ring's bandwidth optimality).
//!
//! A message of `b` bytes over a link costs `α + b·β`; summing `b` bytes
//! into a buffer costs `b·γ`. Ranks are placed by node (ranks 0..l on node
//! 0, ...), so a ring over all ranks crosses between nodes once per node.
//!
//! - Flat: one ring allreduce over all `p = N·l` ranks: `2(p−1)` steps of
//!   `n/p` bytes each, every step as slow as its slowest link (the ring
//!   has links within nodes and, with more than one node, between them):
//!   `2(p−1)·(α + (n/p)·β) + ((p−1)/p)·n·γ`.
//! - Hierarchical (Kurth et al., SC18, Sec. V-A3): a ring reduce-scatter
//!   inside each node (`(l−1)` steps of `n/l` bytes), then `l` ring
//!   allreduces of `n/l` bytes among the `N` nodes running at once, which
//!   share each node's link (each stream sees `l·β`), then a ring
//!   all-gather inside the node. The bytes leaving a node are those of
//!   the flat ring; what it saves is latency, `2(p−1)` inter-node steps
//!   against `2(N−1)`.

pub mod measure;

use serde::Serialize;

/// A link's cost: latency and the inverse of bandwidth.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Link {
    /// Seconds per message (α).
    pub latency: f64,
    /// Seconds per byte (β).
    pub secs_per_byte: f64,
}

impl Link {
    /// A link of `latency` seconds and `bytes_per_sec` bandwidth.
    pub fn new(latency: f64, bytes_per_sec: f64) -> Self {
        Link { latency, secs_per_byte: 1.0 / bytes_per_sec }
    }

    fn message(&self, bytes: f64) -> f64 {
        self.latency + bytes * self.secs_per_byte
    }
}

/// The machine the model predicts for.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Machine {
    /// Nodes (N).
    pub nodes: usize,
    /// Ranks per node (l).
    pub ranks_per_node: usize,
    /// Between two ranks of a node.
    pub intra: Link,
    /// Between two nodes (one node's injection bandwidth).
    pub inter: Link,
    /// Seconds per byte of summing into a buffer (γ).
    pub reduce_secs_per_byte: f64,
}

/// Predicted seconds of one exchange of the same buffer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Prediction {
    /// Nodes.
    pub nodes: usize,
    /// Ranks.
    pub ranks: usize,
    /// One ring over all ranks.
    pub flat_secs: f64,
    /// Inside the node, between nodes, inside the node.
    pub hierarchical_secs: f64,
}

impl Machine {
    /// A ring allreduce of `bytes` over `ranks` ranks whose slowest
    /// links are `links`.
    fn ring_allreduce(&self, ranks: usize, bytes: f64, links: &[Link]) -> f64 {
        if ranks <= 1 {
            return 0.0;
        }
        let p = ranks as f64;
        let step = links.iter().map(|l| l.message(bytes / p)).fold(0.0, f64::max);
        2.0 * (p - 1.0) * step + (p - 1.0) / p * bytes * self.reduce_secs_per_byte
    }

    /// Predicted seconds to sum a buffer of `bytes` over every rank.
    pub fn predict(&self, bytes: f64) -> Prediction {
        let (n, l) = (self.nodes.max(1), self.ranks_per_node.max(1));
        let ranks = n * l;
        // A ring over several nodes has both kinds of link.
        let links = if n > 1 { vec![self.intra, self.inter] } else { vec![self.intra] };
        let flat = self.ring_allreduce(ranks, bytes, &links);
        let hierarchical = if n == 1 || l == 1 {
            flat
        } else {
            let lf = l as f64;
            let part = bytes / lf;
            // Reduce-scatter and all-gather: l−1 steps of n/l bytes each;
            // the reduce-scatter sums as it goes.
            let in_node = (lf - 1.0) * self.intra.message(part);
            let in_node_sums = (lf - 1.0) / lf * bytes * self.reduce_secs_per_byte;
            let shared = Link { latency: self.inter.latency, secs_per_byte: self.inter.secs_per_byte * lf };
            2.0 * in_node + in_node_sums + self.ring_allreduce(n, part, &[shared])
        };
        Prediction { nodes: n, ranks, flat_secs: flat, hierarchical_secs: hierarchical }
    }
}

/// The node counts a table shows: powers of two below `nodes`, then `nodes`.
pub fn scales(nodes: usize) -> Vec<usize> {
    let mut scales: Vec<usize> =
        std::iter::successors(Some(1usize), |n| n.checked_mul(2)).take_while(|&n| n < nodes).collect();
    scales.push(nodes.max(1));
    scales
}

/// The predictions for `bytes` at each of `scales(machine.nodes)`, as a
/// table with the figures it was fed first.
pub fn table(machine: &Machine, bytes: f64, what: &str) -> String {
    let mut out = format!(
        "exchange of {:.1} MB ({what}), {} ranks per node\n\
         within a node: {:.2} µs, {:.2} GB/s; between nodes: {:.2} µs, {:.2} GB/s; summing {:.2} GB/s\n\
         {:>6} {:>7} {:>12} {:>14} {:>10}\n",
        bytes / 1e6,
        machine.ranks_per_node,
        machine.intra.latency * 1e6,
        1e-9 / machine.intra.secs_per_byte,
        machine.inter.latency * 1e6,
        1e-9 / machine.inter.secs_per_byte,
        1e-9 / machine.reduce_secs_per_byte,
        "nodes",
        "ranks",
        "flat ms",
        "hierarchical ms",
        "flat/hier",
    );
    for nodes in scales(machine.nodes) {
        let p = Machine { nodes, ..*machine }.predict(bytes);
        out.push_str(&format!(
            "{:>6} {:>7} {:>12.3} {:>14.3} {:>10.2}\n",
            p.nodes,
            p.ranks,
            p.flat_secs * 1e3,
            p.hierarchical_secs * 1e3,
            p.flat_secs / p.hierarchical_secs
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(nodes: usize, ranks_per_node: usize) -> Machine {
        Machine {
            nodes,
            ranks_per_node,
            intra: Link::new(1e-6, 1e10),
            inter: Link::new(2e-6, 1e9),
            reduce_secs_per_byte: 1e-10,
        }
    }

    #[test]
    fn one_node_rings_over_its_own_link_and_both_exchanges_agree() {
        // 4 ranks, 4 MB: 6 steps of 1 MB at 1 µs + 100 µs, and 3 MB summed.
        let p = machine(1, 4).predict(4e6);
        let want = 6.0 * (1e-6 + 1e-4) + 3e6 * 1e-10;
        assert!((p.flat_secs - want).abs() < 1e-12, "{p:?}");
        assert_eq!(p.flat_secs, p.hierarchical_secs);
        assert_eq!(machine(1, 1).predict(4e6).flat_secs, 0.0);
    }

    #[test]
    fn the_hierarchical_exchange_counts_by_hand() {
        // 2 nodes × 2 ranks, 4 MB. In the node: 1 step of 2 MB each way
        // (1 µs + 200 µs) and 2 MB summed; between the nodes: 2 rings of
        // 2 MB sharing the link, 2 steps of 1 MB at 2 µs + 2 ms, 1 MB summed.
        let p = machine(2, 2).predict(4e6);
        let want = 2.0 * (1e-6 + 2e-4) + 2e6 * 1e-10 + 2.0 * (2e-6 + 2e-3) + 1e6 * 1e-10;
        assert!((p.hierarchical_secs - want).abs() < 1e-12, "{p:?}");
        // Flat: 6 steps of 1 MB on the inter-node link.
        let flat = 6.0 * (2e-6 + 1e-3) + 3e6 * 1e-10;
        assert!((p.flat_secs - flat).abs() < 1e-12, "{p:?}");
    }

    #[test]
    fn tables_show_powers_of_two_up_to_the_machine() {
        assert_eq!(scales(4608).len(), 14);
        assert_eq!(scales(4608)[12..], [4096, 4608]);
        assert_eq!(scales(4), [1, 2, 4]);
        assert_eq!(scales(1), [1]);
        let table = table(&machine(4, 2), 4e6, "test");
        assert_eq!(table.lines().count(), 3 + 3, "{table}");
        assert!(table.contains("4.0 MB (test), 2 ranks per node"), "{table}");
    }

    #[test]
    fn a_flat_ring_waits_on_its_slowest_link_whichever_it_is() {
        // Links within the node slower than between nodes (as on a host
        // whose shared memory is slower than a fast network).
        let slow_node = Machine { intra: Link::new(1e-6, 1e8), ..machine(2, 2) };
        let flat = 6.0 * (1e-6 + 1e-2) + 3e6 * 1e-10;
        assert!((slow_node.predict(4e6).flat_secs - flat).abs() < 1e-12);
    }

    #[test]
    fn at_scale_the_hierarchical_exchange_saves_the_flat_rings_latency() {
        // Summit's shape: 4,608 nodes of 6 ranks. A small buffer is all
        // latency: 2(p−1) inter-node steps against 2(N−1).
        let p = machine(4608, 6).predict(4e3);
        assert!(p.flat_secs > 5.0 * p.hierarchical_secs, "{p:?}");
        // A large one is all bandwidth, the same bytes leave each node.
        let p = machine(4608, 6).predict(4e9);
        assert!((p.flat_secs / p.hierarchical_secs - 1.0).abs() < 0.2, "{p:?}");
    }
}
