//! `loader::source`: what a rank trains and validates on, for each origin.
//! The datasets are manifests on disk read by a reader that numbers the
//! samples of the files it is asked to open (the reader is the caller's
//! side of the interface; the source's own work is what is checked).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use formats::checksum::Checksum;
use formats::manifest::{FileEntry, MANIFEST_FILE, Manifest, Schema};
use loader::dataset::{Dataset, DatasetError};
use loader::source::{Origin, RankPlace, Reader, Sampling, Source, SourceError, Validation};

/// Samples numbered `first..first + len` of the manifest: `x` is the number.
struct Numbered {
    ids: Vec<usize>,
}

impl Dataset for Numbered {
    fn len(&self) -> usize {
        self.ids.len()
    }
    fn x_len(&self) -> usize {
        1
    }
    fn y_len(&self) -> usize {
        0
    }
    fn read_into(&self, index: usize, x: &mut [f32], _y: &mut [f32]) -> Result<u64, DatasetError> {
        x[0] = *self.ids.get(index).ok_or(DatasetError::OutOfRange { index, len: self.ids.len() })? as f32;
        Ok(4)
    }
}

/// Opens the files asked for, numbering every sample of the manifest in
/// file order so a test can tell which files a set holds.
struct Counting {
    sampling: Sampling,
}

impl Reader for Counting {
    type Error = SourceError;
    fn check(&self, _dir: &Path, _manifest: &Manifest) -> Result<(), SourceError> {
        Ok(())
    }
    fn open(
        &self,
        _dir: &Path,
        manifest: &Manifest,
        files: Option<&[usize]>,
    ) -> Result<Arc<dyn Dataset>, DatasetError> {
        let mut first = vec![0usize];
        for file in &manifest.files {
            first.push(first.last().copied().unwrap_or(0) + file.samples as usize);
        }
        let all: Vec<usize> = (0..manifest.files.len()).collect();
        let ids = files.unwrap_or(&all).iter().flat_map(|&f| first[f]..first[f + 1]).collect();
        Ok(Arc::new(Numbered { ids }))
    }
    fn sampling(&self) -> Sampling {
        self.sampling
    }
}

const SHUFFLED: Counting = Counting { sampling: Sampling::Shuffled };

/// A dataset directory whose manifest lists files of `samples` samples each.
fn dataset(dir: &Path, samples: &[u64]) {
    std::fs::create_dir_all(dir).unwrap();
    let files = samples
        .iter()
        .enumerate()
        .map(|(i, &n)| FileEntry { path: format!("f{i}.bin"), bytes: 8, samples: n, xxh3: Checksum(i as u64) })
        .collect();
    Manifest::new(Schema::traces(&[1]), files).save(&dir.join(MANIFEST_FILE)).unwrap();
}

fn ids(dataset: &dyn Dataset) -> Vec<usize> {
    let mut x = [0f32];
    (0..dataset.len())
        .map(|i| {
            dataset.read_into(i, &mut x, &mut []).unwrap();
            x[0] as usize
        })
        .collect()
}

#[test]
fn a_directory_holds_out_its_last_sample_files_for_validation() {
    let dir = tempfile::tempdir().unwrap();
    dataset(dir.path(), &[2, 2, 0, 2, 2, 2]);
    let source = Source { origin: Origin::Dir(dir.path().into()), validation: Validation::HeldOut(0.4) };
    let data = source.open(&RankPlace::grouped(0, 1, 1), &SHUFFLED, 1).unwrap();
    assert_eq!(ids(&*data.train), vec![0, 1, 2, 3, 4, 5], "three of five sample files train");
    assert_eq!(data.sampler.per_rank(1), 6);
    let validation = data.validation.unwrap();
    assert_eq!(ids(&*validation.dataset), vec![6, 7, 8, 9], "the last two validate; the empty file is in neither");
}

