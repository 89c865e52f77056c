//! Four-momenta and the decays of the event generator: a Lorentz boost, an
//! isotropic two-body decay, and n-body phase space built from two-body
//! steps with invariant masses weighted as James' GENBOD does (F. James,
//! "Monte Carlo phase space", CERN 68-15, 1968; the same algorithm as
//! ROOT's `TGenPhaseSpace`). Energies in GeV, c = 1.

use std::f64::consts::PI;

use crate::random::Normals;

/// A four-momentum (E, px, py, pz), z along the beam.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct P4 {
    /// Energy.
    pub e: f64,
    /// Momentum along x.
    pub px: f64,
    /// Momentum along y.
    pub py: f64,
    /// Momentum along the beam.
    pub pz: f64,
}

impl P4 {
    /// A particle of mass `m` at rest.
    pub fn at_rest(m: f64) -> P4 {
        P4 { e: m, ..P4::default() }
    }

    /// From transverse momentum, pseudorapidity, azimuth and mass.
    pub fn from_pt_eta_phi_m(pt: f64, eta: f64, phi: f64, m: f64) -> P4 {
        let (px, py, pz) = (pt * phi.cos(), pt * phi.sin(), pt * eta.sinh());
        P4 { e: (px * px + py * py + pz * pz + m * m).sqrt(), px, py, pz }
    }

    /// |p|.
    pub fn p(&self) -> f64 {
        (self.px * self.px + self.py * self.py + self.pz * self.pz).sqrt()
    }

    /// Transverse momentum.
    pub fn pt(&self) -> f64 {
        self.px.hypot(self.py)
    }

    /// Invariant mass (0 for a slightly space-like rounding).
    pub fn mass(&self) -> f64 {
        (self.e * self.e - self.p() * self.p()).max(0.0).sqrt()
    }

    /// Pseudorapidity η = asinh(pz / pT); ±20 along the beam.
    pub fn eta(&self) -> f64 {
        let pt = self.pt();
        if pt == 0.0 { 20f64.copysign(self.pz) } else { (self.pz / pt).asinh() }
    }

    /// Azimuth in [-π, π].
    pub fn phi(&self) -> f64 {
        self.py.atan2(self.px)
    }

    /// This momentum seen from a frame moving with velocity `-beta`
    /// (the momentum of a particle at rest in a frame moving with `beta`
    /// becomes `beta`-wards): the standard boost.
    pub fn boosted(&self, beta: [f64; 3]) -> P4 {
        let b2 = beta[0] * beta[0] + beta[1] * beta[1] + beta[2] * beta[2];
        if b2 == 0.0 {
            return *self;
        }
        let gamma = 1.0 / (1.0 - b2).sqrt();
        let bp = beta[0] * self.px + beta[1] * self.py + beta[2] * self.pz;
        let g2 = (gamma - 1.0) / b2;
        P4 {
            e: gamma * (self.e + bp),
            px: self.px + g2 * bp * beta[0] + gamma * beta[0] * self.e,
            py: self.py + g2 * bp * beta[1] + gamma * beta[1] * self.e,
            pz: self.pz + g2 * bp * beta[2] + gamma * beta[2] * self.e,
        }
    }

    /// Its velocity.
    pub fn beta(&self) -> [f64; 3] {
        [self.px / self.e, self.py / self.e, self.pz / self.e]
    }
}

impl std::ops::Add for P4 {
    type Output = P4;
    fn add(self, o: P4) -> P4 {
        P4 { e: self.e + o.e, px: self.px + o.px, py: self.py + o.py, pz: self.pz + o.pz }
    }
}

/// The momentum of either product of a two-body decay of mass `m` into
/// masses `m1` and `m2` in the parent's rest frame (0 below threshold).
pub fn two_body_momentum(m: f64, m1: f64, m2: f64) -> f64 {
    let s = (m * m - (m1 + m2).powi(2)) * (m * m - (m1 - m2).powi(2));
    if s <= 0.0 { 0.0 } else { s.sqrt() / (2.0 * m) }
}

/// A direction drawn uniformly on the sphere.
pub fn isotropic(rng: &mut Normals) -> [f64; 3] {
    let cos = 2.0 * rng.uniform() - 1.0;
    let sin = (1.0 - cos * cos).max(0.0).sqrt();
    let phi = 2.0 * PI * rng.uniform();
    [sin * phi.cos(), sin * phi.sin(), cos]
}

/// `parent` decayed isotropically (in its rest frame) into masses `m1`
/// and `m2`, both returned in the frame `parent` is given in.
pub fn two_body(parent: P4, m1: f64, m2: f64, rng: &mut Normals) -> (P4, P4) {
    let m = parent.mass();
    let p = two_body_momentum(m, m1, m2);
    let d = isotropic(rng);
    let first = P4 { e: (p * p + m1 * m1).sqrt(), px: p * d[0], py: p * d[1], pz: p * d[2] };
    let second = P4 { e: (p * p + m2 * m2).sqrt(), px: -first.px, py: -first.py, pz: -first.pz };
    let beta = parent.beta();
    (first.boosted(beta), second.boosted(beta))
}

