//! Batch normalisation in training mode (Ioffe & Szegedy 2015, Algorithm 1
//! and §3's gradients) over plain slices: the statistics of each group of
//! samples, the normalisation, and the backward pass, each one or two
//! passes over the activations.
//!
//! burn's `batch_norm_train` composes these from tensor operations: a
//! transposed copy of the input for each reduction, a centred copy, then
//! the normalisation's subtract, multiply, scale and shift; its backward
//! pass does the same again. On the segmentation networks' and CosmoGAN's
//! activations that was a sixth of a training step.
//!
//! An activation is [N, C, S] (S the positions of a sample's channel),
//! the samples in G groups: sample n belongs to group n mod G, so group g
//! holds samples g, g + G, g + 2G, … (what the distributed sampler deals
//! rank g; `Pass::norm` in the segmentation layers explains the use).
//! Statistics are per (group, channel), stored g-major: `[g · C + c]`.

use rayon::prelude::*;

use super::cpu::wide;
use super::lanes::load;

/// The layout of an activation: samples, channels, positions per channel,
/// and groups of samples (G divides N).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Samples (N).
    pub samples: usize,
    /// Channels (C).
    pub channels: usize,
    /// Positions of one channel of one sample (S).
    pub positions: usize,
    /// Groups of samples normalised apart (G).
    pub groups: usize,
}

impl Layout {
    /// Values each (group, channel) statistic is taken over.
    fn count(&self) -> usize {
        self.samples / self.groups * self.positions
    }

    /// The planes (one channel of one sample) of group `g`, channel `c`.
    fn planes(&self, g: usize, c: usize) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
        (g..self.samples).step_by(self.groups).map(move |n| {
            let at = (n * self.channels + c) * self.positions;
            at..at + self.positions
        })
    }
}

/// Mean and biased variance of each (group, channel), each `[G · C]`.
/// Two passes (the mean, then the squares about it), as burn's are, so
/// that a large mean does not cancel the variance away; sums in f64.
pub fn statistics(x: &[f32], layout: Layout) -> (Vec<f32>, Vec<f32>) {
    let count = layout.count() as f64;
    let pairs: Vec<(f32, f32)> = (0..layout.groups * layout.channels)
        .into_par_iter()
        .map(|gc| {
            let (g, c) = (gc / layout.channels, gc % layout.channels);
            let sum: f64 = layout.planes(g, c).map(|p| sum_f32(&x[p])).sum();
            let mean = (sum / count) as f32;
            let squares: f64 = layout.planes(g, c).map(|p| squares_about(&x[p], mean)).sum();
            (mean, (squares / count) as f32)
        })
        .collect();
    pairs.into_iter().unzip()
}

/// y = (x − mean) / √(var + ε) · γ + β per (group, channel), as one
/// multiply-add per value.
pub fn forward(x: &[f32], layout: Layout, (mean, variance): (&[f32], &[f32]), affine: Affine<'_>) -> Vec<f32> {
    let mut y = vec![0.0f32; x.len()];
    y.par_chunks_mut(layout.positions.max(1)).zip(x.par_chunks(layout.positions.max(1))).enumerate().for_each(
        |(plane, (y, x))| {
            let (n, c) = (plane / layout.channels, plane % layout.channels);
            let gc = (n % layout.groups) * layout.channels + c;
            let scale = affine.gamma[c] * inverse_deviation(variance[gc], affine.epsilon);
            let shift = affine.beta[c] - mean[gc] * scale;
            y.iter_mut().zip(x).for_each(|(y, &x)| *y = x * scale + shift);
        },
    );
    y
}

/// The learnable scale and shift and the variance's ε.
#[derive(Debug, Clone, Copy)]
pub struct Affine<'a> {
    /// γ, per channel.
    pub gamma: &'a [f32],
    /// β, per channel.
    pub beta: &'a [f32],
    /// Added to the variance before its square root.
    pub epsilon: f32,
}

