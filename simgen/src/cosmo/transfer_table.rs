//! A matter transfer function read from a Boltzmann code's table, the way
//! MUSIC and 2LPTic take one, and interpolated in k.
//!
//! Two layouts, told apart by the header:
//! - CAMB's `transfer_filename` output (`*_transfer_*.dat`): whitespace
//!   columns `k/h CDM baryon photon nu mass_nu total ...`, k in h/Mpc;
//!   the matter transfer is column 7 (`total`), normalised by CAMB to
//!   δ/k² of unit primordial curvature, so P(k) ∝ k^n_s T².
//! - CLASS's `*_tk.dat` (`format = class`): a comment line naming the
//!   columns as `1:k (h/Mpc) 2:d_g ...`; the matter transfer is `d_m`
//!   (or `d_tot` where CLASS writes no `d_m`), the density contrast δ
//!   itself, so T = δ/k².
//!
//! The table is normalised to T = 1 at its smallest k (the spectrum is
//! normalised to σ8 afterwards, so only its shape counts).

use std::path::{Path, PathBuf};

/// Why a transfer table cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TransferTableError {
    /// The file could not be read.
    #[error("reading transfer table {path}: {source}")]
    Read {
        /// The table.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A line of the file is not what its layout says.
    #[error("transfer table {path}, line {line}: {why}")]
    Line {
        /// The table.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// The file as a whole cannot serve.
    #[error("transfer table {path}: {why}")]
    Table {
        /// The table.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
}

/// Fewest rows a table may have: a spline through fewer is not a spectrum.
const MIN_ROWS: usize = 8;

/// A transfer function sampled at increasing k, interpolated by a natural
/// cubic spline in (ln k, ln T).
#[derive(Debug, Clone, PartialEq)]
pub struct TransferTable {
    source: String,
    ln_k: Vec<f64>,
    ln_t: Vec<f64>,
    /// Second derivatives of the spline at the knots.
    curvature: Vec<f64>,
}

impl TransferTable {
    /// Read and check the table at `path`.
    pub fn read(path: &Path) -> Result<Self, TransferTableError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| TransferTableError::Read { path: path.to_owned(), source })?;
        Self::parse(&text, path)
    }

    /// Parse a table's text; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, TransferTableError> {
        let line_error = |line: usize, why: String| TransferTableError::Line { path: path.to_owned(), line, why };
        let table_error = |why: String| TransferTableError::Table { path: path.to_owned(), why };
        let mut layout: Option<Layout> = None;
        let mut ks = Vec::new();
        let mut ts = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let number = index + 1;
            let trimmed = line.trim();
            if trimmed.is_empty() {
                continue;
            }
            if let Some(comment) = trimmed.strip_prefix('#') {
                if ks.is_empty()
                    && let Some(found) = Layout::of_class_header(comment).map_err(|why| line_error(number, why))?
                {
                    layout = Some(found);
                }
                continue;
            }
            let layout = *layout.get_or_insert(Layout::CAMB);
            let values = trimmed
                .split_whitespace()
                .map(|v| v.parse::<f64>().map_err(|_| line_error(number, format!("{v:?} is not a number"))))
                .collect::<Result<Vec<f64>, _>>()?;
            if values.len() <= layout.transfer_column {
                return Err(line_error(
                    number,
                    format!(
                        "{} columns; {} needs column {} ({}). Tables from CAMB (transfer_filename) and CLASS (format = class) are read",
                        values.len(),
                        layout.name,
                        layout.transfer_column + 1,
                        layout.column_name
                    ),
                ));
            }
            let (k, raw) = (values[0], values[layout.transfer_column]);
            if !(k.is_finite() && k > 0.0) {
                return Err(line_error(number, format!("k = {k} must be positive")));
            }
            if ks.last().is_some_and(|&last| k <= last) {
                return Err(line_error(number, format!("k = {k} does not increase")));
            }
            let t = if layout.divide_by_k_squared { raw / (k * k) } else { raw };
            if !(t.is_finite() && t != 0.0) {
                return Err(line_error(
                    number,
                    format!("{} = {raw} at k = {k}: the transfer must be non-zero", layout.column_name),
                ));
            }
            if ts.first().is_some_and(|&first: &f64| first.signum() != t.signum()) {
                return Err(line_error(number, format!("{} changes sign at k = {k}", layout.column_name)));
            }
            ks.push(k);
            ts.push(t);
        }
        if ks.len() < MIN_ROWS {
            return Err(table_error(format!("{} rows of data; at least {MIN_ROWS} are needed", ks.len())));
        }
        let t0 = ts[0];
        let ln_k: Vec<f64> = ks.iter().map(|k| k.ln()).collect();
        let ln_t: Vec<f64> = ts.iter().map(|t| (t / t0).ln()).collect();
        let curvature = natural_spline(&ln_k, &ln_t);
        Ok(TransferTable { source: path.display().to_string(), ln_k, ln_t, curvature })
    }

    /// Where the table came from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The largest k of the table (h/Mpc).
    pub fn k_max(&self) -> f64 {
        self.ln_k[self.ln_k.len() - 1].exp()
    }

    /// T(k), 1 at the table's smallest k. Below the table T is that of its
    /// first row (the transfer is flat on scales larger than the horizon
    /// at equality); above it the last interval's power law continues
    /// (only σ8's integral goes there: a generator refuses a box whose
    /// modes reach past the table).
    pub fn at(&self, k: f64) -> f64 {
        let n = self.ln_k.len();
        let x = k.ln();
        if x <= self.ln_k[0] {
            return self.ln_t[0].exp();
        }
        if x >= self.ln_k[n - 1] {
            let slope = (self.ln_t[n - 1] - self.ln_t[n - 2]) / (self.ln_k[n - 1] - self.ln_k[n - 2]);
            return (self.ln_t[n - 1] + slope * (x - self.ln_k[n - 1])).exp();
        }
        let hi = self.ln_k.partition_point(|&v| v < x).clamp(1, n - 1);
        let lo = hi - 1;
        let h = self.ln_k[hi] - self.ln_k[lo];
        let a = (self.ln_k[hi] - x) / h;
        let b = 1.0 - a;
        let y = a * self.ln_t[lo]
            + b * self.ln_t[hi]
            + ((a * a * a - a) * self.curvature[lo] + (b * b * b - b) * self.curvature[hi]) * h * h / 6.0;
        y.exp()
    }
}

