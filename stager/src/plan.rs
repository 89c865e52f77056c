//! The staging plan: for every needed file, exactly one reader rank
//! (preferably on a node that needs the file, balanced by bytes, largest
//! files first) and the set of nodes it goes to. Every rank builds the same
//! plan from the same inputs; nothing but the manifest is communicated.

use std::collections::BTreeSet;

use formats::placement::{PlacementError, Policy, files_per_node_with};

/// A plan that cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// A node needs a file index the manifest does not have.
    #[error("node {node} needs file {file} but the manifest has {files} files")]
    UnknownFile {
        /// Node.
        node: usize,
        /// File index.
        file: usize,
        /// Files in the manifest.
        files: usize,
    },
    /// A node that has no rank.
    #[error("node {0} has no rank")]
    EmptyNode(usize),
}

/// A subset of `0..n`: all of it, or the members listed (ascending). A
/// file every node needs, or a node that needs every file, is `All`: under
/// `replicate` on 4,608 nodes a million files would otherwise be listed
/// 4.6·10⁹ times (37 GB of indices).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subset {
    /// Every index below the bound.
    All(usize),
    /// These indices, ascending, without repeats.
    Listed(Vec<usize>),
}

impl Subset {
    /// The subset listing `members` (sorted and deduplicated here).
    pub fn listed(mut members: Vec<usize>) -> Subset {
        members.sort_unstable();
        members.dedup();
        Subset::Listed(members)
    }

    /// Whether `index` is a member.
    pub fn contains(&self, index: usize) -> bool {
        match self {
            Subset::All(n) => index < *n,
            Subset::Listed(members) => members.binary_search(&index).is_ok(),
        }
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        match self {
            Subset::All(n) => *n,
            Subset::Listed(members) => members.len(),
        }
    }

    /// True if it has no member.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The members, ascending.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        let (all, listed) = match self {
            Subset::All(n) => (0..*n, &[][..]),
            Subset::Listed(members) => (0..0, members.as_slice()),
        };
        all.chain(listed.iter().copied())
    }
}

/// What each of `nodes` nodes needs of `sizes.len()` files under `policy`
/// (files following others as in [`formats::placement::files_per_node_with`]):
/// `replicate` is every file on every node, without listing them.
pub fn node_needs(
    sizes: &[u64],
    follows: &[Option<usize>],
    nodes: usize,
    policy: Policy,
    seed: u64,
) -> Result<Vec<Subset>, PlacementError> {
    match policy {
        Policy::Replicate if nodes > 0 => Ok(vec![Subset::All(sizes.len()); nodes]),
        _ => Ok(files_per_node_with(sizes, follows, nodes, policy, seed)?.into_iter().map(Subset::Listed).collect()),
    }
}

/// Who reads what, and where it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    sizes: Vec<u64>,
    node_of_rank: Vec<usize>,
    /// Per file: the reading rank, `None` if no node needs it.
    reader: Vec<Option<usize>>,
    /// Per file: the nodes that need it.
    destinations: Vec<Subset>,
    /// Per node: the files it needs.
    needs: Vec<Subset>,
    /// Per node: its lowest rank, which writes what the node receives.
    writer_of_node: Vec<usize>,
    /// Bytes of all files (what a node needing every file needs).
    all_bytes: u64,
}

/// How many of a file's eligible ranks, the least loaded first, a step of
/// the assignment or of the rebalancing looks at, and how many swap
/// partners of each size side it tries. Looking at every eligible rank and
/// every file of each would grow with the square of the files per rank;
/// the least loaded ranks are where a move helps most, and the files
/// nearest the ideal size are where a swap helps most.
const CANDIDATES: usize = 8;

/// Ranks and their read loads, ordered by (load, rank), with each file's
/// eligible ranks: the ranks of the nodes that need it.
struct Loads<'a> {
    load: Vec<u64>,
    by_load: BTreeSet<(u64, usize)>,
    destinations: &'a [Subset],
    ranks_of_node: &'a [Vec<usize>],
    node_of_rank: &'a [usize],
}

