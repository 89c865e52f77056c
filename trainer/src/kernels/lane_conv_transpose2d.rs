//! The transposed 2-D convolution with [`LANES`] output channels in the
//! lanes of one vector: the route [`conv_transpose2d`](super::conv_transpose2d)
//! takes when the output channels come in whole blocks of [`LANES`]
//! (CosmoGAN's generator and the discriminator's input gradients but for
//! their single-channel maps).
//!
//! The product makes the columns position-major, cols[ih, iw][i, j][co] =
//! Σ_ci x[n, ci, ih, iw] · w[ci, co, i, j], from the weight relaid once
//! per call as [ci][i, j][co]. Each output y[n, co, oh, ow] is then
//! gathered: the few taps that reach it (at most ⌈kh/s₀⌉·⌈kw/s₁⌉, 9 of
//! the 25 of a 5 × 5 kernel at stride 2) each add one vector of
//! [`LANES`] channels, and a row of such vectors is turned into the
//! channels' planes once. The plane-major route scatters every tap's row
//! of columns into the output instead, in runs as short as the input is
//! wide (4 to 32 values on CosmoGAN `small`), one output channel at a time.
//!
//! Every output is the sum of its taps in one order (kernel rows, then
//! columns, ascending), with plain additions in independent lanes: the
//! bits do not depend on the kernel path or the thread count. Under
//! `--precision bf16` on a CPU that computes it the columns are bf16
//! products ([`bf16_gemm`]), whose order of sums is fixed as well.

use std::mem::MaybeUninit;

use rayon::prelude::*;

use super::bf16_gemm;
use super::columns::{SMALL_PLANE, swap_leading_axes};
use super::conv_transpose2d::Geometry;
use super::cpu::{self, KernelPath};
use super::strided_gemm::{self, View};
use super::uninit;

/// Output channels summed together: one AVX-512 vector (two AVX2 ones).
pub(crate) const LANES: usize = 16;

/// Whether [`forward`] takes `c_out` output channels: whole blocks of
/// [`LANES`].
pub(crate) fn applies(c_out: usize) -> bool {
    c_out >= LANES && c_out.is_multiple_of(LANES)
}

/// conv_transpose2d(x, weight) without bias, as
/// [`conv_transpose2d::forward`](super::conv_transpose2d::forward), for
/// `c_out` that [`applies`]; `max_column_floats` bounds the columns made
/// at once.
pub(crate) fn forward(
    x: &[f32],
    [n, c_in, h, w]: [usize; 4],
    weight: &[f32],
    c_out: usize,
    geometry: &Geometry,
    out: [usize; 2],
    max_column_floats: usize,
) -> Vec<f32> {
    let [kh, kw] = geometry.kernel;
    let taps = kh * kw;
    // One input position's columns: every tap of every output channel.
    let row = taps * c_out;
    let (plane, out_plane) = (h * w, out[0] * out[1]);
    let mut by_tap = vec![0.0f32; c_in * row];
    for (from, to) in weight[..c_in * row].chunks(row).zip(by_tap.chunks_mut(row)) {
        for (co, channel) in from.chunks(taps).enumerate() {
            for (tap, &value) in channel.iter().enumerate() {
                to[tap * c_out + co] = value;
            }
        }
    }
    let weight_by_tap = (&by_tap[..], View::rows(c_in, row));
    let gather = Gather::new(geometry, [h, w], out, c_out);
    let len = n * c_out * out_plane;
    let gathered = |planes: &mut [MaybeUninit<f32>]| {
        let all_samples_at_once = plane < SMALL_PLANE && n > 1 && row * plane * n <= max_column_floats;
        if bf16_gemm::native_here() {
            let samples = if all_samples_at_once { n } else { 1 };
            let threads = rayon::current_num_threads();
            let per_task = !all_samples_at_once && n >= threads && c_out / LANES < 2 * threads;
            bf16_columns_gathered(x, [n, c_in, plane], (&by_tap, row, c_out), (samples, per_task), &gather, planes);
        } else if all_samples_at_once {
            // x as [C_in, N·H·W], so that one product makes the columns of
            // every sample, rows sample by sample.
            let x_by_channel = swap_leading_axes(x, [n, c_in, plane]);
            let cols = strided_gemm::product_of((&x_by_channel, View::columns(n * plane, c_in)), weight_by_tap, true);
            let blocks = c_out / LANES;
            planes.par_chunks_mut(LANES * out_plane).enumerate().for_each_init(Vec::new, |staged, (index, planes)| {
                let sample = index / blocks;
                gather.block(&cols[sample * plane * row..][..plane * row], index % blocks, planes, staged);
            });
        } else {
            let sample_x = |sample: usize| (x, View::columns(plane, c_in).at(sample * c_in * plane));
            if n >= rayon::current_num_threads() {
                // A sample per task, as the plane-major route shares them.
                // Each sample's columns are a new product, not a buffer
                // kept per task: `product_of` leaves its output unzeroed,
                // where a kept buffer had to be zeroed when made (tens of
                // MiB for CosmoGAN's generator, once per task and call).
                planes.par_chunks_mut(c_out * out_plane).enumerate().for_each_init(
                    Vec::new,
                    |staged, (sample, out)| {
                        let cols = strided_gemm::product_of(sample_x(sample), weight_by_tap, false);
                        for (block, planes) in out.chunks_mut(LANES * out_plane).enumerate() {
                            gather.block(&cols, block, planes, staged);
                        }
                    },
                );
            } else {
                for (sample, out) in planes.chunks_mut(c_out * out_plane).enumerate() {
                    let cols = strided_gemm::product_of(sample_x(sample), weight_by_tap, true);
                    out.par_chunks_mut(LANES * out_plane)
                        .enumerate()
                        .for_each_init(Vec::new, |staged, (block, planes)| gather.block(&cols, block, planes, staged));
                }
            }
        }
    };
    // SAFETY: the first `len` values are written: each branch hands every
    // block of LANES output planes of every sample (`len` values in all)
    // to `Gather::block`, which writes every value of every plane.
    #[allow(unsafe_code)]
    unsafe {
        uninit::written_whole(len, gathered)
    }
}

