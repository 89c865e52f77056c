//! A rank's reads of a global shuffle served by `stager serve
//! --global-shuffle`: every epoch the ranks read one permutation of the
//! whole dataset (the batches of training from a full copy,
//! [`formats::global_order`]), though each node holds only its shard. Before
//! each read the rank asks its node's service for the file (`NEED`): it is
//! in the destination, or in the node's cache of files fetched from other
//! nodes ahead of need; after the read it says `DONE`, so the service may
//! evict it. Waiting for a file counts as staging wait
//! ([`Dataset::staging_wait_secs`]).
//!
//! The sampler ([`GlobalSampler`]) numbers a rank's reads `epoch *
//! per_rank + j`; indices from [`OWN`] up are this node's own samples
//! (whatever it holds), for a model that fits itself to a few samples
//! before training.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use formats::global_order::{GlobalOrder, ShuffleRecord, file_of_sample, train_samples};
use formats::manifest::Manifest;
use formats::service::{ServiceClient, ServiceError};

use crate::dataset::{Dataset, DatasetError};
use crate::sampler::Sampler;
use crate::served::FileOpener;

/// Where indices of this node's own samples begin.
pub const OWN: usize = 1 << 48;

/// Why a rank cannot read a global shuffle.
#[derive(Debug, thiserror::Error)]
pub enum GlobalError {
    /// The job is shaped otherwise than the service was told.
    #[error(
        "{}: the service serves a global shuffle for {served}, this job is {job}; \
         give `stager serve` the job's --batch, --shuffle-seed and --train-ranks-per-node",
        dest.display()
    )]
    Mismatch {
        /// The destination.
        dest: PathBuf,
        /// What the service serves.
        served: String,
        /// What the job is.
        job: String,
    },
    /// No service serves the destination any more.
    #[error("{}: no staging service serves this global shuffle (is `stager serve --global-shuffle` running?)", dest.display())]
    NoService {
        /// The destination.
        dest: PathBuf,
    },
    /// The service could not be asked.
    #[error(transparent)]
    Service(#[from] ServiceError),
    /// The first file could not be opened.
    #[error(transparent)]
    Dataset(#[from] DatasetError),
}

/// The rank reading: where it is in the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GlobalRank {
    /// Global rank (nodes hold consecutive ranks).
    pub rank: usize,
    /// Nodes.
    pub nodes: usize,
    /// Ranks on every node.
    pub ranks_per_node: usize,
    /// Samples per step on this rank.
    pub batch: usize,
    /// The training seed.
    pub seed: u64,
}

/// A rank's samples under a served global shuffle.
pub struct GlobalShare {
    dest: PathBuf,
    manifest: Manifest,
    record: ShuffleRecord,
    rank: usize,
    /// The file of each training sample, and each file's first sample.
    file_of_sample: Vec<usize>,
    first_sample: Vec<usize>,
    /// Training samples in files this node keeps.
    own: Vec<usize>,
    opener: FileOpener,
    clients: Mutex<Vec<ServiceClient>>,
    /// The last epoch's sequence.
    sequence: Mutex<Option<(u64, Arc<Vec<usize>>)>>,
    x_len: usize,
    y_len: usize,
    waited_ns: AtomicU64,
}

