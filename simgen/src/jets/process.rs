//! The partons of an event before they hadronise: the signal of the
//! searches the HEP-CNN papers learned from, and its Standard-Model
//! background.
//!
//! **Signal.** Gluino pairs decaying through R-parity-violating couplings
//! into jets only, the benchmark of Bhimji et al. 2017 (arXiv:1711.03573,
//! §2) taken from the ATLAS multi-jet search (ATLAS Collaboration, Phys.
//! Lett. B 785 (2018) 136, arXiv:1804.03568): g̃ → q q̄ χ̃⁰₁, then
//! χ̃⁰₁ → q q q through λ''; ten quarks per event. Masses default to
//! m(g̃) = 1400 GeV and m(χ̃⁰₁) = 850 GeV, our choice of a point in the
//! range that search probed (we could not check the exact point Bhimji
//! et al. trained on; `simgen jets --gluino-mass --neutralino-mass`
//! changes it). Decays fill phase space evenly ([`n_body`]). The pair's production
//! is a parametrisation, not a matrix element: the pair mass exceeds
//! threshold by an exponential fraction (mean [`PAIR_EXCESS`]) as
//! near-threshold production of heavy coloured pairs is, isotropic in
//! the pair frame, and the pair moves along the beam with a Gaussian
//! rapidity of width [`PAIR_RAPIDITY`].
//!
//! **Background.** QCD multi-jet production, the search's dominant
//! background: a 2 → 2 scattering whose leading transverse momentum falls
//! as dσ/dpT ∝ pT⁻ⁿ above a threshold (n = [`SPECTRUM_POWER`], the
//! leading-order falloff of jet cross-sections at the LHC), both partons
//! at rapidities uniform over the calorimeter, back to back in azimuth;
//! then extra hard emissions (a Poisson number, mean [`EMISSIONS`]), each
//! taking a fraction z of a parton's momentum with dz/z (the
//! soft-collinear limit of the splitting functions), emitted at an angle
//! drawn near the emitter. Emissions share the emitter's momentum, so
//! the event's total transverse momentum stays balanced.

use std::f64::consts::PI;

use super::kinematics::{P4, n_body, two_body};
use crate::random::Normals;

/// Mean of the pair mass's excess over threshold, as a fraction of it.
pub const PAIR_EXCESS: f64 = 0.25;
/// Width of the gluino pair's rapidity.
pub const PAIR_RAPIDITY: f64 = 0.8;
/// The power of the background's leading-pT spectrum.
pub const SPECTRUM_POWER: f64 = 5.0;
/// Mean number of extra hard emissions in a background event.
pub const EMISSIONS: f64 = 5.0;
/// The softest emission, as a fraction of the emitter's momentum.
pub const SOFTEST_EMISSION: f64 = 0.05;
/// Rapidity range the background's partons are drawn in (the
/// calorimeter image's).
pub const RAPIDITY_RANGE: f64 = 2.5;

/// What a generator needs of the physics of one kind of event.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Processes {
    /// Gluino mass (GeV).
    pub gluino_mass: f64,
    /// Neutralino mass (GeV).
    pub neutralino_mass: f64,
    /// The background's leading-pT threshold (GeV).
    pub background_pt_min: f64,
}

impl Processes {
    /// A signal point in the search's range (see the module's doc); a
    /// background threshold at which the total transverse energy alone
    /// separates the classes only partly.
    pub const DEFAULT: Processes = Processes { gluino_mass: 1400.0, neutralino_mass: 850.0, background_pt_min: 700.0 };

    /// The quarks of one signal event.
    pub fn signal(&self, rng: &mut Normals) -> Vec<P4> {
        let threshold = 2.0 * self.gluino_mass;
        let pair_mass = threshold * (1.0 - PAIR_EXCESS * rng.uniform().ln());
        let rapidity = PAIR_RAPIDITY * rng.normal();
        let pair = P4 { e: pair_mass * rapidity.cosh(), px: 0.0, py: 0.0, pz: pair_mass * rapidity.sinh() };
        let (g1, g2) = two_body(pair, self.gluino_mass, self.gluino_mass, rng);
        let mut quarks = Vec::with_capacity(10);
        for gluino in [g1, g2] {
            let decay = n_body(gluino, &[0.0, 0.0, self.neutralino_mass], rng);
            quarks.extend_from_slice(&decay[..2]);
            quarks.extend(n_body(decay[2], &[0.0, 0.0, 0.0], rng));
        }
        quarks
    }

