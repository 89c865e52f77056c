//! The trainer's checkpoints: parameters, model state (BatchNorm running
//! statistics), optimiser state and where training stands,
//! written by rank 0 at the end of an epoch (and, with `--checkpoint-every`,
//! every so many steps within one) and read by every rank on resume. A
//! checkpoint is a directory `epoch-N/` (N epochs done) or
//! `epoch-N-step-K/` (K steps into epoch N+1), holding JSON state and raw
//! little-endian `f32` arrays, made complete in a temporary directory and
//! renamed into place; `latest` names the newest, replaced atomically, so a
//! job killed mid-write resumes from the previous complete checkpoint.
//! `state.json` holds the xxh3 of every array file, checked on load, so a
//! damaged file is an error naming it, never a resumed run on corrupt
//! momentum.
//!
//! A file format, so it lives with the others: [`decode`] turns the bytes
//! of one checkpoint's files into a [`Checkpoint`] without doing I/O (and is
//! fuzzed), [`load_latest`] and [`save`] do the file work.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Where training stands after an epoch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainState {
    /// Format version.
    pub format: u32,
    /// Model configuration name.
    pub model: String,
    /// Parameter tensor lengths (checked on load).
    pub lengths: Vec<usize>,
    /// Model state tensor lengths (BatchNorm running statistics).
    #[serde(default)]
    pub state_lengths: Vec<usize>,
    /// Epochs completed.
    pub epochs_done: u64,
    /// Steps of the next epoch already taken (a mid-epoch checkpoint; 0 at
    /// an epoch's end). The loader state: a resumed run skips that many
    /// batches of the epoch's order.
    #[serde(default)]
    pub steps_into_epoch: u64,
    /// Optimiser steps taken.
    pub steps: u64,
    /// Training seed (the loader order and dropout depend on it).
    pub seed: u64,
    /// Per-step training loss so far (mean over ranks).
    pub losses: Vec<f32>,
    /// xxh3 of the parameters then the model state (see `params::checksum`).
    pub checksum: u64,
    /// xxh3-64 (hex) of each array file's bytes, filled in by [`save`].
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// What the network's shape depends on beyond its configuration, as
    /// the model describes it (the Etalumis layers made for each address);
    /// null for models without.
    #[serde(default)]
    pub layout: serde_json::Value,
    /// How the saving run sampled and stepped (absent in checkpoints of
    /// older versions).
    #[serde(default)]
    pub run: Option<RunShape>,
    /// Set when the epoch in progress was taken over from a run with
    /// another number of ranks: where its sample sequence came from.
    /// `steps_into_epoch` then counts steps of the deal that began there.
    #[serde(default)]
    pub epoch_begun: Option<EpochBegun>,
    /// Where the loss scale stood (`--loss-scale`), absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_scale: Option<LossScaleState>,
}

/// Where a run's loss scale stands: saved so that a resumed run scales,
/// and skips, as the uninterrupted one would.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LossScaleState {
    /// The current scale.
    pub scale: f32,
    /// Clean steps since the scale last changed (or the run began).
    pub clean_steps: u64,
    /// Steps skipped because their gradients overflowed, over the run.
    pub skipped: u64,
}

/// Where an epoch resumed at another number of ranks began: its sample
/// sequence is the one `ranks` ranks were dealt, of which `taken`
/// positions were trained on before the current deal of the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpochBegun {
    /// Ranks the epoch began on (they fix its sequence).
    pub ranks: u64,
    /// Positions of the sequence trained on before the current deal.
    pub taken: u64,
}

/// What decides a run's sample order and the meaning of its optimiser
/// state: a run that resumes mid-epoch must share all of it, or the saved
/// position would be applied to another order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunShape {
    /// Samples per rank per step.
    pub batch: u64,
    /// Ranks.
    pub ranks: u64,
    /// Steps per epoch.
    pub steps_per_epoch: u64,
    /// The optimiser (`sgd`, `adam`).
    pub optimizer: String,
}

