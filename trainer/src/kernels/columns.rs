//! Columns (im2col) of a 2-D convolution, built straight from NCHW: for
//! every input channel `ci` and kernel tap (i, j), the input value that tap
//! meets at each output position, zero where it falls into the padding.
//! The forward convolution ([`conv2d_forward`](super::conv2d_forward)) and
//! the weight gradient ([`conv2d_grad`](super::conv2d_grad)) are matrix
//! products with these columns.
//!
//! cols[ci, i, j][oh, ow] = x[ci, oh·s₀ − p₀ + i·d₀, ow·s₁ − p₁ + j·d₁].
//!
//! Building columns is memory-bound: at the small networks' 16 channels
//! it costs as much as the products themselves. Two things keep it to
//! plain copies:
//! - the buffer is written once, never zeroed first (`batch_columns`);
//! - with a stride along the width, a tap reads every s-th input value.
//!   The input is first regrouped by column remainder modulo s
//!   (`ColumnSource`), so that each tap's values for a run of outputs are
//!   contiguous and copied as a slice rather than gathered one by one.

use std::borrow::Cow;
use std::mem::MaybeUninit;
use std::ops::Range;

use rayon::prelude::*;

use super::uninit::{self, F32Slot};

/// Floats one tile of columns may hold (16 MiB): large enough that each
/// GEMM has thousands of output positions to sum over, small enough that
/// the paper-size fields (768×1152) do not need a copy of the input per
/// kernel tap in memory at once.
const TILE_FLOATS: usize = 4 << 20;

/// Floats of columns one task of [`fill_columns`] writes at least.
const MIN_TASK_FLOATS: usize = 4096;

/// Where a convolution's kernel taps land on its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Kernel height and width.
    pub kernel: [usize; 2],
    /// Step between output positions, in input pixels.
    pub stride: [usize; 2],
    /// Zeros before the first input row and column.
    pub padding: [usize; 2],
    /// Step between kernel taps, in input pixels.
    pub dilation: [usize; 2],
}

impl Window {
    /// The output positions `o` in `0..out` whose tap `k` lands inside an
    /// input of `size` along axis `axis`: `0 <= o·s + k·d − p < size`.
    fn valid(&self, axis: usize, k: usize, size: usize, out: usize) -> Range<usize> {
        let (s, d, p) = (self.stride[axis], self.dilation[axis], self.padding[axis]);
        let offset = k * d;
        let start = if offset >= p { 0 } else { (p - offset).div_ceil(s) };
        let end = if offset >= size + p { 0 } else { (size + p - offset).div_ceil(s) };
        let end = end.min(out);
        start.min(end)..end
    }

    /// Outputs along `axis` of an input of `size` padded by `padding` on
    /// both sides.
    #[cfg(test)]
    pub(crate) fn output_size(&self, axis: usize, size: usize) -> usize {
        (size + 2 * self.padding[axis] - self.dilation[axis] * (self.kernel[axis] - 1) - 1) / self.stride[axis] + 1
    }

    /// Where, in an input plane of `[h, w]`, output `(oh, ow)` reads its
    /// tap `(i, j)`: the index `ih·w + iw`, or `None` in the padding. The
    /// definitions the kernels' tests check against share it.
    #[cfg(test)]
    pub(crate) fn input_at(&self, [oh, ow]: [usize; 2], [i, j]: [usize; 2], [h, w]: [usize; 2]) -> Option<usize> {
        let ih = (oh * self.stride[0] + i * self.dilation[0]) as isize - self.padding[0] as isize;
        let iw = (ow * self.stride[1] + j * self.dilation[1]) as isize - self.padding[1] as isize;
        ((0..h as isize).contains(&ih) && (0..w as isize).contains(&iw)).then(|| ih as usize * w + iw as usize)
    }
}

/// Test values: a short repeating wave in [−1.6, 1.6].
#[cfg(test)]
pub(crate) fn wave(len: usize, k: usize) -> Vec<f32> {
    (0..len).map(|i| ((i * k % 29) as f32 - 14.0) / 9.0).collect()
}

