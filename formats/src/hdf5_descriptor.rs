//! The file descriptor libhdf5 holds for a file this process writes,
//! made close-on-exec.
//!
//! libhdf5's POSIX driver opens files without `O_CLOEXEC`, and since 1.10
//! it also `flock`s every file it opens (exclusively when writing). A
//! child process that another thread spawns while such a file is open
//! inherits the descriptor, and with it the lock: after this process has
//! closed and renamed the file, every reader elsewhere fails with "unable
//! to lock file, errno = 11" until that child exits. Rust opens its own
//! files close-on-exec for this reason; this gives libhdf5's the same.
//! (Turning HDF5's locking off for the private temporary file would need
//! libhdf5 ≥ 1.10.7 at build time; this works on every version.)

use std::ffi::{c_int, c_void};
use std::io;

use hdf5_sys::h5f::H5Fget_vfd_handle;
use hdf5_sys::h5p::H5P_DEFAULT;

/// Set `FD_CLOEXEC` on the descriptor of `file`, which must have been
/// opened with the POSIX (`sec2`) driver, whose handle is the `int`
/// descriptor.
#[allow(unsafe_code)]
pub(crate) fn close_on_exec(file: &hdf5::File) -> io::Result<()> {
    let mut handle: *mut c_void = std::ptr::null_mut();
    // SAFETY: `file.id()` is a live file identifier (borrowed for this
    // call) and `handle` a valid out-pointer; libhdf5 is entered under
    // the crate's global lock, as every call of the `hdf5` crate is.
    let status = hdf5::sync::sync(|| unsafe { H5Fget_vfd_handle(file.id(), H5P_DEFAULT, &mut handle) });
    if status < 0 || handle.is_null() {
        return Err(io::Error::other("libhdf5 gave no file descriptor for the file it opened"));
    }
    // SAFETY: under the sec2 driver the handle points at the driver's
    // `int fd`, which lives as long as the open file (borrowed above).
    let fd = unsafe { *handle.cast::<c_int>() };
    // SAFETY: fcntl on a descriptor this process holds open; F_GETFD and
    // F_SETFD touch only its descriptor flags.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
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
    #[test]
    fn a_child_spawned_during_a_write_does_not_keep_the_file_locked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("written.h5");
        let mut child = None;
        write_atomically(&path, |file, path| {
            child = Some(Command::new("sleep").arg("30").stdin(Stdio::null()).spawn().unwrap());
            let values = file.new_dataset::<f32>().shape([4]).create("values");
            values.and_then(|d| d.write_raw(&[1f32, 2.0, 3.0, 4.0])).map_err(h5err(path, "writing"))
        })
        .unwrap();
        let read = hdf5::File::open(&path).and_then(|f| f.dataset("values")?.read_raw::<f32>());
        let mut child = child.unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(read.unwrap(), [1.0, 2.0, 3.0, 4.0]);
    }
}
