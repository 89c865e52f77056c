//! `libstagehand_preload.so`: makes unmodified programs (`cat`, h5py,
//! `tf.data`) read a destination that `stager serve` is still filling.
//!
//! ```sh
//! LD_PRELOAD=target/release/libstagehand_preload.so STAGEHAND_DEST=/mnt/bb/$USER/cosmo \
//!     python3 -c 'import h5py; h5py.File("/mnt/bb/me/cosmo/train/s0.h5")'
//! ```
//!
//! Only a failed open is looked at: the service renames a file into place
//! once it is checked, so a file that is there is opened as it would be
//! (nothing added to its reads). When an open under `STAGEHAND_DEST` (one
//! directory, or several separated by `:`) fails because the file does not
//! exist yet, the library asks the destination's service to wait for it
//! and opens it again. If the service failed to stage it, does not place
//! it on this node, or has ended, the open fails (`EIO`, `ENOENT`) and one
//! line on stderr says why. Without a service the library changes nothing.
//!
//! Written by hand because interposing C's `open` family is the product
//! here; the service protocol is `formats::service`'s client.

// Interposing libc symbols needs `extern "C"` definitions and `dlsym`.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::ffi::{CStr, OsStr, c_char, c_int};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use formats::manifest::STATE_DIR;
use formats::service::{ServiceClient, ServiceError};

thread_local! {
    /// Set while this thread talks to the service: its own opens (the
    /// token file) pass straight through.
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// The destinations `STAGEHAND_DEST` names.
fn destinations() -> &'static [PathBuf] {
    static DESTS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    DESTS.get_or_init(|| {
        std::env::var_os("STAGEHAND_DEST")
            .map(|v| std::env::split_paths(&v).filter(|p| p.is_absolute()).collect())
            .unwrap_or_default()
    })
}

/// The destination `path` lies in and its path there, if it is a file a
/// service may place (not the destination's own state directory).
fn served_file(path: &Path) -> Option<(&'static Path, String)> {
    let absolute;
    let path = if path.is_absolute() {
        path
    } else {
        absolute = std::env::current_dir().ok()?.join(path);
        &absolute
    };
    destinations().iter().find_map(|dest| {
        let rel = path.strip_prefix(dest).ok()?;
        let rel = rel.to_str()?;
        (!rel.is_empty() && !rel.starts_with(STATE_DIR)).then(|| (dest.as_path(), rel.to_owned()))
    })
}

/// Wait for `path` if a service fills its destination: `Ok(true)` once it
/// is in place, `Ok(false)` when no service does; an error says why not.
fn wait_for(path: &Path) -> Result<bool, ServiceError> {
    let Some((dest, rel)) = served_file(path) else { return Ok(false) };
    INSIDE.with(|inside| inside.set(true));
    let name = format!("preload (pid {})", std::process::id());
    let result = ServiceClient::connect(dest, &name).and_then(|client| match client {
        Some(mut client) => client.wait(&rel).map(|()| true),
        None => Ok(false),
    });
    INSIDE.with(|inside| inside.set(false));
    result
}

/// After an open of `path` failed with `errno`: whether to try it again
/// (the service has placed it); otherwise the errno to fail with.
fn retry_after(path: *const c_char, errno: c_int) -> Result<(), c_int> {
    if errno != libc::ENOENT || path.is_null() || INSIDE.with(Cell::get) || destinations().is_empty() {
        return Err(errno);
    }
    // SAFETY: `path` is the NUL-terminated string the caller passed to open.
    let path = Path::new(OsStr::from_bytes(unsafe { CStr::from_ptr(path) }.to_bytes()));
    match wait_for(path) {
        Ok(true) => Ok(()),
        Ok(false) => Err(errno),
        Err(e) => {
            eprintln!("stagehand preload: {}: {}", path.display(), chain(&e));
            Err(match e {
                ServiceError::Unknown { .. } => libc::ENOENT,
                _ => libc::EIO,
            })
        }
    }
}

/// The error and its causes on one line, each once: the rule of
/// `cluster::logging::chain`, repeated because linking `cluster` would load
/// MPI into every program this library is preloaded into.
fn chain(error: &dyn std::error::Error) -> String {
    let mut line = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !line.ends_with(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        cause = c.source();
    }
    line
}

