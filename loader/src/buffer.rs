//! Filling the large byte buffers of record batches: made once at their
//! largest, backed by huge pages where the kernel offers them, and read
//! into without being zeroed first.
//!
//! A batch of DLIO's UNet3D workload is seven samples of 50-300 MB. In
//! 4 KiB pages a fresh 1 GB buffer takes 262,144 page faults, which cost
//! more than copying the bytes out of the page cache; `madvise(MADV_HUGEPAGE)`
//! lets the kernel back it with 2 MiB pages where transparent huge pages
//! are enabled only on request (`madvise`, Debian's default). A buffer that
//! grew later would be moved by `mremap`, splitting its huge pages, so
//! buffers are made at the largest batch's size from the start. Zeroing
//! space that a read overwrites at once is another pass over the same
//! memory: the standard library cannot read into uninitialised memory on
//! stable Rust (`Read::read_buf` is unstable), so the read is `pread`.
//! Measured in docs/benchmarks.md (DLIO).
#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// Buffers from this size on are worth backing with huge pages.
const HUGE_PAGE_THRESHOLD: usize = 8 << 20;

/// Make room in `buffer` for `len` elements in all (its length is 0
/// between batches), advising the kernel to back a large buffer with huge
/// pages before any of its new pages is touched. Also for the decoded
/// inputs of fixed-size samples (a CosmoFlow batch of 4 is 134 MB of
/// `f32`): a batch buffer made after the first epoch, when the consumer
/// happens to hold one more than before, is faulted in while a later batch
/// waits for it.
pub(crate) fn reserve<T>(buffer: &mut Vec<T>, len: usize) {
    if buffer.capacity() >= len {
        return;
    }
    *buffer = Vec::with_capacity(len);
    if len.saturating_mul(std::mem::size_of::<T>()) >= HUGE_PAGE_THRESHOLD {
        advise_huge_pages(buffer);
    }
}

/// `madvise(MADV_HUGEPAGE)` over the whole pages inside `buffer`'s
/// allocation. Advice only: where the kernel has no huge pages to give, or
/// refuses, the buffer works as before, so the result is not checked.
fn advise_huge_pages<T>(buffer: &mut Vec<T>) {
    const PAGE: usize = 4096;
    let start = buffer.as_mut_ptr() as usize;
    let end = start + buffer.capacity() * std::mem::size_of::<T>();
    let first = start.next_multiple_of(PAGE);
    let last = end - end % PAGE;
    if last <= first {
        return;
    }
    // SAFETY: [first, last) lies inside the allocation `buffer` owns, and
    // MADV_HUGEPAGE changes only how the kernel backs those pages, never
    // their contents or whether they are mapped.
    unsafe {
        libc::madvise(first as *mut libc::c_void, last - first, libc::MADV_HUGEPAGE);
    }
}

/// Put the pages of `buffer`'s whole capacity in place, writable, before
/// any read needs them: a loader stocking its buffers while the job sets up
/// spares its first batches the page faults (and the kernel's zeroing) of
/// fresh memory. `madvise(MADV_POPULATE_WRITE)` does it in one call; on a
/// kernel older than 5.14, which refuses that advice, one byte of each
/// page is written instead.
pub(crate) fn populate(buffer: &mut Vec<u8>) {
    const PAGE: usize = 4096;
    let start = buffer.as_mut_ptr() as usize;
    let first = start.next_multiple_of(PAGE);
    let end = start + buffer.capacity();
    let last = end - end % PAGE;
    if last > first {
        // SAFETY: [first, last) lies inside the allocation `buffer` owns;
        // populating for writing maps its pages without changing what any
        // initialised byte holds.
        let advised = unsafe { libc::madvise(first as *mut libc::c_void, last - first, libc::MADV_POPULATE_WRITE) };
        if advised == 0 {
            return;
        }
    }
    let spare = buffer.spare_capacity_mut();
    for page in spare.chunks_mut(PAGE) {
        if let Some(byte) = page.first_mut() {
            // SAFETY: a write of one byte into capacity `buffer` owns; the
            // byte stays outside its length. Volatile, so that a write no
            // read follows is not left out.
            unsafe { std::ptr::write_volatile(byte.as_mut_ptr(), 0) };
        }
    }
}

/// Append exactly `len` bytes of `file` at `offset` to `out` with
/// positioned reads straight into its spare capacity. On an error (a file
/// shorter than `offset + len` is `UnexpectedEof`) `out` is as it was.
pub(crate) fn append_read_at(file: &File, offset: u64, len: usize, out: &mut Vec<u8>) -> io::Result<()> {
    out.reserve(len);
    let spare = &mut out.spare_capacity_mut()[..len];
    let mut done = 0;
    while done < len {
        // The offset comes from the file (an HDF5 extent, a ZIP header).
        let at = offset
            .checked_add(done as u64)
            .and_then(|at| i64::try_from(at).ok())
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "offset past the largest file offset"))?;
        // SAFETY: the destination is the `len - done` bytes of `spare`
        // from `done` on, writable memory `out` owns; pread writes at most
        // that many bytes and reports how many it wrote.
        let read = unsafe { libc::pread(file.as_raw_fd(), spare[done..].as_mut_ptr().cast(), len - done, at) };
        match read {
            0 => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the file ends inside the sample")),
            n if n > 0 => done += n as usize,
            _ => {
                let error = io::Error::last_os_error();
                if error.kind() != io::ErrorKind::Interrupted {
                    return Err(error);
                }
            }
        }
    }
    let filled = out.len() + len;
    // SAFETY: pread initialised all `len` bytes after the old length (the
    // loop ends only when `done == len`), within the reserved capacity.
    unsafe { out.set_len(filled) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_read_appends_the_bytes_at_the_offset_and_a_short_file_leaves_the_buffer_as_it_was() {
        let mut file = tempfile::tempfile().unwrap();
        let bytes: Vec<u8> = (0..=255).cycle().take(10_000).collect();
        file.write_all(&bytes).unwrap();
        let mut out = vec![7u8; 3];
        append_read_at(&file, 100, 5000, &mut out).unwrap();
        assert_eq!(&out[..3], &[7, 7, 7]);
        assert_eq!(&out[3..], &bytes[100..5100]);
        let error = append_read_at(&file, 9000, 2000, &mut out).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(out.len(), 5003);
        let error = append_read_at(&file, u64::MAX - 10, 100, &mut out).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(out.len(), 5003);
    }

    #[test]
    fn populating_a_buffer_keeps_its_allocation_and_contents() {
        let mut out = vec![5u8; 10];
        reserve(&mut out, 2 * HUGE_PAGE_THRESHOLD);
        out.extend_from_slice(&[5; 10]);
        let (capacity, pointer) = (out.capacity(), out.as_ptr());
        populate(&mut out);
        assert_eq!((out.capacity(), out.as_ptr(), out.len()), (capacity, pointer, 10));
        assert!(out.iter().all(|&b| b == 5));
    }

    #[test]
    fn a_large_reservation_holds_the_whole_batch_in_one_allocation() {
        let mut out = Vec::new();
        reserve(&mut out, 3 * HUGE_PAGE_THRESHOLD);
        let (capacity, pointer) = (out.capacity(), out.as_ptr());
        out.resize(3 * HUGE_PAGE_THRESHOLD, 1);
        assert_eq!((out.capacity(), out.as_ptr()), (capacity, pointer));
        assert!(out.iter().all(|&b| b == 1));
        out.clear();
        reserve(&mut out, HUGE_PAGE_THRESHOLD);
        assert_eq!(out.as_ptr(), pointer, "a buffer large enough is kept");
    }
}
