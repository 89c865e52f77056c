//! The demo's closing summary: what was generated, staged and trained,
//! read from the JSON reports the programs wrote, in a few lines a person
//! reads in ten seconds. [`Reports::read`] reads them; the rest is pure.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The reports a demo run leaves in its directory.
pub struct Reports {
    /// `simgen.json`.
    pub simgen: Value,
    /// `stage.json`, absent where the pipeline stages nothing.
    pub stage: Option<Value>,
    /// `train.json`.
    pub train: Value,
    /// Staging first against training beside `stager serve`, where the
    /// pipeline compares them.
    pub served: Option<ServedReports>,
}

/// The reports of the demo's comparison of staging first with training
/// beside `stager serve`, through the same throttled source.
pub struct ServedReports {
    /// `first-stage.json`: the stage run before training.
    pub first_stage: Value,
    /// `first-train.json`: the epoch trained after it.
    pub first_train: Value,
    /// `served-train.json`: the epoch trained beside the service.
    pub served_train: Value,
}

impl Reports {
    /// Read `simgen.json`, `train.json` and, where present, `stage.json`
    /// and the comparison's `first-stage.json`, `first-train.json` and
    /// `served-train.json` from `dir`.
    pub fn read(dir: &Path) -> anyhow::Result<Self> {
        use anyhow::Context as _;
        let read = |name: &str| -> anyhow::Result<Value> {
            let path = dir.join(name);
            let text = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            serde_json::from_slice(&text).with_context(|| format!("parsing {}", path.display()))
        };
        let stage = if dir.join("stage.json").exists() { Some(read("stage.json")?) } else { None };
        let served = if dir.join("served-train.json").exists() {
            Some(ServedReports {
                first_stage: read("first-stage.json")?,
                first_train: read("first-train.json")?,
                served_train: read("served-train.json")?,
            })
        } else {
            None
        };
        Ok(Reports { simgen: read("simgen.json")?, stage, train: read("train.json")?, served })
    }

    /// [`summary`] of these reports.
    pub fn summary(&self, run: &Run<'_>, pictures: &[PathBuf]) -> Result<String, FieldError> {
        let stage = self.stage.as_ref().map(|json| Report { name: "stage.json", json });
        let mut text = summary(
            run,
            &Report { name: "simgen.json", json: &self.simgen },
            stage.as_ref(),
            &Report { name: "train.json", json: &self.train },
            pictures,
        )?;
        if let Some(s) = &self.served {
            let line = served(
                &Report { name: "first-stage.json", json: &s.first_stage },
                &Report { name: "first-train.json", json: &s.first_train },
                &Report { name: "served-train.json", json: &s.served_train },
            )?;
            // After the lines of what was staged and trained.
            let at = text.find("  result ").unwrap_or(text.len());
            text.insert_str(at, &format!("  served     {line}\n"));
        }
        Ok(text)
    }
}

/// A report field that is missing or not what the summary needs.
#[derive(Debug, thiserror::Error)]
#[error("{report}: field {pointer} is missing or not a {expected}")]
pub struct FieldError {
    /// The report's file name.
    pub report: String,
    /// JSON pointer of the field.
    pub pointer: String,
    /// What the field should have been.
    pub expected: &'static str,
}

/// One JSON report and its name (for errors).
pub struct Report<'a> {
    /// File name, as `train.json`.
    pub name: &'a str,
    /// Its contents.
    pub json: &'a Value,
}

impl Report<'_> {
    fn field(&self, pointer: &str, expected: &'static str) -> FieldError {
        FieldError { report: self.name.to_owned(), pointer: pointer.to_owned(), expected }
    }

    fn number(&self, pointer: &str) -> Result<f64, FieldError> {
        self.json.pointer(pointer).and_then(Value::as_f64).ok_or_else(|| self.field(pointer, "number"))
    }

    fn text(&self, pointer: &str) -> Result<&str, FieldError> {
        self.json.pointer(pointer).and_then(Value::as_str).ok_or_else(|| self.field(pointer, "string"))
    }

    fn array(&self, pointer: &str) -> Result<&Vec<Value>, FieldError> {
        self.json.pointer(pointer).and_then(Value::as_array).ok_or_else(|| self.field(pointer, "list"))
    }

    /// The last epoch's validation figures.
    fn first_validation(&self) -> Result<Report<'_>, FieldError> {
        let epochs = self.array("/epochs")?;
        let first = epochs.first().and_then(|e| e.get("validation")).filter(|v| v.is_object());
        let json = first.ok_or_else(|| self.field("/epochs/0/validation", "validation object"))?;
        Ok(Report { name: "train.json, the first epoch's validation", json })
    }

    fn last_validation(&self) -> Result<Report<'_>, FieldError> {
        let epochs = self.array("/epochs")?;
        let last = epochs.last().and_then(|e| e.get("validation")).filter(|v| v.is_object());
        let json = last.ok_or_else(|| self.field("/epochs/<last>/validation", "validation object"))?;
        Ok(Report { name: "train.json, the last epoch's validation", json })
    }
}

