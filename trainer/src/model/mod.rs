//! The models the trainer runs. CosmoFlow first; each model is a burn
//! module whose code does not name a backend, so a GPU device can be
//! switched on later.

pub mod conv_op;
pub mod cosmoflow;
pub mod direct_conv;
pub mod direct_pool;
mod flex;
pub mod pool3d;
