//! The input gradient of a dense layer's product y = x·w (x [M, K], w
//! [K, N]) when x has few rows, as an LSTM step's recurrent product has:
//! dx = g·wᵀ, whose value (i, r) is the dot product of row i of the output
//! gradient g [M, N] with row r of w, both contiguous.
//!
//! `gemm` copies (packs) w, the long operand, on every call, and at an
//! Etalumis step's [16, 512] · [512, 2048]ᵀ the packing took a third of
//! the product's time (`docs/benchmarks.md`, Etalumis). Here w is read
//! once, where it lies, and g's few rows stay in cache: each task takes a
//! block of w's rows and holds the dot products of a few of them with a
//! few rows of g in registers, 16 lanes each, summing the lanes at the end.
//!
//! ```
//! use trainer::kernels::dense_input_grad::input_grad;
//!
//! // g [1, 2] = [1, 2]; w [3, 2] = [[1, 0], [0, 1], [1, 1]].
//! let dx = input_grad(&[1.0, 2.0], &[1.0, 0.0, 0.0, 1.0, 1.0, 1.0], [1, 3, 2]);
//! assert_eq!(dx, [1.0, 2.0, 3.0]);
//! ```

use rayon::prelude::*;

use super::cpu::{self, KernelPath};
use super::lanes::load;

/// Whether [`input_grad`] beats burn's product for x [M, K], w [K, N]:
/// few rows of x (with more, the packing is shared by enough rows to pay)
/// and long rows of w (with short ones, summing each block's lanes costs
/// as much as the products). Measured by `cargo run --release -p
/// stagehand-trainer --example linear_probe` (`docs/benchmarks.md`,
/// Etalumis).
pub fn pays([m, _, n]: [usize; 3]) -> bool {
    m <= 32 && n >= 1024
}

/// Lanes each dot product is summed in, on every path.
const LANES: usize = 16;

/// Rows of w each task takes: enough that a task's work outweighs handing
/// it out, few enough that a product of 512 rows splits over the threads.
const ROWS_PER_TASK: usize = 32;

/// dx [M, K] = g [M, N] · wᵀ for w [K, N], all row-major, on rayon's
/// threads.
///
/// # Panics
/// If the slices' lengths are not those of the shapes `[m, k, n]` (the
/// callers take them from tensors they have checked: a bug, not input).
pub fn input_grad(g: &[f32], w: &[f32], shape: [usize; 3]) -> Vec<f32> {
    input_grad_on(cpu::path(), g, w, shape)
}

/// [`input_grad`] on `path`, which the CPU must support.
fn input_grad_on(path: KernelPath, g: &[f32], w: &[f32], [m, k, n]: [usize; 3]) -> Vec<f32> {
    assert!(g.len() == m * n && w.len() == k * n, "dense_input_grad: [{m}, {k}, {n}] with {} and {}", g.len(), w.len());
    if m == 0 || k == 0 {
        return Vec::new();
    }
    // dxᵀ [K, M] first: each task then writes whole rows of it.
    let mut turned = vec![0.0f32; k * m];
    turned.par_chunks_mut(ROWS_PER_TASK * m).enumerate().for_each(|(task, out)| {
        let first = task * ROWS_PER_TASK;
        let rows = out.len() / m;
        task_on_path(path, g, &w[first * n..(first + rows) * n], out, [m, n]);
    });
    let mut dx = Vec::with_capacity(m * k);
    dx.extend((0..m).flat_map(|i| turned.iter().skip(i).step_by(m).copied()));
    dx
}

/// [`block_rows`] built for the chosen [`KernelPath`]: 4 rows of w × 4 of
/// g in 16 of AVX-512's 32 registers; 2 × 2 of two registers each in 8 of
/// AVX2's 16. Every path sums 16 lanes in the same order, fused
/// multiply-adds throughout (in software on the portable path), so all
/// give the same bits and calibration may choose any.
fn task_on_path(path: KernelPath, g: &[f32], w: &[f32], out: &mut [f32], shape: [usize; 2]) {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")]
        fn avx512(g: &[f32], w: &[f32], out: &mut [f32], shape: [usize; 2]) {
            block_rows::<4, 4, LANES>(g, w, out, shape);
        }
        #[target_feature(enable = "avx2,fma")]
        fn avx2(g: &[f32], w: &[f32], out: &mut [f32], shape: [usize; 2]) {
            block_rows::<2, 2, LANES>(g, w, out, shape);
        }
        match path {
            // SAFETY: `cpu::path` only chooses a path the CPU supports, and
            // the tests only pass supported ones.
            #[allow(unsafe_code)]
            KernelPath::Avx512 => return unsafe { avx512(g, w, out, shape) },
            // SAFETY: as above.
            #[allow(unsafe_code)]
            KernelPath::Avx2 => return unsafe { avx2(g, w, out, shape) },
            KernelPath::Portable => {}
        }
    }
    block_rows::<2, 2, LANES>(g, w, out, shape);
}

