//! Matter transfer functions T(k), k in h/Mpc: Eisenstein & Hu's (1998)
//! fit with its baryon acoustic oscillations (the default), their
//! no-wiggle form, or a table a Boltzmann code (CAMB, CLASS) wrote.
//! Pure functions; the table's text is parsed in
//! [`transfer_table`](super::transfer_table).

use std::f64::consts::E;
use std::sync::Arc;

use super::cosmology::Cosmology;
use super::transfer_table::{TransferTable, TransferTableError};

/// Where a box's transfer function comes from.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Transfer {
    /// Eisenstein & Hu (1998) §3, CDM and baryons with the acoustic
    /// oscillations.
    #[default]
    EisensteinHu,
    /// Eisenstein & Hu (1998) §4.2, the smooth form without oscillations.
    NoWiggle,
    /// A CAMB or CLASS table: its shape for every box, whatever the box's
    /// parameters (the table was computed for one cosmology).
    Table(Arc<TransferTable>),
}

impl Transfer {
    /// T(k) of `cosmology` at `k` (h/Mpc), up to a constant factor (the
    /// spectrum is normalised to σ8 afterwards).
    pub fn at(&self, cosmology: &Cosmology, k: f64) -> f64 {
        match self {
            Transfer::EisensteinHu => cosmology.transfer_eisenstein_hu(k),
            Transfer::NoWiggle => cosmology.transfer_no_wiggle(k),
            Transfer::Table(table) => table.at(k),
        }
    }

    /// The transfer a command-line value names: `eisenstein-hu`,
    /// `no-wiggle`, or the path of a CAMB or CLASS table (read here).
    pub fn from_argument(value: &str) -> Result<Self, TransferTableError> {
        match value {
            "eisenstein-hu" => Ok(Transfer::EisensteinHu),
            "no-wiggle" => Ok(Transfer::NoWiggle),
            path => Ok(Transfer::Table(Arc::new(TransferTable::read(std::path::Path::new(path))?))),
        }
    }

    /// The name reports and `--help` use.
    pub fn name(&self) -> String {
        match self {
            Transfer::EisensteinHu => "eisenstein-hu".into(),
            Transfer::NoWiggle => "no-wiggle".into(),
            Transfer::Table(table) => format!("table {}", table.source()),
        }
    }
}

/// The scalars of Eisenstein & Hu (1998) §2-3 for one cosmology, in Mpc
/// (not Mpc/h), as their `TFset_parameters` (tf_fit.c) computes them.
struct EhScalars {
    f_baryon: f64,
    k_equality: f64,
    sound_horizon: f64,
    k_silk: f64,
    alpha_c: f64,
    beta_c: f64,
    alpha_b: f64,
    beta_b: f64,
    beta_node: f64,
}

