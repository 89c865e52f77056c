//! `stager serve`: staging as a service that runs beside training. One rank
//! per node stages the dataset as `stager stage` does (the same plan and
//! fan-out, each file read from the source once), but reads the files in
//! the order training will first need them ([`first_needed_order`]), and
//! answers the node's training processes over a Unix socket in the
//! destination ([`server`]): a client asks for a file and gets its answer
//! once it is in place. When the stage is done the service stays up,
//! answering at once, until it is stopped (`stager stop`, SIGTERM).
//!
//! A stop while files are still moving ends the job as a failure does:
//! temporary files are dropped, what the journal recorded stays, and a
//! restarted service stages only the rest.

pub mod global;
pub mod server;
pub mod state;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cluster::{ThreadComm, World};
use formats::manifest::Manifest;
use formats::placement::PlacementError;
use formats::sampling::{Remainder, first_needed};
use mpi::traits::*;

use crate::peers::cache::Cache;
use crate::peers::{Holdings, Nodes, PeerConfig, PeerError, PeerStats, Progress};
use crate::stage::{ReadOrder, SetupError, StageConfig, StageError, StageObserver, StageOutcome};
use formats::global_order::ShuffleRecord;
use global::{GlobalConfig, GlobalError, GlobalPlan, GlobalReads};
use server::{Bound, OnStop};
use state::ServiceState;

/// Tag of the message a stopping rank sends every other (world
/// communicator, after staging).
const TAG_STOP: i32 = 20;

/// How to serve.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// How to stage (its `order` is replaced by the training order).
    pub stage: StageConfig,
    /// Training processes per node: how many read the node's samples per
    /// step.
    pub train_ranks_per_node: usize,
    /// Only files under this prefix hold training samples (for example
    /// `train/` where `validation/` is read after the epoch); all by default.
    pub train_under: Option<String>,
    /// Serve a global shuffle: fetch the files the node's ranks will read
    /// from the nodes holding them ([`global`]).
    pub global: Option<GlobalConfig>,
}

/// What a service did.
#[derive(Debug)]
pub struct Served {
    /// The stage.
    pub outcome: StageOutcome,
    /// With a global shuffle, what each node fetched and sent (`None` for
    /// a node stopped before it fetched every read).
    pub peers: Option<Vec<Option<PeerStats>>>,
}

/// The step of epoch 0 at which training first reads each file, as the
/// loaders of `nodes` nodes of `config.train_ranks_per_node` ranks will
/// read a destination staged with `config.stage`'s policy and seed.
pub fn first_needed_order(manifest: &Manifest, nodes: usize, config: &ServeConfig) -> Result<Vec<u64>, PlacementError> {
    let samples: Vec<u64> = manifest
        .files
        .iter()
        .map(|f| match &config.train_under {
            Some(prefix) if !f.path.starts_with(prefix.as_str()) => 0,
            _ => f.samples,
        })
        .collect();
    let sizes: Vec<u64> = manifest.files.iter().map(|f| f.bytes).collect();
    first_needed(
        &samples,
        &sizes,
        &manifest.followers(),
        &vec![config.train_ranks_per_node.max(1); nodes],
        (config.stage.policy, config.stage.seed),
        Remainder::Drop,
    )
}

