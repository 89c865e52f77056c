//! Matrix products in bf16 with f32 sums, `C = A · B`, on AVX512_BF16's
//! `VDPBF16PS` (Intel SDM: each f32 lane adds the products of two bf16
//! pairs, the odd one first, each addition rounded to nearest even, with
//! denormals flushed to zero on the way in and out): twice the products
//! of an f32 fused multiply-add per instruction. The convolutions' GEMMs
//! ([`conv2d_forward`](super::conv2d_forward),
//! [`conv2d_grad`](super::conv2d_grad)) run here under `--precision bf16`.
//!
//! The operands are f32 and rounded to bf16 as they are packed
//! ([`round_bf16`], which is what `VCVTNEPS2BF16` does), two consecutive
//! values along the sum's dimension K sharing one 32-bit lane. Each output
//! value is summed over K in order, one pair at a time, whatever the
//! blocking, so [`gemm_portable`] (the same sums in plain Rust, for every
//! machine) gives the vector path's results bit for bit.
//!
//! burn's bf16 matmul converts to f32 and multiplies there (burn-flex
//! 0.22), and the `gemm` crate has no bf16 dot-product kernel, which is
//! why this one is written here.

use rayon::prelude::*;

use super::precision::round_bf16;

/// Output columns per panel: two 16-lane vectors.
const NR: usize = 32;
/// Output rows per micro-kernel call: 8 rows × 2 vectors = 16 accumulators.
const MR: usize = 8;
/// Pairs of K per block: a panel of B for one block (KC × NR × 4 bytes =
/// 32 KiB) stays in L1/L2 while every row block of A passes over it.
const KC: usize = 256;

/// `a` [m × k] (row-major) packed as bf16 pairs along k: [m × ⌈k/2⌉] u32,
/// the even element in the low half; an odd k is padded with a zero.
fn pack_rows(a: &[f32], m: usize, k: usize, vector: bool) -> Vec<u32> {
    let pairs = k.div_ceil(2);
    let mut packed = vec![0u32; m * pairs];
    packed
        .par_chunks_mut(pairs.max(1))
        .enumerate()
        .for_each(|(i, out)| pack_pairs(&a[i * k..(i + 1) * k], out, vector));
    packed
}

/// `row` as bf16 pairs: `out[p]` holds `row[2p]` in its low half and
/// `row[2p + 1]` (or 0 past the end) in its high half.
fn pack_pairs(row: &[f32], out: &mut [u32], vector: bool) {
    #[cfg(target_arch = "x86_64")]
    if vector {
        // SAFETY: `vector` is set only where the CPU computes bf16
        // natively (AVX512_BF16, AVX-512 F); `out` holds ⌈row.len() / 2⌉ lanes.
        #[allow(unsafe_code)]
        unsafe {
            return avx512::pack_pairs(row, out);
        }
    }
    pack_pairs_portable(row, out);
}

fn pack_pairs_portable(row: &[f32], out: &mut [u32]) {
    for (p, lane) in out.iter_mut().enumerate() {
        let even = bits(row[2 * p]);
        let odd = row.get(2 * p + 1).map_or(0, |&v| bits(v));
        *lane = even | (odd << 16);
    }
}

/// `b` [k × n] (row-major) packed in panels of [`NR`] columns, each panel
/// [⌈k/2⌉ × NR] u32 of bf16 pairs along k (columns past n are zeros).
fn pack_panels(b: &[f32], k: usize, n: usize, vector: bool) -> Vec<u32> {
    let pairs = k.div_ceil(2);
    let panels = n.div_ceil(NR);
    let mut packed = vec![0u32; panels * pairs * NR];
    packed.par_chunks_mut(pairs * NR).enumerate().for_each(|(panel, out)| {
        let first = panel * NR;
        let width = NR.min(n - first);
        for p in 0..pairs {
            let even = &b[2 * p * n + first..2 * p * n + first + width];
            let odd = (2 * p + 1 < k).then(|| &b[(2 * p + 1) * n + first..(2 * p + 1) * n + first + width]);
            interleave_pairs(even, odd, &mut out[p * NR..p * NR + width], vector);
        }
    });
    packed
}

