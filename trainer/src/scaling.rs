//! Parallel efficiency against a 1-rank run: samples/s on n ranks divided
//! by n times the samples/s of the 1-rank run. Weak scaling keeps the batch
//! per rank (the global batch grows with the ranks); strong scaling keeps
//! the global batch and splits it over the ranks, so each step of n ranks
//! does the 1-rank step's work and the figure is the speed-up over n
//! (Kurth et al., SC18, Sec. VII-B report both). The 1-rank figure comes
//! from that run's JSON report, so a scaling study is two commands:
//!
//! ```text
//! mpirun -np 1 trainer train ... --batch 8 --report one.json
//! mpirun -np 8 trainer train ... --batch 8 --baseline one.json   # weak
//! mpirun -np 8 trainer train ... --batch 1 --baseline one.json   # strong
//! ```

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::engine::ModelSummary;

/// Why a report cannot serve as the baseline.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BaselineError {
    /// The file could not be read.
    #[error("reading baseline report {path}: {source}")]
    Read {
        /// The report.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// The file is not a trainer report.
    #[error("baseline report {path} is not a trainer report: {reason}")]
    NotAReport {
        /// The report.
        path: PathBuf,
        /// What is missing or malformed.
        reason: String,
    },
    /// The baseline ran on more than one rank.
    #[error("baseline report {path} is from {ranks} ranks; it must be a 1-rank run")]
    NotOneRank {
        /// The report.
        path: PathBuf,
        /// Its ranks.
        ranks: u64,
    },
    /// The baseline trained another model, or a batch that is neither
    /// this run's per rank (weak scaling) nor its global batch (strong).
    #[error(
        "baseline report {path} ran {theirs}, this run {ours}: scaling compares the same model with the same batch per rank (weak) or the same global batch (strong)"
    )]
    Different {
        /// The report.
        path: PathBuf,
        /// What the baseline ran.
        theirs: String,
        /// What this run runs.
        ours: String,
    },
}

/// How a run compares with its 1-rank baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scaling {
    /// The same batch per rank.
    Weak,
    /// The same global batch, split over the ranks.
    Strong,
}

/// A 1-rank run's throughput, checked against this run's model and batch.
#[derive(Debug, Clone, PartialEq)]
pub struct Baseline {
    /// Samples per second of the 1-rank run.
    pub samples_per_sec: f64,
    /// Its batch.
    pub batch: u64,
    path: PathBuf,
    model: String,
}

impl Baseline {
    /// Read `path` (a report of `trainer train`) and check that it is a
    /// 1-rank run of `model` with `batch` samples per step or a multiple
    /// of it (a strong-scaling baseline; [`scaling`](Self::scaling) checks
    /// the multiple once the ranks are known).
    pub fn load(path: &Path, model: &ModelSummary, batch: usize) -> Result<Self, BaselineError> {
        let text = std::fs::read_to_string(path).map_err(|source| BaselineError::Read { path: path.into(), source })?;
        let not_a_report = |reason: String| BaselineError::NotAReport { path: path.into(), reason };
        let report: Value = serde_json::from_str(&text).map_err(|e| not_a_report(e.to_string()))?;
        let baseline = Self::from_report(&report, model, batch).map_err(|e| match e {
            Mismatch::Missing(field) => not_a_report(format!("no `{field}`")),
            Mismatch::Ranks(ranks) => BaselineError::NotOneRank { path: path.into(), ranks },
            Mismatch::Run { theirs, ours } => BaselineError::Different { path: path.into(), theirs, ours },
        })?;
        Ok(Baseline { path: path.into(), ..baseline })
    }

    /// How this run of `ranks` ranks at `batch` per rank compares with the
    /// baseline: the same batch per rank, or the baseline's batch split
    /// over the ranks.
    pub fn scaling(&self, ranks: usize, batch: usize) -> Result<Scaling, BaselineError> {
        if self.batch == batch as u64 {
            Ok(Scaling::Weak)
        } else if self.batch == (batch * ranks) as u64 {
            Ok(Scaling::Strong)
        } else {
            Err(BaselineError::Different {
                path: self.path.clone(),
                theirs: format!("{} at batch {}", self.model, self.batch),
                ours: format!("{} at batch {batch} per rank on {ranks} ranks", self.model),
            })
        }
    }

    fn from_report(report: &Value, model: &ModelSummary, batch: usize) -> Result<Self, Mismatch> {
        let number = |field: &'static str| report[field].as_f64().ok_or(Mismatch::Missing(field));
        let ranks = report["ranks"].as_u64().ok_or(Mismatch::Missing("ranks"))?;
        if ranks != 1 {
            return Err(Mismatch::Ranks(ranks));
        }
        let samples_per_sec = number("samples_per_sec")?;
        if samples_per_sec.is_nan() || samples_per_sec <= 0.0 {
            return Err(Mismatch::Missing("samples_per_sec above 0"));
        }
        let their_batch = report["batch_per_rank"].as_u64().ok_or(Mismatch::Missing("batch_per_rank"))?;
        let theirs = &report["model"];
        let name = |field: &str| theirs[field].as_str().map(str::to_owned).ok_or(Mismatch::Missing("model"));
        let ours = serde_json::to_value(model).map_err(|_| Mismatch::Missing("model"))?;
        if *theirs != ours || batch == 0 || !their_batch.is_multiple_of(batch as u64) {
            // Settings are only worth printing when nothing shorter differs.
            let settings =
                their_batch == batch as u64 && theirs["name"] == ours["name"] && theirs["config"] == ours["config"];
            let theirs =
                describe(&name("name")?, &name("config")?, settings.then_some(&theirs["details"]), their_batch);
            let ours = describe(&model.name, &model.config, settings.then_some(&model.details), batch as u64);
            return Err(Mismatch::Run { theirs, ours });
        }
        Ok(Baseline {
            samples_per_sec,
            batch: their_batch,
            path: PathBuf::new(),
            model: format!("{}/{}", model.name, model.config),
        })
    }

