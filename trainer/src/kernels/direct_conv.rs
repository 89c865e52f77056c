//! Direct 3-D convolution kernels: stride 1, "same" padding (odd kernel edge
//! `k`, `k / 2` voxels of zeros on every side), one group, f32 in burn's
//! NCDHW layout. Pure functions over slices, parallel over output planes
//! with rayon; [`ops`](super::ops) hooks them into burn through its backend-extension route.
//!
//! Why not burn's own `conv3d`: on the CPU backend its forward is im2col +
//! GEMM, and its weight gradient is a convolution whose kernel is the whole
//! output volume: at CosmoFlow's first layer (4 → 8 channels at 32³) each
//! alone costs more than TensorFlow's whole step (`docs/benchmarks.md`).
//! Here every output row is a sum of shifted input rows: the inner loops
//! run over contiguous `w` and vectorise.
//!
//! Summation order is fixed (it does not depend on the thread count or the
//! CPU's vector width) and every multiply-add is fused, so results are
//! bit-reproducible on any machine. Under `--precision bf16` on a CPU
//! with AVX512_BF16, the forward pass and the input gradient of rows at
//! least 16 wide take their taps two at a time in bf16 products instead
//! ([`direct_conv2d_bf16::volume_block`]).

use rayon::prelude::*;

use super::columns::fill;
use super::cpu::{self, KernelPath, wide};
use super::lanes::load;
use super::uninit;
use super::{channel_conv, channel_tile_conv, pair_weight_grad3d};
#[cfg(target_arch = "x86_64")]
use super::{direct_conv2d_bf16, pair_weight_grad3d_bf16};

/// Lanes of the weight-gradient accumulators (fixed, for reproducibility).
pub(super) const LANES: usize = 8;

pub use super::conv_shape::ConvShape;

/// Whether all three passes of a convolution of `shape` (forward, input
/// and weight gradients) run on the kernels with output channels in the
/// vector lanes, made for volumes too narrow for rows.
pub fn channels_in_lanes(shape: &ConvShape) -> bool {
    channel_conv::applies(shape) && channel_conv::applies(&shape.transposed())
}

/// `x` [batch, channels, D, H, W] with `k / 2` zeros around every volume.
fn pad(shape: &ConvShape, channels: usize, x: &[f32]) -> Vec<f32> {
    assert_eq!(x.len(), shape.batch * channels * shape.voxels(), "input of {shape:?} with {channels} channels");
    pad_volumes(shape.volume, shape.kernel / 2, shape.padded(), x)
}

/// Every `volume` of `x` placed `offset` voxels into a volume of edges
/// `padded`, zeros around it. Every element is written once (no zeroing
/// first: this copy is a noticeable part of a CosmoFlow step).
fn pad_volumes(volume: [usize; 3], offset: usize, padded: [usize; 3], x: &[f32]) -> Vec<f32> {
    let [d, h, w] = volume;
    let [pd, ph, pw] = padded;
    assert!(
        (0..3).all(|a| volume[a] + 2 * offset == padded[a]) && x.len().is_multiple_of(d * h * w),
        "{} values in volumes of {volume:?} padded by {offset} to {padded:?}",
        x.len()
    );
    let len = x.len() / (d * h * w) * pd * ph * pw;
    // SAFETY: the first `len` elements are initialised: `x` holds exactly
    // `len / (pd·ph·pw)` volumes (asserted above), so every padded volume
    // has its source, and each is written whole, plane by plane and row by
    // row (zeros outside the volume; zeros, the row, zeros inside it).
    #[allow(unsafe_code)]
    unsafe {
        uninit::written_whole(len, |out| {
            out.par_chunks_mut(pd * ph * pw).zip(x.par_chunks(d * h * w)).for_each(|(dst, src)| {
                for (pz, plane) in dst.chunks_mut(ph * pw).enumerate() {
                    let z = pz.wrapping_sub(offset);
                    if z >= d {
                        fill(plane, 0.0);
                        continue;
                    }
                    for (py, row) in plane.chunks_mut(pw).enumerate() {
                        let y = py.wrapping_sub(offset);
                        if y >= h {
                            fill(row, 0.0);
                            continue;
                        }
                        fill(&mut row[..offset], 0.0);
                        row[offset..offset + w].write_copy_of_slice(&src[(z * h + y) * w..][..w]);
                        fill(&mut row[offset + w..], 0.0);
                    }
                }
            });
        })
    }
}

/// The input of a convolution padded as its kernels read it: made once by
/// the forward pass and kept for the weight gradient.
pub struct PaddedInput {
    shape: ConvShape,
    values: Vec<f32>,
}

impl PaddedInput {
    /// `x` [batch, c_in, D, H, W] of a convolution of `shape`, padded.
    pub fn new(shape: &ConvShape, x: &[f32]) -> Self {
        PaddedInput { shape: *shape, values: pad(shape, shape.c_in, x) }
    }

    /// `x` [batch, c_in, D + k - 1, H + k - 1, W + k - 1], the input of a
    /// valid convolution whose output has `shape`'s volume: the kernels
    /// read it as it is, as the padded input of the "same" convolution of
    /// that volume.
    pub fn valid(shape: &ConvShape, x: Vec<f32>) -> Self {
        assert_eq!(x.len(), valid_input_len(shape), "input of the valid convolution {shape:?}");
        PaddedInput { shape: *shape, values: x }
    }
}

/// Elements of the input of a valid convolution with output volume
/// `shape.volume`.
fn valid_input_len(shape: &ConvShape) -> usize {
    shape.batch * shape.c_in * shape.padded().iter().product::<usize>()
}

impl std::fmt::Debug for PaddedInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PaddedInput").field("shape", &self.shape).field("len", &self.values.len()).finish()
    }
}

/// Forward: `y = conv(x, weight) + bias`, [batch, c_out, D, H, W].
pub fn forward(shape: &ConvShape, x: &[f32], weight: &[f32], bias: Option<&[f32]>) -> Vec<f32> {
    forward_from_padded(&PaddedInput::new(shape, x), weight, bias)
}

/// [`forward`] of an input padded already.
pub fn forward_from_padded(input: &PaddedInput, weight: &[f32], bias: Option<&[f32]>) -> Vec<f32> {
    forward_on(&input.shape, &input.values, weight, bias)
}

/// The valid convolution (no padding) of `x` [batch, c_in, D + k - 1,
/// H + k - 1, W + k - 1] into [batch, c_out, D, H, W], `shape.volume`
/// being that output's: the same kernels, which read `x` as the "same"
/// convolution's padded input. Half as many multiply-adds as the "same"
/// convolution of `x` cropped, where the volume is small (Etalumis).
pub fn forward_valid(shape: &ConvShape, x: &[f32], weight: &[f32], bias: Option<&[f32]>) -> Vec<f32> {
    assert_eq!(x.len(), valid_input_len(shape), "input of the valid convolution {shape:?}");
    forward_on(shape, x, weight, bias)
}

fn forward_on(shape: &ConvShape, padded: &[f32], weight: &[f32], bias: Option<&[f32]>) -> Vec<f32> {
    if channel_tile_conv::applies(shape) {
        let weights = channel_conv::channels_last_weights(shape, weight);
        // SAFETY: the tiles write every output element once.
        #[allow(unsafe_code)]
        return unsafe {
            uninit::written_whole(shape.output_len(), |y| {
                channel_tile_conv::forward_padded(shape, padded, &weights, bias, 0, y)
            })
        };
    }
    // After the channel tiles, which take whole groups of 16 output
    // channels whatever the rows' width (in bf16 too), and ran CosmoFlow's
    // second layer (16 channels of 16³) faster than these row tiles.
    #[cfg(target_arch = "x86_64")]
    if bf16_rows_apply(shape) {
        return forward_bf16(shape, padded, weight, bias);
    }
    let mut y = vec![0.0; shape.output_len()];
    if channel_conv::applies(shape) {
        let weights = channel_conv::channels_last_weights(shape, weight);
        channel_conv::forward_padded(shape, padded, &weights, bias, &mut y);
    } else {
        forward_padded(shape, padded, weight, bias, &mut y);
    }
    y
}

/// Whether a forward pass of `shape` (or an input gradient, a forward
/// pass of the transposed shape) runs in [`forward_bf16`]: under
/// `--precision bf16` on a CPU that computes it, rows holding a whole
/// vector, output channels in whole blocks, and an output to make.
#[cfg(target_arch = "x86_64")]
fn bf16_rows_apply(shape: &ConvShape) -> bool {
    super::bf16_gemm::native_here()
        && direct_conv2d_bf16::takes(shape.volume[2])
        && shape.c_out.is_multiple_of(super::direct_conv2d::CO_BLOCK)
        && !channel_conv::applies(shape)
        && shape.output_len() > 0
}

/// The forward pass in bf16 products ([`direct_conv2d_bf16::volume_block`],
/// `VDPBF16PS`) of a shape [`bf16_rows_apply`] takes. Its operands are
/// bf16 values already (the model rounds them), so its sums differ from
/// the f32 kernels' in order only.
#[cfg(target_arch = "x86_64")]
fn forward_bf16(shape: &ConvShape, padded: &[f32], weight: &[f32], bias: Option<&[f32]>) -> Vec<f32> {
    use super::direct_conv2d::CO_BLOCK as BLOCK;
    let taps = shape.c_in * shape.kernel.pow(3);
    let blocks = shape.c_out / BLOCK;
    let pairs: Vec<Vec<u32>> =
        weight[..shape.c_out * taps].chunks_exact(BLOCK * taps).map(direct_conv2d_bf16::weight_pairs).collect();
    let biases: Vec<[f32; BLOCK]> =
        (0..blocks).map(|b| std::array::from_fn(|c| bias.map_or(0.0, |values| values[b * BLOCK + c]))).collect();
    let tiles = |y: &mut [std::mem::MaybeUninit<f32>]| {
        y.par_chunks_mut(BLOCK * shape.voxels()).enumerate().for_each(|(task, volumes)| {
            let (sample, block) = (task / blocks, task % blocks);
            // SAFETY: `native_here` holds only where the CPU has
            // AVX512_BF16 with AVX-512 F and BW (`Precision::native`).
            #[allow(unsafe_code)]
            unsafe {
                direct_conv2d_bf16::volume_block(shape, padded, sample, &pairs[block], &biases[block], volumes)
            }
        });
    };
    // SAFETY: every block of BLOCK output volumes of every sample goes to
    // `volume_block`, which writes every output of every row of them.
    #[allow(unsafe_code)]
    unsafe {
        uninit::written_whole(shape.output_len(), tiles)
    }
}

