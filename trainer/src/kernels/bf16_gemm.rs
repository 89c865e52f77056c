//! Matrix products in bf16 with f32 sums, `C = A · B`: on AMX tiles where
//! the CPU has them (`TDPBF16PS`, 16 × 32 by 32 × 16 bf16 values into 16
//! × 16 f32 sums per instruction), else on AVX512_BF16's `VDPBF16PS`
//! (Intel SDM: each f32 lane adds the products of two bf16 pairs, the odd
//! one first, each addition rounded to nearest even, with denormals
//! flushed to zero on the way in and out): twice an f32 FMA's products
//! on a core that issues it as often as an FMA (Zen 4), as many on one
//! that issues two FMAs for each (Intel's server cores). The
//! convolutions' GEMMs ([`conv2d_forward`](super::conv2d_forward),
//! [`conv2d_grad`](super::conv2d_grad), the columns of
//! `lane_conv_transpose2d`) run here under `--precision bf16`.
//!
//! The operands are f32 and rounded to bf16 as they are packed
//! ([`round_bf16`], which is what `VCVTNEPS2BF16` does), two consecutive
//! values along the sum's dimension K sharing one 32-bit lane (the layout
//! both instructions read). On the `VDPBF16PS` path each output value is
//! summed over K in order, one pair at a time, whatever the blocking, so
//! [`gemm_portable`] (the same sums in plain Rust, for every machine)
//! gives its results bit for bit; AMX adds within a tile in the
//! hardware's order, within f32 rounding of the same sums.
//!
//! The operands need not be whole matrices: [`gemm_runs`] reads rows made
//! of runs (one per sample, say) where they lie in larger buffers
//! ([`Runs`]), and [`gemm_into`] writes C's rows into one, so the
//! convolutions hand over their buffers without copying them first.
//!
//! ```
//! use trainer::kernels::bf16_gemm::{Runs, gemm_runs};
//!
//! // One row of A and two rows of Bᵀ, each two runs of 2 values (one run
//! // per sample); the product sums over both runs.
//! let a = [1.0, 2.0, 9.0, 3.0, 4.0]; // runs at 0 and 3; the 9 is not read
//! let a_runs = Runs { rows: 1, offset: 0, row_stride: 0, runs: 2, run_stride: 3, length: 2 };
//! let b_t = [1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0]; // run, then row
//! let b_runs = Runs { rows: 2, offset: 0, row_stride: 2, runs: 2, run_stride: 4, length: 2 };
//! assert_eq!(gemm_runs((&a, a_runs), (&b_t, b_runs)), [10.0, 5.0]);
//! ```
//!
//! burn's bf16 matmul converts to f32 and multiplies there (burn-flex
//! 0.22), and the `gemm` crate has no bf16 dot-product kernel, which is
//! why this one is written here.

use std::mem::MaybeUninit;

use rayon::prelude::*;

use super::precision::round_bf16;
use super::uninit;

#[cfg(target_arch = "x86_64")]
mod amx;

/// Output columns per panel: two 16-lane vectors.
const NR: usize = 32;
/// Output rows per micro-kernel call: 8 rows × 2 vectors = 16 accumulators.
const MR: usize = 8;
/// Pairs of K per block: a panel of B for one block (KC × NR × 4 bytes =
/// 32 KiB) stays in L1/L2 while every row block of A passes over it.
const KC: usize = 256;

/// Pairs of lanes a panel's rows are packed in before they are
/// interleaved into it ([`pack_panels_of_rows`]): NR rows of them (8 KiB)
/// stay in L1 while they are written out.
const PANEL_BLOCK: usize = 64;

/// An operand's rows read where they lie: row `r`, along the sum's
/// dimension K, is `runs` runs of `length` values one after the other, run
/// `s` starting at `offset + s · run_stride + r · row_stride`. A plain
/// row-major matrix is one run per row ([`Runs::matrix`]); the weight
/// gradient's operands are one run per sample, read in place from the
/// output gradient and the columns. A run of odd length ends with its
/// last value paired with a zero, so K counts ⌈length / 2⌉ pairs a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Runs {
    /// Rows of the operand (M for A, N for Bᵀ).
    pub rows: usize,
    /// Where row 0's first run starts.
    pub offset: usize,
    /// From one row's start to the next one's.
    pub row_stride: usize,
    /// Runs a row is made of.
    pub runs: usize,
    /// From one run's start to the next one's.
    pub run_stride: usize,
    /// Values in each run.
    pub length: usize,
}

impl Runs {
    /// `rows` × `columns`, row-major, from the start of its slice.
    pub fn matrix(rows: usize, columns: usize) -> Runs {
        Runs { rows, offset: 0, row_stride: columns, runs: 1, run_stride: 0, length: columns }
    }

    fn pairs_per_run(&self) -> usize {
        self.length.div_ceil(2)
    }

    /// Lanes (pairs of K) of a row.
    fn pairs(&self) -> usize {
        self.runs * self.pairs_per_run()
    }

    /// Whether every value the rows name lies within `len` values.
    fn within(&self, len: usize) -> bool {
        if self.rows == 0 || self.runs == 0 || self.length == 0 {
            return true;
        }
        let last = (self.runs - 1)
            .checked_mul(self.run_stride)
            .and_then(|r| (self.rows - 1).checked_mul(self.row_stride).and_then(|s| s.checked_add(r)))
            .and_then(|at| at.checked_add(self.offset))
            .and_then(|at| at.checked_add(self.length));
        last.is_some_and(|end| end <= len)
    }

    /// Lanes `first..first + out.len()` of row `row`, as bf16 pairs.
    fn pack(&self, values: &[f32], row: usize, first: usize, out: &mut [Lane], vector: bool) {
        let per_run = self.pairs_per_run();
        let mut done = 0;
        while done < out.len() {
            let lane = first + done;
            let (run, within) = (lane / per_run, lane % per_run);
            let take = (per_run - within).min(out.len() - done);
            let start = self.offset + run * self.run_stride + row * self.row_stride;
            let from = start + 2 * within;
            let to = (from + 2 * take).min(start + self.length);
            pack_pairs(&values[from..to], &mut out[done..done + take], vector);
            done += take;
        }
    }
}

/// A's rows packed as bf16 pairs along K: `rows` ≥ M rows of `lanes` ≥
/// its pairs u32, the even element in the low half; what lies past the
/// values (an odd run's last half, padding rows and lanes) is zero.
fn pack_rows(a: &[f32], runs: &Runs, [rows, lanes]: [usize; 2], vector: bool) -> Vec<u32> {
    let pairs = runs.pairs();
    packed_whole(rows * lanes, |packed| {
        packed.par_chunks_mut(lanes.max(1)).enumerate().for_each(|(i, out)| {
            if i < runs.rows {
                runs.pack(a, i, 0, &mut out[..pairs], vector);
                zeros(&mut out[pairs..]);
            } else {
                zeros(out);
            }
        });
    })
}

