//! CosmoGAN as the engine trains it: maps from mass-map files (`simgen
//! massmaps`) transformed to (−1, 1), noise drawn per sample, both losses
//! of the reference (`networks/models/dcgan.py`, `training_graph`) in one
//! backward pass, and validation as Mustafa et al. judge a generator
//! (2019, §2.3): the power spectrum of generated maps over that of
//! held-out real ones, ring by ring, and the distance between their pixel
//! histograms.
//!
//! The reference steps both networks from the same forward pass
//! (`tf.group(d_optim, g_optim)`: two Adam optimisers, lr 2·10⁻⁴, β1 0.5,
//! each over its own network's variables). Here the discriminator's loss
//! reaches only the discriminator (the generated maps are cut from the
//! graph) and the generator's loss only the generator (the discriminator
//! runs on parameters cut from the graph), so one backward pass of their
//! sum gives each network its own gradient; the engine's one Adam keeps
//! separate moments per tensor, which is the reference's two optimisers
//! with the same settings. One gradient exchange per step carries both
//! networks' gradients, where the seed (Kurth et al. 2018 §V) ran one
//! communication team per network: both need every rank's gradients
//! before the next step, and one exchange of 17 M values sends fewer
//! messages than two.

use std::path::Path;
use std::sync::Arc;

use crate::kernels::relu;
use burn::tensor::{Device, Tensor, TensorData};
use cluster::World;
use formats::manifest::{Manifest, SampleKind};
use formats::massmaps::statistics::{PixelHistogram, SpectrumEstimator, from_unit, ks_distance, to_unit};
use loader::dataset::{Dataset, DatasetError};
use loader::massmaps::{MassMaps, TARGET_LEN};
use loader::pipeline::Batch;
use mpi::collective::SystemOperation;
use mpi::traits::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use simgen::random::mix;

use super::net::{CosmoGan, CosmoGanConfig};
use crate::engine::{Cuts, ModelChoice, ModelSummary, Split, StepContext, TrainError, TrainModel, Validation};
use crate::models::segmentation::layers::Pass;
use crate::params::Init;

/// Random streams of [`mix`]: training noise, label flips, validation noise.
const NOISE_STREAM: u64 = 0xC05_0001;
const FLIP_STREAM: u64 = 0xC05_0002;
const VALIDATION_STREAM: u64 = 0xC05_0003;

/// CosmoGAN's own options (`trainer train cosmogan --help`).
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct CosmoGanOptions {
    /// Probability that a step swaps the discriminator's real and fake labels (default: the configuration's, 0.01).
    #[arg(long, value_parser = flip_probability)]
    pub flip_labels: Option<f64>,
    /// Normalise over groups of N samples of each rank's batch instead of
    /// the whole batch ("ghost" batch norm), e.g. so that 1 rank with
    /// --batch 4 --bn-group 2 trains as 2 ranks with --batch 2 do. Must
    /// divide --batch.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub bn_group: Option<u64>,
}

fn flip_probability(text: &str) -> Result<f64, String> {
    let p: f64 = text.parse().map_err(|e| format!("{text:?}: {e}"))?;
    if (0.0..=0.5).contains(&p) { Ok(p) } else { Err(format!("must be a probability in [0, 0.5], got {p}")) }
}

/// CosmoGAN with everything the engine asks of a model.
#[derive(Debug)]
pub struct CosmoGanModel {
    network: CosmoGanConfig,
    /// Samples per BatchNorm group (0: the rank's batch).
    norm_group: usize,
}

/// TensorFlow's `sigmoid_cross_entropy_with_logits` of `logits` [N, 1]
/// against one label for all, in its stable form max(l, 0) − l·y +
/// ln(1 + e^−|l|), averaged.
fn cross_entropy(logits: Tensor<2>, label: f32) -> Tensor<1> {
    let softplus = logits.clone().abs().neg().exp().log1p();
    (relu(logits.clone()) - logits.mul_scalar(label) + softplus).mean()
}

