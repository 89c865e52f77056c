//! What a staging service knows about its node's destination while it
//! fills: which files are in place, what failed, and each client's waits.
//! The staging threads write it ([`StageObserver`]); the socket side reads
//! it and wakes the waiting clients. No I/O here.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use formats::manifest::Manifest;
use serde::Serialize;
use tokio::sync::Notify;

use crate::stage::{SetupError, StageObserver};

/// Where a file waited for stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileState {
    /// In place: read it.
    Ready,
    /// Not yet.
    Pending,
    /// It will never be: the stage failed, and why.
    Failed(String),
    /// Not a file this node holds.
    Unknown,
}

/// One client's waiting, as `stager status` shows it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ClientWaits {
    /// The name it gave.
    pub name: String,
    /// Files it asked for.
    pub asked: u64,
    /// Of those, the ones it had to wait for.
    pub waited: u64,
    /// Seconds spent waiting, over all its requests.
    pub wait_secs: f64,
    /// The file it waits for now.
    pub waiting_for: Option<String>,
}

/// The service's progress, as `stager status --json` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// `opening`, `staging`, `staged` or `failed`.
    pub phase: &'static str,
    /// Node this service runs on.
    pub node: usize,
    /// Files this node holds when staged.
    pub files: usize,
    /// Of those, in place.
    pub files_ready: usize,
    /// Bytes this node holds when staged.
    pub bytes: u64,
    /// Of those, in place.
    pub bytes_ready: u64,
    /// Files some client waits for now.
    pub files_waited_for: usize,
    /// Seconds since the service started.
    pub elapsed_secs: f64,
    /// Seconds left at this run's rate so far (`None` before a byte moved).
    pub eta_secs: Option<f64>,
    /// Why the stage failed.
    pub error: Option<String>,
    /// Every client that connected.
    pub clients: Vec<ClientWaits>,
}

struct Progress {
    /// Per manifest file: `Some(ready)` for this node's files.
    ready: Vec<Option<bool>>,
    files: usize,
    files_ready: usize,
    bytes: u64,
    bytes_ready: u64,
    /// Bytes in place when this run opened the destination (not this run's).
    bytes_held: u64,
    opened: bool,
    failed: Option<String>,
    clients: Vec<ClientWaits>,
}

/// The state shared by the staging threads and the socket side.
pub struct ServiceState {
    node: usize,
    sizes: Vec<u64>,
    paths: HashMap<String, usize>,
    started: Instant,
    progress: Mutex<Progress>,
    /// Woken whenever a file is placed or the stage fails.
    pub changed: Notify,
    /// The same, for threads that block ([`wait_placed`](Self::wait_placed)).
    placed: Condvar,
    /// A global shuffle's reads, when the service serves one.
    global: OnceLock<Arc<super::global::GlobalReads>>,
}

impl ServiceState {
    /// The state of node `node`'s service over `manifest` (nothing in place
    /// until [`opened`](StageObserver::opened) says what is).
    pub fn new(manifest: &Manifest, node: usize) -> ServiceState {
        ServiceState::of_files(manifest.files.iter().map(|f| (f.path.clone(), f.bytes)), node)
    }

    /// The state over files given as (path, bytes) in manifest order.
    pub fn of_files(files: impl Iterator<Item = (String, u64)>, node: usize) -> ServiceState {
        let (paths, sizes): (Vec<String>, Vec<u64>) = files.unzip();
        let paths = paths.into_iter().enumerate().map(|(i, path)| (path, i)).collect();
        let progress = Progress {
            ready: vec![None; sizes.len()],
            files: 0,
            files_ready: 0,
            bytes: 0,
            bytes_ready: 0,
            bytes_held: 0,
            opened: false,
            failed: None,
            clients: Vec::new(),
        };
        ServiceState {
            node,
            sizes,
            paths,
            started: Instant::now(),
            progress: Mutex::new(progress),
            changed: Notify::new(),
            placed: Condvar::new(),
            global: OnceLock::new(),
        }
    }

    fn progress(&self) -> std::sync::MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Where `path` (as the manifest names it) stands.
    pub fn file(&self, path: &str) -> FileState {
        match self.paths.get(path) {
            Some(&f) => self.file_at(f),
            None => self.file_at(usize::MAX),
        }
    }

    /// Where manifest file `file` stands.
    pub fn file_at(&self, file: usize) -> FileState {
        let p = self.progress();
        let ready = p.ready.get(file).copied().flatten();
        match (ready, &p.failed) {
            (Some(true), _) => FileState::Ready,
            (_, Some(why)) => FileState::Failed(why.clone()),
            (None, None) if p.opened => FileState::Unknown,
            _ => FileState::Pending,
        }
    }

    /// Block until this node's copy of manifest file `file` is in place
    /// (`Err`: it never will be, and why): what another node's fetch of it
    /// waits for while the stage still writes it.
    pub fn wait_placed(&self, file: usize) -> Result<(), String> {
        let mut p = self.progress();
        loop {
            match (p.ready.get(file).copied().flatten(), &p.failed) {
                (Some(true), _) => return Ok(()),
                (_, Some(why)) => return Err(why.clone()),
                (None, None) if p.opened => return Err(format!("file {file} is not one this node holds")),
                _ => p = self.placed.wait(p).unwrap_or_else(|e| e.into_inner()),
            }
        }
    }

    /// Serve a global shuffle's reads (once, before any client connects).
    pub fn set_global(&self, reads: Arc<super::global::GlobalReads>) {
        let _ = self.global.set(reads);
    }

