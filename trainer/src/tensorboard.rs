//! `trainer train --tensorboard DIR`: each epoch's figures as TensorBoard
//! scalars, written by rank 0 when the epoch ends (the per-step losses are
//! the mean over the ranks, known only then). Tags:
//!
//! - `train/loss` at every step; `train/epoch_loss`, `train/learning_rate`
//!   and `train/epoch` at the epoch's last step;
//! - `validation/NAME` for each of the model's validation figures
//!   (`validation/NAME/I` for each element of a figure per target);
//! - `perf/samples_per_sec` and `perf/gflops_per_sec` (all ranks),
//!   `perf/data_wait_percent` and `perf/communication_percent` (rank 0's
//!   step time split), `perf/step_median_ms` and `perf/step_imbalance`
//!   (over every rank's steps).
//!
//! Steps count from 1 over the whole run, a resumed run continuing the
//! count of the run it resumes.

use std::io;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use formats::tensorboard::EventFile;

use crate::engine::EpochReport;

/// A run's event file.
#[derive(Debug)]
pub struct TensorBoard {
    file: EventFile,
}

fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

impl TensorBoard {
    /// A new event file in `dir` (created if missing).
    pub fn create(dir: &Path) -> io::Result<TensorBoard> {
        Ok(TensorBoard { file: EventFile::create(dir, now())? })
    }

    /// Where the events go.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Write `epoch`'s scalars.
    pub fn epoch(&mut self, epoch: &EpochReport) -> io::Result<()> {
        let wall_time = now();
        for (k, &loss) in epoch.step_losses.iter().enumerate() {
            self.file.scalars(epoch.first_step + k as u64 + 1, wall_time, &[("train/loss", loss)])?;
        }
        let [wait, _, communication, _] = epoch.times.fractions();
        // A figure per target (an array) becomes one scalar per element.
        let mut names: Vec<(String, f32)> = Vec::new();
        for (name, value) in epoch.validation.iter().flat_map(|v| v.metrics.iter()) {
            match value {
                serde_json::Value::Array(items) => names.extend(
                    items
                        .iter()
                        .enumerate()
                        .filter_map(|(i, x)| Some((format!("validation/{name}/{i}"), x.as_f64()? as f32))),
                ),
                other => names.extend(other.as_f64().map(|x| (format!("validation/{name}"), x as f32))),
            }
        }
        let mut values: Vec<(&str, f32)> = vec![
            ("train/epoch_loss", epoch.train_loss),
            ("train/learning_rate", epoch.lr),
            ("train/epoch", epoch.epoch as f32),
            ("perf/samples_per_sec", epoch.samples_per_sec as f32),
            ("perf/data_wait_percent", (100.0 * wait) as f32),
            ("perf/communication_percent", (100.0 * communication) as f32),
            ("perf/gflops_per_sec", (epoch.flops_per_sec / 1e9) as f32),
        ];
        if let Some(steps) = epoch.step_time {
            values.extend([
                ("perf/step_median_ms", (1e3 * steps.median_secs) as f32),
                ("perf/step_imbalance", steps.imbalance as f32),
            ]);
        }
        values.extend(names.iter().map(|(name, v)| (name.as_str(), *v)));
        let last = epoch.first_step + epoch.step_losses.len() as u64;
        self.file.scalars(last, wall_time, &values)
    }
}
