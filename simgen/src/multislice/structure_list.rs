//! A list of structures and zone axes, one dataset over all of them
//! (`simgen multislice --structures LIST`), the way Laanait et al. trained
//! on many Materials Project structures seen along several orientations.
//!
//! The list is text, one structure per line: a CIF file (a path ending in
//! `.cif`, relative to the list's own directory) or a built-in name, then
//! optionally the zone axes to see it along; a line without axes takes the
//! run's `--zone-axis`. Blank lines and `#` comments are skipped.
//!
//! ```text
//! # structure           zone axes
//! cifs/mp-5229.cif      001 110 111
//! cifs/mp-2657.cif      1,-1,0
//! Si
//! ```
//!
//! Each (structure, zone axis) pair gets a contiguous block of the run's
//! sample indices ([`sample_blocks`]), so a rank meets each pair once and
//! builds its tables once.

use std::ops::Range;
use std::path::{Path, PathBuf};

use super::cif::{self, CifError};
use super::crystal::{Crystal, CrystalError, parse_zone_axis};

/// One line of a structure list, before any file is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListLine {
    /// 1-based line number in the list.
    pub line: usize,
    /// The structure.
    pub structure: StructureRef,
    /// Zone axes; empty: the run's default.
    pub zones: Vec<[i32; 3]>,
}

/// Where a listed structure comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StructureRef {
    /// A built-in crystal's name.
    BuiltIn(String),
    /// A CIF file (already resolved against the list's directory).
    Cif(PathBuf),
}

/// One (structure, zone axis) pair of a loaded list.
#[derive(Debug, Clone)]
pub struct ListedStructure {
    /// The crystal.
    pub crystal: Crystal,
    /// Where it came from: the CIF's path as the list gives it, or the
    /// built-in name.
    pub source: String,
    /// Zone axis along the beam.
    pub zone: [i32; 3],
}

/// A structure list that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ListError {
    /// The list could not be read.
    #[error("reading --structures {path}: {source}")]
    Read {
        /// The list.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The list names nothing.
    #[error("--structures {0} lists no structure")]
    Empty(PathBuf),
    /// A line's structure or zone axis is wrong.
    #[error("--structures {path} line {line}: {source}")]
    Line {
        /// The list.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// Why.
        source: CrystalError,
    },
    /// A listed CIF could not be read.
    #[error("--structures {path} line {line}: reading {cif}: {source}")]
    ReadCif {
        /// The list.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The CIF.
        cif: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A listed CIF could not be parsed.
    #[error("--structures {path} line {line}: {source}")]
    Cif {
        /// The list.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// Why.
        source: CifError,
    },
}

/// Parse a list's text; CIF paths are resolved against `base` (the list's
/// directory). No file is read. On an error, the 1-based line and why.
pub fn parse(text: &str, base: &Path) -> Result<Vec<ListLine>, (usize, CrystalError)> {
    let mut lines = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let content = raw.split_once('#').map_or(raw, |(before, _comment)| before);
        let mut fields = content.split_whitespace();
        let Some(name) = fields.next() else { continue };
        let zones = fields.map(parse_zone_axis).collect::<Result<Vec<_>, _>>().map_err(|e| (line, e))?;
        let structure = if name.to_ascii_lowercase().ends_with(".cif") {
            StructureRef::Cif(base.join(name))
        } else {
            // Checked here so a misspelt name fails on its line, not after
            // every CIF before it has been read.
            Crystal::built_in(name).map_err(|e| (line, e))?;
            StructureRef::BuiltIn(name.to_owned())
        };
        lines.push(ListLine { line, structure, zones });
    }
    Ok(lines)
}

