//! Reading memory-mapped files that may shrink under the reader.
//!
//! A page of a mapping past the end of its file raises SIGBUS when touched,
//! and the default action kills the process with no word of which file:
//! Python prints "Bus error", a trainer rank dies "on signal 7". A staged
//! file truncated during an epoch (a full disk, a user's `truncate`, a job
//! cleaning up) does exactly that. Two defences:
//!
//! - [`check_still_covers`] before each read of a sample: one `fstat`, and a
//!   file that shrank is an ordinary error naming it, which a loader skips
//!   where asked to;
//! - [`report_sigbus`] for the window between that check and the read: a
//!   handler that finds the faulting address in `/proc/self/maps`, prints
//!   the file and offset as one line, and exits with status 1.

use std::fs::File;
use std::io;
use std::sync::Once;

/// An error unless the open `file` still holds at least `mapped` bytes
/// (the length it had when it was mapped). The message does not repeat the
/// path: callers' errors name the file.
pub fn check_still_covers(file: &File, mapped: u64) -> io::Result<()> {
    let now = file.metadata()?.len();
    if now < mapped {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("shrank from {mapped} to {now} bytes since it was opened (truncated while in use)"),
        ));
    }
    Ok(())
}

static INSTALL: Once = Once::new();

/// Install (once per process) the SIGBUS handler that names the mapped
/// file a fault hit and exits with status 1. A fault at an address no file
/// maps is reported as such.
#[allow(unsafe_code)]
pub fn report_sigbus() {
    INSTALL.call_once(|| {
        // SAFETY: `on_sigbus` uses only async-signal-safe calls (open, read,
        // write, close, _exit) on stack buffers, and is installed once.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction =
                on_sigbus as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) as libc::sighandler_t;
            action.sa_flags = libc::SA_SIGINFO;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
        }
    });
}

/// A fixed buffer a signal handler can format into without allocating.
struct Line {
    bytes: [u8; 1024],
    len: usize,
}

impl Line {
    fn push(&mut self, text: &[u8]) {
        let room = self.bytes.len() - self.len;
        let n = text.len().min(room);
        self.bytes[self.len..self.len + n].copy_from_slice(&text[..n]);
        self.len += n;
    }

    fn push_number(&mut self, mut value: u64) {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (value % 10) as u8;
            value /= 10;
            if value == 0 {
                break;
            }
        }
        self.push(&digits[at..]);
    }
}