/// What the demo ran.
pub struct Run<'a> {
    /// `cosmoflow`, `deepcam`, `etalumis`, `inverse`, `hepcnn` or `cosmogan`.
    pub model: &'a str,
    /// Ranks and pretend nodes.
    pub ranks: usize,
    /// Pretend nodes.
    pub nodes: usize,
    /// Wall time of the whole demo.
    pub seconds: u64,
    /// The demo's directory.
    pub dir: &'a Path,
}

/// Bytes as MB or GB.
fn bytes(b: f64) -> String {
    if b >= 1e9 { format!("{:.2} GB", b / 1e9) } else { format!("{:.0} MB", b / 1e6) }
}

/// What `simgen` wrote, in its own units.
fn generated(model: &str, simgen: &Report<'_>) -> Result<String, FieldError> {
    let (count, what) = match model {
        "cosmoflow" => (simgen.number("/boxes")?, "universes (CosmoFlow TFRecords)"),
        "deepcam" => (simgen.number("/samples")?, "climate fields (DeepCAM HDF5)"),
        "etalumis" => (simgen.number("/traces")?, "simulator traces (LMDB)"),
        "hepcnn" => (simgen.number("/events")?, "collision events (HEP-CNN HDF5)"),
        "cosmogan" => (simgen.number("/maps")?, "mass maps (CosmoGAN .npy)"),
        _ => (simgen.number("/samples")?, "CBED stacks (LMDB, on every node's own storage)"),
    };
    // Not every generator's report counts its bytes.
    let size = simgen.json.pointer("/bytes").and_then(Value::as_f64).map(|b| format!(", {}", bytes(b)));
    Ok(format!("{count:.0} {what}{}, in {:.1} s", size.unwrap_or_default(), simgen.number("/seconds")?))
}

fn staged(stage: &Report<'_>) -> Result<String, FieldError> {
    Ok(format!(
        "{} onto {:.0} nodes: {} read from the source (read amplification {:.2}), {} written, {:.2} GB/s, {:.1} s",
        stage.text("/policy")?,
        stage.number("/nodes")?,
        bytes(stage.number("/bytes_read_from_source")?),
        stage.number("/read_amplification")?,
        bytes(stage.number("/bytes_written")?),
        stage.number("/gb_per_s/total")?,
        stage.number("/seconds/total")?
    ))
}

/// Time to the first batch and to the end of the first epoch beside
/// `stager serve` against staging first, and whether both trained the same
/// parameters (they must: the same samples in the same order).
fn served(first_stage: &Report<'_>, first_train: &Report<'_>, served_train: &Report<'_>) -> Result<String, FieldError> {
    let stage = first_stage.number("/seconds/total")?;
    let first_batch = |train: &Report<'_>| train.number("/first_batch_secs");
    let epoch_done = |train: &Report<'_>| Ok::<_, FieldError>(first_batch(train)? + train.number("/epochs/0/seconds")?);
    let same = first_train.text("/epochs/0/checksum")? == served_train.text("/epochs/0/checksum")?;
    Ok(format!(
        "first batch {:.1} s after the start beside `stager serve`, against {:.1} s staging first through a \
         {:.0} MB/s source; one epoch done at {:.1} s against {:.1} s, {}",
        first_batch(served_train)?,
        stage + first_batch(first_train)?,
        first_stage.number("/source_bandwidth_emulated")? / 1e6,
        epoch_done(served_train)?,
        stage + epoch_done(first_train)?,
        if same { "same parameters" } else { "DIFFERENT parameters (a bug: please report it)" }
    ))
}

