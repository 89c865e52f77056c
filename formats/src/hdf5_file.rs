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

use hdf5_sys::h5f::H5Fget_vfd_handle;
use hdf5_sys::h5p::H5P_DEFAULT;

/// Open an existing file for reading, close-on-exec.
pub fn open(path: impl AsRef<Path>) -> hdf5::Result<hdf5::File> {
    let file = hdf5::File::with_options().with_fapl(|access| access.sec2()).open(path)?;
    close_on_exec(&file)?;
    Ok(file)
}

/// Create (or truncate) a file for writing, close-on-exec.
pub fn create(path: impl AsRef<Path>) -> hdf5::Result<hdf5::File> {
    let file = hdf5::File::with_options().with_fapl(|access| access.sec2()).create(path)?;
    close_on_exec(&file)?;
    Ok(file)
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
        let mut child = Command::new("sleep").arg("30").stdin(Stdio::null()).spawn().unwrap();
        drop(reader);
        let rewritten = super::create(&path).and_then(|f| f.new_dataset::<f32>().shape([1]).create("other"));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(rewritten.is_ok(), "{:?}", rewritten.err());
    }
}
