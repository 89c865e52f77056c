//! The trainer (issue #6), under construction. Built so far: the
//! data-parallel gradient path that does not depend on a model.
//!
//! - [`fusion`]: Horovod-style tensor fusion (pure: plan, pack, unpack).
//! - [`exchange`]: averaging gradients across ranks with fused MPI
//!   allreduce, blocking or with a one-step lag on a communication thread.
//!
//! Still to come: the burn models (CosmoFlow first), optimizers and
//! schedules, the `trainer` binary, checkpoints.
//!
//! ```
//! use trainer::fusion::FusionPlan;
//!
//! let plan = FusionPlan::new(&[3456, 32, 55296, 64], 64 << 20);
//! assert_eq!(plan.buffers(), 1); // one allreduce per step
//! ```

pub mod exchange;
pub mod fusion;
