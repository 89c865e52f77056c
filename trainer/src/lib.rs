//! The trainer (issue #6), under construction. Built so far: the
//! data-parallel gradient path that does not depend on a model.
//!
//! - [`fusion`]: Horovod-style tensor fusion (pure: plan, pack, unpack).
//! - [`exchange`]: averaging gradients across ranks with fused MPI
//!   allreduce, blocking or with a one-step lag on a communication thread.
//! - [`optim`]: SGD with momentum, Adam, LARC/LARS trust ratios on flat
//!   tensors; [`schedule`]: polynomial and step decay, linear warm-up.
//!
//! Still to come: the burn models (CosmoFlow first), the `trainer` binary,
//! checkpoints.
//!
//! ```
//! use trainer::fusion::FusionPlan;
//!
//! let plan = FusionPlan::new(&[3456, 32, 55296, 64], 64 << 20);
//! assert_eq!(plan.buffers(), 1); // one allreduce per step
//! ```

pub mod exchange;
pub mod fusion;
pub mod optim;
pub mod schedule;