/// Why a service could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// More than one rank on a node.
    #[error(
        "stager serve runs one rank per node (srun --ntasks-per-node=1, or mpirun --map-by ppr:1:node); \
         node {node} has {ranks}"
    )]
    RanksPerNode {
        /// The node.
        node: usize,
        /// Its ranks.
        ranks: usize,
    },
    /// MPI cannot be used from the service's threads.
    #[error("MPI did not grant MPI_THREAD_MULTIPLE, which the service needs")]
    NoThreadMultiple,
    /// The training order cannot be computed.
    #[error("the training order: {0}")]
    Order(#[from] PlacementError),
    /// The stage failed.
    #[error(transparent)]
    Stage(#[from] StageError),
    /// A global shuffle cannot be served.
    #[error(transparent)]
    Global(#[from] GlobalError),
    /// The destination template does not expand.
    #[error(transparent)]
    Template(#[from] cluster::paths::TemplateError),
    /// Fetching from other nodes failed.
    #[error("rank {rank} (node {node}): {source}")]
    Peers {
        /// The rank.
        rank: usize,
        /// Its node.
        node: usize,
        /// Why.
        source: PeerError,
    },
    /// Another node's fetching failed.
    #[error("node {node} could not fetch what its ranks read (see its message)")]
    PeersElsewhere {
        /// The node.
        node: usize,
    },
    /// The cache directory cannot be prepared.
    #[error("preparing the cache of other nodes' files {}: {source}", path.display())]
    Cache {
        /// The directory.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The node's service: told by the stage what is in place, and the stop
/// handler of its socket.
struct Service {
    state: Arc<ServiceState>,
    bound: Mutex<Option<Bound>>,
    stopper: Arc<Stopper>,
    /// Written into the destination before the socket is bound.
    record: Option<ShuffleRecord>,
}

/// What a stop request does: before the stage is done, end the job (the
/// journal keeps what is placed); after, let the main thread end it cleanly.
struct Stopper {
    comm: Arc<ThreadComm>,
    rank: usize,
    node: usize,
    state: Arc<ServiceState>,
    staged: AtomicBool,
    requested: AtomicBool,
    /// The node's destination, once opened: its temporary files go.
    dest: std::sync::OnceLock<std::path::PathBuf>,
}

impl OnStop for Stopper {
    fn stop(&self, why: &str) {
        if self.requested.swap(true, Ordering::SeqCst) || self.staged.load(Ordering::SeqCst) {
            return;
        }
        let status = self.state.status();
        if status.error.is_none() && status.files_ready == status.files && status.phase != "opening" {
            // Every file is in place; the stage is only finishing its
            // bookkeeping: the main thread sees the request once it has.
            return;
        }
        cluster::logging::print_error(format_args!(
            "rank {} (node {}): stopped by {why} while staging ({} of {} files in place, kept by the journal); \
             rerun `stager serve` to stage the rest",
            self.rank, self.node, status.files_ready, status.files
        ));
        self.state.failed(&format!("the service was stopped by {why}"));
        // Waiting clients get their answer from the socket's thread while
        // this one waits a moment, then ends the job.
        let comm = self.comm.clone();
        let dest = self.dest.get().cloned();
        std::thread::spawn(move || {
            // Cleared again after the pause: a writer may have begun a file
            // meanwhile. A restart clears what the end of the job still left.
            for pause in [Duration::ZERO, Duration::from_millis(200)] {
                std::thread::sleep(pause);
                if let Some(dest) = &dest {
                    let _ = crate::destination::journal::clear_temp(dest);
                }
            }
            comm.comm().abort(3)
        });
    }
}

impl StageObserver for Service {
    /// A socket path too long is refused before the placement record is
    /// written, so a refused service leaves the destination as it was.
    fn check(&self, dest: &std::path::Path) -> Result<(), SetupError> {
        server::check_socket_path(dest)
    }

    fn opened(&self, dest: &std::path::Path, held: &[usize], remaining: &[usize]) -> Result<(), SetupError> {
        self.state.opened(dest, held, remaining)?;
        let _ = self.stopper.dest.set(dest.to_owned());
        if let Some(record) = &self.record {
            record.write(dest).map_err(|e| SetupError::Refused(e.to_string()))?;
        }
        let bound = server::bind(dest)?;
        server::spawn(&bound, self.state.clone(), self.stopper.clone())
            .map_err(SetupError::io("starting the service thread for", dest))?;
        *self.bound.lock().unwrap_or_else(|p| p.into_inner()) = Some(bound);
        Ok(())
    }

    fn placed(&self, file: usize) {
        self.state.placed(file);
    }

    fn failed(&self, message: &str) {
        self.state.failed(message);
        // The job ends next: the socket's thread answers every waiting
        // client FAILED first (a moment at most), then new clients find no
        // service rather than a socket nobody listens on.
        self.state.until_answered(ANSWER_WAIT);
        remove_socket(self);
    }
}

/// How long a failing service waits for its waiting clients to be told.
const ANSWER_WAIT: Duration = Duration::from_secs(2);

/// Stage `manifest` as a service (collective, one rank per node): returns
/// once the stage is done and a stop was asked for on some node, with the
/// stage's outcome (and, serving a global shuffle, what was fetched).
pub fn serve(world: &World, manifest: &Manifest, config: &ServeConfig) -> Result<Served, ServeError> {
    let t = *world.topology();
    if let Some(node) = (0..t.nodes).find(|&n| world.ranks_of_node(n).len() != 1) {
        return Err(ServeError::RanksPerNode { node, ranks: world.ranks_of_node(node).len() });
    }
    let comm = world.thread_comm().ok_or(ServeError::NoThreadMultiple)?;
    let plan = match &config.global {
        None => None,
        Some(global) => Some(GlobalPlan::new(
            manifest,
            (t.nodes, config.train_ranks_per_node),
            (config.stage.policy, config.stage.seed),
            config.train_under.as_deref(),
            global,
        )?),
    };
    let order = match &plan {
        Some(plan) => plan.first_needed.clone(),
        None => first_needed_order(manifest, t.nodes, config)?,
    };
    let stage = StageConfig {
        order: ReadOrder::FirstNeeded(order),
        kept: plan.as_ref().map(|p| p.kept.clone()),
        ..config.stage.clone()
    };
    let state = Arc::new(ServiceState::new(manifest, t.node));
    let stopper = Arc::new(Stopper {
        comm: Arc::new(comm),
        rank: t.rank,
        node: t.node,
        state: state.clone(),
        staged: AtomicBool::new(false),
        requested: AtomicBool::new(false),
        dest: std::sync::OnceLock::new(),
    });
    let (Some(plan), Some(global)) = (plan, &config.global) else {
        let service = Service { state, bound: Mutex::new(None), stopper: stopper.clone(), record: None };
        let outcome = stage_then_wait(world, manifest, &stage, &service)?;
        return Ok(Served { outcome, peers: None });
    };
    // A global shuffle: the exchange runs beside the stage, on a
    // communicator of its own made now, while no other collective runs.
    let exchange_comm = world.thread_comm().ok_or(ServeError::NoThreadMultiple)?;
    let dest = crate::destination::node_destination(world, &config.stage.dest)?;
    let cache_dir = match &global.cache_dir {
        Some(template) => crate::destination::node_destination(world, template)?,
        None => formats::global_order::default_cache_dir(&dest),
    };
    // A cache is this run's: what an earlier one left is not accounted for.
    let fresh = |path: &std::path::Path| -> std::io::Result<()> {
        match std::fs::remove_dir_all(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        std::fs::create_dir_all(path)
    };
    fresh(&cache_dir).map_err(|source| ServeError::Cache { path: cache_dir.clone(), source })?;
    let reads = plan.node_files(t.node, global.epochs);
    let holders = plan.holders.clone();
    let notify = Arc::downgrade(&state);
    let progress = Arc::new(
        Progress::new(
            Cache::new(plan.cache[t.node], &reads, |f| holders[f] != Some(t.node)).with_rule(global.eviction),
        )
        .with_on_change(move || {
            if let Some(state) = notify.upgrade() {
                state.changed.notify_waiters();
            }
        }),
    );
    state.set_global(Arc::new(GlobalReads::new(
        manifest,
        (t.node, reads.clone()),
        plan.holders.clone(),
        progress.clone(),
        cache_dir.clone(),
    )));
    let record = ShuffleRecord {
        order: plan.order,
        epochs: global.epochs,
        train_under: config.train_under.clone(),
        holders: plan.holders.clone(),
        cache_dir: cache_dir.clone(),
    };
    let service =
        Service { state: state.clone(), bound: Mutex::new(None), stopper: stopper.clone(), record: Some(record) };
    let nodes = Nodes::of(world);
    let peer_config = PeerConfig { cache_dir: cache_dir.clone(), capacity: plan.cache[t.node], window: global.window };
    let ready = |f: usize| state.wait_placed(f);
    let holdings =
        Holdings { manifest, owner: &plan.holders, dest: &dest, source: &config.stage.source, ready: &ready };
    let (outcome, exchanged) = std::thread::scope(|scope| {
        let exchange = std::thread::Builder::new().name("stager-peers".into()).spawn_scoped(scope, || {
            crate::peers::exchange_on(&nodes, &exchange_comm, &holdings, &reads, &peer_config, &progress)
        });
        let outcome = stage_then_wait(world, manifest, &stage, &service);
        // Stopped (or failed): a fetcher still walking the reads ends.
        progress.fail(STOPPED);
        let exchanged = match exchange {
            Ok(handle) => handle.join().unwrap_or_else(|_| Err(PeerError::Failed("the fetcher panicked".into()))),
            Err(e) => Err(PeerError::Failed(format!("starting the fetcher: {e}"))),
        };
        (outcome, exchanged)
    });
    ShuffleRecord::remove(&dest);
    let _ = std::fs::remove_dir_all(&cache_dir);
    let outcome = outcome?;
    // Every node learns what every other fetched, or that one failed,
    // before any leaves: a rank returning early would hang the rest here.
    let (mine, failure) = match exchanged {
        Ok(stats) => (Some(stats), None),
        Err(PeerError::Failed(why)) if why == STOPPED => (None, None),
        Err(source) => (None, Some(source)),
    };
    let mut sent = [0u64; 8];
    sent[0] = if failure.is_some() { 2 } else { u64::from(mine.is_some()) };
    if let Some(s) = &mine {
        sent[1..].copy_from_slice(&[
            s.peer_files,
            s.peer_bytes,
            s.source_files,
            s.source_bytes,
            s.evicted,
            s.most_held,
            s.served_bytes,
        ]);
    }
    let mut all = vec![0u64; 8 * world.size()];
    world.comm().all_gather_into(&sent[..], &mut all[..]);
    if let Some(source) = failure {
        return Err(ServeError::Peers { rank: t.rank, node: t.node, source });
    }
    if let Some(node) = all.chunks_exact(8).position(|c| c[0] == 2) {
        return Err(ServeError::PeersElsewhere { node: world.node_of_rank()[node] });
    }
    let peers = all
        .chunks_exact(8)
        .map(|c| {
            (c[0] == 1).then(|| PeerStats {
                peer_files: c[1],
                peer_bytes: c[2],
                source_files: c[3],
                source_bytes: c[4],
                evicted: c[5],
                most_held: c[6],
                served_bytes: c[7],
            })
        })
        .collect();
    Ok(Served { outcome, peers: Some(peers) })
}

/// Why a fetcher stopped when its service did.
const STOPPED: &str = "the staging service stopped";

/// Stage as `service`, then serve until a stop is asked for.
fn stage_then_wait(
    world: &World,
    manifest: &Manifest,
    stage: &StageConfig,
    service: &Service,
) -> Result<StageOutcome, ServeError> {
    let outcome = crate::stage::stage_observed(world, manifest, stage, Some(service));
    service.stopper.staged.store(true, Ordering::SeqCst);
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e) => {
            remove_socket(service);
            return Err(e.into());
        }
    };
    if world.is_root() {
        tracing::info!("staged; serving until `stager stop` or SIGTERM");
    }
    wait_for_stop(world, &service.stopper.requested);
    remove_socket(service);
    Ok(outcome)
}

fn remove_socket(service: &Service) {
    if let Some(bound) = service.bound.lock().unwrap_or_else(|p| p.into_inner()).take() {
        bound.remove();
    }
}

/// Wait until this node is asked to stop (then tell every other rank) or
/// another rank says it was; then every rank leaves together.
fn wait_for_stop(world: &World, requested: &AtomicBool) {
    let comm = world.comm();
    loop {
        if requested.load(Ordering::SeqCst) {
            for rank in (0..world.size()).filter(|&r| r != world.rank()) {
                comm.process_at_rank(rank as i32).send_with_tag(&[0u8; 0][..], TAG_STOP);
            }
            break;
        }
        if let Some((message, _)) = comm.any_process().immediate_matched_probe_with_tag(TAG_STOP) {
            message.matched_receive_into(&mut [0u8; 0][..]);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    world.barrier();
    // Other ranks asked to stop as well: their notices are answered.
    while let Some((message, _)) = comm.any_process().immediate_matched_probe_with_tag(TAG_STOP) {
        message.matched_receive_into(&mut [0u8; 0][..]);
    }
}
