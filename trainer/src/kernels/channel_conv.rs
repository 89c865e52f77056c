//! Direct 3-D convolution for volumes too narrow for rows: output channels
//! in the vector lanes. Same convolutions as [`direct_conv`](super::direct_conv)
//! (3³ kernel, stride 1, "same" padding, NCDHW f32); that module hands them
//! here when [`applies`] holds.
//!
//! Why: the row kernels put voxels of an output row in the lanes, so an
//! 8-wide row fills half an AVX-512 register and a 4- or 2-wide one (the
//! deep CosmoFlow layers, 4³ and 2³ with 64 and 128 channels) almost
//! nothing; those layers went to burn's im2col + GEMM instead. Their
//! channel counts are large, so here a vector holds 16 output channels of
//! one voxel: the forward pass broadcasts one input value against 16
//! weights, the weight gradient broadcasts one input value against 16
//! output-gradient channels.
//!
//! Summation order: each output of the forward pass (and so of the input
//! gradient, a forward pass with the flipped kernel) is the bias, then the
//! taps in the order input channel, depth, height, width: the order of
//! the row kernels, so the two give the same bits. Each weight-gradient
//! entry sums one sample's voxels in order, then the samples in order.
//! Neither depends on the CPU's vector width.

use rayon::prelude::*;

use super::conv_shape::ConvShape;
use super::cpu::{self, KernelPath};
use super::lanes::load;
use super::uninit::LineAligned;

/// Output channels per task: one AVX-512 register, two AVX2 ones.
const GROUP: usize = 16;

/// Output voxels per forward tile (its accumulators: `TILE × GROUP` lanes).
const TILE: usize = 8;

/// Taps of a 3³ kernel.
const TAPS: usize = 27;

/// Whether a convolution of `shape` goes to these kernels: a 3³ kernel,
/// output channels in whole groups of 16, and rows narrower than 16
/// voxels (where the row kernels leave lanes empty). Depends on the shape
/// only, never on the CPU, so every machine sums the same way.
pub(super) fn applies(shape: &ConvShape) -> bool {
    shape.kernel == 3 && shape.c_out.is_multiple_of(GROUP) && shape.volume[2] < 16
}

/// `weight` [c_out, c_in, 27] as [c_in, 27, c_out]: a tap's weights for
/// consecutive output channels side by side. Written in order; the reads
/// for one input channel stay within a few kilobytes. In whole cache
/// lines: the kernels load a tap's channels 16 at a time.
pub(super) fn channels_last_weights(shape: &ConvShape, weight: &[f32]) -> LineAligned {
    let (c_in, c_out) = (shape.c_in, shape.c_out);
    assert_eq!(weight.len(), shape.weight_len(), "weights of {shape:?}");
    let values =
        (0..c_in).flat_map(|ci| (0..TAPS).flat_map(move |t| (0..c_out).map(move |co| (co * c_in + ci) * TAPS + t)));
    LineAligned::of_exactly(weight.len(), values.map(|at| weight[at]))
}

/// The weights of the input gradient of a convolution of `shape` (the
/// kernel flipped in space, input and output channels swapped) laid out as
/// [`channels_last_weights`] lays out those of its forward pass:
/// [c_out, 27, c_in], tap `t` holding the forward kernel's tap `26 - t`.
pub(super) fn channels_last_flipped_weights(shape: &ConvShape, weight: &[f32]) -> LineAligned {
    let (c_in, c_out) = (shape.c_in, shape.c_out);
    assert_eq!(weight.len(), shape.weight_len(), "weights of {shape:?}");
    let values = (0..c_out)
        .flat_map(|co| (0..TAPS).flat_map(move |t| (0..c_in).map(move |ci| (co * c_in + ci) * TAPS + TAPS - 1 - t)));
    LineAligned::of_exactly(weight.len(), values.map(|at| weight[at]))
}

/// Forward pass into `y` [batch, c_out, D, H, W] from the padded input
/// (`direct_conv`'s layout) and [`channels_last_weights`]. Parallel over
/// samples and groups of output channels.
pub(super) fn forward_padded(shape: &ConvShape, padded: &[f32], weights: &[f32], bias: Option<&[f32]>, y: &mut [f32]) {
    let voxels = shape.voxels();
    let groups = shape.c_out / GROUP;
    y.par_chunks_mut(GROUP * voxels).enumerate().for_each(|(task, out)| {
        let (n, co) = (task / groups, task % groups * GROUP);
        forward_group_wide(shape, padded, weights, bias, n, co, out);
    });
}

