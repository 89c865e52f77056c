//! The segmentation models as the engine trains them: one
//! [`SegmentationModel`] over either network ([`Network`]), sharing the
//! data (DeepCAM HDF5), the class weights fitted on the training labels,
//! the weighted loss, grouped BatchNorm, seeded dropout and validation by
//! IoU.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use burn::module::Module;
use burn::tensor::{Device, Tensor, TensorData};
use cluster::World;
use formats::climate::ClimateShape;
use formats::manifest::Manifest;
use loader::dataset::{Dataset, DatasetError};
use loader::pipeline::Batch;
use mpi::collective::SystemOperation;
use mpi::traits::*;
use serde::Serialize;

use super::deeplab::{Deeplab, DeeplabConfig};
use super::iou::Confusion;
use super::layers::Pass;
use super::loss::weighted_cross_entropy;
use super::tiramisu::{Tiramisu, TiramisuConfig};
use super::weights::{ClassWeighting, count_classes};
use super::{CLASSES, data};
use crate::engine::{Cuts, ModelChoice, ModelSummary, Split, StepContext, TrainError, TrainModel, Validation};
use crate::params::Init;

/// What the two networks tell the shared model.
pub trait Network: Clone + Serialize + Send + Sync + 'static {
    /// The burn module.
    type Net: Module + 'static;
    /// `--model` name.
    const MODEL: &'static str;
    /// The configuration called `name`.
    fn by_name(name: &str) -> Option<Self>;
    /// Configuration name.
    fn name(&self) -> &str;
    /// Input channels.
    fn channels(&self) -> usize;
    /// Whether fields of this height and width fit the network.
    fn check_input(&self, hw: [usize; 2]) -> Result<(), String>;
    /// Dropout instead of the configuration's (an error for a network without).
    fn set_dropout(&mut self, p: f32) -> Result<(), TrainError>;
    /// Forward multiply-adds per `hw` field ([`flops`](super::flops)).
    fn forward_macs(&self, hw: [usize; 2]) -> f64;
    /// The field size the configuration is meant for.
    fn input(&self) -> [usize; 2];
    /// Build on `device`.
    fn init(&self, device: &Device) -> Self::Net;
    /// Class scores [N, classes, H, W].
    fn forward(net: &Self::Net, x: Tensor<4>, pass: &mut Pass) -> Tensor<4>;
}

impl Network for TiramisuConfig {
    type Net = Tiramisu;
    const MODEL: &'static str = "tiramisu";
    fn by_name(name: &str) -> Option<Self> {
        TiramisuConfig::by_name(name)
    }
    fn name(&self) -> &str {
        &self.name
    }
    fn channels(&self) -> usize {
        self.channels
    }
    fn check_input(&self, hw: [usize; 2]) -> Result<(), String> {
        TiramisuConfig::check_input(self, hw)
    }
    fn set_dropout(&mut self, p: f32) -> Result<(), TrainError> {
        self.dropout = p;
        Ok(())
    }
    fn forward_macs(&self, hw: [usize; 2]) -> f64 {
        super::flops::tiramisu(self, hw)
    }
    fn input(&self) -> [usize; 2] {
        self.input
    }
    fn init(&self, device: &Device) -> Tiramisu {
        TiramisuConfig::init(self, device)
    }
    fn forward(net: &Tiramisu, x: Tensor<4>, pass: &mut Pass) -> Tensor<4> {
        net.forward(x, pass)
    }
}

impl Network for DeeplabConfig {
    type Net = Deeplab;
    const MODEL: &'static str = "deeplabv3plus";
    fn by_name(name: &str) -> Option<Self> {
        DeeplabConfig::by_name(name)
    }
    fn name(&self) -> &str {
        &self.name
    }
    fn channels(&self) -> usize {
        self.channels
    }
    fn check_input(&self, hw: [usize; 2]) -> Result<(), String> {
        DeeplabConfig::check_input(self, hw)
    }
    fn set_dropout(&mut self, _: f32) -> Result<(), TrainError> {
        Err(TrainError::Invalid(
            "deeplabv3plus has no dropout (the paper's network uses none); leave out --dropout".into(),
        ))
    }
    fn forward_macs(&self, hw: [usize; 2]) -> f64 {
        super::flops::deeplab(self, hw)
    }
    fn input(&self) -> [usize; 2] {
        self.input
    }
    fn init(&self, device: &Device) -> Deeplab {
        DeeplabConfig::init(self, device)
    }
    fn forward(net: &Deeplab, x: Tensor<4>, pass: &mut Pass) -> Tensor<4> {
        net.forward(x, pass)
    }
}