    /// This run's parallel efficiency: `samples_per_sec` on `ranks` ranks
    /// against `ranks` times the baseline's.
    pub fn efficiency(&self, samples_per_sec: f64, ranks: usize) -> f64 {
        samples_per_sec / (ranks as f64 * self.samples_per_sec)
    }
}

enum Mismatch {
    Missing(&'static str),
    Ranks(u64),
    Run { theirs: String, ours: String },
}

/// A run in a few words: model, configuration, its settings if given, batch.
fn describe(name: &str, config: &str, settings: Option<&Value>, batch: u64) -> String {
    match settings {
        Some(settings) => format!("{name}/{config} with {settings} at batch {batch}"),
        None => format!("{name}/{config} at batch {batch}"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn report(ranks: u64, batch: u64, model: &ModelSummary) -> Value {
        serde_json::json!({ "ranks": ranks, "batch_per_rank": batch, "samples_per_sec": 100.0,
            "model": serde_json::to_value(model).unwrap() })
    }

    fn summary(config: &str, dropout: f64) -> ModelSummary {
        ModelSummary {
            name: "cosmoflow".into(),
            config: config.into(),
            details: serde_json::json!({ "dropout": dropout }),
        }
    }

    #[test]
    fn efficiency_is_throughput_over_ranks_times_the_one_rank_throughput() {
        let model = summary("mlperf-small", 0.5);
        let baseline = Baseline::from_report(&report(1, 8, &model), &model, 8).ok().unwrap();
        assert!((baseline.efficiency(150.0, 2) - 0.75).abs() < 1e-12);
    }

    #[test]
    fn the_same_batch_per_rank_is_weak_scaling_and_the_same_global_batch_strong() {
        let model = summary("mlperf-small", 0.5);
        let weak = Baseline::from_report(&report(1, 8, &model), &model, 8).ok().unwrap();
        assert_eq!(weak.scaling(4, 8).unwrap(), Scaling::Weak);
        // The baseline's 8 samples a step split over 4 ranks: 2 each.
        let strong = Baseline::from_report(&report(1, 8, &model), &model, 2).ok().unwrap();
        assert_eq!(strong.scaling(4, 2).unwrap(), Scaling::Strong);
        // 2 per rank on 2 ranks is neither 8 per rank nor 8 in all.
        let e = strong.scaling(2, 2).unwrap_err().to_string();
        assert!(e.contains("batch 8") && e.contains("batch 2 per rank on 2 ranks"), "{e}");
        // A batch that does not divide the baseline's is refused on reading.
        assert!(matches!(Baseline::from_report(&report(1, 8, &model), &model, 3), Err(Mismatch::Run { .. })));
    }

    #[test]
    fn a_baseline_from_several_ranks_or_another_batch_or_model_is_refused() {
        let model = summary("mlperf-small", 0.5);
        assert!(matches!(Baseline::from_report(&report(2, 8, &model), &model, 8), Err(Mismatch::Ranks(2))));
        assert!(matches!(Baseline::from_report(&report(1, 4, &model), &model, 8), Err(Mismatch::Run { .. })));
        assert!(matches!(Baseline::from_report(&report(1, 12, &model), &model, 8), Err(Mismatch::Run { .. })));
        for other in [summary("mlperf", 0.5), summary("mlperf-small", 0.0)] {
            assert!(matches!(Baseline::from_report(&report(1, 8, &other), &model, 8), Err(Mismatch::Run { .. })));
        }
        let mut incomplete = report(1, 8, &model);
        incomplete["samples_per_sec"] = Value::Null;
        assert!(matches!(Baseline::from_report(&incomplete, &model, 8), Err(Mismatch::Missing("samples_per_sec"))));
        incomplete["samples_per_sec"] = 0.0.into();
        assert!(matches!(Baseline::from_report(&incomplete, &model, 8), Err(Mismatch::Missing(_))));
    }

    #[test]
    fn an_unreadable_or_foreign_file_names_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let model = summary("mlperf-small", 0.5);
        let foreign = dir.path().join("foreign.json");
        std::fs::write(&foreign, "{\"stager\": true}").unwrap();
        let e = Baseline::load(&foreign, &model, 8).unwrap_err().to_string();
        assert!(e.contains("foreign.json") && e.contains("not a trainer report"), "{e}");
        let e = Baseline::load(&dir.path().join("missing.json"), &model, 8).unwrap_err().to_string();
        assert!(e.contains("missing.json"), "{e}");
    }
}
