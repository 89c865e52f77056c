//! CosmoFlow: cosmological parameters regressed from dark-matter volumes
//! (Mathuriya et al. 2018; MLPerf HPC). [`net`] is the network; this module
//! plugs it into the engine: CosmoFlow TFRecords decoded with `log(1 + x)`
//! (the MLPerf reference's `apply_log`), mean squared error, dropout masks
//! keyed by step and rank, optional [`augment`]ation by the cube's
//! symmetries and input [`standardize`]ation, and validation by the mean
//! absolute error of each parameter against that of predicting the mean.

pub mod augment;
pub mod eval;
pub mod net;
pub mod standardize;

use std::path::Path;
use std::sync::Arc;

use burn::tensor::{Device, Tensor, TensorData};
use cluster::World;
use formats::cosmoflow::{CosmoShape, TARGET_NAMES};
use formats::manifest::Manifest;
use loader::dataset::{CosmoTransform, CosmoflowDataset, Dataset, DatasetError};
use loader::pipeline::Batch;

pub use net::{ConfigError, ConvLayer, Cosmoflow, CosmoflowConfig, DropoutMasks, LEAKY_SLOPE, mse};

use crate::engine::{Cuts, InitChoice, ModelChoice, ModelSummary, StepContext, TrainError, TrainModel, Validation};
use crate::params::Init;
use standardize::Standardize;

/// The configurations `--config` accepts.
pub const CONFIGS: &[&str] = &["mlperf", "mlperf-small", "sc18", "sc18-small"];

/// CosmoFlow's own options (`trainer train cosmoflow --help`).
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct CosmoflowOptions {
    /// Dropout probability after the hidden dense layers (default: the
    /// configuration's; MLPerf 0.5).
    #[arg(long, value_parser = crate::engine::dropout_probability)]
    pub dropout: Option<f32>,
    /// How the initial weights are drawn (default: glorot; biases start at zero).
    #[arg(long, value_enum)]
    pub init: Option<InitChoice>,
    /// Turn each training sample by one of the cube's 48 rotations and
    /// reflections, drawn anew each step (the universe is isotropic, so
    /// the targets stay as they are).
    #[arg(long)]
    pub augment: bool,
    /// Shift and scale each input channel to mean 0 and deviation 1, with
    /// statistics of the training set (never per sample).
    #[arg(long)]
    pub standardize: bool,
    /// The data's channels the network sees, as indices in the files' order
    /// (`simgen cosmo --redshifts`, whose default 0,0.5,1.5,3 puts z = 0
    /// first). Default: sc18 and sc18-small take 0, the z = 0 snapshot
    /// alone, as Mathuriya et al. (SC18) trained; mlperf takes every channel.
    #[arg(long, value_delimiter = ',', value_name = "INDEX,...")]
    pub channels: Option<Vec<usize>>,
    /// The parameters the network regresses, in this order: omega_m,
    /// sigma_8, n_s, h. Default: sc18 and sc18-small omega_m,sigma_8,n_s (as
    /// SC18); mlperf all four.
    #[arg(long, value_delimiter = ',', value_name = "NAME,...", value_parser = target_index)]
    pub targets: Option<Vec<usize>>,
}

/// `--targets`: a parameter's index in the samples' `y`.
fn target_index(name: &str) -> Result<usize, String> {
    TARGET_NAMES
        .iter()
        .position(|known| *known == name)
        .ok_or_else(|| format!("unknown parameter '{name}' (known: {})", TARGET_NAMES.join(", ")))
}

/// Which of the data's channels and targets a configuration takes unless
/// told: SC18 regressed Ω_m, σ_8 and n_s from the z = 0 snapshot
/// (Mathuriya et al. 2018); MLPerf HPC all four parameters from all four
/// redshifts. `None` channels: every channel, as many as the network has.
fn default_selection(config: &str) -> (Option<Vec<usize>>, Vec<usize>) {
    if config.starts_with("sc18") { (Some(vec![0]), vec![0, 1, 2]) } else { (None, (0..TARGET_NAMES.len()).collect()) }
}

/// Check that `manifest` (of the dataset in `dir`) describes CosmoFlow
/// samples of `size`³ × `channels`, as configuration `config` takes.
pub fn check_data(
    dir: &Path,
    manifest: &Manifest,
    (size, channels): (usize, usize),
    config: &str,
) -> Result<(), TrainError> {
    let shape = data_shape(dir, manifest)?;
    if shape.size != size || shape.channels != channels {
        return Err(TrainError::Data(format!(
            "{}: the data holds {}³×{} samples; model '{config}' takes {size}³×{channels}",
            dir.display(),
            shape.size,
            shape.channels,
        )));
    }
    Ok(())
}