/// `out[j]` = the pair (`even[j]`, `odd[j]`, 0 without an odd row).
fn interleave_pairs(even: &[f32], odd: Option<&[f32]>, out: &mut [u32], vector: bool) {
    #[cfg(target_arch = "x86_64")]
    if vector {
        // SAFETY: `vector` is set only where the CPU computes bf16
        // natively (AVX512_BF16, AVX-512 F and BW); the rows are as long
        // as `out`.
        #[allow(unsafe_code)]
        unsafe {
            return avx512::interleave_pairs(even, odd, out);
        }
    }
    for (j, lane) in out.iter_mut().enumerate() {
        *lane = bits(even[j]) | (odd.map_or(0, |o| bits(o[j])) << 16);
    }
}

/// `b` given transposed, `b_t` [n × k] (row-major), packed as
/// [`pack_panels`] packs B: each lane's pair is two neighbours of a row.
fn pack_panels_transposed(b_t: &[f32], k: usize, n: usize, vector: bool) -> Vec<u32> {
    let pairs = k.div_ceil(2);
    let panels = n.div_ceil(NR);
    let mut packed = vec![0u32; panels * pairs * NR];
    packed.par_chunks_mut(pairs * NR).enumerate().for_each(|(panel, out)| {
        let first = panel * NR;
        let mut lanes = vec![0u32; pairs];
        for j in 0..NR.min(n - first) {
            pack_pairs(&b_t[(first + j) * k..(first + j + 1) * k], &mut lanes, vector);
            for (p, &lane) in lanes.iter().enumerate() {
                out[p * NR + j] = lane;
            }
        }
    });
    packed
}

/// The upper 16 bits of `x` rounded to bf16.
fn bits(x: f32) -> u32 {
    round_bf16(x).to_bits() >> 16
}

/// The f32 value of bf16 bits, a denormal read as zero (`VDPBF16PS`'s DAZ).
fn widen(half: u32) -> f32 {
    let x = f32::from_bits((half & 0xffff) << 16);
    if x.is_subnormal() { 0.0 } else { x }
}

/// `x` with a denormal result flushed to a zero of its sign (FTZ).
fn flush(x: f32) -> f32 {
    if x.is_subnormal() { f32::from_bits(x.to_bits() & 0x8000_0000) } else { x }
}

/// One `VDPBF16PS` lane: `acc` plus the odd pair's product, then plus the
/// even pair's.
fn dot_pair(acc: f32, a: u32, b: u32) -> f32 {
    let acc = flush(acc + widen(a >> 16) * widen(b >> 16));
    flush(acc + widen(a) * widen(b))
}

/// Whether this thread's convolution products run here: under `bf16`
/// on a CPU that computes it natively (elsewhere a bf16 run is refused,
/// and tests emulate it with the f32 products of rounded values).
pub fn native_here() -> bool {
    super::precision::current() == super::Precision::Bf16 && super::Precision::Bf16.native()
}

/// `C = A · B` for `a` [m × k] and `b` [k × n], row-major f32; the
/// operands rounded to bf16, the sums in f32. On the AVX512_BF16 path
/// when the CPU has it ([`Precision::native`](super::Precision::native)),
/// otherwise [`gemm_portable`], with the same bits.
pub fn gemm(a: &[f32], b: &[f32], [m, k, n]: [usize; 3]) -> Vec<f32> {
    assert_eq!(b.len(), k * n, "B holds {} values, not {k} × {n}", b.len());
    let vector = super::Precision::Bf16.native();
    gemm_with(a, &pack_panels(b, k, n, vector), [m, k, n], vector)
}

/// [`gemm`] with B given transposed: `b_t` [n × k], row-major.
pub fn gemm_bt(a: &[f32], b_t: &[f32], [m, k, n]: [usize; 3]) -> Vec<f32> {
    assert_eq!(b_t.len(), k * n, "Bᵀ holds {} values, not {n} × {k}", b_t.len());
    let vector = super::Precision::Bf16.native();
    gemm_with(a, &pack_panels_transposed(b_t, k, n, vector), [m, k, n], vector)
}

/// [`gemm`] in plain Rust, the reference of the vector path.
pub fn gemm_portable(a: &[f32], b: &[f32], [m, k, n]: [usize; 3]) -> Vec<f32> {
    assert_eq!(b.len(), k * n, "B holds {} values, not {k} × {n}", b.len());
    gemm_with(a, &pack_panels(b, k, n, false), [m, k, n], false)
}

