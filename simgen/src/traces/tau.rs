//! The simulator: a tau lepton decaying and showering in a calorimeter,
//! written against the [`Executor`] (in the spirit of the tau-decay model
//! Etalumis ran through Sherpa: Baydin et al., SC19, Sec. V-A: the tau's
//! momentum, its decay channel and the decay products' kinematics are the
//! latent choices, the calorimeter the observation).
//!
//! - Momentum: px, py uniform in ±0.5 GeV and pz uniform in 43-47 GeV.
//! - Decay channel: categorical over the nine largest tau branching
//!   fractions ([`CHANNELS`]).
//! - Energy sharing: the n products share the tau's energy uniformly on
//!   the simplex, drawn by rejection: n - 1 uniform fractions are drawn
//!   until their sum is at most 1 (accepted with probability 1/(n-1)!).
//!   Each attempt's draws are controlled choices with their own addresses,
//!   so the number of attempts makes the trace type: 2-body decays have
//!   one type, 5-body decays a long tail of them.
//! - Each visible product leaves the decay at an angle drawn around the
//!   tau's direction; a neutral pion becomes two photons with a uniform
//!   energy share (exact for π⁰ → γγ, an isotropic decay of a spin-0
//!   particle) at the opening angle θ ≈ m / (E √(z(1-z))); a charged
//!   hadron interacts in the calorimeter or crosses it as a track
//!   (Bernoulli), and if it interacts, at a uniformly drawn depth.
//! - Pile-up: a Poisson number of soft deposits from other collisions.
//! - Observation: the calorimeter's voxels with Gaussian noise.

use formats::lmdb::trace_codec::Distribution;

use super::calorimeter::{self, NOISE_GEV, Particle, SHAPE, Shower, VOXELS};
use super::executor::{Executor, RunError};

/// Address prefix of the calorimeter observation.
pub const OBSERVATION_SITE: &str = "calorimeter";

/// Tau mass, GeV (PDG 2022: 1776.86 MeV).
const TAU_MASS: f64 = 1.77686;
/// Neutral pion mass, GeV (PDG 2022: 134.977 MeV).
const PI0_MASS: f64 = 0.134977;
/// Spread of a product's direction around the tau's, rad (about m_τ / E_τ).
const PRODUCT_ANGLE: f64 = 0.03;
/// Probability that a charged hadron interacts within 20 X0 of lead:
/// 1 - exp(-20 X0 / λ_I) with λ_I / X0 = 17.59 cm / 0.5612 cm = 31.3.
const HADRON_INTERACTS: f64 = 0.47;
/// Mean pile-up deposits per event.
const PILEUP_RATE: f64 = 1.5;
/// Attempts after which the energy-sharing loop gives up (at acceptance
/// 1/24, the chance of needing more is below 1e-180).
const MAX_ATTEMPTS: usize = 10_000;

/// What leaves the decay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Product {
    /// Electron.
    Electron,
    /// Muon.
    Muon,
    /// Charged pion or kaon.
    ChargedHadron,
    /// Neutral pion (two photons).
    NeutralPion,
    /// Neutrino (invisible).
    Neutrino,
}

use Product::{ChargedHadron as H, Electron as E, Muon as M, NeutralPion as P0, Neutrino as N};

/// A decay channel: its name, branching fraction and products.
pub struct Channel {
    /// As a physicist writes it.
    pub name: &'static str,
    /// Branching fraction (Particle Data Group, R. L. Workman et al., Prog.
    /// Theor. Exp. Phys. 2022, 083C01, τ⁻ decay modes).
    pub fraction: f64,
    /// Products.
    pub products: &'static [Product],
}

/// The nine largest decay channels of the tau (94.3 % of its decays; the
/// categorical renormalises them).
pub const CHANNELS: [Channel; 9] = [
    Channel { name: "e nu nu", fraction: 0.1782, products: &[E, N, N] },
    Channel { name: "mu nu nu", fraction: 0.1739, products: &[M, N, N] },
    Channel { name: "pi nu", fraction: 0.1082, products: &[H, N] },
    Channel { name: "K nu", fraction: 0.00696, products: &[H, N] },
    Channel { name: "pi pi0 nu", fraction: 0.2549, products: &[H, P0, N] },
    Channel { name: "pi 2pi0 nu", fraction: 0.0926, products: &[H, P0, P0, N] },
    Channel { name: "pi 3pi0 nu", fraction: 0.0104, products: &[H, P0, P0, P0, N] },
    Channel { name: "3pi nu", fraction: 0.0899, products: &[H, H, H, N] },
    Channel { name: "3pi pi0 nu", fraction: 0.0274, products: &[H, H, H, P0, N] },
];

/// The latents inference reports, by name and address: the decay channel
/// (an index into [`CHANNELS`]) and the tau's momentum, GeV.
pub const LATENTS: [(&str, &str); 4] = [
    ("channel", "tau__decay_channel__Categorical__1"),
    ("px", "tau__px__Uniform__1"),
    ("py", "tau__py__Uniform__1"),
    ("pz", "tau__pz__Uniform__1"),
];

