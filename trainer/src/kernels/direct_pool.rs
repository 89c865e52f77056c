//! Direct 2×2×2 pooling kernels (stride 2, even edges) on f32 planes of
//! [D, H, W], forward and backward, parallel over planes with rayon;
//! [`ops`](super::ops) hooks them into burn through its backend-extension route. burn's
//! `max_pool2d` + `max_dim` route took 22 ms forward + backward at
//! CosmoFlow's first layer (8 channels of 32³, batch 8); these stream
//! through the volume once.

use rayon::prelude::*;

/// Maximum of every window and which of its 8 voxels held it (index
/// `dz·4 + dy·2 + dx`, the first one on ties). `x` holds whole planes of
/// `volume`.
pub fn max_forward(volume: [usize; 3], x: &[f32]) -> (Vec<f32>, Vec<u8>) {
    let [d, h, w] = volume;
    let out_len = x.len() / 8;
    let (mut y, mut arg) = (vec![0.0; out_len], vec![0u8; out_len]);
    let out_plane = (d / 2) * (h / 2) * (w / 2);
    y.par_chunks_mut(out_plane.max(1)).zip(arg.par_chunks_mut(out_plane.max(1))).zip(x.par_chunks(d * h * w)).for_each(
        |((y, arg), x)| {
            for oz in 0..d / 2 {
                for oy in 0..h / 2 {
                    let rows: [&[f32]; 4] =
                        std::array::from_fn(|r| &x[((2 * oz + r / 2) * h + 2 * oy + r % 2) * w..][..w]);
                    let at = (oz * (h / 2) + oy) * (w / 2);
                    for ox in 0..w / 2 {
                        let (mut best, mut which) = (rows[0][2 * ox], 0u8);
                        for k in 1..8u8 {
                            let v = rows[usize::from(k / 2)][2 * ox + usize::from(k % 2)];
                            if v > best {
                                (best, which) = (v, k);
                            }
                        }
                        y[at + ox] = best;
                        arg[at + ox] = which;
                    }
                }
            }
        },
    );
    (y, arg)
}

/// Gradient of the input of [`max_forward`]: each window's gradient goes to
/// the voxel that held its maximum.
pub fn max_backward(volume: [usize; 3], arg: &[u8], grad: &[f32]) -> Vec<f32> {
    let [d, h, w] = volume;
    let mut x_grad = vec![0.0; grad.len() * 8];
    let out_plane = (d / 2) * (h / 2) * (w / 2);
    x_grad
        .par_chunks_mut(d * h * w)
        .zip(arg.par_chunks(out_plane.max(1)))
        .zip(grad.par_chunks(out_plane.max(1)))
        .for_each(|((x_grad, arg), grad)| {
            for oz in 0..d / 2 {
                for oy in 0..h / 2 {
                    let at = (oz * (h / 2) + oy) * (w / 2);
                    for ox in 0..w / 2 {
                        let k = usize::from(arg[at + ox]);
                        let (dz, dy, dx) = (k / 4, (k / 2) % 2, k % 2);
                        x_grad[((2 * oz + dz) * h + 2 * oy + dy) * w + 2 * ox + dx] = grad[at + ox];
                    }
                }
            }
        });
    x_grad
}

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
