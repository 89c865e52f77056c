//! DeepCAM data for the segmentation models: what `simgen climate` writes
//! and MLPerf HPC DeepCAM reads (`train/*.h5`, `validation/*.h5`, one
//! sample each, and `stats.h5` beside them), checked against a network
//! before MPI starts and opened through the loader's [`DeepcamDataset`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use formats::climate::{self, ClimateShape, STATS_FILE};
use formats::manifest::{Manifest, SampleKind};
use loader::dataset::{Dataset, DatasetError};
use loader::deepcam::DeepcamDataset;

use super::CLASSES;
use crate::engine::{Split, TrainError};

/// The height, width and channels the manifest of the dataset in `dir`
/// describes, if it is a DeepCAM one.
pub fn shape(dir: &Path, manifest: &Manifest) -> Result<ClimateShape, TrainError> {
    let not_deepcam = || {
        TrainError::Data(format!(
            "{}: not a DeepCAM climate dataset (its manifest describes {:?} samples); this model reads `simgen climate` output",
            dir.display(),
            manifest.schema.kind
        ))
    };
    if manifest.schema.kind != SampleKind::Deepcam {
        return Err(not_deepcam());
    }
    let data = manifest.schema.fields.iter().find(|f| f.name == climate::DATA).ok_or_else(not_deepcam)?;
    match data.shape.as_slice() {
        &[height, width, channels] => Ok(ClimateShape { height, width, channels }),
        _ => Err(not_deepcam()),
    }
}

/// DeepCAM's split: files under `train/` train, files under `validation/`
/// validate; a dataset with neither folder is all training files.
pub fn split(manifest: &Manifest) -> Option<Split> {
    Split::by_folders(manifest)
}

/// Read the first training sample as training will, so labels that are
/// not class ids fail before MPI starts, naming the file and pixel. (Every
/// other sample's labels are checked the same way as the loader reads it.)
pub fn check_first_sample(dir: &Path, manifest: &Manifest, stats: &Path) -> Result<(), TrainError> {
    let first = match split(manifest) {
        Some(split) => split.train.first().copied(),
        None => manifest.files.iter().position(|f| f.samples > 0),
    };
    let Some(first) = first else {
        return Err(TrainError::Data(format!("{}: the manifest lists no training sample file", dir.display())));
    };
    let dataset = open(dir, manifest, Some(&[first]), Some(stats))?;
    let (mut x, mut y) = (vec![0f32; dataset.x_len()], vec![0f32; dataset.y_len()]);
    dataset.read_into(0, &mut x, &mut y)?;
    Ok(())
}

/// Check that `stats.h5` in `dir` can be read and has a value per channel.
pub fn check_stats(dir: &Path, channels: usize) -> Result<PathBuf, TrainError> {
    let path = dir.join(STATS_FILE);
    let stats = climate::read_stats(&path).map_err(TrainError::from)?;
    if stats.minval.len() != channels {
        return Err(TrainError::Data(format!(
            "{}: statistics of {} channels for samples of {channels}",
            path.display(),
            stats.minval.len()
        )));
    }
    Ok(path)
}

/// The DeepCAM samples `files` (manifest indices; all sample files when
/// `None`) of the dataset in `dir`, normalised with `dir/stats.h5`, or with
/// `fallback_stats` where staging left no `stats.h5` on this node.
pub fn open(
    dir: &Path,
    manifest: &Manifest,
    files: Option<&[usize]>,
    fallback_stats: Option<&Path>,
) -> Result<Arc<dyn Dataset>, DatasetError> {
    let shape = match shape(dir, manifest) {
        Ok(shape) => shape,
        Err(e) => {
            return Err(DatasetError::Shape { path: dir.to_owned(), key: 0, reason: e.to_string() });
        }
    };
    let all: Vec<usize> = (0..manifest.files.len()).filter(|&i| manifest.files[i].samples > 0).collect();
    let paths: Vec<PathBuf> = files.unwrap_or(&all).iter().map(|&i| dir.join(&manifest.files[i].path)).collect();
    let local = dir.join(STATS_FILE);
    let stats = match (local.exists(), fallback_stats) {
        (false, Some(fallback)) => fallback.to_owned(),
        _ => local,
    };
    Ok(Arc::new(DeepcamDataset::open(&paths, &stats, shape)?.with_classes(CLASSES)))
}
