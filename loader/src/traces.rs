//! Simulator traces of several trace stores read as one dataset, for a
//! network whose address-specific layers were laid out in advance (the
//! Etalumis inference network).
//!
//! Each store numbers its addresses with its own dictionary; a run that
//! trains on the stores of one `simgen traces` run and validates on those
//! of another sees the same address under different ids. [`TraceStores`]
//! translates every store's ids into positions in one list of address
//! names, the *layout*, given when it is opened; an address the layout
//! lacks becomes [`UNKNOWN_ADDRESS`].
//!
//! A trace's target is [`CHOICE_WIDTH`] values per controlled choice, in
//! execution order: the layout position, the value, the two numbers of the
//! prior a proposal needs ([`prior_parameters`]), and the value's log prior
//! density (what a proposal is measured against).
//!
//! ```no_run
//! use loader::dataset::Dataset;
//! use loader::traces::{CHOICE_WIDTH, TraceStores};
//!
//! let layout = vec!["tau__px__Uniform__1".to_owned(), "tau__py__Uniform__1".to_owned()];
//! let traces = TraceStores::open(&["traces/traces-00000.lmdb".into()], &layout)?;
//! let (mut x, mut y) = (vec![0f32; traces.x_len()], Vec::new());
//! traces.read_ragged(0, &mut x, &mut y)?;
//! for choice in y.chunks_exact(CHOICE_WIDTH) {
//!     let [position, value, a, b, log_prior] = [choice[0], choice[1], choice[2], choice[3], choice[4]];
//!     println!("address {position}: {value} (prior parameters {a}, {b}; log prior {log_prior})");
//! }
//! # Ok::<(), loader::dataset::DatasetError>(())
//! ```

use std::path::{Path, PathBuf};

use formats::lmdb::TraceStore;
use formats::lmdb::trace_codec::Distribution;

use crate::dataset::{Dataset, DatasetError};

/// Values per controlled choice in a trace's target.
pub const CHOICE_WIDTH: usize = 5;

/// The layout position of an address the layout does not hold.
pub const UNKNOWN_ADDRESS: f32 = -1.0;

/// The two numbers of a prior that a proposal is built from (pyprob's
/// proposal layers read the same): a normal's mean and deviation, a
/// uniform's bounds, a categorical's number of categories, a Poisson's
/// rate, a Bernoulli's probability (unused places are 0).
pub fn prior_parameters(prior: &Distribution) -> [f64; 2] {
    match prior {
        Distribution::Normal { mean, std } => [*mean, *std],
        Distribution::Uniform { low, high } => [*low, *high],
        Distribution::Categorical { probs } => [probs.len() as f64, 0.0],
        Distribution::Poisson { rate } => [*rate, 0.0],
        Distribution::Bernoulli { p } => [*p, 0.0],
    }
}

/// The target of one controlled choice: layout `position` (or
/// [`UNKNOWN_ADDRESS`]), the value, its prior's two numbers and the value's
/// log prior density. What [`TraceStores`] reads, and what a simulator run
/// on the fly is encoded as.
pub fn choice_target(position: f32, prior: &Distribution, value: f64) -> [f32; CHOICE_WIDTH] {
    let [a, b] = prior_parameters(prior);
    [position, value as f32, a as f32, b as f32, prior.log_prob(value) as f32]
}

/// Trace stores read one after the other, each in its trace-type order,
/// with address ids translated into positions in a layout.
pub struct TraceStores {
    stores: Vec<(PathBuf, TraceStore)>,
    /// Per store: the layout position of each of its address ids.
    positions: Vec<Vec<f32>>,
    /// Index of each store's first trace.
    starts: Vec<usize>,
    len: usize,
    shape: Vec<u32>,
}