/// A packed lane, written by the packers before it is read.
type Lane = MaybeUninit<u32>;

/// A packed operand of `len` lanes, every one of which `pack` writes (the
/// values' pairs and the padding's zeros) before it is read: not zeroed
/// first, which cost a pass of `memset` over the convolutions' columns
/// per product.
fn packed_whole(len: usize, pack: impl FnOnce(&mut [Lane])) -> Vec<u32> {
    // SAFETY: every caller's `pack` writes each of the `len` lanes (the
    // values' pairs and the padding's zeros).
    #[allow(unsafe_code)]
    unsafe {
        uninit::written_whole(len, pack)
    }
}

/// Rows of `len` values (`values`, in groups of `group` rows) in pairs:
/// each group's row 2p in the low halves and row 2p + 1 (zeros past the
/// group's last row) in the high halves of its ⌈group/2⌉ rows of lanes,
/// rounded to bf16. The channel-pair operands of the 3-D channel tiles.
pub(super) fn row_pairs(values: &[f32], len: usize, group: usize) -> Vec<u32> {
    let groups = values.len() / (len * group).max(1);
    let pairs = group.div_ceil(2);
    let vector = super::Precision::Bf16.native();
    packed_whole(groups * pairs * len, |packed| {
        packed.par_chunks_mut(len.max(1)).enumerate().for_each(|(row, out)| {
            let (g, p) = (row / pairs, row % pairs);
            let rows = &values[g * group * len..][..group * len];
            let odd = (2 * p + 1 < group).then(|| &rows[(2 * p + 1) * len..][..len]);
            interleave_pairs(&rows[2 * p * len..][..len], odd, out, vector);
        });
    })
}

/// `lanes` written with zeros.
fn zeros(lanes: &mut [Lane]) {
    lanes.fill(MaybeUninit::new(0));
}

/// `row` as bf16 pairs: `out[p]` holds `row[2p]` in its low half and
/// `row[2p + 1]` (or 0 past the end) in its high half.
fn pack_pairs(row: &[f32], out: &mut [Lane], vector: bool) {
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

fn pack_pairs_portable(row: &[f32], out: &mut [Lane]) {
    for (p, lane) in out.iter_mut().enumerate() {
        let even = bits(row[2 * p]);
        let odd = row.get(2 * p + 1).map_or(0, |&v| bits(v));
        lane.write(even | (odd << 16));
    }
}

/// `b` [k × n] (row-major) packed in panels of [`NR`] columns, each panel
/// [`lanes` × NR] u32 (`lanes` ≥ ⌈k/2⌉) of bf16 pairs along k (columns
/// past n and lanes past the values are zeros).
///
/// The tasks take blocks of [`PANEL_BLOCK`] pairs of B's rows, each read
/// whole once, each pair's lanes written into every panel: a task per
/// panel would read 32 values of every row of B, a page apart.
fn pack_panels(b: &[f32], [k, n]: [usize; 2], lanes: usize, vector: bool) -> Vec<u32> {
    let pairs = k.div_ceil(2);
    let panels = n.div_ceil(NR);
    packed_whole(panels * lanes * NR, |packed| {
        let dest = Shared(packed.as_mut_ptr());
        (0..pairs.div_ceil(PANEL_BLOCK)).into_par_iter().for_each(|block| {
            let first = block * PANEL_BLOCK;
            let block_pairs = PANEL_BLOCK.min(pairs - first);
            let rows = &b[2 * first * n..(2 * (first + block_pairs)).min(k) * n];
            // SAFETY: the block's lanes of every panel belong to this task
            // alone, and lie within the buffer (first + block_pairs ≤ pairs
            // ≤ lanes).
            #[allow(unsafe_code)]
            unsafe {
                write_block(dest, [panels, lanes, n], (first, block_pairs), rows, vector)
            };
        });
        zero_lanes_past(packed, pairs, lanes);
    })
}

/// Lanes `first..first + pairs` of every panel of packed B (`panels`
/// panels of `lanes` × NR, at `dest`) from B's rows 2·first.. (`rows`,
/// n values each, as many as K has from there: an odd K's last lane pairs
/// its row with zeros), as bf16 pairs, zeros past n. A panel at a time:
/// the block's lanes of one panel are contiguous, where a lane at a time
/// would write 128 bytes into each panel, a panel's size apart.
///
/// # Safety
/// `dest` holds `panels · lanes · NR` lanes, `first + pairs` ≤ lanes, and
/// no other thread writes these lanes of any panel meanwhile.
#[allow(unsafe_code)]
unsafe fn write_block(
    dest: Shared<Lane>,
    [panels, lanes, n]: [usize; 3],
    (first, pairs): (usize, usize),
    rows: &[f32],
    vector: bool,
) {
    #[cfg(target_arch = "x86_64")]
    if vector {
        // SAFETY: `vector` is set only where the CPU computes bf16
        // natively (AVX512_BF16, AVX-512 F and BW); the lanes are the
        // caller's (the contract).
        return unsafe { avx512::write_block(dest.0, [panels, lanes, n], (first, pairs), rows) };
    }
    let row_count = rows.len() / n.max(1);
    for panel in 0..panels {
        let start = panel * NR;
        let width = NR.min(n - start);
        // SAFETY: these lanes of the panel lie within the buffer and are
        // this caller's alone (the contract).
        let out = unsafe { std::slice::from_raw_parts_mut(dest.at((panel * lanes + first) * NR), pairs * NR) };
        for (p, lane) in out.chunks_exact_mut(NR).enumerate() {
            let even = &rows[2 * p * n + start..][..width];
            let odd = (2 * p + 1 < row_count).then(|| &rows[(2 * p + 1) * n + start..][..width]);
            let (values, past_n) = lane.split_at_mut(width);
            interleave_pairs(even, odd, values, vector);
            zeros(past_n);
        }
    }
}

/// The lanes from `pairs` to `lanes` of every panel zeroed (AMX pads K to
/// whole tiles; the other paths have none).
fn zero_lanes_past(packed: &mut [Lane], pairs: usize, lanes: usize) {
    if pairs < lanes {
        for panel in packed.chunks_mut(lanes * NR) {
            zeros(&mut panel[pairs * NR..]);
        }
    }
}

/// `out[j]` = the pair (`even[j]`, `odd[j]`, 0 without an odd row).
fn interleave_pairs(even: &[f32], odd: Option<&[f32]>, out: &mut [Lane], vector: bool) {
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
        lane.write(bits(even[j]) | (odd.map_or(0, |o| bits(o[j])) << 16));
    }
}

