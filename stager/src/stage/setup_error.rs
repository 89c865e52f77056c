//! Why a rank cannot start a stage, or report one finished: what is found
//! before data moves (options, the destination, the lock, room) and when
//! what was written is counted. Each variant keeps its cause, printed by
//! `cluster::logging::chain`.

use std::io;
use std::path::PathBuf;

use cluster::paths::TemplateError;
use formats::placement::PlacementError;
use formats::placement_record::RecordError;

use crate::destination::lock::LockError;
use crate::plan::PlanError;

/// A stage that cannot start (or cannot be reported finished) on this rank.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// An option no run can use, or a destination this job's ranks cannot
    /// use as given; the message says which and what to do instead.
    #[error("{0}")]
    Refused(String),
    /// A file-system call failed: `doing` names it, `path` what it was on.
    #[error("{doing} {}", path.display())]
    Io {
        /// What the rank was doing ("creating", "clearing", ...).
        doing: &'static str,
        /// The path it was doing it on.
        path: PathBuf,
        /// Cause.
        #[source]
        source: io::Error,
    },
    /// The staging service's socket path is longer than a Unix socket
    /// address holds.
    #[error(
        "the service socket {} is {len} bytes long; a Unix socket path holds at most {}: use a shorter --dest",
        path.display(),
        formats::service::MAX_SOCKET_PATH
    )]
    SocketTooLong {
        /// The socket path.
        path: PathBuf,
        /// Its length in bytes.
        len: usize,
    },
    /// `--dest` does not expand.
    #[error("--dest")]
    Template(#[from] TemplateError),
    /// Another job holds the destination, or its lock cannot be taken.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The destination's placement record cannot be cleared or written.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// Which node needs which files cannot be decided.
    #[error(transparent)]
    Placement(#[from] PlacementError),
    /// The transfer plan cannot be built.
    #[error(transparent)]
    Plan(#[from] PlanError),
}

impl SetupError {
    /// An `Io` error of `doing` on `path`: for `map_err`.
    pub fn io(doing: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> SetupError {
        let path = path.into();
        move |source| SetupError::Io { doing, path, source }
    }
}
