//! The loader: what a trainer links to get batches.
//!
//! Its modules:
//! - [`sampler`]: the sample orders, each a pure function of (seed, epoch,
//!   rank, world): the distributed shuffling sampler with equal step counts
//!   on every rank, the node-local sampler over exactly the files the stager
//!   placed on a node (the same `formats::placement` call), and the Etalumis
//!   bucketed trace sampler.
//! - [`dataset`]: the `Dataset` trait and CosmoFlow TFRecords (mmap, offset
//!   index, `log(x+1)` or divide-by-mean); [`deepcam`]: DeepCAM HDF5 read by
//!   byte offset outside the HDF5 lock, min-max normalised, HWC -> CHW;
//!   [`lmdb`]: multislice scattering samples and simulator traces (targets
//!   of variable length) from LMDB stores; [`traces`]: several trace stores
//!   as one dataset, address ids translated into a fixed layout.
//! - [`records`]: samples that are byte strings, not decoded values: the
//!   records of TFRecord files (or one bytes feature of their Examples),
//!   one array of `.npz` files, one dataset of HDF5 files by name (what
//!   DLIO's benchmarks read).
//! - [`staged`]: a staged destination opened for one rank from the
//!   placement record the stager wrote there, its node-local sampler, and
//!   the node's dataset addressed by global sample id.
//! - [`global`]: a rank's reads of a global shuffle that `stager serve
//!   --global-shuffle` serves from the node's shard and other nodes'.
//! - [`source`]: where a rank's samples come from (a directory with its
//!   held-out files, a staged destination, node-local data), opened for a
//!   rank given as plain data: its training set, its [`Sampler`](sampler::Sampler)
//!   and its share of the validation set.
//! - [`catalog`]: any of those datasets opened by the kind its manifest
//!   names (or from files), with the shapes of its arrays: what the Python
//!   package opens.
//! - [`pipeline`]: worker threads, a bounded prefetch window, batches in
//!   order, reusable buffers, errors to the consumer, join on drop, metrics,
//!   resume at a saved batch position; a [`Recycler`](pipeline::Recycler)
//!   takes batches back from a consumer that hands them on.
//!
//! Corrupt samples are errors naming file and offset, or skipped and counted
//! with `skip_corrupt`; with `check_finite` a sample holding NaN or infinity
//! is one too ([`finite`]). `cargo bench --bench loader-bench` compares the
//! loader with tf.data and h5py.
//!
//! ```
//! use loader::sampler::{DistributedSampler, Remainder};
//!
//! let sampler = DistributedSampler { len: 10, world: 4, rank: 1, seed: 7, shuffle: true, remainder: Remainder::Pad };
//! let epoch0 = sampler.indices(0);
//! assert_eq!(epoch0.len(), 3); // ceil(10 / 4), the same on every rank
//! ```

mod background;
mod buffer;
pub mod catalog;
pub mod cosmo_selection;
pub mod dataset;
pub mod deepcam;
pub mod elastic;
pub mod finite;
pub mod global;
pub mod jets;
pub mod lmdb;
pub mod massmaps;
pub mod pipeline;
pub mod records;
mod recycler;
pub mod sampler;
pub mod served;
pub mod source;
pub mod staged;
pub mod synthetic;
pub mod traces;
