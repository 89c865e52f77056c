//! The models `trainer train --model NAME --config NAME` can train, and
//! the registry that finds them by name.
//!
//! - [`cosmoflow`]: CosmoFlow (MLPerf HPC and SC18 layouts, reduced sizes
//!   for tests and CPUs).
//! - [`probe`]: `bn-probe`, a small BatchNorm network that checks the
//!   engine's handling of model state.
//! - [`segmentation`]: Tiramisu and DeepLabv3+ segmenting cyclones and
//!   atmospheric rivers in DeepCAM climate fields (Kurth et al. 2018).
//! - [`inverse`]: the inverse-imaging FC-DenseNet reconstructing projected
//!   densities from CBED stacks (Laanait et al. 2019).
//! - [`etalumis`]: the Etalumis inference network proposing a simulator's
//!   latent choices from its observation (Baydin et al. 2019).
//! - [`dropout`]: seeded dropout masks every model with dropout draws.

pub mod cosmoflow;
pub mod dropout;
pub mod etalumis;
pub mod inverse;
pub mod probe;
pub mod segmentation;

use std::path::{Path, PathBuf};

use cluster::World;
use formats::manifest::Manifest;

use crate::engine::{self, EpochReport, ModelOptions, ModelSummary, TrainConfig, TrainError, TrainModel, TrainReport};
use crate::params;

/// The LMDB stores (directories) of a manifest's files `files` (all
/// sample files when `None`): the manifest lists each store's `data.mdb`,
/// LMDB opens the directory.
pub(crate) fn lmdb_store_dirs(dir: &Path, manifest: &Manifest, files: Option<&[usize]>) -> Vec<PathBuf> {
    let all: Vec<usize> = (0..manifest.files.len()).filter(|&i| manifest.files[i].samples > 0).collect();
    files
        .unwrap_or(&all)
        .iter()
        .map(|&i| {
            let file = dir.join(&manifest.files[i].path);
            file.parent().map_or(file.clone(), Path::to_path_buf)
        })
        .collect()
}

/// A model with its type erased, as the registry hands it out.
pub trait Trainable {
    /// Name, configuration and details.
    fn summary(&self) -> ModelSummary;
    /// Trainable values and state values of the network (built on the CPU).
    fn sizes(&self) -> Result<(usize, usize), TrainError>;
    /// Check the datasets a run would read (manifests only).
    fn check_data(&self, config: &TrainConfig) -> Result<(), TrainError>;
    /// Train it (see [`engine::run`]). Collective.
    fn train(
        self: Box<Self>,
        world: &World,
        config: &TrainConfig,
        on_epoch: &mut dyn FnMut(&EpochReport),
    ) -> Result<TrainReport, TrainError>;
}

impl<M: TrainModel> Trainable for M {
    fn summary(&self) -> ModelSummary {
        TrainModel::summary(self)
    }

    fn sizes(&self) -> Result<(usize, usize), TrainError> {
        let net = self.build(&burn::tensor::Device::flex())?;
        let tensors = params::inventory(&net)?;
        let count = |trainable: bool| tensors.iter().filter(|t| t.role.trainable() == trainable).map(|t| t.len()).sum();
        Ok((count(true), count(false)))
    }

    fn check_data(&self, config: &TrainConfig) -> Result<(), TrainError> {
        engine::data::check(self, &config.source, config.val.as_deref())?;
        engine::check_resumable(self, config)
    }

    fn train(
        self: Box<Self>,
        world: &World,
        config: &TrainConfig,
        on_epoch: &mut dyn FnMut(&EpochReport),
    ) -> Result<TrainReport, TrainError> {
        engine::run(world, *self, config, on_epoch)
    }
}

/// One model the trainer knows.
pub struct ModelEntry {
    /// `--model` name.
    pub name: &'static str,
    /// One line about it.
    pub about: &'static str,
    /// Its `--config` names; the first is the default.
    pub configs: &'static [&'static str],
    build: fn(&ModelOptions) -> Result<Box<dyn Trainable>, TrainError>,
}

impl ModelEntry {
    /// The model with `options`.
    pub fn build(&self, options: &ModelOptions) -> Result<Box<dyn Trainable>, TrainError> {
        (self.build)(options)
    }
}

/// Every model, in the order `trainer models` lists them.
pub const MODELS: &[ModelEntry] = &[
    ModelEntry {
        name: "cosmoflow",
        about: "cosmological parameters from dark-matter volumes (Mathuriya et al. 2018; MLPerf HPC)",
        configs: cosmoflow::CONFIGS,
        build: |o| Ok(Box::new(cosmoflow::CosmoflowModel::new(o)?)),
    },
    ModelEntry {
        name: "tiramisu",
        about: "cyclones and atmospheric rivers in climate fields, FC-DenseNet (Jégou et al. 2017; Kurth et al. 2018)",
        configs: segmentation::TIRAMISU_CONFIGS,
        build: |o| Ok(Box::new(segmentation::SegmentationModel::<segmentation::tiramisu::TiramisuConfig>::new(o)?)),
    },
    ModelEntry {
        name: "deeplabv3plus",
        about: "cyclones and atmospheric rivers in climate fields, ResNet-50 DeepLabv3+ (Chen et al. 2018; Kurth et al. 2018)",
        configs: segmentation::DEEPLAB_CONFIGS,
        build: |o| Ok(Box::new(segmentation::SegmentationModel::<segmentation::deeplab::DeeplabConfig>::new(o)?)),
    },
    ModelEntry {
        name: "inverse",
        about: "projected electron density from CBED pattern stacks, FC-DenseNet (Jégou et al. 2017; Laanait et al. 2019)",
        configs: inverse::CONFIGS,
        build: |o| Ok(Box::new(inverse::InverseModel::new(o)?)),
    },
    ModelEntry {
        name: "etalumis",
        about: "a simulator's latent choices from its observation, 3-D CNN and LSTM with proposal heads per address \
                (Baydin et al. 2019; the parameters shown are the shared ones, the data adds layers per address)",
        configs: etalumis::CONFIGS,
        build: |o| Ok(Box::new(etalumis::EtalumisModel::new(o)?)),
    },
    ModelEntry {
        name: "bn-probe",
        about: "a small BatchNorm CNN on CosmoFlow data that checks the engine's state handling (not a published model)",
        configs: probe::CONFIGS,
        build: |o| Ok(Box::new(probe::ProbeModel::new(o)?)),
    },
];

/// The model called `name`.
pub fn find(name: &str) -> Result<&'static ModelEntry, TrainError> {
    MODELS.iter().find(|m| m.name == name).ok_or_else(|| {
        let known: Vec<&str> = MODELS.iter().map(|m| m.name).collect();
        TrainError::Model(format!("unknown model '{name}' (known: {})", known.join(", ")))
    })
}

/// The model `name` with `options`.
pub fn build(name: &str, options: &ModelOptions) -> Result<Box<dyn Trainable>, TrainError> {
    find(name)?.build(options)
}
