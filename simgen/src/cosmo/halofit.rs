//! The nonlinear matter power spectrum by halofit: Smith et al. 2003
//! (MNRAS 341, 1311, appendix C) with the coefficients refitted by
//! Takahashi, Sato, Nishimichi, Taruya & Oguri 2012 (ApJ 761, 152,
//! eqs. A4-A12), for flat ΛCDM (w = -1, so their (1 + w) terms vanish).
//! What the N-body stepper's boxes are measured against, and the
//! "nonlinear" curve of `simgen pk`.

use super::cosmology::LinearPower;

/// Halofit's spectral parameters of one linear spectrum at one redshift.
#[derive(Debug, Clone)]
pub struct Halofit {
    linear: LinearPower,
    /// D1(a)², scaling today's linear power to the redshift.
    growth_squared: f64,
    omega_m_of_a: f64,
    /// The nonlinear scale: σ(1/k_σ) = 1 with a Gaussian filter.
    k_sigma: f64,
    n_eff: f64,
    curvature: f64,
}

/// ln k from 1e-4 to 1e3 h/Mpc, where the Gaussian-filtered variance
/// takes its whole weight for any σ = 1 radius halofit meets.
const LN_K_RANGE: (f64, f64) = (-9.210_340_371_976_182, 6.907_755_278_982_137);
const LN_K_POINTS: usize = 4001;

impl Halofit {
    /// Halofit of `linear` (today's) at scale factor `a`. `None` when the
    /// linear field is nowhere nonlinear (σ < 1 on every scale down to
    /// 1e-3 Mpc/h, as at very high redshift): the spectrum is linear there.
    pub fn new(linear: &LinearPower, a: f64) -> Option<Self> {
        let cosmology = linear.cosmology;
        let (d1, _) = cosmology.growth(a);
        let growth_squared = d1 * d1;
        let step = (LN_K_RANGE.1 - LN_K_RANGE.0) / (LN_K_POINTS - 1) as f64;
        let table: Vec<(f64, f64)> = (0..LN_K_POINTS)
            .map(|i| {
                let k = (LN_K_RANGE.0 + i as f64 * step).exp();
                (k, growth_squared * dimensionless(linear, k))
            })
            .collect();
        // ∫ Δ² y^(2m) e^(-y²) dln k with y = kR, by Simpson's rule.
        let moment = |r: f64, m: i32| -> f64 {
            let mut sum = 0.0;
            for (i, &(k, delta2)) in table.iter().enumerate() {
                let y2 = (k * r).powi(2);
                let weight = if i == 0 || i == LN_K_POINTS - 1 {
                    1.0
                } else if i % 2 == 1 {
                    4.0
                } else {
                    2.0
                };
                sum += weight * delta2 * y2.powi(m) * (-y2).exp();
            }
            sum * step / 3.0
        };
        // σ²(R) falls with R: bisect ln R for σ² = 1.
        let (mut lo, mut hi) = (1e-3f64.ln(), 1e3f64.ln());
        if moment(lo.exp(), 0) < 1.0 || moment(hi.exp(), 0) > 1.0 {
            return None;
        }
        for _ in 0..100 {
            let mid = 0.5 * (lo + hi);
            if moment(mid.exp(), 0) > 1.0 { lo = mid } else { hi = mid }
        }
        let r = (0.5 * (lo + hi)).exp();
        // Smith et al. eqs. (C1)-(C3) at σ = 1: n_eff + 3 = -dlnσ²/dlnR,
        // C = -d²lnσ²/dlnR².
        let sigma2 = moment(r, 0);
        let first = 2.0 * moment(r, 1) / sigma2;
        let n_eff = first - 3.0;
        let curvature = first * first + 4.0 * (moment(r, 1) - moment(r, 2)) / sigma2;
        Some(Halofit {
            linear: linear.clone(),
            growth_squared,
            omega_m_of_a: cosmology.omega_m_of_a(a),
            k_sigma: 1.0 / r,
            n_eff,
            curvature,
        })
    }

