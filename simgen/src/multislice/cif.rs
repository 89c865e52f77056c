//! Crystals from CIF files: [`formats::cif`] reads the text; this module
//! names the elements, builds the lattice from a, b, c, α, β, γ and applies
//! the symmetry operations to complete the cell.

use formats::cif::CifStructure;

use super::crystal::{Atom, Crystal};
use super::elements::Element;

/// A CIF that cannot be used: the file, the line (0 for the file as a
/// whole) and why.
#[derive(Debug, thiserror::Error)]
#[error("{file}: line {line}: {reason}")]
pub struct CifError {
    /// File name, for the message.
    pub file: String,
    /// Line, 1-based (0: the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

/// Parse CIF `text` (from `file`, for messages) into a crystal.
pub fn parse(text: &str, file: &str) -> Result<Crystal, CifError> {
    let err = |line: usize, reason: String| CifError { file: file.to_owned(), line, reason };
    let cif = formats::cif::parse(text).map_err(|e| err(e.line, e.reason))?;
    crystal(&cif, file).map_err(|(line, reason)| err(line, reason))
}

fn crystal(cif: &CifStructure, file: &str) -> Result<Crystal, (usize, String)> {
    let lattice = lattice(cif.lengths, cif.angles)
        .ok_or_else(|| (0, format!("cell {:?} {:?} has no volume", cif.lengths, cif.angles)))?;
    let mut basis: Vec<Atom> = Vec::new();
    for site in &cif.sites {
        let element =
            element_of(&site.species).ok_or_else(|| (site.line, format!("{:?} names no element", site.species)))?;
        for op in &cif.symops {
            let p = op.apply(site.fract).map(|v| v.rem_euclid(1.0));
            let p = p.map(|v| if (v - 1.0).abs() < 1e-6 { 0.0 } else { v });
            match basis.iter().find(|a| periodic_distance(&a.position, &p) < 1e-4) {
                None => basis.push(Atom { element, position: p }),
                Some(other) if other.element != element => {
                    return Err((site.line, format!("{element} and {} share the site {p:?}", other.element)));
                }
                Some(_) => {}
            }
        }
    }
    let name = std::path::Path::new(file).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(Crystal { name, lattice, basis, thermal: thermal(cif)? })
}

/// Each element's RMS displacement per axis, √U with U the mean over the
/// element's sites that give one (U is additive: mean squares average).
fn thermal(cif: &CifStructure) -> Result<Vec<(Element, f64)>, (usize, String)> {
    let mut sums: Vec<(Element, f64, usize)> = Vec::new();
    for site in &cif.sites {
        let Some(u) = site.u_iso else { continue };
        let element =
            element_of(&site.species).ok_or_else(|| (site.line, format!("{:?} names no element", site.species)))?;
        match sums.iter_mut().find(|(e, ..)| *e == element) {
            Some((_, sum, count)) => {
                *sum += u;
                *count += 1;
            }
            None => sums.push((element, u, 1)),
        }
    }
    Ok(sums.into_iter().map(|(e, sum, count)| (e, (sum / count as f64).sqrt())).collect())
}

/// The element of a type symbol or label: `Si`, `Si1`, `O2-`, `Sr2+`.
fn element_of(t: &str) -> Option<Element> {
    let letters: String = t.chars().take_while(char::is_ascii_alphabetic).collect();
    // Two-letter symbols first (`Sr` before `S`), then one letter.
    (1..=letters.len().min(2)).rev().find_map(|n| Element::from_symbol(&letters[..n]).ok())
}

fn periodic_distance(a: &[f64; 3], b: &[f64; 3]) -> f64 {
    (0..3)
        .map(|k| {
            let d = (a[k] - b[k]).rem_euclid(1.0);
            d.min(1.0 - d).powi(2)
        })
        .sum::<f64>()
        .sqrt()
}

/// Lattice vectors (rows) of a cell: a along x, b in the xy plane (the
/// usual crystallographic setting).
fn lattice(l: [f64; 3], angles: [f64; 3]) -> Option<[[f64; 3]; 3]> {
    let [alpha, beta, gamma] = angles.map(f64::to_radians);
    let (ca, cb, cg, sg) = (alpha.cos(), beta.cos(), gamma.cos(), gamma.sin());
    let cx = cb;
    let cy = (ca - cb * cg) / sg;
    let cz2 = 1.0 - cx * cx - cy * cy;
    if !(cz2 > 1e-12 && l.iter().all(|v| *v > 0.0) && sg.abs() > 1e-12) {
        return None;
    }
    Some([[l[0], 0.0, 0.0], [l[1] * cg, l[1] * sg, 0.0], [l[2] * cx, l[2] * cy, l[2] * cz2.sqrt()]])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2H-MoS2 as a database writes it: hexagonal cell, two sites, the 24
    /// operations of P6_3/mmc (International Tables A, No. 194).
    const MOS2: &str = include_str!("../../tests/data/MoS2.cif");

    #[test]
    fn a_hexagonal_cif_with_symmetry_gives_the_built_in_mos2() {
        let crystal = parse(MOS2, "MoS2.cif").unwrap();
        assert_eq!(crystal.basis.len(), 6, "{:?}", crystal.basis);
        let ours = crystal.orthogonal_cell([0, 0, 1]).unwrap();
        let built_in = Crystal::built_in("MoS2").unwrap().orthogonal_cell([0, 0, 1]).unwrap();
        assert_eq!(ours.atoms.len(), built_in.atoms.len());
        for (a, b) in ours.lengths.iter().zip(&built_in.lengths) {
            assert!((a - b).abs() < 1e-9);
        }
        for a in &built_in.atoms {
            // The CIF's 0.33333 for 1/3 may wrap an atom to the far face.
            let near = ours.atoms.iter().any(|o| {
                o.element == a.element
                    && (0..3).all(|k| {
                        let d = (o.position[k] - a.position[k]).rem_euclid(ours.lengths[k]);
                        d.min(ours.lengths[k] - d) < 1e-3
                    })
            });
            assert!(near, "{a:?} missing from the CIF's cell");
        }
    }

    #[test]
    fn broken_cifs_name_the_line() {
        let no_close = MOS2.replace("'x, y, z' '-y", "'x, y, z '-y");
        let e = parse(&no_close, "a.cif").unwrap_err();
        assert!(e.line > 0, "{e}");
        let bad_number = MOS2.replace("_cell_length_c 12.294", "_cell_length_c twelve");
        let e = parse(&bad_number, "a.cif").unwrap_err().to_string();
        assert!(e.contains("line 4") && e.contains("not a number"), "{e}");
        let bad_element = MOS2.replace("S1 S 0.33333", "Q1 Q 0.33333");
        let e = parse(&bad_element, "a.cif").unwrap_err().to_string();
        assert!(e.contains("line 22") && e.contains("names no element"), "{e}");
        let partial = MOS2.replace("0.621 1.0", "0.621 0.5");
        assert!(parse(&partial, "a.cif").unwrap_err().to_string().contains("partially occupied"));
        assert!(parse("data_x\n_cell_length_a 3\n", "a.cif").unwrap_err().to_string().contains("_cell_length_b"));
    }

    #[test]
    fn element_names_come_from_symbols_labels_and_ions() {
        assert_eq!(element_of("Sr2+").unwrap().symbol(), "Sr");
        assert_eq!(element_of("S1").unwrap().symbol(), "S");
        assert_eq!(element_of("O2-").unwrap().symbol(), "O");
    }
}
