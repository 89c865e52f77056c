//! The Etalumis network as the engine trains it: traces from trace stores
//! (or simulated as they are read, [`online`](super::online)), a minibatch split into sub-batches of one trace type, the loss
//! −Σ log q(x_t | y) over the controlled choices averaged over the batch
//! (pyprob `InferenceNetworkLSTM._loss`), and validation against the prior.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use burn::tensor::{Device, Int, Tensor, TensorData};
use cluster::World;
use formats::manifest::{Manifest, SampleKind};
use loader::dataset::{Dataset, DatasetError};
use loader::pipeline::Batch;
use loader::traces::{CHOICE_WIDTH, TraceStores};
use mpi::collective::SystemOperation;
use mpi::traits::*;
use serde::{Deserialize, Serialize};

use super::layout::Layout;
use super::net::EtalumisNet;
use super::observation::ObservationEmbedding;
use super::online::{self, OnlineConfig, OnlineTraces};
use super::proposal::{Rows, log_density};
use super::{EtalumisConfig, by_name};
use crate::engine::segments::Cuts;
use crate::engine::{ModelChoice, ModelSummary, Sampling, StepContext, TrainError, TrainModel, Validation};
use crate::params::Init;

/// Training traces (the first a rank holds) the observation's scale is
/// fitted on.
const FITTED_TRACES: usize = 16;

/// Buckets of the bucketed sampler unless `--buckets` says otherwise.
pub const DEFAULT_BUCKETS: usize = 16;

/// What the network depends on beyond its configuration, saved in
/// checkpoints and read back by inference: the address layers, the
/// observation's shape, and the one mean and deviation the observations
/// are standardised with (fitted on the first training traces).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataLayout {
    /// The address-specific layers.
    pub layout: Layout,
    /// Observation shape: (depth, height, width) for the calorimeter's
    /// CNN, any other for the feed-forward embedding.
    pub observation: Vec<usize>,
    /// Mean of the observations' values.
    pub observation_mean: f32,
    /// Their deviation.
    pub observation_std: f32,
}

/// What a checkpoint records of the network beyond its parameters: the
/// configuration (with `--lstm-depth` applied) and the data layout, all
/// that inference needs to build it again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedNetwork {
    /// The sizes.
    pub config: EtalumisConfig,
    /// The address layers, observation shape and scale.
    #[serde(flatten)]
    pub data: DataLayout,
}

/// The Etalumis inference network with everything the engine asks of a model.
#[derive(Debug)]
pub struct EtalumisModel {
    config: EtalumisConfig,
    buckets: usize,
    /// The training data's directory and what was read from it.
    data: OnceLock<(PathBuf, DataLayout)>,
    /// Traces simulated as they are read instead of stores (`--online`).
    online: Option<OnlineConfig>,
    /// Online training traces dropped for visiting an address the pilot
    /// never met, on this rank.
    dropped: AtomicU64,
}

/// One trace of a batch, read from its target.
struct Parsed {
    /// Layout positions of its controlled choices (its type).
    positions: Vec<usize>,
    /// Per choice: value, the prior's two numbers, log prior.
    choices: Vec<[f32; 4]>,
}

/// The batch's traces, `None` for one that visits an address the network
/// has no layers for.
fn parse(batch: &Batch) -> Vec<Option<Parsed>> {
    (0..batch.len())
        .map(|k| {
            let target = batch.target(k);
            let mut parsed = Parsed { positions: Vec::new(), choices: Vec::new() };
            for c in target.chunks_exact(CHOICE_WIDTH) {
                if c[0] < 0.0 {
                    return None;
                }
                parsed.positions.push(c[0] as usize);
                parsed.choices.push([c[1], c[2], c[3], c[4]]);
            }
            Some(parsed)
        })
        .collect()
}