/// Bᵀ's rows (B's columns) packed as [`pack_panels`] packs B: panels of
/// NR columns, each lane a pair of neighbours along K of one row of Bᵀ.
/// Each block of [`PANEL_BLOCK`] lanes of the panel's rows is packed
/// first and then interleaved, so the strided writes hit L1.
fn pack_panels_of_rows(b_t: &[f32], runs: &Runs, lanes: usize, vector: bool) -> Vec<u32> {
    let (pairs, n) = (runs.pairs(), runs.rows);
    let panels = n.div_ceil(NR);
    packed_whole(panels * lanes * NR, |packed| {
        packed.par_chunks_mut((lanes * NR).max(1)).enumerate().for_each(|(panel, out)| {
            let first = panel * NR;
            let width = NR.min(n - first);
            let mut block = vec![MaybeUninit::new(0u32); NR * PANEL_BLOCK];
            for start in (0..pairs).step_by(PANEL_BLOCK) {
                let len = PANEL_BLOCK.min(pairs - start);
                for j in 0..width {
                    runs.pack(b_t, first + j, start, &mut block[j * PANEL_BLOCK..j * PANEL_BLOCK + len], vector);
                }
                block_into_lanes(&block, width, &mut out[start * NR..(start + len) * NR]);
            }
            zero_lanes_past(out, pairs, lanes);
        });
    })
}

/// A block of packed pairs, `width` columns of [`PANEL_BLOCK`] lanes
/// each (column j's lanes from `j · PANEL_BLOCK`), written lane by lane
/// into a panel's lanes `out` (NR values each, those past `width`
/// zeroed): packing a block first keeps the panel's strided writes in L1.
fn block_into_lanes(block: &[Lane], width: usize, out: &mut [Lane]) {
    for (p, lane) in out.chunks_exact_mut(NR).enumerate() {
        let (values, past_n) = lane.split_at_mut(width);
        for (j, value) in values.iter_mut().enumerate() {
            *value = block[j * PANEL_BLOCK + p];
        }
        zeros(past_n);
    }
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

/// Whether this thread's convolution products run here on AMX tiles,
/// which outrun the direct 2-D kernels where a product fills their 32
/// rows: a tile instruction does sixteen `VDPBF16PS`' work.
pub(crate) fn tiles_here() -> bool {
    native_here() && Path::best() == Path::Amx
}

/// How the products run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    /// Plain Rust: the reference.
    Portable,
    /// `VDPBF16PS`, the same sums in the same order as the reference.
    Avx512,
    /// AMX tiles (`TDPBF16PS`: 16 × 32 by 32 × 16 bf16 values an
    /// instruction, into f32), where the CPU and the kernel allow them;
    /// their order of additions within a tile is the hardware's.
    Amx,
}

impl Path {
    /// The fastest this CPU runs.
    fn best() -> Path {
        if !super::Precision::Bf16.native() {
            return Path::Portable;
        }
        #[cfg(target_arch = "x86_64")]
        if amx::available() {
            return Path::Amx;
        }
        Path::Avx512
    }

    /// Lanes a packed row or panel row holds for `pairs` pairs of K: AMX
    /// reads whole tiles of 16.
    fn lanes(self, pairs: usize) -> usize {
        match self {
            Path::Amx => pairs.div_ceil(16) * 16,
            _ => pairs,
        }
    }

    /// Rows packed A holds for `m`: AMX multiplies blocks of 32.
    fn rows(self, m: usize) -> usize {
        match self {
            Path::Amx => m.div_ceil(32) * 32,
            _ => m,
        }
    }
}

/// `C = A · B` for `a` [m × k] and `b` [k × n], row-major f32; the
/// operands rounded to bf16, the sums in f32: on AMX tiles where the CPU
/// has them, else with `VDPBF16PS` where it computes bf16 natively
/// ([`Precision::native`](super::Precision::native)), else
/// [`gemm_portable`] (whose bits the `VDPBF16PS` path gives; AMX sums
/// within a tile in its own order).
pub fn gemm(a: &[f32], b: &[f32], dims: [usize; 3]) -> Vec<f32> {
    gemm_on(Path::best(), a, b, dims)
}

/// [`gemm`] written into `out` instead: C's row i over `out[at + i ·
/// row_stride..][..n]` (one sample's channels in an NCHW output, say),
/// what lies between the rows untouched. Panics if a row overlaps the
/// next or the last reaches past `out`.
pub fn gemm_into(a: &[f32], b: &[f32], dims: [usize; 3], out: (&mut [f32], usize, usize)) {
    gemm_into_on(Path::best(), a, b, dims, out);
}

fn gemm_into_on(path: Path, a: &[f32], b: &[f32], [m, k, n]: [usize; 3], out: (&mut [f32], usize, usize)) {
    PackedB::on(path, b, [k, n]).multiply_into(a, m, out);
}

/// B packed once for several products with it: a transposed convolution
/// multiplies each sample's input by the same weight.
#[derive(Debug)]
pub struct PackedB {
    panels: Vec<u32>,
    k: usize,
    n: usize,
    path: Path,
}

impl PackedB {
    /// `b` [k × n], row-major, packed for the path [`gemm`] takes.
    pub fn new(b: &[f32], [k, n]: [usize; 2]) -> PackedB {
        PackedB::on(Path::best(), b, [k, n])
    }

    fn on(path: Path, b: &[f32], [k, n]: [usize; 2]) -> PackedB {
        assert_eq!(b.len(), k * n, "B holds {} values, not {k} × {n}", b.len());
        let panels = pack_panels(b, [k, n], path.lanes(k.div_ceil(2)), path != Path::Portable);
        PackedB { panels, k, n, path }
    }

    /// [`gemm_into`] with this B: `C = A · B` for `a` [m × k], row-major,
    /// C's row i written over `out[at + i · row_stride..][..n]`. Panics as
    /// [`gemm_into`] does.
    pub fn multiply_into(&self, a: &[f32], m: usize, (out, at, row_stride): (&mut [f32], usize, usize)) {
        let a = self.a_operand(a, m);
        let n = self.n;
        let fits = m == 0 || n == 0 || (row_stride >= n && at + (m - 1) * row_stride + n <= out.len());
        assert!(fits, "C's {m} rows of {n} at {at}, {row_stride} apart, do not fit {} values", out.len());
        let c = Destination { values: Shared(out.as_mut_ptr()), at, row_stride };
        gemm_with(a, &self.panels, n, self.path, c);
    }

    /// `C = A · B` [m × n], row-major, for `a` [m × k], row-major: a
    /// new vector, not zeroed before the product writes it.
    pub fn multiply(&self, a: &[f32], m: usize) -> Vec<f32> {
        let a = self.a_operand(a, m);
        written_whole([m, self.n], |c| gemm_with(a, &self.panels, self.n, self.path, c))
    }

    /// [`multiply_into`](PackedB::multiply_into) with A packed once
    /// ([`PackedA`]) for several products: a convolution's weight times
    /// each sample's columns.
    pub fn multiply_packed_into(&self, a: &PackedA, (out, at, row_stride): (&mut [f32], usize, usize)) {
        self.packed_product(a, (out.as_mut_ptr(), out.len()), at, row_stride);
    }

