//! What a model supplies to the engine: the [`TrainModel`] trait.
//!
//! The engine owns everything that is the same for every network (the
//! loop, the gradient exchange, optimisers, schedules, checkpoints,
//! reports); a model says how to build its network on a device, which
//! dataset feeds it, its loss, its validation metrics and how its weights
//! start. Model code never names a burn backend: it builds on the `Device`
//! it is given, so the same model trains on the CPU or a GPU.

use std::path::Path;
use std::sync::Arc;

use burn::module::Module;
use burn::tensor::{Device, Tensor};
use cluster::World;
use formats::manifest::Manifest;
use loader::dataset::{Dataset, DatasetError};
use loader::pipeline::Batch;
use serde::Serialize;

use super::TrainError;
use crate::params::Init;

/// What every model is built from, whatever its own options: the
/// configuration by name and the samples per rank per step. A model's own
/// options live next to its network (`CosmoflowOptions`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelChoice {
    /// Configuration name (`mlperf-small`, ...).
    pub config: String,
    /// Samples per rank per step (`--batch`), for options that must divide it.
    pub batch: usize,
}

impl ModelChoice {
    /// Configuration `config` with a batch of one.
    pub fn config(config: &str) -> Self {
        ModelChoice { config: config.to_owned(), batch: 1 }
    }
}

/// The `--init` choices of the models that offer one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InitChoice {
    /// Glorot uniform (Keras' default, the MLPerf reference's default).
    Glorot,
    /// He uniform scaled for the model's activation (CosmoFlow: LeakyReLU
    /// 0.3, the MLPerf reference's `he_uniform_mod`).
    He,
}

/// The samples per batch-normalisation group of `--bn-group` (0: the whole
/// per-rank batch), which must divide the per-rank `batch`.
pub fn norm_group(bn_group: Option<u64>, batch: usize) -> Result<usize, TrainError> {
    match bn_group {
        None => Ok(0),
        Some(group) if group > 0 && (batch as u64).is_multiple_of(group) => Ok(group as usize),
        Some(group) => Err(TrainError::Invalid(format!("--bn-group {group} does not divide --batch {batch}"))),
    }
}

/// `--dropout` as the models that have dropout take it: a probability in [0, 1).
pub fn dropout_probability(text: &str) -> Result<f32, String> {
    let p: f32 = text.parse().map_err(|e| format!("{text:?}: {e}"))?;
    if p.is_finite() && (0.0..1.0).contains(&p) {
        Ok(p)
    } else {
        Err(format!("must be a probability in [0, 1), got {p}"))
    }
}

/// A model's validation figures, reduced over the ranks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Validation {
    /// Samples evaluated (all ranks).
    pub samples: u64,
    /// The model's figures by name (see `TrainModel::metric_names`).
    #[serde(flatten)]
    pub metrics: serde_json::Map<String, serde_json::Value>,
    /// The figures as the epoch line shows them.
    #[serde(skip)]
    pub line: String,
}

/// How a run is described in reports and checked against checkpoints and
/// baselines.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelSummary {
    /// Model name (`cosmoflow`).
    pub name: String,
    /// Configuration name (`mlperf-small`).
    pub config: String,
    /// The configuration in full (layer sizes, dropout, ...).
    pub details: serde_json::Value,
}

/// Where a training step stands: what seeded randomness in a model (dropout
/// masks, augmentation) is keyed by, so a resumed run draws what an
/// uninterrupted one would.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepContext {
    /// The run's seed.
    pub seed: u64,
    /// Epoch (0-based).
    pub epoch: u64,
    /// Optimiser steps taken before this one.
    pub step: u64,
    /// This rank.
    pub rank: usize,
}

pub use loader::source::{Sampling, Split};

