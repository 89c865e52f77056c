//! The staging service's side of a destination: where a serving stager
//! listens (`DEST/.stagehand/serve.sock`, with its per-job token beside it
//! in `serve.token`, both readable by the job's user only), the line
//! protocol its clients speak, and the blocking client the loaders, the
//! preload library and `stager status` use. The server is the stager's.
//!
//! ```text
//! client: HELLO <token> <client name>      server: OK | DENIED <why>
//! client: WAIT <file path in the manifest> server: READY | FAILED <why> | UNKNOWN
//! client: STATUS                           server: STATUS <one line of JSON>
//! client: STOP                             server: STOPPING
//! client: NEED <read position>             server: READY | CACHED | FAILED <why>
//! client: DONE <read position>             server: OK
//! ```
//!
//! `NEED` and `DONE` are a global shuffle's
//! ([`crate::global_order`]): a client names a read by its position in the
//! node's read sequence; `READY` says the file is in the destination,
//! `CACHED` that it is in the node's cache of other nodes' files, kept
//! there until the read is `DONE`.
//!
//! A `WAIT` is answered once the file is checked and renamed into place
//! (at once if it already is). A connection the server closes (the service
//! died) is an error for the client, never a wait without end.
//!
//! ```no_run
//! use formats::service::ServiceClient;
//!
//! let dest = std::path::Path::new("/tmp/bb/node0");
//! if let Some(mut client) = ServiceClient::connect(dest, "rank 0")? {
//!     client.wait("univ_0001.tfrecord")?;
//! }
//! # Ok::<(), formats::service::ServiceError>(())
//! ```

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::manifest::STATE_DIR;
use crate::placement_record::PlacementRecord;

/// The service's socket in a destination.
pub const SOCKET_FILE: &str = "serve.sock";
/// The file holding the service's per-job token.
pub const TOKEN_FILE: &str = "serve.token";
/// The environment variable giving how many seconds a client waits for a
/// staging service that has not started yet (0, the default: not at all).
pub const START_WAIT_VAR: &str = "STAGEHAND_SERVICE_WAIT";
/// The longest socket path `sun_path` holds (108 bytes on Linux, with its
/// terminating NUL).
pub const MAX_SOCKET_PATH: usize = 107;

/// `DEST/.stagehand/serve.sock`.
pub fn socket_path(dest: &Path) -> PathBuf {
    dest.join(STATE_DIR).join(SOCKET_FILE)
}

/// `DEST/.stagehand/serve.token`.
pub fn token_path(dest: &Path) -> PathBuf {
    dest.join(STATE_DIR).join(TOKEN_FILE)
}

/// Whether `dest` is served, after waiting up to `patience` for a service
/// that has not started yet. A training job started at the same moment as
/// its `stager serve` gets here before the service has written the
/// destination's placement record and bound its socket; with `patience`
/// it waits for the socket unless `dest` is already completely staged.
/// `Ok(false)`: no service (the destination is staged, or `patience` is
/// zero and the caller's opening of the record tells what is missing).
pub fn await_start(dest: &Path, patience: Duration) -> Result<bool, ServiceError> {
    let socket = socket_path(dest);
    if socket.exists() {
        return Ok(true);
    }
    if patience.is_zero() || PlacementRecord::open(dest).is_ok() {
        return Ok(false);
    }
    let deadline = Instant::now() + patience;
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        if socket.exists() {
            return Ok(true);
        }
    }
    Err(ServiceError::NotStarted { dest: dest.to_owned(), secs: patience.as_secs_f64() })
}

/// A client request, one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// The first line of every connection.
    Hello {
        /// The service's token.
        token: String,
        /// Who is asking (shown by `stager status`).
        name: String,
    },
    /// Answer when this file (its path in the manifest) is in place.
    Wait(String),
    /// The service's progress.
    Status,
    /// Stop the service.
    Stop,
    /// Answer when the file of this read (a global shuffle's position) is
    /// on this node.
    Need(u64),
    /// This read is done: its file may be evicted.
    Done(u64),
}

