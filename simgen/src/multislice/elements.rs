//! Chemical elements and their electron scattering factors.

use super::kirkland_table::{PARAMETERS, SYMBOLS};

/// Bohr radius, Å (CODATA 2018).
pub const BOHR_ANGSTROM: f64 = 0.529_177_210_903;
/// e²/(4πε0) in eV·Å, the "e = 14.4 V·Å" of Kirkland's formulas (CODATA 2018).
pub const ELECTRON_CHARGE_VOLT_ANGSTROM: f64 = 14.399_645;

/// An element, H (Z = 1) to Lr (Z = 103): the range of Kirkland's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Element(u8);

/// A symbol or atomic number that names no element of the table.
#[derive(Debug, thiserror::Error)]
#[error("unknown element {0:?} (Kirkland's table covers H to Lr)")]
pub struct UnknownElement(pub String);

impl Element {
    /// The element of atomic number `z`.
    pub fn from_z(z: u32) -> Result<Element, UnknownElement> {
        match u8::try_from(z) {
            Ok(z @ 1..=103) => Ok(Element(z)),
            _ => Err(UnknownElement(z.to_string())),
        }
    }

    /// The element of a chemical symbol, in any case (`si`, `Si`, `SI`).
    pub fn from_symbol(symbol: &str) -> Result<Element, UnknownElement> {
        SYMBOLS
            .iter()
            .position(|s| s.eq_ignore_ascii_case(symbol))
            .map(|i| Element(i as u8 + 1))
            .ok_or_else(|| UnknownElement(symbol.to_owned()))
    }

    /// Atomic number: also the electrons of the neutral atom.
    pub fn z(self) -> u32 {
        u32::from(self.0)
    }

    /// Chemical symbol.
    pub fn symbol(self) -> &'static str {
        SYMBOLS[usize::from(self.0) - 1]
    }

    /// Electron scattering factor f_e(q) in Å at spatial frequency q = 1/d
    /// in 1/Å, from Kirkland's parameterisation (Kirkland 2010, Appendix C):
    /// three Lorentzians and three Gaussians in q.
    pub fn electron_factor(self, q: f64) -> f64 {
        self.electron_factor_q2(q * q)
    }

    /// [`electron_factor`](Self::electron_factor) of q² (what the grids have).
    pub fn electron_factor_q2(self, q2: f64) -> f64 {
        let p = &PARAMETERS[usize::from(self.0) - 1];
        (0..3).map(|i| p[i] / (q2 + p[3 + i]) + p[6 + i] * (-p[9 + i] * q2).exp()).sum()
    }

    /// Fourier transform of the atom's electron density (the X-ray form
    /// factor, in electrons) from f_e by the Mott–Bethe relation,
    /// f_x(q) = Z - 2π² a0 q² f_e(q) (Kirkland 2010, Appendix C, the
    /// Mott–Bethe formula in the units of the table). It tends to Z as q → 0.
    pub fn density_factor_q2(self, q2: f64) -> f64 {
        f64::from(self.0) - 2.0 * std::f64::consts::PI.powi(2) * BOHR_ANGSTROM * q2 * self.electron_factor_q2(q2)
    }
}

impl std::fmt::Display for Element {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.symbol())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kirkland's tabulated f_e values (the check values), 1e-4
    /// relative: a transcription error in any of the 12 parameters of these
    /// elements would show.
    #[test]
    fn electron_factors_match_kirklands_tabulated_values() {
        let cases = [
            ("C", 0.0, 2.511358),
            ("C", 0.5, 1.170045),
            ("C", 1.0, 0.412703),
            ("C", 2.0, 0.116831),
            ("Si", 0.0, 5.814284),
            ("Si", 0.5, 1.965830),
            ("Si", 1.0, 0.742282),
            ("Si", 2.0, 0.270219),
            ("Au", 0.0, 10.553353),
            ("Au", 1.0, 3.070813),
        ];
        for (symbol, q, want) in cases {
            let got = Element::from_symbol(symbol).unwrap().electron_factor(q);
            assert!((got / want - 1.0).abs() < 1e-4, "{symbol} f_e({q}) = {got}, want {want}");
        }
    }

    #[test]
    fn symbols_and_atomic_numbers_round_trip_for_every_element() {
        for z in 1..=103 {
            let e = Element::from_z(z).unwrap();
            assert_eq!(Element::from_symbol(e.symbol()).unwrap(), e);
            assert_eq!(e.z(), z);
        }
        assert_eq!(Element::from_symbol("sr").unwrap().z(), 38);
        assert!(Element::from_symbol("Xx").is_err());
        assert!(Element::from_z(0).is_err());
        assert!(Element::from_z(104).is_err());
    }

    /// Mott–Bethe: the density factor starts at Z and falls with q (the
    /// electron cloud has finite size), never past a small negative residue
    /// of the fit.
    #[test]
    fn density_factor_starts_at_z_and_falls() {
        for z in [6, 14, 29, 79, 92] {
            let e = Element::from_z(z).unwrap();
            assert!((e.density_factor_q2(0.0) - f64::from(z)).abs() < 1e-12);
            assert!(e.density_factor_q2(4.0) < 0.5 * f64::from(z), "{e}");
        }
        // Carbon at q = 2/Å: Z - 2π²a0·4·f_e(2) = 6 - 41.78·0.1168.
        let c = Element::from_symbol("C").unwrap().density_factor_q2(4.0);
        assert!((c - (6.0 - 2.0 * std::f64::consts::PI.powi(2) * BOHR_ANGSTROM * 4.0 * 0.116831)).abs() < 1e-4);
    }
}
