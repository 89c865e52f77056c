//! Which files each node needs: the placement policy, a pure function of
//! (file sizes, which files follow which, node count, policy, seed) shared
//! by the stager (which copies exactly these files to each node) and the
//! loader (which reads exactly these files on each node). One
//! implementation, so the two always agree. Use
//! [`Manifest::files_per_node`](crate::manifest::Manifest::files_per_node)
//! for a dataset: it keeps each `.idx` sidecar with its data file.

use std::fmt;
use std::str::FromStr;

/// What each node needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Every node gets the whole dataset.
    Replicate,
    /// Files are split into disjoint per-node sets, balanced by bytes.
    Shard,
    /// Every node gets `n` files chosen by a seeded permutation, every file
    /// on at least one node (Kurth et al. staged 1500 files per node).
    PerNode(usize),
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Policy::Replicate => f.write_str("replicate"),
            Policy::Shard => f.write_str("shard"),
            Policy::PerNode(n) => write!(f, "per-node={n}"),
        }
    }
}

/// A policy that cannot be parsed or cannot be met.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlacementError {
    /// Unknown policy text.
    #[error("unknown policy {0:?}: use replicate, shard or per-node=N")]
    Unknown(String),
    /// `per-node=N` whose N is not a whole number of at least 1.
    #[error("{0:?}: per-node=N needs N to be a whole number of files, at least 1")]
    BadCount(String),
    /// `per-node=N` with N larger than the dataset or too small to cover it.
    #[error("per-node={per_node} cannot place {files} files on {nodes} nodes: {reason}")]
    Infeasible {
        /// N.
        per_node: usize,
        /// Files in the dataset.
        files: usize,
        /// Nodes.
        nodes: usize,
        /// Why.
        reason: &'static str,
    },
    /// No nodes.
    #[error("placement needs at least one node")]
    NoNodes,
}

impl FromStr for Policy {
    type Err = PlacementError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "replicate" => Ok(Policy::Replicate),
            "shard" => Ok(Policy::Shard),
            other => match other.strip_prefix("per-node=") {
                None => Err(PlacementError::Unknown(s.to_owned())),
                Some(n) => n
                    .parse::<usize>()
                    .ok()
                    .filter(|&n| n > 0)
                    .map(Policy::PerNode)
                    .ok_or_else(|| PlacementError::BadCount(s.to_owned())),
            },
        }
    }
}

/// The files (indices into the manifest's list) each node needs, each list
/// sorted ascending. `sizes[i]` is the byte size of file `i`.
pub fn files_per_node(
    sizes: &[u64],
    nodes: usize,
    policy: Policy,
    seed: u64,
) -> Result<Vec<Vec<usize>>, PlacementError> {
    files_per_node_with(sizes, &vec![None; sizes.len()], nodes, policy, seed)
}

/// [`files_per_node`] where some files follow another: `follows[i] ==
/// Some(j)` places file `i` on exactly the nodes of file `j` (an index
/// sidecar goes wherever its data file goes). The policy counts, shuffles
/// and balances only the files that follow none (`per-node=N` is N of
/// those per node); a follower's bytes count with its leader's for `shard`.
/// A follower of a follower (or of itself) is treated as a leader.
pub fn files_per_node_with(
    sizes: &[u64],
    follows: &[Option<usize>],
    nodes: usize,
    policy: Policy,
    seed: u64,
) -> Result<Vec<Vec<usize>>, PlacementError> {
    if nodes == 0 {
        return Err(PlacementError::NoNodes);
    }
    let leader_of = |i: usize| match follows.get(i).copied().flatten() {
        Some(j) if j != i && j < sizes.len() && follows.get(j).copied().flatten().is_none() => Some(j),
        _ => None,
    };
    let leaders: Vec<usize> = (0..sizes.len()).filter(|&i| leader_of(i).is_none()).collect();
    let position: std::collections::HashMap<usize, usize> = leaders.iter().enumerate().map(|(k, &i)| (i, k)).collect();
    // Each group: its leader's position, and the files that follow it.
    let mut followers: Vec<Vec<usize>> = vec![Vec::new(); leaders.len()];
    for i in 0..sizes.len() {
        if let Some(&k) = leader_of(i).and_then(|j| position.get(&j)) {
            followers[k].push(i);
        }
    }
    let group_bytes: Vec<u64> =
        leaders.iter().zip(&followers).map(|(&i, f)| sizes[i] + f.iter().map(|&j| sizes[j]).sum::<u64>()).collect();
    let groups = leaders.len();
    let mut per_node = match policy {
        Policy::Replicate => vec![(0..groups).collect(); nodes],
        Policy::Shard => shard(&group_bytes, nodes),
        Policy::PerNode(n) => {
            let infeasible = |reason| PlacementError::Infeasible { per_node: n, files: groups, nodes, reason };
            if n > groups {
                return Err(infeasible("more files per node than the dataset has"));
            }
            if n.saturating_mul(nodes) < groups {
                return Err(infeasible("too few files per node to place every file somewhere"));
            }
            let order = permutation(groups, seed);
            (0..nodes).map(|k| (0..n).map(|j| order[(k * n + j) % groups]).collect()).collect()
        }
    };
    // From group positions to files, followers with their leaders.
    for list in &mut per_node {
        *list = list.iter().flat_map(|&k| std::iter::once(leaders[k]).chain(followers[k].iter().copied())).collect();
        list.sort_unstable();
    }
    Ok(per_node)
}

