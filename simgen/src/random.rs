//! Reproducible random streams shared by the generators.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha12Rng;

/// Standard normal variates by Box-Muller from a ChaCha12 stream: a stream
/// pinned by its algorithm, not by a crate's choice of sampler.
pub struct Normals {
    rng: ChaCha12Rng,
    spare: Option<f64>,
}

impl Normals {
    /// A stream for `seed`.
    pub fn new(seed: u64) -> Self {
        Normals { rng: ChaCha12Rng::seed_from_u64(seed), spare: None }
    }

    /// A uniform variate in (0, 1].
    pub fn uniform(&mut self) -> f64 {
        ((self.rng.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// The next N(0, 1) variate.
    pub fn normal(&mut self) -> f64 {
        if let Some(v) = self.spare.take() {
            return v;
        }
        let (u1, u2) = (self.uniform(), self.uniform());
        let r = (-2.0 * u1.ln()).sqrt();
        let t = 2.0 * std::f64::consts::PI * u2;
        self.spare = Some(r * t.sin());
        r * t.cos()
    }
}

/// A seed for stream `stream` of item `index` (a box, a sample) of a run
/// seeded with `seed` (SplitMix64 finaliser): every item draws from its own
/// stream, so the bytes never depend on which rank made the item.
pub fn mix(seed: u64, index: u64, stream: u64) -> u64 {
    let mut z = seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ stream.wrapping_mul(0xd1b5_4a32_d192_ed03);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
