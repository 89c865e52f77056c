//! Crystal structures in CIF files (the Crystallographic Information File
//! of S. R. Hall, F. H. Allen and I. D. Brown, Acta Cryst. A47, 655 (1991);
//! tag names of the IUCr core dictionary, old `_symmetry_equiv_pos_as_xyz`
//! and new `_space_group_symop_operation_xyz` spellings alike): the cell,
//! the atom sites in fractional coordinates and the symmetry operations. A
//! pure parser of text; what the sites mean (elements, the full cell) is
//! the caller's.
//!
//! Enough of CIF for structures as databases publish them (COD, ICSD,
//! Materials Project exports): one data block, `loop_`s, quoted values,
//! `;` text fields, uncertainties such as `5.4310(2)`. Partially occupied
//! sites are refused rather than guessed.
//!
//! ```
//! let text = "data_x\n_cell_length_a 5.431\n_cell_length_b 5.431\n_cell_length_c 5.431\n\
//!     _cell_angle_alpha 90\n_cell_angle_beta 90\n_cell_angle_gamma 90\n\
//!     loop_\n_atom_site_label\n_atom_site_fract_x\n_atom_site_fract_y\n_atom_site_fract_z\nSi1 0 0 0\n";
//! let cif = formats::cif::parse(text).unwrap();
//! assert_eq!(cif.sites[0].species, "Si1");
//! assert_eq!(cif.symops.len(), 1);
//! ```

/// A CIF that cannot be used, with the line (1-based; 0 for the file as a
/// whole) where it went wrong.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct CifError {
    /// Line, 1-based (0: the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

/// What a CIF says about a crystal.
#[derive(Debug, Clone, PartialEq)]
pub struct CifStructure {
    /// a, b, c, Å.
    pub lengths: [f64; 3],
    /// α, β, γ, degrees.
    pub angles: [f64; 3],
    /// The asymmetric unit.
    pub sites: Vec<CifSite>,
    /// Symmetry operations (the identity alone if the file lists none).
    pub symops: Vec<SymOp>,
}

/// One atom site.
#[derive(Debug, Clone, PartialEq)]
pub struct CifSite {
    /// `_atom_site_type_symbol`, else `_atom_site_label` (`Si`, `Sr2+`, `O1`).
    pub species: String,
    /// Fractional coordinates.
    pub fract: [f64; 3],
    /// Mean-square thermal displacement U along each axis, Å², from
    /// `_atom_site_U_iso_or_equiv`, or `_atom_site_B_iso_or_equiv` as
    /// B / (8π²) (International Tables for Crystallography Vol. C,
    /// §6.1.1.3); `None` when the file gives neither or `?`.
    pub u_iso: Option<f64>,
    /// Line of the site, for messages.
    pub line: usize,
}

/// One value and the line it came from.
#[derive(Debug, Clone)]
struct Value {
    text: String,
    line: usize,
    /// Quoted or a text field: never a keyword, whatever it spells.
    quoted: bool,
}

impl Value {
    fn is_keyword(&self) -> bool {
        !self.quoted && is_keyword(&self.text)
    }
}

