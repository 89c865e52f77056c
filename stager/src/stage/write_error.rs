//! Why a rank could not put a file into its node's destination: the one
//! error type of the fan-out's writers, the local writer and `--naive`,
//! each variant naming the file and keeping its cause.

use std::io;
use std::path::PathBuf;

use formats::checksum::Checksum;

use crate::destination::part::PlaceError;

/// A file that could not be written, checked, placed or journaled.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// A chunk of a file this node does not expect, or of another length
    /// than its head announced.
    #[error("unexpected chunk of file {file} from rank {from}")]
    UnexpectedChunk {
        /// The manifest index the chunk names.
        file: usize,
        /// The sending rank.
        from: usize,
    },
    /// A body of another length than its head announced.
    #[error("rank {from} sent {sent} bytes after announcing {announced}")]
    BodyLength {
        /// The sending rank.
        from: usize,
        /// Bytes it sent.
        sent: usize,
        /// Bytes its head announced.
        announced: usize,
    },
    /// The temporary file could not be created.
    #[error("creating the temporary file of {path}: {source}")]
    Create {
        /// The file's manifest path.
        path: String,
        /// Cause.
        source: io::Error,
    },
    /// Reading the source or writing the temporary file failed.
    #[error("{doing} {path}: {source}")]
    Write {
        /// `writing` or `copying`.
        doing: &'static str,
        /// The file's manifest path.
        path: String,
        /// Cause.
        source: io::Error,
    },
    /// The bytes are not the manifest's.
    #[error("{path} {how} has {bytes} bytes and xxh3 {xxh3}, the manifest says {expected_bytes} bytes and {expected}")]
    Differs {
        /// The file (a source path, or the manifest path of what arrived).
        path: PathBuf,
        /// `as read` or `as it arrived`.
        how: &'static str,
        /// Bytes found.
        bytes: u64,
        /// Hash found.
        xxh3: Checksum,
        /// Bytes the manifest gives.
        expected_bytes: u64,
        /// Hash the manifest gives.
        expected: Checksum,
    },
    /// The checked temporary file could not be renamed into place.
    #[error(transparent)]
    Place(#[from] PlaceError),
    /// The placed file could not be journaled.
    #[error("journaling {path} in {}: {source}", journal.display())]
    Journal {
        /// The file's manifest path.
        path: String,
        /// The journal.
        journal: PathBuf,
        /// Cause.
        source: io::Error,
    },
}