fn errno() -> c_int {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn set_errno(value: c_int) {
    // SAFETY: __errno_location returns this thread's errno.
    unsafe { *libc::__errno_location() = value };
}

/// The next definition of `name` after this library's (libc's).
fn next<T: Copy>(name: &CStr, slot: &OnceLock<usize>) -> Option<T> {
    let address = *slot.get_or_init(|| {
        // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name.
        unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) as usize }
    });
    // SAFETY: `T` is the function pointer type of `name`, the same size as
    // an address; a null address is refused.
    (address != 0).then(|| unsafe { std::mem::transmute_copy::<usize, T>(&address) })
}

/// Open through `real`; on ENOENT under a served destination, wait and
/// open again.
fn open_waiting(path: *const c_char, real: impl Fn() -> c_int) -> c_int {
    let fd = real();
    if fd >= 0 {
        return fd;
    }
    match retry_after(path, errno()) {
        Ok(()) => real(),
        Err(code) => {
            set_errno(code);
            -1
        }
    }
}

type OpenFn = unsafe extern "C" fn(*const c_char, c_int, libc::mode_t) -> c_int;
type OpenAtFn = unsafe extern "C" fn(c_int, *const c_char, c_int, libc::mode_t) -> c_int;
type FopenFn = unsafe extern "C" fn(*const c_char, *const c_char) -> *mut libc::FILE;

macro_rules! interpose_open {
    ($name:ident, $symbol:literal) => {
        /// `open` that waits for a file the staging service has not placed.
        /// The mode is read as a third argument: on the platforms this
        /// builds for, a variadic caller passes it where a fixed one would.
        ///
        /// # Safety
        /// As C's `open`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(path: *const c_char, flags: c_int, mode: libc::mode_t) -> c_int {
            static REAL: OnceLock<usize> = OnceLock::new();
            let Some(real) = next::<OpenFn>($symbol, &REAL) else {
                set_errno(libc::ENOSYS);
                return -1;
            };
            // SAFETY: the caller's arguments, passed on to libc's own.
            open_waiting(path, || unsafe { real(path, flags, mode) })
        }
    };
}

macro_rules! interpose_openat {
    ($name:ident, $symbol:literal) => {
        /// `openat` that waits for a file the staging service has not placed
        /// (paths relative to the working directory or absolute).
        ///
        /// # Safety
        /// As C's `openat`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(dir: c_int, path: *const c_char, flags: c_int, mode: libc::mode_t) -> c_int {
            static REAL: OnceLock<usize> = OnceLock::new();
            let Some(real) = next::<OpenAtFn>($symbol, &REAL) else {
                set_errno(libc::ENOSYS);
                return -1;
            };
            // SAFETY: the caller's arguments, passed on to libc's own.
            let fd = unsafe { real(dir, path, flags, mode) };
            // Only paths the working directory resolves are looked at.
            // SAFETY: a NUL-terminated path, as for openat.
            let absolute_or_cwd = dir == libc::AT_FDCWD || (!path.is_null() && unsafe { *path } == b'/' as c_char);
            if fd >= 0 || !absolute_or_cwd {
                return fd;
            }
            // SAFETY: as above.
            open_waiting(path, || unsafe { real(dir, path, flags, mode) })
        }
    };
}

macro_rules! interpose_fopen {
    ($name:ident, $symbol:literal) => {
        /// `fopen` that waits for a file the staging service has not placed.
        ///
        /// # Safety
        /// As C's `fopen`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(path: *const c_char, mode: *const c_char) -> *mut libc::FILE {
            static REAL: OnceLock<usize> = OnceLock::new();
            let Some(real) = next::<FopenFn>($symbol, &REAL) else {
                set_errno(libc::ENOSYS);
                return std::ptr::null_mut();
            };
            // SAFETY: the caller's arguments, passed on to libc's own.
            let file = unsafe { real(path, mode) };
            if !file.is_null() {
                return file;
            }
            match retry_after(path, errno()) {
                // SAFETY: as above.
                Ok(()) => unsafe { real(path, mode) },
                Err(code) => {
                    set_errno(code);
                    std::ptr::null_mut()
                }
            }
        }
    };
}

interpose_open!(open, c"open");
interpose_open!(open64, c"open64");
interpose_openat!(openat, c"openat");
interpose_openat!(openat64, c"openat64");
interpose_fopen!(fopen, c"fopen");
interpose_fopen!(fopen64, c"fopen64");
