//! The loader: what a trainer links to get batches (issue #4).
//!
//! Built so far: [`sampler`], the sample orders, each a pure function of
//! (seed, epoch, rank, world): the distributed shuffling sampler with equal
//! step counts on every rank, the node-local sampler over exactly the files
//! the stager placed on a node (the same `formats::placement` call), and the
//! Etalumis bucketed trace sampler. Datasets per format, the worker pool and
//! the prefetch queue are still to come.
//!
//! ```
//! use loader::sampler::{DistributedSampler, Remainder};
//!
//! let sampler = DistributedSampler { len: 10, world: 4, rank: 1, seed: 7, shuffle: true, remainder: Remainder::Pad };
//! let epoch0 = sampler.indices(0);
//! assert_eq!(epoch0.len(), 3); // ceil(10 / 4), the same on every rank
//! ```

pub mod sampler;