impl Loads<'_> {
    fn add(&mut self, rank: usize, bytes: u64) {
        self.by_load.remove(&(self.load[rank], rank));
        self.load[rank] += bytes;
        self.by_load.insert((self.load[rank], rank));
    }

    fn remove(&mut self, rank: usize, bytes: u64) {
        self.by_load.remove(&(self.load[rank], rank));
        self.load[rank] -= bytes;
        self.by_load.insert((self.load[rank], rank));
    }

    /// Whether `rank` is on a node that needs `file`.
    fn eligible(&self, file: usize, rank: usize) -> bool {
        self.destinations[file].contains(self.node_of_rank[rank])
    }

    /// Up to `n` of `file`'s eligible ranks other than `except`, least
    /// loaded first (ties by rank). A file few nodes need has its ranks
    /// listed; one most nodes need takes them from the ordered loads.
    fn least_loaded(&self, file: usize, except: Option<usize>, n: usize) -> Vec<usize> {
        let nodes = &self.destinations[file];
        let few = match nodes {
            Subset::All(_) => false,
            Subset::Listed(list) => {
                list.iter().map(|&node| self.ranks_of_node[node].len()).sum::<usize>() <= 4 * n.max(16)
            }
        };
        if few {
            let mut ranks: Vec<usize> = nodes
                .iter()
                .flat_map(|node| self.ranks_of_node[node].iter().copied())
                .filter(|&r| Some(r) != except)
                .collect();
            ranks.sort_by_key(|&r| (self.load[r], r));
            ranks.truncate(n);
            return ranks;
        }
        self.by_load.iter().map(|&(_, r)| r).filter(|&r| Some(r) != except && self.eligible(file, r)).take(n).collect()
    }
}

/// Passes over the most loaded rank after the largest-first assignment:
/// move one of its files to one of the least loaded eligible ranks, or swap
/// one for a smaller file of such a rank (those nearest the size that would
/// even the pair), whichever lowers the pair's larger load the most; stop
/// when no move helps (or after a bounded number of passes, so planning
/// stays cheap at thousands of nodes). Largest-first alone left the bench
/// dataset's readers 7 % above the mean; the slowest reader sets the
/// staging time.
fn rebalance(sizes: &[u64], loads: &mut Loads<'_>, reader: &mut [Option<usize>]) {
    const MAX_PASSES: usize = 256;
    let mut files_of: Vec<BTreeSet<(u64, usize)>> = vec![BTreeSet::new(); loads.load.len()];
    for (f, r) in reader.iter().enumerate() {
        if let Some(r) = *r {
            files_of[r].insert((sizes[f], f));
        }
    }
    for _ in 0..MAX_PASSES {
        let Some(&(top_load, _)) = loads.by_load.last() else { return };
        // The lowest-numbered of the most loaded ranks.
        let Some(&(_, top)) = loads.by_load.range((top_load, 0)..).next() else { return };
        // (new larger load of the pair, file to move, file to take back, other rank)
        let mut best: Option<(u64, usize, Option<usize>, usize)> = None;
        let mut consider = |candidate: (u64, usize, Option<usize>, usize)| {
            if candidate.0 < top_load && best.is_none_or(|b| (candidate.0, candidate.1, candidate.3) < (b.0, b.1, b.3))
            {
                best = Some(candidate);
            }
        };
        for &(size_f, f) in &files_of[top] {
            for other in loads.least_loaded(f, Some(top), CANDIDATES) {
                let other_load = loads.load[other];
                consider(((other_load + size_f).max(top_load - size_f), f, None, other));
                // The swap that evens the pair takes back a file of
                // size_f - (top_load - other_load) / 2; try the files of
                // `other` nearest that size, smaller than size_f.
                if size_f == 0 {
                    continue;
                }
                let ideal = size_f.saturating_sub((top_load - other_load) / 2).min(size_f - 1);
                let theirs = &files_of[other];
                let below = theirs.range(..=(ideal, usize::MAX)).rev().take(CANDIDATES);
                let above = theirs.range((ideal + 1, 0)..(size_f, 0)).take(CANDIDATES);
                for &(size_g, g) in below.chain(above) {
                    if loads.eligible(g, top) {
                        let (a, b) = (top_load - size_f + size_g, other_load + size_f - size_g);
                        consider((a.max(b), f, Some(g), other));
                    }
                }
            }
        }
        let Some((_, f, g, other)) = best else { return };
        reader[f] = Some(other);
        loads.remove(top, sizes[f]);
        loads.add(other, sizes[f]);
        files_of[top].remove(&(sizes[f], f));
        files_of[other].insert((sizes[f], f));
        if let Some(g) = g {
            reader[g] = Some(top);
            loads.remove(other, sizes[g]);
            loads.add(top, sizes[g]);
            files_of[other].remove(&(sizes[g], g));
            files_of[top].insert((sizes[g], g));
        }
    }
}