/// Validation against the model's own "knows nothing" baseline, and whether
/// it beat it clearly.
fn learned(model: &str, train: &Report<'_>) -> Result<(String, bool), FieldError> {
    let v = train.last_validation()?;
    Ok(match model {
        "cosmoflow" => {
            let relative = v.number("/relative_mae")?;
            let names = ["Ωm", "σ8", "ns", "h"];
            let each: Vec<String> = names
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    let (mae, base) = (v.number(&format!("/mae/{i}"))?, v.number(&format!("/baseline_mae/{i}"))?);
                    Ok(format!("{n} {:.0} %", 100.0 * mae / base))
                })
                .collect::<Result<_, FieldError>>()?;
            let line = format!(
                "validation error {:.0} % of predicting the mean ({}) on {:.0} unseen universes",
                100.0 * relative,
                each.join(", "),
                v.number("/samples")?
            );
            (line, relative < 0.8)
        }
        "deepcam" => {
            let (minority, mean) = (v.number("/minority_iou")?, v.number("/mean_iou")?);
            let iou: Vec<f64> = (0..3).map(|c| v.number(&format!("/iou/{c}"))).collect::<Result<_, _>>()?;
            let line = format!(
                "IoU background {:.3}, cyclone {:.3}, river {:.3} (mean {mean:.3}); minority mean {minority:.3} against 0 for all-background",
                iou[0], iou[1], iou[2]
            );
            (line, minority > 0.1)
        }
        "etalumis" => {
            let (loss, prior) = (v.number("/loss")?, v.number("/prior_loss")?);
            let line = format!("validation loss {loss:.3} per trace against {prior:.3} for proposing from the prior");
            (line, loss < prior)
        }
        "hepcnn" => {
            let (auc, energy) = (v.number("/auc")?, v.number("/energy_auc")?);
            let line = format!(
                "held-out ROC area {auc:.3} against {energy:.3} for the total E_T alone; where the cut-based \
                 selection keeps {:.3} of the signal at {:.3} of the background, the network keeps {:.3}",
                v.number("/selection_signal_efficiency")?,
                v.number("/selection_background_efficiency")?,
                v.number("/signal_efficiency_at_selection")?
            );
            (line, auc > energy && auc > 0.8)
        }
        "cosmogan" => {
            let first = train.first_validation()?;
            let (before, after) = (first.number("/pk_error")?, v.number("/pk_error")?);
            let line = format!(
                "generated against held-out maps: power spectrum off by a factor e^{after:.2} on average over \
                 the rings (e^{before:.2} after the first epoch), pixel histograms {:.3} apart (KS; {:.3} after \
                 the first epoch)",
                v.number("/pixel_ks")?,
                first.number("/pixel_ks")?
            );
            (line, after < 0.75 * before)
        }
        _ => {
            let (loss, mean) = (v.number("/loss")?, v.number("/mean_image_loss")?);
            let line = format!(
                "validation Huber loss {loss:.4} against {mean:.4} for the mean image; relative L2 error {:.3}",
                v.number("/relative_l2")?
            );
            (line, loss < 0.8 * mean)
        }
    })
}

fn trained(train: &Report<'_>) -> Result<String, FieldError> {
    let epochs = train.array("/epochs")?;
    let last_loss = epochs
        .last()
        .and_then(|e| e.get("train_loss"))
        .and_then(Value::as_f64)
        .ok_or_else(|| train.field("/epochs/<last>/train_loss", "number"))?;
    Ok(format!(
        "{} epochs on {:.0} ranks, {:.1} samples/s, data wait {:.1} % of step time, training loss {last_loss:.4} in the last epoch",
        epochs.len(),
        train.number("/ranks")?,
        train.number("/samples_per_sec")?,
        100.0 * train.number("/fractions/0")?
    ))
}

/// The summary's lines. `stage` is absent where the pipeline generates on
/// the nodes themselves (nothing to stage); `pictures` are the PNG files
/// the run left, shown relative to the demo's directory.
pub fn summary(
    run: &Run<'_>,
    simgen: &Report<'_>,
    stage: Option<&Report<'_>>,
    train: &Report<'_>,
    pictures: &[PathBuf],
) -> Result<String, FieldError> {
    let mut out = String::new();
    let minutes = format!("{}m{:02}s", run.seconds / 60, run.seconds % 60);
    let _ = writeln!(
        out,
        "\nStagehand demo ({}): {} ranks as {} pretend nodes, {minutes} in all",
        run.model, run.ranks, run.nodes
    );
    let _ = writeln!(out, "  generated  {}", generated(run.model, simgen)?);
    if let Some(stage) = stage {
        let _ = writeln!(out, "  staged     {}", staged(stage)?);
    }
    let _ = writeln!(out, "  trained    {}", trained(train)?);
    let (line, beat) = learned(run.model, train)?;
    let verdict = if beat { "it learned" } else { "NOT clearly better than the baseline yet" };
    let _ = writeln!(out, "  result     {line}: {verdict}");
    let shown: Vec<String> =
        pictures.iter().map(|p| p.strip_prefix(run.dir).unwrap_or(p).display().to_string()).collect();
    let _ = writeln!(out, "  pictures   in {}: {}", run.dir.display(), shown.join(", "));
    let _ = writeln!(out, "  details    {0}/*.json (reports), {0}/logs/ (every command's output)", run.dir.display());
    Ok(out)
}