    /// [`multiply_packed_into`](PackedB::multiply_packed_into) into values
    /// not yet written (of [`uninit::written_whole`]): each of C's values
    /// is written, none read.
    pub(crate) fn multiply_packed_into_spare(
        &self,
        a: &PackedA,
        (out, at, row_stride): (&mut [MaybeUninit<f32>], usize, usize),
    ) {
        self.packed_product(a, (out.as_mut_ptr().cast(), out.len()), at, row_stride);
    }

    /// C's rows written through `values`, the start of a slice of `len`
    /// f32 slots borrowed mutably by the caller.
    fn packed_product(&self, a: &PackedA, (values, len): (*mut f32, usize), at: usize, row_stride: usize) {
        assert!(a.k == self.k && a.path == self.path, "A packed for K = {} does not meet B's K = {}", a.k, self.k);
        let (m, n) = (a.m, self.n);
        let fits = m == 0 || n == 0 || (row_stride >= n && at + (m - 1) * row_stride + n <= len);
        assert!(fits, "C's {m} rows of {n} at {at}, {row_stride} apart, do not fit {len} values");
        let c = Destination { values: Shared(values), at, row_stride };
        gemm_packed((&a.packed, m), &self.panels, n, self.path, c);
    }

    /// B [k × n] packed as [`PackedB::new`] packs it, its rows written by
    /// `row(r, out)` (`out`: n values, every one to be written) a block
    /// of rows at a time into a task's buffer that stays in cache, rather than
    /// read from a matrix in memory: a convolution's columns, made row by
    /// row here, never exist whole in f32, which saves writing them out
    /// and reading them back (on HEP-CNN's `paper` layers, packing a
    /// tile's columns took 40 % as long as the product with them).
    pub fn from_rows([k, n]: [usize; 2], row: impl Fn(usize, &mut [f32]) + Sync) -> PackedB {
        let path = Path::best();
        let (pairs, lanes, panels) = (k.div_ceil(2), path.lanes(k.div_ceil(2)), n.div_ceil(NR));
        let vector = path != Path::Portable;
        let panels_packed = packed_whole(panels * lanes * NR, |packed| {
            let dest = Shared(packed.as_mut_ptr());
            // A buffer per task (a few per product), not per block: a
            // new one per block cost a `memset` of half a MiB each time.
            (0..pairs.div_ceil(PANEL_BLOCK)).into_par_iter().for_each_init(
                || vec![0.0f32; 2 * PANEL_BLOCK.min(pairs) * n],
                |rows, block| {
                    let first = block * PANEL_BLOCK;
                    let block_pairs = PANEL_BLOCK.min(pairs - first);
                    let block_rows = (2 * block_pairs).min(k - 2 * first);
                    let rows = &mut rows[..block_rows * n];
                    for (r, out) in rows.chunks_mut(n.max(1)).enumerate() {
                        row(2 * first + r, out);
                    }
                    // SAFETY: as in `pack_panels`: the block's lanes belong
                    // to this task alone.
                    #[allow(unsafe_code)]
                    unsafe {
                        write_block(dest, [panels, lanes, n], (first, block_pairs), rows, vector)
                    };
                },
            );
            zero_lanes_past(packed, pairs, lanes);
        });
        PackedB { panels: panels_packed, k, n, path }
    }

    /// `a` as A's m rows of K, which it must hold exactly.
    fn a_operand<'a>(&self, a: &'a [f32], m: usize) -> (&'a [f32], Runs) {
        let k = self.k;
        assert_eq!(a.len(), m * k, "A holds {} values, not {m} × {k}", a.len());
        (a, Runs::matrix(m, k))
    }
}

/// A packed once for several products with it ([`PackedB::multiply_packed_into`]).
#[derive(Debug)]
pub struct PackedA {
    packed: Vec<u32>,
    m: usize,
    k: usize,
    path: Path,
}

impl PackedA {
    /// `a` [m × k], row-major, packed for the path [`gemm`] takes.
    pub fn new(a: &[f32], [m, k]: [usize; 2]) -> PackedA {
        assert_eq!(a.len(), m * k, "A holds {} values, not {m} × {k}", a.len());
        let path = Path::best();
        let runs = Runs::matrix(m, k);
        let packed = pack_rows(a, &runs, [path.rows(m), path.lanes(runs.pairs())], path != Path::Portable);
        PackedA { packed, m, k, path }
    }
}

/// [`gemm`] with B given transposed: `b_t` [n × k], row-major.
pub fn gemm_bt(a: &[f32], b_t: &[f32], [m, k, n]: [usize; 3]) -> Vec<f32> {
    gemm_runs((a, Runs::matrix(m, k)), (b_t, Runs::matrix(n, k)))
}

/// `C = A · Bᵀ` [M × N] (row-major) for A's M rows and Bᵀ's N rows read
/// in place as [`Runs`] of the same shape along K, on the path [`gemm`]
/// takes. Panics if the runs differ in shape or reach past their slices.
pub fn gemm_runs((a, a_runs): (&[f32], Runs), (b_t, b_runs): (&[f32], Runs)) -> Vec<f32> {
    gemm_runs_on(Path::best(), (a, a_runs), (b_t, b_runs))
}

fn gemm_runs_on(path: Path, (a, a_runs): (&[f32], Runs), (b_t, b_runs): (&[f32], Runs)) -> Vec<f32> {
    assert_eq!((a_runs.runs, a_runs.length), (b_runs.runs, b_runs.length), "A's and Bᵀ's runs differ along K");
    assert!(a_runs.within(a.len()), "{a_runs:?} reaches past A's {} values", a.len());
    assert!(b_runs.within(b_t.len()), "{b_runs:?} reaches past Bᵀ's {} values", b_t.len());
    let lanes = path.lanes(b_runs.pairs());
    let b_packed = pack_panels_of_rows(b_t, &b_runs, lanes, path != Path::Portable);
    written_whole([a_runs.rows, b_runs.rows], |c| gemm_with((a, a_runs), &b_packed, b_runs.rows, path, c))
}

/// [`gemm_runs`] with Bᵀ's rows made rather than read: `row(run, r,
/// out)` writes run `run` of row r (`length` values, every one to be
/// written), for `rows` rows of `runs` runs each; A's runs must have the
/// same shape. Each panel's rows are made a run at a time into a buffer
/// of the task's and packed from there, so the operand (a weight
/// gradient's columns) never exists whole in f32.
pub fn gemm_runs_from_rows(
    (a, a_runs): (&[f32], Runs),
    [rows, runs, length]: [usize; 3],
    row: impl Fn(usize, usize, &mut [f32]) + Sync,
) -> Vec<f32> {
    let path = Path::best();
    assert_eq!((a_runs.runs, a_runs.length), (runs, length), "A's and Bᵀ's runs differ along K");
    assert!(a_runs.within(a.len()), "{a_runs:?} reaches past A's {} values", a.len());
    let b_runs = Runs { rows, offset: 0, row_stride: 0, runs, run_stride: 0, length };
    let lanes = path.lanes(b_runs.pairs());
    let b_packed = pack_panels_from_rows(&b_runs, lanes, path != Path::Portable, &row);
    written_whole([a_runs.rows, rows], |c| gemm_with((a, a_runs), &b_packed, rows, path, c))
}