/// The sample shape of the CosmoFlow dataset in `dir`.
fn data_shape(dir: &Path, manifest: &Manifest) -> Result<CosmoShape, TrainError> {
    manifest.schema.cosmo_shape().ok_or_else(|| {
        TrainError::Data(format!(
            "{}: not a CosmoFlow dataset (its manifest describes {:?} samples); this model reads `simgen cosmo` output",
            dir.display(),
            manifest.schema.kind
        ))
    })
}

/// The CosmoFlow TFRecords `files` of the dataset in `dir`, decoded with
/// `log(1 + x)` (the MLPerf reference's `apply_log: True`).
pub fn open_dataset(
    dir: &Path,
    manifest: &Manifest,
    files: Option<&[usize]>,
) -> Result<Arc<dyn Dataset>, DatasetError> {
    Ok(Arc::new(CosmoflowDataset::from_manifest(dir, manifest, files, CosmoTransform::Log1p)?))
}

/// [`open_dataset`] giving only `channels` of each volume (all when `None`)
/// and `targets` of each sample.
fn open_selected(
    dir: &Path,
    manifest: &Manifest,
    files: Option<&[usize]>,
    (channels, targets): (Option<&[usize]>, &[usize]),
) -> Result<Arc<dyn Dataset>, DatasetError> {
    let dataset = CosmoflowDataset::from_manifest(dir, manifest, files, CosmoTransform::Log1p)?;
    let channels = match channels {
        Some(picked) => picked.to_vec(),
        None => (0..manifest.schema.cosmo_shape().ok_or(DatasetError::NotCosmoflow)?.channels).collect(),
    };
    Ok(Arc::new(dataset.select(channels, targets.to_vec())?))
}

/// CosmoFlow as the engine trains it.
#[derive(Debug, Clone)]
pub struct CosmoflowModel {
    config: CosmoflowConfig,
    init: Init,
    augment: bool,
    standardize: bool,
    /// Fitted on the training data when `standardize` is asked for.
    fitted: Option<Standardize>,
    /// Forward multiply-adds of one sample.
    forward_macs: f64,
    /// The data's channels the network sees (`None`: all of them).
    channels: Option<Vec<usize>>,
    /// The data's targets it regresses, in order.
    targets: Vec<usize>,
}

impl CosmoflowModel {
    /// The configuration `choice` names with `options`.
    pub fn new(choice: &ModelChoice, options: &CosmoflowOptions) -> Result<Self, TrainError> {
        let mut config = CosmoflowConfig::by_name(&choice.config).map_err(TrainError::of_model)?;
        if let Some(p) = options.dropout {
            config.dropout = p;
        }
        let (default_channels, default_targets) = default_selection(&choice.config);
        let channels = options.channels.clone().or(default_channels);
        let targets = options.targets.clone().unwrap_or(default_targets);
        for (what, picked, available) in
            [("--channels", channels.as_deref(), usize::MAX), ("--targets", Some(&targets[..]), TARGET_NAMES.len())]
        {
            if let Some(picked) = picked {
                loader::cosmo_selection::check(what, picked, available)
                    .map_err(|_| TrainError::Model(format!("{what} must name at least one, each once: {picked:?}")))?;
            }
        }
        if let Some(picked) = &channels {
            config.channels = picked.len();
        }
        config.outputs = targets.len();
        let forward_macs = config.forward_macs().map_err(TrainError::of_model)?;
        let init = match options.init {
            None | Some(InitChoice::Glorot) => Init::GlorotUniform,
            Some(InitChoice::He) => Init::HeUniformLeaky { slope: LEAKY_SLOPE },
        };
        Ok(CosmoflowModel {
            config,
            init,
            augment: options.augment,
            standardize: options.standardize,
            fitted: None,
            forward_macs,
            channels,
            targets,
        })
    }

    /// The network's configuration.
    pub fn config(&self) -> &CosmoflowConfig {
        &self.config
    }

    /// A batch's inputs as the network takes them: turned by the cube's
    /// symmetries when augmenting (training only), standardised when asked.
    fn inputs(&self, batch: &Batch, augment: Option<(u64, u64)>, device: &Device) -> Tensor<5> {
        let (d, c, n) = (self.config.input, self.config.channels, batch.len());
        let mut x = match augment {
            Some(key) => augment::augment_batch(&batch.x, d, c, key, &batch.indices),
            None => batch.x.clone(),
        };
        if let Some(s) = &self.fitted {
            s.apply(&mut x);
        }
        Tensor::<5>::from_data(TensorData::new(x, [n, d, d, d, c]), device)
    }
}