impl Plan {
    /// Plan for files of `sizes`, per-node needs `needs` (from
    /// [`formats::placement::files_per_node`]) and each rank's node.
    pub fn build(sizes: &[u64], needs: &[Vec<usize>], node_of_rank: &[usize]) -> Result<Plan, PlanError> {
        Plan::build_from(sizes, needs.iter().map(|files| Subset::listed(files.clone())).collect(), node_of_rank)
    }

    /// [`Plan::build`] from needs as subsets ([`node_needs`]).
    pub fn build_from(sizes: &[u64], needs: Vec<Subset>, node_of_rank: &[usize]) -> Result<Plan, PlanError> {
        let nodes = needs.len();
        for (node, files) in needs.iter().enumerate() {
            let beyond = match files {
                Subset::All(n) => (*n > sizes.len()).then_some(*n - 1),
                Subset::Listed(list) => list.last().copied().filter(|&f| f >= sizes.len()),
            };
            if let Some(file) = beyond {
                return Err(PlanError::UnknownFile { node, file, files: sizes.len() });
            }
        }
        let destinations = if needs.iter().all(|files| *files == Subset::All(sizes.len())) {
            vec![Subset::All(nodes); sizes.len()]
        } else {
            let mut lists = vec![Vec::new(); sizes.len()];
            for (node, files) in needs.iter().enumerate() {
                for file in files.iter() {
                    lists[file].push(node);
                }
            }
            // Nodes were visited in order: each list is ascending already.
            lists.into_iter().map(Subset::Listed).collect()
        };
        let mut ranks_of_node = vec![Vec::new(); nodes];
        for (rank, &node) in node_of_rank.iter().enumerate() {
            if let Some(list) = ranks_of_node.get_mut(node) {
                list.push(rank);
            }
        }
        if let Some(empty) = ranks_of_node.iter().position(Vec::is_empty) {
            return Err(PlanError::EmptyNode(empty));
        }
        let writer_of_node = ranks_of_node.iter().map(|ranks| ranks[0]).collect();

        let mut order: Vec<usize> = (0..sizes.len()).filter(|&f| !destinations[f].is_empty()).collect();
        order.sort_by(|&a, &b| sizes[b].cmp(&sizes[a]).then(a.cmp(&b)));
        let mut loads = Loads {
            load: vec![0u64; node_of_rank.len()],
            by_load: (0..node_of_rank.len()).map(|r| (0, r)).collect(),
            destinations: &destinations,
            ranks_of_node: &ranks_of_node,
            node_of_rank,
        };
        let mut reader = vec![None; sizes.len()];
        for file in order {
            if let Some(&rank) = loads.least_loaded(file, None, 1).first() {
                loads.add(rank, sizes[file]);
                reader[file] = Some(rank);
            }
        }
        rebalance(sizes, &mut loads, &mut reader);
        Ok(Plan {
            sizes: sizes.to_vec(),
            node_of_rank: node_of_rank.to_vec(),
            reader,
            destinations,
            needs,
            writer_of_node,
            all_bytes: sizes.iter().sum(),
        })
    }

    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.needs.len()
    }

    /// Number of ranks.
    pub fn ranks(&self) -> usize {
        self.node_of_rank.len()
    }

    /// The rank that reads `file`, if any node needs it.
    pub fn reader(&self, file: usize) -> Option<usize> {
        self.reader.get(file).copied().flatten()
    }

    /// The nodes that need `file` (none for an index beyond the manifest).
    pub fn destinations(&self, file: usize) -> &Subset {
        self.destinations.get(file).unwrap_or(&Subset::All(0))
    }

    /// The files `node` needs (none for a node beyond the plan).
    pub fn needs(&self, node: usize) -> &Subset {
        self.needs.get(node).unwrap_or(&Subset::All(0))
    }

    /// The node of `rank`.
    pub fn node_of(&self, rank: usize) -> usize {
        self.node_of_rank[rank]
    }

    /// The rank that writes everything `node` receives: its lowest rank.
    pub fn writer(&self, node: usize) -> Option<usize> {
        self.writer_of_node.get(node).copied()
    }

    /// The files `rank` reads, largest first.
    pub fn reads(&self, rank: usize) -> Vec<usize> {
        let mut files: Vec<usize> = (0..self.sizes.len()).filter(|&f| self.reader(f) == Some(rank)).collect();
        files.sort_by(|&a, &b| self.sizes[b].cmp(&self.sizes[a]).then(a.cmp(&b)));
        files
    }

    /// The files `rank` reads, earliest `first_needed` step first (then
    /// largest first): the order a staging service reads in while training
    /// runs.
    pub fn reads_by_need(&self, rank: usize, first_needed: &[u64]) -> Vec<usize> {
        let mut files = self.reads(rank);
        files.sort_by_key(|&f| first_needed.get(f).copied().unwrap_or(u64::MAX));
        files
    }

    /// Bytes each rank reads from the source.
    pub fn read_bytes_per_rank(&self) -> Vec<u64> {
        let mut load = vec![0u64; self.ranks()];
        for (file, reader) in self.reader.iter().enumerate() {
            if let Some(rank) = reader {
                load[*rank] += self.sizes[file];
            }
        }
        load
    }

    /// Bytes read from the source under this plan (each needed file once).
    pub fn source_bytes(&self) -> u64 {
        self.read_bytes_per_rank().iter().sum()
    }

    /// Bytes of the distinct files some node needs.
    pub fn unique_bytes(&self) -> u64 {
        (0..self.sizes.len()).filter(|&f| !self.destinations[f].is_empty()).map(|f| self.sizes[f]).sum()
    }

    /// Bytes every node writes, summed (what the naive copy reads from the source).
    pub fn written_bytes(&self) -> u64 {
        (0..self.sizes.len()).map(|f| self.sizes[f] * self.destinations[f].len() as u64).sum()
    }

    /// Bytes sent over the network: each file to each destination node other
    /// than its reader's.
    pub fn moved_bytes(&self) -> u64 {
        (0..self.sizes.len())
            .filter_map(|f| {
                let to = &self.destinations[f];
                let local = self.reader(f).is_some_and(|rank| to.contains(self.node_of_rank[rank]));
                self.reader(f).map(|_| self.sizes[f] * (to.len() - usize::from(local)) as u64)
            })
            .sum()
    }

    /// Bytes of the files `node` needs.
    pub fn needed_bytes(&self, node: usize) -> u64 {
        match self.needs(node) {
            Subset::All(n) if *n == self.sizes.len() => self.all_bytes,
            needs => needs.iter().map(|f| self.sizes[f]).sum(),
        }
    }

    /// Files each rank reads.
    pub fn reads_per_rank(&self) -> Vec<usize> {
        let mut count = vec![0usize; self.ranks()];
        for rank in self.reader.iter().flatten() {
            count[*rank] += 1;
        }
        count
    }

    /// Every (file, reader, destination node) hand-off of the plan.
    pub fn transfers(&self) -> impl Iterator<Item = Transfer> + '_ {
        (0..self.sizes.len()).flat_map(move |file| {
            let reader = self.reader(file);
            self.destinations(file).iter().filter_map(move |to_node| {
                reader.map(|rank| Transfer {
                    file,
                    reader: rank,
                    from_node: self.node_of_rank[rank],
                    to_node,
                    bytes: self.sizes[file],
                })
            })
        })
    }
}

