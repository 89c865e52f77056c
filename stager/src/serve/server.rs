//! The socket side of a staging service: a Unix socket inside the node's
//! destination that answers its clients' requests
//! ([`formats::service`]'s protocol) from the [`ServiceState`] the staging
//! threads keep. It runs on a thread of its own with a single-threaded
//! tokio runtime: many clients, each request possibly waiting for minutes,
//! none holding a thread; MPI never runs on it.

use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use subtle::ConstantTimeEq;

use formats::service::{MAX_SOCKET_PATH, Reply, Request, socket_path, token_path};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

use super::global::Where;
use super::state::{FileState, ServiceState};
use crate::stage::SetupError;

/// A bound socket and the token its clients must show.
pub struct Bound {
    listener: std::os::unix::net::UnixListener,
    token: String,
    socket: PathBuf,
    token_file: PathBuf,
}

/// Whether `dest`'s service socket path fits `sun_path`.
pub fn check_socket_path(dest: &Path) -> Result<(), SetupError> {
    let socket = socket_path(dest);
    let len = socket.as_os_str().len();
    if len > MAX_SOCKET_PATH { Err(SetupError::SocketTooLong { path: socket, len }) } else { Ok(()) }
}

/// Bind `dest`'s service socket and write a fresh token beside it, both
/// for this user only. The caller holds the destination's lock, so a
/// socket already there is a dead service's and is replaced.
pub fn bind(dest: &Path) -> Result<Bound, SetupError> {
    check_socket_path(dest)?;
    let socket = socket_path(dest);
    let token_file = token_path(dest);
    for stale in [&socket, &token_file] {
        match std::fs::remove_file(stale) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(SetupError::io("removing the stale", stale)(e));
            }
            _ => {}
        }
    }
    let token = format!("{:032x}", rand::random::<u128>());
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&token_file)
        .and_then(|mut f| io::Write::write_all(&mut f, token.as_bytes()))
        .map_err(SetupError::io("writing the service token", &token_file))?;
    let listener = std::os::unix::net::UnixListener::bind(&socket)
        .map_err(SetupError::io("binding the service socket", &socket))?;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))
        .map_err(SetupError::io("restricting the service socket", &socket))?;
    listener.set_nonblocking(true).map_err(SetupError::io("setting up the service socket", &socket))?;
    Ok(Bound { listener, token, socket, token_file })
}

impl Bound {
    /// Remove the socket and the token: new clients find no service (and
    /// read the destination as staged).
    pub fn remove(&self) {
        let _ = std::fs::remove_file(&self.socket);
        let _ = std::fs::remove_file(&self.token_file);
    }
}

/// What the socket side asks of the rest of the service.
pub trait OnStop: Send + Sync + 'static {
    /// A client sent `STOP`, or the process got SIGTERM. Runs on the
    /// socket's thread: it must not block.
    fn stop(&self, why: &str);
}

/// Serve `bound` from `state` on a thread of its own until the process
/// ends; `on_stop` hears `STOP` requests and SIGTERM.
pub fn spawn(bound: &Bound, state: Arc<ServiceState>, on_stop: Arc<dyn OnStop>) -> io::Result<()> {
    let listener = bound.listener.try_clone()?;
    let token: Arc<str> = bound.token.as_str().into();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build()?;
    std::thread::Builder::new().name("stager-serve".into()).spawn(move || {
        runtime.block_on(async move {
            let listener = match tokio::net::UnixListener::from_std(listener) {
                Ok(l) => l,
                Err(e) => return on_stop.stop(&format!("the service socket failed: {e}")),
            };
            let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            loop {
                tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => {
                            tokio::spawn(answer(stream, state.clone(), token.clone(), on_stop.clone()));
                        }
                        Err(e) => tracing::warn!("the service socket: {e}"),
                    },
                    Some(()) = async { match terminate.as_mut() { Some(t) => t.recv().await, None => None } } => {
                        on_stop.stop("SIGTERM");
                    }
                }
            }
        })
    })?;
    Ok(())
}