/// `parent` decayed into particles of `masses` evenly over n-body phase
/// space (GENBOD): the intermediate invariant masses M_k of products
/// 0..=k are drawn uniformly between their limits and accepted with
/// probability ∏ p_k / max ∏ p_k, where p_k is the two-body momentum of
/// M_k → M_{k-1} + m_k; then each M_k decays in two, from the top down.
/// The parent must be heavier than the products together.
pub fn n_body(parent: P4, masses: &[f64], rng: &mut Normals) -> Vec<P4> {
    let n = masses.len();
    if n < 2 {
        return vec![parent; n];
    }
    let m = parent.mass();
    let kinetic = m - masses.iter().sum::<f64>();
    // The largest weight (TGenPhaseSpace::SetDecay's bound).
    let (mut low, mut high, mut largest) = (0.0, kinetic + masses[0], 1.0);
    for k in 1..n {
        low += masses[k - 1];
        high += masses[k];
        largest *= two_body_momentum(high, low, masses[k]);
    }
    // invariant[k]: the mass of products 0..=k together.
    let mut invariant = vec![0.0; n];
    loop {
        let mut cuts: Vec<f64> = (0..n - 2).map(|_| rng.uniform()).collect();
        cuts.sort_by(f64::total_cmp);
        let mut sum = 0.0;
        for k in 0..n {
            sum += masses[k];
            let fraction = match k {
                0 => 0.0,
                k if k == n - 1 => 1.0,
                k => cuts[k - 1],
            };
            invariant[k] = sum + fraction * kinetic;
        }
        let weight: f64 = (1..n).map(|k| two_body_momentum(invariant[k], invariant[k - 1], masses[k])).product();
        if weight >= rng.uniform() * largest {
            break;
        }
    }
    let mut products = vec![P4::default(); n];
    let mut system = parent;
    for k in (1..n).rev() {
        let (rest, last) = two_body(system, invariant[k - 1], masses[k], rng);
        products[k] = last;
        system = rest;
    }
    products[0] = system;
    products
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance * (1.0 + a.abs().max(b.abs()))
    }

    #[test]
    fn a_boost_keeps_the_mass_and_carries_a_particle_at_rest_to_the_boost_velocity() {
        let rest = P4::at_rest(2.0);
        let moving = rest.boosted([0.3, -0.4, 0.5]);
        assert!(close(moving.mass(), 2.0, 1e-12));
        let beta = moving.beta();
        assert!(close(beta[0], 0.3, 1e-12) && close(beta[1], -0.4, 1e-12) && close(beta[2], 0.5, 1e-12));
    }

    #[test]
    fn decays_conserve_four_momentum_and_give_the_products_their_masses() {
        let mut rng = Normals::new(7);
        let parent = P4::from_pt_eta_phi_m(300.0, 0.7, 1.1, 1400.0);
        let masses = [0.0, 0.0, 850.0];
        for _ in 0..200 {
            let products = n_body(parent, &masses, &mut rng);
            let total = products.iter().fold(P4::default(), |a, &b| a + b);
            for (got, want) in
                [(total.e, parent.e), (total.px, parent.px), (total.py, parent.py), (total.pz, parent.pz)]
            {
                assert!(close(got, want, 1e-9), "{got} vs {want}");
            }
            for (p, &m) in products.iter().zip(&masses) {
                assert!((p.mass() - m).abs() < 1e-6 * (1.0 + p.e), "{} vs {m}", p.mass());
            }
        }
    }

    /// Three massless bodies spread evenly over phase space fill the Dalitz
    /// triangle s₁₂ + s₁₃ + s₂₃ = M² with uniform density, so x = s₁₂/M²
    /// has density 2(1 − x): mean 1/3, second moment 1/6.
    #[test]
    fn three_massless_bodies_fill_the_dalitz_plot_evenly() {
        let mut rng = Normals::new(3);
        let m = 100.0;
        let draws = 20_000;
        let (mut mean, mut second) = (0.0, 0.0);
        for _ in 0..draws {
            let p = n_body(P4::at_rest(m), &[0.0, 0.0, 0.0], &mut rng);
            let s = (p[0] + p[1]).mass().powi(2) / (m * m);
            mean += s / draws as f64;
            second += s * s / draws as f64;
        }
        assert!((mean - 1.0 / 3.0).abs() < 0.01, "mean {mean}");
        assert!((second - 1.0 / 6.0).abs() < 0.01, "second moment {second}");
    }
}