/// The weight gradient of a 2-D convolution by its definition, one product
/// at a time in f64: dW [C_out, C_in, kh, kw] for x [N, C_in, H, W] and the
/// output gradient g [N, C_out, out_h, out_w] (the reference of every
/// weight-gradient kernel's tests).
#[cfg(test)]
pub(crate) fn weight_grad_by_definition(
    x: &[f32],
    g: &[f32],
    [n, c_in, h, w]: [usize; 4],
    [c_out, out_h, out_w]: [usize; 3],
    window: &Window,
) -> Vec<f64> {
    let [kh, kw] = window.kernel;
    let mut dw = vec![0.0f64; c_out * c_in * kh * kw];
    for s in 0..n {
        for co in 0..c_out {
            for ci in 0..c_in {
                for i in 0..kh {
                    for j in 0..kw {
                        for oh in 0..out_h {
                            for ow in 0..out_w {
                                if let Some(at) = window.input_at([oh, ow], [i, j], [h, w]) {
                                    let xv = x[(s * c_in + ci) * h * w + at];
                                    let gv = g[((s * c_out + co) * out_h + oh) * out_w + ow];
                                    dw[((co * c_in + ci) * kh + i) * kw + j] += f64::from(xv) * f64::from(gv);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    dw
}

/// Output rows per tile when one output row of every sample needs
/// `floats_per_row` floats of columns: as many as [`TILE_FLOATS`] holds, at
/// least one.
pub(crate) fn rows_per_tile(floats_per_row: usize, out_h: usize) -> usize {
    (TILE_FLOATS / floats_per_row.max(1)).clamp(1, out_h.max(1))
}

/// The columns of every output row of a convolution, built in one piece by
/// its forward pass ([`conv2d_forward::forward_keeping_input`]) and kept
/// for its weight gradient ([`conv2d_grad::weight_grad_with`]): both
/// products read the same columns of the same input, and building them is
/// as costly as a product at the small networks' channel counts. Only
/// one-tile columns are kept (at most [`TILE_FLOATS`] floats per layer).
///
/// [`conv2d_forward::forward_keeping_input`]: super::conv2d_forward::forward_keeping_input
/// [`conv2d_grad::weight_grad_with`]: super::conv2d_grad::weight_grad_with
#[derive(Debug)]
pub(crate) struct KeptColumns {
    /// [N, taps, positions] or [taps, N · positions], as `order` says
    /// (shared with the product that read them, not copied).
    pub(crate) columns: burn::backend::flex::FlexTensor,
    pub(crate) order: ColumnOrder,
}

/// What a trained layer's forward convolution built from its input that
/// its weight gradient reads again rather than building it: the columns
/// (the product paths) or the padded input (the direct sums, padded as far
/// as the weight gradient reads: `direct_weight_grad2d::padded_extent`).
#[derive(Debug)]
pub(crate) enum KeptInput {
    Columns(KeptColumns),
    Padded(super::direct_conv2d::Padded),
}

impl KeptInput {
    /// The columns, if that is what was kept.
    pub(crate) fn columns(&self) -> Option<&KeptColumns> {
        match self {
            KeptInput::Columns(columns) => Some(columns),
            KeptInput::Padded(_) => None,
        }
    }

    /// The padded input, if that is what was kept.
    pub(crate) fn padded(&self) -> Option<&super::direct_conv2d::Padded> {
        match self {
            KeptInput::Padded(padded) => Some(padded),
            KeptInput::Columns(_) => None,
        }
    }
}

/// `values` laid out [A, B, plane] copied into [B, A, plane]: the small
/// planes' single products want every sample of a channel side by side
/// ([C, N, plane]) where the tensors are [N, C, plane], and back.
pub(crate) fn swap_leading_axes(values: &[f32], [a, b, plane]: [usize; 3]) -> Vec<f32> {
    let mut swapped = vec![0.0f32; a * b * plane];
    for (outer, inner) in values[..a * b * plane].chunks(b * plane).enumerate() {
        for (middle, run) in inner.chunks(plane).enumerate() {
            swapped[(middle * a + outer) * plane..][..plane].copy_from_slice(run);
        }
    }
    swapped
}

/// The input [N, C_in, H, W] of a convolution, ready to build columns
/// from: every row's values regrouped by column remainder modulo the width
/// stride `s`. Row (n, ci, ih) holds `s` segments of `segment` values,
/// segment `r` being x[n, ci, ih, r], x[n, ci, ih, r + s], ... A tap that
/// reads columns `first, first + s, ...` then reads consecutive values of
/// segment `first % s` from `first / s`. With `s = 1` this is the input
/// itself, borrowed. Built once per convolution, shared by its tiles.
pub(crate) struct ColumnSource<'a> {
    rows: Cow<'a, [f32]>,
    dims: [usize; 4],
    stride: usize,
    segment: usize,
}

impl<'a> ColumnSource<'a> {
    pub(crate) fn new(x: &'a [f32], dims: [usize; 4], window: &Window) -> Self {
        let (w, stride) = (dims[3], window.stride[1]);
        if stride == 1 {
            return ColumnSource { rows: Cow::Borrowed(x), dims, stride, segment: w };
        }
        let segment = w.div_ceil(stride);
        // Positions past the end of a short segment are never read.
        let mut rows = vec![0.0f32; dims[0] * dims[1] * dims[2] * stride * segment];
        rows.par_chunks_mut(stride * segment)
            .zip(x.par_chunks(w))
            .for_each(|(dst, src)| regroup_row(dst, src, 0, stride, segment));
        ColumnSource { rows: rows.into(), dims, stride, segment }
    }

    /// Channels of the input (C_in).
    pub(crate) fn channels(&self) -> usize {
        self.dims[1]
    }

    /// Floats from one row (n, ci, ih) to the next.
    fn row_pitch(&self) -> usize {
        self.stride * self.segment
    }

    /// Where, from the start of a row, the values x[row, first], x[row,
    /// first + s], ... begin (they are consecutive).
    fn column_offset(&self, first: usize) -> usize {
        (first % self.stride) * self.segment + first / self.stride
    }
}

/// Writes the row `src`, placed from column `offset` of a longer (padded)
/// row, into `dst` regrouped by column remainder: column `c` goes to
/// segment `c % stride` at position `c / stride`, segments of `segment`
/// values one after the other. A strided window's taps along a row then
/// read consecutive values. Positions no column reaches are left as they
/// are.
pub(super) fn regroup_row(dst: &mut [f32], src: &[f32], offset: usize, stride: usize, segment: usize) {
    for (r, part) in dst.chunks_mut(segment).enumerate().take(stride) {
        // The first source column whose padded column falls in segment r.
        let first = (r + stride - offset % stride) % stride;
        let at = (offset + first) / stride;
        for (d, &v) in part[at..].iter_mut().zip(src.iter().skip(first).step_by(stride)) {
            *d = v;
        }
    }
}

/// Write `value` to every element.
pub(super) fn fill<T: F32Slot>(dst: &mut [T], value: f32) {
    dst.fill(T::holding(value));
}

/// Output planes of fewer positions than this have every sample of a batch
/// in one product (forward and weight gradient of the convolution, the
/// transposed convolution's columns): the `gemm` crate's widest f32
/// microkernel covers 64 rows (4 vectors of 16), and a product per sample
/// has one row per position, or sums over as few.
pub(crate) const SMALL_PLANE: usize = 64;

/// How the rows of a batch's columns follow one another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ColumnOrder {
    /// Rows (n, ci, i, j): a [taps, positions] matrix per sample.
    SampleMajor,
    /// Rows (ci, i, j, n): one [taps, N · positions] matrix, so that a
    /// single product covers every sample when a sample's output plane is
    /// too small to fill the GEMM's microkernel.
    TapMajor,
}

/// Writes single rows of the columns of output rows `rows`: one (sample,
/// tap) row of `rows.len() · out_w` values at a time, into whatever buffer
/// the caller gives (the columns matrix, or a block of rows that the bf16
/// products pack as they go).
pub(crate) struct TapRows<'a> {
    x: &'a ColumnSource<'a>,
    out_w: usize,
    rows: Range<usize>,
    kernel: [usize; 2],
    /// Per kernel row i: the output rows whose tap falls inside the input.
    row_taps: Vec<Range<usize>>,
    /// Per kernel column j: the output columns whose tap falls inside the
    /// input, and where its values start within an input row.
    col_taps: Vec<(Range<usize>, usize)>,
    pitch: usize,
    /// Stride, dilation and padding along the rows.
    vertical: [usize; 3],
}

impl<'a> TapRows<'a> {
    /// What every tap along an axis shares, worked out once rather than
    /// per tap or per line (each a few divisions by the stride, which in a
    /// small network's layers cost more than the copies).
    pub(crate) fn new(x: &'a ColumnSource<'a>, out_w: usize, window: &Window, rows: Range<usize>) -> TapRows<'a> {
        let [kh, kw] = window.kernel;
        let [_, _, h, w] = x.dims;
        let row_taps = (0..kh).map(|i| window.valid(0, i, h, rows.end)).collect();
        let col_taps = (0..kw)
            .map(|j| {
                let valid = window.valid(1, j, w, out_w);
                let first = valid.start * window.stride[1] + j * window.dilation[1];
                let offset = if valid.is_empty() { 0 } else { x.column_offset(first - window.padding[1]) };
                (valid, offset)
            })
            .collect();
        let vertical = [window.stride[0], window.dilation[0], window.padding[0]];
        TapRows { x, out_w, rows, kernel: window.kernel, row_taps, col_taps, pitch: x.row_pitch(), vertical }
    }

    /// Values in a row: the positions of the output rows.
    pub(crate) fn width(&self) -> usize {
        self.rows.len() * self.out_w
    }

    /// The row of tap (ci, i, j) of `sample` into `dst` ([`width`] values,
    /// every one written).
    ///
    /// [`width`]: TapRows::width
    fn write<T: F32Slot>(&self, sample: usize, [ci, i, j]: [usize; 3], dst: &mut [T]) {
        let [_, c_in, h, _] = self.x.dims;
        let (valid_cols, offset) = &self.col_taps[j];
        if valid_cols.is_empty() {
            fill(dst, 0.0);
            return;
        }
        // The input rows of channel ci of the sample.
        let base = (sample * c_in + ci) * h * self.pitch + offset;
        let (lead, len) = (valid_cols.start, valid_cols.len());
        let [s0, d0, p0] = self.vertical;
        for (line, oh) in dst.chunks_mut(self.out_w).zip(self.rows.clone()) {
            if !self.row_taps[i].contains(&oh) {
                fill(line, 0.0);
                continue;
            }
            let at = base + (oh * s0 + i * d0 - p0) * self.pitch;
            let (head, rest) = line.split_at_mut(lead);
            let (body, tail) = rest.split_at_mut(len);
            fill(head, 0.0);
            for (to, &value) in body.iter_mut().zip(&self.x.rows[at..at + len]) {
                *to = T::holding(value);
            }
            fill(tail, 0.0);
        }
    }

    /// Row `tap` (taps ordered (ci, i, j)) of `sample` into `dst`, as
    /// [`write`](TapRows::write).
    pub(crate) fn write_tap(&self, sample: usize, tap: usize, dst: &mut [f32]) {
        let [kh, kw] = self.kernel;
        let (ci, within) = (tap / (kh * kw), tap % (kh * kw));
        self.write(sample, [ci, within / kw, within % kw], dst);
    }
}

/// Write the columns of output rows `rows` of every sample into `cols`:
/// rows of `rows.len() · out_w` values each in `order`, every element
/// written. One parallel loop over every sample's taps: a loop per sample
/// would wait for the slowest task once per sample.
fn fill_columns(
    x: &ColumnSource<'_>,
    out_w: usize,
    window: &Window,
    rows: Range<usize>,
    order: ColumnOrder,
    cols: &mut [MaybeUninit<f32>],
) {
    let [kh, kw] = window.kernel;
    let [n, c_in, ..] = x.dims;
    let width = rows.len() * out_w;
    if width == 0 {
        return;
    }
    let tap_rows = TapRows::new(x, out_w, window, rows);
    // A tap of a small network's layer is a few hundred floats: a task of
    // one tap spent more time in rayon than in its copies. Tasks take runs
    // of taps, enough of them for every thread several times over.
    let taps = cols.len() / width;
    let per_task = (MIN_TASK_FLOATS / width).clamp(1, taps.div_ceil(4 * rayon::current_num_threads()).max(1));
    let sample_taps = c_in * kh * kw;
    cols.par_chunks_mut(per_task * width).enumerate().for_each(|(task, dst)| {
        let row = task * per_task;
        let (mut sample, tap) = match order {
            ColumnOrder::SampleMajor => (row / sample_taps, row % sample_taps),
            ColumnOrder::TapMajor => (row % n.max(1), row / n.max(1)),
        };
        let (mut ci, within) = (tap / (kh * kw), tap % (kh * kw));
        let (mut i, mut j) = (within / kw, within % kw);
        for dst in dst.chunks_mut(width) {
            tap_rows.write(sample, [ci, i, j], dst);
            // The next row's (sample, ci, i, j), by counters: divisions per
            // row cost more than a short row's copy.
            if order == ColumnOrder::TapMajor {
                sample += 1;
                if sample < n {
                    continue;
                }
                sample = 0;
            }
            j += 1;
            if j == kw {
                (i, j) = (i + 1, 0);
                if i == kh {
                    (ci, i) = (ci + 1, 0);
                    if ci == c_in && order == ColumnOrder::SampleMajor {
                        (sample, ci) = (sample + 1, 0);
                    }
                }
            }
        }
    });
}

/// The columns of output rows `rows` for every sample of `x`: [N, taps,
/// rows · out_w], taps ordered (ci, i, j).
pub(crate) fn batch_columns(x: &ColumnSource<'_>, out_w: usize, window: &Window, rows: Range<usize>) -> Vec<f32> {
    batch_columns_in(x, out_w, window, rows, ColumnOrder::SampleMajor)
}

/// [`batch_columns`] with its rows in `order`.
pub(crate) fn batch_columns_in(
    x: &ColumnSource<'_>,
    out_w: usize,
    window: &Window,
    rows: Range<usize>,
    order: ColumnOrder,
) -> Vec<f32> {
    let [kh, kw] = window.kernel;
    let [n, c_in, ..] = x.dims;
    let sample_len = c_in * kh * kw * rows.len() * out_w;
    let len = n * sample_len;
    // Not zeroed first: at 16 channels zeroing cost as much as the copy.
    // SAFETY: the first `len` elements are initialised: `fill_columns`
    // writes every element of every (sample, tap) row of `rows.len() ·
    // out_w` values (every line of a row is written whole, by `fill` or by
    // the head, body and tail that together cover `0..out_w`), and those
    // rows tile `0..len`.
    #[allow(unsafe_code)]
    unsafe {
        uninit::written_whole(len, |cols| {
            fill_columns(x, out_w, window, rows, order, cols);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Columns by their definition, one value at a time.
    fn naive(x: &[f32], [n, c_in, h, w]: [usize; 4], out_w: usize, window: &Window, rows: Range<usize>) -> Vec<f32> {
        let [kh, kw] = window.kernel;
        let mut cols = Vec::new();
        for s in 0..n {
            for ci in 0..c_in {
                for i in 0..kh {
                    for j in 0..kw {
                        for oh in rows.clone() {
                            for ow in 0..out_w {
                                let at = window.input_at([oh, ow], [i, j], [h, w]);
                                cols.push(at.map_or(0.0, |at| x[(s * c_in + ci) * h * w + at]));
                            }
                        }
                    }
                }
            }
        }
        cols
    }

    #[test]
    fn columns_equal_the_definition_for_strides_dilations_padding_and_row_ranges() {
        let windows = [
            Window { kernel: [3, 3], stride: [1, 1], padding: [1, 1], dilation: [1, 1] },
            Window { kernel: [3, 3], stride: [2, 2], padding: [1, 1], dilation: [1, 1] },
            Window { kernel: [7, 7], stride: [2, 2], padding: [3, 3], dilation: [1, 1] },
            Window { kernel: [3, 3], stride: [3, 3], padding: [0, 2], dilation: [1, 1] },
            Window { kernel: [3, 3], stride: [1, 1], padding: [2, 2], dilation: [2, 2] },
            Window { kernel: [3, 3], stride: [1, 2], padding: [6, 6], dilation: [6, 3] },
            Window { kernel: [1, 1], stride: [2, 2], padding: [0, 0], dilation: [1, 1] },
            Window { kernel: [3, 1], stride: [1, 2], padding: [1, 0], dilation: [1, 1] },
        ];
        // Odd and even widths: a stride-2 regrouping has segments of unequal length.
        for dims in [[2, 3, 7, 9], [1, 2, 8, 10], [1, 1, 5, 4], [3, 2, 4, 4]] {
            let [_, _, h, w] = dims;
            let x: Vec<f32> = (0..dims.iter().product()).map(|i| i as f32 + 1.0).collect();
            for window in &windows {
                let (out_h, out_w) = (window.output_size(0, h), window.output_size(1, w));
                for rows in [0..out_h, 0..1, out_h / 2..out_h] {
                    let got = batch_columns(&ColumnSource::new(&x, dims, window), out_w, window, rows.clone());
                    let want = naive(&x, dims, out_w, window, rows.clone());
                    assert_eq!(got, want, "{dims:?} {window:?} rows {rows:?}");
                    // The same rows, tap by tap with the samples inside.
                    let source = ColumnSource::new(&x, dims, window);
                    let tap_major = batch_columns_in(&source, out_w, window, rows.clone(), ColumnOrder::TapMajor);
                    let width = rows.len() * out_w;
                    let (n, taps) = (dims[0], want.len() / (dims[0] * width).max(1));
                    for (r, line) in tap_major.chunks(width.max(1)).enumerate() {
                        let (tap, sample) = (r / n, r % n);
                        let at = (sample * taps + tap) * width;
                        assert_eq!(line, &want[at..at + width], "tap-major {dims:?} {window:?} rows {rows:?} row {r}");
                    }
                }
            }
        }
    }

    #[test]
    fn rows_per_tile_holds_at_least_one_row_and_at_most_the_output() {
        assert_eq!(rows_per_tile(TILE_FLOATS * 2, 10), 1);
        assert_eq!(rows_per_tile(1, 10), 10);
        assert_eq!(rows_per_tile(0, 0), 1);
        assert_eq!(rows_per_tile(TILE_FLOATS / 4, 10), 4);
    }

    #[test]
    fn swapping_the_leading_axes_moves_every_plane_to_its_transposed_place() {
        let [a, b, plane] = [3, 4, 5];
        let values: Vec<f32> = (0..a * b * plane).map(|v| v as f32).collect();
        let swapped = swap_leading_axes(&values, [a, b, plane]);
        for (i, j, p) in index_triples(a, b, plane) {
            assert_eq!(swapped[(j * a + i) * plane + p], values[(i * b + j) * plane + p]);
        }
        assert_eq!(swap_leading_axes(&swapped, [b, a, plane]), values);
    }

    fn index_triples(a: usize, b: usize, c: usize) -> impl Iterator<Item = (usize, usize, usize)> {
        (0..a).flat_map(move |i| (0..b).flat_map(move |j| (0..c).map(move |k| (i, j, k))))
    }
}