/// Gradient of the input: a convolution of the padded output gradient with
/// the kernel flipped in space and its channels swapped.
pub fn input_grad(shape: &ConvShape, weight: &[f32], out_grad: &[f32]) -> Vec<f32> {
    let t = shape.transposed();
    input_grad_of_padded(shape, weight, &pad(&t, t.c_in, out_grad), shape.kernel / 2)
}

/// Gradient of the input of [`forward_valid`]: the output gradient padded
/// by `k - 1` on every side and convolved ("same", at the input's volume)
/// with the flipped kernel.
pub fn input_grad_valid(shape: &ConvShape, weight: &[f32], out_grad: &[f32]) -> Vec<f32> {
    let input = ConvShape { volume: shape.padded(), ..*shape };
    let reach = shape.kernel - 1;
    let padded = pad_volumes(shape.volume, reach, input.padded(), out_grad);
    input_grad_of_padded(&input, weight, &padded, reach)
}

/// The input gradient of a "same" convolution of `shape` from its output
/// gradient padded by `k / 2`, of which `border` voxels on each side are
/// zeros (`k / 2`, or more where the gradient is a valid convolution's).
fn input_grad_of_padded(shape: &ConvShape, weight: &[f32], padded: &[f32], border: usize) -> Vec<f32> {
    let t = shape.transposed();
    if channel_tile_conv::applies(&t) {
        let weights = channel_conv::channels_last_flipped_weights(shape, weight);
        // SAFETY: the tiles write every element of the gradient once.
        #[allow(unsafe_code)]
        return unsafe {
            uninit::written_whole(shape.input_len(), |x_grad| {
                channel_tile_conv::forward_padded(&t, padded, &weights, None, border, x_grad)
            })
        };
    }
    // The flipped kernel is made only for the route that reads it.
    #[cfg(target_arch = "x86_64")]
    if bf16_rows_apply(&t) {
        return forward_bf16(&t, padded, &flipped(shape, weight), None);
    }
    let mut x_grad = vec![0.0; shape.input_len()];
    if channel_conv::applies(&t) {
        let weights = channel_conv::channels_last_flipped_weights(shape, weight);
        channel_conv::forward_padded(&t, padded, &weights, None, &mut x_grad);
    } else {
        forward_padded(&t, padded, &flipped(shape, weight), None, &mut x_grad);
    }
    x_grad
}

/// The kernel of the input gradient: `weight` flipped in space, input and
/// output channels swapped ([c_in, c_out, k, k, k]).
fn flipped(shape: &ConvShape, weight: &[f32]) -> Vec<f32> {
    let k3 = shape.kernel.pow(3);
    let mut flipped = vec![0.0; weight.len()];
    for co in 0..shape.c_out {
        for ci in 0..shape.c_in {
            let src = &weight[(co * shape.c_in + ci) * k3..][..k3];
            let dst = &mut flipped[(ci * shape.c_out + co) * k3..][..k3];
            for (i, v) in src.iter().enumerate() {
                dst[k3 - 1 - i] = *v;
            }
        }
    }
    flipped
}

/// Output channels computed together by the 3³ forward kernel: each input
/// row loaded feeds all of them.
const CO_BLOCK: usize = 4;
/// Output channels of one forward tile: each input row loaded feeds 8
/// channels, and 8 × 2 vectors of accumulators give the FMA units
/// independent sums to interleave (4 channels left them waiting on
/// loads and on each accumulator's chain: `docs/benchmarks.md`, Etalumis).
const FORWARD_CO_BLOCK: usize = 8;

fn forward_padded(shape: &ConvShape, padded: &[f32], weight: &[f32], bias: Option<&[f32]>, y: &mut [f32]) {
    let voxels = shape.voxels();
    let block = if shape.kernel == 3 { FORWARD_CO_BLOCK } else { 1 };
    y.par_chunks_mut(shape.c_out * voxels).enumerate().for_each(|(n, sample)| {
        sample.par_chunks_mut(block * voxels).enumerate().for_each(|(b, out)| {
            let co = b * block;
            forward_block_wide(shape, padded, weight, bias, n, co, out);
        });
    });
}

/// Output planes `co..` of sample `n`, in tiles of `L` lanes.
#[inline(always)]
fn forward_block<const L: usize>(
    shape: &ConvShape,
    padded: &[f32],
    weight: &[f32],
    bias: Option<&[f32]>,
    n: usize,
    co: usize,
    out: &mut [f32],
) {
    match shape.kernel {
        3 => forward_block_3::<L>(shape, padded, weight, bias, n, co, out),
        _ => {
            let voxels = shape.voxels();
            for (j, plane) in out.chunks_mut(voxels).enumerate() {
                forward_plane(shape, padded, weight, bias, n, co + j, plane);
            }
        }
    }
}

/// Output planes `co..` of sample `n` for a 3³ kernel, in register-sized
/// tiles of [`FORWARD_CO_BLOCK`] channels (then [`CO_BLOCK`], then single
/// planes for what is left) × 2·`L` voxels of a row. Same summation order
/// as [`forward_plane`].
#[inline(always)]
fn forward_block_3<const L: usize>(
    shape: &ConvShape,
    padded: &[f32],
    weight: &[f32],
    bias: Option<&[f32]>,
    n: usize,
    co: usize,
    out: &mut [f32],
) {
    let [d, h, w] = shape.volume;
    let voxels = d * h * w;
    // `forward_padded` hands out at most FORWARD_CO_BLOCK channels.
    let channels = out.len() / voxels;
    if channels == FORWARD_CO_BLOCK {
        return forward_rows_3::<FORWARD_CO_BLOCK, L>(shape, padded, weight, bias, n, co, out);
    }
    let (fours, singles) = out.split_at_mut(channels / CO_BLOCK * CO_BLOCK * voxels);
    if !fours.is_empty() {
        forward_rows_3::<CO_BLOCK, L>(shape, padded, weight, bias, n, co, fours);
    }
    let first_single = co + fours.len() / voxels;
    for (j, plane) in singles.chunks_mut(voxels).enumerate() {
        forward_plane(shape, padded, weight, bias, n, first_single + j, plane);
    }
}

/// [`forward_block_3`] for `C` output planes `co..co + C` (`out`).
#[inline(always)]
fn forward_rows_3<const C: usize, const L: usize>(
    shape: &ConvShape,
    padded: &[f32],
    weight: &[f32],
    bias: Option<&[f32]>,
    n: usize,
    co: usize,
    out: &mut [f32],
) {
    let w = shape.volume[2];
    // Tiles of two vectors of L lanes, then of two of 8, and the row's
    // last columns (fewer than a tile) as a two-vector tile of 8 lanes
    // ending at the row's end, overlapping columns done already (which it
    // writes again with the same bits: a voxel's sum does not depend on
    // its tile). On Zen 4 one-vector tiles of 16 lanes, one-vector tiles
    // of 8 for a tail and one-lane tiles (as costly as whole ones) took up
    // to 3 times as long on 31- to 35-wide rows.
    let mut x = 0;
    while x < w {
        let left = w - x;
        if left >= 2 * L {
            forward_tile_3::<C, 2, L>(shape, padded, weight, bias, n, co, x, out);
            x += 2 * L;
        } else if left >= 2 * LANES {
            forward_tile_3::<C, 2, LANES>(shape, padded, weight, bias, n, co, x, out);
            x += 2 * LANES;
        } else if w >= 2 * LANES {
            forward_tile_3::<C, 2, LANES>(shape, padded, weight, bias, n, co, w - 2 * LANES, out);
            x = w;
        } else if w >= LANES {
            let lanes = left.min(LANES);
            forward_tile_3::<C, 1, LANES>(shape, padded, weight, bias, n, co, x + lanes - LANES, out);
            x += lanes;
        } else {
            forward_tile_3::<C, 1, 1>(shape, padded, weight, bias, n, co, x, out);
            x += 1;
        }
    }
}

/// Columns `x..x + V·L` of every row of output planes `co..co + C`: `C ×
/// V` accumulators of `L` lanes, each input row loaded once (at shifts 0,
/// 1, 2) for all of them.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn forward_tile_3<const C: usize, const V: usize, const L: usize>(
    shape: &ConvShape,
    padded: &[f32],
    weight: &[f32],
    bias: Option<&[f32]>,
    n: usize,
    co: usize,
    x: usize,
    out: &mut [f32],
) {
    let [d, h, w] = shape.volume;
    let [pd, ph, pw] = shape.padded();
    let c_in = shape.c_in;
    let input = &padded[n * c_in * pd * ph * pw..][..c_in * pd * ph * pw];
    let taps = |j: usize, ci: usize, kd: usize, kh: usize| -> [f32; 3] {
        load(&weight[((((co + j) * c_in + ci) * 3 + kd) * 3 + kh) * 3..])
    };
    for z in 0..d {
        for yy in 0..h {
            let mut acc = [[[0.0f32; L]; V]; C];
            for (j, a) in acc.iter_mut().enumerate() {
                *a = [[bias.map_or(0.0, |b| b[co + j]); L]; V];
            }
            for ci in 0..c_in {
                for kd in 0..3 {
                    for kh in 0..3 {
                        let at = ((ci * pd + z + kd) * ph + yy + kh) * pw + x;
                        let row = &input[at..at + V * L + 2];
                        let r: [[[f32; L]; 3]; V] =
                            std::array::from_fn(|v| std::array::from_fn(|s| load(&row[v * L + s..])));
                        for (j, a) in acc.iter_mut().enumerate() {
                            let [t0, t1, t2] = taps(j, ci, kd, kh);
                            for v in 0..V {
                                for l in 0..L {
                                    a[v][l] =
                                        t2.mul_add(r[v][2][l], t1.mul_add(r[v][1][l], t0.mul_add(r[v][0][l], a[v][l])));
                                }
                            }
                        }
                    }
                }
            }
            for (j, a) in acc.iter().enumerate() {
                let dst = &mut out[((j * d + z) * h + yy) * w + x..][..V * L];
                for (v, lanes) in a.iter().enumerate() {
                    dst[v * L..][..L].copy_from_slice(lanes);
                }
            }
        }
    }
}

