//! The engine's side of where samples come from: the model reads the
//! files ([`TrainModel`] as a [`loader::source::Reader`]); the loader's
//! [`Source`] owns the rest (directories and their held-out files, staged
//! destinations, node-local data, samplers). The only collective step is
//! here: the ranks agree on how many samples each takes per epoch.

use std::path::Path;
use std::sync::Arc;

use cluster::World;
use formats::manifest::Manifest;
use loader::dataset::{Dataset, DatasetError};
use loader::pipeline::LoaderConfig;
use loader::source::{RankData, RankPlace, Reader, Sampling, Source, Split, Validation};

use super::model::TrainModel;
use super::{TrainConfig, TrainError};

/// A model as the reader of its dataset's files.
struct ModelReader<'a, M>(&'a M);

impl<M: TrainModel> Reader for ModelReader<'_, M> {
    type Error = TrainError;

    fn check(&self, dir: &Path, manifest: &Manifest) -> Result<(), TrainError> {
        self.0.check_data(dir, manifest)
    }

    fn open(&self, dir: &Path, manifest: &Manifest, files: Option<&[usize]>) -> Result<Arc<dyn Dataset>, DatasetError> {
        self.0.open_dataset(dir, manifest, files)
    }

    fn split(&self, manifest: &Manifest) -> Option<Split> {
        self.0.split(manifest)
    }

    fn sampling(&self) -> Sampling {
        self.0.sampling()
    }

    fn opener(&self) -> Option<loader::served::FileOpener> {
        self.0.file_opener()
    }

    fn synthetic(&self, samples: usize) -> Result<Option<Arc<dyn Dataset>>, TrainError> {
        self.0.synthetic_data(samples)
    }
}

/// The run's source: `--data`, `--staged` or `--node-local`, validated
/// from `--val` or held out by `--val-fraction`.
fn source(config: &TrainConfig) -> Source {
    let validation = match &config.val {
        Some(dir) => Validation::Dir(dir.clone()),
        None => Validation::HeldOut(config.val_fraction),
    };
    Source { origin: config.source.clone(), validation }
}

/// Check every dataset a run would read against the model (manifests and
/// schemas only, no sample read): what `trainer train` does before MPI
/// starts, so a dataset of the wrong kind fails with one line.
pub fn check<M: TrainModel>(model: &M, config: &TrainConfig) -> Result<(), TrainError> {
    source(config).check(&ModelReader(model))
}

/// This rank's training and validation data. Collective: every rank then
/// takes as many samples per epoch as the rank with the fewest.
pub fn open<M: TrainModel>(
    world: &World,
    model: &M,
    config: &TrainConfig,
    batches: &LoaderConfig,
) -> Result<RankData, TrainError> {
    use mpi::collective::SystemOperation;
    use mpi::traits::*;

    let place = RankPlace {
        topology: *world.topology(),
        ranks_per_node: (0..world.topology().nodes).map(|n| world.ranks_of_node(n).len()).collect(),
    };
    let data = source(config).open(&place, &ModelReader(model), config.seed)?;
    let mine = batches.per_rank(&*data.sampler) as u64;
    let mut fewest = 0u64;
    world.comm().all_reduce_into(&mine, &mut fewest, SystemOperation::min());
    Ok(if fewest < mine { data.keep_per_rank(fewest as usize) } else { data })
}