/// One file going from its reader to one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transfer {
    /// File index.
    pub file: usize,
    /// Reading rank.
    pub reader: usize,
    /// Reader's node.
    pub from_node: usize,
    /// Destination node.
    pub to_node: usize,
    /// File size.
    pub bytes: u64,
}

#[cfg(test)]
mod tests {
    use formats::placement::{Policy, files_per_node};
    use proptest::prelude::*;

    use super::*;

    fn grouped(ranks: usize, per_node: usize) -> Vec<usize> {
        (0..ranks).map(|r| r / per_node).collect()
    }

    #[test]
    fn replicate_on_two_nodes_reads_each_file_once() {
        let sizes = [10, 20, 30, 40];
        let needs = files_per_node(&sizes, 2, Policy::Replicate, 0).unwrap();
        let plan = Plan::build(&sizes, &needs, &grouped(4, 2)).unwrap();
        assert_eq!(plan.source_bytes(), 100);
        assert_eq!(plan.written_bytes(), 200);
        assert_eq!(plan.moved_bytes(), 100);
        // Largest first to the least-loaded rank: 40->r0, 30->r1, 20->r2, 10->r3.
        assert_eq!((0..4).map(|f| plan.reader(f).unwrap()).collect::<Vec<_>>(), [3, 2, 1, 0]);
        assert_eq!(plan.writer(1), Some(2));
    }