    /// The transverse momentum of a background event's 2 → 2 scattering:
    /// pT⁻ⁿ above the threshold, by inverting its distribution function.
    pub fn hard_pt(&self, rng: &mut Normals) -> f64 {
        self.background_pt_min * rng.uniform().powf(-1.0 / (SPECTRUM_POWER - 1.0))
    }

    /// The partons of one background event.
    pub fn background(&self, rng: &mut Normals) -> Vec<P4> {
        let pt = self.hard_pt(rng);
        let phi = PI * (2.0 * rng.uniform() - 1.0);
        let rapidity = |rng: &mut Normals| RAPIDITY_RANGE * (2.0 * rng.uniform() - 1.0);
        let mut partons = vec![
            P4::from_pt_eta_phi_m(pt, rapidity(rng), phi, 0.0),
            P4::from_pt_eta_phi_m(pt, rapidity(rng), phi + PI, 0.0),
        ];
        for _ in 0..poisson(EMISSIONS, rng) {
            let emitter = (rng.uniform() * partons.len() as f64) as usize % partons.len();
            let parent = partons[emitter];
            // dz/z between the softest emission and half.
            let z = SOFTEST_EMISSION * (0.5 / SOFTEST_EMISSION).powf(rng.uniform());
            let angle = 0.4 + 0.8 * rng.uniform();
            let turn = 2.0 * PI * rng.uniform();
            let emitted_pt = z * parent.pt();
            let emitted = P4::from_pt_eta_phi_m(
                emitted_pt,
                (parent.eta() + angle * turn.cos()).clamp(-RAPIDITY_RANGE, RAPIDITY_RANGE),
                parent.phi() + angle * turn.sin(),
                0.0,
            );
            // The emitter keeps the rest of its transverse momentum.
            let kept = P4 { e: 0.0, px: parent.px - emitted.px, py: parent.py - emitted.py, pz: 0.0 };
            partons[emitter] = P4::from_pt_eta_phi_m(kept.pt(), parent.eta(), kept.phi(), 0.0);
            partons.push(emitted);
        }
        partons
    }
}

/// A Poisson variate of mean `mean` (Knuth's product of uniforms; the
/// means here are small).
pub fn poisson(mean: f64, rng: &mut Normals) -> usize {
    let limit = (-mean).exp();
    let (mut count, mut product) = (0, rng.uniform());
    while product > limit {
        count += 1;
        product *= rng.uniform();
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_event_has_ten_quarks_carrying_the_gluino_pairs_momentum() {
        let mut rng = Normals::new(1);
        let p = Processes::DEFAULT;
        for _ in 0..50 {
            let quarks = p.signal(&mut rng);
            assert_eq!(quarks.len(), 10);
            let total = quarks.iter().fold(P4::default(), |a, &b| a + b);
            assert!(total.mass() >= 2.0 * p.gluino_mass * (1.0 - 1e-9), "{}", total.mass());
            assert!(total.pt() < 1e-6, "pair pT {}", total.pt());
            // Each gluino's three-quark neutralino system has its mass.
            let chi = quarks[2] + quarks[3] + quarks[4];
            assert!((chi.mass() - p.neutralino_mass).abs() < 1e-6, "{}", chi.mass());
        }
    }

    #[test]
    fn background_events_balance_transverse_momentum_above_the_threshold() {
        let mut rng = Normals::new(2);
        let p = Processes::DEFAULT;
        for _ in 0..2000 {
            let partons = p.background(&mut rng);
            assert!(partons.len() >= 2);
            let total = partons.iter().fold(P4::default(), |a, &b| a + b);
            assert!(total.pt() < 1e-6 * partons[0].pt().max(1.0), "unbalanced by {}", total.pt());
        }
        let mut leading: Vec<f64> = (0..4000).map(|_| p.hard_pt(&mut rng)).collect();
        assert!(leading.iter().all(|&pt| pt >= 700.0));
        // pT^-5 above 700 GeV: the median of the hard pT is 700 · 2^(1/4).
        leading.sort_by(f64::total_cmp);
        let median = leading[leading.len() / 2];
        assert!((median / (700.0 * 2f64.powf(0.25)) - 1.0).abs() < 0.05, "median {median}");
    }

    #[test]
    fn poisson_draws_have_their_mean() {
        let mut rng = Normals::new(3);
        let mean = (0..20_000).map(|_| poisson(3.0, &mut rng)).sum::<usize>() as f64 / 20_000.0;
        assert!((mean - 3.0).abs() < 0.05, "{mean}");
    }
}
