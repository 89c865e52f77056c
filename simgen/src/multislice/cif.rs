//! Crystals from CIF files: the cell, the atom sites in fractional
//! coordinates and the symmetry operations that complete them (the
//! Crystallographic Information File of S. R. Hall, F. H. Allen and I. D.
//! Brown, Acta Cryst. A47, 655 (1991); tag names of the IUCr core
//! dictionary, old `_symmetry_equiv_pos_as_xyz` and new
//! `_space_group_symop_operation_xyz` spellings alike).
//!
//! Enough of CIF for crystal structures as databases publish them (COD,
//! ICSD, Materials Project exports): one data block, `loop_`s, quoted
//! values, uncertainties such as `5.4310(2)`. Partial occupancies are
//! refused rather than guessed.

use super::crystal::{Atom, Crystal};
use super::elements::Element;

/// A CIF that cannot be used, with the line (1-based) where it went wrong.
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

/// One value and the line it came from.
#[derive(Debug, Clone)]
struct Value {
    text: String,
    line: usize,
}

/// Parse CIF `text` (from `file`, for messages) into a crystal.
pub fn parse(text: &str, file: &str) -> Result<Crystal, CifError> {
    let err = |line: usize, reason: String| CifError { file: file.to_owned(), line, reason };
    let tokens = tokenize(text).map_err(|(line, reason)| err(line, reason))?;
    let mut items: Vec<(String, Value)> = Vec::new();
    let mut loops: Vec<(Vec<String>, Vec<Value>, usize)> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        let lower = t.text.to_ascii_lowercase();
        if lower == "loop_" {
            let start = t.line;
            let mut names = Vec::new();
            i += 1;
            while i < tokens.len() && tokens[i].text.starts_with('_') {
                names.push(tokens[i].text.to_ascii_lowercase());
                i += 1;
            }
            let mut values = Vec::new();
            while i < tokens.len() && !is_keyword(&tokens[i].text) {
                values.push(tokens[i].clone());
                i += 1;
            }
            if names.is_empty() || values.len() % names.len() != 0 {
                return Err(err(start, format!("a loop of {} names holds {} values", names.len(), values.len())));
            }
            loops.push((names, values, start));
        } else if lower.starts_with('_') {
            let value = tokens
                .get(i + 1)
                .filter(|v| !is_keyword(&v.text))
                .ok_or_else(|| err(t.line, format!("{} has no value", t.text)))?;
            items.push((lower, value.clone()));
            i += 2;
        } else {
            // data_ headers and anything else outside items and loops.
            i += 1;
        }
    }
    let number = |name: &str| -> Result<f64, CifError> {
        let (_, v) = items.iter().find(|(n, _)| n == name).ok_or_else(|| err(0, format!("no {name}")))?;
        parse_number(&v.text).ok_or_else(|| err(v.line, format!("{name} {:?} is not a number", v.text)))
    };
    let lengths = [number("_cell_length_a")?, number("_cell_length_b")?, number("_cell_length_c")?];
    let angles = [number("_cell_angle_alpha")?, number("_cell_angle_beta")?, number("_cell_angle_gamma")?];
    let lattice =
        lattice(lengths, angles).ok_or_else(|| err(0, format!("cell {lengths:?} {angles:?} has no volume")))?;
    let symops_loop = loops.iter().find(|(names, ..)| {
        names.iter().any(|n| n == "_symmetry_equiv_pos_as_xyz" || n == "_space_group_symop_operation_xyz")
    });
    let mut symops = vec![SymOp::IDENTITY];
    if let Some((names, values, _)) = symops_loop {
        let column = names
            .iter()
            .position(|n| n == "_symmetry_equiv_pos_as_xyz" || n == "_space_group_symop_operation_xyz")
            .unwrap_or(0);
        symops = values
            .chunks(names.len())
            .map(|row| {
                SymOp::parse(&row[column].text).ok_or_else(|| {
                    err(row[column].line, format!("symmetry operation {:?} does not parse", row[column].text))
                })
            })
            .collect::<Result<_, _>>()?;
    }
    let (names, values, start) = loops
        .iter()
        .find(|(names, ..)| names.iter().any(|n| n == "_atom_site_fract_x"))
        .ok_or_else(|| err(0, "no atom sites (a loop with _atom_site_fract_x)".into()))?;
    let col = |name: &str| names.iter().position(|n| n == name);
    let (Some(x), Some(y), Some(z)) = (col("_atom_site_fract_x"), col("_atom_site_fract_y"), col("_atom_site_fract_z"))
    else {
        return Err(err(*start, "the atom-site loop needs _atom_site_fract_x, _y and _z".into()));
    };
    let species = col("_atom_site_type_symbol")
        .or(col("_atom_site_label"))
        .ok_or_else(|| err(*start, "atom sites need _atom_site_type_symbol or _atom_site_label".into()))?;
    let occupancy = col("_atom_site_occupancy");
    let mut basis: Vec<Atom> = Vec::new();
    for row in values.chunks(names.len()) {
        let line = row[0].line;
        let element = element_of(&row[species].text)
            .ok_or_else(|| err(line, format!("{:?} names no element", row[species].text)))?;
        if let Some(o) = occupancy {
            let occ = parse_number(&row[o].text)
                .ok_or_else(|| err(line, format!("occupancy {:?} is not a number", row[o].text)))?;
            if (occ - 1.0).abs() > 1e-3 {
                return Err(err(line, format!("site occupancy {occ}: partially occupied sites are not supported")));
            }
        }
        let mut f = [0.0; 3];
        for (k, c) in [x, y, z].into_iter().enumerate() {
            f[k] = parse_number(&row[c].text)
                .ok_or_else(|| err(line, format!("coordinate {:?} is not a number", row[c].text)))?;
        }
        for op in &symops {
            let p = op.apply(f).map(|v| v.rem_euclid(1.0));
            let p = p.map(|v| if (v - 1.0).abs() < 1e-6 { 0.0 } else { v });
            if !basis.iter().any(|a| periodic_distance(&a.position, &p) < 1e-4) {
                basis.push(Atom { element, position: p });
            } else if let Some(other) = basis.iter().find(|a| periodic_distance(&a.position, &p) < 1e-4)
                && other.element != element
            {
                return Err(err(line, format!("{element} and {} share the site {p:?}", other.element)));
            }
        }
    }
    let name = std::path::Path::new(file).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(Crystal { name, lattice, basis })
}

