//! Predicted staging times at any scale, from the real planner and a
//! bandwidth model, for the plan and for the naive copy (every node reading
//! what it needs straight from the parallel file system).
//!
//! The model assumes the phases overlap (reading, sending, receiving and
//! writing run at once), so the time is that of the slowest resource:
//!
//! - the file system's aggregate bandwidth, shared by every reader;
//! - a rank's read threads (`threads x per-thread bandwidth`);
//! - each node's NIC, inbound (source reads + received files) and outbound
//!   (files sent to other nodes), full duplex;
//! - each node's local write bandwidth.

use formats::placement::{PlacementError, Policy, files_per_node};

use crate::plan::{Plan, PlanError};

/// The machine being modelled. Bandwidths in bytes per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Machine {
    /// Nodes.
    pub nodes: usize,
    /// Ranks per node.
    pub ranks_per_node: usize,
    /// Aggregate bandwidth of the parallel file system.
    pub pfs_bw: f64,
    /// Per-node network bandwidth, each direction.
    pub nic_bw: f64,
    /// Per-node local write bandwidth (NVMe, tmpfs).
    pub local_write_bw: f64,
    /// Read threads per rank.
    pub read_threads: usize,
    /// What one read thread gets from the file system.
    pub thread_bw: f64,
}

/// The dataset being modelled: `files` files of about `file_size` bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dataset {
    /// Number of files.
    pub files: usize,
    /// Bytes per file (the median where sizes spread).
    pub file_size: u64,
    /// Spread of the sizes: the standard deviation of their logarithm
    /// ([`file_sizes`]); 0 for equal files. Real datasets' sizes differ,
    /// and equal sizes hide what balancing the readers costs.
    pub size_spread: f64,
    /// Placement policy.
    pub policy: Policy,
    /// Placement seed.
    pub seed: u64,
}

/// One strategy's predicted time and traffic.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Estimate {
    /// Predicted seconds.
    pub seconds: f64,
    /// The resource that sets the time.
    pub bottleneck: &'static str,
    /// Seconds each resource would need on its own.
    pub resources: Vec<(&'static str, f64)>,
    /// Bytes read from the file system.
    pub source_bytes: u64,
    /// Bytes sent between nodes.
    pub moved_bytes: u64,
    /// Bytes written to node-local storage.
    pub written_bytes: u64,
    /// Source bytes / unique bytes needed.
    pub read_amplification: f64,
}

/// Both strategies.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Prediction {
    /// The naive copy.
    pub naive: Estimate,
    /// The stager's plan.
    pub staged: Estimate,
    /// naive / staged.
    pub speedup: f64,
}

/// Why a simulation cannot run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimulateError {
    /// Placement failed.
    #[error(transparent)]
    Placement(#[from] PlacementError),
    /// Planning failed.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The model would not fit in memory.
    #[error(
        "modelling {nodes} nodes x {ranks_per_node} ranks and {files} files ({pairs} (node, file) pairs) would take about {gib:.1} GiB of memory, more than the {limit} GiB this command allows itself; reduce --nodes or --files"
    )]
    TooLarge {
        /// Nodes asked for.
        nodes: usize,
        /// Ranks per node asked for.
        ranks_per_node: usize,
        /// Files asked for.
        files: usize,
        /// (node, file) pairs the policy places.
        pairs: u128,
        /// The estimate.
        gib: f64,
        /// The limit in GiB.
        limit: u64,
    },
    /// A bandwidth or count that is not positive.
    #[error("{0} must be positive")]
    NotPositive(&'static str),
    /// A size spread that is not a number from 0 to 3.
    #[error("--size-spread must be from 0 (equal files) to 3, got {0}")]
    Spread(f64),
}

/// The memory `predict` allows itself, checked before it allocates: the
/// planner's tables grow with files, ranks and (node, file) pairs, so an
/// absurd `--nodes` or `--files` is refused instead of exhausting memory.
const MEMORY_LIMIT_GIB: u64 = 4;

/// Bytes the planner's tables take for `files` files, `nodes` nodes of
/// `ranks` ranks in all, and `pairs` (node, file) placements: per file its
/// size, reader and destination list (about 64 bytes); per pair an entry in
/// both the node's needs and the file's destinations (24 with growth); per
/// rank its node, load and lists (40); per node its lists (72).
fn planner_bytes(files: u128, nodes: u128, ranks: u128, pairs: u128) -> u128 {
    files * 64 + pairs * 24 + ranks * 40 + nodes * 72
}