/// The AVX512_BF16 micro-kernel if `vector` (the CPU computes bf16
/// natively), the portable one otherwise.
fn kernel_for(vector: bool) -> Kernel {
    #[cfg(target_arch = "x86_64")]
    if vector {
        return |c, (a, lda), b, rows, pairs, ldc| {
            // SAFETY: `vector` is set only where the CPU has AVX512_BF16
            // and AVX-512 F (`Precision::native`); `gemm_with` hands `rows` ≤ MR rows of `pairs`
            // lanes, a block of `pairs × NR` lanes and `rows` rows of NR sums.
            #[allow(unsafe_code)]
            unsafe {
                avx512::kernel(c, (a, lda), b, rows, pairs, ldc)
            }
        };
    }
    portable_kernel
}

/// A micro-kernel: add to `c` (`rows` rows of NR sums, row stride `ldc`)
/// the products of `rows` rows of packed A (`pairs` lanes each, row
/// stride `lda`) with a block of a packed B panel (`pairs` × NR lanes).
type Kernel = fn(&mut [f32], (&[u32], usize), &[u32], usize, usize, usize);

fn portable_kernel(c: &mut [f32], (a, lda): (&[u32], usize), b: &[u32], rows: usize, pairs: usize, ldc: usize) {
    for r in 0..rows {
        for j in 0..NR {
            let mut acc = c[r * ldc + j];
            for p in 0..pairs {
                acc = dot_pair(acc, a[r * lda + p], b[p * NR + j]);
            }
            c[r * ldc + j] = acc;
        }
    }
}

/// The blocking shared by both paths (`vector`: AVX512_BF16 packing and
/// micro-kernel): panels of NR columns in parallel;
/// within one, blocks of KC pairs in order, and rows MR at a time, each
/// adding to the panel's accumulated sums (so every output is summed over
/// k in order).
fn gemm_with(a: &[f32], b_packed: &[u32], [m, k, n]: [usize; 3], vector: bool) -> Vec<f32> {
    assert_eq!(a.len(), m * k, "A holds {} values, not {m} × {k}", a.len());
    let pairs = k.div_ceil(2);
    let a_packed = pack_rows(a, m, k, vector);
    let kernel = kernel_for(vector);
    let panels = n.div_ceil(NR);
    // Each panel's outputs as m × NR, copied into C at the end.
    let mut blocks = vec![0.0f32; panels * m * NR];
    blocks.par_chunks_mut((m * NR).max(1)).enumerate().for_each(|(panel, c)| {
        let b_panel = &b_packed[panel * pairs * NR..(panel + 1) * pairs * NR];
        for first_pair in (0..pairs).step_by(KC) {
            let block = KC.min(pairs - first_pair);
            let b_block = &b_panel[first_pair * NR..(first_pair + block) * NR];
            for first_row in (0..m).step_by(MR) {
                let rows = MR.min(m - first_row);
                let a_rows = &a_packed[first_row * pairs + first_pair..];
                kernel(&mut c[first_row * NR..(first_row + rows) * NR], (a_rows, pairs), b_block, rows, block, NR);
            }
        }
    });
    let mut out = vec![0.0f32; m * n];
    for panel in 0..panels {
        let first = panel * NR;
        let width = NR.min(n - first);
        for i in 0..m {
            let from = &blocks[panel * m * NR + i * NR..panel * m * NR + i * NR + width];
            out[i * n + first..i * n + first + width].copy_from_slice(from);
        }
    }
    out
}

