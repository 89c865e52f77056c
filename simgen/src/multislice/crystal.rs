//! Crystals: a lattice and a basis of atoms, the built-in structures, and
//! the orthogonal cell of a crystal viewed along a zone axis.
//!
//! Multislice needs a box with the beam along z and a periodic rectangle
//! across it. A crystal's own cell is often not that box (hexagonal MoS2;
//! cubic crystals along [110]), so [`Crystal::orthogonal_cell`] searches the
//! lattice for the smallest box whose edges are lattice vectors, one of them
//! along the zone axis, and fills it with the atoms that fall inside: what
//! `ase`'s `orthogonalize_cell` does for abTEM users.

use super::elements::{Element, UnknownElement};

/// An atom at a position.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Atom {
    /// What it is.
    pub element: Element,
    /// Where: Cartesian Å, or fractional coordinates in a [`Crystal`]'s basis.
    pub position: [f64; 3],
}

/// A periodic crystal: lattice vectors (rows, Å, Cartesian) and the basis in
/// fractional coordinates of those vectors.
#[derive(Debug, Clone, PartialEq)]
pub struct Crystal {
    /// Name, for reports.
    pub name: String,
    /// Lattice vectors a1, a2, a3 as rows, Å.
    pub lattice: [[f64; 3]; 3],
    /// Atoms of one cell, fractional coordinates.
    pub basis: Vec<Atom>,
    /// RMS thermal displacement per axis (Å) of each element whose sites
    /// the structure's refinement gives one (a CIF's U_iso or B_iso,
    /// averaged over the element's sites as U); the built-ins give none.
    pub thermal: Vec<(Element, f64)>,
}

/// A rectangular box of atoms, periodic in x and y, the beam along z.
#[derive(Debug, Clone, PartialEq)]
pub struct OrthogonalCell {
    /// Edge lengths along x, y, z (the beam), Å.
    pub lengths: [f64; 3],
    /// Atoms, Cartesian Å inside `[0, lengths)`.
    pub atoms: Vec<Atom>,
}

/// Why a crystal could not be built or oriented.
#[derive(Debug, thiserror::Error)]
pub enum CrystalError {
    /// A structure name that is not built in.
    #[error("unknown structure {0:?} (built in: {known}; or give --cif FILE)", known = BUILT_IN.join(", "))]
    UnknownStructure(String),
    /// A zone axis that is not three integers.
    #[error("zone axis {0:?} is not three digits such as 001 or 110, or three integers such as 1,-1,0")]
    BadZoneAxis(String),
    /// No small orthogonal box along this axis.
    #[error("no orthogonal cell along [{u} {v} {w}] with lattice indices up to {max}: try a low-index zone axis")]
    NoOrthogonalCell {
        /// Zone axis.
        u: i32,
        /// Zone axis.
        v: i32,
        /// Zone axis.
        w: i32,
        /// Largest index searched.
        max: i32,
    },
    /// The cell has no volume.
    #[error("the lattice vectors are linearly dependent (zero cell volume)")]
    Degenerate,
    /// Filling the box found the wrong number of atoms (a basis with atoms
    /// on top of each other, or a tolerance problem).
    #[error(
        "the orthogonal cell should hold {expected} atoms but {found} fell inside; check the basis for duplicate sites"
    )]
    AtomCount {
        /// Volume ratio times basis atoms.
        expected: usize,
        /// Atoms found.
        found: usize,
    },
    /// An element symbol the table does not know.
    #[error(transparent)]
    Element(#[from] UnknownElement),
}

/// Names of the built-in crystals.
pub const BUILT_IN: [&str; 6] = ["Si", "GaAs", "SrTiO3", "MoS2", "Au", "Cu"];

const FCC: [[f64; 3]; 4] = [[0.0, 0.0, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5], [0.5, 0.5, 0.0]];