/// The options of both segmentation models (`trainer train tiramisu
/// --help`). Inputs are min-max normalised with `stats.h5`, as DeepCAM
/// does; the weights are drawn He-uniform (He et al. 2015).
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct SegmentationOptions {
    /// How the training labels' class frequencies f weigh the loss:
    /// inv-sqrt (1/sqrt(f), Kurth et al.), pow-0.125 (f^-0.125, MLPerf
    /// DeepCAM) or none. Counted on the first 32 training samples each
    /// rank holds.
    #[arg(long, value_parser = ["inv-sqrt", "pow-0.125", "none"])]
    pub class_weights: Option<String>,
    /// Normalise over groups of N samples of each rank's batch instead of
    /// the whole batch ("ghost" batch norm), e.g. so that 1 rank with
    /// --batch 4 --bn-group 2 trains as 2 ranks with --batch 2 do. Must
    /// divide --batch.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub bn_group: Option<u64>,
}

/// Tiramisu's options: the segmentation options and dropout.
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct TiramisuOptions {
    /// The options both segmentation models have.
    #[command(flatten)]
    pub segmentation: SegmentationOptions,
    /// Dropout probability after every convolution of the dense layers and
    /// transitions down (default: the configuration's, 0.2).
    #[arg(long, value_parser = crate::engine::dropout_probability)]
    pub dropout: Option<f32>,
}

/// A segmentation network with everything the engine asks of a model.
#[derive(Debug)]
pub struct SegmentationModel<N: Network> {
    network: N,
    weighting: ClassWeighting,
    /// Pixels per class in the labels counted by [`fit`](TrainModel::fit).
    counts: Vec<u64>,
    /// The loss's class weights (all 1 until fitted).
    weights: Vec<f32>,
    norm_group: usize,
    /// The training data's field size, from its manifest.
    shape: OnceLock<ClimateShape>,
    /// The source dataset's `stats.h5`, for nodes staging left without one.
    source_stats: OnceLock<PathBuf>,
}

/// Training samples (the first a rank holds) the class frequencies are
/// counted on.
const COUNTED_SAMPLES: usize = 32;

impl<N: Network> SegmentationModel<N> {
    /// The configuration `choice` names with `options`, and dropout
    /// `dropout` instead of the configuration's (Tiramisu only: DeepLabv3+
    /// has none, and no `--dropout`).
    pub fn new(choice: &ModelChoice, options: &SegmentationOptions, dropout: Option<f32>) -> Result<Self, TrainError> {
        let mut network = N::by_name(&choice.config)
            .ok_or_else(|| TrainError::Model(format!("unknown {} configuration '{}'", N::MODEL, choice.config)))?;
        if let Some(p) = dropout {
            network.set_dropout(p)?;
        }
        let weighting = options.class_weights.as_deref().unwrap_or("inv-sqrt").parse()?;
        Ok(SegmentationModel {
            network,
            weighting,
            counts: Vec::new(),
            weights: vec![1.0; CLASSES],
            norm_group: crate::engine::norm_group(options.bn_group, choice.batch)?,
            shape: OnceLock::new(),
            source_stats: OnceLock::new(),
        })
    }

    /// The network's configuration.
    pub fn network(&self) -> &N {
        &self.network
    }

    /// The loss's class weights.
    pub fn class_weights(&self) -> &[f32] {
        &self.weights
    }

    fn field(&self) -> Result<ClimateShape, TrainError> {
        self.shape.get().copied().ok_or_else(|| TrainError::Data("the data was not checked before training".into()))
    }