/// out [R, M] = w [R, N] · gᵀ, in blocks of `WR` rows of w by `GR` rows of
/// g, `L` lanes a register. A block past the last row repeats the last
/// row (valid memory, its sums not written) so the inner loop has no
/// branches.
#[inline(always)]
fn block_rows<const WR: usize, const GR: usize, const L: usize>(
    g: &[f32],
    w: &[f32],
    out: &mut [f32],
    [m, n]: [usize; 2],
) {
    let rows = out.len() / m;
    let whole = n / L * L;
    for r0 in (0..rows).step_by(WR) {
        let w_rows: [&[f32]; WR] = std::array::from_fn(|r| &w[(r0 + r).min(rows - 1) * n..][..n]);
        for i0 in (0..m).step_by(GR) {
            let g_rows: [&[f32]; GR] = std::array::from_fn(|i| &g[(i0 + i).min(m - 1) * n..][..n]);
            let mut acc = [[[0.0f32; L]; GR]; WR];
            for j in (0..whole).step_by(L) {
                let wv: [[f32; L]; WR] = std::array::from_fn(|r| load::<L>(&w_rows[r][j..]));
                let gv: [[f32; L]; GR] = std::array::from_fn(|i| load::<L>(&g_rows[i][j..]));
                for (acc_r, wv_r) in acc.iter_mut().zip(&wv) {
                    for (acc_ri, gv_i) in acc_r.iter_mut().zip(&gv) {
                        for l in 0..L {
                            acc_ri[l] = wv_r[l].mul_add(gv_i[l], acc_ri[l]);
                        }
                    }
                }
            }
            for (r, acc_r) in acc.iter().enumerate().take(rows - r0) {
                for (i, acc_ri) in acc_r.iter().enumerate().take(m - i0) {
                    let tail: f32 = w_rows[r][whole..].iter().zip(&g_rows[i][whole..]).map(|(a, b)| a * b).sum();
                    out[(r0 + r) * m + i0 + i] = acc_ri.iter().sum::<f32>() + tail;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(len: usize, seed: usize) -> Vec<f32> {
        (0..len).map(|i| ((i * 37 + seed * 11) % 23) as f32 / 7.0 - 1.5).collect()
    }

    /// Every path this CPU runs, at shapes with partial blocks of rows,
    /// a tail of columns shorter than a register and several tasks, equals
    /// the definition (summed in f64) within float rounding, and gives the
    /// portable path's bits.
    #[test]
    fn input_gradients_equal_the_definition_and_the_portable_bits_on_every_path() {
        for path in KernelPath::ALL.into_iter().filter(|p| p.supported()) {
            for [m, k, n] in [[1, 1, 1], [3, 5, 7], [2, 512, 2048], [16, 70, 33], [32, 9, 100], [5, 3, 0]] {
                let (g, w) = (values(m * n, 1), values(k * n, 2));
                let dx = input_grad_on(path, &g, &w, [m, k, n]);
                let portable = input_grad_on(KernelPath::Portable, &g, &w, [m, k, n]);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&dx), bits(&portable), "{path:?} [{m}, {k}, {n}]");
                assert_eq!(dx.len(), m * k);
                for i in 0..m {
                    for r in 0..k {
                        let want: f64 = (0..n).map(|j| f64::from(g[i * n + j]) * f64::from(w[r * n + j])).sum();
                        let got = dx[i * k + r];
                        let bound = 1e-5 * (1.0 + (0..n).map(|j| (g[i * n + j] * w[r * n + j]).abs()).sum::<f32>());
                        assert!(
                            (f64::from(got) - want).abs() <= f64::from(bound),
                            "{path:?} [{m}, {k}, {n}] ({i}, {r}): {got} against {want}"
                        );
                    }
                }
            }
        }
    }
}