/// A server reply, one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// The token was right.
    Ok,
    /// The connection is refused, and why.
    Denied(String),
    /// The file waited for is in place.
    Ready,
    /// The file waited for cannot be staged, and why.
    Failed(String),
    /// The file is not one this node's destination holds.
    Unknown,
    /// The progress, as one line of JSON.
    Status(String),
    /// The service is stopping.
    Stopping,
    /// The file of a `NEED` is in the node's cache of other nodes' files.
    Cached,
}

/// A line that is no request or reply of the protocol.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a line of the staging service's protocol: {0:?}")]
pub struct ProtocolError(pub String);

impl Request {
    /// The line, without its newline.
    pub fn to_line(&self) -> String {
        match self {
            Request::Hello { token, name } => format!("HELLO {token} {}", one_line(name)),
            Request::Wait(path) => format!("WAIT {path}"),
            Request::Status => "STATUS".into(),
            Request::Stop => "STOP".into(),
            Request::Need(position) => format!("NEED {position}"),
            Request::Done(position) => format!("DONE {position}"),
        }
    }

    /// Parse a line (its newline already removed).
    pub fn parse(line: &str) -> Result<Request, ProtocolError> {
        let bad = || ProtocolError(line.to_owned());
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        match (word, rest) {
            ("HELLO", rest) => {
                let (token, name) = rest.split_once(' ').unwrap_or((rest, ""));
                if token.is_empty() {
                    return Err(bad());
                }
                Ok(Request::Hello { token: token.to_owned(), name: name.to_owned() })
            }
            ("WAIT", path) if !path.is_empty() => Ok(Request::Wait(path.to_owned())),
            ("STATUS", "") => Ok(Request::Status),
            ("STOP", "") => Ok(Request::Stop),
            ("NEED", n) => n.parse().map(Request::Need).map_err(|_| bad()),
            ("DONE", n) => n.parse().map(Request::Done).map_err(|_| bad()),
            _ => Err(bad()),
        }
    }
}

impl Reply {
    /// The line, without its newline.
    pub fn to_line(&self) -> String {
        match self {
            Reply::Ok => "OK".into(),
            Reply::Denied(why) => format!("DENIED {}", one_line(why)),
            Reply::Ready => "READY".into(),
            Reply::Failed(why) => format!("FAILED {}", one_line(why)),
            Reply::Unknown => "UNKNOWN".into(),
            Reply::Status(json) => format!("STATUS {}", one_line(json)),
            Reply::Stopping => "STOPPING".into(),
            Reply::Cached => "CACHED".into(),
        }
    }

    /// Parse a line (its newline already removed).
    pub fn parse(line: &str) -> Result<Reply, ProtocolError> {
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        match (word, rest) {
            ("OK", "") => Ok(Reply::Ok),
            ("DENIED", why) => Ok(Reply::Denied(why.to_owned())),
            ("READY", "") => Ok(Reply::Ready),
            ("FAILED", why) => Ok(Reply::Failed(why.to_owned())),
            ("UNKNOWN", "") => Ok(Reply::Unknown),
            ("STATUS", json) => Ok(Reply::Status(json.to_owned())),
            ("STOPPING", "") => Ok(Reply::Stopping),
            ("CACHED", "") => Ok(Reply::Cached),
            _ => Err(ProtocolError(line.to_owned())),
        }
    }
}

/// Newlines would end a line early: a message keeps its words.
fn one_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