impl CosmoGanModel {
    /// The configuration `choice` names with `options`.
    pub fn new(choice: &ModelChoice, options: &CosmoGanOptions) -> Result<Self, TrainError> {
        let mut network = super::by_name(&choice.config)
            .ok_or_else(|| TrainError::Model(format!("unknown cosmogan configuration '{}'", choice.config)))?;
        if let Some(p) = options.flip_labels {
            network.flip_labels = p;
        }
        let norm_group = crate::engine::norm_group(options.bn_group, choice.batch)?;
        Ok(CosmoGanModel { network, norm_group })
    }

    /// Real maps [N, 1, S, S] transformed to s = 2x/(x + 4) − 1.
    fn real(&self, batch: &Batch, device: &Device) -> Tensor<4> {
        let s = self.network.side;
        let x: Vec<f32> = batch.x.iter().map(|&v| to_unit(v)).collect();
        Tensor::from_data(TensorData::new(x, [batch.len(), 1, s, s]), device)
    }

    /// Noise [n, z], standard normal (the reference's `tf.random_normal`),
    /// each sample's from its own stream `key(i)`.
    fn noise(&self, n: usize, key: impl Fn(usize) -> u64, device: &Device) -> Tensor<2> {
        let z = self.network.noise;
        let mut values = Vec::with_capacity(n * z);
        for i in 0..n {
            let mut rng = ChaCha8Rng::seed_from_u64(key(i));
            values.extend((0..z).map(|_| rng.sample::<f32, _>(rand_distr::StandardNormal)));
        }
        Tensor::from_data(TensorData::new(values, [n, z]), device)
    }

    /// Training noise of a rank's batch of `n`: sample i of a batch in G
    /// BatchNorm groups is sample i / G of "virtual rank" rank·G + i mod G
    /// (the sample the distributed sampler would deal to that rank), so 1
    /// rank with batch 2b in groups of b draws what 2 ranks with batch b
    /// draw.
    fn training_noise(&self, step: &StepContext, n: usize, device: &Device) -> Tensor<2> {
        let group = self.norm_group;
        let groups = if group == 0 || group >= n || !n.is_multiple_of(group) { 1 } else { n / group };
        let stream = mix(step.seed, step.step, NOISE_STREAM);
        self.noise(
            n,
            |i| mix(stream, ((step.rank * groups + i % groups) as u64) << 32 | (i / groups) as u64, 0),
            device,
        )
    }

    /// Whether step `step` swaps the labels (one draw per step, the same on
    /// every rank).
    fn flipped(&self, step: &StepContext) -> bool {
        self.network.flip_labels > 0.0
            && ChaCha8Rng::seed_from_u64(mix(step.seed, step.step, FLIP_STREAM)).random::<f64>()
                < self.network.flip_labels
    }

    /// Generated maps (in inference mode), values s in (−1, 1), for
    /// validation batch `batch` of `rank`: the same noise every epoch, so
    /// the figures of one epoch and the next differ by the generator only.
    fn generated(&self, net: &CosmoGan, (rank, batch): (usize, usize), n: usize, device: &Device) -> Tensor<4> {
        let stream = mix(VALIDATION_STREAM, rank as u64, batch as u64);
        net.generator.forward(self.noise(n, |i| mix(stream, i as u64, 0), device), &Pass::inference())
    }
}

fn values(t: Tensor<4>) -> Result<Vec<f32>, TrainError> {
    t.into_data().try_to_vec::<f32>().map_err(|e| TrainError::context("reading generated maps", e))
}

impl TrainModel for CosmoGanModel {
    type Net = CosmoGan;

    fn summary(&self) -> ModelSummary {
        let mut details = serde_json::to_value(&self.network).unwrap_or(serde_json::Value::Null);
        if let Some(map) = details.as_object_mut() {
            map.insert("bn_group".into(), self.norm_group.into());
        }
        ModelSummary { name: "cosmogan".into(), config: self.network.name.clone(), details }
    }

