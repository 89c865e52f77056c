//! The trainer: data-parallel training of the papers' models over MPI,
//! fed by the loader.
//!
//! - [`engine`]: the training loop, the same for every model (step time
//!   split into data wait, compute and communication; parameter and state
//!   agreement checked every epoch; validation; checkpoints), and the
//!   [`TrainModel`](engine::TrainModel) trait a model implements to plug in.
//! - [`models`]: the models and the registry `--model` looks them up in
//!   (CosmoFlow: the MLPerf HPC and SC18 configurations, each with a
//!   reduced size for tests).
//! - [`kernels`]: our CPU convolution and pooling kernels, behind burn's
//!   backend-extension route; other backends run burn's own ops.
//! - [`params`]: a model's tensors as flat `f32` vectors, trainable
//!   parameters apart from state (BatchNorm running statistics), with
//!   seeded initialisation and checksums.
//! - [`fusion`]: Horovod-style tensor fusion (pure: plan, pack, unpack);
//!   [`exchange`]: averaging gradients across ranks with fused MPI
//!   allreduce, blocking or with a one-step lag on a communication thread.
//! - [`loss_scale`]: loss scaling for half-precision training (`--loss-scale`).
//! - [`optim`]: SGD with momentum, Adam, LARC/LARS on flat tensors;
//!   [`schedule`]: polynomial, step and piecewise decay, linear warm-up.
//! - [`checkpoint`]: save and resume; [`plot`]: the loss curve as a PNG;
//!   [`scaling`]: parallel efficiency against a 1-rank run's report.
//!
//! The `trainer` binary runs it under `mpirun`:
//! `mpirun -np 2 trainer train cosmoflow --config mlperf-small --data DIR --epochs 4 --batch 8`;
//! `trainer models` lists the models.
//!
//! ```
//! let model = trainer::models::build("cosmoflow", "mlperf-small")?;
//! assert_eq!(model.summary().config, "mlperf-small");
//! let (parameters, state) = model.sizes()?;
//! assert!(parameters > 0 && state == 0); // CosmoFlow has no BatchNorm
//! # Ok::<(), trainer::engine::TrainError>(())
//! ```

/// The checkpoint format, from `formats` (it is a file format).
pub use formats::checkpoint;
pub mod allocator;
pub mod engine;
pub mod exchange;
pub mod exchange_model;
pub mod flops;
pub mod fusion;
pub mod kernels;
pub mod loss_scale;
pub mod models;
pub mod optim;
pub mod overlap;
pub mod params;
pub mod plot;
pub mod scaling;
pub mod schedule;
pub mod summing_thread;
pub mod tensorboard;
