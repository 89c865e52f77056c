//! Opening and creating HDF5 files with libhdf5's descriptor made
//! close-on-exec.
//!
//! libhdf5's POSIX driver opens files without `O_CLOEXEC`, and since 1.10
//! it also `flock`s every file it opens (shared when reading, exclusive
//! when writing). A child process that another thread spawns while such a
//! file is open inherits the descriptor, and with it the lock: after this
//! process has closed the file, a writer elsewhere (or a reader, after a
//! write) fails with "unable to lock file, errno = 11" until that child
//! exits. Rust opens its own files close-on-exec for this reason; every
//! HDF5 file this workspace opens goes through [`open`] or [`create`] to
//! get the same. (Turning HDF5's locking off instead would need libhdf5
//! ≥ 1.10.7 at build time, and would drop the protection the lock gives
//! against a reader of a file being written; this works on every version.)

use std::ffi::{c_int, c_void};
use std::io;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use hdf5_sys::h5f::H5Fget_vfd_handle;
use hdf5_sys::h5p::H5P_DEFAULT;

/// Open an existing file for reading, close-on-exec.
pub fn open(path: impl AsRef<Path>) -> hdf5::Result<hdf5::File> {
    closed_on_exec(path.as_ref(), |builder, path| builder.open(path))
}

/// Create (or truncate) a file for writing, close-on-exec.
pub fn create(path: impl AsRef<Path>) -> hdf5::Result<hdf5::File> {
    closed_on_exec(path.as_ref(), |builder, path| builder.create(path))
}

/// The file `how` opens at `path` on the POSIX driver, its descriptor
/// marked close-on-exec under the same hold of libhdf5's lock (see
/// [`spawn`]), retried while a child mid-exec holds its lock.
fn closed_on_exec(
    path: &Path,
    how: impl Fn(&hdf5::FileBuilder, &Path) -> hdf5::Result<hdf5::File>,
) -> hdf5::Result<hdf5::File> {
    retrying_a_child_mid_exec(|| {
        hdf5::sync::sync(|| {
            let file = how(hdf5::File::with_options().with_fapl(|access| access.sec2()), path)?;
            close_on_exec(&file)?;
            Ok(file)
        })
    })
}

/// How long [`open`] and [`create`] retry a file whose lock is held, in
/// all: far longer than a child takes from its fork to its `exec`, far
/// shorter than any real writer holds a file.
const LOCK_RETRY_FOR: Duration = Duration::from_millis(250);

/// `attempt`, again while it fails on libhdf5's non-blocking `flock` and
/// [`LOCK_RETRY_FOR`] has not passed. Close-on-exec descriptors are still
/// copied into a child forked by another thread, and the kernel closes
/// them (releasing their share of the lock) only after `exec` has let the
/// parent's `spawn` return; an open in that window fails with errno 11
/// although nothing holds the file. libhdf5 says so only in its message,
/// so the message is what is matched.
fn retrying_a_child_mid_exec(mut attempt: impl FnMut() -> hdf5::Result<hdf5::File>) -> hdf5::Result<hdf5::File> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match attempt() {
            Err(e) if e.to_string().contains("unable to lock file") && start.elapsed() < LOCK_RETRY_FOR => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            result => return result,
        }
    }
}

/// Start `command` as a child process at a moment when no file of [`open`]
/// or [`create`] is between libhdf5's `open` and the `fcntl` that marks it
/// close-on-exec. Marking it afterwards is all libhdf5 allows (it takes no
/// `O_CLOEXEC`), so a child forked by another thread in that window would
/// keep the descriptor and its lock for its whole life; both steps run
/// under libhdf5's (reentrant) lock, and so does this fork. (The child
/// still holds its copies until its `exec` closes them, just after this
/// returns: [`open`] and [`create`] wait that out.) A process that opens
/// HDF5 files on some threads while it starts children on others starts
/// them here.
pub fn spawn(command: &mut Command) -> io::Result<Child> {
    hdf5::sync::sync(|| command.spawn())
}

/// [`spawn`], waiting for the child and collecting its output as
/// [`Command::output`] does.
pub fn output(command: &mut Command) -> io::Result<Output> {
    spawn(command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()))?.wait_with_output()
}

/// Set `FD_CLOEXEC` on the descriptor of `file`, which must have been
/// opened with the POSIX (`sec2`) driver, named explicitly above because
/// its handle is the `int` descriptor.
#[allow(unsafe_code)]
fn close_on_exec(file: &hdf5::File) -> hdf5::Result<()> {
    let mut handle: *mut c_void = std::ptr::null_mut();
    // SAFETY: `file.id()` is a live file identifier (borrowed for this
    // call) and `handle` a valid out-pointer; libhdf5 is entered under
    // the crate's global lock, as every call of the `hdf5` crate is.
    let status = hdf5::sync::sync(|| unsafe { H5Fget_vfd_handle(file.id(), H5P_DEFAULT, &mut handle) });
    if status < 0 || handle.is_null() {
        return Err("libhdf5 gave no file descriptor for the file it opened".into());
    }
    // SAFETY: under the sec2 driver the handle points at the driver's
    // `int fd`, which lives as long as the open file (borrowed above).
    let fd = unsafe { *handle.cast::<c_int>() };
    // SAFETY: fcntl on a descriptor this process holds open; F_GETFD and
    // F_SETFD touch only its descriptor flags.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) } < 0 {
        return Err(format!("marking libhdf5's descriptor close-on-exec: {}", io::Error::last_os_error()).into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::process::{Command, Stdio};

    use crate::climate::{h5err, write_atomically};

    /// The regression of a flaky end-to-end test: a child spawned while
    /// a file was being written kept libhdf5's exclusive lock on it, and
    /// a reader of the finished file failed with "unable to lock file,
    /// errno = 11". Here the child is spawned from inside the write.
    /// (The children of these tests start through [`super::spawn`]: a CI
    /// run failed here when the other test's child was forked between
    /// this file's open and its close-on-exec mark.)
    #[test]
    fn a_child_spawned_during_a_write_does_not_keep_the_file_locked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("written.h5");
        let mut child = None;
        write_atomically(&path, |file, path| {
            child = Some(super::spawn(Command::new("sleep").arg("30").stdin(Stdio::null())).unwrap());
            let values = file.new_dataset::<f32>().shape([4]).create("values");
            values.and_then(|d| d.write_raw(&[1f32, 2.0, 3.0, 4.0])).map_err(h5err(path, "writing"))
        })
        .unwrap();
        let read = super::open(&path).and_then(|f| f.dataset("values")?.read_raw::<f32>());
        let mut child = child.unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(read.unwrap(), [1.0, 2.0, 3.0, 4.0]);
    }

    /// The regression of a flaky unit test: the child of the test above
    /// inherited the descriptors of a file another test was reading and
    /// rewriting, and the rewrite failed with errno 11. A file read while
    /// a child is spawned can be rewritten in place afterwards.
    #[test]
    fn a_child_spawned_during_a_read_does_not_keep_the_file_locked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("read.h5");
        let file = super::create(&path).unwrap();
        file.new_dataset::<f32>().shape([2]).create("values").unwrap().write_raw(&[1f32, 2.0]).unwrap();
        drop(file);
        let reader = super::open(&path).unwrap();
        let mut child = super::spawn(Command::new("sleep").arg("30").stdin(Stdio::null())).unwrap();
        drop(reader);
        let rewritten = super::create(&path).and_then(|f| f.new_dataset::<f32>().shape([1]).create("other"));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(rewritten.is_ok(), "{:?}", rewritten.err());
    }
}