impl Estimate {
    /// The estimate of a strategy whose time is set by the slowest of
    /// `resources` (name, seconds alone), with its byte counts.
    fn slowest_of(resources: Vec<(&'static str, f64)>, source: u64, moved: u64, written: u64, unique: f64) -> Self {
        let (bottleneck, seconds) =
            resources.iter().copied().fold(("none", 0.0), |best, r| if r.1 > best.1 { r } else { best });
        Estimate {
            seconds,
            bottleneck,
            resources,
            source_bytes: source,
            moved_bytes: moved,
            written_bytes: written,
            read_amplification: source as f64 / unique,
        }
    }
}

/// `files` sizes around `median`, log-normal with standard deviation
/// `spread` of the logarithm, the same for the same `seed` (SplitMix64 and
/// Box-Muller written out, so a prediction never changes with a
/// dependency). `spread` 0 gives equal sizes.
pub fn file_sizes(files: usize, median: u64, spread: f64, seed: u64) -> Vec<u64> {
    if spread == 0.0 {
        return vec![median; files];
    }
    let mut state = seed ^ 0x5851_F42D_4C95_7F2D;
    let mut uniform = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..files)
        .map(|_| {
            let (u, v) = (uniform().max(f64::MIN_POSITIVE), uniform());
            let normal = (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos();
            (median as f64 * (spread * normal).exp()).round() as u64
        })
        .collect()
}

/// Predict both strategies on `machine` for `dataset`.
pub fn predict(machine: &Machine, dataset: &Dataset) -> Result<Prediction, SimulateError> {
    for (name, v) in [
        ("--pfs-bw", machine.pfs_bw),
        ("--nic-bw", machine.nic_bw),
        ("--local-write-bw", machine.local_write_bw),
        ("--thread-bw", machine.thread_bw),
        ("--nodes", machine.nodes as f64),
        ("--ranks-per-node", machine.ranks_per_node as f64),
        ("--read-threads", machine.read_threads as f64),
    ] {
        if v.is_nan() || v <= 0.0 {
            return Err(SimulateError::NotPositive(name));
        }
    }
    if !(0.0..=3.0).contains(&dataset.size_spread) {
        return Err(SimulateError::Spread(dataset.size_spread));
    }
    let (files, nodes) = (dataset.files as u128, machine.nodes as u128);
    let pairs = match dataset.policy {
        Policy::Replicate => nodes * files,
        Policy::Shard => files,
        Policy::PerNode(n) => nodes * (n as u128).min(files),
    };
    let ranks = machine.nodes as u128 * machine.ranks_per_node as u128;
    let bytes = planner_bytes(dataset.files as u128, machine.nodes as u128, ranks, pairs);
    if bytes > u128::from(MEMORY_LIMIT_GIB) << 30 {
        return Err(SimulateError::TooLarge {
            nodes: machine.nodes,
            ranks_per_node: machine.ranks_per_node,
            files: dataset.files,
            pairs,
            gib: bytes as f64 / (1u64 << 30) as f64,
            limit: MEMORY_LIMIT_GIB,
        });
    }
    let sizes = file_sizes(dataset.files, dataset.file_size, dataset.size_spread, dataset.seed);
    let needs = files_per_node(&sizes, machine.nodes, dataset.policy, dataset.seed)?;
    let node_of_rank: Vec<usize> =
        (0..machine.nodes * machine.ranks_per_node).map(|r| r / machine.ranks_per_node).collect();
    let plan = Plan::build(&sizes, &needs, &node_of_rank)?;

    let node_needed: Vec<u64> = needs.iter().map(|l| l.iter().map(|&f| sizes[f]).sum()).collect();
    let max_needed = node_needed.iter().copied().max().unwrap_or(0) as f64;
    let unique = plan.unique_bytes().max(1) as f64;
    let node_threads_bw = (machine.ranks_per_node * machine.read_threads) as f64 * machine.thread_bw;

    let written = plan.written_bytes();
    let naive = Estimate::slowest_of(
        vec![
            ("file system aggregate bandwidth", written as f64 / machine.pfs_bw),
            ("node read threads", max_needed / node_threads_bw),
            ("node NIC inbound", max_needed / machine.nic_bw),
            ("node-local writes", max_needed / machine.local_write_bw),
        ],
        written,
        0,
        written,
        unique,
    );

    let rank_reads = plan.read_bytes_per_rank();
    let mut node_in = vec![0u64; machine.nodes];
    let mut node_out = vec![0u64; machine.nodes];
    for (rank, bytes) in rank_reads.iter().enumerate() {
        node_in[node_of_rank[rank]] += bytes;
    }
    for t in plan.transfers().filter(|t| t.from_node != t.to_node) {
        node_out[t.from_node] += t.bytes;
        node_in[t.to_node] += t.bytes;
    }
    let max_of = |v: &[u64]| v.iter().copied().max().unwrap_or(0) as f64;
    let source = plan.source_bytes();
    let staged = Estimate::slowest_of(
        vec![
            ("file system aggregate bandwidth", source as f64 / machine.pfs_bw),
            ("rank read threads", max_of(&rank_reads) / (machine.read_threads as f64 * machine.thread_bw)),
            ("node NIC inbound", max_of(&node_in) / machine.nic_bw),
            ("node NIC outbound", max_of(&node_out) / machine.nic_bw),
            ("node-local writes", max_needed / machine.local_write_bw),
        ],
        source,
        plan.moved_bytes(),
        written,
        unique,
    );
    let speedup = if staged.seconds > 0.0 { naive.seconds / staged.seconds } else { 1.0 };
    Ok(Prediction { naive, staged, speedup })
}

/// Staging while training ([`crate::serve`]) against staging first, in a
/// fluid model: the service delivers each node's `files` files at a steady
/// rate in the order training needs them, the whole stage taking
/// `stage_secs`; training reads them at a steady rate, an epoch alone
/// taking `epoch_secs`. File `k` arrives at `(k + 1) / files` of the stage
/// and is read in the `files`-th of the epoch after both it has arrived and
/// file `k - 1` was read, so the epoch ends at
/// `max(stage + epoch / files, epoch + stage / files)`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Overlap {
    /// Seconds until the first file is in place: the first batch.
    pub first_batch: f64,
    /// Seconds until the first epoch ends when training runs beside the service.
    pub overlapped: f64,
    /// Seconds until the first epoch ends when staging finishes first.
    pub staged_first: f64,
}