    /// Per map: the generator forward and backward (3 passes), the
    /// discriminator on real maps (3), on generated maps cut from the
    /// generator (2: no input gradient) and frozen for the generator's loss
    /// (2: forward and input gradient). The count is the method's: ours
    /// computes the last two forward passes as one
    /// ([`Discriminator::forward_twin`](super::net::Discriminator::forward_twin)).
    fn training_flops(&self, batch: &Batch) -> Result<f64, TrainError> {
        let n = &self.network;
        let (base, top) = (n.base_side(), n.base_channels());
        let mut generator = crate::flops::dense(n.noise, top * base * base);
        let (mut side, mut channels) = (base, top);
        for layer in 0..n.layers {
            let to = if layer + 1 == n.layers { 1 } else { channels / 2 };
            generator += crate::flops::conv(side * side, channels, to, 25);
            side *= 2;
            channels = to;
        }
        let (mut discriminator, mut from) = (0.0, 1);
        for layer in 0..n.layers {
            side /= 2;
            let to = n.discriminator_filters << layer;
            discriminator += crate::flops::conv(side * side, from, to, 25);
            from = to;
        }
        discriminator += crate::flops::dense(from * side * side, 1);
        Ok(batch.len() as f64 * 2.0 * (3.0 * generator + 7.0 * discriminator))
    }

    fn build(&self, device: &Device) -> Result<CosmoGan, TrainError> {
        let n = &self.network;
        if n.layers == 0 || n.base_side() == 0 || !n.side.is_multiple_of(1 << n.layers) {
            return Err(TrainError::Model(format!("maps of {} cannot be halved {} times", n.side, n.layers)));
        }
        Ok(n.init(device))
    }

    fn weight_init(&self) -> Init {
        // `ops.py`: every weight drawn with standard deviation 0.02 (the
        // DCGAN initialisation; the reference truncates the
        // discriminator's convolutions' at two deviations).
        Init::Normal { std: 0.02 }
    }

    fn check_data(&self, dir: &Path, manifest: &Manifest) -> Result<(), TrainError> {
        let shown = dir.display();
        if manifest.schema.kind != SampleKind::MassMaps {
            return Err(TrainError::Data(format!(
                "{shown}: holds {:?} samples; cosmogan trains on mass maps (simgen massmaps)",
                manifest.schema.kind
            )));
        }
        let files = loader::catalog::sample_paths(dir, manifest, None);
        if files.is_empty() {
            return Err(TrainError::Data(format!("{shown}: the manifest lists no map file")));
        }
        // Every file's header, before MPI starts (the maps are not read).
        let maps = MassMaps::open(&files).map_err(TrainError::from)?;
        if maps.side() != self.network.side {
            return Err(TrainError::Data(format!(
                "{shown}: maps of {0}×{0}; cosmogan '{1}' makes and judges maps of {2}×{2}",
                maps.side(),
                self.network.name,
                self.network.side
            )));
        }
        Ok(())
    }

    fn split(&self, manifest: &Manifest) -> Option<Split> {
        Split::by_folders(manifest)
    }

    fn open_dataset(
        &self,
        dir: &Path,
        manifest: &Manifest,
        files: Option<&[usize]>,
    ) -> Result<Arc<dyn Dataset>, DatasetError> {
        Ok(Arc::new(MassMaps::open(&loader::catalog::sample_paths(dir, manifest, files))?))
    }

    fn file_opener(&self) -> Option<loader::served::FileOpener> {
        Some(loader::served::path_opener(MassMaps::open))
    }

    /// Maps of the configuration's side of uniform values in [0, 1).
    fn synthetic_data(&self, samples: usize) -> Result<Option<Arc<dyn Dataset>>, TrainError> {
        let s = self.network.side;
        let target = loader::synthetic::Target::Values { low: 0.0, high: 1.0 };
        Ok(Some(Arc::new(loader::synthetic::SyntheticDataset::new(samples, s * s, TARGET_LEN, target))))
    }

    fn loss_with_cuts(
        &self,
        net: &CosmoGan,
        batch: &Batch,
        step: &StepContext,
        device: &Device,
        _cuts: &mut Cuts,
    ) -> Result<Tensor<1>, TrainError> {
        let pass = Pass::training(step, self.norm_group);
        let real = self.real(batch, device);
        let fake = net.generator.forward(self.training_noise(step, batch.len(), device), &pass);
        let d_real = net.discriminator.forward(real, &pass);
        let (d_fake, g_fake) = net.discriminator.forward_twin(fake, &pass);
        let (real_label, fake_label) = if self.flipped(step) { (0.0, 1.0) } else { (1.0, 0.0) };
        let d_loss = cross_entropy(d_real, real_label) + cross_entropy(d_fake, fake_label);
        Ok(d_loss + cross_entropy(g_fake, 1.0))
    }

