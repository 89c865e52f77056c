//! Online training (Baydin et al., SC19, Sec. IV-D: "online" mode, traces
//! simulated while the network trains, no dataset on disk): a dataset
//! whose sample `i` is the built-in tau simulator's prior run `i` of a
//! seed, simulated by the loader worker that reads it and encoded as
//! [`TraceStores`](loader::traces::TraceStores) encodes a stored trace. Run
//! `i` of seed `s` is trace `i` of `simgen traces --seed s`, so online
//! training sees exactly the traces an offline run on those would.
//!
//! The network's address layers must exist before the first step and be
//! the same on every rank, so a pilot of prior runs (the same on every
//! rank, from a stream of its own) decides them and the observations'
//! scale; a training trace that visits an address the pilot never met is
//! dropped and counted ([`EtalumisModel`](super::EtalumisModel) reports
//! how many), as the issue of layers made mid-training at scale taught
//! the paper's authors (Sec. V-B).

use std::collections::HashMap;

use loader::dataset::{Dataset, DatasetError};
use loader::traces::{UNKNOWN_ADDRESS, choice_target};
use simgen::random::mix;
use simgen::traces::executor::Recorded;
use simgen::traces::generate::run_prior_of;
use simgen::traces::tau;

use super::layout::Layout;
use crate::engine::TrainError;

/// Stream of [`mix`] the pilot's seed comes from.
const PILOT_STREAM: u64 = 45;

/// Pilot runs unless `--online-pilot` says otherwise.
pub const DEFAULT_PILOT: usize = 1000;

/// How online traces are made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OnlineConfig {
    /// Seed: sample `i` is prior run `i` of it.
    pub seed: u64,
    /// Runs of the pilot that decides the address layers.
    pub pilot: usize,
    /// The calorimeter's noise per voxel, GeV (`None`: the simulator's).
    pub noise: Option<f32>,
}

/// Prior run `index` of `seed` of the tau simulator.
fn simulate(seed: u64, index: u64, noise: Option<f32>) -> Result<Recorded, String> {
    run_prior_of(&mut tau::simulate, seed, index, noise).map_err(|e| e.to_string())
}

/// The pilot's runs: the same on every rank.
pub fn pilot(config: &OnlineConfig) -> Result<Vec<Recorded>, TrainError> {
    if config.pilot == 0 {
        return Err(TrainError::Invalid("--online-pilot must be at least 1".into()));
    }
    let seed = mix(config.seed, 0, PILOT_STREAM);
    (0..config.pilot as u64)
        .map(|i| simulate(seed, i, config.noise).map_err(|e| TrainError::Model(format!("pilot run {i}: {e}"))))
        .collect()
}

/// The tau simulator's traces made as they are read.
pub struct OnlineTraces {
    config: OnlineConfig,
    /// Samples per epoch (the indices of epoch 0; any index can be read).
    per_epoch: usize,
    /// Layout position of each address the pilot met.
    positions: HashMap<String, f32>,
    /// Values per observation.
    x_len: usize,
}

impl OnlineTraces {
    /// Traces for a network laid out by `layout`, `per_epoch` per epoch,
    /// whose observations hold `x_len` values.
    pub fn new(config: OnlineConfig, layout: &Layout, per_epoch: usize, x_len: usize) -> OnlineTraces {
        let positions = layout.addresses.iter().enumerate().map(|(i, a)| (a.address.clone(), i as f32)).collect();
        OnlineTraces { config, per_epoch, positions, x_len }
    }
}

impl Dataset for OnlineTraces {
    /// The samples of one epoch; the sampler reads new indices beyond it
    /// every epoch ([`FreshSampler`](loader::sampler::FreshSampler)).
    fn len(&self) -> usize {
        self.per_epoch
    }

    fn locate(&self, index: usize) -> String {
        format!("online trace {index} (seed {})", self.config.seed)
    }

    fn x_len(&self) -> usize {
        self.x_len
    }

    /// Targets vary in length.
    fn y_len(&self) -> usize {
        0
    }

    fn read_into(&self, index: usize, x: &mut [f32], y: &mut [f32]) -> Result<u64, DatasetError> {
        loader::dataset::read_prefix(self, index, x, y)
    }

    fn read_ragged(&self, index: usize, x: &mut [f32], y: &mut Vec<f32>) -> Result<u64, DatasetError> {
        let failed = |reason: String| DatasetError::Simulated { index, reason };
        let run = simulate(self.config.seed, index as u64, self.config.noise).map_err(failed)?;
        if run.observation.len() != x.len() {
            return Err(failed(format!(
                "an observation of {} values, the pilot's held {}",
                run.observation.len(),
                x.len()
            )));
        }
        x.copy_from_slice(&run.observation);
        for choice in run.choices.iter().filter(|c| c.controlled) {
            let position = self.positions.get(&choice.address).copied().unwrap_or(UNKNOWN_ADDRESS);
            y.extend_from_slice(&choice_target(position, &choice.distribution, choice.value));
        }
        Ok(4 * (x.len() + y.len()) as u64)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Sample `i` is the trace `simgen traces --seed` stores as trace `i`
    /// (the same run, encoded as the stores are read), and an address the
    /// layout lacks is marked unknown, not dropped silently.
    #[test]
    fn an_online_trace_is_the_stored_trace_of_its_index() {
        let config = OnlineConfig { seed: 7, pilot: 20, noise: None };
        let layout = Layout::of_runs(&pilot(&config).unwrap(), "pilot").unwrap();
        let online = OnlineTraces::new(config, &layout, 10, simgen::traces::calorimeter::SHAPE.iter().product());
        let (mut x, mut y) = (vec![0f32; online.x_len()], Vec::new());
        online.read_ragged(12, &mut x, &mut y).unwrap();
        let run = run_prior_of(&mut tau::simulate, 7, 12, None).unwrap();
        assert_eq!(x, run.observation);
        let controlled: Vec<_> = run.choices.iter().filter(|c| c.controlled).collect();
        assert_eq!(y.len(), controlled.len() * loader::traces::CHOICE_WIDTH);
        for (row, c) in y.chunks_exact(loader::traces::CHOICE_WIDTH).zip(controlled) {
            let position = layout.addresses.iter().position(|a| a.address == c.address).map_or(-1.0, |p| p as f32);
            assert_eq!(row, choice_target(position, &c.distribution, c.value));
        }
        let empty = OnlineTraces::new(config, &Layout::default(), 10, online.x_len());
        y.clear();
        empty.read_ragged(12, &mut x, &mut y).unwrap();
        assert!(y.chunks_exact(loader::traces::CHOICE_WIDTH).all(|c| c[0] == UNKNOWN_ADDRESS));
    }
}