/// Offsets of the first voxel of each tap's input row within a padded
/// volume, for taps in (depth, height) order.
fn row_offsets(shape: &ConvShape) -> [usize; 9] {
    let [_, ph, pw] = shape.padded();
    std::array::from_fn(|r| ((r / 3) * ph + r % 3) * pw)
}

/// Offset in the padded volume of the input voxel under tap (0, 0, 0) of
/// output voxel `v`.
fn voxel_base(shape: &ConvShape, v: usize) -> usize {
    let [_, h, w] = shape.volume;
    let [_, ph, pw] = shape.padded();
    let (z, yy, x) = (v / (h * w), (v / w) % h, v % w);
    (z * ph + yy) * pw + x
}

/// Output channels `co..co + GROUP` of sample `n` into `out` (those
/// channels' planes), in vectors of `L` lanes, `V = GROUP / L` of them.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn forward_group<const L: usize, const V: usize>(
    shape: &ConvShape,
    padded: &[f32],
    weights: &[f32],
    bias: Option<&[f32]>,
    n: usize,
    co: usize,
    out: &mut [f32],
) {
    let voxels = shape.voxels();
    let mut v0 = 0;
    while v0 < voxels {
        if voxels - v0 >= TILE {
            forward_tile::<L, V, TILE>(shape, padded, weights, bias, n, co, v0, out);
            v0 += TILE;
        } else {
            forward_tile::<L, V, 1>(shape, padded, weights, bias, n, co, v0, out);
            v0 += 1;
        }
    }
}

/// Output voxels `v0..v0 + R` (in NCDHW order, across rows if need be)
/// of channels `co..co + GROUP`: `R × V` accumulators of `L` lanes; each
/// input value is broadcast against the group's weights.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn forward_tile<const L: usize, const V: usize, const R: usize>(
    shape: &ConvShape,
    padded: &[f32],
    weights: &[f32],
    bias: Option<&[f32]>,
    n: usize,
    co: usize,
    v0: usize,
    out: &mut [f32],
) {
    let [pd, ph, pw] = shape.padded();
    let (c_in, c_out) = (shape.c_in, shape.c_out);
    let volume = pd * ph * pw;
    let voxels = shape.voxels();
    let rows = row_offsets(shape);
    let base: [usize; R] = std::array::from_fn(|r| voxel_base(shape, v0 + r));
    let start: [[f32; L]; V] = match bias {
        Some(b) => std::array::from_fn(|k| load(&b[co + k * L..])),
        None => [[0.0; L]; V],
    };
    let mut acc = [start; R];
    for ci in 0..c_in {
        let input = &padded[(n * c_in + ci) * volume..][..volume];
        for (r9, row) in rows.iter().enumerate() {
            let x: [[f32; 3]; R] = std::array::from_fn(|r| load(&input[base[r] + row..]));
            for kw in 0..3 {
                let at = (ci * TAPS + r9 * 3 + kw) * c_out + co;
                let wv: [[f32; L]; V] = std::array::from_fn(|k| load(&weights[at + k * L..]));
                for (a, xr) in acc.iter_mut().zip(&x) {
                    for (lanes, wk) in a.iter_mut().zip(&wv) {
                        for l in 0..L {
                            lanes[l] = wk[l].mul_add(xr[kw], lanes[l]);
                        }
                    }
                }
            }
        }
    }
    for (r, a) in acc.iter().enumerate() {
        for (k, lanes) in a.iter().enumerate() {
            for (l, v) in lanes.iter().enumerate() {
                out[(k * L + l) * voxels + v0 + r] = *v;
            }
        }
    }
}

/// [`forward_group`] for the [`KernelPath`] `cpu::path` chooses.
#[allow(clippy::too_many_arguments)]
fn forward_group_wide(
    shape: &ConvShape,
    padded: &[f32],
    weights: &[f32],
    bias: Option<&[f32]>,
    n: usize,
    co: usize,
    out: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    match cpu::path() {
        // SAFETY: `cpu::path` only chooses a path the CPU supports.
        #[allow(unsafe_code)]
        KernelPath::Avx512 => return unsafe { avx512::forward_group(shape, padded, weights, bias, n, co, out) },
        // SAFETY: as above.
        #[allow(unsafe_code)]
        KernelPath::Avx2 => return unsafe { avx2::forward_group(shape, padded, weights, bias, n, co, out) },
        KernelPath::Portable => {}
    }
    forward_group::<4, 4>(shape, padded, weights, bias, n, co, out)
}