/// A model the engine can train. Implemented once per network family; the
/// engine is generic over it, and [`Trainable`](crate::models::Trainable)
/// erases it for the registry.
pub trait TrainModel: Send + Sync + 'static {
    /// The network: a burn module.
    type Net: Module + 'static;

    /// Name, configuration and details, for reports and checkpoints.
    fn summary(&self) -> ModelSummary;

    /// Build the network on `device` (initial values are then set by the
    /// engine, see [`weight_init`](Self::weight_init)).
    fn build(&self, device: &Device) -> Result<Self::Net, TrainError>;

    /// The distribution of every `weight` tensor's initial values. Biases
    /// and BatchNorm shifts start at 0, BatchNorm scales at 1, running
    /// means at 0 and running variances at 1 whatever this says.
    fn weight_init(&self) -> Init;

    /// Check that a dataset described by `manifest` (in `dir`) is one this
    /// model reads, with the shapes it takes; the error names `dir`.
    fn check_data(&self, dir: &Path, manifest: &Manifest) -> Result<(), TrainError>;

    /// The dataset's own split into training and validation files, if its
    /// layout has one; `None` (the default) lets the engine hold out
    /// `--val-fraction` of the files.
    fn split(&self, manifest: &Manifest) -> Option<Split> {
        let _ = manifest;
        None
    }

    /// How batches are cut; shuffled samples by default.
    fn sampling(&self) -> Sampling {
        Sampling::Shuffled
    }

    /// Whether some parameters may have no gradient in a step (layers the
    /// batch did not use): the ranks then agree on which to reduce
    /// ([`GradientExchange::average_present`](crate::exchange::GradientExchange::average_present)),
    /// and the optimiser leaves the others alone. False by default.
    fn sparse_gradients(&self) -> bool {
        false
    }

    /// What the network's shape depends on beyond its configuration (the
    /// Etalumis layers made for each address of the data), saved in
    /// checkpoints; a checkpoint whose layout differs cannot be resumed.
    /// Null by default.
    fn layout(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

    /// Open the sample files `files` (indices into the manifest; all when
    /// `None`) of the dataset in `dir`.
    fn open_dataset(
        &self,
        dir: &Path,
        manifest: &Manifest,
        files: Option<&[usize]>,
    ) -> Result<Arc<dyn Dataset>, DatasetError>;

    /// `samples` samples of the shapes this model trains on, made in memory
    /// (`--synthetic-data`, [`loader::synthetic`]: no file is read). `None`
    /// (the default) for a model whose inputs cannot be made without their
    /// files; an error if making them failed.
    fn synthetic_data(&self, samples: usize) -> Result<Option<Arc<dyn Dataset>>, TrainError> {
        let _ = samples;
        Ok(None)
    }

    /// [`open_dataset`](Self::open_dataset) as a value of its own, so a
    /// destination a staging service still fills is opened file by file as
    /// training first reads each (`loader::source::Reader::opener`).
    /// `None` (the default) waits for every file first.
    fn file_opener(&self) -> Option<loader::served::FileOpener> {
        None
    }

    /// Fit whatever the model derives from the training data before the
    /// first step (input statistics). `first` are the first samples this
    /// rank holds; `same_everywhere` says whether every rank holds the same
    /// ones. Collective when it communicates. Nothing by default.
    fn fit(
        &mut self,
        world: &World,
        train: &dyn Dataset,
        first: &[usize],
        same_everywhere: bool,
    ) -> Result<(), TrainError> {
        let _ = (world, train, first, same_everywhere);
        Ok(())
    }

    /// The mean training loss of `batch` (a scalar tensor on `device`, with
    /// the graph for `backward`), the forward pass cut where the backward
    /// pass may stop to hand finished gradients to the exchange
    /// (`--reduce-during-backward`): the model passes activations between
    /// its blocks through [`Cuts::cut`](super::segments::Cuts::cut), each
    /// parameter within one segment. A model that cuts nowhere is correct,
    /// with nothing to overlap.
    fn loss_with_cuts(
        &self,
        net: &Self::Net,
        batch: &Batch,
        step: &StepContext,
        device: &Device,
        cuts: &mut super::segments::Cuts,
    ) -> Result<Tensor<1>, TrainError>;

    /// The mean training loss of `batch`, uncut.
    fn loss(
        &self,
        net: &Self::Net,
        batch: &Batch,
        step: &StepContext,
        device: &Device,
    ) -> Result<Tensor<1>, TrainError> {
        self.loss_with_cuts(net, batch, step, device, &mut super::segments::Cuts::off())
    }

    /// Floating-point operations of a training step on `batch` (forward
    /// and backward), counted from the network's layer shapes
    /// ([`crate::flops`]): what the reports' sustained Flop/s are made of.
    fn training_flops(&self, batch: &Batch) -> Result<f64, TrainError>;

    /// Names of the figures [`validate`](Self::validate) reports.
    fn metric_names(&self) -> &'static [&'static str];

    /// Evaluate `net` (in inference mode) on this rank's share of the
    /// validation batches and reduce over the ranks. Collective.
    fn validate(
        &self,
        world: &World,
        net: &Self::Net,
        batches: &mut dyn Iterator<Item = Result<Batch, DatasetError>>,
        device: &Device,
    ) -> Result<Validation, TrainError>;

    /// Draw `net`'s predictions (in inference mode) for the samples of
    /// `batch` beside their targets, as a PNG at `path`: what `--plot` adds
    /// for models whose outputs are pictures. `false` if the model draws
    /// none (the default). Runs on one rank after training.
    fn picture(&self, _net: &Self::Net, _batch: &Batch, _device: &Device, _path: &Path) -> Result<bool, TrainError> {
        Ok(false)
    }
}