impl Crystal {
    /// A built-in crystal by name (case-insensitive).
    ///
    /// Lattice constants at room temperature: Si 5.4310 Å, GaAs 5.6533 Å,
    /// SrTiO3 3.905 Å, Au 4.0782 Å, Cu 3.6149 Å (R. W. G. Wyckoff, *Crystal
    /// Structures*, 2nd ed., vol. 1, Interscience 1963); 2H-MoS2 a = 3.160 Å,
    /// c = 12.294 Å, S at z = 0.621 (B. Schönfeld, J. J. Huang, S. C. Moss,
    /// Acta Cryst. B39, 404 (1983)).
    pub fn built_in(name: &str) -> Result<Crystal, CrystalError> {
        let el = |s: &str| Element::from_symbol(s);
        let cubic = |a: f64| [[a, 0.0, 0.0], [0.0, a, 0.0], [0.0, 0.0, a]];
        let at = |e: Element, p: [f64; 3]| Atom { element: e, position: p };
        let shifted = |p: [f64; 3]| [p[0] + 0.25, p[1] + 0.25, p[2] + 0.25];
        let canonical = BUILT_IN.iter().find(|b| b.eq_ignore_ascii_case(name));
        let Some(&canonical) = canonical else {
            return Err(CrystalError::UnknownStructure(name.to_owned()));
        };
        let (lattice, basis) = match canonical {
            // Diamond: fcc plus the same shifted by a quarter diagonal.
            "Si" => {
                let si = el("Si")?;
                (cubic(5.4310), FCC.iter().flat_map(|&p| [at(si, p), at(si, shifted(p))]).collect())
            }
            // Zincblende: Ga on fcc, As on the shifted fcc.
            "GaAs" => {
                let (ga, as_) = (el("Ga")?, el("As")?);
                (cubic(5.6533), FCC.iter().flat_map(|&p| [at(ga, p), at(as_, shifted(p))]).collect())
            }
            // Cubic perovskite: Sr at the corner, Ti at the centre, O on the faces.
            "SrTiO3" => {
                let (sr, ti, o) = (el("Sr")?, el("Ti")?, el("O")?);
                let basis = vec![
                    at(sr, [0.0, 0.0, 0.0]),
                    at(ti, [0.5, 0.5, 0.5]),
                    at(o, [0.5, 0.5, 0.0]),
                    at(o, [0.5, 0.0, 0.5]),
                    at(o, [0.0, 0.5, 0.5]),
                ];
                (cubic(3.905), basis)
            }
            // 2H-MoS2, P6_3/mmc: Mo on 2c, S on 4f (trigonal prisms of S
            // around each Mo, two layers per cell).
            "MoS2" => {
                let (mo, s) = (el("Mo")?, el("S")?);
                let (a, c, z) = (3.160, 12.294, 0.621);
                let lattice = [[a, 0.0, 0.0], [-a / 2.0, a * 3f64.sqrt() / 2.0, 0.0], [0.0, 0.0, c]];
                let (t1, t2) = (1.0 / 3.0, 2.0 / 3.0);
                let basis = vec![
                    at(mo, [t1, t2, 0.25]),
                    at(mo, [t2, t1, 0.75]),
                    at(s, [t1, t2, z]),
                    at(s, [t1, t2, 1.5 - z]),
                    at(s, [t2, t1, z - 0.5]),
                    at(s, [t2, t1, 1.0 - z]),
                ];
                (lattice, basis)
            }
            "Au" => {
                let au = el("Au")?;
                (cubic(4.0782), FCC.iter().map(|&p| at(au, p)).collect())
            }
            "Cu" => {
                let cu = el("Cu")?;
                (cubic(3.6149), FCC.iter().map(|&p| at(cu, p)).collect())
            }
            other => return Err(CrystalError::UnknownStructure(other.to_owned())),
        };
        Ok(Crystal { name: canonical.to_owned(), lattice, basis, thermal: Vec::new() })
    }

    /// Cell volume, Å³.
    pub fn volume(&self) -> f64 {
        det(&self.lattice).abs()
    }

    /// Cartesian position of fractional coordinates `f`.
    pub fn cartesian(&self, f: [f64; 3]) -> [f64; 3] {
        let l = &self.lattice;
        std::array::from_fn(|k| f[0] * l[0][k] + f[1] * l[1][k] + f[2] * l[2][k])
    }