/// Why a client could not get an answer from a destination's service.
/// Every variant names the destination.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServiceError {
    /// The token file or the socket could not be opened or used.
    #[error("the staging service of {}: {doing}", dest.display())]
    Io {
        /// The destination.
        dest: PathBuf,
        /// What the client was doing.
        doing: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The service closed the connection before answering: it ended.
    #[error("the staging service of {} ended before answering {request:?} (is `stager serve` still running?)", dest.display())]
    Ended {
        /// The destination.
        dest: PathBuf,
        /// The request left unanswered.
        request: String,
    },
    /// No service started within the time the client was told to wait.
    #[error(
        "{}: no staging service started within {secs:.0} s ({START_WAIT_VAR}) and it is not completely staged \
         (did `stager serve` fail? see its message)",
        dest.display()
    )]
    NotStarted {
        /// The destination.
        dest: PathBuf,
        /// How long the client waited.
        secs: f64,
    },
    /// The time to wait for a service to start is not a number of seconds.
    #[error("{}: {START_WAIT_VAR}={value:?} is not a number of seconds", dest.display())]
    StartWait {
        /// The destination.
        dest: PathBuf,
        /// The variable's value.
        value: String,
    },
    /// The service refused the connection.
    #[error("the staging service of {} refused this client: {why}", dest.display())]
    Denied {
        /// The destination.
        dest: PathBuf,
        /// Its reason.
        why: String,
    },
    /// The service could not stage a file.
    #[error("{}: the staging service could not stage {path}: {why}", dest.display())]
    Failed {
        /// The destination.
        dest: PathBuf,
        /// The file.
        path: String,
        /// Its reason.
        why: String,
    },
    /// The file is not one this destination holds.
    #[error("{}: {path} is not a file the staging service places on this node", dest.display())]
    Unknown {
        /// The destination.
        dest: PathBuf,
        /// The file.
        path: String,
    },
    /// A global shuffle's read could not be served.
    #[error("{}: the staging service could not serve read {position} ({path}): {why}", dest.display())]
    ReadFailed {
        /// The destination.
        dest: PathBuf,
        /// The read's position.
        position: u64,
        /// What the client was reading.
        path: String,
        /// The service's reason.
        why: String,
    },
    /// The service answered out of protocol.
    #[error("the staging service of {}: {source}", dest.display())]
    Protocol {
        /// The destination.
        dest: PathBuf,
        /// The line.
        source: ProtocolError,
    },
}