impl TraceStores {
    /// Open the stores at `paths` (directories holding `data.mdb`); the
    /// observation shape is the first trace's, and every trace read must
    /// have it.
    pub fn open(paths: &[PathBuf], layout: &[String]) -> Result<Self, DatasetError> {
        let mut stores = Vec::with_capacity(paths.len());
        let mut positions = Vec::with_capacity(paths.len());
        let mut starts = Vec::with_capacity(paths.len());
        let mut len = 0usize;
        let mut shape = None;
        let at: std::collections::HashMap<&str, usize> =
            layout.iter().enumerate().map(|(i, a)| (a.as_str(), i)).collect();
        for path in paths {
            let store = TraceStore::open(path)?;
            if shape.is_none() && !store.is_empty() {
                let first = store.get(0)?.ok_or_else(|| DatasetError::Shape {
                    path: path.clone(),
                    key: 0,
                    reason: "trace 0 is missing".into(),
                })?;
                shape = Some(first.shape);
            }
            positions.push(
                store.addresses().iter().map(|a| at.get(a.as_str()).map_or(UNKNOWN_ADDRESS, |&p| p as f32)).collect(),
            );
            starts.push(len);
            len += store.len() as usize;
            stores.push((path.clone(), store));
        }
        let shape = shape.ok_or_else(|| DatasetError::Shape {
            path: paths.first().cloned().unwrap_or_default(),
            key: 0,
            reason: "the trace stores hold no trace".into(),
        })?;
        Ok(TraceStores { stores, positions, starts, len, shape })
    }

    /// The observation shape every trace has.
    pub fn observation_shape(&self) -> &[u32] {
        &self.shape
    }

    /// Each store with its path.
    pub fn stores(&self) -> impl Iterator<Item = (&Path, &TraceStore)> {
        self.stores.iter().map(|(p, s)| (p.as_path(), s))
    }

    /// The store holding trace `index`, and the index within it.
    fn store_of(&self, index: usize) -> Result<(usize, u64), DatasetError> {
        if index >= self.len {
            return Err(DatasetError::OutOfRange { index, len: self.len });
        }
        let store = self.starts.partition_point(|&start| start <= index) - 1;
        Ok((store, (index - self.starts[store]) as u64))
    }
}

impl Dataset for TraceStores {
    fn len(&self) -> usize {
        self.len
    }

    fn locate(&self, index: usize) -> String {
        match self.store_of(index) {
            Ok((store, key)) => format!("trace {index} ({}, key {key})", self.stores[store].0.display()),
            Err(_) => format!("trace {index}"),
        }
    }

    fn x_len(&self) -> usize {
        self.shape.iter().map(|&d| d as usize).product()
    }

    /// Targets vary in length ([`read_ragged`](Dataset::read_ragged)).
    fn y_len(&self) -> usize {
        0
    }

    /// The observation, and as much of the target as `y` holds.
    fn read_into(&self, index: usize, x: &mut [f32], y: &mut [f32]) -> Result<u64, DatasetError> {
        crate::dataset::read_prefix(self, index, x, y)
    }

    fn read_ragged(&self, index: usize, x: &mut [f32], y: &mut Vec<f32>) -> Result<u64, DatasetError> {
        let (store, key) = self.store_of(index)?;
        let (path, traces) = &self.stores[store];
        let trace = traces.get(key)?.ok_or_else(|| DatasetError::Shape {
            path: path.clone(),
            key,
            reason: "absent from the trace store".into(),
        })?;
        if trace.shape != self.shape || trace.observation.len() != x.len() {
            return Err(DatasetError::Shape {
                path: path.clone(),
                key,
                reason: format!("observation of shape {:?}, the first trace's is {:?}", trace.shape, self.shape),
            });
        }
        x.copy_from_slice(&trace.observation);
        let mut bytes = 4 * trace.observation.len() as u64;
        for choice in trace.choices.iter().filter(|c| c.controlled) {
            let position =
                self.positions[store].get(choice.address as usize).copied().ok_or_else(|| DatasetError::Shape {
                    path: path.clone(),
                    key,
                    reason: format!("address id {} is not in the store's dictionary", choice.address),
                })?;
            y.extend_from_slice(&choice_target(position, &choice.distribution, choice.value));
            bytes += 8 * 4;
        }
        Ok(bytes)
    }
}
