//! Reading the source, without MPI: chunked reads that hash as they go (at
//! an optional emulated bandwidth), how to read (`read` or maps), and the
//! aligned buffers chunks are read into. Where files go is
//! [`crate::destination`]'s.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use formats::checksum::{Checksum, StreamingChecksum};

/// Paces reads to a rate: an emulated shared file system for tests and
/// benchmarks (`--source-bandwidth`). Shared by a rank's read threads.
pub struct RateLimiter {
    bytes_per_sec: f64,
    start: Instant,
    granted: Mutex<u64>,
}

impl RateLimiter {
    /// A limiter granting `bytes_per_sec` on average.
    pub fn new(bytes_per_sec: f64) -> Self {
        RateLimiter { bytes_per_sec, start: Instant::now(), granted: Mutex::new(0) }
    }

    /// Wait until `bytes` more may be read.
    pub fn acquire(&self, bytes: u64) {
        let due = {
            let mut granted = self.granted.lock().unwrap_or_else(|p| p.into_inner());
            *granted += bytes;
            Duration::from_secs_f64(*granted as f64 / self.bytes_per_sec)
        };
        let elapsed = self.start.elapsed();
        if due > elapsed {
            std::thread::sleep(due - elapsed);
        }
    }
}

/// How the stager reads its source files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadMethod {
    /// `mmap` for files of at least [`MAP_AT_LEAST`] on local file systems
    /// ([`maps_well`]), `read` otherwise.
    #[default]
    Auto,
    /// `read` into the chunk buffers.
    Read,
    /// Map each chunk of the file and send it from the map: one copy fewer.
    /// A source file truncated while it is mapped raises SIGBUS, which the
    /// `stager` binary turns into one error line ([`crate::sigbus`]).
    Mmap,
}

impl std::str::FromStr for ReadMethod {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(ReadMethod::Auto),
            "read" => Ok(ReadMethod::Read),
            "mmap" => Ok(ReadMethod::Mmap),
            _ => Err(format!("unknown read method {s:?}: expected auto, read or mmap")),
        }
    }
}

impl std::fmt::Display for ReadMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ReadMethod::Auto => "auto",
            ReadMethod::Read => "read",
            ReadMethod::Mmap => "mmap",
        })
    }
}

/// The smallest file `auto` maps. Mapping saves one copy of the bytes, but
/// each map and unmap costs system calls, page-table work and, on unmap, a
/// TLB flush on every core running one of the rank's threads: for a small
/// file that costs more than the copy (see `docs/benchmarks.md`,
/// small-files). A file of a whole default chunk is worth mapping.
pub const MAP_AT_LEAST: u64 = 1 << 20;

impl ReadMethod {
    /// Whether to map `file`, an open source file of `bytes` bytes.
    pub fn maps(self, file: &File, bytes: u64) -> bool {
        match self {
            ReadMethod::Auto => bytes >= MAP_AT_LEAST && maps_well(file),
            ReadMethod::Read => false,
            ReadMethod::Mmap => true,
        }
    }
}

/// True if `file` is on a local disk or memory file system (ext4, XFS,
/// Btrfs, F2FS, tmpfs), whose page cache a map reads without a copy. Parallel
/// and network file systems (Lustre, GPFS, NFS, BeeGFS, ...) serve large
/// `read`s better than page faults, so they are not mapped.
pub fn maps_well(file: &File) -> bool {
    // Superblock magic numbers of linux/magic.h.
    const LOCAL: [u32; 5] = [0xEF53, 0x5846_5342, 0x9123_683E, 0xF2F5_2010, 0x0102_1994];
    // `f_type` is signed on some targets; the magic numbers are 32 bits.
    rustix::fs::fstatfs(file).is_ok_and(|s| LOCAL.contains(&(s.f_type as u32)))
}

/// Bytes read, hashed or written at a time: a fraction of a core's L2
/// cache, so each piece is still in cache for the next pass over it (read,
/// hash, write). A pass per buffer of many MiB copies each byte from
/// memory again, several times slower (`docs/tuning.md`).
pub const CACHE_PIECE: usize = 256 << 10;