    /// The global shuffle's reads, when the service serves one.
    pub fn global(&self) -> Option<&Arc<super::global::GlobalReads>> {
        self.global.get()
    }

    /// Register a client; its index for [`waited`](Self::waited).
    pub fn client(&self, name: &str) -> usize {
        let mut p = self.progress();
        p.clients.push(ClientWaits { name: name.to_owned(), ..ClientWaits::default() });
        p.clients.len() - 1
    }

    /// Client `client` starts waiting for `path` (`None`: it stopped).
    pub fn waiting(&self, client: usize, path: Option<&str>) {
        if let Some(c) = self.progress().clients.get_mut(client) {
            c.waiting_for = path.map(str::to_owned);
        }
    }

    /// Client `client` was answered after `secs` (0 when the file was in
    /// place when asked).
    pub fn waited(&self, client: usize, secs: Option<f64>) {
        if let Some(c) = self.progress().clients.get_mut(client) {
            c.asked += 1;
            c.waiting_for = None;
            if let Some(secs) = secs {
                c.waited += 1;
                c.wait_secs += secs;
            }
        }
    }

    /// Block until no client waits any more (each was answered), or
    /// `timeout` passed.
    pub fn until_answered(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while self.progress().clients.iter().any(|c| c.waiting_for.is_some()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// The progress now.
    pub fn status(&self) -> Status {
        let p = self.progress();
        let elapsed = self.started.elapsed().as_secs_f64();
        let moved = p.bytes_ready - p.bytes_held;
        let left = p.bytes - p.bytes_ready;
        let phase = match (&p.failed, p.opened, left) {
            (Some(_), ..) => "failed",
            (None, false, _) => "opening",
            (None, true, 0) => "staged",
            (None, true, _) => "staging",
        };
        Status {
            phase,
            node: self.node,
            files: p.files,
            files_ready: p.files_ready,
            bytes: p.bytes,
            bytes_ready: p.bytes_ready,
            files_waited_for: p.clients.iter().filter(|c| c.waiting_for.is_some()).count(),
            elapsed_secs: elapsed,
            eta_secs: (moved > 0).then(|| left as f64 / (moved as f64 / elapsed.max(1e-9))),
            error: p.failed.clone(),
            clients: p.clients.clone(),
        }
    }
}

impl StageObserver for ServiceState {
    fn opened(&self, _dest: &std::path::Path, held: &[usize], remaining: &[usize]) -> Result<(), SetupError> {
        let mut p = self.progress();
        for &f in held {
            p.ready[f] = Some(true);
            p.bytes_held += self.sizes[f];
        }
        for &f in remaining {
            p.ready[f] = Some(false);
        }
        p.files = held.len() + remaining.len();
        p.files_ready = held.len();
        p.bytes = held.iter().chain(remaining).map(|&f| self.sizes[f]).sum();
        p.bytes_ready = p.bytes_held;
        p.opened = true;
        drop(p);
        self.changed.notify_waiters();
        self.placed.notify_all();
        Ok(())
    }

    fn placed(&self, file: usize) {
        let mut p = self.progress();
        if p.ready.get(file) == Some(&Some(false)) {
            p.ready[file] = Some(true);
            p.files_ready += 1;
            p.bytes_ready += self.sizes[file];
        }
        drop(p);
        self.changed.notify_waiters();
        self.placed.notify_all();
    }

    fn failed(&self, message: &str) {
        self.progress().failed.get_or_insert_with(|| message.to_owned());
        self.changed.notify_waiters();
        self.placed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(files: u64) -> ServiceState {
        ServiceState::of_files((0..files).map(|i| (format!("f{i}"), 10 * (i + 1))), 0)
    }

    #[test]
    fn files_go_from_pending_to_ready_and_failure_answers_the_rest() {
        let state = state(4);
        assert_eq!(state.file("f1"), FileState::Pending, "before the destination is opened");
        state.opened(std::path::Path::new("/d"), &[0], &[1, 2]).unwrap();
        assert_eq!(state.file("f0"), FileState::Ready, "held from an earlier run");
        assert_eq!(state.file("f1"), FileState::Pending);
        assert_eq!(state.file("f3"), FileState::Unknown, "another node's file");
        assert_eq!(state.file("nope"), FileState::Unknown);
        state.placed(1);
        state.placed(1);
        assert_eq!(state.file("f1"), FileState::Ready);
        let status = state.status();
        assert_eq!((status.phase, status.files, status.files_ready), ("staging", 3, 2));
        assert_eq!((status.bytes, status.bytes_ready), (60, 30));
        state.failed("disk full");
        assert_eq!(state.file("f2"), FileState::Failed("disk full".into()));
        assert_eq!(state.file("f1"), FileState::Ready, "what is in place stays readable");
        assert_eq!(state.status().phase, "failed");
    }

    #[test]
    fn client_waits_are_counted() {
        let state = state(2);
        state.opened(std::path::Path::new("/d"), &[], &[0, 1]).unwrap();
        let c = state.client("rank 0");
        state.waiting(c, Some("f0"));
        assert_eq!(state.status().files_waited_for, 1);
        state.waited(c, Some(0.5));
        state.waited(c, None);
        let s = state.status();
        assert_eq!((s.clients[0].asked, s.clients[0].waited, s.clients[0].wait_secs), (2, 1, 0.5));
        assert_eq!(s.files_waited_for, 0);
    }
}
