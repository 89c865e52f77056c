//! f32 matrix products over strided views of plain slices, accumulated into
//! the destination: a safe front to the `gemm` crate (the one burn's CPU
//! backend multiplies with).
//!
//! burn's `matmul` takes whole tensors: a view that is a transposed plane
//! of a larger buffer (an output gradient's channels, say) has to be copied
//! into a tensor first, the product lands in a fresh tensor, and a sum
//! over a batch is another pass. `gemm` itself takes any strides and adds
//! into its destination, so the kernels here hand it the views as they lie
//! in memory.
//!
//! ```
//! use trainer::kernels::strided_gemm::{View, accumulate};
//!
//! // [2 × 3] · [3 × 2], the right operand read transposed from [2 × 3].
//! let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
//! let bt = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0];
//! let mut c = [10.0; 4];
//! accumulate(
//!     (&mut c, View::rows(2, 2)),
//!     (&a, View::rows(2, 3)),
//!     (&bt, View::columns(3, 2)),
//! );
//! assert_eq!(c, [14.0, 12.0, 20.0, 15.0]);
//! ```

use super::uninit;

/// A matrix's place in a slice: element (r, c) at `offset + r·row_stride +
/// c·column_stride`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct View {
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub columns: usize,
    /// Index of element (0, 0).
    pub offset: usize,
    /// Distance between rows.
    pub row_stride: usize,
    /// Distance between columns.
    pub column_stride: usize,
}

impl View {
    /// A row-major `rows × columns` matrix at the slice's start.
    pub fn rows(rows: usize, columns: usize) -> Self {
        Self { rows, columns, offset: 0, row_stride: columns, column_stride: 1 }
    }

    /// The transpose of a row-major `columns × rows` matrix: a `rows ×
    /// columns` matrix stored column by column.
    pub fn columns(rows: usize, columns: usize) -> Self {
        Self { rows, columns, offset: 0, row_stride: 1, column_stride: rows }
    }

    /// The same view with element (0, 0) at `offset`.
    pub fn at(self, offset: usize) -> Self {
        Self { offset, ..self }
    }

    /// With `row_stride` and `column_stride` instead.
    pub fn strides(self, row_stride: usize, column_stride: usize) -> Self {
        Self { row_stride, column_stride, ..self }
    }

    /// One past the largest index the view touches (0 when empty).
    fn end(&self) -> usize {
        if self.rows == 0 || self.columns == 0 {
            return self.offset;
        }
        self.offset + (self.rows - 1) * self.row_stride + (self.columns - 1) * self.column_stride + 1
    }
}

/// `c += a · b` for the views given, on all of rayon's threads when the
/// product is large enough to share.
///
/// # Panics
/// If the shapes do not chain (`a` m × k, `b` k × n, `c` m × n) or a view
/// reaches past its slice: callers build the views from tensor shapes they
/// have checked, so either is a bug here, not a user's input.
pub fn accumulate(c: (&mut [f32], View), a: (&[f32], View), b: (&[f32], View)) {
    product(c, a, b, [true, true]);
}

/// `c = a · b`: [`accumulate`] with what `c` held ignored (it need not be
/// zeroed first), on all threads or (`share` false, for callers that
/// already run one product per rayon task) on the calling thread alone.
pub fn multiply(c: (&mut [f32], View), a: (&[f32], View), b: (&[f32], View), share: bool) {
    product(c, a, b, [share, false]);
}

/// A new m × n matrix, row-major, `a · b` (`a` m × k, `b` k × n), on all
/// threads when the product is large enough to share or (`share` false)
/// on the calling thread alone. Not zeroed first: `gemm` writes each of
/// its values without reading it, and a zeroing pass over columns of
/// tens of MiB cost as much as a cheap layer's product.
///
/// # Panics
/// As [`accumulate`].
pub fn product_of(a: (&[f32], View), b: (&[f32], View), share: bool) -> Vec<f32> {
    let (m, n) = (a.1.rows, b.1.columns);
    let len = m * n;
    if a.1.columns == 0 {
        // A sum of nothing: zeros, which `gemm` is not asked for.
        return vec![0.0; len];
    }
    // SAFETY: `product_through` gets the capacity's `len` values, exclusively
    // ours, with `read_c` false; with K ≥ 1 `gemm` writes every element of
    // the m × n row-major view, which spans all `len` of them (when m or n
    // is 0 it writes nothing and `len` is 0).
    #[allow(unsafe_code)]
    unsafe {
        uninit::written_whole(len, |c| {
            product_through(c.as_mut_ptr().cast(), len, View::rows(m, n), a, b, [share, false]);
        })
    }
}

/// `c = a · b` into values not yet written (spare capacity that
/// [`uninit::written_whole`] hands out): [`multiply`] for a destination
/// with nothing in it to read. Every value `cv` spans is written when the
/// inner dimension (`a`'s columns) is at least one; none otherwise.
///
/// # Panics
/// As [`accumulate`].
pub(crate) fn multiply_into_spare(
    c: (&mut [std::mem::MaybeUninit<f32>], View),
    a: (&[f32], View),
    b: (&[f32], View),
    share: bool,
) {
    let (c, cv) = c;
    // SAFETY: `c` is a `&mut` slice of `c.len()` slots, exclusively ours
    // for the call, and with `read_c` false nothing in it is read.
    #[allow(unsafe_code)]
    unsafe {
        product_through(c.as_mut_ptr().cast(), c.len(), cv, a, b, [share, false]);
    }
}