/// [`pack_panels_of_rows`] with the rows made by `row(run, r, out)`.
fn pack_panels_from_rows(
    runs: &Runs,
    lanes: usize,
    vector: bool,
    row: &(impl Fn(usize, usize, &mut [f32]) + Sync),
) -> Vec<u32> {
    let (pairs, n, per_run) = (runs.pairs(), runs.rows, runs.pairs_per_run());
    let panels = n.div_ceil(NR);
    packed_whole(panels * lanes * NR, |packed| {
        packed.par_chunks_mut((lanes * NR).max(1)).enumerate().for_each_init(
            || vec![0.0f32; NR.min(n) * runs.length],
            |made, (panel, out)| {
                let first = panel * NR;
                let width = NR.min(n - first);
                let mut block = [MaybeUninit::new(0u32); NR * PANEL_BLOCK];
                let made = &mut made[..width * runs.length];
                for run in 0..runs.runs {
                    for (j, to) in made.chunks_mut(runs.length.max(1)).enumerate() {
                        row(run, first + j, to);
                    }
                    for start in (0..per_run).step_by(PANEL_BLOCK) {
                        let len = PANEL_BLOCK.min(per_run - start);
                        for (j, values) in made.chunks(runs.length.max(1)).enumerate() {
                            let pairs_of = &values[2 * start..(2 * (start + len)).min(runs.length)];
                            pack_pairs(pairs_of, &mut block[j * PANEL_BLOCK..j * PANEL_BLOCK + len], vector);
                        }
                        let lane = run * per_run + start;
                        block_into_lanes(&block, width, &mut out[lane * NR..(lane + len) * NR]);
                    }
                }
                zero_lanes_past(out, pairs, lanes);
            },
        );
    })
}

/// [`gemm`] on `VDPBF16PS` even where AMX tiles are available (the
/// `precision` bench compares the two); [`gemm_portable`] on a CPU without
/// AVX512_BF16.
pub fn gemm_without_tiles(a: &[f32], b: &[f32], dims: [usize; 3]) -> Vec<f32> {
    let path = if super::Precision::Bf16.native() { Path::Avx512 } else { Path::Portable };
    gemm_on(path, a, b, dims)
}

/// [`gemm`] in plain Rust, the reference of the vector paths.
pub fn gemm_portable(a: &[f32], b: &[f32], dims: [usize; 3]) -> Vec<f32> {
    gemm_on(Path::Portable, a, b, dims)
}

fn gemm_on(path: Path, a: &[f32], b: &[f32], [m, k, n]: [usize; 3]) -> Vec<f32> {
    PackedB::on(path, b, [k, n]).multiply(a, m)
}

/// Where a micro-kernel's sums lie: `rows` rows of [`NR`] f32, `ldc`
/// apart, from `ptr`. A task's tile is written by that task alone, and
/// its rows lie between other tasks' columns, so it is a pointer rather
/// than a slice (slices of the rows would overlap the other tasks').
#[derive(Clone, Copy)]
struct Sums {
    ptr: *mut f32,
    ldc: usize,
}

/// A micro-kernel: the sums of `rows` ≤ [`MR`] rows of packed A (`pairs`
/// lanes each, row stride `lda`) with a block of a packed B panel
/// (`pairs` × NR lanes), added to what `c` holds, or written over it if
/// `first` (the block is K's first).
///
/// # Safety
/// `c` names `rows` rows of NR floats that nothing else reads or writes
/// while the kernel runs; `a` and `b` hold what they name; the AVX-512
/// kernel needs a CPU with AVX512_BF16 and AVX-512 F.
type Kernel = unsafe fn(Sums, (&[u32], usize), &[u32], usize, usize, bool);

/// The AVX512_BF16 micro-kernel if `vector` (the CPU computes bf16
/// natively), the portable one otherwise.
fn kernel_for(vector: bool) -> Kernel {
    #[cfg(target_arch = "x86_64")]
    if vector {
        return avx512::kernel;
    }
    portable_kernel
}

/// # Safety
/// As [`Kernel`].
#[allow(unsafe_code)]
unsafe fn portable_kernel(c: Sums, (a, lda): (&[u32], usize), b: &[u32], rows: usize, pairs: usize, first: bool) {
    for r in 0..rows {
        for j in 0..NR {
            // SAFETY: row r of the tile holds NR floats from r · ldc.
            let at = unsafe { c.ptr.add(r * c.ldc + j) };
            // SAFETY: as above; the tile is this call's alone.
            let mut acc = if first { 0.0 } else { unsafe { at.read() } };
            for p in 0..pairs {
                acc = dot_pair(acc, a[r * lda + p], b[p * NR + j]);
            }
            // SAFETY: as above.
            unsafe { at.write(acc) };
        }
    }
}

/// Rows of A a task multiplies against one panel of B: with the panel's
/// block of KC pairs in L1 (32 KiB), the task's MC rows of that block
/// (64 KiB) come from L2.
const MC: usize = 64;

/// The blocking shared by the paths. Portable and AVX-512: tiles of
/// [`MC`] rows × one panel of [`NR`] columns in parallel, each written
/// straight into C; within a tile, blocks of KC pairs in order and rows
/// MR at a time, each adding to the sums of the blocks before (so every
/// output is summed over k in order, from zero). AMX: blocks of 32 rows
/// (A padded with zero rows) on four tiles, [`amx::product`].
fn gemm_with((a, a_runs): (&[f32], Runs), b_packed: &[u32], n: usize, path: Path, c: Destination) {
    let (m, lanes, rows) = (a_runs.rows, path.lanes(a_runs.pairs()), path.rows(a_runs.rows));
    if m == 0 || n == 0 {
        return;
    }
    let a_packed = pack_rows(a, &a_runs, [rows, lanes], path != Path::Portable);
    gemm_packed((&a_packed, m), b_packed, n, path, c);
}

