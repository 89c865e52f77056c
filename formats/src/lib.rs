//! Stagehand's on-disk formats, as pure codecs plus thin file adapters.
//!
//! Every format a Stagehand dataset can hold lives here, with no MPI and no
//! knowledge of training:
//!
//! - [`manifest`]: the `manifest.json` at a dataset's root (schema, one row per
//!   file with size, sample count and xxh3-64), with a parallel [`manifest::scan`].
//! - [`tfrecord`]: zero-copy TFRecord framing (both masked CRC32C values checked,
//!   errors carry file and byte offset), GZIP files, and the sidecar offset index.
//! - [`example`]: `tf.train.Example` as hand-written `prost` messages.
//! - [`npy`]: the header of a NumPy `.npy` array (each member of an `.npz`).
//! - [`tensorboard`]: TensorBoard event files (TFRecords of `Event` protos)
//!   holding scalars by step.
//! - [`cosmoflow`]: the MLPerf HPC CosmoFlow sample (`x` int16 (D,D,D,C), `y` f32[4]).
//! - [`climate`]: the DeepCAM HDF5 sample and `stats.h5`, with raw byte extents of
//!   contiguous datasets so readers can bypass the HDF5 lock.
//! - [`massmaps`]: CosmoGAN's mass maps, (N, S, S) float32 `.npy` arrays,
//!   and the statistics they are judged by (power spectrum, pixel histogram).
//! - [`hdf5_rows`]: an HDF5 dataset by name read as rows along its first
//!   axis (with its byte extent where contiguous).
//! - [`lmdb`]: a u64-keyed LMDB sample store and the Etalumis-style trace store.
//! - [`scattering`]: the multislice sample (CBED stack + projected potential,
//!   f32 or f16, optionally zstd, checksummed) kept in a sample store.
//! - [`cif`]: crystal structures in CIF text (cell, sites, symmetry operations).
//! - [`placement`]: which files each node needs (`replicate`, `shard`,
//!   `per-node=N`), shared by the stager and the loader.
//! - [`global_order`]: the reads of a global shuffle served from other
//!   nodes, which a service and its clients both compute.
//! - [`placement_record`]: what the stager placed in a node's destination,
//!   read by whoever trains from it.
//! - [`lock`]: one job at a time in a directory (a destination, a checkpoint
//!   directory), with the holder named.
//! - [`mapped`]: reading maps of files that may shrink underneath (a check
//!   before each read, and a SIGBUS handler that names the file).
//! - [`regular`]: opening a dataset's file without blocking on a FIFO put in
//!   its place, refusing anything but a regular file.
//!
//! ```
//! use formats::cosmoflow::{CosmoSample, CosmoShape};
//! use formats::tfrecord::{self, RecordWriter};
//!
//! let shape = CosmoShape { size: 4, channels: 2 };
//! let sample = CosmoSample::new(shape, vec![1; shape.voxels()], [0.1, -0.2, 0.3, 0.9]).unwrap();
//! let mut writer = RecordWriter::new(Vec::new());
//! writer.write_record(&sample.to_example_bytes()).unwrap();
//! let bytes = writer.into_inner();
//! let record = tfrecord::records(&bytes).next().unwrap().unwrap();
//! let back = CosmoSample::from_example_bytes(record.data, shape).unwrap();
//! assert_eq!(back, sample);
//! ```

pub mod atomic;
pub mod checkpoint;
pub mod checksum;
pub mod cif;
pub mod climate;
pub mod cosmoflow;
pub mod example;
pub mod global_order;
pub mod hdf5_file;
pub mod hdf5_rows;
pub mod jets;
pub mod lmdb;
pub mod lock;
pub mod manifest;
pub mod mapped;
pub mod massmaps;
pub mod npy;
pub mod placement;
pub mod placement_record;
pub mod regular;
pub mod sampling;
pub mod scattering;
pub mod service;
pub mod tensorboard;
pub mod tfrecord;