/// One output plane (sample `n`, output channel `co`) of the forward pass.
#[inline(always)]
fn forward_plane(
    shape: &ConvShape,
    padded: &[f32],
    weight: &[f32],
    bias: Option<&[f32]>,
    n: usize,
    co: usize,
    out: &mut [f32],
) {
    let [d, h, w] = shape.volume;
    let [pd, ph, pw] = shape.padded();
    let k = shape.kernel;
    let c_in = shape.c_in;
    out.fill(bias.map_or(0.0, |b| b[co]));
    for ci in 0..c_in {
        let input = &padded[(n * c_in + ci) * pd * ph * pw..][..pd * ph * pw];
        for kd in 0..k {
            for kh in 0..k {
                let taps = &weight[(((co * c_in + ci) * k + kd) * k + kh) * k..][..k];
                for z in 0..d {
                    for yy in 0..h {
                        let row = &input[((z + kd) * ph + yy + kh) * pw..][..pw];
                        let dst = &mut out[(z * h + yy) * w..][..w];
                        add_row_taps(dst, row, taps);
                    }
                }
            }
        }
    }
}

/// [`forward_block`] built for the chosen [`KernelPath`], in tiles of 8
/// lanes, or 16 where AVX-512 registers hold them (each output voxel's sum
/// is the same whatever the tile width).
#[allow(clippy::too_many_arguments)]
fn forward_block_wide(
    shape: &ConvShape,
    padded: &[f32],
    weight: &[f32],
    bias: Option<&[f32]>,
    n: usize,
    co: usize,
    out: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2,fma")]
        fn avx2(
            shape: &ConvShape,
            padded: &[f32],
            weight: &[f32],
            bias: Option<&[f32]>,
            n: usize,
            co: usize,
            out: &mut [f32],
        ) {
            forward_block::<LANES>(shape, padded, weight, bias, n, co, out)
        }
        #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")]
        fn avx512(
            shape: &ConvShape,
            padded: &[f32],
            weight: &[f32],
            bias: Option<&[f32]>,
            n: usize,
            co: usize,
            out: &mut [f32],
        ) {
            forward_block::<{ 2 * LANES }>(shape, padded, weight, bias, n, co, out)
        }
        match cpu::path() {
            // SAFETY: `cpu::path` only chooses a path the CPU supports.
            #[allow(unsafe_code)]
            KernelPath::Avx512 => return unsafe { avx512(shape, padded, weight, bias, n, co, out) },
            // SAFETY: as above.
            #[allow(unsafe_code)]
            KernelPath::Avx2 => return unsafe { avx2(shape, padded, weight, bias, n, co, out) },
            KernelPath::Portable => {}
        }
    }
    forward_block::<LANES>(shape, padded, weight, bias, n, co, out)
}

/// Whether the weight gradient of `shape` runs on
/// [`pair_weight_grad3d`]'s blocks of 8 channels: a 3³ kernel, output
/// channels in whole blocks, the AVX-512 path without the AVX2 weight
/// gradient (same bits as the blocks of 4 below).
#[cfg(target_arch = "x86_64")]
fn pair_blocks_apply(shape: &ConvShape) -> bool {
    pair_blocks_fit(shape) && !cpu::weight_grad_3d_on_avx2()
}

/// A 3³ kernel, output channels in whole blocks of
/// [`pair_weight_grad3d::BLOCK`], on the AVX-512 path: what both pair
/// kernels need.
#[cfg(target_arch = "x86_64")]
fn pair_blocks_fit(shape: &ConvShape) -> bool {
    shape.kernel == 3 && shape.c_out.is_multiple_of(pair_weight_grad3d::BLOCK) && cpu::path() == KernelPath::Avx512
}

/// Whether the weight gradient of `shape` runs on
/// [`pair_weight_grad3d_bf16`]'s blocks in bf16 products: as
/// [`pair_blocks_apply`] (the AVX-512 path, whatever the calibration chose
/// for f32) under `--precision bf16` on a CPU with AVX512_BF16.
#[cfg(target_arch = "x86_64")]
fn pair_bf16_applies(shape: &ConvShape) -> bool {
    pair_blocks_fit(shape) && super::bf16_gemm::native_here()
}

/// The weight gradient of `shape` from the tiles `tiles(blocks, inputs)`
/// gives ([`pair_weight_grad3d::tiles`]' order), in tasks of
/// [`pair_tasks`], into [C_out, C_in, 27].
#[cfg(target_arch = "x86_64")]
fn pair_weight_grad(
    shape: &ConvShape,
    tiles: impl Fn(std::ops::Range<usize>, std::ops::Range<usize>) -> Vec<[[f32; 27]; pair_weight_grad3d::BLOCK]> + Sync,
) -> Vec<f32> {
    use pair_weight_grad3d::BLOCK;
    let mut grad = vec![0.0; shape.weight_len()];
    let (c_in, blocks) = (shape.c_in, shape.c_out / BLOCK);
    let (blocks_per_task, inputs_per_task) = pair_tasks(blocks, c_in, rayon::current_num_threads());
    let inputs_tasks = c_in.div_ceil(inputs_per_task);
    let tasks: Vec<Vec<[[f32; 27]; BLOCK]>> = (0..blocks.div_ceil(blocks_per_task) * inputs_tasks)
        .into_par_iter()
        .map(|t| {
            let b = t / inputs_tasks * blocks_per_task;
            let ci = t % inputs_tasks * inputs_per_task;
            tiles(b..(b + blocks_per_task).min(blocks), ci..(ci + inputs_per_task).min(c_in))
        })
        .collect();
    for (t, tiles) in tasks.iter().enumerate() {
        let (b0, ci0) = (t / inputs_tasks * blocks_per_task, t % inputs_tasks * inputs_per_task);
        let inputs = (ci0 + inputs_per_task).min(c_in) - ci0;
        for (k, tile) in tiles.iter().enumerate() {
            let (co, ci) = ((b0 + k / inputs) * BLOCK, ci0 + k % inputs);
            for (j, taps) in tile.iter().enumerate() {
                grad[((co + j) * c_in + ci) * 27..][..27].copy_from_slice(taps);
            }
        }
    }
    grad
}

/// (blocks, input channels) of one task of [`pair_weight_grad3d`]'s
/// weight gradient over `blocks` blocks and `c_in` input channels on
/// `threads` threads: up to 4 × 16, so that a task reads its blocks' output
/// gradient once per 16 input channels and its input channels once per 4
/// blocks (Etalumis' 64 → 64 layer: 8 tasks), smaller until there are 4
/// tasks a thread (a small layer on one task would leave the other
/// threads idle). Each tile's sums do not depend on the split.
fn pair_tasks(blocks: usize, c_in: usize, threads: usize) -> (usize, usize) {
    let (mut per_block, mut per_input) = (4.min(blocks), 16.min(c_in));
    let tasks = |b: usize, i: usize| blocks.div_ceil(b) * c_in.div_ceil(i);
    while tasks(per_block, per_input) < 4 * threads && (per_block, per_input) != (1, 1) {
        if per_input > 1 {
            per_input = per_input.div_ceil(2);
        } else {
            per_block = per_block.div_ceil(2);
        }
    }
    (per_block, per_input)
}

/// [`weight_grad_block_3`], with explicit AVX2 loads where the CPU has them.
fn weight_grad_block_3_wide(
    shape: &ConvShape,
    padded: &[f32],
    out_grad: &[f32],
    co: usize,
    ci: usize,
    out: &mut [[f32; 27]; CO_BLOCK],
) {
    #[cfg(target_arch = "x86_64")]
    match cpu::path() {
        // SAFETY: `cpu::path` only chooses a path the CPU supports.
        #[allow(unsafe_code)]
        KernelPath::Avx512 if !cpu::weight_grad_3d_on_avx2() => {
            return unsafe { weight_grad_avx512::block_3(shape, padded, out_grad, co, ci, out) };
        }
        // SAFETY: the AVX2 path, or the AVX-512 path (whose CPUs all have
        // AVX2 and FMA: `KernelPath::supported`) where the AVX2 kernel was
        // measured faster, or is by default on CPUs that split 512-bit
        // vectors (Zen 4): the AVX-512 one pairs two channels' 8 lanes per
        // register with broadcasts and inserts, and 512-bit multiply-adds
        // there are two 256-bit ones (the step figure is in
        // docs/benchmarks.md).
        #[allow(unsafe_code)]
        KernelPath::Avx512 | KernelPath::Avx2 => {
            return unsafe { weight_grad_avx2::block_3(shape, padded, out_grad, co, ci, out) };
        }
        KernelPath::Portable => {}
    }
    weight_grad_block_3(shape, padded, out_grad, co, ci, out);
}
wide!(weight_grad_pair_wide, weight_grad_pair, (
    shape: &ConvShape, padded: &[f32], out_grad: &[f32], pair: usize, out: &mut [f32]
));

/// `dst[i] += Σ_j taps[j] · row[i + j]`, in order of `j`.
#[inline(always)]
fn add_row_taps(dst: &mut [f32], row: &[f32], taps: &[f32]) {
    let w = dst.len();
    if let &[t0, t1, t2] = taps {
        let (r0, r1, r2) = (&row[..w], &row[1..w + 1], &row[2..w + 2]);
        for i in 0..w {
            dst[i] = t2.mul_add(r2[i], t1.mul_add(r1[i], t0.mul_add(r0[i], dst[i])));
        }
    } else {
        for (j, &t) in taps.iter().enumerate() {
            for (o, r) in dst.iter_mut().zip(&row[j..j + w]) {
                *o = t.mul_add(*r, *o);
            }
        }
    }
}

/// `total += plane`, lane by lane: the per-plane partial sums of the
/// weight gradient's 3³ blocks added to their running totals.
#[inline(always)]
fn add_planes(total: &mut [[[f32; LANES]; 3]; CO_BLOCK], plane: &[[[f32; LANES]; 3]; CO_BLOCK]) {
    for (t, p) in total.iter_mut().flatten().zip(plane.iter().flatten()) {
        for (a, b) in t.iter_mut().zip(p) {
            *a += b;
        }
    }
}

/// Gradient of the weight, [c_out, c_in, k, k, k]. One task per (output,
/// input) channel pair; each kernel row's `k` taps are accumulated together,
/// so the output-gradient row is loaded once for all of them and the
/// accumulators stay in registers.
///
/// Each output plane (one sample, one depth `z`) is summed into fresh
/// accumulators that are then added to the running total. One chain of
/// multiply-adds over a whole batch (thousands of terms per lane) lost
/// enough precision that a batch of 4 on one rank and two of 2 on two
/// ranks trained measurably apart under Adam; per-plane partial sums keep
/// the chains short and make the sum over samples an explicit outer one.
pub fn weight_grad(shape: &ConvShape, x: &[f32], out_grad: &[f32]) -> Vec<f32> {
    weight_grad_from_padded(&PaddedInput::new(shape, x), out_grad)
}

