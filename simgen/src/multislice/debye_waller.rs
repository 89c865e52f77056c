//! Published Debye-Waller factors of elemental crystals, the thermal
//! displacement an element has when a structure gives none of its own.
//!
//! The values are B = 8π²⟨u_x²⟩ at 280 K from Table 1 of L.-M. Peng,
//! G. Ren, S. L. Dudarev and M. J. Whelan, "Debye-Waller factors and
//! absorptive scattering factors of elemental crystals", Acta Cryst. A52
//! (1996) 456-470, computed there from measured phonon densities of states.
//! They hold for a crystal of that element alone: in a compound an atom
//! vibrates with its neighbours' bonds (Sr is 3.6 Å² in the metal and about
//! a seventh of that in SrTiO3), so a compound's atoms take them only from
//! its own refinement.

use super::elements::Element;

/// Temperature of the table, K.
pub const TABLE_TEMPERATURE: f64 = 280.0;

/// (symbol, B in Å² at 280 K). Elements the paper gives in two phases
/// (Fe: bcc and fcc; Ca: two) take the phase stable at room temperature,
/// or are left out when the table does not say which is which (Ca).
const PENG_1996_B_280K: &[(&str, f64)] = &[
    ("Li", 4.5958),
    ("Be", 0.4042),
    ("C", 0.1422),
    ("Na", 6.3648),
    ("Mg", 1.7319),
    ("Al", 0.7460),
    ("Si", 0.4634),
    ("K", 10.2398),
    ("Sc", 0.7125),
    ("Ti", 0.4911),
    ("V", 0.5465),
    ("Cr", 0.2398),
    ("Fe", 0.3106),
    ("Ni", 0.3401),
    ("Cu", 0.5261),
    ("Zn", 1.0915),
    ("Ge", 0.5734),
    ("Rb", 12.6041),
    ("Sr", 3.6221),
    ("Y", 0.8176),
    ("Zr", 0.5435),
    ("Nb", 0.4297),
    ("Mo", 0.2059),
    ("Pd", 0.4259),
    ("Ag", 0.7017),
    ("Sn", 1.0825),
    ("Cs", 16.7698),
    ("Ba", 2.9279),
    ("La", 1.7739),
    ("Tb", 0.9660),
    ("Ho", 0.8023),
    ("Ta", 0.3078),
    ("W", 0.1526),
    ("Pt", 0.3557),
    ("Au", 0.5925),
    ("Pb", 2.0341),
    ("Th", 0.6977),
];

/// The Debye-Waller factor B (Å²) of the elemental crystal of `element`
/// at [`TABLE_TEMPERATURE`], if the table has it.
pub fn elemental_b(element: Element) -> Option<f64> {
    PENG_1996_B_280K.iter().find(|(symbol, _)| *symbol == element.symbol()).map(|&(_, b)| b)
}

/// RMS displacement per axis, Å, of an isotropic B: B = 8π²⟨u_x²⟩ (Peng et
/// al. 1996, eq. 3).
pub fn sigma_of_b(b: f64) -> f64 {
    (b / (8.0 * std::f64::consts::PI * std::f64::consts::PI)).sqrt()
}

/// RMS displacement per axis, Å, of the elemental crystal of `element`.
pub fn elemental_sigma(element: Element) -> Option<f64> {
    elemental_b(element).map(sigma_of_b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_symbol_of_the_table_is_an_element_and_appears_once() {
        for (i, (symbol, b)) in PENG_1996_B_280K.iter().enumerate() {
            assert!(Element::from_symbol(symbol).is_ok(), "{symbol}");
            assert!(*b > 0.0 && *b < 20.0, "{symbol}: {b}");
            assert!(PENG_1996_B_280K[..i].iter().all(|(s, _)| s != symbol), "{symbol} twice");
        }
    }

    #[test]
    fn silicon_vibrates_by_the_amplitude_the_default_always_was() {
        // 0.076 Å, the command line's default before the table, is Si's.
        let si = Element::from_symbol("Si").unwrap();
        let sigma = elemental_sigma(si).unwrap();
        assert!((sigma - 0.0766).abs() < 1e-4, "{sigma}");
        // Heavier and softer: gold vibrates more than silicon, tungsten less.
        let of = |s: &str| elemental_sigma(Element::from_symbol(s).unwrap()).unwrap();
        assert!(of("Au") > sigma && of("W") < sigma);
        assert_eq!(elemental_b(Element::from_symbol("O").unwrap()), None);
    }
}