/// Read the list at `path` and every crystal it names; each listed zone
/// axis (or `default_zone`) becomes one pair, in list order.
pub fn load(path: &Path, default_zone: [i32; 3]) -> Result<Vec<ListedStructure>, ListError> {
    let text = std::fs::read_to_string(path).map_err(|source| ListError::Read { path: path.to_owned(), source })?;
    let base = path.parent().unwrap_or(Path::new("."));
    let lines = parse(&text, base).map_err(|(line, source)| ListError::Line { path: path.to_owned(), line, source })?;
    let mut listed = Vec::new();
    for ListLine { line, structure, zones } in lines {
        let (crystal, source) = match structure {
            StructureRef::BuiltIn(name) => {
                let crystal = Crystal::built_in(&name).map_err(|source| ListError::Line {
                    path: path.to_owned(),
                    line,
                    source,
                })?;
                (crystal, name)
            }
            StructureRef::Cif(cif_path) => {
                let text = std::fs::read_to_string(&cif_path).map_err(|source| ListError::ReadCif {
                    path: path.to_owned(),
                    line,
                    cif: cif_path.clone(),
                    source,
                })?;
                let shown = cif_path.display().to_string();
                let crystal = cif::parse(&text, &shown).map_err(|source| ListError::Cif {
                    path: path.to_owned(),
                    line,
                    source,
                })?;
                (crystal, shown)
            }
        };
        let zones = if zones.is_empty() { vec![default_zone] } else { zones };
        listed.extend(zones.into_iter().map(|zone| ListedStructure {
            crystal: crystal.clone(),
            source: source.clone(),
            zone,
        }));
    }
    if listed.is_empty() {
        return Err(ListError::Empty(path.to_owned()));
    }
    Ok(listed)
}

/// The sample indices of each of `pairs` pairs out of `samples`: contiguous
/// blocks in order, their lengths differing by at most one. `None` when
/// there are fewer samples than pairs (a pair would get none).
pub fn sample_blocks(samples: u64, pairs: usize) -> Option<Vec<Range<u64>>> {
    let pairs_u64 = pairs as u64;
    if pairs == 0 || samples < pairs_u64 {
        return None;
    }
    Some((0..pairs_u64).map(|p| (p * samples / pairs_u64)..((p + 1) * samples / pairs_u64)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_name_cifs_relative_to_the_list_and_built_ins_by_name() {
        let text = "# structure  zones\n\ncifs/a.cif 001 1,-1,0  # two axes\nSi\n  GaAs 110\n";
        let lines = parse(text, Path::new("/data/lists")).unwrap();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0].line, 3);
        assert_eq!(lines[0].structure, StructureRef::Cif(PathBuf::from("/data/lists/cifs/a.cif")));
        assert_eq!(lines[0].zones, vec![[0, 0, 1], [1, -1, 0]]);
        assert_eq!(lines[1].structure, StructureRef::BuiltIn("Si".into()));
        assert!(lines[1].zones.is_empty());
        assert_eq!((lines[2].line, lines[2].zones.clone()), (5, vec![[1, 1, 0]]));
        // Absolute CIF paths stay as they are.
        let abs = parse("/x/b.CIF", Path::new("/data")).unwrap();
        assert_eq!(abs[0].structure, StructureRef::Cif(PathBuf::from("/x/b.CIF")));
    }

    #[test]
    fn a_bad_name_or_axis_fails_on_its_line() {
        let (line, e) = parse("Si\nSilicon 001\n", Path::new(".")).unwrap_err();
        assert_eq!(line, 2);
        assert!(matches!(e, CrystalError::UnknownStructure(_)), "{e}");
        let (line, e) = parse("Si 001\nAu 000\n", Path::new(".")).unwrap_err();
        assert_eq!(line, 2);
        assert!(matches!(e, CrystalError::BadZoneAxis(_)), "{e}");
    }

    #[test]
    fn blocks_cover_every_sample_once_in_order_and_never_leave_a_pair_empty() {
        for pairs in 1..20usize {
            for samples in 0..60u64 {
                let Some(blocks) = sample_blocks(samples, pairs) else {
                    assert!(samples < pairs as u64);
                    continue;
                };
                assert_eq!(blocks.len(), pairs);
                assert_eq!(blocks[0].start, 0);
                assert_eq!(blocks[pairs - 1].end, samples);
                for w in blocks.windows(2) {
                    assert_eq!(w[0].end, w[1].start);
                }
                let (min, max) = blocks.iter().fold((u64::MAX, 0), |(lo, hi), b| {
                    let n = b.end - b.start;
                    (lo.min(n), hi.max(n))
                });
                assert!(min >= 1 && max - min <= 1, "{samples} over {pairs}: {blocks:?}");
            }
        }
        assert_eq!(sample_blocks(5, 0), None);
    }
}