/// [`forward`]'s outputs with the columns made by bf16 products
/// ([`bf16_gemm`], under `--precision bf16` on a CPU that computes it):
/// the input turned position-major, [N][H·W][C_in], so that a sample's
/// positions are the rows of A, times the weight relaid [C_in][tap, co]
/// and packed once; `samples` samples' columns at a time, or, if
/// `per_task`, each sample's made and gathered by a task of its own, as
/// the f32 route shares samples: one sample after another, each product
/// and gather shared among the threads, left threads idle in the gathers
/// of layers with fewer blocks of channels than twice the threads
/// (CosmoGAN `small`'s), which is where [`forward`] asks for it. A
/// column's sums are the same whichever rows a product holds.
fn bf16_columns_gathered(
    x: &[f32],
    [n, c_in, plane]: [usize; 3],
    (by_tap, row, c_out): (&[f32], usize, usize),
    (samples, per_task): (usize, bool),
    gather: &Gather,
    y: &mut [MaybeUninit<f32>],
) {
    let weight = bf16_gemm::PackedB::new(by_tap, [c_in, row]);
    let by_position = positions_major(x, [n, c_in, plane]);
    let (blocks, sample_floats) = (c_out / LANES, c_out * gather.out[0] * gather.out[1]);
    if per_task {
        y.par_chunks_mut(sample_floats).enumerate().for_each_init(Vec::new, |staged, (sample, out)| {
            let cols = weight.multiply(&by_position[sample * plane * c_in..][..plane * c_in], plane);
            for (block, planes) in out.chunks_mut(sample_floats / blocks).enumerate() {
                gather.block(&cols, block, planes, staged);
            }
        });
        return;
    }
    for (group, out) in y.chunks_mut(samples * sample_floats).enumerate() {
        let in_group = out.len() / sample_floats;
        let a = &by_position[group * samples * plane * c_in..][..in_group * plane * c_in];
        let cols = weight.multiply(a, in_group * plane);
        out.par_chunks_mut(sample_floats / blocks).enumerate().for_each_init(Vec::new, |staged, (index, planes)| {
            let sample = index / blocks;
            gather.block(&cols[sample * plane * row..][..plane * row], index % blocks, planes, staged);
        });
    }
}

/// `x` [N][C][P] as [N][P][C], 16 positions at a time (a cache line of
/// each channel read, 16 rows of C written).
fn positions_major(x: &[f32], [n, channels, plane]: [usize; 3]) -> Vec<f32> {
    const RUN: usize = 16;
    let len = n * plane * channels;
    // SAFETY: the first `len` values are written: each sample's chunk is
    // cut into runs of whole rows of `channels` values, and every (row,
    // channel) of every run is written.
    #[allow(unsafe_code)]
    unsafe {
        uninit::written_whole(len, |out| {
            let sample_floats = (plane * channels).max(1);
            out.par_chunks_mut(sample_floats).zip(x.par_chunks(sample_floats)).for_each(|(to, from)| {
                to.par_chunks_mut((RUN * channels).max(1)).enumerate().for_each(|(run, to)| {
                    let (first, len) = (run * RUN, to.len() / channels);
                    for c in 0..channels {
                        for (p, &value) in from[c * plane + first..][..len].iter().enumerate() {
                            to[p * channels + c].write(value);
                        }
                    }
                });
            });
        })
    }
}