#[allow(unsafe_code)]
extern "C" fn on_sigbus(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let address = unsafe { (*info).si_addr() } as u64;
    let mut line = Line { bytes: [0; 1024], len: 0 };
    line.push(b"error: SIGBUS reading ");
    let mut maps = [0u8; 1 << 16];
    // SAFETY: open/read/close of /proc/self/maps into a stack buffer.
    let read = unsafe {
        let fd = libc::open(c"/proc/self/maps".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        let mut filled = 0usize;
        if fd >= 0 {
            loop {
                let n = libc::read(fd, maps[filled..].as_mut_ptr().cast(), maps.len() - filled);
                if n <= 0 {
                    break;
                }
                filled += n as usize;
                if filled == maps.len() {
                    break;
                }
            }
            libc::close(fd);
        }
        filled
    };
    match find_mapping(&maps[..read], address) {
        Some((path, offset)) => {
            line.push(path);
            line.push(b" at byte ");
            line.push_number(offset);
            line.push(b": the file was truncated while mapped (changed under the reader); restage it or skip it");
        }
        None => {
            line.push(
                b"a memory-mapped file (address not found in /proc/self/maps): a file was truncated while mapped",
            );
        }
    }
    line.push(b"\n");
    // SAFETY: write(2) of a stack buffer, then _exit, which never returns.
    unsafe {
        libc::write(2, line.bytes.as_ptr().cast(), line.len);
        libc::_exit(1)
    }
}

/// The path of the file mapping that holds `address` in `/proc/self/maps`
/// text, and the file offset of the address. Allocation-free: it runs in
/// a signal handler.
fn find_mapping(maps: &[u8], address: u64) -> Option<(&[u8], u64)> {
    for entry in maps.split(|&b| b == b'\n') {
        // start-end perms offset dev inode path
        let mut fields = entry.split(|&b| b == b' ').filter(|f| !f.is_empty());
        let range = fields.next()?;
        let mut bounds = range.split(|&b| b == b'-');
        let (Some(start), Some(end)) = (bounds.next().and_then(hex), bounds.next().and_then(hex)) else { continue };
        if !(start..end).contains(&address) {
            continue;
        }
        let offset = fields.nth(1).and_then(hex)?;
        let path_start = entry.iter().position(|&b| b == b'/')?;
        return Some((&entry[path_start..], offset + (address - start)));
    }
    None
}

fn hex(text: &[u8]) -> Option<u64> {
    if text.is_empty() || text.len() > 16 {
        return None;
    }
    text.iter().try_fold(0u64, |value, &b| {
        let digit = (b as char).to_digit(16)?;
        Some(value << 4 | u64::from(digit))
    })
}

/// Map a dataset file read-only, with the SIGBUS handler installed.
///
/// Dataset files are written whole (temporary file and rename, or by the
/// tool that made them) before anyone reads them and never modified in
/// place; a file someone else truncates is caught by
/// [`check_still_covers`] before each read and named by the handler in
/// the window after.
#[allow(unsafe_code)]
pub fn map_dataset_file(file: &File) -> io::Result<memmap2::Mmap> {
    report_sigbus();
    // SAFETY: a read-only map; see above for why its file does not change
    // under it, and what happens if it does.
    unsafe { memmap2::Mmap::map(file) }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_mapping_of_an_address_is_found_with_its_file_offset() {
        let maps = b"55d0c0000000-55d0c0021000 r--p 00000000 fd:01 123 /usr/bin/cat\n\
7f00aa000000-7f00aa010000 r--s 00002000 fd:01 456 /tmp/bb/node0/data 1.tfrecord\n\
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\n";
        let (path, offset) = find_mapping(maps, 0x7f00_aa00_0100).unwrap();
        assert_eq!(path, b"/tmp/bb/node0/data 1.tfrecord");
        assert_eq!(offset, 0x2000 + 0x100);
        assert!(find_mapping(maps, 0x7ffd_0000_0010).is_none(), "anonymous mappings name no file");
        assert!(find_mapping(maps, 0x1000).is_none());
    }

    #[test]
    fn a_shrunk_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.tfrecord");
        std::fs::write(&path, [0u8; 100]).unwrap();
        let file = File::open(&path).unwrap();
        check_still_covers(&file, 100).unwrap();
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(10).unwrap();
        let e = check_still_covers(&file, 100).unwrap_err();
        assert!(e.to_string().contains("shrank from 100 to 10 bytes"), "{e}");
    }

    /// In a child process (selected by an environment variable): map a
    /// file, truncate it, touch the lost page; the handler names the file.
    #[test]
    #[allow(unsafe_code)]
    fn a_fault_on_a_truncated_map_prints_the_file_and_exits_1() {
        if let Some(path) = std::env::var_os("FORMATS_SIGBUS_CHILD") {
            report_sigbus();
            let path = std::path::PathBuf::from(path);
            std::fs::write(&path, vec![1u8; 1 << 16]).unwrap();
            let file = File::open(&path).unwrap();
            // SAFETY: this child process is meant to fault on the map.
            let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
            std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(0).unwrap();
            let byte = std::hint::black_box(map[(1 << 15) + 5]);
            panic!("read {byte} past the end of a truncated file without SIGBUS");
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sample-7.tfrecord");
        // Started through `hdf5_file::output`: this crate's HDF5 tests run
        // beside it and their files must not leak into the child.
        let out = crate::hdf5_file::output(
            std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "mapped::tests::a_fault_on_a_truncated_map_prints_the_file_and_exits_1",
                    "--nocapture",
                ])
                .env("FORMATS_SIGBUS_CHILD", &path),
        )
        .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        let expected = format!("error: SIGBUS reading {} at byte 32773: the file was truncated", path.display());
        assert!(stderr.contains(&expected), "{stderr}");
    }
}