/// A connection to a destination's staging service.
pub struct ServiceClient {
    dest: PathBuf,
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl ServiceClient {
    /// Connect to `dest`'s service as `name`, or `None` when no service
    /// serves `dest` (no socket: the destination is staged, or never was).
    /// A socket nobody listens on (a service that died) is an error.
    pub fn connect(dest: &Path, name: &str) -> Result<Option<ServiceClient>, ServiceError> {
        let socket = socket_path(dest);
        if !socket.exists() {
            return Ok(None);
        }
        let io = |doing: &str| {
            let (dest, doing) = (dest.to_owned(), doing.to_owned());
            move |source| ServiceError::Io { dest, doing, source }
        };
        let token = std::fs::read_to_string(token_path(dest)).map_err(io("reading its token"))?;
        let stream = UnixStream::connect(&socket).map_err(io("connecting (did the service end?)"))?;
        let writer = stream.try_clone().map_err(io("connecting"))?;
        let mut client = ServiceClient { dest: dest.to_owned(), reader: BufReader::new(stream), writer };
        match client.ask(&Request::Hello { token: token.trim().to_owned(), name: name.to_owned() })? {
            Reply::Ok => Ok(Some(client)),
            Reply::Denied(why) => Err(ServiceError::Denied { dest: dest.to_owned(), why }),
            other => Err(client.unexpected(other)),
        }
    }

    /// Block until `path` (as the manifest names it) is in place.
    pub fn wait(&mut self, path: &str) -> Result<(), ServiceError> {
        match self.ask(&Request::Wait(path.to_owned()))? {
            Reply::Ready => Ok(()),
            Reply::Failed(why) => Err(ServiceError::Failed { dest: self.dest.clone(), path: path.to_owned(), why }),
            Reply::Unknown => Err(ServiceError::Unknown { dest: self.dest.clone(), path: path.to_owned() }),
            other => Err(self.unexpected(other)),
        }
    }

    /// Block until the file of read `position` (a global shuffle's, see
    /// [`crate::global_order`]) is on this node: `false` in the
    /// destination, `true` in the node's cache. `path` names the file in
    /// an error.
    pub fn need(&mut self, position: u64, path: &str) -> Result<bool, ServiceError> {
        match self.ask(&Request::Need(position))? {
            Reply::Ready => Ok(false),
            Reply::Cached => Ok(true),
            Reply::Failed(why) => {
                Err(ServiceError::ReadFailed { dest: self.dest.clone(), position, path: path.to_owned(), why })
            }
            other => Err(self.unexpected(other)),
        }
    }

    /// Read `position` is done.
    pub fn done(&mut self, position: u64) -> Result<(), ServiceError> {
        match self.ask(&Request::Done(position))? {
            Reply::Ok => Ok(()),
            other => Err(self.unexpected(other)),
        }
    }

    /// The service's progress, one JSON object (see `stager status --json`).
    pub fn status(&mut self) -> Result<String, ServiceError> {
        match self.ask(&Request::Status)? {
            Reply::Status(json) => Ok(json),
            other => Err(self.unexpected(other)),
        }
    }

    /// Ask the service to stop.
    pub fn stop(&mut self) -> Result<(), ServiceError> {
        match self.ask(&Request::Stop)? {
            Reply::Stopping => Ok(()),
            other => Err(self.unexpected(other)),
        }
    }

    fn ask(&mut self, request: &Request) -> Result<Reply, ServiceError> {
        let line = request.to_line();
        let ended = |dest: &Path| ServiceError::Ended { dest: dest.to_owned(), request: line.clone() };
        if self.writer.write_all(format!("{line}\n").as_bytes()).is_err() {
            return Err(ended(&self.dest));
        }
        let mut reply = String::new();
        match self.reader.read_line(&mut reply) {
            Ok(0) | Err(_) => Err(ended(&self.dest)),
            Ok(_) => Reply::parse(reply.trim_end_matches(['\n', '\r']))
                .map_err(|source| ServiceError::Protocol { dest: self.dest.clone(), source }),
        }
    }

    fn unexpected(&self, reply: Reply) -> ServiceError {
        ServiceError::Protocol { dest: self.dest.clone(), source: ProtocolError(reply.to_line()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies_survive_their_lines() {
        let requests = [
            Request::Hello { token: "ab12".into(), name: "rank 3 (pid 7)".into() },
            Request::Wait("train/a file.h5".into()),
            Request::Status,
            Request::Stop,
            Request::Need(12),
            Request::Done(u64::MAX),
        ];
        for r in requests {
            assert_eq!(Request::parse(&r.to_line()), Ok(r));
        }
        let replies = [
            Reply::Ok,
            Reply::Denied("wrong token".into()),
            Reply::Ready,
            Reply::Failed("differs".into()),
            Reply::Unknown,
            Reply::Status("{\"files\":3}".into()),
            Reply::Stopping,
            Reply::Cached,
        ];
        for r in replies {
            assert_eq!(Reply::parse(&r.to_line()), Ok(r));
        }
    }

    #[test]
    fn a_client_waits_for_a_starting_service_only_when_told_and_not_on_a_staged_destination() {
        let empty = tempfile::tempdir().unwrap();
        assert!(!await_start(empty.path(), Duration::ZERO).unwrap(), "no patience: not served at once");
        let started = Instant::now();
        let error = await_start(empty.path(), Duration::from_millis(300)).unwrap_err();
        assert!(started.elapsed() >= Duration::from_millis(300), "it waited the time it was given");
        assert!(matches!(error, ServiceError::NotStarted { .. }), "{error}");
        assert!(error.to_string().contains(&empty.path().display().to_string()), "{error}");

        let (staged, _) = crate::placement_record::tests::staged(&[0, 1]);
        let started = Instant::now();
        assert!(!await_start(staged.path(), Duration::from_secs(30)).unwrap(), "staged: no service to wait for");
        assert!(started.elapsed() < Duration::from_secs(5));

        let starting = tempfile::tempdir().unwrap();
        let socket = socket_path(starting.path());
        let appears = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
            std::fs::write(&socket, b"").unwrap();
        });
        assert!(await_start(starting.path(), Duration::from_secs(30)).unwrap(), "served once its socket appears");
        appears.join().unwrap();
    }

    #[test]
    fn a_message_with_newlines_stays_one_line_and_junk_is_refused() {
        assert_eq!(Reply::Failed("a\nb".into()).to_line(), "FAILED a b");
        for junk in ["", "WAIT", "HELLO", "STATUS now", "GET /", "NEED", "NEED -1", "DONE x"] {
            assert!(Request::parse(junk).is_err(), "{junk:?}");
        }
        assert!(Reply::parse("READY now").is_err());
    }
}