/// Etalumis' own options (`trainer train etalumis --help`). Observations
/// are always standardised; the weights are drawn as the paper's layers
/// are.
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct EtalumisOptions {
    /// LSTM layers, 1 to 4 (default: the configuration's, 1).
    #[arg(long, value_parser = clap::builder::TypedValueParser::map(clap::value_parser!(u8).range(1..=4), usize::from))]
    pub lstm_depth: Option<usize>,
    /// Batches are cut from the traces' sorted order (each mostly one trace
    /// type) and grouped into this many buckets, dealt out to the ranks in
    /// a new order each epoch (Baydin et al. 2019; default 16). 0: random
    /// batches of shuffled traces instead.
    #[arg(long)]
    pub buckets: Option<usize>,
    /// Train online (Baydin et al. 2019, Sec. IV-D): TRACES new traces of
    /// the built-in tau simulator per epoch (over all ranks), simulated by
    /// the loader workers as they are read; no --data. Trace i is trace i of
    /// `simgen traces --seed --online-seed`. Validate on stores of another
    /// seed with --val.
    #[arg(long, value_name = "TRACES", value_parser = clap::value_parser!(u64).range(1..))]
    pub online: Option<u64>,
    /// Seed of the online traces.
    #[arg(long, default_value_t = 1, requires = "online")]
    pub online_seed: u64,
    /// Prior runs simulated before training to find the addresses the
    /// network gets layers for (the same on every rank); an online trace
    /// visiting an address they never met is dropped and counted.
    #[arg(long, default_value_t = online::DEFAULT_PILOT, requires = "online")]
    pub online_pilot: usize,
    /// The calorimeter's noise per voxel of the online traces, GeV
    /// (`simgen traces --noise`; default simgen's).
    #[arg(long, requires = "online")]
    pub online_noise: Option<f32>,
}

impl EtalumisModel {
    /// The configuration `choice` names with `options`.
    pub fn new(choice: &ModelChoice, options: &EtalumisOptions) -> Result<Self, TrainError> {
        let mut config = by_name(&choice.config)
            .ok_or_else(|| TrainError::Model(format!("unknown etalumis configuration '{}'", choice.config)))?;
        if let Some(depth) = options.lstm_depth {
            config.lstm_depth = depth;
        }
        if let Some(noise) = options.online_noise
            && !(noise.is_finite() && noise > 0.0)
        {
            return Err(TrainError::Invalid(format!("--online-noise must be a positive number of GeV, got {noise}")));
        }
        let online = options.online.map(|_| OnlineConfig {
            seed: options.online_seed,
            pilot: options.online_pilot,
            noise: options.online_noise,
        });
        Ok(EtalumisModel {
            config,
            buckets: options.buckets.unwrap_or(DEFAULT_BUCKETS),
            data: OnceLock::new(),
            online,
            dropped: AtomicU64::new(0),
        })
    }

    /// The layout of online training, from the pilot (once).
    fn online_layout(&self, online: &OnlineConfig) -> Result<&DataLayout, TrainError> {
        if let Some((_, data)) = self.data.get() {
            return Ok(data);
        }
        let runs = online::pilot(online)?;
        let layout = Layout::of_runs(&runs, "the online pilot")?;
        let observation = runs[0].observation_shape.clone();
        ObservationEmbedding::new(&self.config, &observation, &Device::flex())?;
        let (observation_mean, observation_std) =
            observation_scale(runs.iter().take(FITTED_TRACES).map(|r| r.observation.as_slice()))?;
        let data = DataLayout { layout, observation, observation_mean, observation_std };
        let _ = self.data.set((PathBuf::from("(online)"), data));
        self.data()
    }

    /// What the training data decided, once it was checked.
    fn data(&self) -> Result<&DataLayout, TrainError> {
        self.data
            .get()
            .map(|(_, d)| d)
            .ok_or_else(|| TrainError::Data("the data was not checked before training".into()))
    }