    /// The nonlinear scale k_σ in h/Mpc.
    pub fn k_sigma(&self) -> f64 {
        self.k_sigma
    }

    /// The nonlinear P(k) in (Mpc/h)³, k in h/Mpc.
    pub fn at(&self, k: f64) -> f64 {
        if k <= 0.0 {
            return 0.0;
        }
        let (n, c) = (self.n_eff, self.curvature);
        // Takahashi et al. 2012, eqs. (A6)-(A12).
        let a_n =
            10f64.powf(1.5222 + 2.8553 * n + 2.3706 * n * n + 0.9903 * n.powi(3) + 0.2250 * n.powi(4) - 0.6038 * c);
        let b_n = 10f64.powf(-0.5642 + 0.5864 * n + 0.5716 * n * n - 1.5474 * c);
        let c_n = 10f64.powf(0.3698 + 2.0404 * n + 0.8161 * n * n + 0.5869 * c);
        let gamma_n = 0.1971 - 0.0843 * n + 0.8460 * c;
        let alpha_n = (6.0835 + 1.3373 * n - 0.1959 * n * n - 5.5274 * c).abs();
        let beta_n = 2.0379 - 0.7354 * n + 0.3157 * n * n + 1.2490 * n.powi(3) + 0.3980 * n.powi(4) - 0.1682 * c;
        let nu_n = 10f64.powf(5.2105 + 3.6902 * n);
        // Smith et al. eq. (C17) for flat models: f_i = Ω_m(z)^(-0.0307, -0.0585, 0.0743).
        let om = self.omega_m_of_a;
        let (f1, f2, f3) = (om.powf(-0.0307), om.powf(-0.0585), om.powf(0.0743));
        let y = k / self.k_sigma;
        let linear = self.growth_squared * dimensionless(&self.linear, k);
        // Two-halo (quasi-linear) and one-halo terms, Smith et al. eqs. (C2)-(C4).
        let quasi = linear * (1.0 + linear).powf(beta_n) / (1.0 + alpha_n * linear) * (-(y / 4.0 + y * y / 8.0)).exp();
        let halo = a_n * y.powf(3.0 * f1) / (1.0 + b_n * y.powf(f2) + (c_n * f3 * y).powf(3.0 - gamma_n));
        let halo = halo / (1.0 + nu_n / (y * y));
        (quasi + halo) * 2.0 * std::f64::consts::PI.powi(2) / k.powi(3)
    }
}

/// Δ²(k) = k³ P(k) / (2π²) of today's linear spectrum.
fn dimensionless(linear: &LinearPower, k: f64) -> f64 {
    k.powi(3) * linear.at(k) / (2.0 * std::f64::consts::PI.powi(2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cosmo::cosmology::Cosmology;

    #[test]
    fn halofit_is_linear_on_large_scales_and_boosted_on_small_ones() {
        let linear = Cosmology::REFERENCE.linear_power();
        let halofit = Halofit::new(&linear, 1.0).unwrap();
        // Takahashi et al. fig. 1: k_σ of a σ8 = 0.8 ΛCDM today is about 0.3 h/Mpc.
        assert!((0.2..0.5).contains(&halofit.k_sigma()), "k_sigma {}", halofit.k_sigma());
        let ratio = |k: f64| halofit.at(k) / linear.at(k);
        assert!((ratio(0.01) - 1.0).abs() < 0.01, "k = 0.01: {}", ratio(0.01));
        assert!(ratio(1.0) > 3.0, "k = 1: {}", ratio(1.0));
        // At high redshift the same scales are closer to linear.
        let early = Halofit::new(&linear, 0.5).unwrap();
        let (_, d1) = (0, Cosmology::REFERENCE.growth(0.5).0);
        assert!(early.at(1.0) / (d1 * d1 * linear.at(1.0)) < ratio(1.0));
    }
}