impl EhScalars {
    fn of(c: &Cosmology) -> Self {
        let omh2 = c.omega_m * c.h * c.h;
        let obh2 = c.omega_b * c.h * c.h;
        let f_baryon = c.omega_b / c.omega_m;
        let theta = c.t_cmb / 2.7;
        // Eqs. 2-3: 1 + z at equality, and the horizon scale then (1/Mpc).
        let z_equality = 2.50e4 * omh2 / theta.powi(4);
        let k_equality = 0.0746 * omh2 / (theta * theta);
        // Eq. 4: the drag epoch.
        let b1 = 0.313 * omh2.powf(-0.419) * (1.0 + 0.607 * omh2.powf(0.674));
        let b2 = 0.238 * omh2.powf(0.223);
        let z_drag = 1291.0 * omh2.powf(0.251) / (1.0 + 0.659 * omh2.powf(0.828)) * (1.0 + b1 * obh2.powf(b2));
        // Eq. 5: baryon-to-photon momentum density ratio (z_equality is 1 + z).
        let r_drag = 31.5 * obh2 / theta.powi(4) * (1000.0 / (1.0 + z_drag));
        let r_equality = 31.5 * obh2 / theta.powi(4) * (1000.0 / z_equality);
        // Eq. 6: sound horizon at the drag epoch (Mpc).
        let sound_horizon = 2.0 / (3.0 * k_equality)
            * (6.0 / r_equality).sqrt()
            * (((1.0 + r_drag).sqrt() + (r_drag + r_equality).sqrt()) / (1.0 + r_equality.sqrt())).ln();
        // Eq. 7: Silk damping scale.
        let k_silk = 1.6 * obh2.powf(0.52) * omh2.powf(0.73) * (1.0 + (10.4 * omh2).powf(-0.95));
        // Eqs. 11-12: CDM suppression and log shift.
        let a1 = (46.9 * omh2).powf(0.670) * (1.0 + (32.1 * omh2).powf(-0.532));
        let a2 = (12.0 * omh2).powf(0.424) * (1.0 + (45.0 * omh2).powf(-0.582));
        let alpha_c = a1.powf(-f_baryon) * a2.powf(-f_baryon.powi(3));
        let bc1 = 0.944 / (1.0 + (458.0 * omh2).powf(-0.708));
        let bc2 = (0.395 * omh2).powf(-0.0266);
        let beta_c = 1.0 / (1.0 + bc1 * ((1.0 - f_baryon).powf(bc2) - 1.0));
        // Eqs. 14-15: baryon suppression.
        let y = z_equality / (1.0 + z_drag);
        let g = y
            * (-6.0 * (1.0 + y).sqrt() + (2.0 + 3.0 * y) * (((1.0 + y).sqrt() + 1.0) / ((1.0 + y).sqrt() - 1.0)).ln());
        let alpha_b = 2.07 * k_equality * sound_horizon * (1.0 + r_drag).powf(-0.75) * g;
        // Eqs. 23-24: node shift and baryon envelope shift.
        let beta_node = 8.41 * omh2.powf(0.435);
        let beta_b = 0.5 + f_baryon + (3.0 - 2.0 * f_baryon) * ((17.2 * omh2).powi(2) + 1.0).sqrt();
        EhScalars { f_baryon, k_equality, sound_horizon, k_silk, alpha_c, beta_c, alpha_b, beta_b, beta_node }
    }

    /// Eq. 16: T(k) = f_b T_b + f_c T_c, k in 1/Mpc.
    fn transfer(&self, k: f64) -> f64 {
        if k <= 0.0 {
            return 1.0;
        }
        let q = k / (13.41 * self.k_equality); // eq. 10
        let ks = k * self.sound_horizon;
        // Eqs. 19-20: T̃0(k, α, β).
        let t0 = |alpha: f64, beta: f64| {
            let l = (E + 1.8 * beta * q).ln();
            let c = 14.2 / alpha + 386.0 / (1.0 + 69.9 * q.powf(1.08));
            l / (l + c * q * q)
        };
        // Eqs. 17-18: the CDM part.
        let f = 1.0 / (1.0 + (ks / 5.4).powi(4));
        let t_cdm = f * t0(1.0, self.beta_c) + (1.0 - f) * t0(self.alpha_c, self.beta_c);
        // Eqs. 21-22: the baryon part, oscillating as j0(k s̃).
        let s_tilde = self.sound_horizon / (1.0 + (self.beta_node / ks).powi(3)).cbrt();
        let x = k * s_tilde;
        let t_baryon = (x.sin() / x)
            * (t0(1.0, 1.0) / (1.0 + (ks / 5.2).powi(2))
                + self.alpha_b / (1.0 + (self.beta_b / ks).powi(3)) * (-(k / self.k_silk).powf(1.4)).exp());
        self.f_baryon * t_baryon + (1.0 - self.f_baryon) * t_cdm
    }
}

impl Cosmology {
    /// Eisenstein & Hu (1998, ApJ 496, 605) transfer function at `k`
    /// (h/Mpc) with the baryon acoustic oscillations: eqs. 2-24 of the
    /// paper, as in the authors' `tf_fit.c` (`TFfit_onek`).
    pub fn transfer_eisenstein_hu(&self, k: f64) -> f64 {
        EhScalars::of(self).transfer(k * self.h)
    }

    /// The comoving sound horizon at the drag epoch in Mpc/h (E&H eq. 6):
    /// the BAO scale, where the wiggles of
    /// [`transfer_eisenstein_hu`](Self::transfer_eisenstein_hu) repeat
    /// every 2π/s in k.
    pub fn sound_horizon(&self) -> f64 {
        EhScalars::of(self).sound_horizon * self.h
    }