/// Weight gradient [c_out, c_in, 27] from the padded input and the output
/// gradient `out_grad` [batch, c_out, D, H, W]. One task per input channel
/// and group of output channels.
pub(super) fn weight_grad(shape: &ConvShape, padded: &[f32], out_grad: &[f32]) -> Vec<f32> {
    let (c_in, c_out) = (shape.c_in, shape.c_out);
    let voxels = shape.voxels();
    // The output gradient with channels last, [batch, voxels, c_out]: a
    // voxel's group of channels is one vector.
    let mut g = vec![0.0; out_grad.len()];
    g.par_chunks_mut(voxels * c_out).zip(out_grad.par_chunks(voxels * c_out)).for_each(|(dst, src)| {
        for (co, plane) in src.chunks(voxels).enumerate() {
            for (v, value) in plane.iter().enumerate() {
                dst[v * c_out + co] = *value;
            }
        }
    });
    let groups = c_out / GROUP;
    let tiles: Vec<[[f32; TAPS]; GROUP]> = (0..c_in * groups)
        .into_par_iter()
        .map(|task| {
            let mut tile = [[0.0; TAPS]; GROUP];
            weight_grad_group_wide(shape, padded, &g, task / groups, task % groups * GROUP, &mut tile);
            tile
        })
        .collect();
    let mut grad = vec![0.0; shape.weight_len()];
    for (task, tile) in tiles.iter().enumerate() {
        let (ci, co) = (task / groups, task % groups * GROUP);
        for (j, taps) in tile.iter().enumerate() {
            grad[((co + j) * c_in + ci) * TAPS..][..TAPS].copy_from_slice(taps);
        }
    }
    grad
}

/// The 27 taps' gradients of input channel `ci` for output channels
/// `co..co + GROUP`: `27 × V` accumulators of `L` lanes per sample, each
/// input value broadcast against the voxel's output-gradient channels.
#[inline(always)]
fn weight_grad_group<const L: usize, const V: usize>(
    shape: &ConvShape,
    padded: &[f32],
    g: &[f32],
    ci: usize,
    co: usize,
    out: &mut [[f32; TAPS]; GROUP],
) {
    let [pd, ph, pw] = shape.padded();
    let (c_in, c_out) = (shape.c_in, shape.c_out);
    let volume = pd * ph * pw;
    let voxels = shape.voxels();
    let rows = row_offsets(shape);
    let mut total = [[[0.0f32; L]; V]; TAPS];
    for n in 0..shape.batch {
        let input = &padded[(n * c_in + ci) * volume..][..volume];
        let mut acc = [[[0.0f32; L]; V]; TAPS];
        for v in 0..voxels {
            let base = voxel_base(shape, v);
            let at = (n * voxels + v) * c_out + co;
            let gv: [[f32; L]; V] = std::array::from_fn(|k| load(&g[at + k * L..]));
            for (r9, row) in rows.iter().enumerate() {
                let x: [f32; 3] = load(&input[base + row..]);
                for (kw, xv) in x.iter().enumerate() {
                    for (lanes, gk) in acc[r9 * 3 + kw].iter_mut().zip(&gv) {
                        for l in 0..L {
                            lanes[l] = gk[l].mul_add(*xv, lanes[l]);
                        }
                    }
                }
            }
        }
        for (t, a) in total.iter_mut().zip(&acc) {
            for (tk, ak) in t.iter_mut().zip(a) {
                for l in 0..L {
                    tk[l] += ak[l];
                }
            }
        }
    }
    for (t, a) in total.iter().enumerate() {
        for (k, lanes) in a.iter().enumerate() {
            for (l, v) in lanes.iter().enumerate() {
                out[k * L + l][t] = *v;
            }
        }
    }
}

/// [`weight_grad_group`] for the [`KernelPath`] `cpu::path` chooses.
fn weight_grad_group_wide(
    shape: &ConvShape,
    padded: &[f32],
    g: &[f32],
    ci: usize,
    co: usize,
    out: &mut [[f32; TAPS]; GROUP],
) {
    #[cfg(target_arch = "x86_64")]
    match cpu::path() {
        // SAFETY: `cpu::path` only chooses a path the CPU supports.
        #[allow(unsafe_code)]
        KernelPath::Avx512 => return unsafe { avx512::weight_grad_group(shape, padded, g, ci, co, out) },
        // SAFETY: as above.
        #[allow(unsafe_code)]
        KernelPath::Avx2 => return unsafe { avx2::weight_grad_group(shape, padded, g, ci, co, out) },
        KernelPath::Portable => {}
    }
    weight_grad_group::<4, 4>(shape, padded, g, ci, co, out)
}