    /// The field the data holds once checked, the configuration's before.
    fn trained_field(&self) -> [usize; 2] {
        self.shape.get().map_or(self.network.input(), |s| [s.height, s.width])
    }

    fn inputs(&self, batch: &Batch, device: &Device) -> Result<Tensor<4>, TrainError> {
        let s = self.field()?;
        Ok(Tensor::from_data(TensorData::new(batch.x.clone(), [batch.len(), s.channels, s.height, s.width]), device))
    }
}

impl<N: Network> TrainModel for SegmentationModel<N> {
    type Net = N::Net;

    fn summary(&self) -> ModelSummary {
        let mut details = serde_json::to_value(&self.network).unwrap_or(serde_json::Value::Null);
        if let Some(map) = details.as_object_mut() {
            map.insert("class_weighting".into(), format!("{:?}", self.weighting).into());
            map.insert("class_counts".into(), self.counts.clone().into());
            map.insert("class_weights".into(), self.weights.clone().into());
            map.insert("norm_group".into(), self.norm_group.into());
            let field = self.trained_field();
            let flops = super::flops::training_flops(self.network.forward_macs(field));
            map.insert("field".into(), field.to_vec().into());
            map.insert("training_flops_per_sample".into(), flops.into());
        }
        ModelSummary { name: N::MODEL.into(), config: self.network.name().into(), details }
    }

    fn training_flops(&self, batch: &Batch) -> Result<f64, TrainError> {
        Ok(batch.len() as f64 * super::flops::training_flops(self.network.forward_macs(self.trained_field())))
    }

    fn build(&self, device: &Device) -> Result<N::Net, TrainError> {
        Ok(self.network.init(device))
    }

    fn weight_init(&self) -> Init {
        // He et al. 2015 for ReLU networks; Jégou et al. initialise the
        // Tiramisu He-uniform.
        Init::HeUniformLeaky { slope: 0.0 }
    }

    fn check_data(&self, dir: &Path, manifest: &Manifest) -> Result<(), TrainError> {
        let shape = data::shape(dir, manifest)?;
        if shape.channels != self.network.channels() {
            return Err(TrainError::Data(format!(
                "{}: the data holds {} channels; {} '{}' takes {}",
                dir.display(),
                shape.channels,
                N::MODEL,
                self.network.name(),
                self.network.channels()
            )));
        }
        self.network
            .check_input([shape.height, shape.width])
            .map_err(|e| TrainError::Data(format!("{}: {e}", dir.display())))?;
        if let Some(known) = self.shape.get()
            && *known != shape
        {
            return Err(TrainError::Data(format!(
                "{}: {}×{}×{} fields, but the training data's are {}×{}×{}",
                dir.display(),
                shape.height,
                shape.width,
                shape.channels,
                known.height,
                known.width,
                known.channels
            )));
        }
        let stats = data::check_stats(dir, shape.channels)?;
        data::check_first_sample(dir, manifest, &stats)?;
        // The first dataset checked is the training data.
        let _ = self.shape.set(shape);
        let _ = self.source_stats.set(stats);
        Ok(())
    }

    fn split(&self, manifest: &Manifest) -> Option<Split> {
        data::split(manifest)
    }

    fn open_dataset(
        &self,
        dir: &Path,
        manifest: &Manifest,
        files: Option<&[usize]>,
    ) -> Result<Arc<dyn Dataset>, DatasetError> {
        data::open(dir, manifest, files, self.source_stats.get().map(PathBuf::as_path))
    }

    /// One field per file: opened as each arrives. The source's `stats.h5`
    /// (checked before training) stands in until the node's copy is there:
    /// a serving stager stages it last, having no sample in it.
    /// Fields of the configuration's size (unless data was checked first).
    fn synthetic_data(&self, samples: usize) -> Result<Option<Arc<dyn Dataset>>, TrainError> {
        let [height, width] = self.network.input();
        let s = *self.shape.get_or_init(|| ClimateShape { height, width, channels: self.network.channels() });
        let pixels = s.height * s.width;
        let target = loader::synthetic::Target::Classes(CLASSES);
        Ok(Some(Arc::new(loader::synthetic::SyntheticDataset::new(samples, pixels * s.channels, pixels, target))))
    }

