//! Stopping a run at the first value that is not a finite number.
//!
//! One NaN in one sample's input makes every parameter NaN within a step,
//! and a rate that overflows does the same in the optimiser; training on
//! would overwrite the good checkpoints with NaN (only two are kept). So
//! every step each rank checks its loss and its gradients (one pass over
//! them, as integers: [`loader::finite::all_finite`]), the ranks share a
//! flag each, and all of them stop at the same step if any is set, before
//! the exchange, the update and any checkpoint. The parameters and model
//! state are checked again before each checkpoint, for what the gradients
//! cannot show (an update that overflows).

use cluster::World;
use loader::dataset::Dataset;
use loader::finite::first_non_finite;
use loader::pipeline::Batch;
use mpi::traits::*;

use crate::loss_scale::LossScaler;

/// Where and why a run stopped on a value that is not finite.
#[derive(Debug)]
pub struct NonFinite {
    /// The optimiser step (from 0, over the whole run) that met it.
    pub step: u64,
    /// The epoch (1-based).
    pub epoch: u64,
    /// Every rank whose loss or gradients were not finite (empty when the
    /// parameters themselves were found so before a checkpoint).
    pub ranks: Vec<usize>,
    /// Whether this rank prints the message: the first of `ranks`, or rank
    /// 0 when every rank found the same thing. The others stay quiet, so a
    /// job prints one line.
    pub reports: bool,
    /// This rank's loss at that step (NaN where no step was taken).
    pub loss: f32,
    /// What this rank found: the loss, and the sample and file that hold a
    /// bad value where one does.
    pub detail: String,
}

impl std::fmt::Display for NonFinite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "step {} (epoch {}): ", self.step, self.epoch)?;
        if !self.ranks.is_empty() {
            let ranks: Vec<String> = self.ranks.iter().map(usize::to_string).collect();
            write!(f, "a loss or gradient that is not a finite number on rank(s) {}: ", ranks.join(", "))?;
        }
        write!(f, "{}; the run stopped without saving a checkpoint (the last good ones are kept)", self.detail)
    }
}

/// The ranks whose `bad` flag is set, the same list on every rank.
/// Collective: a byte per rank, gathered every step.
pub fn ranks_with(world: &World, bad: bool) -> Vec<usize> {
    let mut flags = vec![0u8; world.size()];
    world.comm().all_gather_into(&u8::from(bad), &mut flags[..]);
    flags.iter().enumerate().filter(|&(_, &flag)| flag != 0).map(|(rank, _)| rank).collect()
}

/// Stop every rank alike if any rank's loss or gradients were not finite
/// at `step` (`finite` and `loss` are this rank's). Collective.
pub fn stop_unless_finite(world: &World, step: u64, (finite, loss): (bool, f32), epoch: u64) -> Result<(), NonFinite> {
    let ranks = ranks_with(world, !finite);
    if ranks.is_empty() {
        return Ok(());
    }
    Err(NonFinite {
        step,
        epoch: epoch + 1,
        reports: ranks.first() == Some(&world.rank()),
        loss,
        detail: format!("loss {loss}"),
        ranks,
    })
}

/// After a step's backward pass, with `finite` whether this rank's
/// gradients were all finite and `loss` its loss: every rank stops alike
/// if a loss was not finite, or if gradients were not and the loss is
/// unscaled. With a loss scale, gradients that overflowed on any rank
/// skip the step on every rank and lower the scale: `Ok(false)`.
/// `Ok(true)`: apply the step. Collective (one gather of a byte per rank).
pub fn finite_or_skipped(
    world: &World,
    scaler: &mut LossScaler,
    (finite, loss): (bool, f32),
    (step, epoch): (u64, u64),
) -> Result<bool, NonFinite> {
    if !scaler.active() {
        stop_unless_finite(world, step, (finite && loss.is_finite(), loss), epoch)?;
        return Ok(true);
    }
    const BAD_LOSS: u8 = 1;
    const OVERFLOW: u8 = 2;
    let mine = if loss.is_finite() { 0 } else { BAD_LOSS } | if finite { 0 } else { OVERFLOW };
    let mut flags = vec![0u8; world.size()];
    world.comm().all_gather_into(&mine, &mut flags[..]);
    let bad_loss: Vec<usize> = (0..flags.len()).filter(|&r| flags[r] & BAD_LOSS != 0).collect();
    if !bad_loss.is_empty() {
        return Err(NonFinite {
            step,
            epoch: epoch + 1,
            reports: bad_loss.first() == Some(&world.rank()),
            loss,
            detail: format!("loss {loss} (the loss itself, before scaling: lowering the loss scale cannot help)"),
            ranks: bad_loss,
        });
    }
    Ok(scaler.after_step(flags.iter().any(|f| f & OVERFLOW != 0)))
}

/// What is wrong in `batch` (read from `dataset`) given its `loss`: the
/// first sample whose input or target is not finite, named by file, or
/// that the data is finite and the network or the rate made the value.
pub fn diagnose(batch: &Batch, dataset: &dyn Dataset, loss: f32) -> String {
    let x_len = dataset.x_len();
    for (k, &index) in batch.indices.iter().enumerate() {
        let x = batch.x.get(k * x_len..(k + 1) * x_len).unwrap_or(&[]);
        for (part, values) in [("input", x), ("target", batch.target(k))] {
            if let Some((position, value)) = first_non_finite(values) {
                return format!(
                    "loss {loss}; {}: {part} value {position} is {value} (train with --check-finite to find such samples as they are read)",
                    dataset.locate(index)
                );
            }
        }
    }
    format!(
        "loss {loss} with every input and target of the batch finite: the network or the update diverged (lower --lr, add warm-up, or check the model's options)"
    )
}

/// An error unless every parameter and state value is finite. Every rank
/// holds the same values (they were checked to agree), so all decide alike;
/// rank 0 reports.
pub fn check_values(
    world: &World,
    values: &[Vec<f32>],
    state: &[Vec<f32>],
    (step, epoch): (u64, u64),
) -> Result<(), NonFinite> {
    let found = |kind: &'static str, tensors: &[Vec<f32>]| {
        tensors
            .iter()
            .enumerate()
            .find_map(|(i, t)| first_non_finite(t).map(|(position, value)| (i, kind, position, value)))
    };
    let Some((tensor, kind, position, value)) = found("parameter", values).or_else(|| found("state", state)) else {
        return Ok(());
    };
    Err(NonFinite {
        step,
        epoch,
        ranks: Vec::new(),
        reports: world.is_root(),
        loss: f32::NAN,
        detail: format!(
            "{kind} tensor {tensor} holds {value} at {position}: the update overflowed (lower --lr, add warm-up, or use --larc)"
        ),
    })
}