    /// Eisenstein & Hu (1998) no-wiggle transfer function at `k` (h/Mpc), in
    /// the form of nbodykit's `NoWiggleEisensteinHu` (eqs. 26, 28-31 of the
    /// paper; q from k_eq), which reproduces the published check values.
    pub fn transfer_no_wiggle(&self, k: f64) -> f64 {
        let (om, ob, h) = (self.omega_m, self.omega_b, self.h);
        let omh2 = om * h * h;
        let obh2 = ob * h * h;
        let theta = self.t_cmb / 2.7;
        let fb = ob / om;
        let k_eq = 0.0746 * omh2 / (theta * theta); // 1/Mpc
        let s = 44.5 * (9.83 / omh2).ln() / (1.0 + 10.0 * obh2.powf(0.75)).sqrt(); // Mpc
        let alpha = 1.0 - 0.328 * (431.0 * omh2).ln() * fb + 0.38 * (22.3 * omh2).ln() * fb * fb;
        let k_mpc = k * h;
        let q = k_mpc / (13.41 * k_eq);
        let gamma_eff = omh2 * (alpha + (1.0 - alpha) / (1.0 + (0.43 * k_mpc * s).powi(4)));
        let q_eff = q * omh2 / gamma_eff;
        let l0 = (2.0 * E + 1.8 * q_eff).ln();
        let c0 = 14.2 + 731.0 / (1.0 + 62.5 * q_eff);
        l0 / (l0 + c0 * q_eff * q_eff)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eisenstein_hu_no_wiggle_matches_published_check_values() {
        // Ω_m 0.3, Ω_b 0.05, h 0.7, T_cmb 2.7255 (nbodykit NoWiggleEisensteinHu).
        let c = Cosmology::REFERENCE;
        for (k, want) in [(0.01, 0.78621), (0.1, 0.13126), (1.0, 0.0045561)] {
            let t = c.transfer_no_wiggle(k);
            assert!((t - want).abs() / want < 1e-4, "T({k}) = {t}, want {want}");
        }
        assert!((c.transfer_no_wiggle(1e-5) - 1.0).abs() < 1e-3);
    }

    #[test]
    fn wiggles_oscillate_about_the_no_wiggle_form_with_the_sound_horizon_period() {
        let c = Cosmology::REFERENCE;
        // E&H's fit of the sound horizon (eq. 26) and the full eq. 6 agree
        // to about 1 % (their §4.2).
        let s = c.sound_horizon();
        let s_fit = 44.5 * (9.83 / (c.omega_m * c.h * c.h)).ln()
            / (1.0 + 10.0 * (c.omega_b * c.h * c.h).powf(0.75)).sqrt()
            * c.h;
        assert!((s / s_fit - 1.0).abs() < 0.02, "s {s} vs fit {s_fit} Mpc/h");
        // Large scales: both forms tend to 1.
        assert!((c.transfer_eisenstein_hu(1e-5) - 1.0).abs() < 1e-3);
        // The ratio to no-wiggle crosses 1 about every π/s in k between the
        // first and the damped peaks, by a few per cent either way.
        let ratio = |k: f64| c.transfer_eisenstein_hu(k).powi(2) / c.transfer_no_wiggle(k).powi(2);
        let ks: Vec<f64> = (0..3000).map(|i| 0.02 + 0.28 * f64::from(i) / 3000.0).collect();
        let crossings: Vec<f64> =
            ks.windows(2).filter(|w| (ratio(w[0]) - 1.0) * (ratio(w[1]) - 1.0) < 0.0).map(|w| w[0]).collect();
        assert!(crossings.len() >= 6, "{crossings:?}");
        let spacing = (crossings[crossings.len() - 1] - crossings[1]) / (crossings.len() - 2) as f64;
        let half_period = std::f64::consts::PI / s;
        assert!((spacing / half_period - 1.0).abs() < 0.1, "crossings every {spacing} h/Mpc, π/s = {half_period}");
        let swing = ks.iter().map(|&k| (ratio(k) - 1.0).abs()).fold(0.0, f64::max);
        assert!(swing > 0.03 && swing < 0.15, "largest departure {swing}");
    }
}