/// Gradients of [`forward`] with the statistics its input gave: (dx, dγ,
/// dβ). With x̂ = (x − mean)·inv, inv = 1/√(var + ε), and means over each
/// (group, channel): dx = γ·inv·(dy − mean(dy) − x̂·mean(dy·x̂)), dγ =
/// Σ dy·x̂, dβ = Σ dy (Ioffe & Szegedy 2015, §3, with the sums over the
/// group's values; γ and β are shared by the groups, so their gradients
/// sum over the groups too).
pub fn backward(
    x: &[f32],
    dy: &[f32],
    layout: Layout,
    statistics: (&[f32], &[f32]),
    affine: (&[f32], f32),
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    backward_trained_by(x, dy, layout, statistics, affine, 1)
}

/// [`backward`] with γ's and β's gradients summed over the groups g with
/// g mod `every` = 0 only: `every` = 2 on a twin batch
/// ([`twin`](super::twin)), whose odd groups hold the copies that train
/// no parameter.
pub fn backward_trained_by(
    x: &[f32],
    dy: &[f32],
    layout: Layout,
    (mean, variance): (&[f32], &[f32]),
    (gamma, epsilon): (&[f32], f32),
    every: usize,
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let (groups, channels) = (layout.groups, layout.channels);
    // Σ dy and Σ dy·x̂ per (group, channel), x̂ from x as the forward pass
    // made it.
    let sums: Vec<(f64, f64)> = (0..groups * channels)
        .into_par_iter()
        .map(|gc| {
            let (g, c) = (gc / channels, gc % channels);
            let (m, inv) = (mean[gc], inverse_deviation(variance[gc], epsilon));
            layout.planes(g, c).fold((0.0, 0.0), |(sum_dy, sum_dy_xhat), p| {
                let (a, b) = sums_dy(&dy[p.clone()], &x[p], m, inv);
                (sum_dy + a, sum_dy_xhat + b)
            })
        })
        .collect();
    let mut d_gamma = vec![0.0f32; channels];
    let mut d_beta = vec![0.0f32; channels];
    for c in 0..channels {
        let (mut gamma_sum, mut beta_sum) = (0.0f64, 0.0f64);
        for g in (0..groups).step_by(every.max(1)) {
            let (sum_dy, sum_dy_xhat) = sums[g * channels + c];
            beta_sum += sum_dy;
            gamma_sum += sum_dy_xhat;
        }
        d_gamma[c] = gamma_sum as f32;
        d_beta[c] = beta_sum as f32;
    }
    let count = layout.count() as f64;
    let mut dx = vec![0.0f32; x.len()];
    dx.par_chunks_mut(layout.positions.max(1))
        .zip(x.par_chunks(layout.positions.max(1)).zip(dy.par_chunks(layout.positions.max(1))))
        .enumerate()
        .for_each(|(plane, (dx, (x, dy)))| {
            let (n, c) = (plane / channels, plane % channels);
            let gc = (n % groups) * channels + c;
            let inv = inverse_deviation(variance[gc], epsilon);
            let (sum_dy, sum_dy_xhat) = sums[gc];
            let mean_dy = (sum_dy / count) as f32;
            let mean_dy_xhat = (sum_dy_xhat / count) as f32;
            let scale = gamma[c] * inv;
            let m = mean[gc];
            for ((dx, &x), &dy) in dx.iter_mut().zip(x).zip(dy) {
                let xhat = (x - m) * inv;
                *dx = scale * (dy - mean_dy - xhat * mean_dy_xhat);
            }
        });
    (dx, d_gamma, d_beta)
}

fn inverse_deviation(variance: f32, epsilon: f32) -> f32 {
    1.0 / (variance + epsilon).sqrt()
}

/// Σ x over one plane ([`lanes_to_f64`]).
fn sum_f32(x: &[f32]) -> f64 {
    let mut out = [0.0; 1];
    plane_sum_wide(x, &mut out);
    out[0]
}

/// Σ (x − mean)² over one plane ([`lanes_to_f64`]).
fn squares_about(x: &[f32], mean: f32) -> f64 {
    let mut out = [0.0; 1];
    plane_squares_wide(x, mean, &mut out);
    out[0]
}

