//! Opening a file named by a manifest so that only a regular file comes
//! back: a FIFO, socket or device put in a dataset's place would block
//! `open` (a FIFO waits for a writer forever) or stream bytes that are not
//! the data.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Open `path` for reading, refusing anything but a regular file (after
/// following links). The open does not block: a FIFO is opened with
/// `O_NONBLOCK`, refused, and closed, and the flag is cleared again on a
/// regular file (where it changes nothing anyway). Errors do not repeat the
/// path: callers say which file they were opening.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let nonblocking = rustix::fs::OFlags::NONBLOCK.bits() as i32;
    let file = OpenOptions::new().read(true).custom_flags(nonblocking).open(path)?;
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a regular file (it is {}); a dataset holds regular files only", describe(kind)),
        ));
    }
    rustix::fs::fcntl_setfl(&file, rustix::fs::OFlags::empty()).map_err(io::Error::from)?;
    Ok(file)
}

fn describe(kind: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_fifo_or_directory_is_refused_without_blocking_and_a_file_opens() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("sample.tfrecord");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::from_raw_mode(0o600)).unwrap();
        let e = open_regular(&fifo).unwrap_err();
        assert!(e.to_string().contains("not a regular file (it is a FIFO)"), "{e}");
        let e = open_regular(dir.path()).unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
        let file = dir.path().join("data");
        std::fs::write(&file, b"bytes").unwrap();
        let mut opened = open_regular(&file).unwrap();
        let mut read = String::new();
        std::io::Read::read_to_string(&mut opened, &mut read).unwrap();
        assert_eq!(read, "bytes");
        assert_eq!(open_regular(&dir.path().join("missing")).unwrap_err().kind(), std::io::ErrorKind::NotFound);
    }
}