impl GlobalShare {
    /// Open `dest` (served with `record`, holding `manifest`'s files) for
    /// `me`, reading files with `opener`. Waits for this rank's first file
    /// to learn the samples' shapes.
    pub fn open(
        dest: &Path,
        manifest: Manifest,
        record: ShuffleRecord,
        me: GlobalRank,
        opener: FileOpener,
    ) -> Result<GlobalShare, GlobalError> {
        let order = GlobalOrder {
            samples: record.order.samples,
            nodes: me.nodes,
            ranks_per_node: me.ranks_per_node,
            batch: me.batch,
            seed: me.seed,
        };
        let samples = train_samples(&manifest, record.train_under.as_deref());
        if order != record.order || samples.iter().sum::<usize>() != record.order.samples {
            let show = |o: &GlobalOrder| {
                format!(
                    "{} samples, {} nodes of {} ranks, batch {}, seed {}",
                    o.samples, o.nodes, o.ranks_per_node, o.batch, o.seed
                )
            };
            return Err(GlobalError::Mismatch {
                dest: dest.to_owned(),
                served: show(&record.order),
                job: show(&order),
            });
        }
        let node = me.rank / me.ranks_per_node.max(1);
        let file_of_sample = file_of_sample(&samples);
        let first_sample = samples.iter().scan(0, |at, &n| Some(std::mem::replace(at, *at + n))).collect();
        let own = (0..file_of_sample.len()).filter(|&s| record.holders[file_of_sample[s]] == Some(node)).collect();
        let client = ServiceClient::connect(dest, &format!("rank {} (global shuffle)", me.rank))?
            .ok_or_else(|| GlobalError::NoService { dest: dest.to_owned() })?;
        let mut share = GlobalShare {
            dest: dest.to_owned(),
            manifest,
            record,
            rank: me.rank,
            file_of_sample,
            first_sample,
            own,
            opener,
            clients: Mutex::new(vec![client]),
            sequence: Mutex::new(None),
            x_len: 0,
            y_len: 0,
            waited_ns: AtomicU64::new(0),
        };
        // The first read's file, asked for but not read: its read comes.
        let (file, dir, ..) = share.locate_read(0)?;
        let probe = (share.opener)(&dir, &share.manifest, &[file])?;
        (share.x_len, share.y_len) = (probe.x_len(), probe.y_len());
        Ok(share)
    }

    /// Reads per epoch on this rank.
    pub fn per_rank(&self) -> usize {
        self.record.order.per_rank()
    }

    /// Samples per rank per step the service was told.
    pub fn batch(&self) -> usize {
        self.record.order.batch
    }

    /// Epochs the service fetches for.
    pub fn epochs(&self) -> u64 {
        self.record.epochs
    }

    /// The sampler numbering this rank's reads.
    pub fn sampler(&self) -> GlobalSampler {
        GlobalSampler { per_rank: self.per_rank() }
    }

    /// The first `n` of this node's own samples, as indices to read.
    pub fn own_samples(&self, n: usize) -> Vec<usize> {
        (0..n.min(self.own.len())).map(|k| OWN + k).collect()
    }

    fn client(&self) -> Result<ServiceClient, DatasetError> {
        let idle = self.clients.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match idle {
            Some(client) => Ok(client),
            None => {
                ServiceClient::connect(&self.dest, &format!("rank {} (global shuffle)", self.rank))?.ok_or_else(|| {
                    DatasetError::Service(ServiceError::Ended {
                        dest: self.dest.clone(),
                        request: "HELLO (the service's socket is gone)".into(),
                    })
                })
            }
        }
    }

    fn sequence(&self, epoch: u64) -> Arc<Vec<usize>> {
        let mut last = self.sequence.lock().unwrap_or_else(|p| p.into_inner());
        match &*last {
            Some((e, sequence)) if *e == epoch => sequence.clone(),
            _ => {
                let sequence = Arc::new(self.record.order.sequence(epoch));
                *last = Some((epoch, sequence.clone()));
                sequence
            }
        }
    }

    /// Read `index`'s file, directory, sample within the file and
    /// position in the node's reads, once the service said where the file
    /// is (`NEED`; asking again for the same read is harmless).
    fn locate_read(&self, index: usize) -> Result<(usize, PathBuf, usize, u64), DatasetError> {
        let per_rank = self.per_rank().max(1);
        let (epoch, j) = ((index / per_rank) as u64, index % per_rank);
        if epoch >= self.record.epochs {
            return Err(DatasetError::OutOfRange { index, len: per_rank * self.record.epochs as usize });
        }
        let read = self.record.order.read_in(&self.sequence(epoch), epoch, self.rank, j);
        let file = self.file_of_sample[read.sample];
        let path = &self.manifest.files[file].path;
        let mut client = self.client()?;
        let started = Instant::now();
        let cached = client.need(read.position as u64, path).map_err(|e| self.naming_holder(e, file))?;
        self.waited_ns.fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.clients.lock().unwrap_or_else(|p| p.into_inner()).push(client);
        let dir = if cached { self.record.cache_dir.clone() } else { self.dest.clone() };
        Ok((file, dir, read.sample - self.first_sample[file], read.position as u64))
    }

