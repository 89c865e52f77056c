//! Electron-optical constants: relativistic wavelength, interaction
//! constant and the aberration phase of a round lens.

/// Planck constant times the speed of light, keV·Å (CODATA 2018, exact).
const HC_KEV_ANGSTROM: f64 = 12.398_419_843_320_026;
/// Electron rest energy, keV (CODATA 2018).
const ELECTRON_REST_KEV: f64 = 510.998_950_00;

/// Highest accelerating voltage accepted, volts: well beyond any microscope
/// (the formulas hold at any energy; this catches a unit slip such as
/// `200000kV`).
pub const MAX_VOLTS: f64 = 3.0e6;
/// Lowest accepted: below this the high-energy (forward-scattering)
/// approximation multislice rests on fails.
pub const MIN_VOLTS: f64 = 1.0e3;

/// An electron beam of one accelerating voltage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Beam {
    volts: f64,
}

/// An accelerating voltage outside [`MIN_VOLTS`, `MAX_VOLTS`].
#[derive(Debug, thiserror::Error)]
#[error("beam energy {volts} V is outside 1 kV .. 3 MV")]
pub struct EnergyOutOfRange {
    /// The voltage asked for.
    pub volts: f64,
}

impl Beam {
    /// A beam of electrons accelerated through `volts`.
    pub fn new(volts: f64) -> Result<Beam, EnergyOutOfRange> {
        if (MIN_VOLTS..=MAX_VOLTS).contains(&volts) { Ok(Beam { volts }) } else { Err(EnergyOutOfRange { volts }) }
    }

    /// Accelerating voltage, V.
    pub fn volts(&self) -> f64 {
        self.volts
    }

    /// Relativistic electron wavelength in Å: λ = hc / sqrt(E (2 m0c² + E))
    /// (Kirkland, *Advanced Computing in Electron Microscopy*, 2nd ed. 2010,
    /// ch. 2, the relativistic electron wavelength).
    pub fn wavelength(&self) -> f64 {
        let e_kev = self.volts / 1000.0;
        HC_KEV_ANGSTROM / (e_kev * (2.0 * ELECTRON_REST_KEV + e_kev)).sqrt()
    }

    /// Interaction constant σ in rad/(V·Å):
    /// σ = 2π / (λ V) · (m0c² + eV) / (2 m0c² + eV) (Kirkland 2010,
    /// ch. 5, the interaction parameter).
    pub fn interaction_constant(&self) -> f64 {
        let e_kev = self.volts / 1000.0;
        2.0 * std::f64::consts::PI / (self.wavelength() * self.volts) * (ELECTRON_REST_KEV + e_kev)
            / (2.0 * ELECTRON_REST_KEV + e_kev)
    }
}

/// Aberrations of a round lens, lengths in Å. Defocus follows Kirkland's
/// sign (positive is underfocus, C10 = -defocus in the Krivanek notation
/// abTEM uses).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Aberrations {
    /// Defocus Δf, Å.
    pub defocus: f64,
    /// Third-order spherical aberration C30 = Cs, Å.
    pub cs: f64,
    /// Fifth-order spherical aberration C50, Å.
    pub c5: f64,
}

impl Aberrations {
    /// Aberration phase χ at scattering angle θ = λk (rad), for wavelength
    /// `lambda` (Å): χ = 2π/λ (-Δf θ²/2 + Cs θ⁴/4 + C5 θ⁶/6) (Kirkland 2010,
    /// ch. 3, the aberration function of a round lens).
    pub fn chi(&self, theta: f64, lambda: f64) -> f64 {
        let t2 = theta * theta;
        2.0 * std::f64::consts::PI / lambda
            * (-self.defocus * t2 / 2.0 + self.cs * t2 * t2 / 4.0 + self.c5 * t2 * t2 * t2 / 6.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check values of the issue, to 1e-5 relative.
    #[test]
    fn wavelength_and_interaction_constant_match_the_published_values() {
        for (kv, lambda, sigma) in
            [(100.0, 0.03701437, 9.24396e-4), (200.0, 0.02507934, 7.28840e-4), (300.0, 0.01968749, 6.52616e-4)]
        {
            let beam = Beam::new(kv * 1000.0).unwrap();
            assert!((beam.wavelength() / lambda - 1.0).abs() < 1e-5, "{kv} kV: λ {}", beam.wavelength());
            let s = beam.interaction_constant();
            assert!((s / sigma - 1.0).abs() < 1e-5, "{kv} kV: σ {s}");
        }
    }

    #[test]
    fn energies_outside_the_microscope_range_are_refused() {
        assert!(Beam::new(0.0).is_err());
        assert!(Beam::new(f64::NAN).is_err());
        assert!(Beam::new(2.0e8).is_err());
    }

    #[test]
    fn chi_is_zero_on_axis_and_grows_with_spherical_aberration() {
        let a = Aberrations { defocus: 0.0, cs: 1.3e7, c5: 0.0 };
        assert_eq!(a.chi(0.0, 0.025), 0.0);
        assert!(a.chi(0.01, 0.025) > 0.0);
        // Scherzer-like balance: defocus cancels Cs at one angle.
        let b = Aberrations { defocus: 1.3e7 * 0.01f64.powi(2) / 2.0, cs: 1.3e7, c5: 0.0 };
        assert!(b.chi(0.01, 0.025).abs() < 1e-9);
    }
}