/// [`weight_grad`] from the input its forward pass padded.
pub fn weight_grad_from_padded(input: &PaddedInput, out_grad: &[f32]) -> Vec<f32> {
    let (shape, padded) = (&input.shape, &input.values);
    if channel_conv::applies(shape) {
        return channel_conv::weight_grad(shape, padded, out_grad);
    }
    #[cfg(target_arch = "x86_64")]
    if pair_bf16_applies(shape) {
        // SAFETY: `pair_bf16_applies` holds only on the AVX-512 path (F,
        // BW, VL, DQ) of a CPU with AVX512_BF16 (`native_here`).
        #[allow(unsafe_code)]
        let (padded, pairs) = unsafe {
            (pair_weight_grad3d_bf16::padded_values(padded), pair_weight_grad3d_bf16::channel_pairs(shape, out_grad))
        };
        return pair_weight_grad(shape, |blocks, inputs| {
            // SAFETY: as above.
            #[allow(unsafe_code)]
            unsafe {
                pair_weight_grad3d_bf16::tiles(shape, &padded, &pairs, blocks, inputs)
            }
        });
    }
    #[cfg(target_arch = "x86_64")]
    if pair_blocks_apply(shape) {
        let pairs = pair_weight_grad3d::channel_pairs(shape, out_grad);
        return pair_weight_grad(shape, |blocks, inputs| {
            // SAFETY: `pair_blocks_apply` holds only on the AVX-512
            // path, whose CPUs have AVX-512 F and DQ, AVX2 and FMA.
            #[allow(unsafe_code)]
            unsafe {
                pair_weight_grad3d::tiles(shape, padded, &pairs, blocks, inputs)
            }
        });
    }
    let mut grad = vec![0.0; shape.weight_len()];
    if shape.kernel == 3 && shape.c_out.is_multiple_of(CO_BLOCK) {
        let (c_in, blocks) = (shape.c_in, shape.c_out / CO_BLOCK);
        let tiles: Vec<[[f32; 27]; CO_BLOCK]> = (0..blocks * c_in)
            .into_par_iter()
            .map(|t| {
                let mut tile = [[0.0; 27]; CO_BLOCK];
                weight_grad_block_3_wide(shape, padded, out_grad, t / c_in * CO_BLOCK, t % c_in, &mut tile);
                tile
            })
            .collect();
        for (t, tile) in tiles.iter().enumerate() {
            let (co, ci) = (t / c_in * CO_BLOCK, t % c_in);
            for (j, taps) in tile.iter().enumerate() {
                grad[((co + j) * c_in + ci) * 27..][..27].copy_from_slice(taps);
            }
        }
        return grad;
    }
    grad.par_chunks_mut(shape.kernel.pow(3)).enumerate().for_each(|(pair, out)| {
        weight_grad_pair_wide(shape, padded, out_grad, pair, out);
    });
    grad
}

/// The 3³ weight gradient of output channels `co..co + CO_BLOCK` from input
/// channel `ci`: each input row is loaded once (at shifts 0, 1, 2) for all
/// of them. Same summation order as [`weight_grad_pair`].
#[inline(always)]
fn weight_grad_block_3(
    shape: &ConvShape,
    padded: &[f32],
    out_grad: &[f32],
    co: usize,
    ci: usize,
    out: &mut [[f32; 27]; CO_BLOCK],
) {
    let [d, h, w] = shape.volume;
    let [pd, ph, pw] = shape.padded();
    let (c_in, c_out, voxels) = (shape.c_in, shape.c_out, d * h * w);
    let full = w - w % LANES;
    for kd in 0..3 {
        for kh in 0..3 {
            let mut total = [[[0.0f32; LANES]; 3]; CO_BLOCK];
            for n in 0..shape.batch {
                let input = &padded[(n * c_in + ci) * pd * ph * pw..][..pd * ph * pw];
                let dy: [&[f32]; CO_BLOCK] =
                    std::array::from_fn(|j| &out_grad[(n * c_out + co + j) * voxels..][..voxels]);
                for z in 0..d {
                    let mut acc = [[[0.0f32; LANES]; 3]; CO_BLOCK];
                    for yy in 0..h {
                        let row = &input[((z + kd) * ph + yy + kh) * pw..][..pw];
                        let at = (z * h + yy) * w;
                        for c in (0..full).step_by(LANES) {
                            let r: [[f32; LANES]; 3] = std::array::from_fn(|s| load(&row[c + s..]));
                            for (j, a) in acc.iter_mut().enumerate() {
                                let g: [f32; LANES] = load(&dy[j][at + c..]);
                                for (s, lanes) in a.iter_mut().enumerate() {
                                    for l in 0..LANES {
                                        lanes[l] = g[l].mul_add(r[s][l], lanes[l]);
                                    }
                                }
                            }
                        }
                        for i in full..w {
                            for (j, a) in acc.iter_mut().enumerate() {
                                for (s, lanes) in a.iter_mut().enumerate() {
                                    lanes[i - full] = dy[j][at + i].mul_add(row[i + s], lanes[i - full]);
                                }
                            }
                        }
                    }
                    add_planes(&mut total, &acc);
                }
            }
            for (j, a) in total.iter().enumerate() {
                for (s, lanes) in a.iter().enumerate() {
                    out[j][(kd * 3 + kh) * 3 + s] = lanes.iter().sum();
                }
            }
        }
    }
}

/// The 3³ weight gradient written with AVX2 intrinsics. The portable
/// version compiled for AVX2 builds the three shifted input vectors from
/// one load and shuffles, and keeps its accumulators on the stack; here
/// every vector is one unaligned load and the twelve accumulators of a
/// kernel row are registers. The loops run sample by sample and plane by
/// plane with the nine kernel rows inside, so the output-gradient plane
/// and the three input planes a plane's nine kernel rows read (about
/// 28 KiB at Etalumis' 31 × 31, its largest) are read from L1 nine times
/// rather than each kernel row streaming the whole sample through L2; each
/// accumulator still sees the same operations in the same order as in
/// [`weight_grad_block_3`] (plane after plane, sample after sample), so the
/// same bits.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
pub(in crate::kernels) mod weight_grad_avx2 {
    use std::arch::x86_64::{
        __m256, __m256i, _mm256_add_ps, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_loadu_si256, _mm256_maskload_ps,
        _mm256_setzero_ps, _mm256_storeu_ps,
    };

    use super::{CO_BLOCK, ConvShape, LANES};

    /// All bits set in lanes `..LANES`, none in the next `LANES`.
    const TAIL_MASKS: [i32; 2 * LANES] = [-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0];

    /// The mask of a row's last `lanes` (< LANES) columns for
    /// `_mm256_maskload_ps`, which reads only the lanes it sets and gives
    /// zeros in the others: there the multiply-adds add 0 · 0, and each
    /// lane the portable kernel uses sees its operations.
    #[target_feature(enable = "avx2")]
    pub(in crate::kernels) fn tail_mask(lanes: usize) -> __m256i {
        let start = &TAIL_MASKS[LANES - lanes.min(LANES)..][..LANES];
        // SAFETY: `start` holds LANES i32s, one 256-bit vector.
        unsafe { _mm256_loadu_si256(start.as_ptr().cast()) }
    }

    /// The weight gradient block; checks the lengths every pointer below
    /// relies on (and panics if they do not hold).
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2 and FMA (`is_x86_feature_detected!`).
    pub(super) unsafe fn block_3(
        shape: &ConvShape,
        padded: &[f32],
        out_grad: &[f32],
        co: usize,
        ci: usize,
        out: &mut [[f32; 27]; CO_BLOCK],
    ) {
        super::check_block_3(shape, padded, out_grad, co, ci);
        // SAFETY: AVX2 and FMA are present (this function's contract), and
        // `check_block_3` bounds every offset read in `block_3_unchecked`.
        unsafe { block_3_unchecked(shape, padded, out_grad, co, ci, out) }
    }

    #[target_feature(enable = "avx2,fma")]
    fn block_3_unchecked(
        shape: &ConvShape,
        padded: &[f32],
        out_grad: &[f32],
        co: usize,
        ci: usize,
        out: &mut [[f32; 27]; CO_BLOCK],
    ) {
        let [d, h, w] = shape.volume;
        let [pd, ph, pw] = shape.padded();
        let (c_in, c_out, voxels) = (shape.c_in, shape.c_out, d * h * w);
        let full = w - w % LANES;
        // Per kernel row (kd, kh): CO_BLOCK channels × 3 shifts of LANES.
        let mut saved = [[[[0.0f32; LANES]; 3]; CO_BLOCK]; 9];
        for n in 0..shape.batch {
            let input = &padded[(n * c_in + ci) * pd * ph * pw..][..pd * ph * pw];
            let dy: [&[f32]; CO_BLOCK] = std::array::from_fn(|j| &out_grad[(n * c_out + co + j) * voxels..][..voxels]);
            for z in 0..d {
                for (kernel_row, kept) in saved.iter_mut().enumerate() {
                    let (kd, kh) = (kernel_row / 3, kernel_row % 3);
                    let mut acc: [[__m256; 3]; CO_BLOCK] = [[_mm256_setzero_ps(); 3]; CO_BLOCK];
                    for yy in 0..h {
                        let row = &input[((z + kd) * ph + yy + kh) * pw..][..pw];
                        let at = (z * h + yy) * w;
                        let mut c = 0;
                        while c < full {
                            // SAFETY: c + 2 + LANES <= full + 2 <= pw and
                            // at + c + LANES <= at + w <= voxels.
                            let (r0, r1, r2, g) = unsafe {
                                let p = row.as_ptr().add(c);
                                let g: [__m256; CO_BLOCK] =
                                    std::array::from_fn(|j| _mm256_loadu_ps(dy[j].as_ptr().add(at + c)));
                                (_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(1)), _mm256_loadu_ps(p.add(2)), g)
                            };
                            for j in 0..CO_BLOCK {
                                acc[j][0] = _mm256_fmadd_ps(g[j], r0, acc[j][0]);
                                acc[j][1] = _mm256_fmadd_ps(g[j], r1, acc[j][1]);
                                acc[j][2] = _mm256_fmadd_ps(g[j], r2, acc[j][2]);
                            }
                            c += LANES;
                        }
                        if full < w {
                            // SAFETY: the mask reads lanes full..w only:
                            // full + s + (w - full) <= w + 2 = pw and
                            // at + w <= voxels.
                            let (r, g) = unsafe {
                                let mask = tail_mask(w - full);
                                let p = row.as_ptr().add(full);
                                let r: [__m256; 3] = std::array::from_fn(|s| _mm256_maskload_ps(p.add(s), mask));
                                let g: [__m256; CO_BLOCK] =
                                    std::array::from_fn(|j| _mm256_maskload_ps(dy[j].as_ptr().add(at + full), mask));
                                (r, g)
                            };
                            for j in 0..CO_BLOCK {
                                for s in 0..3 {
                                    acc[j][s] = _mm256_fmadd_ps(g[j], r[s], acc[j][s]);
                                }
                            }
                        }
                    }
                    // The plane's partial sums join the running totals.
                    for (j, a) in acc.iter().enumerate() {
                        for (s, v) in a.iter().enumerate() {
                            // SAFETY: `kept[j][s]` holds LANES floats.
                            unsafe {
                                let total = _mm256_add_ps(_mm256_loadu_ps(kept[j][s].as_ptr()), *v);
                                _mm256_storeu_ps(kept[j][s].as_mut_ptr(), total);
                            }
                        }
                    }
                }
            }
        }
        super::sum_lanes_into(&saved, out);
    }
}

