//! The trainer: data-parallel training of the papers' models over MPI,
//! fed by the loader.
//!
//! - [`model`]: the networks as burn modules (CosmoFlow: the MLPerf HPC
//!   and SC18 configurations, each with a reduced size for tests).
//! - [`params`]: a model's parameters as flat `f32` vectors (read, write
//!   back, seeded initialisation, checksum).
//! - [`fusion`]: Horovod-style tensor fusion (pure: plan, pack, unpack).
//! - [`exchange`]: averaging gradients across ranks with fused MPI
//!   allreduce, blocking or with a one-step lag on a communication thread.
//! - [`optim`]: SGD with momentum, Adam, LARC/LARS on flat tensors;
//!   [`schedule`]: polynomial, step and piecewise decay, linear warm-up.
//! - [`train`]: the loop (step time split into data wait, compute and
//!   communication; parameter agreement checked every epoch; validation);
//!   [`checkpoint`]: save and resume; [`plot`]: the loss curve as a PNG;
//!   [`scaling`]: parallel efficiency against a 1-rank run's report.
//!
//! The `trainer` binary runs it under `mpirun`:
//! `mpirun -np 2 trainer train --model cosmoflow --config mlperf-small --data DIR --epochs 4 --batch 8`.
//!
//! ```
//! use trainer::model::cosmoflow::CosmoflowConfig;
//!
//! let config = CosmoflowConfig::mlperf(128);
//! assert_eq!(config.final_size(), Ok(4)); // 128 halved by five pools
//! ```

pub mod checkpoint;
pub mod exchange;
pub mod fusion;
pub mod memory;
pub mod model;
pub mod optim;
pub mod params;
pub mod plot;
pub mod scaling;
pub mod schedule;
pub mod train;
