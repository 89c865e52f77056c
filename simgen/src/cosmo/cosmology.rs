//! Flat ΛCDM background, the σ8-normalised linear power spectrum (its
//! transfer function from [`transfer`](super::transfer)) and the first-
//! and second-order growth factors. Pure functions; k in h/Mpc, lengths
//! in Mpc/h.

use std::f64::consts::PI;

use super::transfer::Transfer;

/// Cosmological parameters of one box.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cosmology {
    /// Matter density today, Ω_m.
    pub omega_m: f64,
    /// Baryon density today, Ω_b.
    pub omega_b: f64,
    /// Hubble parameter h = H0 / (100 km/s/Mpc).
    pub h: f64,
    /// Primordial spectral index n_s.
    pub n_s: f64,
    /// RMS linear fluctuation in spheres of 8 Mpc/h today.
    pub sigma_8: f64,
    /// CMB temperature in K.
    pub t_cmb: f64,
}

impl Cosmology {
    /// The check-value cosmology of the E&H tests (Ω_m 0.3, Ω_b 0.05, h 0.7).
    pub const REFERENCE: Cosmology =
        Cosmology { omega_m: 0.3, omega_b: 0.05, h: 0.7, n_s: 0.96, sigma_8: 0.8, t_cmb: 2.7255 };

    /// E(a) = H(a)/H0 for flat ΛCDM (radiation neglected).
    pub fn e_of_a(&self, a: f64) -> f64 {
        (self.omega_m / (a * a * a) + (1.0 - self.omega_m)).sqrt()
    }

    /// Ω_m(a).
    pub fn omega_m_of_a(&self, a: f64) -> f64 {
        self.omega_m / (a * a * a) / self.e_of_a(a).powi(2)
    }

    /// The linear power spectrum today with E&H's transfer function
    /// (baryon wiggles included), normalised to σ8.
    pub fn linear_power(&self) -> LinearPower {
        self.linear_power_with(Transfer::EisensteinHu)
    }

    /// The linear power spectrum today with `transfer`, normalised to σ8.
    pub fn linear_power_with(&self, transfer: Transfer) -> LinearPower {
        let unnormalised = LinearPower { cosmology: *self, transfer, amplitude: 1.0 };
        let s8 = unnormalised.sigma_r(8.0);
        LinearPower { amplitude: (self.sigma_8 / s8).powi(2), ..unnormalised }
    }

    /// Linear growth factors (D1, D2) at scale factor `a`, with D1(1) = 1 and
    /// D2 the second-order factor (negative, ≈ -3/7 D1² Ω_m^(-1/143)),
    /// integrated from the growth equations in ln a from deep in matter
    /// domination, where D1 = a and D2 = -3/7 a².
    pub fn growth(&self, a: f64) -> (f64, f64) {
        let growth = self.growth_with_rates(a);
        (growth.d1, growth.d2)
    }

    /// [`Cosmology::growth`] with the rates dD1/dln a and dD2/dln a, which
    /// set the particles' initial momenta and the N-body stepper's factors.
    pub fn growth_with_rates(&self, a: f64) -> Growth {
        let at_a = self.integrate_growth(a);
        let d1_today = self.integrate_growth(1.0)[0];
        let squared = d1_today * d1_today;
        Growth {
            d1: at_a[0] / d1_today,
            d1_rate: at_a[1] / d1_today,
            d2: at_a[2] / squared,
            d2_rate: at_a[3] / squared,
        }
    }