impl TrainModel for CosmoflowModel {
    type Net = Cosmoflow;

    fn summary(&self) -> ModelSummary {
        let mut details = serde_json::to_value(&self.config).unwrap_or(serde_json::Value::Null);
        if let Some(map) = details.as_object_mut() {
            map.insert("augment".into(), self.augment.into());
            map.insert("standardize".into(), self.standardize.into());
            map.insert("data_channels".into(), serde_json::json!(self.channels));
            let names: Vec<&str> = self.targets.iter().map(|&t| TARGET_NAMES[t]).collect();
            map.insert("targets".into(), names.into());
        }
        ModelSummary { name: "cosmoflow".into(), config: self.config.name.clone(), details }
    }

    fn training_flops(&self, batch: &Batch) -> Result<f64, TrainError> {
        Ok(batch.len() as f64 * crate::flops::training_flops(self.forward_macs))
    }

    fn build(&self, device: &Device) -> Result<Cosmoflow, TrainError> {
        self.config.init(device).map_err(TrainError::of_model)
    }

    fn weight_init(&self) -> Init {
        self.init
    }

    fn check_data(&self, dir: &Path, manifest: &Manifest) -> Result<(), TrainError> {
        let Some(picked) = &self.channels else {
            return check_data(dir, manifest, (self.config.input, self.config.channels), &self.config.name);
        };
        let shape = data_shape(dir, manifest)?;
        check_data(dir, manifest, (self.config.input, shape.channels), &self.config.name)?;
        match picked.iter().find(|&&c| c >= shape.channels) {
            Some(c) => Err(TrainError::Data(format!(
                "{}: the data holds {} channels (0 to {}); --channels asks for {c}",
                dir.display(),
                shape.channels,
                shape.channels - 1
            ))),
            None => Ok(()),
        }
    }

    fn open_dataset(
        &self,
        dir: &Path,
        manifest: &Manifest,
        files: Option<&[usize]>,
    ) -> Result<Arc<dyn Dataset>, DatasetError> {
        open_selected(dir, manifest, files, (self.channels.as_deref(), &self.targets))
    }

    fn synthetic_data(&self, samples: usize) -> Result<Option<Arc<dyn Dataset>>, TrainError> {
        let c = &self.config;
        let target = loader::synthetic::Target::Values { low: -1.0, high: 1.0 };
        Ok(Some(Arc::new(loader::synthetic::SyntheticDataset::new(
            samples,
            c.input.pow(3) * c.channels,
            c.outputs,
            target,
        ))))
    }

    fn file_opener(&self) -> Option<loader::served::FileOpener> {
        let (channels, targets) = (self.channels.clone(), self.targets.clone());
        Some(Arc::new(move |dir: &Path, manifest: &Manifest, files: &[usize]| {
            open_selected(dir, manifest, Some(files), (channels.as_deref(), &targets))
        }))
    }

    fn fit(&mut self, world: &World, train: &dyn Dataset, first: &[usize], same: bool) -> Result<(), TrainError> {
        if self.standardize {
            self.fitted = Some(Standardize::fit(world, train, first, same, self.config.channels)?);
        }
        Ok(())
    }

    fn loss_with_cuts(
        &self,
        net: &Cosmoflow,
        batch: &Batch,
        step: &StepContext,
        device: &Device,
        cuts: &mut Cuts,
    ) -> Result<Tensor<1>, TrainError> {
        let x = self.inputs(batch, self.augment.then_some((step.seed, step.epoch)), device);
        let y = Tensor::<2>::from_data(TensorData::new(batch.y.clone(), [batch.len(), self.config.outputs]), device);
        let mut masks = DropoutMasks::for_step(step.seed, step.step, step.rank);
        Ok(mse(net.forward_cut(x, Some(&mut masks), cuts), y))
    }

    fn metric_names(&self) -> &'static [&'static str] {
        &["mae", "baseline_mae", "relative_mae"]
    }

    fn validate(
        &self,
        world: &World,
        net: &Cosmoflow,
        batches: &mut dyn Iterator<Item = Result<Batch, DatasetError>>,
        device: &Device,
    ) -> Result<Validation, TrainError> {
        let outputs = self.config.outputs;
        eval::validate(world, outputs, batches, |batch| net.forward(self.inputs(batch, None, device), None))
    }
}