    /// Σ log q(x_t | y) over every controlled choice of the batch's traces
    /// that the network has layers for (a one-element tensor); `None` when
    /// no such trace has a controlled choice. The observations' CNN is cut
    /// as `cuts` says.
    fn log_q(
        &self,
        net: &EtalumisNet,
        batch: &Batch,
        traces: &[Option<Parsed>],
        device: &Device,
        cuts: &mut Cuts,
    ) -> Result<Option<Tensor<1>>, TrainError> {
        let data = self.data()?;
        let (layout, shape) = (&data.layout, &data.observation);
        let (mean, std) = (data.observation_mean, data.observation_std);
        let used: Vec<usize> =
            (0..traces.len()).filter(|&k| traces[k].as_ref().is_some_and(|t| !t.positions.is_empty())).collect();
        if used.is_empty() {
            return Ok(None);
        }
        let voxels: usize = shape.iter().product();
        let mut x = Vec::with_capacity(used.len() * voxels);
        for &k in &used {
            x.extend(batch.x[k * voxels..(k + 1) * voxels].iter().map(|v| (v - mean) / std));
        }
        let observed =
            net.observation.forward_cut(Tensor::from_data(TensorData::new(x, [used.len(), voxels]), device), cuts);
        // Sub-batches of one trace type, in the order the types first occur.
        let mut types: Vec<(&[usize], Vec<usize>)> = Vec::new();
        for (row, &k) in used.iter().enumerate() {
            let Some(trace) = &traces[k] else { continue };
            match types.iter_mut().find(|(t, _)| *t == trace.positions.as_slice()) {
                Some((_, rows)) => rows.push(row),
                None => types.push((&trace.positions, vec![row])),
            }
        }
        let c = &self.config;
        // Per address: its LSTM outputs and recorded choices, over all sub-batches.
        let mut per_address: BTreeMap<usize, (Vec<Tensor<2>>, Rows)> = BTreeMap::new();
        for (positions, rows) in &types {
            let (b, steps) = (rows.len(), positions.len());
            let choice = |t: usize, field: usize| -> Vec<f32> {
                rows.iter().filter_map(|&r| traces[used[r]].as_ref().map(|p| p.choices[t][field])).collect()
            };
            let index =
                Tensor::<1, Int>::from_data(TensorData::new(rows.iter().map(|&r| r as i64).collect(), [b]), device);
            let embedded =
                observed.clone().select(0, index).unsqueeze_dim::<3>(1).expand([b, steps, c.observation_embedding]);
            let addresses = Tensor::cat(positions.iter().map(|&a| net.addresses[a].embedding()).collect(), 1).expand([
                b,
                steps,
                c.address_embedding,
            ]);
            let mut previous = vec![Tensor::<3>::zeros([b, 1, c.sample_embedding], device)];
            for t in 1..steps {
                let a = positions[t - 1];
                let values = net.addresses[a].embed_values(
                    &layout.addresses[a],
                    &choice(t - 1, 0),
                    (&choice(t - 1, 1), &choice(t - 1, 2)),
                );
                previous.push(values.unsqueeze_dim(1));
            }
            let input = Tensor::cat(vec![embedded, Tensor::cat(previous, 1), addresses], 2);
            // One selection of the outputs per address rather than one slice
            // per step: the backward pass of either is a zeroed tensor of
            // all the outputs, and a trace visits fewer addresses than steps
            // when it loops.
            let out = net.lstm.forward(input).reshape([b * steps, c.lstm_hidden]);
            let mut visits: Vec<(usize, Vec<usize>)> = Vec::new();
            for (t, &a) in positions.iter().enumerate() {
                match visits.iter_mut().find(|(at, _)| *at == a) {
                    Some((_, steps_at)) => steps_at.push(t),
                    None => visits.push((a, vec![t])),
                }
            }
            for (a, steps_at) in visits {
                // Rows in the order the steps come, each step's samples in turn.
                let rows: Vec<i64> =
                    steps_at.iter().flat_map(|&t| (0..b).map(move |r| (r * steps + t) as i64)).collect();
                let count = rows.len();
                let index = Tensor::<1, Int>::from_data(TensorData::new(rows, [count]), device);
                let entry = per_address.entry(a).or_default();
                entry.0.push(out.clone().select(0, index));
                for &t in &steps_at {
                    for ((v, p1), p2) in choice(t, 0).into_iter().zip(choice(t, 1)).zip(choice(t, 2)) {
                        entry.1.push(v, p1, p2);
                    }
                }
            }
        }
        let mut total: Option<Tensor<1>> = None;
        for (a, (outs, rows)) in per_address {
            let head = net.addresses[a].head(Tensor::cat(outs, 0));
            let sum = log_density(&layout.addresses[a], c.mixture_components, head, &rows).sum();
            total = Some(match total {
                Some(t) => t + sum,
                None => sum,
            });
        }
        Ok(total)
    }
}

/// One mean and deviation of the observations' values over the first
/// traces of the training stores: read before training (with the address
/// layout), so that a checkpoint's layout can be checked before MPI starts.
fn stores_scale(stores: &TraceStores) -> Result<(f32, f32), TrainError> {
    let mut x = vec![0f32; stores.x_len()];
    let mut target = Vec::new();
    let mut observations = Vec::new();
    for i in 0..stores.len().min(FITTED_TRACES) {
        target.clear();
        stores.read_ragged(i, &mut x, &mut target).map_err(TrainError::from)?;
        observations.push(x.clone());
    }
    observation_scale(observations.iter().map(Vec::as_slice))
}

