//! Vectors a kernel writes whole before anything reads them, made without
//! zeroing them first.
//!
//! Our kernels' outputs and packed operands are tens of MiB, and a zeroing
//! pass over them (`vec![0.0; len]`) costs about as much as a cheap
//! layer's product; the kernels write every value anyway. This is the one
//! place that turns "every value was written" into an initialised `Vec`,
//! so each caller states only why its writes cover the whole.

use std::mem::MaybeUninit;

/// An f32 a kernel writes: one already initialised, or one of the spare
/// capacity [`written_whole`] hands out. Sealed to those two, which share
/// f32's layout, so a writer generic over it writes either without an
/// unsafe view of one as the other.
pub(crate) trait F32Slot: Copy + Send + Sync + sealed::Sealed {
    /// The slot holding `x`.
    fn holding(x: f32) -> Self;
}

impl F32Slot for f32 {
    fn holding(x: f32) -> f32 {
        x
    }
}

impl F32Slot for MaybeUninit<f32> {
    fn holding(x: f32) -> MaybeUninit<f32> {
        MaybeUninit::new(x)
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for std::mem::MaybeUninit<f32> {}
}

/// A new vector of `len` values, each written by `write` into the slice it
/// is handed, with no zeroing pass before.
///
/// If `write` panics the vector is dropped empty: nothing uninitialised is
/// ever read or dropped.
///
/// # Safety
/// `write` initialises every one of the `len` elements of its slice
/// (through the slice or through a pointer taken from it).
#[allow(unsafe_code)]
pub(crate) unsafe fn written_whole<T>(len: usize, write: impl FnOnce(&mut [MaybeUninit<T>])) -> Vec<T> {
    let mut values: Vec<T> = Vec::with_capacity(len);
    write(&mut values.spare_capacity_mut()[..len]);
    // SAFETY: the caller's promise: `write` initialised the first `len`
    // elements of the capacity.
    unsafe { values.set_len(len) };
    values
}

/// Floats in whole cache lines: a buffer whose first float starts a
/// 64-byte line, for kernels that load it a 512-bit vector at a time (a
/// vector load across two lines costs two).
///
/// An ordinary allocation of 15 floats more than asked, used from its
/// first line boundary.
pub(crate) struct LineAligned {
    /// The allocation; its length stays 0, the floats live in its
    /// capacity from `start` on.
    storage: Vec<f32>,
    start: usize,
    len: usize,
}

/// Floats in a 64-byte cache line.
const LINE_FLOATS: usize = 16;

impl std::ops::Deref for LineAligned {
    type Target = [f32];
    fn deref(&self) -> &[f32] {
        // SAFETY: `written_whole_aligned` reserved `start + len` floats of
        // capacity and initialised `start..start + len`.
        #[allow(unsafe_code)]
        unsafe {
            std::slice::from_raw_parts(self.storage.as_ptr().add(self.start), self.len)
        }
    }
}

impl std::ops::DerefMut for LineAligned {
    fn deref_mut(&mut self) -> &mut [f32] {
        // SAFETY: as `deref`'s, borrowed mutably.
        #[allow(unsafe_code)]
        unsafe {
            std::slice::from_raw_parts_mut(self.storage.as_mut_ptr().add(self.start), self.len)
        }
    }
}

impl LineAligned {
    /// `len` zeros.
    pub(crate) fn zeros(len: usize) -> LineAligned {
        LineAligned::of_exactly(len, std::iter::repeat_n(0.0, len))
    }

    /// The `len` floats `values` yields, in order; panics if it yields
    /// another number of them.
    pub(crate) fn of_exactly(len: usize, values: impl IntoIterator<Item = f32>) -> LineAligned {
        // SAFETY: the closure returns only after writing every one of the
        // `len` slots (it panics first otherwise, and a panic leaves
        // nothing treated as initialised).
        #[allow(unsafe_code)]
        unsafe {
            written_whole_aligned(len, |slots| {
                let mut values = values.into_iter();
                for slot in slots.iter_mut() {
                    slot.write(values.next().unwrap_or_else(|| panic!("fewer than {len} values")));
                }
                assert!(values.next().is_none(), "more than {len} values");
            })
        }
    }
}

/// [`written_whole`] into a [`LineAligned`] buffer of `len` floats.
///
/// # Safety
/// `write` initialises every one of the `len` elements of its slice.
#[allow(unsafe_code)]
pub(crate) unsafe fn written_whole_aligned(len: usize, write: impl FnOnce(&mut [MaybeUninit<f32>])) -> LineAligned {
    let mut storage: Vec<f32> = Vec::with_capacity(len + LINE_FLOATS - 1);
    // A float's address is a multiple of 4, so some start below 16 is on a
    // 64-byte boundary.
    let start = storage.as_ptr().align_offset(64);
    assert!(start < LINE_FLOATS, "a float buffer at {:p}", storage.as_ptr());
    write(&mut storage.spare_capacity_mut()[start..start + len]);
    LineAligned { storage, start, len }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vector_holds_what_was_written_and_its_length() {
        // SAFETY: the closure writes all 5 elements.
        #[allow(unsafe_code)]
        let values = unsafe {
            written_whole(5, |spare| {
                for (i, value) in spare.iter_mut().enumerate() {
                    value.write(i as f32 * 2.0);
                }
            })
        };
        assert_eq!(values, [0.0, 2.0, 4.0, 6.0, 8.0]);
    }

    #[test]
    fn a_panicking_writer_leaves_nothing_behind() {
        let result = std::panic::catch_unwind(|| {
            // SAFETY: the closure panics before returning, so no element
            // is ever treated as initialised.
            #[allow(unsafe_code)]
            unsafe {
                written_whole::<String>(3, |_| panic!("writer failed"))
            }
        });
        assert!(result.is_err());
    }
    #[test]
    fn an_aligned_buffer_starts_a_cache_line_and_holds_what_was_written() {
        for len in [1, 15, 16, 17, 1000] {
            // SAFETY: the closure writes all `len` elements.
            #[allow(unsafe_code)]
            let values = unsafe {
                written_whole_aligned(len, |spare| {
                    for (i, value) in spare.iter_mut().enumerate() {
                        value.write(i as f32 + 0.5);
                    }
                })
            };
            assert_eq!(values.as_ptr() as usize % 64, 0);
            assert_eq!(values.len(), len);
            assert!(values.iter().enumerate().all(|(i, &v)| v == i as f32 + 0.5));
        }
    }
    #[test]
    fn an_aligned_buffer_of_exactly_len_values_takes_them_and_refuses_other_counts() {
        let values = LineAligned::of_exactly(3, [1.0, 2.0, 3.0]);
        assert_eq!(&values[..], &[1.0, 2.0, 3.0]);
        assert!(std::panic::catch_unwind(|| LineAligned::of_exactly(3, [1.0, 2.0])).is_err());
        assert!(std::panic::catch_unwind(|| LineAligned::of_exactly(1, [1.0, 2.0])).is_err());
    }
}
