//! Direct 3-D convolution kernels: stride 1, "same" padding (odd kernel edge
//! `k`, `k / 2` voxels of zeros on every side), one group, f32 in burn's
//! NCDHW layout. Pure functions over slices, parallel over output planes
//! with rayon; [`conv_op`](super::conv_op) hooks them into burn's autodiff.
//!
//! Why not burn's own `conv3d`: on the CPU backend its forward is im2col +
//! GEMM, and its weight gradient is a convolution whose kernel is the whole
//! output volume; at CosmoFlow's first layer (4 → 8 channels at 32³) the two
//! took 57 and 70 ms against TensorFlow's 44 ms for a whole step (see
//! `docs/benchmarks.md`). Here every output row is a sum of shifted input
//! rows: the inner loops run over contiguous `w` and vectorise.
//!
//! Summation order is fixed (it does not depend on the thread count or the
//! CPU's vector width), so results are bit-reproducible on any machine.

use rayon::prelude::*;

/// Lanes of the weight-gradient accumulators (fixed, for reproducibility).
const LANES: usize = 8;

/// The sizes of one convolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvShape {
    /// Batch size.
    pub batch: usize,
    /// Input channels.
    pub c_in: usize,
    /// Output channels.
    pub c_out: usize,
    /// Volume edges [depth, height, width] (the same in and out).
    pub volume: [usize; 3],
    /// Kernel edge (odd).
    pub kernel: usize,
}

impl ConvShape {
    fn voxels(&self) -> usize {
        self.volume.iter().product()
    }

    fn padded(&self) -> [usize; 3] {
        self.volume.map(|e| e + self.kernel - 1)
    }

    /// Elements of the input [batch, c_in, D, H, W].
    pub fn input_len(&self) -> usize {
        self.batch * self.c_in * self.voxels()
    }

    /// Elements of the output [batch, c_out, D, H, W].
    pub fn output_len(&self) -> usize {
        self.batch * self.c_out * self.voxels()
    }

    /// Elements of the weight [c_out, c_in, k, k, k].
    pub fn weight_len(&self) -> usize {
        self.c_out * self.c_in * self.kernel.pow(3)
    }

    /// The same convolution with input and output channels swapped.
    fn transposed(&self) -> ConvShape {
        ConvShape { c_in: self.c_out, c_out: self.c_in, ..*self }
    }
}

/// `x` [batch, channels, D, H, W] with `k / 2` zeros around every volume.
fn pad(shape: &ConvShape, channels: usize, x: &[f32]) -> Vec<f32> {
    let [d, h, w] = shape.volume;
    let [pd, ph, pw] = shape.padded();
    let p = shape.kernel / 2;
    let mut out = vec![0.0; shape.batch * channels * pd * ph * pw];
    out.par_chunks_mut(pd * ph * pw).zip(x.par_chunks(d * h * w)).for_each(|(dst, src)| {
        for (z, plane) in src.chunks(h * w).enumerate() {
            for (y, row) in plane.chunks(w).enumerate() {
                let at = ((z + p) * ph + y + p) * pw + p;
                dst[at..at + w].copy_from_slice(row);
            }
        }
    });
    out
}

/// Forward: `y = conv(x, weight) + bias`, [batch, c_out, D, H, W].
pub fn forward(shape: &ConvShape, x: &[f32], weight: &[f32], bias: Option<&[f32]>) -> Vec<f32> {
    let padded = pad(shape, shape.c_in, x);
    let mut y = vec![0.0; shape.output_len()];
    forward_padded(shape, &padded, weight, bias, &mut y);
    y
}

/// Gradient of the input: a convolution of the padded output gradient with
/// the kernel flipped in space and its channels swapped.
pub fn input_grad(shape: &ConvShape, weight: &[f32], out_grad: &[f32]) -> Vec<f32> {
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
    let t = shape.transposed();
    let padded = pad(&t, t.c_in, out_grad);
    let mut x_grad = vec![0.0; shape.input_len()];
    forward_padded(&t, &padded, &flipped, None, &mut x_grad);
    x_grad
}

fn forward_padded(shape: &ConvShape, padded: &[f32], weight: &[f32], bias: Option<&[f32]>, y: &mut [f32]) {
    y.par_chunks_mut(shape.voxels()).enumerate().for_each(|(plane, out)| {
        with_wide_vectors(|| forward_plane(shape, padded, weight, bias, plane, out));
    });
}

