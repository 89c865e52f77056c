//! The trained network as the simulator's proposal: at each controlled
//! choice the LSTM takes one step (the observation's embedding, the
//! previous choice's value embedding and this address's embedding, as in
//! training) and the address's head proposes the value (pyprob
//! `InferenceNetwork._infer_step`, Baydin et al. 2019, Sec. IV-B).
//!
//! An address the network has no layers for (one no training trace
//! visited) is proposed from its prior, as pyprob does; the LSTM skips it
//! and the next step sees no previous value.

use std::collections::HashMap;

use burn::tensor::{Device, Tensor};
use formats::lmdb::trace_codec::Distribution;
use loader::traces::prior_parameters;
use rand_chacha::ChaCha12Rng;
use simgen::traces::executor::{Choice, Proposal, Proposed};

use super::lstm::State;
use super::model::SavedNetwork;
use super::net::EtalumisNet;
use super::proposal::log_density_one;
use super::sampler;

/// The network proposing the choices of one run, for one observation.
pub struct NetworkProposal<'a> {
    net: &'a EtalumisNet,
    saved: &'a SavedNetwork,
    positions: &'a HashMap<String, usize>,
    /// The observation's embedding, [1, size].
    observed: Tensor<2>,
    states: Vec<State>,
    /// Choices proposed by their prior (addresses without layers).
    pub from_prior: usize,
}

impl<'a> NetworkProposal<'a> {
    /// A proposal for one run, given the observation's embedding
    /// [1, size] and each address's position in the layout.
    pub fn new(
        net: &'a EtalumisNet,
        saved: &'a SavedNetwork,
        positions: &'a HashMap<String, usize>,
        observed: Tensor<2>,
    ) -> Self {
        NetworkProposal { net, saved, positions, observed, states: Vec::new(), from_prior: 0 }
    }

    /// The embedding [1, size] of the run's last controlled choice, zeros
    /// at the first step and after an address without layers.
    fn previous_value(&self, so_far: &[Choice], device: &Device) -> Tensor<2> {
        let last = so_far.iter().rev().find(|c| c.controlled);
        match last.and_then(|c| self.positions.get(&c.address).map(|&p| (p, c))) {
            Some((p, c)) => {
                let [first, second] = prior_parameters(&c.distribution).map(|v| v as f32);
                self.net.addresses[p].embed_values(
                    &self.saved.data.layout.addresses[p],
                    &[c.value as f32],
                    (&[first], &[second]),
                )
            }
            None => Tensor::zeros([1, self.saved.config.sample_embedding], device),
        }
    }
}

impl Proposal for NetworkProposal<'_> {
    fn propose(
        &mut self,
        address: &str,
        prior: &Distribution,
        so_far: &[Choice],
        rng: &mut ChaCha12Rng,
    ) -> Result<Proposed, String> {
        let Some(&position) = self.positions.get(address) else {
            self.from_prior += 1;
            return Proposed::draw(prior, rng).map_err(|e| e.to_string());
        };
        let out = self.step(position, so_far)?;
        let layer = &self.saved.data.layout.addresses[position];
        let components = self.saved.config.mixture_components;
        let parameters = prior_parameters(prior);
        let value = sampler::draw(layer, components, &out, parameters, rng)?;
        let log_density = log_density_one(layer, components, &out, value, parameters);
        if !log_density.is_finite() {
            return Err(format!("the proposal's log density of its own draw {value} is {log_density}"));
        }
        Ok(Proposed { value, log_density })
    }
}

impl NetworkProposal<'_> {
    /// One LSTM step for the choice at layout `position`: its head's output row.
    fn step(&mut self, position: usize, so_far: &[Choice]) -> Result<Vec<f64>, String> {
        let device = self.observed.device();
        let previous = self.previous_value(so_far, &device);
        let embedding = self.net.addresses[position].embedding().reshape([1, self.saved.config.address_embedding]);
        let input = Tensor::cat(vec![self.observed.clone(), previous, embedding], 1);
        let h = self.net.lstm.step(input, &mut self.states);
        Ok(self.net.addresses[position]
            .head(h)
            .into_data()
            .try_to_vec::<f32>()
            .map_err(|e| format!("reading the head's output: {e}"))?
            .into_iter()
            .map(f64::from)
            .collect())
    }

    /// log q of a recorded run's controlled choices, stepping as
    /// [`propose`](Proposal::propose) does: what training minimises for
    /// this trace. `None` if a choice's address has no layers (training
    /// skips such traces too).
    pub fn score(&mut self, choices: &[Choice]) -> Result<Option<f64>, String> {
        let mut total = 0.0;
        for (i, c) in choices.iter().enumerate().filter(|(_, c)| c.controlled) {
            let Some(&position) = self.positions.get(&c.address) else { return Ok(None) };
            let out = self.step(position, &choices[..i])?;
            let layer = &self.saved.data.layout.addresses[position];
            let parameters = prior_parameters(&c.distribution);
            total += log_density_one(layer, self.saved.config.mixture_components, &out, c.value, parameters);
        }
        Ok(Some(total))
    }
}
