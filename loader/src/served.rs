//! A node's staged files while a staging service still fills the
//! destination (`stager serve`): each file is opened the first time one
//! of its samples is read, after the service says it is in place, so
//! training starts on the first files staged and waits only for files not
//! there yet. The time spent waiting is counted apart from ordinary data
//! wait ([`Dataset::staging_wait_secs`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use formats::manifest::Manifest;
use formats::service::{START_WAIT_VAR, ServiceClient, ServiceError};

use crate::dataset::{Dataset, DatasetError};

/// Opens the samples of some files of a dataset (manifest indices): a
/// reader's dataset constructor, kept so files can be opened one by one.
pub type FileOpener = Arc<dyn Fn(&Path, &Manifest, &[usize]) -> Result<Arc<dyn Dataset>, DatasetError> + Send + Sync>;

/// The [`FileOpener`] of a dataset that opens from its sample files'
/// paths alone (`open(paths)`, as the manifest lists them).
pub fn path_opener<D: Dataset + 'static>(open: fn(&[PathBuf]) -> Result<D, DatasetError>) -> FileOpener {
    Arc::new(move |dir: &Path, manifest: &Manifest, files: &[usize]| {
        Ok(Arc::new(open(&crate::catalog::sample_paths(dir, manifest, Some(files)))?) as Arc<dyn Dataset>)
    })
}

/// Whether `dest` is served by a staging service, waiting for one that has
/// not started yet as long as `STAGEHAND_SERVICE_WAIT` says (seconds; not
/// at all when unset): a job launching training and `stager serve` at the
/// same moment sets it (`deploy/slurm/stage-while-train.sbatch` does).
pub fn served(dest: &Path) -> Result<bool, ServiceError> {
    let patience = match std::env::var(START_WAIT_VAR) {
        Err(_) => Duration::ZERO,
        Ok(text) => text
            .trim()
            .parse::<f64>()
            .ok()
            .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
            .ok_or_else(|| ServiceError::StartWait { dest: dest.to_owned(), value: text.clone() })?,
    };
    let socket = formats::service::socket_path(dest);
    if !patience.is_zero() && !socket.exists() {
        tracing::info!("{}: waiting up to {:.0} s for a staging service", dest.display(), patience.as_secs_f64());
    }
    formats::service::await_start(dest, patience)
}

/// Connections to a destination's staging service, one per thread that
/// waits at the same time.
pub struct Waiter {
    dest: PathBuf,
    name: String,
    idle: Mutex<Vec<ServiceClient>>,
    /// Nanoseconds spent waiting for files not yet in place.
    waited_ns: AtomicU64,
    /// Files waited for.
    waits: AtomicU64,
}

impl Waiter {
    /// A waiter on `dest`'s service, or `None` when no service serves it.
    /// `name` is what `stager status` shows for this client.
    pub fn connect(dest: &Path, name: &str) -> Result<Option<Arc<Waiter>>, ServiceError> {
        Ok(ServiceClient::connect(dest, name)?.map(|client| {
            Arc::new(Waiter {
                dest: dest.to_owned(),
                name: name.to_owned(),
                idle: Mutex::new(vec![client]),
                waited_ns: AtomicU64::new(0),
                waits: AtomicU64::new(0),
            })
        }))
    }

    /// Block until every one of `paths` is in place.
    pub fn wait(&self, paths: &[&str]) -> Result<(), ServiceError> {
        let taken = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let mut client = match taken {
            Some(client) => client,
            None => ServiceClient::connect(&self.dest, &self.name)?.ok_or_else(|| ServiceError::Ended {
                dest: self.dest.clone(),
                request: format!("WAIT {}", paths.first().copied().unwrap_or_default()),
            })?,
        };
        let started = Instant::now();
        for path in paths {
            client.wait(path)?;
        }
        self.waited_ns.fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.waits.fetch_add(1, Ordering::Relaxed);
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).push(client);
        Ok(())
    }

    /// Seconds spent waiting for the service so far.
    pub fn waited_secs(&self) -> f64 {
        self.waited_ns.load(Ordering::Relaxed) as f64 * 1e-9
    }
}

