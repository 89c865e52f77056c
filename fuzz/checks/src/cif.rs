//! CIF text: any bytes parse or fail with an error naming a line inside
//! the text; a parsed structure has finite numbers, thermal
//! displacements that are finite and not negative, and at least one
//! symmetry operation.

/// One input, as the fuzz target `cif` runs it: panics where the
/// parser breaks what it promises.
pub fn check(input: &[u8]) {
    let text = String::from_utf8_lossy(input);
    match formats::cif::parse(&text) {
        Ok(cif) => {
            assert!(!cif.symops.is_empty());
            assert!(cif.lengths.iter().chain(&cif.angles).all(|v| v.is_finite()));
            for site in &cif.sites {
                assert!(site.fract.iter().all(|v| v.is_finite()));
                assert!(site.u_iso.is_none_or(|u| u.is_finite() && u >= 0.0), "{:?}", site.u_iso);
                for op in &cif.symops {
                    let _ = op.apply(site.fract);
                }
            }
        }
        Err(e) => assert!(e.line <= text.lines().count() + 1, "line {} of {}", e.line, text.lines().count()),
    }
}