/// Which columns reach each output: offsets into one sample's
/// position-major columns, per output row and per output column.
struct Gather {
    /// Per output row, the offsets of (ih, i) pairs that reach it:
    /// `(ih·W·taps + i·kw)·c_out`, kernel rows ascending.
    rows: Vec<Vec<usize>>,
    /// Per output column, the offsets of (iw, j): `(iw·taps + j)·c_out`.
    columns: Vec<Vec<usize>>,
    out: [usize; 2],
}

impl Gather {
    fn new(geometry: &Geometry, [h, w]: [usize; 2], [out_h, out_w]: [usize; 2], c_out: usize) -> Self {
        let ([kh, kw], [s0, s1], [p0, p1]) = (geometry.kernel, geometry.stride, geometry.padding);
        let taps = kh * kw;
        // Output o along an axis takes tap k from input (o + p − k)/s when
        // that divides and lies inside the input.
        let reaching = |o: usize, k: usize, s: usize, p: usize, len: usize| -> Option<usize> {
            let at = (o + p).checked_sub(k)?;
            (at.is_multiple_of(s) && at / s < len).then_some(at / s)
        };
        let rows = (0..out_h)
            .map(|oh| {
                (0..kh).filter_map(|i| reaching(oh, i, s0, p0, h).map(|ih| (ih * w * taps + i * kw) * c_out)).collect()
            })
            .collect();
        let columns = (0..out_w)
            .map(|ow| (0..kw).filter_map(|j| reaching(ow, j, s1, p1, w).map(|iw| (iw * taps + j) * c_out)).collect())
            .collect();
        Self { rows, columns, out: [out_h, out_w] }
    }

    /// The [`LANES`] output planes of channel block `block` of one sample
    /// (`planes`: [LANES][out_h][out_w]) from its columns `cols`;
    /// `staged` holds a row of outputs channel-minor.
    fn block(&self, cols: &[f32], block: usize, planes: &mut [MaybeUninit<f32>], staged: &mut Vec<f32>) {
        let cols = &cols[block * LANES..];
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx2,fma")]
            fn avx2(gather: &Gather, cols: &[f32], planes: &mut [MaybeUninit<f32>], staged: &mut Vec<f32>) {
                gather.block_with(cols, planes, staged)
            }
            #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")]
            fn avx512(gather: &Gather, cols: &[f32], planes: &mut [MaybeUninit<f32>], staged: &mut Vec<f32>) {
                gather.block_with(cols, planes, staged)
            }
            match cpu::path() {
                // SAFETY: `cpu::path` only chooses a path the CPU supports.
                #[allow(unsafe_code)]
                KernelPath::Avx512 => return unsafe { avx512(self, cols, planes, staged) },
                // SAFETY: as above.
                #[allow(unsafe_code)]
                KernelPath::Avx2 => return unsafe { avx2(self, cols, planes, staged) },
                KernelPath::Portable => {}
            }
        }
        self.block_with(cols, planes, staged)
    }

    /// [`Gather::block`] with `cols` starting at the block's first channel,
    /// compiled for the path it is inlined into.
    #[inline(always)]
    fn block_with(&self, cols: &[f32], planes: &mut [MaybeUninit<f32>], staged: &mut Vec<f32>) {
        let [out_h, out_w] = self.out;
        staged.clear();
        staged.resize(out_w * LANES, 0.0);
        for (oh, rows) in self.rows.iter().enumerate() {
            for (sums, columns) in staged.chunks_exact_mut(LANES).zip(&self.columns) {
                let mut acc = [0.0f32; LANES];
                for &row in rows {
                    for &column in columns {
                        let tap = &cols[row + column..][..LANES];
                        for (a, v) in acc.iter_mut().zip(tap) {
                            *a += v;
                        }
                    }
                }
                sums.copy_from_slice(&acc);
            }
            for (lane, plane) in planes.chunks_exact_mut(out_h * out_w).enumerate() {
                for (value, sums) in plane[oh * out_w..][..out_w].iter_mut().zip(staged.chunks_exact(LANES)) {
                    value.write(sums[lane]);
                }
            }
        }
    }
}