/// Testing aid: `STAGEHAND_TRAINER_ABORT_WHILE_WRITING=epoch-2` kills the
/// process while it writes checkpoint `epoch-2`, after its arrays.
pub const ABORT_WHILE_WRITING: &str = "STAGEHAND_TRAINER_ABORT_WHILE_WRITING";

/// The lock file a training job holds in its checkpoint directory
/// ([`crate::lock::DirLock`]); [`save`] leaves it alone.
pub const LOCK_FILE: &str = ".lock";

/// The format [`save`] writes: 2 added the model state and per-file checksums.
pub const FORMAT: u32 = 2;

/// A checkpoint's contents.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    /// The state.
    pub state: TrainState,
    /// Parameters, per tensor.
    pub params: Vec<Vec<f32>>,
    /// Model state (BatchNorm running statistics), per tensor.
    pub model_state: Vec<Vec<f32>>,
    /// Optimiser first moments (SGD velocity), per tensor.
    pub first: Vec<Vec<f32>>,
    /// Optimiser second moments (Adam; empty for SGD), per tensor.
    pub second: Vec<Vec<f32>>,
}

/// Why a checkpoint could not be written or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// I/O on a checkpoint file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A file that is not what it should be.
    #[error("{path}: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

const LATEST: &str = "latest";
const STATE: &str = "state.json";
const ARRAYS: [&str; 4] = ["params.f32", "first.f32", "second.f32", "model_state.f32"];

fn xxh3_hex(bytes: &[u8]) -> String {
    format!("{:016x}", twox_hash::XxHash3_64::oneshot(bytes))
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CheckpointError + '_ {
    move |source| CheckpointError::Io { path: path.to_path_buf(), source }
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
    let mut file = fs::File::create(path).map_err(io(path))?;
    file.write_all(bytes).map_err(io(path))?;
    file.sync_all().map_err(io(path))
}

fn flatten(tensors: &[Vec<f32>]) -> Vec<u8> {
    tensors.iter().flatten().flat_map(|v| v.to_le_bytes()).collect()
}

fn unflatten(bytes: &[u8], lengths: &[usize], path: &Path) -> Result<Vec<Vec<f32>>, CheckpointError> {
    // Lengths come from state.json: a damaged one must not overflow.
    let total = lengths.iter().try_fold(0usize, |sum, &n| sum.checked_add(n));
    let expected = total.and_then(|t| t.checked_mul(4));
    if expected != Some(bytes.len()) {
        return Err(CheckpointError::Corrupt {
            path: path.to_path_buf(),
            reason: match total {
                Some(total) => format!("{} bytes, expected {} values of 4 bytes", bytes.len(), total),
                None => format!("{} bytes, but state.json lists more values than memory can hold", bytes.len()),
            },
        });
    }
    let mut values = bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]));
    Ok(lengths.iter().map(|&n| values.by_ref().take(n).collect()).collect())
}

/// The directory name of a checkpoint taken at `state`.
fn name_of(state: &TrainState) -> String {
    match state.steps_into_epoch {
        0 => format!("epoch-{}", state.epochs_done),
        k => format!("epoch-{}-step-{k}", state.epochs_done),
    }
}