    /// Largest-first alone gives 3+2+2 | 3+2 (max 7); swapping a 3 for a 2
    /// reaches the optimum 3+3 | 2+2+2.
    #[test]
    fn rebalancing_improves_on_largest_first() {
        let sizes = [3, 3, 2, 2, 2];
        let needs = vec![vec![0, 1, 2, 3, 4]];
        let plan = Plan::build(&sizes, &needs, &[0, 0]).unwrap();
        assert_eq!(plan.read_bytes_per_rank(), vec![6, 6]);
    }

    #[test]
    fn a_subset_is_all_of_a_range_or_its_listed_members() {
        let all = Subset::All(3);
        assert_eq!(all.iter().collect::<Vec<_>>(), [0, 1, 2]);
        assert!(all.contains(2) && !all.contains(3) && all.len() == 3);
        let listed = Subset::listed(vec![5, 1, 5, 3]);
        assert_eq!(listed, Subset::Listed(vec![1, 3, 5]));
        assert!(listed.contains(3) && !listed.contains(2) && listed.len() == 3);
        assert!(Subset::All(0).is_empty() && Subset::Listed(Vec::new()).is_empty());
    }

    #[test]
    fn unknown_file_and_empty_node_are_errors() {
        assert!(matches!(
            Plan::build_from(&[1], vec![Subset::All(2)], &[0]),
            Err(PlanError::UnknownFile { file: 1, .. })
        ));
        assert!(matches!(Plan::build(&[1], &[vec![3]], &[0]), Err(PlanError::UnknownFile { file: 3, .. })));
        assert!(matches!(Plan::build(&[1], &[vec![0], vec![0]], &[0]), Err(PlanError::EmptyNode(1))));
    }

    fn policy() -> impl Strategy<Value = Policy> {
        prop_oneof![Just(Policy::Replicate), Just(Policy::Shard), (1usize..4).prop_map(Policy::PerNode)]
    }

    /// `policy` made placeable for `files` files on `nodes` nodes: a
    /// per-node count becomes a multiple of the files each node must take.
    fn feasible(policy: Policy, files: usize, nodes: usize) -> Policy {
        match policy {
            Policy::PerNode(k) => Policy::PerNode((files.div_ceil(nodes) * k).min(files)),
            p => p,
        }
    }