/// The kernels above written with one CPU's intrinsics: compiled for AVX2
/// or AVX-512, the portable versions are vectorised by LLVM across the
/// tile's voxels (gathers and scatters) rather than along the channels,
/// which is many times slower. Same operations in the same order, so the
/// same bits. `$vector` holds `$lanes` floats; a group is `GROUP / $lanes`
/// of them.
#[cfg(target_arch = "x86_64")]
macro_rules! vector_kernels {
    ($module:ident, $features:literal, $vector:ty, $lanes:literal,
     $load:ident, $store:ident, $splat:ident, $fma:ident, $add:ident, $zero:ident) => {
        #[allow(unsafe_code)]
        mod $module {
            use std::arch::x86_64::{$add, $fma, $load, $splat, $store, $vector, $zero};

            use super::{ConvShape, GROUP, TAPS, TILE, row_offsets, voxel_base};

            /// Vectors per group of output channels.
            const V: usize = GROUP / $lanes;

            /// The `GROUP` floats at the start of `s`.
            #[target_feature(enable = $features)]
            fn load_group(s: &[f32]) -> [$vector; V] {
                let s = &s[..GROUP];
                let mut group = [$zero(); V];
                for (k, vector) in group.iter_mut().enumerate() {
                    // SAFETY: reads floats k·$lanes.. of `s`, inside its
                    // GROUP floats.
                    *vector = unsafe { $load(s.as_ptr().add(k * $lanes)) };
                }
                group
            }

            #[target_feature(enable = $features)]
            fn store_group(group: &[$vector; V]) -> [f32; GROUP] {
                let mut out = [0.0; GROUP];
                for (k, vector) in group.iter().enumerate() {
                    // SAFETY: writes floats k·$lanes.. of `out`, inside
                    // its GROUP floats.
                    unsafe { $store(out.as_mut_ptr().add(k * $lanes), *vector) };
                }
                out
            }

            /// [`super::forward_group`].
            ///
            /// # Safety
            ///
            /// The CPU must have the features `$features`.
            #[target_feature(enable = $features)]
            #[allow(clippy::too_many_arguments)]
            pub(super) fn forward_group(
                shape: &ConvShape,
                padded: &[f32],
                weights: &[f32],
                bias: Option<&[f32]>,
                n: usize,
                co: usize,
                out: &mut [f32],
            ) {
                let voxels = shape.voxels();
                let mut v0 = 0;
                while v0 < voxels {
                    if voxels - v0 >= TILE {
                        forward_tile::<TILE>(shape, padded, weights, bias, n, co, v0, out);
                        v0 += TILE;
                    } else {
                        forward_tile::<1>(shape, padded, weights, bias, n, co, v0, out);
                        v0 += 1;
                    }
                }
            }

            #[target_feature(enable = $features)]
            #[allow(clippy::too_many_arguments)]
            fn forward_tile<const R: usize>(
                shape: &ConvShape,
                padded: &[f32],
                weights: &[f32],
                bias: Option<&[f32]>,
                n: usize,
                co: usize,
                v0: usize,
                out: &mut [f32],
            ) {
                let [pd, ph, pw] = shape.padded();
                let (c_in, c_out) = (shape.c_in, shape.c_out);
                let volume = pd * ph * pw;
                let voxels = shape.voxels();
                let rows = row_offsets(shape);
                // Plain loops, not `array::from_fn`, inside these
                // functions: its closures were not inlined here (they do
                // not carry the target features), one call per kernel row.
                let mut base = [0; R];
                for (r, b) in base.iter_mut().enumerate() {
                    *b = voxel_base(shape, v0 + r);
                }
                let start = match bias {
                    Some(b) => load_group(&b[co..]),
                    None => [$zero(); V],
                };
                let mut acc = [start; R];
                for ci in 0..c_in {
                    let input = &padded[(n * c_in + ci) * volume..][..volume];
                    for (r9, row) in rows.iter().enumerate() {
                        let mut x = [[0.0; 3]; R];
                        for (xr, b) in x.iter_mut().zip(&base) {
                            xr.copy_from_slice(&input[b + row..][..3]);
                        }
                        for kw in 0..3 {
                            let w = load_group(&weights[(ci * TAPS + r9 * 3 + kw) * c_out + co..]);
                            for (a, xr) in acc.iter_mut().zip(&x) {
                                let xv = $splat(xr[kw]);
                                for (lanes, wk) in a.iter_mut().zip(&w) {
                                    *lanes = $fma(*wk, xv, *lanes);
                                }
                            }
                        }
                    }
                }
                for (r, a) in acc.iter().enumerate() {
                    for (j, v) in store_group(a).iter().enumerate() {
                        out[j * voxels + v0 + r] = *v;
                    }
                }
            }

            /// [`super::weight_grad_group`].
            ///
            /// # Safety
            ///
            /// The CPU must have the features `$features`.
            #[target_feature(enable = $features)]
            pub(super) fn weight_grad_group(
                shape: &ConvShape,
                padded: &[f32],
                g: &[f32],
                ci: usize,
                co: usize,
                out: &mut [[f32; TAPS]; GROUP],
            ) {
                let [pd, ph, pw] = shape.padded();
                let [d, h, w] = shape.volume;
                let (c_in, c_out) = (shape.c_in, shape.c_out);
                let volume = pd * ph * pw;
                let voxels = shape.voxels();
                let rows = row_offsets(shape);
                let mut total = [[$zero(); V]; TAPS];
                for n in 0..shape.batch {
                    let input = &padded[(n * c_in + ci) * volume..][..volume];
                    let mut acc = [[$zero(); V]; TAPS];
                    let sample_g = &g[n * voxels * c_out..][..voxels * c_out];
                    // Voxels in order, row by row: each output row's nine
                    // input rows found once (dividing a voxel's index into
                    // its coordinates cost as much as its multiply-adds).
                    let mut v = 0;
                    for z in 0..d {
                        for yy in 0..h {
                            let mut kernel_rows: [&[f32]; 9] = [&[]; 9];
                            for (kernel_row, row) in kernel_rows.iter_mut().zip(&rows) {
                                *kernel_row = &input[(z * ph + yy) * pw + row..][..w + 2];
                            }
                            for x in 0..w {
                                let gv = load_group(&sample_g[v * c_out + co..]);
                                for (r9, kernel_row) in kernel_rows.iter().enumerate() {
                                    for (kw, xv) in kernel_row[x..x + 3].iter().enumerate() {
                                        let xv = $splat(*xv);
                                        for (lanes, gk) in acc[r9 * 3 + kw].iter_mut().zip(&gv) {
                                            *lanes = $fma(*gk, xv, *lanes);
                                        }
                                    }
                                }
                                v += 1;
                            }
                        }
                    }
                    for (t, a) in total.iter_mut().zip(&acc) {
                        for (tk, ak) in t.iter_mut().zip(a) {
                            *tk = $add(*tk, *ak);
                        }
                    }
                }
                for (t, a) in total.iter().enumerate() {
                    for (j, v) in store_group(a).iter().enumerate() {
                        out[j][t] = *v;
                    }
                }
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
vector_kernels!(
    avx512,
    "avx512f,avx2,fma",
    __m512,
    16,
    _mm512_loadu_ps,
    _mm512_storeu_ps,
    _mm512_set1_ps,
    _mm512_fmadd_ps,
    _mm512_add_ps,
    _mm512_setzero_ps
);
#[cfg(target_arch = "x86_64")]
vector_kernels!(
    avx2,
    "avx2,fma",
    __m256,
    8,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    _mm256_set1_ps,
    _mm256_fmadd_ps,
    _mm256_add_ps,
    _mm256_setzero_ps
);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::kernels::calibrate::values;

    /// The vector weight gradient (the path this CPU runs) sums each entry
    /// as the portable one does, voxel after voxel, sample after sample: the
    /// same bits, across rows, planes and samples.
    #[test]
    fn the_vector_weight_gradient_gives_the_portable_bits() {
        let shape = ConvShape { batch: 2, c_in: 3, c_out: 32, volume: [3, 4, 5], kernel: 3 };
        assert!(applies(&shape));
        let [pd, ph, pw] = shape.padded();
        let padded = values(shape.batch * shape.c_in * pd * ph * pw, 31);
        // Channels last, as `weight_grad` lays the output gradient out.
        let g = values(shape.output_len(), 32);
        for ci in 0..shape.c_in {
            for co in (0..shape.c_out).step_by(GROUP) {
                let (mut portable, mut vector) = ([[0.0f32; TAPS]; GROUP], [[0.0f32; TAPS]; GROUP]);
                weight_grad_group::<4, 4>(&shape, &padded, &g, ci, co, &mut portable);
                weight_grad_group_wide(&shape, &padded, &g, ci, co, &mut vector);
                let bits = |t: &[[f32; TAPS]; GROUP]| t.as_flattened().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&vector), bits(&portable), "input channel {ci}, output channels {co}..");
            }
        }
    }
}