/// One output plane (sample `n`, output channel `co`) of the forward pass.
#[inline(always)]
fn forward_plane(
    shape: &ConvShape,
    padded: &[f32],
    weight: &[f32],
    bias: Option<&[f32]>,
    plane: usize,
    out: &mut [f32],
) {
    let [d, h, w] = shape.volume;
    let [pd, ph, pw] = shape.padded();
    let k = shape.kernel;
    let (c_in, c_out) = (shape.c_in, shape.c_out);
    let (n, co) = (plane / c_out, plane % c_out);
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

/// Run `body` (whose inner loops are `#[inline(always)]`) compiled for
/// AVX2 when the CPU has it: a portable build targets SSE2, half the width.
/// The arithmetic is the same either way (no fused multiply-add), so results
/// do not depend on the CPU.
#[inline(always)]
fn with_wide_vectors(body: impl FnOnce()) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        #[target_feature(enable = "avx2")]
        fn avx2(body: impl FnOnce()) {
            body();
        }
        // SAFETY: the CPU supports AVX2, checked just above.
        #[allow(unsafe_code)]
        unsafe {
            avx2(body);
        }
        return;
    }
    body();
}

/// `dst[i] += Σ_j taps[j] · row[i + j]`, in order of `j`.
#[inline(always)]
fn add_row_taps(dst: &mut [f32], row: &[f32], taps: &[f32]) {
    let w = dst.len();
    if let &[t0, t1, t2] = taps {
        let (r0, r1, r2) = (&row[..w], &row[1..w + 1], &row[2..w + 2]);
        for i in 0..w {
            dst[i] = dst[i] + t0 * r0[i] + t1 * r1[i] + t2 * r2[i];
        }
    } else {
        for (j, &t) in taps.iter().enumerate() {
            for (o, r) in dst.iter_mut().zip(&row[j..j + w]) {
                *o += t * r;
            }
        }
    }
}

/// Gradient of the weight, [c_out, c_in, k, k, k]. One task per (output,
/// input) channel pair; each kernel row's `k` taps are accumulated together
/// over the whole batch, so the output-gradient row is loaded once for all
/// of them and the accumulators stay in registers.
pub fn weight_grad(shape: &ConvShape, x: &[f32], out_grad: &[f32]) -> Vec<f32> {
    let padded = pad(shape, shape.c_in, x);
    let mut grad = vec![0.0; shape.weight_len()];
    grad.par_chunks_mut(shape.kernel.pow(3)).enumerate().for_each(|(pair, out)| {
        with_wide_vectors(|| weight_grad_pair(shape, &padded, out_grad, pair, out));
    });
    grad
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
    for kd in 0..k {
        for kh in 0..k {
            lanes.iter_mut().for_each(|l| *l = [0.0; LANES]);
            for n in 0..shape.batch {
                let dy = &out_grad[(n * c_out + co) * d * h * w..][..d * h * w];
                let input = &padded[(n * c_in + ci) * pd * ph * pw..][..pd * ph * pw];
                for z in 0..d {
                    for yy in 0..h {
                        let dy_row = &dy[(z * h + yy) * w..][..w];
                        let row = &input[((z + kd) * ph + yy + kh) * pw..][..pw];
                        dot_taps_into_lanes(&mut lanes, dy_row, row);
                    }
                }
            }
            for (kw, l) in lanes.iter().enumerate() {
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
            let (xa, r0, r1, r2) =
                (&a[c..c + LANES], &row[c..c + LANES], &row[c + 1..c + 1 + LANES], &row[c + 2..c + 2 + LANES]);
            for l in 0..LANES {
                v0[l] += xa[l] * r0[l];
                v1[l] += xa[l] * r1[l];
                v2[l] += xa[l] * r2[l];
            }
        }
        for i in full..w {
            v0[i - full] += a[i] * row[i];
            v1[i - full] += a[i] * row[i + 1];
            v2[i - full] += a[i] * row[i + 2];
        }
        (*l0, *l1, *l2) = (v0, v1, v2);
    } else {
        for (j, l) in lanes.iter_mut().enumerate() {
            for c in (0..full).step_by(LANES) {
                for i in 0..LANES {
                    l[i] += a[c + i] * row[c + j + i];
                }
            }
            for i in full..w {
                l[i - full] += a[i] * row[i + j];
            }
        }
    }
}

/// Gradient of the bias, [c_out].
pub fn bias_grad(shape: &ConvShape, out_grad: &[f32]) -> Vec<f32> {
    let voxels = shape.voxels();
    (0..shape.c_out)
        .map(|co| {
            let mut lanes = [0.0f32; LANES];
            for n in 0..shape.batch {
                let plane = &out_grad[(n * shape.c_out + co) * voxels..][..voxels];
                for chunk in plane.chunks(LANES) {
                    for (lane, v) in lanes.iter_mut().zip(chunk) {
                        *lane += v;
                    }
                }
            }
            lanes.iter().sum()
        })
        .collect()
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

    const SHAPES: [ConvShape; 4] = [
        ConvShape { batch: 2, c_in: 3, c_out: 4, volume: [5, 6, 11], kernel: 3 },
        ConvShape { batch: 1, c_in: 2, c_out: 3, volume: [4, 4, 4], kernel: 1 },
        ConvShape { batch: 2, c_in: 2, c_out: 2, volume: [6, 5, 9], kernel: 5 },
        ConvShape { batch: 3, c_in: 1, c_out: 2, volume: [2, 2, 2], kernel: 3 },
    ];

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
}