/// Which column holds the matter transfer, and how it is normalised.
#[derive(Debug, Clone, Copy)]
struct Layout {
    name: &'static str,
    transfer_column: usize,
    column_name: &'static str,
    divide_by_k_squared: bool,
}

impl Layout {
    /// CAMB's `transfer_filename` columns (CAMB's `Transfer_SaveToFiles`).
    const CAMB: Layout =
        Layout { name: "CAMB's layout", transfer_column: 6, column_name: "total", divide_by_k_squared: false };

    /// The layout a CLASS header comment names (`1:k (h/Mpc)  2:d_g ...`),
    /// `None` for any other comment.
    fn of_class_header(comment: &str) -> Result<Option<Layout>, String> {
        if !comment.contains("1:k (h/Mpc)") {
            return Ok(None);
        }
        // Column names follow `N:`; a name may hold spaces (`k (h/Mpc)`).
        let mut columns: Vec<(usize, String)> = Vec::new();
        for token in comment.split_whitespace() {
            match token.split_once(':').and_then(|(n, name)| n.parse::<usize>().ok().map(|n| (n, name))) {
                Some((n, name)) => columns.push((n, name.to_owned())),
                None => {
                    if let Some(last) = columns.last_mut() {
                        last.1.push(' ');
                        last.1.push_str(token);
                    }
                }
            }
        }
        for (wanted, static_name) in [("d_m", "d_m"), ("d_tot", "d_tot")] {
            if let Some((n, _)) = columns.iter().find(|(_, name)| name == wanted) {
                return Ok(Some(Layout {
                    name: "CLASS's layout",
                    transfer_column: n - 1,
                    column_name: static_name,
                    divide_by_k_squared: true,
                }));
            }
        }
        Err("a CLASS header without a d_m or d_tot column (write the table with format = class)".into())
    }
}