/// (Σ dy, Σ dy·x̂) over one plane, x̂ = (x − mean)·inv ([`lanes_to_f64`]).
fn sums_dy(dy: &[f32], x: &[f32], mean: f32, inv: f32) -> (f64, f64) {
    let mut out = [0.0; 2];
    plane_sums_dy_wide(dy, x, mean, inv, &mut out);
    (out[0], out[1])
}

// Each sum runs in 16 f32 lanes (value k of a plane goes to lane k mod 16),
// the lanes then added in f64 ([`lanes_to_f64`]): a plane is at most a few
// hundred thousand values, so the lanes' f32 partial sums lose little, and
// the planes add in f64. The loops are written one sum per array so that
// the compiler vectorises along the lanes (a closure returning every sum of
// a value as one array was vectorised across the sums instead, one value
// at a time), and built for each `KernelPath` (`cpu::wide`). Multiplies and
// adds stay apart (never fused), so every path gives the same bits.
wide!(plane_sum_wide, plane_sum, (x: &[f32], out: &mut [f64; 1]));
wide!(plane_squares_wide, plane_squares, (x: &[f32], mean: f32, out: &mut [f64; 1]));
wide!(plane_sums_dy_wide, plane_sums_dy, (dy: &[f32], x: &[f32], mean: f32, inv: f32, out: &mut [f64; 2]));

#[inline(always)]
fn plane_sum(x: &[f32], out: &mut [f64; 1]) {
    let mut lanes = [0.0f32; 16];
    let chunks = x.chunks_exact(16);
    let tail: f64 = chunks.remainder().iter().map(|&v| f64::from(v)).sum();
    for c in chunks {
        add16(&mut lanes, &load(c));
    }
    out[0] = lanes_to_f64(&lanes) + tail;
}

#[inline(always)]
fn plane_squares(x: &[f32], mean: f32, out: &mut [f64; 1]) {
    let mut lanes = [0.0f32; 16];
    let chunks = x.chunks_exact(16);
    let tail: f64 = chunks.remainder().iter().map(|&v| f64::from((v - mean) * (v - mean))).sum();
    for c in chunks {
        let v: [f32; 16] = load(c);
        let mut squares = [0.0f32; 16];
        for i in 0..16 {
            squares[i] = (v[i] - mean) * (v[i] - mean);
        }
        add16(&mut lanes, &squares);
    }
    out[0] = lanes_to_f64(&lanes) + tail;
}

#[inline(always)]
fn plane_sums_dy(dy: &[f32], x: &[f32], mean: f32, inv: f32, out: &mut [f64; 2]) {
    let (mut sum_dy, mut sum_dy_xhat) = ([0.0f32; 16], [0.0f32; 16]);
    let (dy_chunks, x_chunks) = (dy.chunks_exact(16), x.chunks_exact(16));
    let mut tail = [0.0f64; 2];
    for (&d, &v) in dy_chunks.remainder().iter().zip(x_chunks.remainder()) {
        tail[0] += f64::from(d);
        tail[1] += f64::from(d * (v - mean) * inv);
    }
    for (d, v) in dy_chunks.zip(x_chunks) {
        let (d, v): ([f32; 16], [f32; 16]) = (load(d), load(v));
        let mut xhat = [0.0f32; 16];
        for i in 0..16 {
            xhat[i] = d[i] * (v[i] - mean) * inv;
        }
        add16(&mut sum_dy, &d);
        add16(&mut sum_dy_xhat, &xhat);
    }
    out[0] = lanes_to_f64(&sum_dy) + tail[0];
    out[1] = lanes_to_f64(&sum_dy_xhat) + tail[1];
}

/// sums += values, lane by lane.
#[inline(always)]
fn add16(sums: &mut [f32; 16], values: &[f32; 16]) {
    for (s, v) in sums.iter_mut().zip(values) {
        *s += v;
    }
}