    /// Unnormalised (D1, dD1/dln a, D2, dD2/dln a) at `a_end`: RK4 on
    /// D'' + (2 + dlnE/dlna) D' = 1.5 Ω_m(a) D and
    /// D2'' + (2 + dlnE/dlna) D2' = 1.5 Ω_m(a) (D2 - D1²), primes d/dln a.
    fn integrate_growth(&self, a_end: f64) -> [f64; 4] {
        let a0: f64 = 1.0 / (1.0 + EARLIEST_REDSHIFT);
        let steps = 4000;
        let (x0, x1) = (a0.ln(), a_end.ln());
        let dx = (x1 - x0) / steps as f64;
        // State: D1, D1', D2, D2' (EdS initial conditions at a0).
        let mut y = [a0, a0, -3.0 / 7.0 * a0 * a0, -6.0 / 7.0 * a0 * a0];
        let deriv = |x: f64, y: &[f64; 4]| -> [f64; 4] {
            let a = x.exp();
            let om = self.omega_m_of_a(a);
            // dlnE/dlna = -1.5 Ω_m(a) for flat ΛCDM without radiation.
            let friction = 2.0 - 1.5 * om;
            [y[1], -friction * y[1] + 1.5 * om * y[0], y[3], -friction * y[3] + 1.5 * om * (y[2] - y[0] * y[0])]
        };
        let mut x = x0;
        for _ in 0..steps {
            let k1 = deriv(x, &y);
            let k2 = deriv(x + dx / 2.0, &add(&y, &k1, dx / 2.0));
            let k3 = deriv(x + dx / 2.0, &add(&y, &k2, dx / 2.0));
            let k4 = deriv(x + dx, &add(&y, &k3, dx));
            for i in 0..4 {
                y[i] += dx / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
            }
            x += dx;
        }
        y
    }
}

/// The earliest redshift the growth factors are computed for: their
/// integration starts there from the matter-dominated (EdS) solution, which
/// holds at z = 999 to 0.1 % for any Ω_m the generator takes (radiation,
/// which this flat ΛCDM omits, matters before it).
pub const EARLIEST_REDSHIFT: f64 = 999.0;

/// Growth factors at one scale factor, normalised to D1(1) = 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Growth {
    /// D1.
    pub d1: f64,
    /// dD1/dln a.
    pub d1_rate: f64,
    /// D2 (negative).
    pub d2: f64,
    /// dD2/dln a.
    pub d2_rate: f64,
}

fn add(y: &[f64; 4], k: &[f64; 4], h: f64) -> [f64; 4] {
    [y[0] + h * k[0], y[1] + h * k[1], y[2] + h * k[2], y[3] + h * k[3]]
}

/// P(k) = A k^n_s T(k)², in (Mpc/h)³ with k in h/Mpc.
#[derive(Debug, Clone, PartialEq)]
pub struct LinearPower {
    /// The cosmology.
    pub cosmology: Cosmology,
    /// Where T(k) comes from.
    pub transfer: Transfer,
    /// The normalisation A.
    pub amplitude: f64,
}

impl LinearPower {
    /// P(k) today.
    pub fn at(&self, k: f64) -> f64 {
        if k <= 0.0 {
            return 0.0;
        }
        let t = self.transfer.at(&self.cosmology, k);
        self.amplitude * k.powf(self.cosmology.n_s) * t * t
    }