/// Write `checkpoint` under `dir` and make it the latest. The previous
/// latest is kept; older checkpoints are removed.
pub fn save(dir: &Path, checkpoint: &Checkpoint) -> Result<PathBuf, CheckpointError> {
    fs::create_dir_all(dir).map_err(io(dir))?;
    let name = name_of(&checkpoint.state);
    let previous = fs::read_to_string(dir.join(LATEST)).ok().map(|p| p.trim().to_owned());
    let temp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let _ = fs::remove_dir_all(&temp);
    fs::create_dir(&temp).map_err(io(&temp))?;
    let mut state = checkpoint.state.clone();
    let arrays = [&checkpoint.params, &checkpoint.first, &checkpoint.second, &checkpoint.model_state];
    for (file, tensors) in ARRAYS.iter().zip(arrays) {
        let bytes = flatten(tensors);
        state.files.insert((*file).to_owned(), xxh3_hex(&bytes));
        write_synced(&temp.join(file), &bytes)?;
    }
    // Testing aid: die with the arrays written and the state not, as a job
    // killed mid-write would (the fault-injection tests resume from it).
    if std::env::var_os(ABORT_WHILE_WRITING).is_some_and(|at| at == name.as_str()) {
        eprintln!("aborting while writing checkpoint {name} ({ABORT_WHILE_WRITING})");
        std::process::abort();
    }
    let state = serde_json::to_vec_pretty(&state)
        .map_err(|e| CheckpointError::Corrupt { path: temp.join(STATE), reason: e.to_string() })?;
    write_synced(&temp.join(STATE), &state)?;
    let final_dir = dir.join(&name);
    let _ = fs::remove_dir_all(&final_dir);
    fs::rename(&temp, &final_dir).map_err(io(&final_dir))?;
    let latest_temp = dir.join(format!(".{LATEST}.tmp-{}", std::process::id()));
    write_synced(&latest_temp, name.as_bytes())?;
    fs::rename(&latest_temp, dir.join(LATEST)).map_err(io(&dir.join(LATEST)))?;
    for entry in fs::read_dir(dir).map_err(io(dir))?.flatten() {
        let other = entry.file_name().to_string_lossy().into_owned();
        // Older checkpoints, and what a writer killed mid-write left.
        let stale = (other.starts_with("epoch-") && other != name && Some(&other) != previous.as_ref())
            || (other.starts_with('.') && other.contains(".tmp-"));
        if stale {
            let _ = fs::remove_dir_all(entry.path());
            let _ = fs::remove_file(entry.path());
        }
    }
    Ok(final_dir)
}

/// The directory of the latest checkpoint under `dir`, or `None` if there
/// is none yet.
fn latest_dir(dir: &Path) -> Result<Option<PathBuf>, CheckpointError> {
    let latest = dir.join(LATEST);
    let name = match fs::read_to_string(&latest) {
        Ok(name) => name,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(CheckpointError::Io { path: latest, source: e }),
    };
    let name = name.trim();
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return Err(CheckpointError::Corrupt { path: latest, reason: format!("names '{name}'") });
    }
    Ok(Some(dir.join(name)))
}

/// The state (`state.json`) of the latest checkpoint under `dir`, without
/// its arrays: what a run checks before it starts. `None` if there is none.
pub fn latest_state(dir: &Path) -> Result<Option<TrainState>, CheckpointError> {
    let Some(at) = latest_dir(dir)? else { return Ok(None) };
    let path = at.join(STATE);
    let bytes = fs::read(&path).map_err(io(&path))?;
    serde_json::from_slice(&bytes).map(Some).map_err(|e| CheckpointError::Corrupt { path, reason: e.to_string() })
}

/// The latest checkpoint under `dir`, or `None` if there is none yet.
pub fn load_latest(dir: &Path) -> Result<Option<Checkpoint>, CheckpointError> {
    let Some(at) = latest_dir(dir)? else { return Ok(None) };
    let state_path = at.join(STATE);
    let state = fs::read(&state_path).map_err(io(&state_path))?;
    let mut arrays: [Vec<u8>; 4] = Default::default();
    for (file, bytes) in ARRAYS.iter().zip(&mut arrays) {
        let path = at.join(file);
        *bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            // Checkpoints of format 1 have no model state; `decode` checks
            // that state.json lists none.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && *file == "model_state.f32" => Vec::new(),
            Err(e) => return Err(CheckpointError::Io { path, source: e }),
        };
    }
    decode(&at, &state, [&arrays[0], &arrays[1], &arrays[2], &arrays[3]]).map(Some)
}