/// The 16 lanes' sum in f64, in lane order. Not inlined: with two sums'
/// lanes added side by side into adjacent results, the compiler
/// vectorised the whole loop across the two sums (two values per
/// instruction) instead of along the lanes.
#[inline(never)]
fn lanes_to_f64(lanes: &[f32; 16]) -> f64 {
    lanes.iter().map(|&l| f64::from(l)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Forward and backward by the definition, one (group, channel) at a
    /// time, in f64.
    fn reference(x: &[f32], dy: &[f32], layout: Layout, gamma: &[f32], beta: &[f32], eps: f64) -> [Vec<f64>; 4] {
        let Layout { samples, channels, positions, groups } = layout;
        let (mut y, mut dx) = (vec![0.0; x.len()], vec![0.0; x.len()]);
        let (mut dg, mut db) = (vec![0.0; channels], vec![0.0; channels]);
        for g in 0..groups {
            for c in 0..channels {
                let idx: Vec<usize> = (g..samples)
                    .step_by(groups)
                    .flat_map(|n| (0..positions).map(move |p| (n * channels + c) * positions + p))
                    .collect();
                let m = idx.len() as f64;
                let mean = idx.iter().map(|&i| f64::from(x[i])).sum::<f64>() / m;
                let var = idx.iter().map(|&i| (f64::from(x[i]) - mean).powi(2)).sum::<f64>() / m;
                let inv = 1.0 / (var + eps).sqrt();
                let xhat = |i: usize| (f64::from(x[i]) - mean) * inv;
                let mean_dy = idx.iter().map(|&i| f64::from(dy[i])).sum::<f64>() / m;
                let mean_dy_xhat = idx.iter().map(|&i| f64::from(dy[i]) * xhat(i)).sum::<f64>() / m;
                for &i in &idx {
                    y[i] = xhat(i) * f64::from(gamma[c]) + f64::from(beta[c]);
                    dx[i] = f64::from(gamma[c]) * inv * (f64::from(dy[i]) - mean_dy - xhat(i) * mean_dy_xhat);
                    dg[c] += f64::from(dy[i]) * xhat(i);
                    db[c] += f64::from(dy[i]);
                }
            }
        }
        [y, dx, dg, db]
    }

    fn close(ours: &[f32], reference: &[f64], what: &str) {
        assert_eq!(ours.len(), reference.len());
        for (i, (&a, &b)) in ours.iter().zip(reference).enumerate() {
            assert!((f64::from(a) - b).abs() <= 1e-4 * (1.0 + b.abs()), "{what}[{i}]: {a} against {b}");
        }
    }

    #[test]
    fn normalisation_and_its_gradients_equal_the_definition_for_every_grouping() {
        // Positions not a multiple of the 16 lanes, a single position, a
        // large mean (the two-pass variance), one and several groups.
        for (samples, channels, positions, groups, offset) in
            [(4, 3, 37, 1, 0.0), (4, 3, 37, 2, 0.0), (6, 2, 1, 3, 0.0), (2, 5, 64, 1, 100.0), (8, 1, 16, 4, 5.0)]
        {
            let layout = Layout { samples, channels, positions, groups };
            let len = samples * channels * positions;
            let x: Vec<f32> = (0..len).map(|i| offset + ((i * 37 % 23) as f32 - 11.0) / 5.0).collect();
            let dy: Vec<f32> = (0..len).map(|i| ((i * 13 % 17) as f32 - 8.0) / 3.0).collect();
            let gamma: Vec<f32> = (0..channels).map(|c| 0.5 + c as f32).collect();
            let beta: Vec<f32> = (0..channels).map(|c| c as f32 - 1.0).collect();
            let affine = Affine { gamma: &gamma, beta: &beta, epsilon: 1e-5 };
            let [y_ref, dx_ref, dg_ref, db_ref] = reference(&x, &dy, layout, &gamma, &beta, 1e-5);
            let (mean, variance) = statistics(&x, layout);
            close(&forward(&x, layout, (&mean, &variance), affine), &y_ref, "y");
            let (dx, dg, db) = backward(&x, &dy, layout, (&mean, &variance), (&gamma, 1e-5));
            close(&dx, &dx_ref, "dx");
            close(&dg, &dg_ref, "dγ");
            close(&db, &db_ref, "dβ");
        }
    }
}