    /// σ(R): RMS of the linear field in top-hat spheres of radius R (Mpc/h),
    /// σ² = ∫ k³P(k)/(2π²) W(kR)² dln k, by Simpson's rule in ln k.
    pub fn sigma_r(&self, r: f64) -> f64 {
        let (lo, hi): (f64, f64) = (1e-5_f64.ln(), 1e3_f64.ln());
        let n = 20_000;
        let h = (hi - lo) / n as f64;
        let f = |lnk: f64| {
            let k = lnk.exp();
            let w = top_hat(k * r);
            k * k * k * self.at(k) / (2.0 * PI * PI) * w * w
        };
        let mut sum = f(lo) + f(hi);
        for i in 1..n {
            sum += f(lo + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
        }
        (sum * h / 3.0).sqrt()
    }
}

/// W(x) = 3 (sin x - x cos x) / x³, with its series near 0.
pub fn top_hat(x: f64) -> f64 {
    if x < 1e-3 {
        return 1.0 - x * x / 10.0;
    }
    3.0 * (x.sin() - x * x.cos()) / (x * x * x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalised_spectrum_has_the_requested_sigma_8() {
        for sigma_8 in [0.78, 0.8, 0.95] {
            let c = Cosmology { sigma_8, omega_m: 0.32, n_s: 0.93, ..Cosmology::REFERENCE };
            let p = c.linear_power();
            let got = p.sigma_r(8.0);
            assert!((got / sigma_8 - 1.0).abs() < 1e-4, "{got} vs {sigma_8}");
            // An independent check: trapezoid in k (not ln k) on a fine grid.
            let n = 400_000;
            let (k0, k1) = (1e-4f64, 20.0f64);
            let dk = (k1 - k0) / n as f64;
            let mut s = 0.0;
            for i in 0..=n {
                let k = k0 + i as f64 * dk;
                let w = top_hat(8.0 * k);
                let v = k * k * p.at(k) / (2.0 * PI * PI) * w * w;
                s += if i == 0 || i == n { v / 2.0 } else { v };
            }
            assert!(((s * dk).sqrt() / sigma_8 - 1.0).abs() < 1e-3);
        }
    }

    #[test]
    fn growth_at_the_earliest_redshift_is_the_matter_era_solution() {
        let c = Cosmology::REFERENCE;
        let a = 1.0 / (1.0 + EARLIEST_REDSHIFT);
        let g = c.growth_with_rates(a);
        // Normalised to D1(1) = 1, so D1 = a · (D1/a at a → 0): check shape,
        // not value: dlnD1/dlna = 1 and D2 = -3/7 D1² in the matter era.
        assert!((g.d1_rate / g.d1 - 1.0).abs() < 1e-6, "{g:?}");
        assert!((g.d2 / (g.d1 * g.d1) + 3.0 / 7.0).abs() < 1e-6, "{g:?}");
    }

    #[test]
    fn growth_factor_matches_the_integral_form() {
        // Flat ΛCDM: D(a) ∝ E(a) ∫_0^a da' / (a' E(a'))³ (Heath 1977).
        for om in [0.25, 0.3, 0.35] {
            let c = Cosmology { omega_m: om, ..Cosmology::REFERENCE };
            let integral = |a: f64| {
                let n = 200_000;
                let h = a / n as f64;
                // Midpoint rule; the integrand → a'^1.5/Ω_m^1.5 at 0, smooth.
                let mut s = 0.0;
                for i in 0..n {
                    let x = (i as f64 + 0.5) * h;
                    s += 1.0 / (x * c.e_of_a(x)).powi(3);
                }
                c.e_of_a(a) * s * h
            };
            let norm = integral(1.0);
            for z in [0.0, 0.5, 1.5, 3.0] {
                let a = 1.0 / (1.0 + z);
                let want = integral(a) / norm;
                let (d1, _) = c.growth(a);
                assert!((d1 / want - 1.0).abs() < 1e-4, "Ω_m {om} z {z}: {d1} vs {want}");
            }
        }
    }

    #[test]
    fn second_order_growth_is_minus_three_sevenths_in_matter_domination() {
        let eds = Cosmology { omega_m: 1.0, ..Cosmology::REFERENCE };
        for a in [0.25, 0.5, 1.0] {
            let (d1, d2) = eds.growth(a);
            assert!((d1 - a).abs() < 1e-6, "{d1} vs {a}");
            assert!((d2 / (d1 * d1) + 3.0 / 7.0).abs() < 1e-6, "{d2}");
        }
        // ΛCDM: the Bouchet et al. (1995) fit -3/7 Ω_m^(-1/143) to better than 1 %.
        let c = Cosmology::REFERENCE;
        let (d1, d2) = c.growth(1.0);
        let fit = -3.0 / 7.0 * c.omega_m.powf(-1.0 / 143.0);
        assert!((d2 / (d1 * d1) / fit - 1.0).abs() < 1e-2, "{}", d2 / (d1 * d1));
    }
}