    proptest! {
        /// Every needed file is read exactly once, by a rank on a node that
        /// needs it; every node receives exactly its set.
        #[test]
        fn every_needed_file_read_once_and_delivered_exactly(
            sizes in prop::collection::vec(1u64..1_000_000, 1..120),
            nodes in 1usize..9, ranks_per_node in 1usize..5, policy in policy(), seed in any::<u64>(),
        ) {
            let policy = feasible(policy, sizes.len(), nodes);
            let needs = files_per_node(&sizes, nodes, policy, seed).unwrap();
            let node_of_rank = grouped(nodes * ranks_per_node, ranks_per_node);
            let plan = Plan::build(&sizes, &needs, &node_of_rank).unwrap();
            let mut received = vec![Vec::new(); nodes];
            let mut reads = vec![0usize; sizes.len()];
            for t in plan.transfers() {
                received[t.to_node].push(t.file);
            }
            for rank in 0..plan.ranks() {
                for f in plan.reads(rank) {
                    reads[f] += 1;
                    prop_assert!(plan.destinations(f).contains(plan.node_of(rank)), "reader not on a destination node");
                }
            }
            for (node, mut got) in received.into_iter().enumerate() {
                got.sort_unstable();
                prop_assert_eq!(&got, &needs[node]);
            }
            for (f, &count) in reads.iter().enumerate() {
                let needed = !plan.destinations(f).is_empty();
                prop_assert_eq!(count, usize::from(needed));
            }
            prop_assert_eq!(plan.source_bytes(), plan.unique_bytes());
        }

        /// Needs given as subsets (every file on every node not listed)
        /// plan exactly what the same needs given as lists do.
        #[test]
        fn needs_as_subsets_plan_what_lists_plan(
            sizes in prop::collection::vec(1u64..1_000_000, 1..120),
            nodes in 1usize..9, ranks_per_node in 1usize..5, policy in policy(), seed in any::<u64>(),
        ) {
            let policy = feasible(policy, sizes.len(), nodes);
            let node_of_rank = grouped(nodes * ranks_per_node, ranks_per_node);
            let lists = files_per_node(&sizes, nodes, policy, seed).unwrap();
            let subsets = node_needs(&sizes, &vec![None; sizes.len()], nodes, policy, seed).unwrap();
            let from_lists = Plan::build(&sizes, &lists, &node_of_rank).unwrap();
            let from_subsets = Plan::build_from(&sizes, subsets, &node_of_rank).unwrap();
            for f in 0..sizes.len() {
                prop_assert_eq!(from_lists.reader(f), from_subsets.reader(f));
                prop_assert_eq!(
                    from_lists.destinations(f).iter().collect::<Vec<_>>(),
                    from_subsets.destinations(f).iter().collect::<Vec<_>>()
                );
            }
            prop_assert_eq!(from_lists.moved_bytes(), from_subsets.moved_bytes());
            prop_assert_eq!(from_lists.written_bytes(), from_subsets.written_bytes());
            for node in 0..nodes {
                prop_assert_eq!(from_lists.needed_bytes(node), from_subsets.needed_bytes(node));
            }
            let moved: u64 = from_subsets.transfers().filter(|t| t.from_node != t.to_node).map(|t| t.bytes).sum();
            prop_assert_eq!(moved, from_subsets.moved_bytes());
        }

        /// With every rank eligible (replicate), read loads are within one
        /// file of each other.
        #[test]
        fn replicate_read_load_is_balanced(
            sizes in prop::collection::vec(1u64..1_000_000, 1..200), nodes in 1usize..9, ranks_per_node in 1usize..5,
        ) {
            let needs = files_per_node(&sizes, nodes, Policy::Replicate, 0).unwrap();
            let plan = Plan::build(&sizes, &needs, &grouped(nodes * ranks_per_node, ranks_per_node)).unwrap();
            let loads = plan.read_bytes_per_rank();
            let spread = loads.iter().max().unwrap() - loads.iter().min().unwrap();
            prop_assert!(spread <= *sizes.iter().max().unwrap(), "loads {:?}", loads);
        }
    }
}