    /// A lost service named with the node holding what was asked for.
    fn naming_holder(&self, error: ServiceError, file: usize) -> DatasetError {
        match (error, self.record.holders[file]) {
            (ServiceError::Ended { dest, request }, Some(node)) => DatasetError::Service(ServiceError::Ended {
                dest,
                request: format!("{request}: {} held by node {node}", self.manifest.files[file].path),
            }),
            (error, _) => DatasetError::Service(error),
        }
    }

    /// Read `index` into `read`, asking the service first and telling it after.
    fn with_sample<T>(
        &self,
        index: usize,
        read: impl FnOnce(&dyn Dataset, usize) -> Result<T, DatasetError>,
    ) -> Result<T, DatasetError> {
        if index >= OWN {
            let sample = *self.own.get(index - OWN).ok_or(DatasetError::OutOfRange { index, len: self.own.len() })?;
            let file = self.file_of_sample[sample];
            let mut client = self.client()?;
            client.wait(&self.manifest.files[file].path)?;
            self.clients.lock().unwrap_or_else(|p| p.into_inner()).push(client);
            let dataset = (self.opener)(&self.dest, &self.manifest, &[file])?;
            return read(&*dataset, sample - self.first_sample[file]);
        }
        let (file, dir, local, position) = self.locate_read(index)?;
        let dataset = (self.opener)(&dir, &self.manifest, &[file])?;
        let value = read(&*dataset, local)?;
        drop(dataset);
        let mut client = self.client()?;
        client.done(position)?;
        self.clients.lock().unwrap_or_else(|p| p.into_inner()).push(client);
        Ok(value)
    }
}

impl Dataset for GlobalShare {
    fn len(&self) -> usize {
        self.per_rank() * self.record.epochs as usize
    }
    fn x_len(&self) -> usize {
        self.x_len
    }
    fn y_len(&self) -> usize {
        self.y_len
    }
    fn read_into(&self, index: usize, x: &mut [f32], y: &mut [f32]) -> Result<u64, DatasetError> {
        self.with_sample(index, |d, local| d.read_into(local, x, y))
    }
    fn read_ragged(&self, index: usize, x: &mut [f32], y: &mut Vec<f32>) -> Result<u64, DatasetError> {
        self.with_sample(index, |d, local| d.read_ragged(local, x, y))
    }
    fn staging_wait_secs(&self) -> f64 {
        self.waited_ns.load(Ordering::Relaxed) as f64 * 1e-9
    }
    fn locate(&self, index: usize) -> String {
        if index >= OWN {
            return format!("own sample {}", index - OWN);
        }
        let per_rank = self.per_rank().max(1);
        let epoch = (index / per_rank) as u64;
        if epoch >= self.record.epochs {
            return format!("read {index}");
        }
        let read = self.record.order.read_in(&self.sequence(epoch), epoch, self.rank, index % per_rank);
        let file = self.file_of_sample[read.sample];
        format!(
            "epoch {epoch} read {} ({}, sample {})",
            index % per_rank,
            self.manifest.files[file].path,
            read.sample - self.first_sample[file]
        )
    }
}

/// A rank's reads of a global shuffle, numbered `epoch * per_rank + j`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GlobalSampler {
    /// Reads per epoch.
    pub per_rank: usize,
}

impl Sampler for GlobalSampler {
    fn order(&self, epoch: u64, _batch: usize) -> Vec<usize> {
        let start = epoch as usize * self.per_rank;
        (start..start + self.per_rank).collect()
    }

    fn per_rank(&self, _batch: usize) -> usize {
        self.per_rank
    }
}