    /// The smallest orthogonal box with z along the lattice direction
    /// `[u v w]` and x, y along lattice vectors, filled with the crystal's
    /// atoms (each atom once, wrapped into the box).
    pub fn orthogonal_cell(&self, zone: [i32; 3]) -> Result<OrthogonalCell, CrystalError> {
        const MAX: i32 = 8;
        if self.volume() < 1e-9 {
            return Err(CrystalError::Degenerate);
        }
        let [u, v, w] = zone;
        let none = CrystalError::NoOrthogonalCell { u, v, w, max: MAX };
        let g = gcd(gcd(u, v), w);
        if g == 0 {
            return Err(none);
        }
        let axis = [u / g, v / g, w / g];
        let c = self.cartesian(axis.map(f64::from));
        let candidates = self.lattice_vectors(MAX);
        let perpendicular = |a: &[f64; 3], b: &[f64; 3]| dot(a, b).abs() < 1e-6 * norm(a) * norm(b);
        let shortest = |keep: &dyn Fn(&[f64; 3]) -> bool| {
            candidates.iter().filter(|(_, vec)| keep(vec)).min_by(|a, b| order(&a.1, &b.1)).map(|(i, vec)| (*i, *vec))
        };
        let (ix, x) = shortest(&|vec| perpendicular(vec, &c)).ok_or(none)?;
        let (iy, mut y) = shortest(&|vec| perpendicular(vec, &c) && perpendicular(vec, &x))
            .ok_or(CrystalError::NoOrthogonalCell { u, v, w, max: MAX })?;
        let mut iy = iy;
        if dot(&cross(&x, &y), &c) < 0.0 {
            y = y.map(|e| -e);
            iy = iy.map(|e| -e);
        }
        let lengths = [norm(&x), norm(&y), norm(&c)];
        let unit = [x.map(|e| e / lengths[0]), y.map(|e| e / lengths[1]), c.map(|e| e / lengths[2])];
        let ratio = (lengths[0] * lengths[1] * lengths[2] / self.volume()).round() as usize;
        // Every lattice point inside the box is an integer combination of
        // the box's three edge vectors' indices with coefficients in [0, 1),
        // so translations bounded by the sum of their absolute indices
        // cover it.
        let reach = (0..3).map(|k| ix[k].abs() + iy[k].abs() + axis[k].abs()).collect::<Vec<_>>();
        let mut atoms: Vec<Atom> = Vec::new();
        for i in -reach[0]..=reach[0] {
            for j in -reach[1]..=reach[1] {
                for k in -reach[2]..=reach[2] {
                    for site in &self.basis {
                        let f = [
                            site.position[0] + f64::from(i),
                            site.position[1] + f64::from(j),
                            site.position[2] + f64::from(k),
                        ];
                        let p = self.cartesian(f);
                        let mut q = [0.0; 3];
                        let mut inside = true;
                        for d in 0..3 {
                            let mut t = dot(&p, &unit[d]) / lengths[d];
                            // Snap rounding noise at the faces onto the lower face.
                            if t.abs() < 1e-9 || (t - 1.0).abs() < 1e-9 {
                                t = if t.abs() < 1e-9 { 0.0 } else { 1.0 };
                            }
                            inside &= (0.0..1.0).contains(&t);
                            q[d] = t * lengths[d];
                        }
                        if inside && !atoms.iter().any(|a| distance(&a.position, &q) < 1e-6) {
                            atoms.push(Atom { element: site.element, position: q });
                        }
                    }
                }
            }
        }
        let expected = ratio * self.basis.len();
        if atoms.len() != expected {
            return Err(CrystalError::AtomCount { expected, found: atoms.len() });
        }
        atoms.sort_by(|a, b| order(&a.position, &b.position));
        Ok(OrthogonalCell { lengths, atoms })
    }

    /// Lattice vectors with indices in `[-max, max]`, but not zero.
    fn lattice_vectors(&self, max: i32) -> Vec<([i32; 3], [f64; 3])> {
        let mut out = Vec::new();
        for i in -max..=max {
            for j in -max..=max {
                for k in -max..=max {
                    if (i, j, k) != (0, 0, 0) {
                        out.push(([i, j, k], self.cartesian([f64::from(i), f64::from(j), f64::from(k)])));
                    }
                }
            }
        }
        out
    }
}

/// Parse a zone axis: three digits (`001`, `110`) or three comma-separated
/// integers (`1,-1,0`).
pub fn parse_zone_axis(text: &str) -> Result<[i32; 3], CrystalError> {
    let bad = || CrystalError::BadZoneAxis(text.to_owned());
    let t = text.trim().trim_start_matches('[').trim_end_matches(']');
    let parts: Vec<i32> = if t.contains(',') || t.contains(' ') {
        t.split([',', ' '])
            .filter(|p| !p.is_empty())
            .map(|p| p.trim().parse().map_err(|_| bad()))
            .collect::<Result<_, _>>()?
    } else {
        t.chars().map(|c| c.to_digit(10).map(|d| d as i32).ok_or_else(bad)).collect::<Result<_, _>>()?
    };
    match parts[..] {
        [u, v, w] if (u, v, w) != (0, 0, 0) => Ok([u, v, w]),
        _ => Err(bad()),
    }
}

/// Shorter first; among equal lengths, a fixed order of the components so
/// the choice never depends on the search order.
fn order(a: &[f64; 3], b: &[f64; 3]) -> std::cmp::Ordering {
    let key = |v: &[f64; 3]| ((norm(v) * 1e6).round() as i64, v.map(|e| -(e * 1e6).round() as i64));
    key(a).cmp(&key(b))
}