/// Parse CIF `text`.
pub fn parse(text: &str) -> Result<CifStructure, CifError> {
    let err = |line: usize, reason: String| CifError { line, reason };
    let tokens = tokenize(text).map_err(|(line, reason)| err(line, reason))?;
    let mut items: Vec<(String, Value)> = Vec::new();
    let mut loops: Vec<(Vec<String>, Vec<Value>, usize)> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        let lower = t.text.to_ascii_lowercase();
        if !t.quoted && lower == "loop_" {
            let start = t.line;
            let mut names = Vec::new();
            i += 1;
            while i < tokens.len() && !tokens[i].quoted && tokens[i].text.starts_with('_') {
                names.push(tokens[i].text.to_ascii_lowercase());
                i += 1;
            }
            let mut values = Vec::new();
            while i < tokens.len() && !tokens[i].is_keyword() {
                values.push(tokens[i].clone());
                i += 1;
            }
            if names.is_empty() || values.len() % names.len() != 0 {
                return Err(err(start, format!("a loop of {} names holds {} values", names.len(), values.len())));
            }
            loops.push((names, values, start));
        } else if !t.quoted && lower.starts_with('_') {
            let value = tokens
                .get(i + 1)
                .filter(|v| !v.is_keyword())
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
    let is_symop = |n: &String| n == "_symmetry_equiv_pos_as_xyz" || n == "_space_group_symop_operation_xyz";
    let mut symops = vec![SymOp::IDENTITY];
    if let Some((names, values, start)) = loops.iter().find(|(names, ..)| names.iter().any(is_symop)) {
        if values.is_empty() {
            return Err(err(*start, "the symmetry-operation loop lists no operations".into()));
        }
        let column = names.iter().position(is_symop).unwrap_or(0);
        symops = values
            .chunks(names.len())
            .map(|row| {
                let v = &row[column];
                SymOp::parse(&v.text)
                    .ok_or_else(|| err(v.line, format!("symmetry operation {:?} does not parse", v.text)))
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
    // U first: it is what a refinement reports; B is the older form.
    let thermal = col("_atom_site_u_iso_or_equiv")
        .map(|c| (c, 1.0))
        .or(col("_atom_site_b_iso_or_equiv").map(|c| (c, 1.0 / (8.0 * std::f64::consts::PI.powi(2)))));
    if values.is_empty() {
        return Err(err(*start, "the atom-site loop lists no sites".into()));
    }
    let mut sites = Vec::new();
    for row in values.chunks(names.len()) {
        let line = row[0].line;
        if let Some(o) = occupancy {
            let occ = parse_number(&row[o].text)
                .ok_or_else(|| err(line, format!("occupancy {:?} is not a number", row[o].text)))?;
            if (occ - 1.0).abs() > 1e-3 {
                return Err(err(line, format!("site occupancy {occ}: partially occupied sites are not supported")));
            }
        }
        let mut fract = [0.0; 3];
        for (k, c) in [x, y, z].into_iter().enumerate() {
            fract[k] = parse_number(&row[c].text)
                .ok_or_else(|| err(line, format!("coordinate {:?} is not a number", row[c].text)))?;
        }
        let u_iso = match thermal {
            Some((c, scale)) if !matches!(row[c].text.as_str(), "?" | ".") => {
                let value = parse_number(&row[c].text)
                    .filter(|v| *v >= 0.0)
                    .ok_or_else(|| err(line, format!("thermal displacement {:?} is not a number >= 0", row[c].text)))?;
                Some(value * scale)
            }
            _ => None,
        };
        sites.push(CifSite { species: row[species].text.clone(), fract, u_iso, line });
    }
    Ok(CifStructure { lengths, angles, sites, symops })
}

fn is_keyword(t: &str) -> bool {
    t.starts_with('_') || t.eq_ignore_ascii_case("loop_") || t.to_ascii_lowercase().starts_with("data_")
}

/// `5.4310(2)` → 5.431; `.`/`?` (unknown) → None.
fn parse_number(t: &str) -> Option<f64> {
    let t = t.split('(').next()?.trim();
    t.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// A symmetry operation x' = R x + t in fractional coordinates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SymOp {
    /// R, rows of the new coordinates.
    pub rotation: [[f64; 3]; 3],
    /// t.
    pub translation: [f64; 3],
}

impl SymOp {
    /// x, y, z.
    pub const IDENTITY: SymOp =
        SymOp { rotation: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], translation: [0.0; 3] };

    /// `-x+1/2, y, z+0.5` and the like; `None` if it is not one.
    pub fn parse(text: &str) -> Option<SymOp> {
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

    /// R f + t.
    pub fn apply(&self, f: [f64; 3]) -> [f64; 3] {
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
            out.push(Value { text: field, line: number, quoted: true });
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
            out.push(Value { text: token.to_owned(), line: number, quoted: quote.is_some() });
            rest = after.trim_start();
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symmetry_operations_parse_in_their_usual_spellings() {
        let op = SymOp::parse("-x+1/2, y-z, 0.5+z").unwrap();
        assert_eq!(op.apply([0.1, 0.2, 0.3]), [0.4, 0.2 - 0.3, 0.8]);
        assert!(SymOp::parse("x, y").is_none());
        assert!(SymOp::parse("2x, y, z").is_none());
        assert!(SymOp::parse("x, y, 1/0").is_none());
    }

    /// Found by the `cif` fuzz target: a symmetry loop with no rows gave a
    /// structure with no operations (so no atoms), and a quoted value
    /// spelling a keyword (`'data_x, y, z'`) ended its loop.
    #[test]
    fn empty_loops_are_errors_and_quoted_values_are_never_keywords() {
        let empty = include_str!("../tests/data/cif-empty-symops.cif");
        let e = parse(empty).unwrap_err();
        assert!(e.reason.contains("lists no operations") && e.line == 8, "{e}");
        let head = "data_x\n_cell_length_a 3\n_cell_length_b 3\n_cell_length_c 3\n_cell_angle_alpha 90\n\
                    _cell_angle_beta 90\n_cell_angle_gamma 90\n";
        let quoted = format!(
            "{head}loop_\n_symmetry_equiv_pos_as_xyz\n'data_x, y, z' 'x, y, z+1/2'\n\
             loop_\n_atom_site_label\n_atom_site_fract_x\n_atom_site_fract_y\n_atom_site_fract_z\nSi 0 0 0\n"
        );
        let e = parse(&quoted).unwrap_err();
        assert!(e.reason.contains("data_x, y, z") && e.reason.contains("does not parse"), "{e}");
        let no_sites =
            format!("{head}loop_\n_atom_site_label\n_atom_site_fract_x\n_atom_site_fract_y\n_atom_site_fract_z\n");
        assert!(parse(&no_sites).unwrap_err().reason.contains("no sites"));
    }

    #[test]
    fn thermal_displacements_come_from_u_iso_or_b_iso() {
        let head = "data_x\n_cell_length_a 3\n_cell_length_b 3\n_cell_length_c 3\n_cell_angle_alpha 90\n\
                    _cell_angle_beta 90\n_cell_angle_gamma 90\nloop_\n_atom_site_label\n_atom_site_fract_x\n\
                    _atom_site_fract_y\n_atom_site_fract_z\n";
        let u = parse(&format!("{head}_atom_site_U_iso_or_equiv\nSr 0 0 0 0.0061(2)\nO 0.5 0 0 ?\n")).unwrap();
        assert_eq!(u.sites.iter().map(|s| s.u_iso).collect::<Vec<_>>(), [Some(0.0061), None]);
        let b = parse(&format!("{head}_atom_site_B_iso_or_equiv\nSr 0 0 0 0.5\n")).unwrap();
        let expected = 0.5 / (8.0 * std::f64::consts::PI.powi(2));
        assert!((b.sites[0].u_iso.unwrap() - expected).abs() < 1e-12);
        let none = parse(&format!("{head}Sr 0 0 0\n")).unwrap();
        assert_eq!(none.sites[0].u_iso, None);
        let e = parse(&format!("{head}_atom_site_U_iso_or_equiv\nSr 0 0 0 -0.01\n")).unwrap_err();
        assert!(e.reason.contains("-0.01") && e.line == 14, "{e}");
    }

    #[test]
    fn quotes_text_fields_and_comments_tokenize() {
        let t = tokenize("_a 'it''s here' # note\n;\nfree text\n;\n_b \"x, y\"").unwrap();
        let texts: Vec<&str> = t.iter().map(|v| v.text.as_str()).collect();
        assert_eq!(texts, ["_a", "it''s here", "\nfree text", "_b", "x, y"]);
        assert!(tokenize(";\nnever closed").is_err());
    }
}
