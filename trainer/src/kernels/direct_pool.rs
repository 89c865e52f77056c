//! Direct 2×2×2 pooling kernels (stride 2, even edges) on f32 planes of
//! [D, H, W], forward and backward, parallel over planes with rayon;
//! [`ops`](super::ops) hooks them into burn through its backend-extension route. burn's
//! `max_pool2d` + `max_dim` route passes over the volume several times
//! and costs a noticeable share of a CosmoFlow step (`docs/benchmarks.md`);
//! these stream through the volume once.

use std::mem::MaybeUninit;

use rayon::prelude::*;

use super::cpu::wide;
use super::uninit;

/// Maximum of every window and which of its 8 voxels held it (index
/// `dz·4 + dy·2 + dx`, the first one on ties). `x` holds whole planes of
/// `volume`.
pub fn max_forward(volume: [usize; 3], x: &[f32]) -> (Vec<f32>, Vec<u8>) {
    let [d, h, w] = volume;
    let out_len = x.len() / 8;
    let (mut y, mut arg) = (vec![0.0; out_len], vec![0u8; out_len]);
    let out_plane = (d / 2) * (h / 2) * (w / 2);
    y.par_chunks_mut(out_plane.max(1))
        .zip(arg.par_chunks_mut(out_plane.max(1)))
        .zip(x.par_chunks(d * h * w))
        .for_each(|((y, arg), x)| max_forward_plane_wide(volume, x, y, arg));
    (y, arg)
}

/// One plane of [`max_forward`].
#[inline(always)]
fn max_forward_plane(volume: [usize; 3], x: &[f32], y: &mut [f32], arg: &mut [u8]) {
    let [d, h, w] = volume;
    for oz in 0..d / 2 {
        for oy in 0..h / 2 {
            let row = |dz: usize, dy: usize| x[((2 * oz + dz) * h + 2 * oy + dy) * w..][..w].chunks_exact(2);
            let at = (oz * (h / 2) + oy) * (w / 2);
            let windows = row(0, 0).zip(row(0, 1)).zip(row(1, 0).zip(row(1, 1)));
            let outputs = y[at..at + w / 2].iter_mut().zip(&mut arg[at..at + w / 2]);
            // Branch-free (a select per candidate, in the order of the
            // window index), so that the loop vectorises.
            for ((best_out, which_out), ((r0, r1), (r2, r3))) in outputs.zip(windows) {
                let candidates = [r0[0], r0[1], r1[0], r1[1], r2[0], r2[1], r3[0], r3[1]];
                let (mut best, mut which) = (candidates[0], 0u8);
                for (k, &v) in (1u8..).zip(&candidates[1..]) {
                    let larger = v > best;
                    best = if larger { v } else { best };
                    which = if larger { k } else { which };
                }
                *best_out = best;
                *which_out = which;
            }
        }
    }
}

/// Gradient of the input of [`max_forward`]: each window's gradient goes to
/// the voxel that held its maximum.
pub fn max_backward(volume: [usize; 3], arg: &[u8], grad: &[f32]) -> Vec<f32> {
    let [d, h, w] = volume;
    let out_plane = (d / 2) * (h / 2) * (w / 2);
    assert_eq!(arg.len(), grad.len(), "one argmax per pooled gradient");
    let len = grad.len() * 8;
    // SAFETY: the first `len` elements are initialised: there are
    // `grad.len() / out_plane` planes of `d·h·w` (8 per pooled voxel), each
    // with its `arg` and `grad` chunk, and `max_backward_plane` writes every
    // row of its plane whole, two voxels per window (`w` is even).
    #[allow(unsafe_code)]
    unsafe {
        uninit::written_whole(len, |x_grad| {
            x_grad
                .par_chunks_mut(d * h * w)
                .zip(arg.par_chunks(out_plane.max(1)))
                .zip(grad.par_chunks(out_plane.max(1)))
                .for_each(|((x_grad, arg), grad)| max_backward_plane_wide(volume, arg, grad, x_grad));
        })
    }
}

/// One plane of [`max_backward`]: every input row written once, whole,
/// each voxel getting its window's gradient if it held the maximum, else 0
/// (no zeroing pass first).
#[inline(always)]
fn max_backward_plane(volume: [usize; 3], arg: &[u8], grad: &[f32], x_grad: &mut [MaybeUninit<f32>]) {
    let [_, h, w] = volume;
    for (i, row) in x_grad.chunks_mut(w).enumerate() {
        let (z, y) = (i / h, i % h);
        let at = ((z / 2) * (h / 2) + y / 2) * (w / 2);
        // Window index of this row's first voxel in each window.
        let corner = (z % 2) * 4 + (y % 2) * 2;
        let (arg, grad) = (&arg[at..at + w / 2], &grad[at..at + w / 2]);
        for (pair, (&k, &g)) in row.chunks_exact_mut(2).zip(arg.iter().zip(grad)) {
            let k = usize::from(k);
            pair[0].write(if k == corner { g } else { 0.0 });
            pair[1].write(if k == corner + 1 { g } else { 0.0 });
        }
    }
}

