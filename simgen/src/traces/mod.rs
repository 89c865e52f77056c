//! `simgen traces`: execution traces of a stochastic simulator for the
//! Etalumis inference network (Baydin et al., SC19).
//!
//! [`executor`] is the probabilistic-program interface (sample, observe;
//! prior, replay and proposal modes); [`tau`] the simulator written
//! against it, a tau lepton decaying into a [`calorimeter`]; [`generate`]
//! turns a run into the trace store's records; [`summary`] counts trace
//! types; [`serve`] offers the simulator over PPX (pyprob's protocol) and
//! [`remote`] drives a simulator elsewhere over it, [`ppx_map`] translating
//! between PPX's distributions and ours.
//!
//! ```
//! use simgen::traces::generate::run_prior;
//!
//! let run = run_prior(7, 0).unwrap();
//! assert_eq!(run.observation.len(), 20 * 35 * 35);
//! assert!(run.trace_type().iter().any(|a| a.starts_with("tau__decay_channel")));
//! ```

pub mod calorimeter;
pub mod distribution;
pub mod executor;
pub mod generate;
pub mod ppx_map;
pub mod remote;
pub mod serve;
pub mod store;
pub mod summary;
pub mod tau;