/// The 3³ weight gradient with AVX-512: the AVX2 scheme with two output
/// channels per 16-lane register (channel `2p` in the low eight lanes,
/// `2p + 1` in the high eight) and each shifted input vector broadcast to
/// both halves. Every lane sees the same operations in the same order as
/// in the AVX2 and portable versions, so the same bits, with half the
/// multiply-add instructions.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod weight_grad_avx512 {
    use std::arch::x86_64::{
        __m512, _mm256_loadu_ps, _mm256_maskload_ps, _mm512_add_ps, _mm512_broadcast_f32x8, _mm512_castps256_ps512,
        _mm512_fmadd_ps, _mm512_insertf32x8, _mm512_loadu_ps, _mm512_setzero_ps, _mm512_storeu_ps,
    };

    use super::weight_grad_avx2::tail_mask;
    use super::{CO_BLOCK, ConvShape, LANES};

    const PAIRS: usize = CO_BLOCK / 2;

    /// The weight gradient block; checks the lengths every pointer below
    /// relies on (and panics if they do not hold).
    ///
    /// # Safety
    ///
    /// The CPU must support AVX-512 F and DQ and FMA (`is_x86_feature_detected!`).
    pub(super) unsafe fn block_3(
        shape: &ConvShape,
        padded: &[f32],
        out_grad: &[f32],
        co: usize,
        ci: usize,
        out: &mut [[f32; 27]; CO_BLOCK],
    ) {
        super::check_block_3(shape, padded, out_grad, co, ci);
        // SAFETY: the CPU features are this function's contract, and
        // `check_block_3` bounds every offset read in `block_3_unchecked`.
        unsafe { block_3_unchecked(shape, padded, out_grad, co, ci, out) }
    }

    #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
    fn block_3_unchecked(
        shape: &ConvShape,
        padded: &[f32],
        out_grad: &[f32],
        co: usize,
        ci: usize,
        out: &mut [[f32; 27]; CO_BLOCK],
    ) {
        let [d, h, w] = shape.volume;
        let [pd, ph, pw] = shape.padded();
        let (c_in, c_out, voxels) = (shape.c_in, shape.c_out, d * h * w);
        let full = w - w % LANES;
        let mut saved = [[[[0.0f32; LANES]; 3]; CO_BLOCK]; 9];
        for n in 0..shape.batch {
            let input = &padded[(n * c_in + ci) * pd * ph * pw..][..pd * ph * pw];
            let dy: [&[f32]; CO_BLOCK] = std::array::from_fn(|j| &out_grad[(n * c_out + co + j) * voxels..][..voxels]);
            for z in 0..d {
                for (kernel_row, kept) in saved.iter_mut().enumerate() {
                    let (kd, kh) = (kernel_row / 3, kernel_row % 3);
                    let mut acc: [[__m512; 3]; PAIRS] = [[_mm512_setzero_ps(); 3]; PAIRS];
                    for yy in 0..h {
                        let row = &input[((z + kd) * ph + yy + kh) * pw..][..pw];
                        let at = (z * h + yy) * w;
                        let mut c = 0;
                        while c < full {
                            // SAFETY: c + 2 + LANES <= full + 2 <= pw and
                            // at + c + LANES <= at + w <= voxels.
                            let (r, g) = unsafe {
                                let p = row.as_ptr().add(c);
                                let r: [__m512; 3] =
                                    std::array::from_fn(|s| _mm512_broadcast_f32x8(_mm256_loadu_ps(p.add(s))));
                                let g: [__m512; PAIRS] = std::array::from_fn(|q| {
                                    let low = _mm512_castps256_ps512(_mm256_loadu_ps(dy[2 * q].as_ptr().add(at + c)));
                                    _mm512_insertf32x8::<1>(low, _mm256_loadu_ps(dy[2 * q + 1].as_ptr().add(at + c)))
                                });
                                (r, g)
                            };
                            for q in 0..PAIRS {
                                for s in 0..3 {
                                    acc[q][s] = _mm512_fmadd_ps(g[q], r[s], acc[q][s]);
                                }
                            }
                            c += LANES;
                        }
                        if full < w {
                            // SAFETY: as in the AVX2 kernel's tail.
                            let (r, g) = unsafe {
                                let mask = tail_mask(w - full);
                                let p = row.as_ptr().add(full);
                                let r: [__m512; 3] =
                                    std::array::from_fn(|s| _mm512_broadcast_f32x8(_mm256_maskload_ps(p.add(s), mask)));
                                let g: [__m512; PAIRS] = std::array::from_fn(|q| {
                                    let [low, high] = [2 * q, 2 * q + 1]
                                        .map(|j| _mm256_maskload_ps(dy[j].as_ptr().add(at + full), mask));
                                    _mm512_insertf32x8::<1>(_mm512_castps256_ps512(low), high)
                                });
                                (r, g)
                            };
                            for q in 0..PAIRS {
                                for s in 0..3 {
                                    acc[q][s] = _mm512_fmadd_ps(g[q], r[s], acc[q][s]);
                                }
                            }
                        }
                    }
                    // The plane's partial sums join the running totals.
                    for (q, a) in acc.iter().enumerate() {
                        for (s, v) in a.iter().enumerate() {
                            let mut pair = [kept[2 * q][s], kept[2 * q + 1][s]];
                            // SAFETY: `pair` holds 2 × LANES = 16 floats.
                            unsafe {
                                let total = _mm512_add_ps(_mm512_loadu_ps(pair.as_ptr().cast::<f32>()), *v);
                                _mm512_storeu_ps(pair.as_mut_ptr().cast::<f32>(), total);
                            }
                            [kept[2 * q][s], kept[2 * q + 1][s]] = pair;
                        }
                    }
                }
            }
        }
        super::sum_lanes_into(&saved, out);
    }
}

/// The bounds the intrinsic weight-gradient blocks rely on.
#[cfg(target_arch = "x86_64")]
fn check_block_3(shape: &ConvShape, padded: &[f32], out_grad: &[f32], co: usize, ci: usize) {
    let [pd, ph, pw] = shape.padded();
    assert!(shape.kernel == 3 && co + CO_BLOCK <= shape.c_out && ci < shape.c_in);
    assert!(padded.len() >= shape.batch * shape.c_in * pd * ph * pw);
    assert!(out_grad.len() >= shape.output_len());
}

/// Each (kernel row, channel, shift)'s lanes summed in lane order, into
/// the 27 taps of each channel: the last step of [`weight_grad_block_3`].
#[cfg(target_arch = "x86_64")]
fn sum_lanes_into(saved: &[[[[f32; LANES]; 3]; CO_BLOCK]; 9], out: &mut [[f32; 27]; CO_BLOCK]) {
    for (kernel_row, kept) in saved.iter().enumerate() {
        for (j, shifts) in kept.iter().enumerate() {
            for (s, lanes) in shifts.iter().enumerate() {
                out[j][kernel_row * 3 + s] = lanes.iter().sum();
            }
        }
    }
}

/// The weight gradient of one (output, input) channel pair.
#[inline(always)]
fn weight_grad_pair(shape: &ConvShape, padded: &[f32], out_grad: &[f32], pair: usize, out: &mut [f32]) {
    let [d, h, w] = shape.volume;
    let [pd, ph, pw] = shape.padded();
    let k = shape.kernel;
    let (c_in, c_out) = (shape.c_in, shape.c_out);
    let (co, ci) = (pair / c_in, pair % c_in);
    let mut lanes = vec![[0.0f32; LANES]; k];
    let mut total = vec![[0.0f32; LANES]; k];
    for kd in 0..k {
        for kh in 0..k {
            total.iter_mut().for_each(|l| *l = [0.0; LANES]);
            for n in 0..shape.batch {
                let dy = &out_grad[(n * c_out + co) * d * h * w..][..d * h * w];
                let input = &padded[(n * c_in + ci) * pd * ph * pw..][..pd * ph * pw];
                for z in 0..d {
                    lanes.iter_mut().for_each(|l| *l = [0.0; LANES]);
                    for yy in 0..h {
                        let dy_row = &dy[(z * h + yy) * w..][..w];
                        let row = &input[((z + kd) * ph + yy + kh) * pw..][..pw];
                        dot_taps_into_lanes(&mut lanes, dy_row, row);
                    }
                    for (t, l) in total.iter_mut().zip(&lanes) {
                        for (a, b) in t.iter_mut().zip(l) {
                            *a += b;
                        }
                    }
                }
            }
            for (kw, l) in total.iter().enumerate() {
                out[(kd * k + kh) * k + kw] = l.iter().sum();
            }
        }
    }
}

/// `lanes[j][i % LANES] += a[i] · row[i + j]` for every tap `j`.
#[inline(always)]
fn dot_taps_into_lanes(lanes: &mut [[f32; LANES]], a: &[f32], row: &[f32]) {
    let w = a.len();
    let full = w - w % LANES;
    if let [l0, l1, l2] = lanes {
        let (mut v0, mut v1, mut v2) = (*l0, *l1, *l2);
        for c in (0..full).step_by(LANES) {
            let xa: [f32; LANES] = load(&a[c..]);
            let (r0, r1, r2): ([f32; LANES], [f32; LANES], [f32; LANES]) =
                (load(&row[c..]), load(&row[c + 1..]), load(&row[c + 2..]));
            for l in 0..LANES {
                v0[l] = xa[l].mul_add(r0[l], v0[l]);
                v1[l] = xa[l].mul_add(r1[l], v1[l]);
                v2[l] = xa[l].mul_add(r2[l], v2[l]);
            }
        }
        for i in full..w {
            v0[i - full] = a[i].mul_add(row[i], v0[i - full]);
            v1[i - full] = a[i].mul_add(row[i + 1], v1[i - full]);
            v2[i - full] = a[i].mul_add(row[i + 2], v2[i - full]);
        }
        (*l0, *l1, *l2) = (v0, v1, v2);
    } else {
        for (j, l) in lanes.iter_mut().enumerate() {
            for c in (0..full).step_by(LANES) {
                for i in 0..LANES {
                    l[i] = a[c + i].mul_add(row[c + j + i], l[i]);
                }
            }
            for i in full..w {
                l[i - full] = a[i].mul_add(row[i + j], l[i - full]);
            }
        }
    }
}