/// [`gemm_with`] on A already packed ([`pack_rows`]: `path.rows(m)` rows
/// of the lanes B's panels have).
fn gemm_packed((a_packed, m): (&[u32], usize), b_packed: &[u32], n: usize, path: Path, c: Destination) {
    let rows = path.rows(m);
    let lanes = a_packed.len() / rows.max(1);
    if m == 0 || n == 0 {
        return;
    }
    if lanes == 0 {
        // K = 0: no block writes the sums, which are zero.
        for i in 0..m {
            // SAFETY: C's row i lies within the destination.
            #[allow(unsafe_code)]
            unsafe {
                std::slice::from_raw_parts_mut(c.row(i), n).fill(0.0)
            };
        }
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if path == Path::Amx {
        // SAFETY: `Path::best` chose AMX only where the CPU has it and the
        // kernel granted this process its tile state; the path's lanes are
        // a multiple of 16, A holds `rows` rows of them (zero past m), B's
        // panels as many; C's m rows of n are this product's.
        #[allow(unsafe_code)]
        return unsafe { amx::product(a_packed, b_packed, [m, lanes, n], c) };
    }
    let kernel = kernel_for(path == Path::Avx512);
    let (panels, row_blocks) = (n.div_ceil(NR), m.div_ceil(MC));
    let Destination { values: c, at, row_stride } = c;
    // Row-block-major: a thread's run of tasks writes C's rows whole, one
    // block of rows after another, while B's panels pass (a tall C
    // written a panel at a time touches a page per row).
    (0..panels * row_blocks).into_par_iter().for_each_init(
        || vec![0.0f32; MC * NR],
        |edge, task| {
            let (panel, first_row) = (task % panels, (task / panels) * MC);
            let (width, tile_rows) = (NR.min(n - panel * NR), MC.min(m - first_row));
            let b_panel = &b_packed[panel * lanes * NR..(panel + 1) * lanes * NR];
            // A whole panel's sums go straight to C; the last, narrower
            // one's to `edge` first.
            let edge_sums = edge.as_mut_ptr();
            let sums_at = |row: usize| match width == NR {
                // SAFETY: rows first_row.. of C's columns panel·NR.. lie
                // within the destination (which holds every row), and
                // no other task's tile shares them.
                #[allow(unsafe_code)]
                true => {
                    Sums { ptr: unsafe { c.at(at + (first_row + row) * row_stride + panel * NR) }, ldc: row_stride }
                }
                false => Sums { ptr: edge_sums.wrapping_add(row * NR), ldc: NR },
            };
            for first_pair in (0..lanes).step_by(KC) {
                let block = KC.min(lanes - first_pair);
                let b_block = &b_panel[first_pair * NR..(first_pair + block) * NR];
                for row in (0..tile_rows).step_by(MR) {
                    let a_rows = &a_packed[(first_row + row) * lanes + first_pair..];
                    // SAFETY: `sums_at` names MR.min(..) rows of NR sums
                    // this task alone writes; A's rows hold `block` lanes
                    // from `first_pair`, B's block `block` × NR; the
                    // vector kernel is chosen only where the CPU has it.
                    #[allow(unsafe_code)]
                    unsafe {
                        kernel(sums_at(row), (a_rows, lanes), b_block, MR.min(tile_rows - row), block, first_pair == 0)
                    };
                }
            }
            if width < NR {
                for i in 0..tile_rows {
                    let to = at + (first_row + i) * row_stride + panel * NR;
                    // SAFETY: as for the whole panels, `width` values.
                    #[allow(unsafe_code)]
                    unsafe {
                        std::ptr::copy_nonoverlapping(edge[i * NR..].as_ptr(), c.at(to), width)
                    };
                }
            }
        },
    );
}

/// A buffer written by parallel tasks each in its own part of it (C's
/// tiles in [`gemm_with`], B's lanes in [`pack_panels`]), parts that are
/// not whole chunks of the slice.
struct Shared<T>(*mut T);

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Shared<T> {}

// SAFETY: the tasks sharing it write disjoint parts of the buffer, which
// outlives them.
#[allow(unsafe_code)]
unsafe impl<T> Send for Shared<T> {}
// SAFETY: as above.
#[allow(unsafe_code)]
unsafe impl<T> Sync for Shared<T> {}

impl<T> Shared<T> {
    /// The address of the buffer's value `index`.
    ///
    /// # Safety
    /// `index` lies within the buffer.
    #[allow(unsafe_code)]
    unsafe fn at(self, index: usize) -> *mut T {
        // SAFETY: the caller keeps `index` within the buffer.
        unsafe { self.0.add(index) }
    }
}

/// Where a product writes C: row i over `at + i · row_stride..` of the
/// buffer `values` points into, which holds every row (the callers check
/// that, or allocate it so). The product writes each of C's values once,
/// and nothing else touches them meanwhile.
#[derive(Clone, Copy)]
struct Destination {
    values: Shared<f32>,
    at: usize,
    row_stride: usize,
}

impl Destination {
    /// The address of row i's first value.
    ///
    /// # Safety
    /// Row i is one of C's.
    #[allow(unsafe_code)]
    unsafe fn row(self, i: usize) -> *mut f32 {
        // SAFETY: the caller names a row of C, which lies in the buffer.
        unsafe { self.values.at(self.at + i * self.row_stride) }
    }
}

/// A new [m × n] matrix, row-major, written whole by `product` (whose C
/// it is) before it is read: not zeroed first, which on the
/// convolutions' columns was a pass of `memset` over tens of MiB per
/// product.
fn written_whole([m, n]: [usize; 2], product: impl FnOnce(Destination)) -> Vec<f32> {
    // SAFETY: `product` writes each of C's m rows of n values, n apart from
    // the start, through the pointer into the slice: all `m · n` of them.
    #[allow(unsafe_code)]
    unsafe {
        uninit::written_whole(m * n, |values| {
            product(Destination { values: Shared(values.as_mut_ptr().cast()), at: 0, row_stride: n })
        })
    }
}

// The vector kernel is unsafe by nature: intrinsics behind a run-time
// feature check, and unchecked loads the blocking keeps in bounds.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx512 {
    use std::arch::x86_64::*;

    use super::{MR, NR, Sums};

    /// [`pack_pairs_portable`](super::pack_pairs_portable) 32 values at a
    /// time: `VCVTNE2PS2BF16` of two 16-value halves lays them out as 16
    /// pairs.
    ///
    /// # Safety
    /// The CPU must have AVX512_BF16 and AVX-512 F; `out` holds
    /// ⌈row.len() / 2⌉ lanes.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub(super) unsafe fn pack_pairs(row: &[f32], out: &mut [super::Lane]) {
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

    /// [`write_block`](super::write_block) in one call: each panel's 32
    /// lanes of a pair of rows as two 16-lane halves, the columns past n
    /// loaded as zeros by a mask (the portable route's zero lanes). One
    /// call per block, where a call per panel and pair cost as much as the
    /// 32 lanes it wrote.
    ///
    /// # Safety
    /// The CPU must have AVX512_BF16 and AVX-512 F and BW; as
    /// [`write_block`](super::write_block)'s contract.
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    pub(super) unsafe fn write_block(
        dest: *mut super::Lane,
        [panels, lanes, n]: [usize; 3],
        (first, pairs): (usize, usize),
        rows: &[f32],
    ) {
        const HALF: usize = NR / 2;
        // Lane i takes halves i (even) and 16 + i (odd).
        let order = _mm512_set_epi16(
            31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17,
            1, 16, 0,
        );
        let row_count = rows.len() / n.max(1);
        for panel in 0..panels {
            for p in 0..pairs {
                // Pointers made with wrapping arithmetic: past n they are
                // never read (the mask), and may point past the rows.
                let even = rows.as_ptr().wrapping_add(2 * p * n);
                let odd = (2 * p + 1 < row_count).then(|| rows.as_ptr().wrapping_add((2 * p + 1) * n));
                let out = dest.wrapping_add((panel * lanes + first + p) * NR);
                for half in 0..2 {
                    let at = panel * NR + half * HALF;
                    let valid = n.saturating_sub(at).min(HALF);
                    let mask: __mmask16 = if valid == HALF { u16::MAX } else { (1u16 << valid) - 1 };
                    // SAFETY: the mask reads only the `valid` values of
                    // each row from column `at`, which lie within `rows`;
                    // the 16 lanes written lie within the contract's.
                    unsafe {
                        let e = _mm512_maskz_loadu_ps(mask, even.wrapping_add(at));
                        let o = match odd {
                            Some(odd) => _mm512_maskz_loadu_ps(mask, odd.wrapping_add(at)),
                            None => _mm512_setzero_ps(),
                        };
                        let halves: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(o, e));
                        _mm512_storeu_si512(out.add(half * HALF).cast(), _mm512_permutexvar_epi16(order, halves));
                    }
                }
            }
        }
    }

    /// [`interleave_pairs`](super::interleave_pairs) 16 lanes at a time:
    /// both rows converted by one `VCVTNE2PS2BF16`, then interleaved.
    ///
    /// # Safety
    /// The CPU must have AVX512_BF16 and AVX-512 F and BW; `even` (and
    /// `odd`) are as long as `out`.
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    pub(super) unsafe fn interleave_pairs(even: &[f32], odd: Option<&[f32]>, out: &mut [super::Lane]) {
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
            lane.write(super::bits(even[j]) | (odd.map_or(0, |o| super::bits(o[j])) << 16));
        }
    }

    /// [`portable_kernel`](super::portable_kernel) with `VDPBF16PS`: the
    /// same sums, 32 columns per row in two vectors, up to 8 rows.
    ///
    /// # Safety
    /// As [`Kernel`](super::Kernel): the CPU must have AVX512_BF16 and
    /// AVX-512 F; `c` names `rows` rows of NR floats this call alone
    /// touches, `a` holds `rows` rows of `pairs` lanes at stride `lda`,
    /// `b` `pairs × NR` lanes.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub(super) unsafe fn kernel(c: Sums, a: (&[u32], usize), b: &[u32], rows: usize, pairs: usize, first: bool) {
        debug_assert!(rows <= MR && a.0.len() >= (rows - 1) * a.1 + pairs && b.len() >= pairs * NR);
        // A row count known at compile time keeps the sums in registers
        // with no test per row in the loop over K.
        // SAFETY: as this function's.
        unsafe {
            match rows {
                8 => rows_of::<8>(c, a, b, pairs, first),
                7 => rows_of::<7>(c, a, b, pairs, first),
                6 => rows_of::<6>(c, a, b, pairs, first),
                5 => rows_of::<5>(c, a, b, pairs, first),
                4 => rows_of::<4>(c, a, b, pairs, first),
                3 => rows_of::<3>(c, a, b, pairs, first),
                2 => rows_of::<2>(c, a, b, pairs, first),
                1 => rows_of::<1>(c, a, b, pairs, first),
                _ => {}
            }
        }
    }

    /// [`kernel`] for `R` rows.
    ///
    /// # Safety
    /// As [`kernel`]'s, with `rows` = `R`.
    #[target_feature(enable = "avx512f,avx512bf16")]
    #[inline]
    unsafe fn rows_of<const R: usize>(c: Sums, (a, lda): (&[u32], usize), b: &[u32], pairs: usize, first: bool) {
        let mut acc = [[_mm512_setzero_ps(); 2]; R];
        if !first {
            for (r, row) in acc.iter_mut().enumerate() {
                // SAFETY: row r of c holds NR = 32 floats from r · ldc.
                unsafe {
                    row[0] = _mm512_loadu_ps(c.ptr.add(r * c.ldc));
                    row[1] = _mm512_loadu_ps(c.ptr.add(r * c.ldc + 16));
                }
            }
        }
        for p in 0..pairs {
            // SAFETY: b holds pairs × NR lanes; a holds R rows of pairs.
            unsafe {
                let b0: __m512bh = std::mem::transmute(_mm512_loadu_si512(b.as_ptr().add(p * NR).cast()));
                let b1: __m512bh = std::mem::transmute(_mm512_loadu_si512(b.as_ptr().add(p * NR + 16).cast()));
                for (r, row) in acc.iter_mut().enumerate() {
                    let pair = *a.get_unchecked(r * lda + p);
                    let a_pair: __m512bh = std::mem::transmute(_mm512_set1_epi32(pair as i32));
                    row[0] = _mm512_dpbf16_ps(row[0], a_pair, b0);
                    row[1] = _mm512_dpbf16_ps(row[1], a_pair, b1);
                }
            }
        }
        for (r, row) in acc.iter().enumerate() {
            // SAFETY: as for the loads.
            unsafe {
                _mm512_storeu_ps(c.ptr.add(r * c.ldc), row[0]);
                _mm512_storeu_ps(c.ptr.add(r * c.ldc + 16), row[1]);
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

    /// Odd and whole sizes; past one block of K; a tall C whose rows the
    /// AMX path shares out with its panels ([200, 600, 40]), a wide one
    /// whose tiles are all whole ([96, 40, 320]).
    const SHAPES: [[usize; 3]; 9] = [
        [1, 1, 1],
        [3, 5, 7],
        [8, 2, 32],
        [9, 33, 40],
        [16, 600, 70],
        [20, 513, 33],
        [64, 144, 300],
        [200, 600, 40],
        [96, 40, 320],
    ];

    #[test]
    fn every_path_sums_the_rounded_operands_to_f32_accuracy() {
        for [m, k, n] in SHAPES {
            let (a, b) = (values(m * k, 1), values(k * n, 2));
            let ours = gemm_portable(&a, &b, [m, k, n]);
            let reference = exact(&a, &b, [m, k, n]);
            let scale: f64 = a.iter().map(|v| f64::from(v.abs())).fold(0.0, f64::max)
                * b.iter().map(|v| f64::from(v.abs())).fold(0.0, f64::max)
                * k as f64;
            for (x, y) in ours.iter().zip(&reference) {
                assert!((f64::from(*x) - y).abs() <= 1e-6 * scale, "{m}×{k}×{n}: {x} against {y}");
            }
            // The best path (AMX where there is one), B given either way.
            let best = [("B", gemm(&a, &b, [m, k, n])), ("Bᵀ", gemm_bt(&a, &transpose(&b, k, n), [m, k, n]))];
            for (what, product) in best {
                for (x, y) in product.iter().zip(&reference) {
                    let path = Path::best();
                    assert!(
                        (f64::from(*x) - y).abs() <= 1e-6 * scale,
                        "{m}×{k}×{n} {what} ({path:?}): {x} against {y}"
                    );
                }
            }
        }
    }

    /// Operands read in place as runs (odd lengths, offsets, gaps between
    /// runs and rows) multiply as the matrices of their runs side by
    /// side, each odd run padded with a zero; every path available here.
    #[test]
    fn runs_read_in_place_multiply_as_the_matrices_they_name() {
        let mut paths = vec![Path::Portable];
        if crate::kernels::Precision::Bf16.native() {
            paths.push(Path::Avx512);
            paths.push(Path::best());
        }
        // (rows of A, rows of Bᵀ, runs, length)
        for (m, n, runs, length) in [(1, 1, 1, 1), (3, 5, 2, 7), (16, 40, 3, 33), (17, 33, 4, 64), (2, 70, 1, 301)] {
            let a_runs =
                Runs { rows: m, offset: 5, row_stride: length + 3, runs, run_stride: m * (length + 3) + 1, length };
            let b_runs = Runs { rows: n, offset: 0, row_stride: length, runs, run_stride: n * length, length };
            let a = values(5 + runs * (m * (length + 3) + 1), 5);
            let b_t = values(runs * n * length, 6);
            let padded = 2 * length.div_ceil(2);
            let side_by_side = |values: &[f32], r: &Runs| -> Vec<f32> {
                (0..r.rows)
                    .flat_map(|row| (0..r.runs).flat_map(move |run| (0..padded).map(move |i| (row, run, i))))
                    .map(|(row, run, i)| {
                        let at = r.offset + run * r.run_stride + row * r.row_stride + i;
                        if i < length { values[at] } else { 0.0 }
                    })
                    .collect()
            };
            let k = runs * padded;
            let (a_full, b_full) = (side_by_side(&a, &a_runs), transpose(&side_by_side(&b_t, &b_runs), n, k));
            let reference = exact(&a_full, &b_full, [m, k, n]);
            let scale = 3e4 * 3e4 * k as f64;
            for &path in &paths {
                let product = gemm_runs_on(path, (&a, a_runs), (&b_t, b_runs));
                let whole = gemm_on(path, &a_full, &b_full, [m, k, n]);
                assert_eq!(product.len(), m * n);
                for (i, (x, y)) in product.iter().zip(&reference).enumerate() {
                    assert!(
                        (f64::from(*x) - y).abs() <= 1e-6 * scale,
                        "{path:?} {m}×{n}, {runs} runs of {length}: C[{i}] = {x}, want {y}"
                    );
                }
                if path != Path::Amx {
                    let same = product.iter().zip(&whole).all(|(x, y)| x.to_bits() == y.to_bits());
                    assert!(
                        same,
                        "{path:?} {m}×{n}, {runs} runs of {length}: differs from the side-by-side matrices' bits"
                    );
                }
            }
        }
    }

    /// B packed from its rows as they are made, and A packed once for
    /// several products, give the bits of the plain product (odd K, n not
    /// a whole panel, K past one block of panel rows).
    #[test]
    fn operands_packed_ahead_or_row_by_row_give_the_products_bits() {
        for [m, k, n] in SHAPES.into_iter().chain([[5, 2 * PANEL_BLOCK + 3, 45], [2, 4 * PANEL_BLOCK, 96]]) {
            let (a, b) = (values(m * k, 7), values(k * n, 8));
            let want = gemm(&a, &b, [m, k, n]);
            let from_rows = PackedB::from_rows([k, n], |r, out| out.copy_from_slice(&b[r * n..][..n]));
            assert_eq!(from_rows.panels, PackedB::new(&b, [k, n]).panels, "{m}×{k}×{n}: packed B");
            let packed_a = PackedA::new(&a, [m, k]);
            // Into rows 3 apart from where C's lie, the gaps untouched.
            let mut out = vec![f32::NAN; 1 + m * (n + 3)];
            from_rows.multiply_packed_into(&packed_a, (&mut out, 1, n + 3));
            for i in 0..m {
                let row = &out[1 + i * (n + 3)..][..n];
                let same = row.iter().zip(&want[i * n..][..n]).all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(same, "{m}×{k}×{n}: row {i} differs from the product's bits");
                let gap = &out[1 + i * (n + 3) + n..][..3];
                assert!(gap.iter().all(|v| v.is_nan()), "{m}×{k}×{n}: row {i} wrote past its n values");
            }
        }
    }

    /// Bᵀ's rows made run by run give the bits of the same rows read in
    /// place (odd run lengths, panels not whole, several blocks of lanes).
    #[test]
    fn rows_made_run_by_run_give_the_bits_of_rows_read_in_place() {
        for (m, n, runs, length) in [(1, 1, 1, 1), (3, 5, 2, 7), (16, 40, 3, 33), (8, 33, 2, 2 * PANEL_BLOCK + 5)] {
            let a_runs = Runs { rows: m, offset: 0, row_stride: length, runs, run_stride: m * length, length };
            let b_runs = Runs { rows: n, offset: 0, row_stride: length, runs, run_stride: n * length, length };
            let (a, b_t) = (values(runs * m * length, 9), values(runs * n * length, 10));
            let want = gemm_runs((&a, a_runs), (&b_t, b_runs));
            let made = gemm_runs_from_rows((&a, a_runs), [n, runs, length], |run, r, out| {
                out.copy_from_slice(&b_t[run * n * length + r * length..][..length]);
            });
            let same = made.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(same && made.len() == want.len(), "{m}×{n}, {runs} runs of {length}: differs");
        }
    }

    #[test]
    #[should_panic(expected = "reaches past")]
    fn runs_past_their_slice_are_refused() {
        let runs = Runs { rows: 2, offset: 1, row_stride: 4, runs: 2, run_stride: 8, length: 4 };
        let _ = gemm_runs((&[0.0; 16], runs), (&[0.0; 16], Runs { offset: 0, ..runs }));
    }

    #[test]
    fn the_vector_path_gives_the_portable_bits() {
        if !crate::kernels::Precision::Bf16.native() {
            e2e::skip("the_vector_path_gives_the_portable_bits", "no AVX512_BF16 on this CPU");
            return;
        }
        for [m, k, n] in SHAPES {
            let (a, b) = (values(m * k, 3), values(k * n, 4));
            let vector = gemm_on(Path::Avx512, &a, &b, [m, k, n]);
            let portable = gemm_portable(&a, &b, [m, k, n]);
            let same = vector.iter().zip(&portable).all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(same, "{m}×{k}×{n}: the AVX512_BF16 path differs from the portable one");
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
