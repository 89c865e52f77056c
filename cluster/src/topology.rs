//! Which node each rank lives on. Pure arithmetic: the MPI calls that feed it
//! live in [`crate::World`].

use crate::paths::PathVars;

/// Environment variable that groups consecutive ranks into pretend nodes.
pub const RANKS_PER_NODE_ENV: &str = "STAGEHAND_RANKS_PER_NODE";

/// A rank's place among nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Topology {
    /// Rank in the world.
    pub rank: usize,
    /// Ranks in the world.
    pub size: usize,
    /// Node index, 0..nodes, numbered by each node's lowest rank.
    pub node: usize,
    /// Number of nodes.
    pub nodes: usize,
    /// Rank within the node.
    pub local_rank: usize,
    /// Ranks on this node.
    pub local_size: usize,
}

/// A topology that cannot be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum TopologyError {
    /// The override is not a positive integer.
    #[error("{RANKS_PER_NODE_ENV}={0:?} is not a positive integer")]
    BadOverride(String),
    /// Per-rank node leaders are inconsistent.
    #[error("rank {rank}: node leader {leader} is not a rank of the world of {size}")]
    BadLeader {
        /// Rank with the bad entry.
        rank: usize,
        /// Its leader.
        leader: usize,
        /// World size.
        size: usize,
    },
}

impl Topology {
    /// One rank alone: rank 0 of 1 on node 0 of 1.
    pub fn single() -> Self {
        Topology { rank: 0, size: 1, node: 0, nodes: 1, local_rank: 0, local_size: 1 }
    }

    /// Parse the override variable's value (`None` when unset or empty).
    pub fn parse_override(value: Option<&str>) -> Result<Option<usize>, TopologyError> {
        match value.map(str::trim) {
            None | Some("") => Ok(None),
            Some(text) => match text.parse::<usize>() {
                Ok(k) if k > 0 => Ok(Some(k)),
                _ => Err(TopologyError::BadOverride(text.to_owned())),
            },
        }
    }

    /// Consecutive ranks grouped `ranks_per_node` at a time; the last node
    /// may have fewer.
    pub fn grouped(rank: usize, size: usize, ranks_per_node: usize) -> Self {
        let k = ranks_per_node.max(1);
        let node = rank / k;
        Topology { rank, size, node, nodes: size.div_ceil(k), local_rank: rank % k, local_size: k.min(size - node * k) }
    }

    /// From every rank's node leader (the lowest world rank sharing its
    /// memory), as gathered from the shared-memory split. Nodes are numbered
    /// in order of their leaders.
    pub fn from_leaders(rank: usize, leaders: &[usize]) -> Result<Self, TopologyError> {
        let size = leaders.len();
        for (r, &leader) in leaders.iter().enumerate() {
            if leader >= size || leaders[leader] != leader || leader > r {
                return Err(TopologyError::BadLeader { rank: r, leader, size });
            }
        }
        let mine = leaders[rank];
        let node = leaders.iter().enumerate().filter(|&(r, &l)| r == l && l < mine).count();
        let nodes = leaders.iter().enumerate().filter(|&(r, &l)| r == l).count();
        let local_rank = leaders[..rank].iter().filter(|&&l| l == mine).count();
        let local_size = leaders.iter().filter(|&&l| l == mine).count();
        Ok(Topology { rank, size, node, nodes, local_rank, local_size })
    }

    /// The values node-local path templates are expanded with.
    pub fn path_vars(&self) -> PathVars {
        PathVars { node: self.node, rank: self.rank, local_rank: self.local_rank }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn four_ranks_as_two_pretend_nodes() {
        let t: Vec<_> = (0..4).map(|r| Topology::grouped(r, 4, 2)).collect();
        assert_eq!(t.iter().map(|t| (t.node, t.local_rank)).collect::<Vec<_>>(), [(0, 0), (0, 1), (1, 0), (1, 1)]);
        assert!(t.iter().all(|t| t.nodes == 2 && t.local_size == 2));
    }

    #[test]
    fn uneven_last_node_is_smaller() {
        let last = Topology::grouped(4, 5, 2);
        assert_eq!((last.node, last.nodes, last.local_rank, last.local_size), (2, 3, 0, 1));
    }

    #[test]
    fn override_parsing() {
        assert_eq!(Topology::parse_override(None), Ok(None));
        assert_eq!(Topology::parse_override(Some("")), Ok(None));
        assert_eq!(Topology::parse_override(Some(" 2 ")), Ok(Some(2)));
        for bad in ["0", "-1", "two", "1.5"] {
            assert!(Topology::parse_override(Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn leaders_from_an_interleaved_placement() {
        // Round-robin placement over 2 nodes: ranks 0,2 on one, 1,3 on the other.
        let leaders = [0, 1, 0, 1];
        let t3 = Topology::from_leaders(3, &leaders).unwrap();
        assert_eq!((t3.node, t3.nodes, t3.local_rank, t3.local_size), (1, 2, 1, 2));
        assert!(Topology::from_leaders(0, &[1, 1]).is_err());
        assert!(Topology::from_leaders(0, &[0, 7]).is_err());
    }

    proptest! {
        /// The grouped layout and the leader-derived layout agree.
        #[test]
        fn grouped_equals_leaders_of_groups(size in 1usize..64, k in 1usize..9) {
            let leaders: Vec<usize> = (0..size).map(|r| r / k * k).collect();
            for rank in 0..size {
                prop_assert_eq!(Topology::from_leaders(rank, &leaders).unwrap(), Topology::grouped(rank, size, k));
            }
        }
    }
}