/// One mean and deviation of the values of `observations`.
fn observation_scale<'a>(observations: impl Iterator<Item = &'a [f32]>) -> Result<(f32, f32), TrainError> {
    let mut sums = [0f64; 3];
    for x in observations {
        sums[0] += x.len() as f64;
        sums[1] += x.iter().map(|&v| f64::from(v)).sum::<f64>();
        sums[2] += x.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>();
    }
    let mean = sums[1] / sums[0];
    let std = (sums[2] / sums[0] - mean * mean).max(0.0).sqrt();
    if std.is_nan() || std <= 0.0 {
        return Err(TrainError::Data("the first training traces' observations do not vary: nothing to learn".into()));
    }
    Ok((mean as f32, std as f32))
}

fn scalar(t: Tensor<1>) -> Result<f64, TrainError> {
    crate::engine::scalar(t).map(f64::from)
}

impl TrainModel for EtalumisModel {
    type Net = EtalumisNet;

    fn summary(&self) -> ModelSummary {
        let mut details = serde_json::to_value(&self.config).unwrap_or(serde_json::Value::Null);
        if let Some(map) = details.as_object_mut() {
            map.insert("buckets".into(), self.buckets.into());
            if let Some((_, data)) = self.data.get() {
                map.insert("addresses".into(), data.layout.addresses.len().into());
            }
        }
        ModelSummary { name: "etalumis".into(), config: self.config.name.clone(), details }
    }

    /// Without checked data (`trainer models`), the layers every trace
    /// shares and none per address, on the simulator's calorimeter.
    fn build(&self, device: &Device) -> Result<EtalumisNet, TrainError> {
        match self.data.get() {
            Some((_, data)) => EtalumisNet::new(&self.config, &data.observation, &data.layout, device),
            None => EtalumisNet::new(&self.config, &[20, 35, 35], &Layout::default(), device),
        }
    }

    fn weight_init(&self) -> Init {
        Init::GlorotUniform
    }

    fn check_data(&self, dir: &Path, manifest: &Manifest) -> Result<(), TrainError> {
        let shown = dir.display();
        if manifest.schema.kind != SampleKind::Traces {
            return Err(TrainError::Data(format!(
                "{shown}: holds {:?} samples; etalumis trains on trace stores (simgen traces)",
                manifest.schema.kind
            )));
        }
        let stores =
            TraceStores::open(&loader::catalog::lmdb_stores(dir, manifest, None), &[]).map_err(TrainError::from)?;
        let shape: Vec<usize> = stores.observation_shape().iter().map(|&d| d as usize).collect();
        match self.data.get() {
            None => {
                let layout = Layout::of_stores(stores.stores())?;
                let (observation_mean, observation_std) = stores_scale(&stores)?;
                // A volume too small for the CNN is refused here, before MPI starts.
                ObservationEmbedding::new(&self.config, &shape, &Device::flex())?;
                let data = DataLayout { layout, observation: shape, observation_mean, observation_std };
                let _ = self.data.set((dir.to_owned(), data));
            }
            // The training data again, or validation data: its traces must
            // fit the network made for the training data.
            Some((_, trained)) if trained.observation != shape => {
                return Err(TrainError::Data(format!(
                    "{shown}: observations of {shape:?}, the training data's are {:?}",
                    trained.observation
                )));
            }
            Some(_) => {}
        }
        Ok(())
    }

    fn sampling(&self) -> Sampling {
        if self.buckets == 0 { Sampling::Shuffled } else { Sampling::Bucketed { buckets: self.buckets } }
    }

    fn sparse_gradients(&self) -> bool {
        true
    }

    fn layout(&self) -> serde_json::Value {
        let Some((_, data)) = self.data.get() else { return serde_json::Value::Null };
        let saved = SavedNetwork { config: self.config.clone(), data: data.clone() };
        serde_json::to_value(saved).unwrap_or(serde_json::Value::Null)
    }

    /// The online traces (`--online`), after the pilot; `None` without it.
    fn synthetic_data(&self, samples: usize) -> Result<Option<Arc<dyn Dataset>>, TrainError> {
        let Some(online) = &self.online else { return Ok(None) };
        let data = self.online_layout(online)?;
        let x_len = data.observation.iter().product();
        Ok(Some(Arc::new(OnlineTraces::new(*online, &data.layout, samples, x_len))))
    }