fn product(c: (&mut [f32], View), a: (&[f32], View), b: (&[f32], View), [share, read_c]: [bool; 2]) {
    let (c, cv) = c;
    // SAFETY: `c` is a `&mut` slice of `c.len()` initialised values.
    #[allow(unsafe_code)]
    unsafe {
        product_through(c.as_mut_ptr(), c.len(), cv, a, b, [share, read_c]);
    }
}

/// [`product`] into `c_len` values at `c`, which it only writes unless
/// `read_c`.
///
/// # Safety
/// `c` points to `c_len` values that are the caller's alone for the call
/// (no operand overlaps them), initialised if `read_c`.
#[allow(unsafe_code)]
unsafe fn product_through(
    c: *mut f32,
    c_len: usize,
    cv: View,
    (a, av): (&[f32], View),
    (b, bv): (&[f32], View),
    [share, read_c]: [bool; 2],
) {
    assert!(
        av.rows == cv.rows && bv.columns == cv.columns && av.columns == bv.rows,
        "strided_gemm: {av:?} · {bv:?} into {cv:?}"
    );
    assert!(cv.end() <= c_len && av.end() <= a.len() && bv.end() <= b.len(), "strided_gemm: view past its slice");
    let [m, n, k] = [cv.rows, cv.columns, av.columns];
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    // Two threads' worth of multiply-adds before sharing pays for waking
    // them (burn-flex's threshold for the same crate is of this order).
    let parallelism = if share && m * n * k >= 1 << 18 { gemm::Parallelism::Rayon(0) } else { gemm::Parallelism::None };
    let stride = |s: usize| s as isize;
    // SAFETY: every index the product reads or writes lies inside its
    // buffer (checked above: `end` is one past the largest), c's buffer is
    // exclusively the caller's (this function's contract) so it overlaps
    // neither operand, and `gemm` computes c = 1·c + 1·a·b (`read_c`, c
    // initialised) or c = 1·a·b through these pointers only, not reading c
    // in the second case.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.add(cv.offset),
            stride(cv.column_stride),
            stride(cv.row_stride),
            read_c,
            a.as_ptr().add(av.offset),
            stride(av.column_stride),
            stride(av.row_stride),
            b.as_ptr().add(bv.offset),
            stride(bv.column_stride),
            stride(bv.row_stride),
            1.0,
            1.0,
            false,
            false,
            false,
            parallelism,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(c: &mut [f32], cv: View, a: &[f32], av: View, b: &[f32], bv: View) {
        for r in 0..cv.rows {
            for col in 0..cv.columns {
                let mut sum = 0.0f64;
                for i in 0..av.columns {
                    sum += f64::from(a[av.offset + r * av.row_stride + i * av.column_stride])
                        * f64::from(b[bv.offset + i * bv.row_stride + col * bv.column_stride]);
                }
                let at = cv.offset + r * cv.row_stride + col * cv.column_stride;
                c[at] = (f64::from(c[at]) + sum) as f32;
            }
        }
    }

    #[test]
    fn strided_products_add_what_the_definition_gives() {
        let values = |len: usize, seed: usize| -> Vec<f32> {
            (0..len).map(|i| ((i * 37 + seed * 11) % 23) as f32 / 7.0 - 1.5).collect()
        };
        // Small and large (threaded) products, operands transposed or in
        // planes of a larger buffer, destinations row- and column-major.
        for &[m, n, k] in &[[3, 5, 7], [64, 16, 400], [17, 33, 1000], [1, 1, 1]] {
            let a = values(2 + m * k * 2, 1);
            let b = values(3 + k * n * 3, 2);
            let av = View::rows(m, k).strides(2 * k, 2).at(2);
            let bv = View::columns(k, n).strides(3, 3 * k).at(3);
            for cv in [View::rows(m, n), View::columns(m, n).at(1)] {
                let mut reference = values(cv.end(), 3);
                let mut added = reference.clone();
                accumulate((&mut added, cv), (&a, av), (&b, bv));
                naive(&mut reference, cv, &a, av, &b, bv);
                for (x, y) in added.iter().zip(&reference) {
                    assert!((x - y).abs() <= 1e-4 * (1.0 + y.abs()), "{m}×{n}×{k}: {x} against {y}");
                }
                // Overwritten, shared or not: what c held is not read.
                let mut product = vec![0.0; cv.end()];
                naive(&mut product, cv, &a, av, &b, bv);
                for share in [true, false] {
                    let mut ours = values(cv.end(), 4);
                    multiply((&mut ours, cv), (&a, av), (&b, bv), share);
                    for (at, (x, y)) in ours.iter().zip(&product).enumerate() {
                        let inside = (0..cv.rows).any(|r| {
                            (0..cv.columns).any(|c| cv.offset + r * cv.row_stride + c * cv.column_stride == at)
                        });
                        if inside {
                            assert!((x - y).abs() <= 1e-4 * (1.0 + y.abs()), "{m}×{n}×{k}: {x} against {y}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "past its slice")]
    fn a_view_past_its_slice_is_refused() {
        let mut c = [0.0; 4];
        accumulate((&mut c, View::rows(2, 2)), (&[1.0; 4], View::rows(2, 3)), (&[1.0; 6], View::rows(3, 2)));
    }
}