/// Fill `buffer` from `file` (short only at the end of the file), hashing
/// each piece of at most [`CACHE_PIECE`] right after it lands and handing it
/// to `each` while it is still in cache. Returns the bytes read.
pub fn read_hashing(
    file: &mut File,
    buffer: &mut [u8],
    hash: &mut StreamingChecksum,
    mut each: impl FnMut(&[u8]),
) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        let end = (filled + CACHE_PIECE).min(buffer.len());
        match file.read(&mut buffer[filled..end]) {
            Ok(0) => break,
            Ok(n) => {
                let piece = &buffer[filled..filled + n];
                hash.update(piece);
                each(piece);
                filled += n;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Read `path` in chunks of `chunk_size`, handing each (offset, bytes) to
/// `sink`, and return (bytes, xxh3). `buffer` is reused across calls: a fresh
/// 64 MiB buffer per file would cost more in page faults than the copy.
pub fn read_chunks(
    path: &Path,
    chunk_size: usize,
    limiter: Option<&RateLimiter>,
    buffer: &mut Vec<u8>,
    mut sink: impl FnMut(u64, &[u8]) -> io::Result<()>,
) -> io::Result<(u64, Checksum)> {
    let mut file = formats::regular::open_regular(path)?;
    let mut hash = StreamingChecksum::new();
    buffer.resize(chunk_size.max(1), 0);
    loop {
        let offset = hash.bytes();
        let filled = read_hashing(&mut file, buffer, &mut hash, |_| {})?;
        if let Some(l) = limiter {
            l.acquire(filled as u64);
        }
        sink(offset, &buffer[..filled])?;
        if filled < buffer.len() {
            return Ok((hash.bytes(), hash.finish()));
        }
    }
}

/// Memory maps a process may hold besides the chunks': libraries, MPI's
/// shared memory, thread stacks.
const OTHER_MAPS: u64 = 4096;

/// An error unless mapped chunks fit the kernel's limit on memory maps per
/// process (`vm.max_map_count`, 65530 by default): with `--read-method
/// mmap` (or `auto` on a local file system) every chunk in flight is a map,
/// and `--chunk-size 1` with 128 MiB in flight asks for 134 million of
/// them, which fails with ENOMEM. Says which chunk size would fit.
pub fn check_map_budget(method: ReadMethod, chunk_size: usize, max_inflight: u64, max_maps: u64) -> Result<(), String> {
    if method == ReadMethod::Read {
        return Ok(());
    }
    let chunks = max_inflight.div_ceil(chunk_size.max(1) as u64);
    let room = max_maps.saturating_sub(OTHER_MAPS);
    if chunks <= room {
        return Ok(());
    }
    let smallest = max_inflight.div_ceil(room.max(1)).next_power_of_two();
    Err(format!(
        "--chunk-size {chunk_size} with --max-inflight {max_inflight} keeps up to {chunks} chunks in flight, each a memory map \
         when reading with mmap, but this machine allows {max_maps} maps per process (vm.max_map_count); \
         use --chunk-size {smallest} or more, a smaller --max-inflight, or --read-method read"
    ))
}

/// The kernel's limit on memory maps per process, if it can be read.
pub fn max_map_count() -> Option<u64> {
    fs::read_to_string("/proc/sys/vm/max_map_count").ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn tiny_mapped_chunks_beyond_the_map_limit_are_refused_with_a_size_that_fits() {
        let message = check_map_budget(ReadMethod::Mmap, 1, 128 << 20, 65530).unwrap_err();
        assert!(message.contains("vm.max_map_count") && message.contains("--chunk-size 4096 or more"), "{message}");
        let fits = 4096;
        check_map_budget(ReadMethod::Mmap, fits, 128 << 20, 65530).unwrap();
        check_map_budget(ReadMethod::Auto, 1 << 20, 128 << 20, 65530).unwrap();
        check_map_budget(ReadMethod::Read, 1, 128 << 20, 65530).unwrap();
        assert!(check_map_budget(ReadMethod::Auto, 1, 128 << 20, 65530).is_err());
    }

    /// A hostile test's case: 2,000 one-byte files on a 5 MiB tmpfs pass a
    /// check that counts bytes, then fail with ENOSPC. Counted in 4 KiB
    /// blocks they need 7.8 MiB and are refused up front; so are more files
    /// than free inodes.
    #[test]
    fn chunks_cover_the_file_and_hash_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let data: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        std::fs::write(&path, &data).unwrap();
        for chunk in [1, 7, 4096, 10_000, 20_000] {
            let mut seen = Vec::new();
            let (n, sum) = read_chunks(&path, chunk, None, &mut Vec::new(), |offset, bytes| {
                assert_eq!(offset as usize, seen.len());
                seen.extend_from_slice(bytes);
                Ok(())
            })
            .unwrap();
            assert_eq!((n, sum), (10_000, Checksum::of(&data)));
            assert_eq!(seen, data);
        }
    }

    #[test]
    fn empty_file_yields_one_empty_chunk() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty");
        std::fs::write(&path, b"").unwrap();
        let mut calls = 0;
        read_chunks(&path, 64, None, &mut Vec::new(), |_, bytes| {
            assert!(bytes.is_empty());
            calls += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(calls, 1);
    }

    #[test]
    fn read_method_parses_what_it_prints_and_auto_maps_local_files() {
        for m in [ReadMethod::Auto, ReadMethod::Read, ReadMethod::Mmap] {
            assert_eq!(m.to_string().parse::<ReadMethod>(), Ok(m));
        }
        assert!("mmapp".parse::<ReadMethod>().unwrap_err().contains("auto, read or mmap"));
        // The test's temporary directory is on a local file system (ext4 or tmpfs here).
        let file = tempfile::tempfile().unwrap();
        assert!(ReadMethod::Auto.maps(&file, MAP_AT_LEAST));
        assert!(!ReadMethod::Auto.maps(&file, MAP_AT_LEAST - 1), "a small file is read");
        assert!(ReadMethod::Mmap.maps(&file, 1));
        assert!(!ReadMethod::Read.maps(&file, MAP_AT_LEAST));
        let proc_file = File::open("/proc/self/status").unwrap();
        assert!(!maps_well(&proc_file), "procfs is not a file system to map from");
    }

    #[test]
    fn limiter_paces_reads() {
        let limiter = RateLimiter::new(10_000_000.0);
        let start = Instant::now();
        for _ in 0..4 {
            limiter.acquire(500_000);
        }
        assert!(start.elapsed() >= Duration::from_millis(190));
    }
}

/// A byte buffer whose start is page-aligned. Chunks are copied by the
/// kernel into page-aligned page-cache pages; on this project's AMD test
/// machine a source misaligned relative to them made `pwrite` several times
/// slower (`rep movsb`), so every chunk buffer starts on a page. Buffers of
/// 2 MiB or more start on a 2 MiB boundary and ask for transparent huge
/// pages: their first touch then costs one fault per 2 MiB instead of 512
/// (page faults on fresh chunk buffers were 14 % of the stager's CPU time).
pub struct AlignedBuffer {
    storage: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuffer {
    /// Alignment of the start.
    pub const ALIGN: usize = 4096;
    /// Alignment of the start of buffers at least this large.
    pub const HUGE: usize = 2 << 20;

    /// A zeroed buffer of `len` bytes.
    pub fn new(len: usize) -> Self {
        let align = if len >= Self::HUGE { Self::HUGE } else { Self::ALIGN };
        // Untouched capacity costs address space only; zero-filled `vec!`
        // memory comes from fresh pages the kernel zeroes on first touch.
        let storage = vec![0u8; len + align];
        let start = storage.as_ptr().align_offset(align).min(align);
        let buffer = AlignedBuffer { storage, start, len };
        if align == Self::HUGE {
            buffer.advise_huge_pages();
        }
        buffer
    }

    #[allow(unsafe_code)]
    fn advise_huge_pages(&self) {
        let whole = self.len - self.len % Self::HUGE;
        // SAFETY: the range lies inside `storage`, which this buffer owns and
        // keeps alive; MADV_HUGEPAGE changes how the pages are backed, never
        // their contents. A failure (no THP support) only costs speed.
        let _ = unsafe {
            rustix::mm::madvise(
                self.storage.as_ptr().add(self.start).cast_mut().cast(),
                whole,
                rustix::mm::Advice::LinuxHugepage,
            )
        };
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.storage[self.start..self.start + self.len]
    }

    /// The bytes, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.start + self.len]
    }
}

#[cfg(test)]
mod aligned_tests {
    use super::AlignedBuffer;

    #[test]
    fn aligned_buffer_starts_on_a_page() {
        for len in [0, 1, 4095, 1 << 20] {
            let mut b = AlignedBuffer::new(len);
            assert_eq!(b.as_slice().as_ptr() as usize % AlignedBuffer::ALIGN, 0);
            assert_eq!(b.as_mut_slice().len(), len);
        }
    }

    #[test]
    fn large_buffer_starts_on_a_huge_page_and_is_zeroed() {
        let len = (8 << 20) + 5;
        let mut b = AlignedBuffer::new(len);
        assert_eq!(b.as_slice().as_ptr() as usize % AlignedBuffer::HUGE, 0);
        assert!(b.as_slice().iter().all(|&x| x == 0));
        b.as_mut_slice()[len - 1] = 7;
        assert_eq!(b.as_slice()[len - 1], 7);
    }
}
