//! The models `trainer train NAME --config CONFIG` can train, and the
//! registry that finds them by name with their own options.
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
//! - [`hepcnn`]: HEP-CNN telling new-physics collision events from
//!   Standard-Model background in calorimeter images (Kurth et al. 2018).
//! - [`cosmogan`]: CosmoGAN generating projected matter-density maps, a
//!   DCGAN trained against simulated ones (Mustafa et al. 2019; Kurth et
//!   al. 2018).
//! - [`dropout`]: seeded dropout masks every model with dropout draws.

pub mod cosmoflow;
pub mod cosmogan;
pub mod dropout;
pub mod etalumis;
pub mod hepcnn;
pub mod inverse;
pub mod probe;
pub mod segmentation;

use cluster::World;

use crate::engine::{self, EpochReport, ModelChoice, ModelSummary, TrainConfig, TrainError, TrainModel, TrainReport};
use crate::params;

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
        engine::data::check(self, config)?;
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

/// One model the trainer knows: its name, configurations and own options.
/// A model is one folder (network, options, data, engine glue) plus one
/// entry in [`MODELS`].
pub struct ModelEntry {
    /// `trainer train NAME`.
    pub name: &'static str,
    /// One line about it.
    pub about: &'static str,
    /// Its `--config` names; the first is the default.
    pub configs: &'static [&'static str],
    /// Adds the model's own options (a `clap::Args` struct beside its network).
    options: fn(clap::Command) -> clap::Command,
    /// Builds it from the configuration and its parsed options.
    build: BuildFn,
}

/// How a registry entry builds its model.
type BuildFn = fn(&ModelChoice, &clap::ArgMatches) -> Result<Box<dyn Trainable>, TrainError>;

impl ModelEntry {
    /// `command` (the options every model takes) with this model's own
    /// under a heading of their own.
    pub fn command(&self, command: clap::Command) -> clap::Command {
        (self.options)(command.next_help_heading("Options of this model"))
    }

    /// The model with `choice` and the options parsed into `matches` (by
    /// [`command`](Self::command)).
    pub fn build(&self, choice: &ModelChoice, matches: &clap::ArgMatches) -> Result<Box<dyn Trainable>, TrainError> {
        (self.build)(choice, matches)
    }

    /// The model with configuration `config` and its options' defaults.
    pub fn build_default(&self, config: &str) -> Result<Box<dyn Trainable>, TrainError> {
        let matches = (self.options)(clap::Command::new(self.name)).try_get_matches_from([self.name])?;
        self.build(&ModelChoice::config(config), &matches)
    }
}

fn options_of<O: clap::Args>(command: clap::Command) -> clap::Command {
    O::augment_args(command)
}

fn parsed<O: clap::FromArgMatches>(matches: &clap::ArgMatches) -> Result<O, TrainError> {
    Ok(O::from_arg_matches(matches)?)
}

/// Every model, in the order `trainer models` lists them.
pub const MODELS: &[ModelEntry] = &[
    ModelEntry {
        name: "cosmoflow",
        about: "cosmological parameters from dark-matter volumes (Mathuriya et al. 2018; MLPerf HPC)",
        configs: cosmoflow::CONFIGS,
        options: options_of::<cosmoflow::CosmoflowOptions>,
        build: |c, m| Ok(Box::new(cosmoflow::CosmoflowModel::new(c, &parsed(m)?)?)),
    },
    ModelEntry {
        name: "tiramisu",
        about: "cyclones and atmospheric rivers in climate fields, FC-DenseNet (Jégou et al. 2017; Kurth et al. 2018)",
        configs: segmentation::TIRAMISU_CONFIGS,
        options: options_of::<segmentation::model::TiramisuOptions>,
        build: |c, m| {
            let options: segmentation::model::TiramisuOptions = parsed(m)?;
            type Model = segmentation::SegmentationModel<segmentation::tiramisu::TiramisuConfig>;
            Ok(Box::new(Model::new(c, &options.segmentation, options.dropout)?))
        },
    },
    ModelEntry {
        name: "deeplabv3plus",
        about: "cyclones and atmospheric rivers in climate fields, ResNet-50 DeepLabv3+ (Chen et al. 2018; Kurth et al. 2018)",
        configs: segmentation::DEEPLAB_CONFIGS,
        options: options_of::<segmentation::model::SegmentationOptions>,
        build: |c, m| {
            type Model = segmentation::SegmentationModel<segmentation::deeplab::DeeplabConfig>;
            Ok(Box::new(Model::new(c, &parsed(m)?, None)?))
        },
    },
    ModelEntry {
        name: "inverse",
        about: "projected electron density from CBED pattern stacks, FC-DenseNet (Jégou et al. 2017; Laanait et al. 2019)",
        configs: inverse::CONFIGS,
        options: options_of::<inverse::model::InverseOptions>,
        build: |c, m| Ok(Box::new(inverse::InverseModel::new(c, &parsed(m)?)?)),
    },
    ModelEntry {
        name: "etalumis",
        about: "a simulator's latent choices from its observation, 3-D CNN and LSTM with proposal heads per address \
                (Baydin et al. 2019; the parameters shown are the shared ones, the data adds layers per address)",
        configs: etalumis::CONFIGS,
        options: options_of::<etalumis::model::EtalumisOptions>,
        build: |c, m| Ok(Box::new(etalumis::EtalumisModel::new(c, &parsed(m)?)?)),
    },
    ModelEntry {
        name: "hepcnn",
        about: "new-physics (RPV gluino) events against QCD multi-jet background in calorimeter images, \
                5 convolution+pooling units (Kurth et al. 2018; NERSC's HEP-CNN benchmark)",
        configs: hepcnn::CONFIGS,
        options: options_of::<hepcnn::model::HepCnnOptions>,
        build: |c, m| Ok(Box::new(hepcnn::HepCnnModel::new(c, &parsed(m)?)?)),
    },
    ModelEntry {
        name: "cosmogan",
        about: "projected matter-density maps from noise, a DCGAN against simulated maps \
                (Mustafa et al. 2019; Kurth et al. 2018)",
        configs: cosmogan::CONFIGS,
        options: options_of::<cosmogan::model::CosmoGanOptions>,
        build: |c, m| Ok(Box::new(cosmogan::CosmoGanModel::new(c, &parsed(m)?)?)),
    },
    ModelEntry {
        name: "bn-probe",
        about: "a small BatchNorm CNN on CosmoFlow data that checks the engine's state handling (not a published model)",
        configs: probe::CONFIGS,
        options: options_of::<probe::ProbeOptions>,
        build: |c, m| Ok(Box::new(probe::ProbeModel::new(c, &parsed(m)?)?)),
    },
];

/// The model called `name`.
pub fn find(name: &str) -> Result<&'static ModelEntry, TrainError> {
    MODELS.iter().find(|m| m.name == name).ok_or_else(|| {
        let known: Vec<&str> = MODELS.iter().map(|m| m.name).collect();
        TrainError::Model(format!("unknown model '{name}' (known: {})", known.join(", ")))
    })
}

/// The model `name` with configuration `config` and its options' defaults.
pub fn build(name: &str, config: &str) -> Result<Box<dyn Trainable>, TrainError> {
    find(name)?.build_default(config)
}