/// [`Overlap`] of a stage of `stage_secs` and an epoch of `epoch_secs`
/// over `files` files per node.
pub fn overlap(stage_secs: f64, epoch_secs: f64, files: usize) -> Overlap {
    let n = files.max(1) as f64;
    Overlap {
        first_batch: stage_secs / n,
        overlapped: (stage_secs + epoch_secs / n).max(epoch_secs + stage_secs / n),
        staged_first: stage_secs + epoch_secs,
    }
}

/// Files each node holds under `policy` (for [`overlap`]).
pub fn node_file_count(policy: Policy, files: usize, nodes: usize) -> usize {
    match policy {
        Policy::Replicate => files,
        Policy::Shard => files.div_ceil(nodes.max(1)),
        Policy::PerNode(n) => n.min(files),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_overlapped_epoch_ends_one_file_after_the_slower_of_stage_and_epoch() {
        let o = super::overlap(100.0, 60.0, 50);
        assert_eq!((o.first_batch, o.staged_first), (2.0, 160.0));
        assert!((o.overlapped - 101.2).abs() < 1e-9, "{o:?}");
        let o = super::overlap(60.0, 100.0, 50);
        assert!((o.overlapped - 101.2).abs() < 1e-9, "training slower: {o:?}");
        assert_eq!(super::overlap(10.0, 10.0, 1).overlapped, 20.0, "one file: nothing overlaps");
    }

    use super::*;

    fn summit(nodes: usize) -> Machine {
        // Summit-like figures (Kurth et al. 2018): GPFS ~2.5 TB/s aggregate,
        // 2 x EDR InfiniBand (~23 GB/s) per node, NVMe ~2 GB/s write,
        // ~1.5 GB/s per read thread.
        Machine {
            nodes,
            ranks_per_node: 6,
            pfs_bw: 2.5e12,
            nic_bw: 23e9,
            local_write_bw: 2.1e9,
            read_threads: 8,
            thread_bw: 1.5e9,
        }
    }

    #[test]
    fn staged_reads_each_byte_once_and_naive_reads_per_node() {
        let m = Machine {
            nodes: 4,
            ranks_per_node: 1,
            pfs_bw: 1e9,
            nic_bw: 1e10,
            local_write_bw: 1e10,
            read_threads: 8,
            thread_bw: 1e9,
        };
        let d = Dataset { files: 32, file_size: 64 << 20, size_spread: 0.0, policy: Policy::PerNode(16), seed: 1 };
        let p = predict(&m, &d).unwrap();
        assert!((p.staged.read_amplification - 1.0).abs() < 1e-12);
        assert!((p.naive.read_amplification - 2.0).abs() < 1e-12);
        assert_eq!(p.staged.bottleneck, "file system aggregate bandwidth");
        assert!((p.speedup - 2.0).abs() < 1e-9, "{p:?}");
    }

    #[test]
    fn summit_scale_runs_and_names_a_bottleneck() {
        // 4608 nodes, 1500 files of 64 MiB per node out of 100k files.
        let d =
            Dataset { files: 100_000, file_size: 64 << 20, size_spread: 0.0, policy: Policy::PerNode(1500), seed: 3 };
        let p = predict(&summit(4608), &d).unwrap();
        assert!(p.naive.read_amplification > 60.0, "{}", p.naive.read_amplification);
        assert!(p.staged.seconds < p.naive.seconds);
        assert!(!p.staged.bottleneck.is_empty());
    }

    #[test]
    fn nonsense_inputs_are_refused() {
        let mut m = summit(4);
        m.nic_bw = 0.0;
        let d = Dataset { files: 8, file_size: 1, size_spread: 0.0, policy: Policy::Shard, seed: 0 };
        assert!(matches!(predict(&m, &d), Err(SimulateError::NotPositive("--nic-bw"))));
    }

    /// Spread sizes keep their median and are the same for a seed; the
    /// plan still reads each byte once.
    #[test]
    fn spread_sizes_are_reproducible_around_the_median() {
        let mut sizes = file_sizes(10_001, 1000, 0.5, 7);
        assert_eq!(sizes, file_sizes(10_001, 1000, 0.5, 7));
        assert_ne!(sizes, file_sizes(10_001, 1000, 0.5, 8));
        sizes.sort_unstable();
        assert!((950..1050).contains(&sizes[5000]), "median {}", sizes[5000]);
        assert!(sizes[0] < 500 && sizes[10_000] > 2000);
        assert_eq!(file_sizes(3, 9, 0.0, 1), [9, 9, 9]);
        let d = Dataset { files: 5000, file_size: 1 << 20, size_spread: 0.5, policy: Policy::PerNode(2000), seed: 1 };
        let p = predict(&summit(8), &d).unwrap();
        assert!((p.staged.read_amplification - 1.0).abs() < 1e-12);
        let e = predict(&summit(8), &Dataset { size_spread: f64::NAN, ..d }).unwrap_err();
        assert!(e.to_string().contains("--size-spread"), "{e}");
    }

    /// A hostile test's case: `--nodes 100000000` (or `--files 100000000`)
    /// allocated 14 GB within a minute. Refused before anything is
    /// allocated, with the estimate.
    #[test]
    fn a_model_too_large_for_memory_is_refused_before_allocating() {
        let d = Dataset { files: 8, file_size: 1, size_spread: 0.0, policy: Policy::Shard, seed: 0 };
        let started = std::time::Instant::now();
        let e = predict(&summit(100_000_000), &d).unwrap_err().to_string();
        assert!(e.contains("100000000 nodes x 6 ranks") && e.contains("GiB of memory"), "{e}");
        let many = Dataset { files: 100_000_000, ..d };
        let e = predict(&summit(4), &many).unwrap_err().to_string();
        assert!(e.contains("100000000 files"), "{e}");
        let replicated = Dataset { files: 1_000_000, policy: Policy::Replicate, ..d };
        assert!(predict(&summit(4608), &replicated).is_err(), "4.6 billion pairs");
        assert!(started.elapsed().as_secs() < 1, "refusing took {:?}", started.elapsed());
    }
}