fn uniform(low: f64, high: f64) -> Distribution {
    Distribution::Uniform { low, high }
}

/// Run the simulator once: every choice through `ex`, the calorimeter
/// observed at the end.
pub fn simulate(ex: &mut Executor<'_>) -> Result<(), RunError> {
    let px = ex.sample("tau__px", uniform(-0.5, 0.5))?;
    let py = ex.sample("tau__py", uniform(-0.5, 0.5))?;
    let pz = ex.sample("tau__pz", uniform(43.0, 47.0))?;
    let energy = (px * px + py * py + pz * pz + TAU_MASS * TAU_MASS).sqrt();
    let (theta_x, theta_y) = (px / pz, py / pz);
    let probs = CHANNELS.iter().map(|c| c.fraction).collect();
    let channel = ex.sample("tau__decay_channel", Distribution::Categorical { probs })? as usize;
    let products = CHANNELS
        .get(channel)
        .ok_or(RunError::OutOfSupport { address: "tau__decay_channel__Categorical__1".into(), value: channel as f64 })?
        .products;

    let shares = energy_shares(ex, products.len())?;
    let mut grid = vec![0f32; VOXELS];
    for (&product, share) in products.iter().zip(shares) {
        if product == Product::Neutrino {
            continue;
        }
        let e = energy * share;
        let angle_x = ex.sample("product__angle_x", Distribution::Normal { mean: theta_x, std: PRODUCT_ANGLE })?;
        let angle_y = ex.sample("product__angle_y", Distribution::Normal { mean: theta_y, std: PRODUCT_ANGLE })?;
        let (x, y) = (calorimeter::impact(angle_x), calorimeter::impact(angle_y));
        let mut hit = |shower, energy, x, y| calorimeter::deposit(&mut grid, &Particle { energy, x, y, shower });
        match product {
            Product::Electron => hit(Shower::Electron, e, x, y),
            Product::Muon => hit(Shower::Track, e, x, y),
            Product::ChargedHadron => {
                if ex.sample("hadron__interacts", Distribution::Bernoulli { p: HADRON_INTERACTS })? == 1.0 {
                    let start = ex.sample("hadron__first_interaction", uniform(0.0, calorimeter::DEPTH as f64))?;
                    hit(Shower::Hadronic { start }, e, x, y);
                } else {
                    hit(Shower::Track, e, x, y);
                }
            }
            Product::NeutralPion => {
                let z = ex.sample("pi0__photon_share", uniform(0.0, 1.0))?;
                let azimuth = ex.sample("pi0__azimuth", uniform(0.0, std::f64::consts::TAU))?;
                // Opening angle of π⁰ → γγ with energy shares z, 1 - z.
                let opening = PI0_MASS / (e * (z * (1.0 - z)).max(1e-6).sqrt());
                let (dx, dy) = (azimuth.cos(), azimuth.sin());
                for (share, side) in [(z, 1.0 - z), (1.0 - z, -z)] {
                    let (ox, oy) = (side * opening * dx, side * opening * dy);
                    hit(
                        Shower::Photon,
                        e * share,
                        calorimeter::impact(angle_x + ox),
                        calorimeter::impact(angle_y + oy),
                    );
                }
            }
            Product::Neutrino => {}
        }
    }
    let pileup = ex.sample("event__pileup", Distribution::Poisson { rate: PILEUP_RATE })? as usize;
    for _ in 0..pileup {
        let e = ex.sample("pileup__energy", uniform(0.1, 2.0))?;
        let x = ex.sample("pileup__x", uniform(0.0, calorimeter::SIDE as f64))?;
        let y = ex.sample("pileup__y", uniform(0.0, calorimeter::SIDE as f64))?;
        calorimeter::deposit(&mut grid, &Particle { energy: e, x, y, shower: Shower::Hadronic { start: 0.0 } });
    }
    ex.observe_tensor(OBSERVATION_SITE, &SHAPE, &grid, NOISE_GEV)?;
    Ok(())
}

/// `n` energy shares, uniform on the simplex, by rejection.
fn energy_shares(ex: &mut Executor<'_>, n: usize) -> Result<Vec<f64>, RunError> {
    if n <= 1 {
        return Ok(vec![1.0; n]);
    }
    for _ in 0..MAX_ATTEMPTS {
        let mut shares = Vec::with_capacity(n);
        for _ in 0..n - 1 {
            shares.push(ex.sample("decay__energy_share", uniform(0.0, 1.0))?);
        }
        let sum: f64 = shares.iter().sum();
        if sum <= 1.0 {
            shares.push(1.0 - sum);
            return Ok(shares);
        }
    }
    Err(RunError::Bound {
        address: "decay__energy_share".into(),
        what: format!("no accepted energy sharing in {MAX_ATTEMPTS} attempts"),
    })
}