#[test]
fn holding_out_every_file_is_an_error_naming_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    dataset(dir.path(), &[1, 1]);
    let source = Source { origin: Origin::Dir(dir.path().into()), validation: Validation::HeldOut(0.9) };
    let Err(e) = source.open(&RankPlace::grouped(0, 1, 1), &SHUFFLED, 1) else { panic!("opened") };
    assert!(matches!(e, SourceError::NothingToTrain { files: 2, .. }), "{e}");
    assert!(e.to_string().contains(&dir.path().display().to_string()), "{e}");
}

#[test]
fn a_validation_directory_is_read_by_every_rank_in_strides_and_holds_nothing_out() {
    let dir = tempfile::tempdir().unwrap();
    dataset(&dir.path().join("train"), &[3, 3]);
    dataset(&dir.path().join("val"), &[5]);
    let source =
        Source { origin: Origin::Dir(dir.path().join("train")), validation: Validation::Dir(dir.path().join("val")) };
    let mine: Vec<Vec<usize>> = (0..2)
        .map(|rank| {
            let data = source.open(&RankPlace::grouped(rank, 2, 1), &SHUFFLED, 1).unwrap();
            assert_eq!(data.train.len(), 6, "every training file trains");
            data.validation.unwrap().mine()
        })
        .collect();
    assert_eq!(mine, vec![vec![0, 2, 4], vec![1, 3]]);
}

#[test]
fn node_local_ranks_share_their_nodes_samples_and_can_keep_the_fewest() {
    let dir = tempfile::tempdir().unwrap();
    dataset(&dir.path().join("node0"), &[5]);
    dataset(&dir.path().join("node1"), &[4, 4]);
    let template = format!("{}/node{{node}}", dir.path().display());
    let source = Source { origin: Origin::NodeLocal { template }, validation: Validation::HeldOut(0.25) };
    let opened: Vec<_> =
        (0..4).map(|rank| source.open(&RankPlace::grouped(rank, 4, 2), &SHUFFLED, 9).unwrap()).collect();
    let per_rank: Vec<usize> = opened.iter().map(|d| d.sampler.per_rank(1)).collect();
    // Node 0 trains on round(5 * 0.75) = 4 samples, node 1 on 6.
    assert_eq!(per_rank, vec![2, 2, 3, 3]);
    let (a, b) = (opened[2].sampler.order(0, 1), opened[3].sampler.order(0, 1));
    assert!(a.iter().all(|i| !b.contains(i)), "the ranks of a node take disjoint shares: {a:?} {b:?}");
    let validation = opened[3].validation.as_ref().unwrap();
    assert_eq!(ids(&*validation.dataset), vec![6, 7], "node 1 holds out its last 2 samples");
    assert_eq!((validation.reader, validation.readers), (1, 2), "validated by the node's ranks");
    let kept = opened.into_iter().nth(2).unwrap().keep_per_rank(2);
    assert_eq!(kept.sampler.per_rank(1), 2);
    assert_eq!(kept.sampler.order(5, 1).len(), 2);
}

#[test]
fn batches_cut_from_the_whole_dataset_need_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    dataset(&dir.path().join("node0"), &[8]);
    let bucketed = Counting { sampling: Sampling::Bucketed { buckets: 2 } };
    let template = format!("{}/node{{node}}", dir.path().display());
    let source = Source { origin: Origin::NodeLocal { template }, validation: Validation::None };
    let Err(e) = source.open(&RankPlace::grouped(0, 1, 1), &bucketed, 1) else { panic!("opened") };
    assert!(matches!(e, SourceError::BucketedNeedsDir { .. }), "{e}");
    let source = Source { origin: Origin::Dir(dir.path().join("node0")), validation: Validation::None };
    let data = source.open(&RankPlace::grouped(0, 1, 1), &bucketed, 1).unwrap();
    let order = data.sampler.order(0, 2);
    assert_eq!(order.len(), 8);
    assert!(order.chunks(2).all(|pair| pair[1] == pair[0] + 1), "whole batches of consecutive samples: {order:?}");
}