/// The checkpoint held by the bytes of its `state.json` and of its array
/// files (`params.f32`, `first.f32`, `second.f32`, `model_state.f32`, in
/// that order), read from directory `at` (named in errors). Checks every
/// length, every file's checksum and the parameters' checksum; does no I/O.
pub fn decode(at: &Path, state: &[u8], arrays: [&[u8]; 4]) -> Result<Checkpoint, CheckpointError> {
    let state_path = at.join(STATE);
    let state: TrainState = serde_json::from_slice(state)
        .map_err(|e| CheckpointError::Corrupt { path: state_path.clone(), reason: e.to_string() })?;
    let mut decoded = Vec::with_capacity(ARRAYS.len());
    for (file, bytes) in ARRAYS.iter().zip(arrays) {
        let path = at.join(file);
        let lengths = if *file == "model_state.f32" { &state.state_lengths } else { &state.lengths };
        let lengths: &[usize] = if bytes.is_empty() { &[] } else { lengths };
        decoded.push(unflatten(bytes, lengths, &path)?);
        if let Some(expected) = state.files.get(*file)
            && *expected != xxh3_hex(bytes)
        {
            return Err(CheckpointError::Corrupt {
                path,
                reason: format!("checksum mismatch: its xxh3 is {}, state.json says {expected}", xxh3_hex(bytes)),
            });
        }
    }
    let [params, first, second, model_state]: [Vec<Vec<f32>>; 4] = decoded
        .try_into()
        .map_err(|_| CheckpointError::Corrupt { path: at.to_path_buf(), reason: "missing arrays".into() })?;
    if params.len() != state.lengths.len() || model_state.len() != state.state_lengths.len() {
        return Err(CheckpointError::Corrupt {
            path: at.join(ARRAYS[0]),
            reason: "holds no values where state.json lists tensors".into(),
        });
    }
    let all: Vec<Vec<f32>> = params.iter().chain(&model_state).cloned().collect();
    if values_checksum(&all) != state.checksum {
        return Err(CheckpointError::Corrupt {
            path: at.join(ARRAYS[0]),
            reason: "parameters do not match the checksum in state.json".into(),
        });
    }
    Ok(Checkpoint { state, params, model_state, first, second })
}