/// Second derivatives of the natural cubic spline through (x, y) (zero
/// at both ends), by the tridiagonal solve of Press et al., Numerical
/// Recipes §3.3. Written out because it is twenty lines and the spline is
/// evaluated in the generator's innermost loop over modes.
fn natural_spline(x: &[f64], y: &[f64]) -> Vec<f64> {
    let n = x.len();
    let mut second = vec![0.0; n];
    let mut u = vec![0.0; n];
    for i in 1..n - 1 {
        let sig = (x[i] - x[i - 1]) / (x[i + 1] - x[i - 1]);
        let p = sig * second[i - 1] + 2.0;
        second[i] = (sig - 1.0) / p;
        let slope_change = (y[i + 1] - y[i]) / (x[i + 1] - x[i]) - (y[i] - y[i - 1]) / (x[i] - x[i - 1]);
        u[i] = (6.0 * slope_change / (x[i + 1] - x[i - 1]) - sig * u[i - 1]) / p;
    }
    second[n - 1] = 0.0;
    for i in (0..n - 1).rev() {
        second[i] = second[i] * second[i + 1] + u[i];
    }
    second
}

#[cfg(test)]
mod tests {
    use super::*;

    fn camb_text(rows: impl Iterator<Item = (f64, f64)>) -> String {
        let mut text = String::from(
            "#          k/h    CDM            baryon         photon         nu             mass_nu        total\n",
        );
        for (k, t) in rows {
            text.push_str(&format!("{k:e} {t:e} {t:e} 1 1 0 {t:e} {t:e} {t:e} -0.4 1 1 0\n"));
        }
        text
    }

    #[test]
    fn the_spline_reproduces_a_smooth_function_between_its_rows() {
        let f = |k: f64| 1.0 / (1.0 + (k / 0.05).powi(2)).sqrt();
        let rows = (0..120).map(|i| 10f64.powf(-4.0 + 5.0 * f64::from(i) / 119.0));
        let table = TransferTable::parse(&camb_text(rows.map(|k| (k, 3.0 * f(k)))), Path::new("t.dat")).unwrap();
        for i in 0..500 {
            let k = 10f64.powf(-3.9 + 4.8 * f64::from(i) / 499.0);
            assert!((table.at(k) / f(k) - 1.0).abs() < 1e-4, "k {k}: {} vs {}", table.at(k), f(k));
        }
        // Flat below the table; the last power law (k^-1) above.
        assert_eq!(table.at(1e-6), table.at(1e-4));
        assert!((table.at(100.0) / table.at(10.0) - 0.1).abs() < 1e-3);
    }

    #[test]
    fn a_class_table_is_read_from_its_named_column_divided_by_k_squared() {
        let mut text =
            String::from("# Transfer functions T_i(k) for adiabatic (AD) mode (normalized to initial curvature=1)\n");
        text.push_str("#    1:k (h/Mpc)              2:d_g                    3:d_b                    4:d_cdm                  5:d_m\n");
        for i in 0..20 {
            let k = 10f64.powf(-4.0 + 0.2 * f64::from(i));
            text.push_str(&format!("{k:e} 9 9 9 {:e}\n", -2.0 * k * k * (1.0 + k)));
        }
        let table = TransferTable::parse(&text, Path::new("tk.dat")).unwrap();
        let k = 0.05;
        assert!((table.at(k) / ((1.0 + k) / (1.0 + 1e-4)) - 1.0).abs() < 1e-3, "{}", table.at(k));
    }

    #[test]
    fn bad_tables_are_refused_naming_the_line_and_why() {
        let path = Path::new("bad.dat");
        let error = |text: &str| TransferTable::parse(text, path).unwrap_err().to_string();
        let good: Vec<(f64, f64)> = (1..=10).map(|i| (f64::from(i) * 0.01, 1.0 / f64::from(i))).collect();
        assert!(
            error("1 2\n3 4\n").contains("line 1: 2 columns; CAMB's layout needs column 7 (total)"),
            "{}",
            error("1 2\n")
        );
        let mut decreasing = good.clone();
        decreasing.swap(3, 4);
        assert!(error(&camb_text(decreasing.into_iter())).contains("line 6: k = 0.04 does not increase"));
        let mut negative = good.clone();
        negative[6].1 = -1.0;
        assert!(error(&camb_text(negative.into_iter())).contains("line 8: total changes sign"));
        let mut zero = good.clone();
        zero[2].1 = 0.0;
        assert!(error(&camb_text(zero.into_iter())).contains("must be non-zero"));
        assert!(error(&camb_text(good[..3].iter().copied())).contains("3 rows of data; at least 8"));
        assert!(error("#  1:k (h/Mpc)  2:d_g  3:d_b\n1 2 3\n").contains("without a d_m or d_tot column"));
        assert!(error("0.1 x 3 4 5 6 7\n").contains("line 1: \"x\" is not a number"));
    }
}