wide!(max_forward_plane_wide, max_forward_plane, (volume: [usize; 3], x: &[f32], y: &mut [f32], arg: &mut [u8]));
wide!(
    max_backward_plane_wide,
    max_backward_plane,
    (volume: [usize; 3], arg: &[u8], grad: &[f32], x_grad: &mut [MaybeUninit<f32>])
);

/// Maximum of every 2×2 window of planes [H, W] (H, W even) and which of
/// its 4 pixels held it (index `dy·2 + dx`, the first one on ties): the
/// 2-D pooling of HEP-CNN, where burn's `max_pool2d_with_indices` took a
/// seventh of a step.
pub fn max2_forward(plane: [usize; 2], x: &[f32]) -> (Vec<f32>, Vec<u8>) {
    let [h, w] = plane;
    let out_len = x.len() / 4;
    let (mut y, mut arg) = (vec![0.0; out_len], vec![0u8; out_len]);
    let out_plane = (h / 2) * (w / 2);
    y.par_chunks_mut(out_plane.max(1))
        .zip(arg.par_chunks_mut(out_plane.max(1)))
        .zip(x.par_chunks((h * w).max(1)))
        .for_each(|((y, arg), x)| max2_forward_plane_wide(plane, x, y, arg));
    (y, arg)
}

/// One plane of [`max2_forward`].
#[inline(always)]
fn max2_forward_plane(plane: [usize; 2], x: &[f32], y: &mut [f32], arg: &mut [u8]) {
    let [h, w] = plane;
    for oy in 0..h / 2 {
        let row = |dy: usize| x[(2 * oy + dy) * w..][..w].chunks_exact(2);
        let at = oy * (w / 2);
        let outputs = y[at..at + w / 2].iter_mut().zip(&mut arg[at..at + w / 2]);
        // Branch-free selects in window order, as in `max_forward_plane`.
        for ((best_out, which_out), (r0, r1)) in outputs.zip(row(0).zip(row(1))) {
            let candidates = [r0[0], r0[1], r1[0], r1[1]];
            let (mut best, mut which) = (candidates[0], 0u8);
            for (k, &v) in (1u8..).zip(&candidates[1..]) {
                let larger = v > best;
                best = if larger { v } else { best };
                which = if larger { k } else { which };
            }
            *best_out = best;
            *which_out = which;
        }
    }
}

/// Gradient of the input of [`max2_forward`]: each window's gradient goes
/// to the pixel that held its maximum.
pub fn max2_backward(plane: [usize; 2], arg: &[u8], grad: &[f32]) -> Vec<f32> {
    let [h, w] = plane;
    let out_plane = (h / 2) * (w / 2);
    assert_eq!(arg.len(), grad.len(), "one argmax per pooled gradient");
    let len = grad.len() * 4;
    // SAFETY: the first `len` elements are initialised: there are
    // `grad.len() / out_plane` planes of `h·w` (4 per pooled pixel), each
    // with its `arg` and `grad` chunk, and `max2_backward_plane` writes every
    // row of its plane whole, two pixels per window (`w` is even).
    #[allow(unsafe_code)]
    unsafe {
        uninit::written_whole(len, |x_grad| {
            x_grad
                .par_chunks_mut((h * w).max(1))
                .zip(arg.par_chunks(out_plane.max(1)))
                .zip(grad.par_chunks(out_plane.max(1)))
                .for_each(|((x_grad, arg), grad)| max2_backward_plane_wide(plane, arg, grad, x_grad));
        })
    }
}

/// One plane of [`max2_backward`]: every input row written once, whole.
#[inline(always)]
fn max2_backward_plane(plane: [usize; 2], arg: &[u8], grad: &[f32], x_grad: &mut [MaybeUninit<f32>]) {
    let [_, w] = plane;
    for (y, row) in x_grad.chunks_mut(w).enumerate() {
        let at = (y / 2) * (w / 2);
        let corner = (y % 2) * 2;
        let (arg, grad) = (&arg[at..at + w / 2], &grad[at..at + w / 2]);
        for (pair, (&k, &g)) in row.chunks_exact_mut(2).zip(arg.iter().zip(grad)) {
            let k = usize::from(k);
            pair[0].write(if k == corner { g } else { 0.0 });
            pair[1].write(if k == corner + 1 { g } else { 0.0 });
        }
    }
}

wide!(max2_forward_plane_wide, max2_forward_plane, (plane: [usize; 2], x: &[f32], y: &mut [f32], arg: &mut [u8]));
wide!(
    max2_backward_plane_wide,
    max2_backward_plane,
    (plane: [usize; 2], arg: &[u8], grad: &[f32], x_grad: &mut [MaybeUninit<f32>])
);