// The vector kernel is unsafe by nature: intrinsics behind a run-time
// feature check, and unchecked loads the blocking keeps in bounds.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx512 {
    use std::arch::x86_64::*;

    use super::{MR, NR};

    /// [`pack_pairs_portable`](super::pack_pairs_portable) 32 values at a
    /// time: `VCVTNE2PS2BF16` of two 16-value halves lays them out as 16
    /// pairs.
    ///
    /// # Safety
    /// The CPU must have AVX512_BF16 and AVX-512 F; `out` holds
    /// ⌈row.len() / 2⌉ lanes.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub(super) unsafe fn pack_pairs(row: &[f32], out: &mut [u32]) {
        debug_assert_eq!(out.len(), row.len().div_ceil(2));
        let whole = row.len() / 32;
        for block in 0..whole {
            // SAFETY: 32 values from 32 · block and 16 lanes from 16 · block
            // lie within `row` and `out`.
            unsafe {
                let low = _mm512_loadu_ps(row.as_ptr().add(32 * block));
                let high = _mm512_loadu_ps(row.as_ptr().add(32 * block + 16));
                let pairs: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(high, low));
                _mm512_storeu_si512(out.as_mut_ptr().add(16 * block).cast(), pairs);
            }
        }
        super::pack_pairs_portable(&row[32 * whole..], &mut out[16 * whole..]);
    }

    /// [`interleave_pairs`](super::interleave_pairs) 16 lanes at a time:
    /// both rows converted by one `VCVTNE2PS2BF16`, then interleaved.
    ///
    /// # Safety
    /// The CPU must have AVX512_BF16 and AVX-512 F and BW; `even` (and
    /// `odd`) are as long as `out`.
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    pub(super) unsafe fn interleave_pairs(even: &[f32], odd: Option<&[f32]>, out: &mut [u32]) {
        // Lane i takes halves i (even) and 16 + i (odd).
        let order = _mm512_set_epi16(
            31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17,
            1, 16, 0,
        );
        let whole = out.len() / 16;
        for block in 0..whole {
            // SAFETY: 16 values from 16 · block lie within the rows and `out`.
            unsafe {
                let e = _mm512_loadu_ps(even.as_ptr().add(16 * block));
                let o = match odd {
                    Some(odd) => _mm512_loadu_ps(odd.as_ptr().add(16 * block)),
                    None => _mm512_setzero_ps(),
                };
                let halves: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(o, e));
                _mm512_storeu_si512(out.as_mut_ptr().add(16 * block).cast(), _mm512_permutexvar_epi16(order, halves));
            }
        }
        let rest = 16 * whole;
        for (j, lane) in out.iter_mut().enumerate().skip(rest) {
            *lane = super::bits(even[j]) | (odd.map_or(0, |o| super::bits(o[j])) << 16);
        }
    }

    /// [`portable_kernel`](super::portable_kernel) with `VDPBF16PS`: the
    /// same sums, 32 columns per row in two vectors, up to 8 rows.
    ///
    /// # Safety
    /// The CPU must have AVX512_BF16 and AVX-512 F; `c` holds `rows`
    /// rows of NR floats at stride `ldc`, `a` `rows` rows of `pairs`
    /// lanes at stride `lda`, `b` `pairs × NR` lanes.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub(super) unsafe fn kernel(
        c: &mut [f32],
        (a, lda): (&[u32], usize),
        b: &[u32],
        rows: usize,
        pairs: usize,
        ldc: usize,
    ) {
        debug_assert!(rows <= MR && a.len() >= (rows - 1) * lda + pairs && b.len() >= pairs * NR);
        debug_assert!(c.len() >= (rows - 1) * ldc + NR);
        let mut acc = [[_mm512_setzero_ps(); 2]; MR];
        for (r, row) in acc.iter_mut().enumerate().take(rows) {
            // SAFETY: row r of c holds NR = 32 floats from r · ldc.
            unsafe {
                row[0] = _mm512_loadu_ps(c.as_ptr().add(r * ldc));
                row[1] = _mm512_loadu_ps(c.as_ptr().add(r * ldc + 16));
            }
        }
        for p in 0..pairs {
            // SAFETY: b holds pairs × NR lanes; a holds rows × pairs.
            unsafe {
                let b0: __m512bh = std::mem::transmute(_mm512_loadu_si512(b.as_ptr().add(p * NR).cast()));
                let b1: __m512bh = std::mem::transmute(_mm512_loadu_si512(b.as_ptr().add(p * NR + 16).cast()));
                for (r, row) in acc.iter_mut().enumerate().take(rows) {
                    let pair = *a.get_unchecked(r * lda + p);
                    let a_pair: __m512bh = std::mem::transmute(_mm512_set1_epi32(pair as i32));
                    row[0] = _mm512_dpbf16_ps(row[0], a_pair, b0);
                    row[1] = _mm512_dpbf16_ps(row[1], a_pair, b1);
                }
            }
        }
        for (r, row) in acc.iter().enumerate().take(rows) {
            // SAFETY: as for the loads.
            unsafe {
                _mm512_storeu_ps(c.as_mut_ptr().add(r * ldc), row[0]);
                _mm512_storeu_ps(c.as_mut_ptr().add(r * ldc + 16), row[1]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values of many magnitudes and both signs, some exactly bf16, some
    /// not, some tiny enough to flush.
    fn values(len: usize, seed: u32) -> Vec<f32> {
        let mut state = seed.wrapping_mul(2_654_435_761).max(1);
        (0..len)
            .map(|i| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                let unit = (state >> 8) as f32 / (1u32 << 24) as f32 - 0.5;
                match i % 11 {
                    0 => unit * 1e-39,
                    1 => unit * 3e4,
                    _ => unit * 2.0,
                }
            })
            .collect()
    }

    /// The straightforward sum, in f64 on the bf16-rounded operands.
    fn exact(a: &[f32], b: &[f32], [m, k, n]: [usize; 3]) -> Vec<f64> {
        let mut c = vec![0.0f64; m * n];
        for i in 0..m {
            for p in 0..k {
                let x = f64::from(widen(bits(a[i * k + p])));
                for j in 0..n {
                    c[i * n + j] += x * f64::from(widen(bits(b[p * n + j])));
                }
            }
        }
        c
    }

    fn transpose(b: &[f32], k: usize, n: usize) -> Vec<f32> {
        (0..n).flat_map(|j| (0..k).map(move |p| b[p * n + j])).collect()
    }

    const SHAPES: [[usize; 3]; 7] =
        [[1, 1, 1], [3, 5, 7], [8, 2, 32], [9, 33, 40], [16, 600, 70], [20, 513, 33], [64, 144, 300]];

    #[test]
    fn the_portable_product_is_the_sum_of_the_rounded_operands_to_f32_accuracy() {
        for [m, k, n] in SHAPES {
            let (a, b) = (values(m * k, 1), values(k * n, 2));
            let ours = gemm_portable(&a, &b, [m, k, n]);
            let transposed = gemm_bt(&a, &transpose(&b, k, n), [m, k, n]);
            if !crate::kernels::Precision::Bf16.native() {
                assert_eq!(transposed, ours, "{m}×{k}×{n}: Bᵀ");
            }
            let reference = exact(&a, &b, [m, k, n]);
            let scale: f64 = a.iter().map(|v| f64::from(v.abs())).fold(0.0, f64::max)
                * b.iter().map(|v| f64::from(v.abs())).fold(0.0, f64::max)
                * k as f64;
            for (x, y) in ours.iter().zip(&reference) {
                assert!((f64::from(*x) - y).abs() <= 1e-6 * scale, "{m}×{k}×{n}: {x} against {y}");
            }
        }
    }

    #[test]
    fn the_vector_path_gives_the_portable_bits() {
        if !crate::kernels::Precision::Bf16.native() {
            eprintln!("SKIPPED the_vector_path_gives_the_portable_bits: no AVX512_BF16 on this CPU");
            return;
        }
        for [m, k, n] in SHAPES {
            let (a, b) = (values(m * k, 3), values(k * n, 4));
            let (vector, portable) = (gemm(&a, &b, [m, k, n]), gemm_portable(&a, &b, [m, k, n]));
            let same = vector.iter().zip(&portable).all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(same, "{m}×{k}×{n}: the AVX512_BF16 path differs from the portable one");
            let transposed = gemm_bt(&a, &transpose(&b, k, n), [m, k, n]);
            assert!(transposed.iter().zip(&vector).all(|(x, y)| x.to_bits() == y.to_bits()), "{m}×{k}×{n}: Bᵀ");
        }
    }

    #[test]
    fn one_lane_adds_the_odd_product_first_and_flushes_denormals() {
        // From 1: the odd product 2⁻²⁴ is lost to rounding (a tie, to the
        // even 1), then the even product −1 leaves 0; the other order
        // would leave 2⁻²⁴.
        let (one, minus_one, tiny) = (bits(1.0), bits(-1.0), bits(2f32.powi(-24)));
        assert_eq!(dot_pair(1.0, minus_one | (tiny << 16), one | (one << 16)), 0.0);
        // A denormal operand reads as zero.
        assert_eq!(widen(0x0001), 0.0);
        assert_eq!(flush(f32::from_bits(1)), 0.0);
    }
}
