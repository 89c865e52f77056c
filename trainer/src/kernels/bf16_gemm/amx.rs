//! The AMX path of the bf16 products: A's rows packed 32 at a time and
//! B's panels ([`NR`] columns) multiplied on tiles (`TDPBF16PS`), the
//! sums stored straight into C with its own row stride. Only the tiles C
//! cannot take whole (the last panel when n is not a multiple of NR, the
//! last rows when m is not one of 32) are summed in a task's buffer and
//! copied at the end, rather than every tile going through a buffer that
//! one thread then copies into C (`docs/benchmarks.md`, mixed precision).
//!
//! AMX from stable Rust: the tile instructions by inline assembly (their
//! intrinsics are unstable), the tile state requested from Linux once
//! (`arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`).

#![allow(unsafe_code)]

use std::arch::asm;
use std::ops::Range;
use std::sync::OnceLock;

use rayon::prelude::*;

use super::{Destination, NR};

/// Rows a tile block multiplies: two tiles of 16.
const ROWS: usize = 32;

/// Lanes of K the path multiplies a block of at a time: 32 rows of A
/// (32 KiB) stay in L1 while every panel of a task passes over them, the
/// task's panels' block (32 KiB each) in L2.
const KC: usize = 256;

/// Whether this CPU has AMX-TILE and AMX-BF16 (CPUID leaf 7, EDX bits
/// 24 and 22) and Linux granted this process the tile state.
pub(super) fn available() -> bool {
    static GRANTED: OnceLock<bool> = OnceLock::new();
    *GRANTED.get_or_init(|| {
        // SAFETY: CPUID leaf 7 exists on every x86-64 CPU with AVX-512.
        let leaf = std::arch::x86_64::__cpuid_count(7, 0);
        let has = leaf.edx & (1 << 24) != 0 && leaf.edx & (1 << 22) != 0;
        const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
        const XFEATURE_XTILEDATA: libc::c_long = 18;
        // SAFETY: a system call with two integer arguments; it fails
        // (non-zero) where the kernel or the CPU lacks the feature.
        has && unsafe { libc::syscall(libc::SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0 }
    })
}

/// `C = A · B` for A packed as `m.div_ceil(32) · 32` rows of `lanes`
/// lanes (rows past m zero) and B as panels of `lanes` × NR lanes, C's
/// m × n sums written through `c`.
///
/// The tiles are shared out as a grid of tasks: runs of panels (about two
/// tasks a thread), and when that leaves threads idle (a tall C with few
/// panels) runs of row blocks too. Each task takes K a block at a time
/// across all its tiles, the sums carried from block to block in C, so a
/// product with few rows and a long K (a weight gradient's) reads A from
/// memory once per task rather than once per panel.
///
/// # Safety
/// [`available`] is true; `lanes` is a multiple of 16; `a_packed` holds
/// the rows and `b_packed` the panels as above; `c` names m rows of n
/// values that nothing else touches while the product runs.
pub(super) unsafe fn product(a_packed: &[u32], b_packed: &[u32], [m, lanes, n]: [usize; 3], c: Destination) {
    let (panels, row_blocks) = (n.div_ceil(NR), m.div_ceil(ROWS));
    assert!(lanes.is_multiple_of(16) && a_packed.len() >= row_blocks * ROWS * lanes);
    assert!(b_packed.len() >= panels * lanes * NR);
    let tasks = 2 * rayon::current_num_threads();
    let panels_per_task = panels.div_ceil(tasks).max(1);
    let panel_runs = panels.div_ceil(panels_per_task);
    // The row runs that make up the tasks the panel runs leave short.
    let row_runs_wanted = tasks.div_ceil(panel_runs).clamp(1, row_blocks.max(1));
    let blocks_per_task = row_blocks.div_ceil(row_runs_wanted).max(1);
    let block_runs = row_blocks.div_ceil(blocks_per_task);
    let grid = Grid { m, n, lanes, panels, row_blocks };
    (0..panel_runs * block_runs).into_par_iter().for_each_init(Vec::new, |edges, task| {
        let (panel_run, block_run) = (task / block_runs, task % block_runs);
        let tiles = Tiles {
            panels: panel_run * panels_per_task..((panel_run + 1) * panels_per_task).min(panels),
            blocks: block_run * blocks_per_task..((block_run + 1) * blocks_per_task).min(row_blocks),
        };
        // SAFETY: the caller's promises; the tasks' tiles are disjoint.
        unsafe { grid.multiply(&tiles, (a_packed, b_packed), c, edges) };
    });
}

/// The product's shape in tiles.
struct Grid {
    m: usize,
    n: usize,
    lanes: usize,
    panels: usize,
    row_blocks: usize,
}

/// A task's tiles: these panels of these row blocks.
struct Tiles {
    panels: Range<usize>,
    blocks: Range<usize>,
}

impl Grid {
    /// Where in a task's `edges` the tile (panel, block) is summed, if C
    /// cannot take it whole: a slot per panel for the last row block, one
    /// per row block for the last panel.
    fn edge_slot(&self, tiles: &Tiles, panel: usize, block: usize) -> Option<usize> {
        if block + 1 == self.row_blocks && !self.m.is_multiple_of(ROWS) {
            Some(panel - tiles.panels.start)
        } else if panel + 1 == self.panels && !self.n.is_multiple_of(NR) {
            Some(tiles.panels.len() + block - tiles.blocks.start)
        } else {
            None
        }
    }

    /// One task's tiles, K a block at a time.
    ///
    /// # Safety
    /// As [`product`], for this task's tiles, which no other task shares.
    unsafe fn multiply(&self, tiles: &Tiles, (a, b): (&[u32], &[u32]), c: Destination, edges: &mut Vec<f32>) {
        let lanes = self.lanes;
        edges.clear();
        edges.resize((tiles.panels.len() + tiles.blocks.len()) * ROWS * NR, 0.0);
        // SAFETY: the caller's promise that AMX is available.
        let _tiles = unsafe { ConfiguredTiles::new() };
        for first_lane in (0..lanes).step_by(KC) {
            let block_lanes = KC.min(lanes - first_lane);
            // Row block by row block, so that C is written a band of rows
            // at a time (tall products with a short K were bound by C's
            // stores, a page per row, when a panel's column ran down them).
            for block in tiles.blocks.clone() {
                let a_rows = &a[block * ROWS * lanes + first_lane..];
                for panel in tiles.panels.clone() {
                    let b_block = &b[(panel * lanes + first_lane) * NR..(panel + 1) * lanes * NR];
                    let sums = match self.edge_slot(tiles, panel, block) {
                        Some(slot) => (edges[slot * ROWS * NR..].as_mut_ptr(), NR),
                        // SAFETY: a whole tile: rows block·32.. +32 lie
                        // within C's m, columns panel·NR.. +NR within n.
                        None => (unsafe { c.row(block * ROWS).add(panel * NR) }, c.row_stride),
                    };
                    // SAFETY: the tiles are configured; `block_lanes` is a
                    // multiple of 16 (so are `lanes` and KC); A holds 32
                    // rows of `lanes` from the block's first, of which
                    // `block_lanes` from `first_lane`; the panel
                    // `block_lanes` × NR lanes from `first_lane`; `sums` 32
                    // rows of NR, this task's alone; the first K block
                    // writes them before any later one reads them.
                    unsafe { tile_block(sums, (a_rows, lanes), b_block, block_lanes, first_lane > 0) };
                }
            }
        }
        for panel in tiles.panels.clone() {
            for block in tiles.blocks.clone() {
                let Some(slot) = self.edge_slot(tiles, panel, block) else { continue };
                let (rows, width) = (ROWS.min(self.m - block * ROWS), NR.min(self.n - panel * NR));
                for r in 0..rows {
                    let from = &edges[(slot * ROWS + r) * NR..][..width];
                    // SAFETY: row block·32 + r < m of C, columns panel·NR
                    // .. + width < n; this task's tile.
                    unsafe {
                        std::ptr::copy_nonoverlapping(from.as_ptr(), c.row(block * ROWS + r).add(panel * NR), width)
                    };
                }
            }
        }
    }
}

/// The tiles configured on this thread for [`tile_block`] while it lives,
/// released when it drops: once per task rather than per block, since
/// `LDTILECFG` and `TILERELEASE` are slow next to a block of 32 × 32
/// sums with a short K. Nothing else on the thread uses the
/// tiles meanwhile (a task does not yield to rayon inside).
struct ConfiguredTiles;

impl ConfiguredTiles {
    /// # Safety
    /// AMX is [`available`].
    unsafe fn new() -> ConfiguredTiles {
        let mut config =
            TileConfig { palette: 1, start_row: 0, reserved: [0; 14], bytes_per_row: [0; 16], rows: [0; 16] };
        config.bytes_per_row[..8].fill(64);
        config.rows[..8].fill(16);
        // SAFETY: AMX is available; the configuration is 64 bytes,
        // aligned, of palette 1 with valid shapes.
        unsafe { asm!("ldtilecfg [{}]", in(reg) &config as *const TileConfig, options(nostack)) };
        ConfiguredTiles
    }
}

impl Drop for ConfiguredTiles {
    fn drop(&mut self) {
        // SAFETY: the tiles were configured by `new`, so AMX is available.
        unsafe { asm!("tilerelease", options(nostack)) };
    }
}

/// The tile configuration (Intel SDM, LDTILECFG): palette 1, eight
/// tiles of 16 rows of 64 bytes.
#[repr(C, align(64))]
struct TileConfig {
    palette: u8,
    start_row: u8,
    reserved: [u8; 14],
    bytes_per_row: [u16; 16],
    rows: [u8; 16],
}

/// C (32 rows of NR = 32 sums, `ldc` floats apart) = A · B, or C + A · B
/// if `accumulate`, on tiles 0-3 (C's quarters), 4-5 (A's row halves) and
/// 6-7 (B's column halves), 16 pairs of k a step.
///
/// # Safety
/// The tiles are configured ([`ConfiguredTiles`]); `a` holds 32 rows `lda` lanes apart of
/// `lanes` (a multiple of 16) lanes each, `b` `lanes` × NR lanes; `c`
/// names 32 rows of NR floats `ldc` apart that nothing else touches
/// meanwhile.
unsafe fn tile_block(
    (c, ldc): (*mut f32, usize),
    (a, lda): (&[u32], usize),
    b: &[u32],
    lanes: usize,
    accumulate: bool,
) {
    assert!(lanes.is_multiple_of(16) && lda >= lanes && a.len() >= 31 * lda + lanes);
    assert!(b.len() >= lanes * NR && ldc >= NR);
    let (lda_bytes, b_row, c_row) = (lda * 4, NR * 4, ldc * 4);
    let (a, b) = (a.as_ptr(), b.as_ptr());
    // SAFETY: the loads read 16 rows of 64 bytes at the given strides,
    // within the slices as asserted; C's loads and stores its 32 × 32.
    unsafe {
        // C's four 16 × 16 quarters, tiles 0-3.
        let [c0, c1, c2, c3] = [c, c.add(16), c.add(16 * ldc), c.add(16 * ldc + 16)];
        if accumulate {
            asm!(
                "tileloadd tmm0, [{c0} + {row}*1]",
                "tileloadd tmm1, [{c1} + {row}*1]",
                "tileloadd tmm2, [{c2} + {row}*1]",
                "tileloadd tmm3, [{c3} + {row}*1]",
                c0 = in(reg) c0,
                c1 = in(reg) c1,
                c2 = in(reg) c2,
                c3 = in(reg) c3,
                row = in(reg) c_row,
                options(nostack),
            );
        } else {
            asm!("tilezero tmm0", "tilezero tmm1", "tilezero tmm2", "tilezero tmm3", options(nostack));
        }
        for first in (0..lanes).step_by(16) {
            asm!(
                "tileloadd tmm4, [{a0} + {lda}*1]",
                "tileloadd tmm5, [{a1} + {lda}*1]",
                "tileloadd tmm6, [{b0} + {row}*1]",
                "tileloadd tmm7, [{b1} + {row}*1]",
                "tdpbf16ps tmm0, tmm4, tmm6",
                "tdpbf16ps tmm1, tmm4, tmm7",
                "tdpbf16ps tmm2, tmm5, tmm6",
                "tdpbf16ps tmm3, tmm5, tmm7",
                a0 = in(reg) a.add(first),
                a1 = in(reg) a.add(16 * lda + first),
                b0 = in(reg) b.add(first * NR),
                b1 = in(reg) b.add(first * NR + 16),
                lda = in(reg) lda_bytes,
                row = in(reg) b_row,
                options(nostack),
            );
        }
        asm!(
            "tilestored [{c0} + {row}*1], tmm0",
            "tilestored [{c1} + {row}*1], tmm1",
            "tilestored [{c2} + {row}*1], tmm2",
            "tilestored [{c3} + {row}*1], tmm3",
            c0 = in(reg) c0,
            c1 = in(reg) c1,
            c2 = in(reg) c2,
            c3 = in(reg) c3,
            row = in(reg) c_row,
            options(nostack),
        );
    }
}