    fn file_opener(&self) -> Option<loader::served::FileOpener> {
        let stats = self.source_stats.get().cloned();
        Some(Arc::new(move |dir: &Path, manifest: &Manifest, files: &[usize]| {
            data::open(dir, manifest, Some(files), stats.as_deref())
        }))
    }

    /// Count the classes' pixels in the first training samples (every
    /// rank's when they differ) and weigh the loss by them.
    fn fit(&mut self, world: &World, train: &dyn Dataset, first: &[usize], same: bool) -> Result<(), TrainError> {
        let (mut x, mut y) = (vec![0f32; train.x_len()], vec![0f32; train.y_len()]);
        let mut counts = vec![0u64; CLASSES];
        for &i in first.iter().take(COUNTED_SAMPLES) {
            train.read_into(i, &mut x, &mut y).map_err(TrainError::from)?;
            count_classes(&y, CLASSES, &mut counts)?;
        }
        if !same {
            let mut total = vec![0u64; CLASSES];
            world.comm().all_reduce_into(&counts[..], &mut total[..], SystemOperation::sum());
            counts = total;
        }
        self.weights = self.weighting.weights(&counts)?;
        self.counts = counts;
        Ok(())
    }

    fn loss_with_cuts(
        &self,
        net: &N::Net,
        batch: &Batch,
        step: &StepContext,
        device: &Device,
        cuts: &mut Cuts,
    ) -> Result<Tensor<1>, TrainError> {
        let x = self.inputs(batch, device)?;
        let logits = Pass::training(step, self.norm_group).with_cuts(cuts, |pass| N::forward(net, x, pass));
        weighted_cross_entropy(logits, &batch.y, &self.weights, device)
    }