/// One client's connection: its hello, then one reply per request.
async fn answer(stream: UnixStream, state: Arc<ServiceState>, token: Arc<str>, on_stop: Arc<dyn OnStop>) {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    let send = |reply: Reply| format!("{}\n", reply.to_line());
    let client = match lines.next_line().await {
        Ok(Some(line)) => match Request::parse(&line) {
            // In constant time: how long a wrong guess takes tells nothing.
            Ok(Request::Hello { token: shown, name }) if bool::from(shown.as_bytes().ct_eq(token.as_bytes())) => {
                state.client(&name)
            }
            Ok(Request::Hello { .. }) => {
                let _ = write.write_all(send(Reply::Denied("wrong token".into())).as_bytes()).await;
                return;
            }
            _ => {
                let _ = write.write_all(send(Reply::Denied("say HELLO <token> first".into())).as_bytes()).await;
                return;
            }
        },
        _ => return,
    };
    if write.write_all(send(Reply::Ok).as_bytes()).await.is_err() {
        return;
    }
    while let Ok(Some(line)) = lines.next_line().await {
        let reply = match Request::parse(&line) {
            Ok(Request::Wait(path)) => wait(&state, client, &path).await,
            Ok(Request::Need(position)) => need(&state, client, position).await,
            Ok(Request::Done(position)) => match state.global().map(|g| g.done(position)) {
                Some(Ok(())) => Reply::Ok,
                Some(Err(why)) => Reply::Failed(why),
                None => Reply::Failed(NOT_GLOBAL.into()),
            },
            Ok(Request::Status) => match serde_json::to_string(&state.status()) {
                Ok(json) => Reply::Status(json),
                Err(e) => Reply::Failed(e.to_string()),
            },
            Ok(Request::Stop) => {
                // Answered first: stopping may end the process.
                let _ = write.write_all(send(Reply::Stopping).as_bytes()).await;
                on_stop.stop("a stop request");
                continue;
            }
            Ok(Request::Hello { .. }) | Err(_) => Reply::Denied(format!("not a request: {line:?}")),
        };
        let failed = matches!(reply, Reply::Failed(_));
        if write.write_all(send(reply).as_bytes()).await.is_err() {
            break;
        }
        if failed {
            // Told: a failing service waits for no more than this.
            state.waiting(client, None);
        }
    }
    state.waiting(client, None);
}

const NOT_GLOBAL: &str = "this service serves no global shuffle (start it with --global-shuffle)";

/// Answer a `NEED` once the file of read `position` is on this node: in
/// the destination (`READY`) or the cache (`CACHED`).
async fn need(state: &ServiceState, client: usize, position: u64) -> Reply {
    let Some(global) = state.global() else { return Reply::Failed(NOT_GLOBAL.into()) };
    let asked = Instant::now();
    let mut waited = false;
    loop {
        // Registered before looking, as in `wait`.
        let changed = state.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        let answer = match global.need(position) {
            Err(why) => Some(Reply::Failed(why)),
            Ok(Some(Where::Cached)) => Some(Reply::Cached),
            Ok(Some(Where::Local(file))) => match state.file_at(file) {
                FileState::Ready => Some(Reply::Ready),
                FileState::Failed(why) => Some(Reply::Failed(why)),
                FileState::Unknown => Some(Reply::Failed(format!("file {file} is not one this node holds"))),
                FileState::Pending => None,
            },
            Ok(None) => None,
        };
        if let Some(reply) = answer {
            if !matches!(reply, Reply::Failed(_)) {
                state.waited(client, waited.then(|| asked.elapsed().as_secs_f64()));
            }
            return reply;
        }
        if !waited {
            state.waiting(client, Some(&format!("read {position}")));
            waited = true;
        }
        changed.await;
    }
}

/// Answer a `WAIT` once `path` is in place, failed or unknown.
async fn wait(state: &ServiceState, client: usize, path: &str) -> Reply {
    let asked = Instant::now();
    let mut waited = false;
    loop {
        // Registered before looking, so a placement between the look and
        // the wait still wakes this request.
        let changed = state.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        match state.file(path) {
            FileState::Ready => {
                state.waited(client, waited.then(|| asked.elapsed().as_secs_f64()));
                return Reply::Ready;
            }
            FileState::Failed(why) => return Reply::Failed(why),
            FileState::Unknown => return Reply::Unknown,
            FileState::Pending => {
                if !waited {
                    state.waiting(client, Some(path));
                    waited = true;
                }
                changed.await;
            }
        }
    }
}
