//! What the ranks agree on outside the gradient exchange: per-step losses
//! averaged, model state (BatchNorm running statistics) averaged, and a
//! checksum proving every rank holds the same tensors.

use cluster::World;
use mpi::collective::SystemOperation;
use mpi::traits::*;

use super::TrainError;
use crate::params;

/// Each step's loss averaged over the ranks.
pub fn mean_over_ranks(world: &World, step_losses: &[f32]) -> Vec<f32> {
    let mut mean = vec![0f32; step_losses.len()];
    world.comm().all_reduce_into(step_losses, &mut mean[..], SystemOperation::sum());
    mean.iter_mut().for_each(|l| *l /= world.size() as f32);
    mean
}

/// A count summed over the ranks.
pub fn sum_over_ranks(world: &World, mine: u64) -> u64 {
    let mut all = 0u64;
    world.comm().all_reduce_into(&mine, &mut all, SystemOperation::sum());
    all
}

/// Replace every rank's state by its mean over the ranks. BatchNorm's
/// running statistics differ between ranks after a step (each normalises
/// its own share of the batch); their mean is what a single process
/// would hold had it seen all shares (exactly for the running means; for
/// the running variances it leaves out the spread of the ranks' means).
/// PyTorch's DDP instead broadcasts rank 0's buffers before every forward
/// pass. Collective.
pub fn average_state(world: &World, state: &mut [Vec<f32>]) {
    if world.size() == 1 {
        return;
    }
    let n = world.size() as f32;
    for tensor in state.iter_mut() {
        let mut sum = vec![0f32; tensor.len()];
        world.comm().all_reduce_into(&tensor[..], &mut sum[..], SystemOperation::sum());
        tensor.iter_mut().zip(&sum).for_each(|(v, s)| *v = s / n);
    }
}

/// The checksum of the parameters and the state, checked to be the same on
/// every rank. Collective.
pub fn agreed_checksum(world: &World, values: &[Vec<f32>], state: &[Vec<f32>], epoch: u64) -> Result<u64, TrainError> {
    let sum = checksum(values, state);
    let (mut min, mut max) = (0u64, 0u64);
    world.comm().all_reduce_into(&sum, &mut min, SystemOperation::min());
    world.comm().all_reduce_into(&sum, &mut max, SystemOperation::max());
    if min != max {
        return Err(TrainError::Diverged { epoch: epoch + 1, min, max });
    }
    Ok(sum)
}

/// The checksum of parameters then state (equal to the parameters' alone
/// for a model without state).
pub fn checksum(values: &[Vec<f32>], state: &[Vec<f32>]) -> u64 {
    if state.is_empty() {
        return params::checksum(values);
    }
    params::checksum(&[values, state].concat())
}