    fn metric_names(&self) -> &'static [&'static str] {
        &["d_loss", "g_loss", "pk_error", "pk_ratio", "pixel_ks", "real_pk", "generated_pk"]
    }

    /// For every held-out real map, one generated map (noise seeded by
    /// rank and batch): the discriminator's and generator's losses (the
    /// discriminator in inference mode), the mean power spectrum of each
    /// kind ring by ring and their ratio (generated over real), the mean
    /// |ln ratio| over the rings, and the Kolmogorov-Smirnov distance
    /// between the pixel histograms.
    fn validate(
        &self,
        world: &World,
        net: &CosmoGan,
        batches: &mut dyn Iterator<Item = Result<Batch, DatasetError>>,
        device: &Device,
    ) -> Result<Validation, TrainError> {
        let side = self.network.side;
        let rings = side / 2;
        let mut spectrum = SpectrumEstimator::new(side);
        let (mut real_power, mut fake_power) = (vec![0f64; rings], vec![0f64; rings]);
        let (mut real_pixels, mut fake_pixels) = (PixelHistogram::default(), PixelHistogram::default());
        // [maps, Σ d_loss·n, Σ g_loss·n]
        let mut local = [0f64; 3];
        for (b, batch) in batches.enumerate() {
            let batch = batch.map_err(TrainError::from)?;
            let n = batch.len();
            let fake = self.generated(net, (world.rank(), b), n, device);
            let d_real = net.discriminator.forward(self.real(&batch, device), &Pass::inference());
            let d_fake = net.discriminator.forward(fake.clone(), &Pass::inference());
            let d_loss = cross_entropy(d_real, 1.0) + cross_entropy(d_fake.clone(), 0.0);
            local[0] += n as f64;
            local[1] += f64::from(crate::engine::scalar(d_loss)?) * n as f64;
            local[2] += f64::from(crate::engine::scalar(cross_entropy(d_fake, 1.0))?) * n as f64;
            for map in batch.x.chunks_exact(side * side) {
                spectrum.add(map, &mut real_power);
                map.iter().for_each(|&x| real_pixels.add(to_unit(x)));
            }
            let generated = values(fake)?;
            for map in generated.chunks_exact(side * side) {
                map.iter().for_each(|&s| fake_pixels.add(s));
                let density: Vec<f32> = map.iter().map(|&s| from_unit(s)).collect();
                spectrum.add(&density, &mut fake_power);
            }
        }
        let sum = |mine: &[f64]| {
            let mut all = vec![0f64; mine.len()];
            world.comm().all_reduce_into(mine, &mut all[..], SystemOperation::sum());
            all
        };
        let totals = sum(&local);
        let maps = totals[0];
        if maps == 0.0 {
            return Err(TrainError::Data("no validation map to compare generated maps with".into()));
        }
        let real_power: Vec<f64> = sum(&real_power).iter().map(|p| p / maps).collect();
        let fake_power: Vec<f64> = sum(&fake_power).iter().map(|p| p / maps).collect();
        let histogram = |h: &PixelHistogram| {
            PixelHistogram::from_counts(sum(h.counts()))
                .ok_or_else(|| TrainError::Model("pixel histograms of another size".into()))
        };
        let pixel_ks = ks_distance(&histogram(&real_pixels)?, &histogram(&fake_pixels)?)
            .ok_or_else(|| TrainError::Model("no pixel to compare".into()))?;
        let ratio: Vec<f64> = fake_power.iter().zip(&real_power).map(|(f, r)| f / r).collect();
        let logs: Vec<f64> = ratio.iter().filter(|r| r.is_finite() && **r > 0.0).map(|r| r.ln().abs()).collect();
        let pk_error =
            if logs.len() == ratio.len() { logs.iter().sum::<f64>() / logs.len() as f64 } else { f64::INFINITY };
        let (d_loss, g_loss) = (totals[1] / maps, totals[2] / maps);
        let at = |m: usize| ratio.get(m.saturating_sub(1)).copied().unwrap_or(f64::NAN);
        let line = format!(
            "val d_loss {d_loss:.4}, g_loss {g_loss:.4}; generated/real P(k): {:.3} at k = 1, {:.3} at {}, {:.3} at {} \
             (cycles per map), mean |ln ratio| {pk_error:.3}; pixel histogram KS {pixel_ks:.3}",
            at(1),
            at(rings / 4),
            rings / 4,
            at(rings),
            rings
        );
        let mut metrics = serde_json::Map::new();
        for (name, value) in [("d_loss", d_loss), ("g_loss", g_loss), ("pk_error", pk_error), ("pixel_ks", pixel_ks)] {
            metrics.insert(name.into(), value.into());
        }
        for (name, series) in [("pk_ratio", &ratio), ("real_pk", &real_power), ("generated_pk", &fake_power)] {
            metrics.insert(name.into(), serde_json::json!(series));
        }
        Ok(Validation { samples: maps as u64, metrics, line })
    }

    fn picture(&self, net: &CosmoGan, batch: &Batch, device: &Device, path: &Path) -> Result<bool, TrainError> {
        let side = self.network.side;
        let shown = batch.len().min(4);
        let fake = values(self.generated(net, (0, 0), shown, device))?;
        let generated: Vec<f32> = fake.iter().map(|&s| from_unit(s)).collect();
        super::picture::write(&batch.x[..shown * side * side], &generated, side, path)
            .map_err(|e| TrainError::context(format!("writing {}", path.display()), e))?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn cross_entropy_is_tensorflows_for_large_and_small_logits() {
        let device = Device::flex();
        let logits = Tensor::<2>::from_data(TensorData::new(vec![0f32, 100.0, -100.0], [3, 1]), &device);
        // ln 2, 0 and 100 against label 1.
        let expected = (std::f32::consts::LN_2 + 0.0 + 100.0) / 3.0;
        let got = crate::engine::scalar(cross_entropy(logits, 1.0)).unwrap();
        assert!((got - expected).abs() < 1e-4, "{got} {expected}");
    }

    #[test]
    fn one_rank_in_two_groups_draws_the_noise_two_ranks_draw() {
        let choice = |batch| ModelChoice { config: "small".into(), batch };
        let grouped =
            CosmoGanModel::new(&choice(4), &CosmoGanOptions { bn_group: Some(2), ..Default::default() }).unwrap();
        let alone = CosmoGanModel::new(&choice(2), &CosmoGanOptions::default()).unwrap();
        let device = Device::flex();
        let step = |rank| StepContext { seed: 5, epoch: 0, step: 3, rank };
        let one: Vec<f32> = grouped.training_noise(&step(0), 4, &device).into_data().try_to_vec::<f32>().unwrap();
        let z = grouped.network.noise;
        for rank in 0..2 {
            let theirs: Vec<f32> =
                alone.training_noise(&step(rank), 2, &device).into_data().try_to_vec::<f32>().unwrap();
            // Rank r's sample k is sample 2k + r of the one rank's batch.
            for k in 0..2 {
                assert_eq!(&theirs[k * z..(k + 1) * z], &one[(2 * k + rank) * z..(2 * k + rank + 1) * z]);
            }
        }
    }

    #[test]
    fn labels_flip_in_about_the_share_of_steps_asked_for() {
        let choice = ModelChoice { config: "small".into(), batch: 2 };
        let model =
            CosmoGanModel::new(&choice, &CosmoGanOptions { flip_labels: Some(0.1), ..Default::default() }).unwrap();
        let flipped =
            (0..2000).filter(|&s| model.flipped(&StepContext { seed: 1, epoch: 0, step: s, rank: 0 })).count();
        assert!((150..250).contains(&flipped), "{flipped}");
        assert!(flip_probability("0.6").is_err() && flip_probability("-0.1").is_err());
    }
}