/// Disjoint sets balanced by bytes: largest file first, to the node with the
/// fewest bytes so far (ties to the lower node). Within `max(sizes)` of even.
/// The node is taken from a heap ordered as that rule orders them (a scan of
/// every node per file grows with files times nodes); the
/// sets are the same either way, which staged data and loaders of
/// different builds rely on.
fn shard(sizes: &[u64], nodes: usize) -> Vec<Vec<usize>> {
    use std::cmp::Reverse;
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by(|&a, &b| sizes[b].cmp(&sizes[a]).then(a.cmp(&b)));
    let mut lightest: std::collections::BinaryHeap<Reverse<(u64, usize)>> =
        (0..nodes).map(|k| Reverse((0, k))).collect();
    let mut out = vec![Vec::new(); nodes];
    for i in order {
        let Some(Reverse((load, k))) = lightest.pop() else { break };
        out[k].push(i);
        lightest.push(Reverse((load.saturating_add(sizes[i]), k)));
    }
    out
}

/// A seeded permutation of 0..n: Fisher-Yates over SplitMix64 with Lemire's
/// unbiased range reduction. Written out (not `rand`'s shuffle) so the
/// placement can never change under a dependency upgrade: staged data and
/// loaders of different builds must agree.
pub fn permutation(n: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    for i in (1..n).rev() {
        let bound = (i + 1) as u64;
        // Lemire: multiply-high, rejecting the biased low zone.
        let j = loop {
            let m = u128::from(next()) * u128::from(bound);
            if (m as u64) >= bound.wrapping_neg() % bound {
                break (m >> 64) as usize;
            }
        };
        order.swap(i, j);
    }
    order
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn policies_parse_and_print() {
        for text in ["replicate", "shard", "per-node=1500"] {
            assert_eq!(text.parse::<Policy>().unwrap().to_string(), text);
        }
        for bad in ["", "copy", "per-node"] {
            assert!(matches!(bad.parse::<Policy>(), Err(PlacementError::Unknown(_))), "{bad}");
        }
        // A count of 0 is a bad count, not an unknown policy.
        for bad in ["per-node=0", "per-node=x", "per-node=-2"] {
            let e = bad.parse::<Policy>().unwrap_err();
            assert!(matches!(e, PlacementError::BadCount(_)), "{bad}: {e}");
            assert!(e.to_string().contains("at least 1"), "{e}");
        }
    }

    #[test]
    fn permutation_is_stable_across_builds() {
        // Pinned: staged data and loaders built at different times must agree.
        assert_eq!(permutation(8, 42), permutation(8, 42));
        assert_eq!(permutation(10, 7), vec![9, 5, 8, 6, 1, 2, 4, 7, 0, 3]);
    }

    #[test]
    fn a_follower_of_a_follower_or_of_itself_leads() {
        let follows = [None, Some(0), Some(1), Some(3)];
        let placed = files_per_node_with(&[1; 4], &follows, 3, Policy::PerNode(1), 5).unwrap();
        // Leaders: 0 (with 1), 2, 3; one per node.
        let mut all: Vec<Vec<usize>> = placed.clone();
        all.sort();
        assert_eq!(all, vec![vec![0, 1], vec![2], vec![3]]);
    }

    #[test]
    fn per_node_that_cannot_cover_is_refused() {
        assert!(files_per_node(&[1; 10], 2, Policy::PerNode(4), 0).is_err());
        assert!(files_per_node(&[1; 10], 2, Policy::PerNode(11), 0).is_err());
        assert!(files_per_node(&[1; 10], 0, Policy::Shard, 0).is_err());
    }

    /// The rule as first written: a scan of every node per file.
    fn shard_by_scanning(sizes: &[u64], nodes: usize) -> Vec<Vec<usize>> {
        let mut order: Vec<usize> = (0..sizes.len()).collect();
        order.sort_by(|&a, &b| sizes[b].cmp(&sizes[a]).then(a.cmp(&b)));
        let mut load = vec![0u64; nodes];
        let mut out = vec![Vec::new(); nodes];
        for i in order {
            let k = (0..nodes).min_by_key(|&k| (load[k], k)).unwrap();
            load[k] += sizes[i];
            out[k].push(i);
        }
        out
    }

    proptest! {
        /// The heap places every file where the scan did: data staged by
        /// one build is found by the loader of another.
        #[test]
        fn shard_through_a_heap_places_files_as_the_scan_did(
            sizes in prop::collection::vec(0u64..1000, 0..300), nodes in 1usize..40,
        ) {
            prop_assert_eq!(shard(&sizes, nodes), shard_by_scanning(&sizes, nodes));
        }

        #[test]
        fn permutation_is_a_permutation(n in 0usize..200, seed in any::<u64>()) {
            let mut p = permutation(n, seed);
            p.sort_unstable();
            prop_assert_eq!(p, (0..n).collect::<Vec<_>>());
        }

        #[test]
        fn per_node_gives_n_distinct_files_and_covers_all(
            files in 1usize..300, nodes in 1usize..40, extra in 0usize..3, seed in any::<u64>()
        ) {
            let n = (files.div_ceil(nodes) + extra).min(files);
            let placed = files_per_node(&vec![1; files], nodes, Policy::PerNode(n), seed).unwrap();
            let mut seen = vec![0usize; files];
            for list in &placed {
                prop_assert_eq!(list.len(), n);
                prop_assert!(list.windows(2).all(|w| w[0] < w[1]), "duplicates on a node");
                for &f in list { seen[f] += 1; }
            }
            prop_assert!(seen.iter().all(|&c| c >= 1));
            // Each file is needed by floor or ceil of nodes*n/files nodes.
            let lo = nodes * n / files;
            prop_assert!(seen.iter().all(|&c| c == lo || c == lo + 1));
        }

        #[test]
        fn followers_go_exactly_where_their_leaders_go(
            pairs in 1usize..100, loners in 0usize..50, nodes in 1usize..12, seed in any::<u64>(), policy in 0usize..3
        ) {
            // Files 0..pairs lead, pairs..2*pairs follow them, then loners.
            let files = 2 * pairs + loners;
            let follows: Vec<Option<usize>> =
                (0..files).map(|i| (i >= pairs && i < 2 * pairs).then(|| i - pairs)).collect();
            let leaders = pairs + loners;
            let policy = match policy {
                0 => Policy::Replicate,
                1 => Policy::Shard,
                _ => Policy::PerNode(leaders.div_ceil(nodes)),
            };
            let placed = files_per_node_with(&vec![3; files], &follows, nodes, policy, seed).unwrap();
            for list in &placed {
                for i in 0..pairs {
                    prop_assert_eq!(list.contains(&i), list.contains(&(i + pairs)), "file {} split from its follower", i);
                }
                if let Policy::PerNode(n) = policy {
                    prop_assert_eq!(list.iter().filter(|&&f| follows[f].is_none()).count(), n);
                }
            }
            let mut seen = vec![false; files];
            placed.iter().flatten().for_each(|&f| seen[f] = true);
            prop_assert!(seen.iter().all(|&s| s), "a file is on no node");
        }

        #[test]
        fn shard_is_disjoint_complete_and_balanced(sizes in prop::collection::vec(1u64..1000, 0..200), nodes in 1usize..16) {
            let placed = files_per_node(&sizes, nodes, Policy::Shard, 0).unwrap();
            let mut all: Vec<usize> = placed.concat();
            all.sort_unstable();
            prop_assert_eq!(all, (0..sizes.len()).collect::<Vec<_>>());
            let loads: Vec<u64> = placed.iter().map(|l| l.iter().map(|&i| sizes[i]).sum()).collect();
            let max_file = sizes.iter().copied().max().unwrap_or(0);
            let (lo, hi) = (loads.iter().min().copied().unwrap_or(0), loads.iter().max().copied().unwrap_or(0));
            prop_assert!(hi - lo <= max_file, "loads {:?}", loads);
        }
    }
}
