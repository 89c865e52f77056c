//! `trainer plot`: loss curves of training reports in one picture.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

#[derive(Args, Debug)]
pub(crate) struct PlotArgs {
    /// Training reports (JSON), one run each.
    #[arg(required = true)]
    pub(crate) reports: Vec<PathBuf>,
    /// The picture to write.
    #[arg(long, default_value = "loss.png")]
    pub(crate) out: PathBuf,
    /// Each run's name in the legend, in the order of the reports
    /// (default: each report's file name without its extension).
    #[arg(long = "label")]
    pub(crate) labels: Vec<String>,
    /// Smoothing of the loss, as TensorBoard's slider: an exponential
    /// moving average of this weight, in [0, 1); 0 draws the raw loss only.
    #[arg(long, default_value_t = trainer::plot::DEFAULT_SMOOTHING)]
    pub(crate) smoothing: f32,
    /// The validation figure drawn per epoch (`loss` for the models that
    /// report one; CosmoFlow reports `relative_mae`, in other units).
    #[arg(long, default_value = "loss")]
    pub(crate) validation: String,
}

/// `trainer plot`.
pub(crate) fn plot(args: &PlotArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        (0.0..1.0).contains(&args.smoothing),
        "--smoothing {} is outside [0, 1): 0 draws the raw loss, 0.99 smooths it hard",
        args.smoothing
    );
    anyhow::ensure!(
        args.labels.is_empty() || args.labels.len() == args.reports.len(),
        "{} --label for {} reports: give one per report, or none",
        args.labels.len(),
        args.reports.len()
    );
    let mut curves = Vec::new();
    for (k, path) in args.reports.iter().enumerate() {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let label = match args.labels.get(k) {
            Some(label) => label.clone(),
            None => path.file_stem().map_or_else(|| path.display().to_string(), |s| s.to_string_lossy().into()),
        };
        curves.push(trainer::plot::Curve::from_report(&text, path, label, &args.validation)?);
    }
    trainer::plot::draw(&curves, args.smoothing, &args.out)?;
    let missing: Vec<&str> = curves.iter().filter(|c| c.validation.is_empty()).map(|c| c.label.as_str()).collect();
    if !missing.is_empty() {
        eprintln!("no validation `{}` in: {} (drawn without)", args.validation, missing.join(", "));
    }
    eprintln!("wrote {}", args.out.display());
    Ok(())
}