/// xxh3-64 of tensors' values, as little-endian `f32` bytes in order: the
/// checksum every rank agrees on and a checkpoint records.
pub fn values_checksum(values: &[Vec<f32>]) -> u64 {
    use std::hash::Hasher as _;
    let mut hasher = twox_hash::XxHash3_64::new();
    let mut bytes = Vec::new();
    for tensor in values {
        bytes.clear();
        bytes.extend(tensor.iter().flat_map(|v| v.to_le_bytes()));
        hasher.write(&bytes);
    }
    hasher.finish()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn sample(epochs_done: u64) -> Checkpoint {
        let params = vec![vec![1.0, -2.5, 3.25], vec![0.5]];
        let model_state = vec![vec![0.25, 4.0]];
        let all: Vec<Vec<f32>> = params.iter().chain(&model_state).cloned().collect();
        Checkpoint {
            state: TrainState {
                format: FORMAT,
                model: "mlperf-small".into(),
                lengths: vec![3, 1],
                state_lengths: vec![2],
                epochs_done,
                steps_into_epoch: 0,
                steps: 10 * epochs_done,
                seed: 7,
                losses: vec![0.5, 0.25],
                checksum: values_checksum(&all),
                files: BTreeMap::new(),
                layout: serde_json::json!([{ "address": "tau__px__Uniform__1", "kind": "uniform" }]),
                run: Some(RunShape { batch: 4, ranks: 2, steps_per_epoch: 5, optimizer: "adam".into() }),
                epoch_begun: Some(EpochBegun { ranks: 4, taken: 12 }),
                loss_scale: Some(LossScaleState { scale: 32768.0, clean_steps: 7, skipped: 1 }),
            },
            params,
            model_state,
            first: vec![vec![0.1, 0.2, 0.3], vec![0.4]],
            second: Vec::new(),
        }
    }

    /// The latest checkpoint as saved (without the file checksums `save` adds).
    fn loaded(dir: &Path) -> Option<Checkpoint> {
        load_latest(dir).unwrap().map(|mut c| {
            assert_eq!(c.state.files.len(), ARRAYS.len(), "every array file has a checksum");
            c.state.files.clear();
            c
        })
    }

    #[test]
    fn every_array_file_is_covered_by_a_checksum() {
        let dir = tempfile::tempdir().unwrap();
        let at = save(dir.path(), &sample(1)).unwrap();
        for file in ["first.f32", "model_state.f32", "params.f32"] {
            let path = at.join(file);
            let good = fs::read(&path).unwrap();
            let mut bad = good.clone();
            bad[1] ^= 0x40;
            fs::write(&path, &bad).unwrap();
            let err = load_latest(dir.path()).unwrap_err().to_string();
            assert!(err.contains(file) && err.contains("checksum"), "{err}");
            fs::write(&path, &good).unwrap();
        }
        assert_eq!(loaded(dir.path()), Some(sample(1)));
    }

    #[test]
    fn save_then_load_gives_the_latest_back_and_keeps_one_previous() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load_latest(dir.path()).unwrap().is_none());
        for e in 1..=3 {
            save(dir.path(), &sample(e)).unwrap();
        }
        assert_eq!(loaded(dir.path()), Some(sample(3)));
        assert!(dir.path().join("epoch-2").is_dir() && !dir.path().join("epoch-1").exists());
    }

    #[test]
    fn mid_epoch_checkpoints_are_named_by_step_and_only_two_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut mid = sample(1);
        mid.state.steps_into_epoch = 3;
        save(dir.path(), &sample(1)).unwrap();
        save(dir.path(), &mid).unwrap();
        assert_eq!(loaded(dir.path()), Some(mid.clone()));
        assert!(dir.path().join("epoch-1").is_dir() && dir.path().join("epoch-1-step-3").is_dir());
        save(dir.path(), &sample(2)).unwrap();
        assert!(dir.path().join("epoch-2").is_dir() && dir.path().join("epoch-1-step-3").is_dir());
        assert!(!dir.path().join("epoch-1").exists());
    }

    #[test]
    fn a_state_written_before_mid_epoch_checkpoints_reads_as_an_epoch_end() {
        let json =
            r#"{"format":1,"model":"m","lengths":[1],"epochs_done":2,"steps":8,"seed":0,"losses":[],"checksum":0}"#;
        let state: TrainState = serde_json::from_str(json).unwrap();
        assert_eq!(state.steps_into_epoch, 0);
    }

    #[test]
    fn a_damaged_parameter_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let at = save(dir.path(), &sample(1)).unwrap();
        let path = at.join("params.f32");
        let mut bytes = fs::read(&path).unwrap();
        bytes[5] ^= 1;
        fs::write(&path, &bytes).unwrap();
        let err = load_latest(dir.path()).unwrap_err().to_string();
        assert!(err.contains("params.f32") && err.contains("checksum"), "{err}");
        fs::write(&path, &bytes[..7]).unwrap();
        let err = load_latest(dir.path()).unwrap_err().to_string();
        assert!(err.contains("7 bytes, expected 4 values"), "{err}");
    }

    #[test]
    fn lengths_in_state_json_that_overflow_are_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let at = save(dir.path(), &sample(1)).unwrap();
        let mut state: TrainState = serde_json::from_slice(&fs::read(at.join(STATE)).unwrap()).unwrap();
        state.lengths = vec![usize::MAX, 2];
        let state = serde_json::to_vec(&state).unwrap();
        let arrays = ARRAYS.map(|f| fs::read(at.join(f)).unwrap());
        let err = decode(&at, &state, [&arrays[0], &arrays[1], &arrays[2], &arrays[3]]).unwrap_err().to_string();
        assert!(err.contains("more values than memory can hold"), "{err}");
    }
}