/// The samples of a node's files, each file opened on first use once the
/// service has it.
pub struct ServedFiles {
    dir: PathBuf,
    manifest: Manifest,
    /// Manifest indices of the sample files, ascending.
    files: Vec<usize>,
    /// Each sample file's paths to wait for: itself and the files that
    /// travel with it (index sidecars).
    waits_for: Vec<Vec<String>>,
    /// Local id of each file's first sample, and the total at the end.
    starts: Vec<usize>,
    opener: FileOpener,
    opened: Vec<OnceLock<Arc<dyn Dataset>>>,
    waiter: Arc<Waiter>,
    x_len: usize,
    y_len: usize,
}

impl ServedFiles {
    /// The samples of `files` (manifest indices, ascending) of `dir`,
    /// holding `counts[f]` samples each, opened by `opener` as they are
    /// first read. `first` (a position in `files`) is opened now, waiting
    /// for it if need be, to learn the samples' shapes: pass the file this
    /// rank reads first.
    pub fn open(
        dir: &Path,
        manifest: &Manifest,
        files: Vec<usize>,
        counts: &[u64],
        opener: FileOpener,
        waiter: Arc<Waiter>,
        first: usize,
    ) -> Result<ServedFiles, DatasetError> {
        let followers = manifest.followers();
        let waits_for = files
            .iter()
            .map(|&f| {
                let travelling = (0..followers.len()).filter(|&g| followers[g] == Some(f));
                std::iter::once(f).chain(travelling).map(|g| manifest.files[g].path.clone()).collect()
            })
            .collect();
        let starts = std::iter::once(0)
            .chain(files.iter().scan(0usize, |at, &f| {
                *at += counts[f] as usize;
                Some(*at)
            }))
            .collect();
        let opened = (0..files.len()).map(|_| OnceLock::new()).collect();
        let mut served = ServedFiles {
            dir: dir.to_owned(),
            manifest: manifest.clone(),
            files,
            waits_for,
            starts,
            opener,
            opened,
            waiter,
            x_len: 0,
            y_len: 0,
        };
        if !served.files.is_empty() {
            let probe = served.file(first.min(served.files.len() - 1))?;
            (served.x_len, served.y_len) = (probe.x_len(), probe.y_len());
        }
        Ok(served)
    }

    /// The position in `files` of the file holding local sample `index`.
    fn position(&self, index: usize) -> Result<usize, DatasetError> {
        if index >= self.len() {
            return Err(DatasetError::OutOfRange { index, len: self.len() });
        }
        Ok(self.starts.partition_point(|&s| s <= index) - 1)
    }

    /// File `k` of `files`, opened (after waiting for it) on first use.
    fn file(&self, k: usize) -> Result<&Arc<dyn Dataset>, DatasetError> {
        if let Some(opened) = self.opened[k].get() {
            return Ok(opened);
        }
        let paths: Vec<&str> = self.waits_for[k].iter().map(String::as_str).collect();
        self.waiter.wait(&paths)?;
        let dataset = (self.opener)(&self.dir, &self.manifest, &self.files[k..=k])?;
        // Two threads may open the same file at once; one copy is kept.
        Ok(self.opened[k].get_or_init(|| dataset))
    }

    fn local(&self, index: usize) -> Result<(&Arc<dyn Dataset>, usize), DatasetError> {
        let k = self.position(index)?;
        Ok((self.file(k)?, index - self.starts[k]))
    }
}

impl Dataset for ServedFiles {
    fn len(&self) -> usize {
        self.starts.last().copied().unwrap_or(0)
    }
    fn x_len(&self) -> usize {
        self.x_len
    }
    fn y_len(&self) -> usize {
        self.y_len
    }
    fn read_into(&self, index: usize, x: &mut [f32], y: &mut [f32]) -> Result<u64, DatasetError> {
        let (file, local) = self.local(index)?;
        file.read_into(local, x, y)
    }
    fn read_ragged(&self, index: usize, x: &mut [f32], y: &mut Vec<f32>) -> Result<u64, DatasetError> {
        let (file, local) = self.local(index)?;
        file.read_ragged(local, x, y)
    }
    fn staging_wait_secs(&self) -> f64 {
        self.waiter.waited_secs()
    }
    fn locate(&self, index: usize) -> String {
        match self.position(index) {
            Ok(k) => format!(
                "sample {index} ({}, sample {})",
                self.manifest.files[self.files[k]].path,
                index - self.starts[k]
            ),
            Err(_) => format!("sample {index}"),
        }
    }
}