    fn metric_names(&self) -> &'static [&'static str] {
        &["loss", "iou", "mean_iou", "minority_iou"]
    }

    fn validate(
        &self,
        world: &World,
        net: &N::Net,
        batches: &mut dyn Iterator<Item = Result<Batch, DatasetError>>,
        device: &Device,
    ) -> Result<Validation, TrainError> {
        let mut confusion = Confusion::new(CLASSES);
        let (mut loss_sum, mut pixels) = (0f64, 0u64);
        for batch in batches {
            let batch = batch.map_err(TrainError::from)?;
            let logits = N::forward(net, self.inputs(&batch, device)?, &mut Pass::inference());
            let loss = weighted_cross_entropy(logits.clone(), &batch.y, &self.weights, device)?;
            let loss = loss
                .into_data()
                .try_to_vec::<f32>()
                .map_err(|e| TrainError::context("the validation loss did not convert to f32", e))?;
            loss_sum += f64::from(loss.first().copied().unwrap_or(f32::NAN)) * batch.y.len() as f64;
            pixels += batch.y.len() as u64;
            let predicted = logits
                .argmax(1)
                .into_data()
                .convert::<i64>()
                .try_to_vec::<i64>()
                .map_err(|e| TrainError::context("a prediction did not convert to class ids", e))?;
            if predicted.len() != batch.y.len() {
                return Err(TrainError::Model(format!(
                    "{} predicted pixels for {} labels in validation batch {}",
                    predicted.len(),
                    batch.y.len(),
                    batch.number
                )));
            }
            for (&truth, &p) in batch.y.iter().zip(&predicted) {
                confusion.add(truth as usize, p as usize);
            }
        }
        let mut counts = vec![0u64; CLASSES * CLASSES + 1];
        let local: Vec<u64> = confusion.counts().iter().copied().chain([pixels]).collect();
        world.comm().all_reduce_into(&local[..], &mut counts[..], SystemOperation::sum());
        let mut loss_total = 0f64;
        world.comm().all_reduce_into(&loss_sum, &mut loss_total, SystemOperation::sum());
        let pixels = counts.pop().unwrap_or(0);
        let confusion = Confusion::from_counts(CLASSES, counts)
            .ok_or_else(|| TrainError::Model("the reduced confusion matrix has the wrong size".into()))?;
        let iou = confusion.iou();
        let (mean, minority) = (confusion.mean_iou(0), confusion.mean_iou(1));
        let loss = if pixels > 0 { loss_total / pixels as f64 } else { f64::NAN };
        let shown = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"));
        let line = format!(
            "val loss {loss:.4}, IoU background {} cyclone {} river {}, minority mean {minority:.3} (all background: 0)",
            shown(iou[0]),
            shown(iou[1]),
            shown(iou[2]),
        );
        let samples = pixels / self.field()?.pixels().max(1) as u64;
        let mut metrics = serde_json::Map::new();
        metrics.insert("loss".into(), loss.into());
        metrics.insert("iou".into(), iou.into());
        metrics.insert("mean_iou".into(), mean.into());
        metrics.insert("minority_iou".into(), minority.into());
        Ok(Validation { samples, metrics, line })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// The full-size networks build and map fields to class scores of the
    /// same size; the forward pass runs on 32×48 fields, as the full
    /// 768×1152 would need tens of GB here.
    #[test]
    fn the_paper_configurations_build_and_keep_the_field_size() {
        let device = Device::flex();
        let x = Tensor::<4>::ones([1, 16, 32, 48], &device);
        for config in [TiramisuConfig::paper(), TiramisuConfig::growth16()] {
            let net = config.init(&device);
            assert_eq!(net.forward(x.clone(), &mut Pass::inference()).dims(), [1, CLASSES, 32, 48], "{}", config.name);
            assert!(config.check_input([768, 1152]).is_ok());
        }
        let deeplab = DeeplabConfig::paper();
        assert_eq!(deeplab.init(&device).forward(x, &mut Pass::inference()).dims(), [1, CLASSES, 32, 48]);
        assert!(deeplab.check_input([768, 1152]).is_ok());
    }

    /// Both networks' cuts (`--reduce-during-backward`) split the backward
    /// pass into segments that give every parameter, once, the gradient of
    /// one backward pass.
    #[test]
    fn the_networks_cut_into_segments_that_give_the_gradients_of_one_backward_pass() {
        fn check<N: Network>(config: &N, min_cuts: usize) {
            let device = Device::flex().autodiff();
            let net = config.init(&device);
            let shape = [2, config.channels(), 32, 48];
            let x = Tensor::<4>::random(shape, burn::tensor::Distribution::Normal(0.0, 1.0), &device);
            let loss = |cuts: &mut Cuts| {
                let y = Pass::inference().with_cuts(cuts, |pass| N::forward(&net, x.clone(), pass));
                (y.clone() * y).mean()
            };
            crate::engine::segments::assert_segments_match(&net, loss, min_cuts);
        }
        check(&TiramisuConfig::small(), 2);
        check(&DeeplabConfig::small(), 6);
    }

    #[test]
    fn segmentation_options_are_checked_against_the_network() {
        let small = ModelChoice::config("small");
        let options = SegmentationOptions::default();
        assert!(SegmentationModel::<TiramisuConfig>::new(&small, &options, None).is_ok());
        assert!(SegmentationModel::<TiramisuConfig>::new(&ModelChoice::config("huge"), &options, None).is_err());
        let sqrt = SegmentationOptions { class_weights: Some("sqrt".into()), ..SegmentationOptions::default() };
        assert!(SegmentationModel::<TiramisuConfig>::new(&small, &sqrt, None).is_err());
        let paper = ModelChoice::config("paper");
        assert!(SegmentationModel::<DeeplabConfig>::new(&paper, &options, Some(0.1)).is_err());
        let grouped = SegmentationOptions { bn_group: Some(3), ..SegmentationOptions::default() };
        let batch = |batch| ModelChoice { config: "small".into(), batch };
        assert!(SegmentationModel::<TiramisuConfig>::new(&batch(4), &grouped, None).is_err());
        assert!(SegmentationModel::<TiramisuConfig>::new(&batch(6), &grouped, None).is_ok());
        let model = SegmentationModel::<TiramisuConfig>::new(&small, &options, Some(0.0)).unwrap();
        assert_eq!(model.network().dropout, 0.0);
    }
}