/// Mean of every window.
pub fn avg_forward(volume: [usize; 3], x: &[f32]) -> Vec<f32> {
    let [d, h, w] = volume;
    let out_plane = (d / 2) * (h / 2) * (w / 2);
    let mut y = vec![0.0; x.len() / 8];
    y.par_chunks_mut(out_plane.max(1)).zip(x.par_chunks(d * h * w)).for_each(|(y, x)| {
        for oz in 0..d / 2 {
            for oy in 0..h / 2 {
                let rows: [&[f32]; 4] = std::array::from_fn(|r| &x[((2 * oz + r / 2) * h + 2 * oy + r % 2) * w..][..w]);
                let at = (oz * (h / 2) + oy) * (w / 2);
                for ox in 0..w / 2 {
                    let sum: f32 = (0..8).map(|k| rows[k / 2][2 * ox + k % 2]).sum();
                    y[at + ox] = sum / 8.0;
                }
            }
        }
    });
    y
}

/// Gradient of the input of [`avg_forward`]: an eighth of each window's
/// gradient to each of its voxels.
pub fn avg_backward(volume: [usize; 3], grad: &[f32]) -> Vec<f32> {
    let [d, h, w] = volume;
    let out_plane = (d / 2) * (h / 2) * (w / 2);
    let mut x_grad = vec![0.0; grad.len() * 8];
    x_grad.par_chunks_mut(d * h * w).zip(grad.par_chunks(out_plane.max(1))).for_each(|(x_grad, grad)| {
        for (i, row) in x_grad.chunks_mut(w).enumerate() {
            let (z, y) = (i / h, i % h);
            let src = &grad[((z / 2) * (h / 2) + y / 2) * (w / 2)..][..w / 2];
            for (x, v) in row.iter_mut().enumerate() {
                *v = src[x / 2] / 8.0;
            }
        }
    });
    x_grad
}

#[cfg(test)]
mod tests {
    use super::*;

    const VOLUME: [usize; 3] = [4, 6, 8];

    fn input(planes: usize) -> Vec<f32> {
        (0..planes * 192).map(|i| ((i * 7919) % 101) as f32 - 50.0).collect()
    }

    /// The window of output `o` (plane, oz, oy, ox), in `dz·4 + dy·2 + dx` order.
    fn window(x: &[f32], o: usize) -> [(usize, f32); 8] {
        let [d, h, w] = VOLUME;
        let (plane, rest) = (o / 24, o % 24);
        let (oz, oy, ox) = (rest / 12, (rest / 4) % 3, rest % 4);
        std::array::from_fn(|k| {
            let i = plane * d * h * w + ((2 * oz + k / 4) * h + 2 * oy + (k / 2) % 2) * w + 2 * ox + k % 2;
            (i, x[i])
        })
    }

    #[test]
    fn max_pool_and_its_gradient_follow_the_definition() {
        let x = input(3);
        let (y, arg) = max_forward(VOLUME, &x);
        assert_eq!(y.len(), 72);
        let grad: Vec<f32> = (0..72).map(|i| i as f32 + 1.0).collect();
        let x_grad = max_backward(VOLUME, &arg, &grad);
        let mut want = vec![0.0; x.len()];
        for o in 0..72 {
            let win = window(&x, o);
            let best = win.iter().map(|&(_, v)| v).fold(f32::MIN, f32::max);
            assert_eq!(y[o], best);
            let Some(&(i, _)) = win.iter().find(|&&(_, v)| v == best) else { panic!("window {o} has no maximum") };
            want[i] = grad[o];
        }
        assert_eq!(x_grad, want);
    }

    #[test]
    fn max_pool_2d_and_its_gradient_follow_the_definition() {
        let [h, w] = [6, 8];
        let x = input(2);
        let planes = x.len() / (h * w);
        let (y, arg) = max2_forward([h, w], &x);
        assert_eq!(y.len(), x.len() / 4);
        let grad: Vec<f32> = (0..y.len()).map(|i| i as f32 + 1.0).collect();
        let x_grad = max2_backward([h, w], &arg, &grad);
        let mut want = vec![0.0; x.len()];
        for plane in 0..planes {
            for oy in 0..h / 2 {
                for ox in 0..w / 2 {
                    let o = (plane * (h / 2) + oy) * (w / 2) + ox;
                    let window: [(usize, f32); 4] = std::array::from_fn(|k| {
                        let i = plane * h * w + (2 * oy + k / 2) * w + 2 * ox + k % 2;
                        (i, x[i])
                    });
                    let best = window.iter().map(|&(_, v)| v).fold(f32::MIN, f32::max);
                    assert_eq!(y[o], best);
                    let Some(&(i, _)) = window.iter().find(|&&(_, v)| v == best) else { panic!("no maximum") };
                    want[i] = grad[o];
                }
            }
        }
        assert_eq!(x_grad, want);
    }

    #[test]
    fn average_pool_and_its_gradient_follow_the_definition() {
        let x = input(2);
        let y = avg_forward(VOLUME, &x);
        let grad: Vec<f32> = (0..48).map(|i| i as f32 - 7.0).collect();
        let x_grad = avg_backward(VOLUME, &grad);
        let mut want = vec![0.0; x.len()];
        for o in 0..48 {
            let win = window(&x, o);
            let mean = win.iter().map(|&(_, v)| v).sum::<f32>() / 8.0;
            assert!((y[o] - mean).abs() < 1e-5);
            for (i, _) in win {
                want[i] = grad[o] / 8.0;
            }
        }
        assert_eq!(x_grad, want);
    }
}