/// Gradient of the bias, [c_out], one output channel per task.
pub fn bias_grad(shape: &ConvShape, out_grad: &[f32]) -> Vec<f32> {
    let voxels = shape.voxels();
    (0..shape.c_out)
        .into_par_iter()
        .map(|co| {
            // Per-sample partial sums, as in `weight_grad`.
            let mut total = [0.0f32; LANES];
            for n in 0..shape.batch {
                let lanes = lane_sums(&out_grad[(n * shape.c_out + co) * voxels..][..voxels]);
                for (t, l) in total.iter_mut().zip(lanes) {
                    *t += l;
                }
            }
            total.iter().sum()
        })
        .collect()
}

/// Lane `l` of the result is the sum of `plane[l]`, `plane[l + LANES]`, …
/// in order: a fixed order whatever the vector width the CPU has.
fn lane_sums(plane: &[f32]) -> [f32; LANES] {
    let mut lanes = [0.0f32; LANES];
    let chunks = plane.chunks_exact(LANES);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (lane, v) in lanes.iter_mut().zip(chunk) {
            *lane += v;
        }
    }
    for (lane, v) in lanes.iter_mut().zip(rest) {
        *lane += v;
    }
    lanes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    /// The definition, one output at a time, in f64.
    fn reference(shape: &ConvShape, x: &[f32], weight: &[f32], bias: Option<&[f32]>) -> Vec<f64> {
        let [d, h, w] = shape.volume;
        let k = shape.kernel as isize;
        let p = k / 2;
        let mut y = vec![0.0f64; shape.output_len()];
        for n in 0..shape.batch {
            for co in 0..shape.c_out {
                for z in 0..d as isize {
                    for yy in 0..h as isize {
                        for xx in 0..w as isize {
                            let mut s = bias.map_or(0.0, |b| f64::from(b[co]));
                            for ci in 0..shape.c_in {
                                for kd in 0..k {
                                    for kh in 0..k {
                                        for kw in 0..k {
                                            let (iz, iy, ix) = (z + kd - p, yy + kh - p, xx + kw - p);
                                            if iz < 0 || iy < 0 || ix < 0 {
                                                continue;
                                            }
                                            let (iz, iy, ix) = (iz as usize, iy as usize, ix as usize);
                                            if iz >= d || iy >= h || ix >= w {
                                                continue;
                                            }
                                            let xi = (((n * shape.c_in + ci) * d + iz) * h + iy) * w + ix;
                                            let wi = (((co * shape.c_in + ci) * k as usize + kd as usize) * k as usize
                                                + kh as usize)
                                                * k as usize
                                                + kw as usize;
                                            s += f64::from(x[xi]) * f64::from(weight[wi]);
                                        }
                                    }
                                }
                            }
                            y[(((n * shape.c_out + co) * d + z as usize) * h + yy as usize) * w + xx as usize] = s;
                        }
                    }
                }
            }
        }
        y
    }

    fn assert_close(got: &[f32], want: &[f64], what: &str) {
        assert_eq!(got.len(), want.len(), "{what}: length");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!((f64::from(*g) - w).abs() <= 1e-4 * (1.0 + w.abs()), "{what}[{i}]: {g} != {w}");
        }
    }

    const SHAPES: [ConvShape; 8] = [
        ConvShape { batch: 2, c_in: 3, c_out: 4, volume: [5, 6, 11], kernel: 3 },
        // Output channels in vector lanes: all three passes, then the
        // forward and weight gradient only (3 input channels).
        ConvShape { batch: 2, c_in: 16, c_out: 16, volume: [2, 2, 3], kernel: 3 },
        ConvShape { batch: 1, c_in: 3, c_out: 16, volume: [3, 2, 5], kernel: 3 },
        ConvShape { batch: 1, c_in: 2, c_out: 8, volume: [3, 2, 31], kernel: 3 },
        ConvShape { batch: 2, c_in: 2, c_out: 6, volume: [2, 3, 16], kernel: 3 },
        ConvShape { batch: 1, c_in: 2, c_out: 3, volume: [4, 4, 4], kernel: 1 },
        ConvShape { batch: 2, c_in: 2, c_out: 2, volume: [6, 5, 9], kernel: 5 },
        ConvShape { batch: 3, c_in: 1, c_out: 2, volume: [2, 2, 2], kernel: 3 },
    ];

    /// The register-blocked 3³ paths add in the same order as the plain
    /// per-plane ones, so they agree to the bit.
    #[test]
    fn blocked_kernels_equal_the_plain_ones_bit_for_bit() {
        // Widths that end in a partial tile of every kind: one voxel, an
        // overlapping 8-lane tile after 16 lanes, after 8, after 32, and a
        // row narrower than 8. Output channels in one tile of 8, one of 4,
        // and 8 + 4 + 2 (the last two planes one at a time).
        for w in [21, 31, 9, 17, 33, 8, 5] {
            for c_out in [8, 4, 14] {
                blocked_kernels_equal_the_plain_ones_at(ConvShape {
                    batch: 2,
                    c_in: 3,
                    c_out,
                    volume: [3, 4, w],
                    kernel: 3,
                });
            }
        }
    }

    fn blocked_kernels_equal_the_plain_ones_at(shape: ConvShape) {
        let (x, weight, bias, g) = (
            values(shape.input_len(), 7),
            values(shape.weight_len(), 8),
            values(shape.c_out, 9),
            values(shape.output_len(), 10),
        );
        let padded = pad(&shape, shape.c_in, &x);
        let voxels: usize = shape.volume.iter().product();
        let mut plain = vec![0.0; shape.output_len()];
        for (plane, out) in plain.chunks_mut(voxels).enumerate() {
            forward_plane(&shape, &padded, &weight, Some(&bias), plane / shape.c_out, plane % shape.c_out, out);
        }
        assert_eq!(forward(&shape, &x, &weight, Some(&bias)), plain, "{shape:?}");
        let mut plain = vec![0.0; shape.weight_len()];
        for (pair, out) in plain.chunks_mut(27).enumerate() {
            weight_grad_pair(&shape, &padded, &g, pair, out);
        }
        assert_eq!(weight_grad(&shape, &x, &g), plain, "{shape:?}");
    }

    /// The valid convolution is the "same" one's interior, to the bit: each
    /// output voxel adds the same input voxels in the same order. Its input
    /// gradient is the "same" convolution's for an output gradient that is
    /// zero on the border.
    #[test]
    fn the_valid_convolution_is_the_same_ones_interior_to_the_bit() {
        for (c_in, c_out, volume) in [(3, 8, [5, 6, 23]), (16, 32, [4, 5, 7])] {
            let input = ConvShape { batch: 2, c_in, c_out, volume, kernel: 3 };
            let shape = ConvShape { volume: volume.map(|e| e - 2), ..input };
            let (x, weight, bias, g) = (
                values(input.input_len(), 17),
                values(shape.weight_len(), 18),
                values(shape.c_out, 19),
                values(shape.output_len(), 20),
            );
            let same = forward(&input, &x, &weight, Some(&bias));
            let interior: Vec<f32> = same.chunks(input.voxels()).flat_map(|plane| interior_of(plane, volume)).collect();
            assert_eq!(forward_valid(&shape, &x, &weight, Some(&bias)), interior, "{input:?}");
            let bordered = pad(&ConvShape { c_in: c_out, ..shape }, c_out, &g);
            assert_eq!(input_grad_valid(&shape, &weight, &g), input_grad(&input, &weight, &bordered), "{input:?}");
        }
    }

    /// A plane of `volume` without its one-voxel border.
    fn interior_of(plane: &[f32], [d, h, w]: [usize; 3]) -> Vec<f32> {
        (1..d - 1)
            .flat_map(|z| (1..h - 1).flat_map(move |y| (1..w - 1).map(move |x| plane[(z * h + y) * w + x])))
            .collect()
    }

    /// The kernels with output channels in the vector lanes add each output
    /// in the row kernels' order, so their forward pass and input gradient
    /// agree with the row kernels to the bit, across a tile of 8 voxels that
    /// spans rows and the single voxels after it.
    #[test]
    fn channel_lane_kernels_give_the_row_kernels_bits() {
        let shape = ConvShape { batch: 2, c_in: 16, c_out: 32, volume: [3, 2, 5], kernel: 3 };
        assert!(channels_in_lanes(&shape));
        let (x, weight, bias, g) = (
            values(shape.input_len(), 11),
            values(shape.weight_len(), 12),
            values(shape.c_out, 13),
            values(shape.output_len(), 14),
        );
        let mut rows = vec![0.0; shape.output_len()];
        forward_padded(&shape, &pad(&shape, shape.c_in, &x), &weight, Some(&bias), &mut rows);
        assert_eq!(forward(&shape, &x, &weight, Some(&bias)), rows);
        let t = shape.transposed();
        let mut rows = vec![0.0; shape.input_len()];
        forward_padded(&t, &pad(&t, t.c_in, &g), &flipped(&shape, &weight), None, &mut rows);
        assert_eq!(input_grad(&shape, &weight, &g), rows);
    }

    /// The AVX-512 tiles (6 voxels × 64 channels, 12 × 32, 16 × 16) add each
    /// output in the plain kernel's order, so the forward pass and the input
    /// gradient agree with the plain and row kernels to the bit: rows of
    /// whole tiles, every tail, one and several groups of each width, input
    /// channels in one block, several, and a last block cut short; the
    /// input gradients with the zero borders they skip (one voxel, and two
    /// for a valid convolution's).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn channel_tile_kernels_give_the_plain_kernels_bits() {
        if cpu::path() != KernelPath::Avx512 {
            e2e::skip("channel_tile_kernels_give_the_plain_kernels_bits", "the kernels here do not run AVX-512");
            return;
        }
        let shapes = [(6, 3, 64), (7, 5, 64), (8, 2, 128), (9, 4, 64), (10, 3, 64), (11, 64, 64), (31, 3, 64)];
        // Groups of 32 (tiles of 12) and 16 (tiles of 16), and every tail
        // of 8, 4, 2 and 1 after them.
        let narrower = [(12, 3, 32), (23, 2, 32), (31, 16, 96), (16, 3, 16), (15, 4, 16), (33, 2, 48), (3, 32, 16)];
        for (w, c_in, c_out) in shapes.into_iter().chain(narrower) {
            let shape = ConvShape { batch: 2, c_in, c_out, volume: [2, 3, w], kernel: 3 };
            assert!(channel_tile_conv::applies(&shape));
            let (x, weight, bias, g) = (
                values(shape.input_len(), 21),
                values(shape.weight_len(), 22),
                values(shape.c_out, 23),
                values(shape.output_len(), 24),
            );
            let padded = pad(&shape, shape.c_in, &x);
            let voxels = shape.voxels();
            let mut plain = vec![0.0; shape.output_len()];
            for (plane, out) in plain.chunks_mut(voxels).enumerate() {
                forward_plane(&shape, &padded, &weight, Some(&bias), plane / c_out, plane % c_out, out);
            }
            let mut tiles = vec![f32::NAN; shape.output_len()];
            let weights = channel_conv::channels_last_weights(&shape, &weight);
            channel_tile_conv::forward_padded(&shape, &padded, &weights, Some(&bias), 0, &mut tiles);
            assert_eq!(bits(&tiles), bits(&plain), "forward {shape:?}");
            assert_eq!(bits(&forward(&shape, &x, &weight, Some(&bias))), bits(&plain), "forward {shape:?}");
            // The input gradient: channels back to c_in, through the tiles
            // where c_in is a multiple of 64, else the row kernels.
            let t = shape.transposed();
            let mut rows = vec![0.0; shape.input_len()];
            forward_padded(&t, &pad(&t, t.c_in, &g), &flipped(&shape, &weight), None, &mut rows);
            assert_eq!(bits(&input_grad(&shape, &weight, &g)), bits(&rows), "input gradient {shape:?}");
            // The valid convolution's input gradient, whose padded output
            // gradient has a border of two zeros the tiles skip, where its
            // input channels make whole groups.
            let input = ConvShape { volume: shape.padded(), ..shape };
            let t = input.transposed();
            if channel_tile_conv::applies(&t) {
                let padded = pad_volumes(shape.volume, 2, input.padded(), &g);
                let mut rows = vec![0.0; input.input_len()];
                forward_padded(&t, &padded, &flipped(&input, &weight), None, &mut rows);
                assert_eq!(bits(&input_grad_valid(&shape, &weight, &g)), bits(&rows), "valid input gradient {shape:?}");
            }
        }
    }

    /// The AVX-512 weight gradient in blocks of 8 channels from the
    /// output gradient in channel pairs gives the plain kernel's bits: rows
    /// with and without a tail, a task's 16 input channels and a remainder,
    /// its 4 blocks and a remainder.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn pair_weight_gradient_blocks_give_the_plain_kernels_bits() {
        if !pair_blocks_apply(&ConvShape { batch: 1, c_in: 1, c_out: 8, volume: [1, 1, 16], kernel: 3 }) {
            e2e::skip(
                "pair_weight_gradient_blocks_give_the_plain_kernels_bits",
                "the kernels here do not run AVX-512 (or run the AVX2 weight gradient)",
            );
            return;
        }
        for (w, c_in, c_out) in [(16, 3, 8), (31, 18, 40), (21, 1, 64), (9, 17, 8), (33, 2, 24)] {
            let shape = ConvShape { batch: 2, c_in, c_out, volume: [3, 2, w], kernel: 3 };
            assert!(pair_blocks_apply(&shape) && !channel_conv::applies(&shape), "{shape:?}");
            let (x, g) = (values(shape.input_len(), 25), values(shape.output_len(), 26));
            let padded = pad(&shape, shape.c_in, &x);
            let mut plain = vec![0.0; shape.weight_len()];
            for (pair, out) in plain.chunks_mut(27).enumerate() {
                weight_grad_pair(&shape, &padded, &g, pair, out);
            }
            assert_eq!(bits(&weight_grad(&shape, &x, &g)), bits(&plain), "{shape:?}");
        }
    }

    #[test]
    fn pair_weight_gradient_tasks_shrink_until_every_thread_has_four() {
        assert_eq!(pair_tasks(8, 64, 2), (4, 16), "Etalumis' 64 → 64 layer: 8 tasks");
        assert_eq!(pair_tasks(2, 4, 2), (1, 1), "the calibration probe: 8 tasks");
        assert_eq!(pair_tasks(8, 1, 2), (1, 1), "one input channel: a task per block");
        assert_eq!(pair_tasks(1, 1, 64), (1, 1));
        assert_eq!(pair_tasks(16, 128, 4), (4, 16));
        assert_eq!(pair_tasks(8, 64, 8), (4, 4));
    }

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    #[test]
    fn only_whole_groups_of_16_channels_along_narrow_rows_go_to_the_lanes() {
        let shape = |c_in, c_out, w| ConvShape { batch: 1, c_in, c_out, volume: [4, 4, w], kernel: 3 };
        assert!(channels_in_lanes(&shape(16, 32, 8)));
        assert!(channels_in_lanes(&shape(64, 128, 2)));
        assert!(!channels_in_lanes(&shape(8, 16, 8)), "8 input channels: the input gradient has 8 outputs");
        assert!(!channels_in_lanes(&shape(16, 24, 8)));
        assert!(!channels_in_lanes(&shape(16, 32, 16)), "rows of 16 fill the row kernels' lanes");
        assert!(!channels_in_lanes(&ConvShape { kernel: 5, ..shape(16, 32, 8) }));
    }

    /// The AVX-512 weight-gradient kernel, which CPUs that split 512-bit
    /// vectors (Zen 4) pass over for the AVX2 one even on the AVX-512 path,
    /// still gives the portable kernel's bits wherever it can run.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_avx512_weight_gradient_kernel_gives_the_portable_bits() {
        use std::arch::is_x86_feature_detected as has;
        if !(has!("avx512f") && has!("avx512dq") && has!("fma")) {
            e2e::skip("the_avx512_weight_gradient_kernel_gives_the_portable_bits", "no AVX-512 on this CPU");
            return;
        }
        for w in [21, 31, 16, 5] {
            avx512_weight_gradient_gives_the_portable_bits_at(ConvShape {
                batch: 2,
                c_in: 2,
                c_out: 8,
                volume: [3, 4, w],
                kernel: 3,
            });
        }
    }

    #[cfg(target_arch = "x86_64")]
    fn avx512_weight_gradient_gives_the_portable_bits_at(shape: ConvShape) {
        let (x, g) = (values(shape.input_len(), 15), values(shape.output_len(), 16));
        let padded = pad(&shape, shape.c_in, &x);
        for co in (0..shape.c_out).step_by(CO_BLOCK) {
            for ci in 0..shape.c_in {
                let (mut want, mut got) = ([[0.0f32; 27]; CO_BLOCK], [[0.0f32; 27]; CO_BLOCK]);
                weight_grad_block_3(&shape, &padded, &g, co, ci, &mut want);
                // SAFETY: the CPU's AVX-512 F and DQ and FMA are checked above.
                #[allow(unsafe_code)]
                unsafe {
                    weight_grad_avx512::block_3(&shape, &padded, &g, co, ci, &mut got);
                }
                let bits = |t: &[[f32; 27]; CO_BLOCK]| t.as_flattened().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "{shape:?}: channels {co}.., input channel {ci}");
            }
        }
    }

    /// Under bf16 on a CPU with AVX512_BF16, the forward pass and the
    /// input gradient of rows at least 16 wide run in bf16 products: on
    /// bf16 operands (as the model hands them over) the f32 kernels' sums
    /// in another order. Odd tap counts (the last pair half zero), a 5³
    /// kernel, rows of 16, 40 (a 16-wide tile overlapping the one before)
    /// and 20, the valid convolution, and a bias.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn in_bf16_wide_rows_sum_the_rounded_operands_as_the_f32_kernels_do() {
        use crate::kernels::precision::{Precision, scoped};
        if !Precision::Bf16.native() {
            e2e::skip("in_bf16_wide_rows_sum_the_rounded_operands_as_the_f32_kernels_do", "no AVX512_BF16 on this CPU");
            return;
        }
        let rounded = |v: Vec<f32>| Precision::Bf16.rounded(&v);
        let shapes = [
            ConvShape { batch: 2, c_in: 3, c_out: 8, volume: [3, 4, 16], kernel: 3 },
            ConvShape { batch: 1, c_in: 8, c_out: 24, volume: [2, 3, 40], kernel: 3 },
            ConvShape { batch: 1, c_in: 8, c_out: 8, volume: [2, 2, 20], kernel: 5 },
        ];
        let close = |got: &[f32], want: &[f32], what: &str| {
            assert_eq!(got.len(), want.len(), "{what}");
            for (k, (a, b)) in got.iter().zip(want).enumerate() {
                assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{what}: [{k}] = {a}, the f32 kernel {b}");
            }
        };
        for shape in shapes {
            // Neither kind of channel-lane kernel takes these shapes (they
            // come before the bf16 tiles): the bf16 tiles do.
            let t = shape.transposed();
            assert!(direct_conv2d_bf16::takes(shape.volume[2]), "{shape:?}");
            assert!(![shape, t].iter().any(|s| channel_conv::applies(s) || channel_tile_conv::applies(s)), "{shape:?}");
            let x = rounded(values(shape.input_len(), 1));
            let weight = rounded(values(shape.c_out * shape.c_in * shape.kernel.pow(3), 2));
            let bias = values(shape.c_out, 3);
            let out_grad = rounded(values(shape.output_len(), 4));
            let valid_x = rounded(values(valid_input_len(&shape), 5));
            let passes = || {
                [
                    forward(&shape, &x, &weight, Some(&bias)),
                    forward_valid(&shape, &valid_x, &weight, Some(&bias)),
                    input_grad(&shape, &weight, &out_grad),
                    input_grad_valid(&shape, &weight, &out_grad),
                ]
            };
            let (f32s, bf16s) = (passes(), scoped(Precision::Bf16, passes));
            for (what, (got, want)) in ["forward", "valid forward", "input gradient", "valid input gradient"]
                .iter()
                .zip(bf16s.iter().zip(&f32s))
            {
                close(got, want, &format!("{shape:?} {what}"));
            }
            // The bf16 route ran: its sums are in another order.
            // (The input gradient's, where its output channels, the
            // layer's input channels, come in whole blocks.)
            let gradient_too = shape.c_in.is_multiple_of(8);
            for (k, what) in [(0, "forward"), (2, "input gradient")].into_iter().take(1 + usize::from(gradient_too)) {
                assert!(bf16s[k] != f32s[k], "{shape:?}: the bf16 {what} gave the f32 kernel's bits");
            }
        }
    }

    /// Under bf16 on a CPU with AVX512_BF16, the channel tiles
    /// (`channel_tile_conv`) take input channels in pairs into
    /// `VDPBF16PS`: forward passes and input gradients on bf16 operands
    /// within f32 rounding of the sum of the products' magnitudes of the
    /// f32 tiles' sums. An odd input channel count (the last pair half
    /// zero), groups of 16, 32 and 64 channels, rows with tails, a bias.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn in_bf16_the_channel_tiles_sum_the_rounded_operands_as_the_f32_tiles_do() {
        use crate::kernels::precision::{Precision, scoped};
        if !Precision::Bf16.native() || cpu::path() != KernelPath::Avx512 {
            e2e::skip(
                "in_bf16_the_channel_tiles_sum_the_rounded_operands_as_the_f32_tiles_do",
                "no AVX512_BF16 on this CPU, or not on the AVX-512 path",
            );
            return;
        }
        let shapes = [
            ConvShape { batch: 2, c_in: 3, c_out: 16, volume: [3, 4, 5], kernel: 3 },
            ConvShape { batch: 1, c_in: 16, c_out: 32, volume: [2, 3, 7], kernel: 3 },
            ConvShape { batch: 1, c_in: 4, c_out: 64, volume: [2, 2, 9], kernel: 3 },
        ];
        let abs = |v: &[f32]| v.iter().map(|x| x.abs()).collect::<Vec<_>>();
        for shape in shapes {
            assert!(channel_tile_conv::applies(&shape), "{shape:?}");
            let x = Precision::Bf16.rounded(&values(shape.input_len(), 8));
            let weight = Precision::Bf16.rounded(&values(shape.weight_len(), 9));
            let bias = values(shape.c_out, 10);
            let out_grad = Precision::Bf16.rounded(&values(shape.output_len(), 11));
            let passes = || [forward(&shape, &x, &weight, Some(&bias)), input_grad(&shape, &weight, &out_grad)];
            let (want, got) = (passes(), scoped(Precision::Bf16, passes));
            let magnitudes = [
                forward(&shape, &abs(&x), &abs(&weight), Some(&abs(&bias))),
                input_grad(&shape, &abs(&weight), &abs(&out_grad)),
            ];
            // The input gradient runs on the tiles where the layer's input
            // channels come in groups of 16.
            let passes_on_tiles = if channel_tile_conv::applies(&shape.transposed()) { 2 } else { 1 };
            for (k, what) in ["forward", "input gradient"].iter().enumerate().take(passes_on_tiles) {
                assert_bf16_sums(&got[k], &want[k], &magnitudes[k], &format!("{shape:?} {what}"));
            }
        }
    }

    /// Under bf16 on a CPU with AVX512_BF16, the weight gradient of blocks
    /// of 8 output channels runs in bf16 products
    /// (`pair_weight_grad3d_bf16`): on bf16 operands, the f32 kernel's
    /// sums in another order, within f32 rounding of the sum of the
    /// products' magnitudes. Rows of whole chunks (32), a chunk and a tail
    /// (20), a tail alone (9), 16 output channels (two blocks).
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn in_bf16_the_pair_weight_gradient_sums_the_rounded_operands_as_the_f32_kernel_does() {
        use crate::kernels::precision::{Precision, scoped};
        if !Precision::Bf16.native() || cpu::path() != KernelPath::Avx512 {
            e2e::skip(
                "in_bf16_the_pair_weight_gradient_sums_the_rounded_operands_as_the_f32_kernel_does",
                "no AVX512_BF16 on this CPU, or not on the AVX-512 path",
            );
            return;
        }
        let shapes = [
            ConvShape { batch: 2, c_in: 3, c_out: 8, volume: [3, 4, 32], kernel: 3 },
            ConvShape { batch: 1, c_in: 2, c_out: 16, volume: [2, 3, 20], kernel: 3 },
            ConvShape { batch: 2, c_in: 1, c_out: 8, volume: [4, 5, 9], kernel: 3 },
        ];
        for shape in shapes {
            assert!(pair_blocks_apply(&shape) || cpu::weight_grad_3d_on_avx2(), "{shape:?}");
            assert!(!channel_conv::applies(&shape), "{shape:?}");
            let x = Precision::Bf16.rounded(&values(shape.input_len(), 6));
            let out_grad = Precision::Bf16.rounded(&values(shape.output_len(), 7));
            let want = weight_grad(&shape, &x, &out_grad);
            let got = scoped(Precision::Bf16, || weight_grad(&shape, &x, &out_grad));
            let abs = |v: &[f32]| v.iter().map(|x| x.abs()).collect::<Vec<_>>();
            let magnitudes = weight_grad(&shape, &abs(&x), &abs(&out_grad));
            assert_bf16_sums(&got, &want, &magnitudes, &format!("{shape:?} weight gradient"));
        }
    }

    /// `got` (a bf16 kernel's sums) within f32 rounding (10⁻⁵) of the sum
    /// of the products' `magnitudes` of `want` (the f32 kernel's on the
    /// same bf16 operands), and not its bits (the bf16 kernel ran: its
    /// sums are in another order).
    fn assert_bf16_sums(got: &[f32], want: &[f32], magnitudes: &[f32], what: &str) {
        assert_eq!(got.len(), want.len(), "{what}");
        for (k, ((a, b), m)) in got.iter().zip(want).zip(magnitudes).enumerate() {
            assert!((a - b).abs() <= 1e-5 * m, "{what}: [{k}] = {a}, the f32 kernel {b} (Σ|products| {m})");
        }
        assert!(got != want, "{what}: the bf16 kernel gave the f32 kernel's bits");
    }

    #[test]
    fn forward_matches_the_definition() {
        for shape in SHAPES {
            let (x, weight, bias) =
                (values(shape.input_len(), 1), values(shape.weight_len(), 2), values(shape.c_out, 3));
            assert_close(&forward(&shape, &x, &weight, Some(&bias)), &reference(&shape, &x, &weight, Some(&bias)), "y");
        }
    }

    /// Gradients of `L = Σ y · g` checked against the definition: `dL/dx`
    /// and `dL/dw` by linearity, one unit input or weight at a time.
    #[test]
    fn gradients_match_the_definition() {
        for shape in SHAPES {
            let (x, weight, g) =
                (values(shape.input_len(), 4), values(shape.weight_len(), 5), values(shape.output_len(), 6));
            let loss = |x: &[f32], w: &[f32]| -> f64 {
                reference(&shape, x, w, None).iter().zip(&g).map(|(y, g)| y * f64::from(*g)).sum()
            };
            let x_grad = input_grad(&shape, &weight, &g);
            let want: Vec<f64> = (0..x.len())
                .map(|i| {
                    let mut unit = vec![0.0; x.len()];
                    unit[i] = 1.0;
                    loss(&unit, &weight)
                })
                .collect();
            assert_close(&x_grad, &want, "dx");
            let w_grad = weight_grad(&shape, &x, &g);
            let want: Vec<f64> = (0..weight.len())
                .map(|i| {
                    let mut unit = vec![0.0; weight.len()];
                    unit[i] = 1.0;
                    loss(&x, &unit)
                })
                .collect();
            assert_close(&w_grad, &want, "dw");
            let b_grad = bias_grad(&shape, &g);
            let voxels: usize = shape.volume.iter().product();
            let want: Vec<f64> = (0..shape.c_out)
                .map(|co| {
                    (0..shape.batch)
                        .flat_map(|n| g[(n * shape.c_out + co) * voxels..][..voxels].iter())
                        .map(|v| f64::from(*v))
                        .sum()
                })
                .collect();
            assert_close(&b_grad, &want, "db");
        }
    }

    /// Regression: one multiply-add chain per lane over the whole batch
    /// (the Etalumis CNN's 20 × 35 × 35 planes, 4 samples: 12,000 terms a
    /// lane) was 2.2e-6 of the largest weight gradient off the exact sum,
    /// enough for 1 rank with batch 4 and 2 ranks with batch 2 to end 4e-4
    /// apart after a few Adam steps. Per-plane partial sums keep it under
    /// 1e-6, and the halves of a batch add up to the whole as closely.
    #[test]
    fn long_weight_gradient_sums_stay_precise_and_split_over_the_batch() {
        let shape = ConvShape { batch: 4, c_in: 1, c_out: 4, volume: [20, 35, 35], kernel: 3 };
        let (x, g) = (values(shape.input_len(), 11), values(shape.output_len(), 12));
        let padded = pad(&shape, shape.c_in, &x);
        let [d, h, w] = shape.volume;
        let [_, ph, pw] = shape.padded();
        let exact: Vec<f64> = (0..shape.weight_len())
            .map(|i| {
                let (co, ci, tap) = (i / 27 / shape.c_in, i / 27 % shape.c_in, i % 27);
                let (kd, kh, kw) = (tap / 9, tap / 3 % 3, tap % 3);
                let mut sum = 0.0f64;
                for n in 0..shape.batch {
                    let dy = &g[(n * shape.c_out + co) * d * h * w..][..d * h * w];
                    let input = &padded[(n * shape.c_in + ci) * (d + 2) * ph * pw..];
                    for (v, dy) in dy.iter().enumerate() {
                        let (z, y, xx) = (v / (h * w), v / w % h, v % w);
                        sum += f64::from(*dy) * f64::from(input[((z + kd) * ph + y + kh) * pw + xx + kw]);
                    }
                }
                sum
            })
            .collect();
        let largest = exact.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let whole = weight_grad(&shape, &x, &g);
        let half = ConvShape { batch: 2, ..shape };
        let (first, second) = (
            weight_grad(&half, &x[..half.input_len()], &g[..half.output_len()]),
            weight_grad(&half, &x[half.input_len()..], &g[half.output_len()..]),
        );
        for (i, want) in exact.iter().enumerate() {
            let split = f64::from(first[i]) + f64::from(second[i]);
            for (what, got) in [("whole batch", f64::from(whole[i])), ("two halves", split)] {
                assert!((got - want).abs() <= 1e-6 * largest, "{what}[{i}]: {got} != {want} (largest {largest})");
            }
        }
    }
}