fn is_keyword(t: &str) -> bool {
    t.starts_with('_') || t.eq_ignore_ascii_case("loop_") || t.to_ascii_lowercase().starts_with("data_")
}

/// `5.4310(2)` → 5.431; `.`/`?` (unknown) → None.
fn parse_number(t: &str) -> Option<f64> {
    let t = t.split('(').next()?.trim();
    t.parse::<f64>().ok().filter(|v| v.is_finite())
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

/// A symmetry operation x' = R x + t in fractional coordinates.
#[derive(Debug, Clone, Copy, PartialEq)]
struct SymOp {
    rotation: [[f64; 3]; 3],
    translation: [f64; 3],
}

impl SymOp {
    const IDENTITY: SymOp =
        SymOp { rotation: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], translation: [0.0; 3] };

    /// `-x+1/2, y, z+0.5` and the like.
    fn parse(text: &str) -> Option<SymOp> {
        let parts: Vec<&str> = text.split(',').collect();
        if parts.len() != 3 {
            return None;
        }
        let mut op = SymOp { rotation: [[0.0; 3]; 3], translation: [0.0; 3] };
        for (row, part) in parts.iter().enumerate() {
            let s: String = part.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase();
            if s.is_empty() {
                return None;
            }
            let mut sign = 1.0;
            let mut i = 0;
            let b = s.as_bytes();
            while i < b.len() {
                match b[i] {
                    b'+' => {
                        sign = 1.0;
                        i += 1;
                    }
                    b'-' => {
                        sign = -1.0;
                        i += 1;
                    }
                    b'x' | b'y' | b'z' => {
                        op.rotation[row][usize::from(b[i] - b'x')] += sign;
                        sign = 1.0;
                        i += 1;
                    }
                    _ => {
                        let end = s[i..].find(['+', '-', 'x', 'y', 'z']).map_or(s.len(), |e| i + e);
                        let term = &s[i..end];
                        let value = match term.split_once('/') {
                            Some((n, d)) => n.parse::<f64>().ok()? / d.parse::<f64>().ok()?,
                            None => term.parse::<f64>().ok()?,
                        };
                        if !value.is_finite() {
                            return None;
                        }
                        // A number times an axis (`2x`) is not a symmetry operation.
                        if end < b.len() && matches!(b[end], b'x' | b'y' | b'z') {
                            return None;
                        }
                        op.translation[row] += sign * value;
                        sign = 1.0;
                        i = end;
                    }
                }
            }
        }
        Some(op)
    }

    fn apply(&self, f: [f64; 3]) -> [f64; 3] {
        std::array::from_fn(|r| (0..3).map(|c| self.rotation[r][c] * f[c]).sum::<f64>() + self.translation[r])
    }
}

/// Whitespace-separated values, `'quoted'` or `"quoted"` values, `;`
/// text fields, `#` comments; each with its line.
fn tokenize(text: &str) -> Result<Vec<Value>, (usize, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((index, line)) = lines.next() {
        let number = index + 1;
        if let Some(first) = line.strip_prefix(';') {
            // A text field runs to the next line starting with ';'.
            let mut field = first.to_owned();
            loop {
                match lines.next() {
                    Some((_, l)) if l.starts_with(';') => break,
                    Some((_, l)) => {
                        field.push('\n');
                        field.push_str(l);
                    }
                    None => return Err((number, "a ; text field is never closed".into())),
                }
            }
            out.push(Value { text: field, line: number });
            continue;
        }
        let mut rest = line.trim_start();
        while !rest.is_empty() {
            if rest.starts_with('#') {
                break;
            }
            let quote = rest.chars().next().filter(|c| *c == '\'' || *c == '"');
            let (token, after) = match quote {
                Some(q) => {
                    // A quote closes only when followed by whitespace or the line's end.
                    let body = &rest[1..];
                    let close = body
                        .char_indices()
                        .find(|&(i, c)| c == q && body[i + 1..].chars().next().is_none_or(char::is_whitespace))
                        .map(|(i, _)| i)
                        .ok_or((number, format!("unclosed quote in {line:?}")))?;
                    (&body[..close], &body[close + 1..])
                }
                None => {
                    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                    (&rest[..end], &rest[end..])
                }
            };
            out.push(Value { text: token.to_owned(), line: number });
            rest = after.trim_start();
        }
    }
    Ok(out)
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
    fn symmetry_operations_parse_in_their_usual_spellings() {
        let op = SymOp::parse("-x+1/2, y-z, 0.5+z").unwrap();
        assert_eq!(op.apply([0.1, 0.2, 0.3]), [0.4, 0.2 - 0.3, 0.8]);
        assert!(SymOp::parse("x, y").is_none());
        assert!(SymOp::parse("2x, y, z").is_none());
        assert_eq!(element_of("Sr2+").unwrap().symbol(), "Sr");
        assert_eq!(element_of("S1").unwrap().symbol(), "S");
        assert_eq!(element_of("O2-").unwrap().symbol(), "O");
    }
}