    fn open_dataset(
        &self,
        dir: &Path,
        manifest: &Manifest,
        files: Option<&[usize]>,
    ) -> Result<Arc<dyn Dataset>, DatasetError> {
        let names = self.data.get().map(|(_, data)| data.layout.names()).unwrap_or_default();
        Ok(Arc::new(TraceStores::open(&loader::catalog::lmdb_stores(dir, manifest, files), &names)?))
    }

    fn loss_with_cuts(
        &self,
        net: &EtalumisNet,
        batch: &Batch,
        _step: &StepContext,
        device: &Device,
        cuts: &mut Cuts,
    ) -> Result<Tensor<1>, TrainError> {
        let traces = parse(batch);
        let unknown = traces.iter().filter(|t| t.is_none()).count();
        if unknown > 0 {
            if self.online.is_none() {
                let k = traces.iter().position(Option::is_none).unwrap_or(0);
                return Err(TrainError::Data(format!(
                    "training trace {} visits an address the network has no layers for",
                    batch.indices[k]
                )));
            }
            self.dropped.fetch_add(unknown as u64, Ordering::Relaxed);
        }
        // A batch with no trace to score (every online trace dropped) still
        // takes part in the step, with zero gradients.
        let total = self.log_q(net, batch, &traces, device, cuts)?.or_else(|| net.lstm.tracked_zero());
        let total = total.unwrap_or_else(|| Tensor::zeros([1], device));
        Ok(total.neg().div_scalar((batch.len() - unknown).max(1) as f32))
    }

    fn training_flops(&self, batch: &Batch) -> Result<f64, TrainError> {
        let (_, data) =
            self.data.get().ok_or_else(|| TrainError::Data("the data was not checked before training".into()))?;
        let macs: f64 = parse(batch)
            .iter()
            .flatten()
            .map(|t| super::flops::trace(&self.config, &data.observation, &data.layout, &t.positions))
            .sum();
        Ok(crate::flops::training_flops(macs))
    }

    fn metric_names(&self) -> &'static [&'static str] {
        &["loss", "prior_loss", "skipped", "dropped"]
    }

    /// The mean −log q per trace on the held-out traces, the same with the
    /// prior as proposal (−log p), and how many traces were skipped because
    /// they visit an address the network has no layers for.
    fn validate(
        &self,
        world: &World,
        net: &EtalumisNet,
        batches: &mut dyn Iterator<Item = Result<Batch, DatasetError>>,
        device: &Device,
    ) -> Result<Validation, TrainError> {
        // [Σ −log q, Σ −log p, traces scored, traces skipped, online traces dropped]
        let mut local = [0f64; 5];
        local[4] = self.dropped.load(Ordering::Relaxed) as f64;
        for batch in batches {
            let batch = batch.map_err(TrainError::from)?;
            let traces = parse(&batch);
            if let Some(total) = self.log_q(net, &batch, &traces, device, &mut Cuts::off())? {
                local[0] -= scalar(total)?;
            }
            for trace in &traces {
                match trace {
                    Some(t) => {
                        local[1] -= t.choices.iter().map(|c| f64::from(c[3])).sum::<f64>();
                        local[2] += 1.0;
                    }
                    None => local[3] += 1.0,
                }
            }
        }
        let mut total = [0f64; 5];
        world.comm().all_reduce_into(&local[..], &mut total[..], SystemOperation::sum());
        let scored = total[2];
        let (loss, prior) = if scored > 0.0 { (total[0] / scored, total[1] / scored) } else { (f64::NAN, f64::NAN) };
        let (skipped, dropped) = (total[3] as u64, total[4] as u64);
        let mut line = format!(
            "val −log q {loss:.3} per trace (the prior: {prior:.3}), {skipped} traces skipped (unknown addresses)"
        );
        if self.online.is_some() {
            line += &format!(", {dropped} online training traces dropped so far (addresses the pilot never met)");
        }
        let mut metrics = serde_json::Map::new();
        metrics.insert("loss".into(), loss.into());
        metrics.insert("prior_loss".into(), prior.into());
        metrics.insert("skipped".into(), skipped.into());
        metrics.insert("dropped".into(), dropped.into());
        Ok(Validation { samples: scored as u64, metrics, line })
    }
}