fn gcd(a: i32, b: i32) -> i32 {
    if b == 0 { a.abs() } else { gcd(b, a % b) }
}

fn dot(a: &[f64; 3], b: &[f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn cross(a: &[f64; 3], b: &[f64; 3]) -> [f64; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

fn norm(a: &[f64; 3]) -> f64 {
    dot(a, a).sqrt()
}

fn distance(a: &[f64; 3], b: &[f64; 3]) -> f64 {
    norm(&[a[0] - b[0], a[1] - b[1], a[2] - b[2]])
}

fn det(m: &[[f64; 3]; 3]) -> f64 {
    dot(&m[0], &cross(&m[1], &m[2]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cubic_crystals_along_001_keep_their_cell() {
        for (name, atoms, a) in [("Si", 8, 5.4310), ("GaAs", 8, 5.6533), ("SrTiO3", 5, 3.905), ("Au", 4, 4.0782)] {
            let cell = Crystal::built_in(name).unwrap().orthogonal_cell([0, 0, 1]).unwrap();
            assert_eq!(cell.atoms.len(), atoms, "{name}");
            for l in cell.lengths {
                assert!((l - a).abs() < 1e-9, "{name}: {:?}", cell.lengths);
            }
        }
    }

    /// Cubic [110]: a box a√2 × a × a√2 holding twice the conventional cell.
    #[test]
    fn silicon_along_110_is_a_root_two_box_of_sixteen_atoms() {
        let cell = Crystal::built_in("si").unwrap().orthogonal_cell([1, 1, 0]).unwrap();
        let a = 5.4310;
        let mut l = cell.lengths;
        l[..2].sort_by(f64::total_cmp);
        assert!((l[0] - a).abs() < 1e-9 && (l[1] - a * 2f64.sqrt()).abs() < 1e-9, "{:?}", cell.lengths);
        assert!((cell.lengths[2] - a * 2f64.sqrt()).abs() < 1e-9);
        assert_eq!(cell.atoms.len(), 16);
    }

    /// Hexagonal MoS2 along [001]: the rectangle a × a√3 holds two
    /// hexagonal cells, 12 atoms; every Mo has six S neighbours at 2.41 Å.
    #[test]
    fn hexagonal_mos2_becomes_a_rectangle_with_right_bond_lengths() {
        let cell = Crystal::built_in("MoS2").unwrap().orthogonal_cell([0, 0, 1]).unwrap();
        assert_eq!(cell.atoms.len(), 12);
        let (a, c) = (3.160, 12.294);
        assert!((cell.lengths[0] - a).abs() < 1e-9 && (cell.lengths[1] - a * 3f64.sqrt()).abs() < 1e-9);
        assert!((cell.lengths[2] - c).abs() < 1e-9);
        let mo = Element::from_symbol("Mo").unwrap();
        for m in cell.atoms.iter().filter(|a| a.element == mo) {
            let mut near = 0;
            for s in cell.atoms.iter().filter(|a| a.element != mo) {
                for dx in [-1.0, 0.0, 1.0] {
                    for dy in [-1.0, 0.0, 1.0] {
                        let p =
                            [s.position[0] + dx * cell.lengths[0], s.position[1] + dy * cell.lengths[1], s.position[2]];
                        if (distance(&p, &m.position) - 2.416).abs() < 0.01 {
                            near += 1;
                        }
                    }
                }
            }
            assert_eq!(near, 6, "Mo at {:?}", m.position);
        }
    }

    #[test]
    fn every_built_in_crystal_orients_along_low_index_axes() {
        for name in BUILT_IN {
            let crystal = Crystal::built_in(name).unwrap();
            for zone in [[0, 0, 1], [1, 0, 0], [1, 1, 0]] {
                let cell = crystal.orthogonal_cell(zone).unwrap_or_else(|e| panic!("{name} {zone:?}: {e}"));
                let ratio = cell.lengths.iter().product::<f64>() / crystal.volume();
                assert_eq!(cell.atoms.len() as f64, ratio.round() * crystal.basis.len() as f64, "{name} {zone:?}");
            }
        }
    }

    #[test]
    fn zone_axes_parse_in_both_spellings_and_nonsense_is_refused() {
        assert_eq!(parse_zone_axis("001").unwrap(), [0, 0, 1]);
        assert_eq!(parse_zone_axis("[1,-1,0]").unwrap(), [1, -1, 0]);
        for bad in ["000", "01", "abc", "1,2"] {
            assert!(parse_zone_axis(bad).is_err(), "{bad}");
        }
        assert!(matches!(Crystal::built_in("Unobtainium"), Err(CrystalError::UnknownStructure(_))));
    }
}
