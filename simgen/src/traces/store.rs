//! A rank's traces written into trace stores: the simulate-and-stage loop
//! `simgen traces` runs for each of its files, the split of traces over
//! files, the stores' names and the order of the run's address dictionary.
//! Library functions, so tests and other drivers write stores exactly as
//! the command does.

use std::ops::Range;
use std::time::{Duration, Instant};

use formats::lmdb::{LmdbError, TraceStoreWriter};

use super::executor::{Recorded, RunError};
use super::generate::{Program, run_prior_of, to_trace};
use super::summary::Summary;

/// A trace that could not be simulated or staged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceStoreError {
    /// The simulator failed.
    #[error("trace {index}: {source}")]
    Simulate {
        /// The trace.
        index: u64,
        /// Why.
        source: RunError,
    },
    /// The store did not take the trace.
    #[error("staging trace {index}: {source}")]
    Stage {
        /// The trace.
        index: u64,
        /// Why.
        source: LmdbError,
    },
}

/// The name of store `file`.
pub fn store_name(file: u64) -> String {
    format!("traces-{file:05}.lmdb")
}

/// The traces of file `file` when `traces` are split over `files` files:
/// consecutive blocks whose sizes differ by at most one.
pub fn file_traces(file: u64, files: u64, traces: u64) -> Range<u64> {
    (file * traces / files)..((file + 1) * traces / files)
}

/// Order addresses by site and distribution, then by instance as a number
/// (`x__Uniform__2` before `x__Uniform__10`): how a person reads the dictionary.
pub fn dictionary_order(address: &str) -> (String, u64) {
    match address.rsplit_once("__") {
        Some((stem, n)) => match n.parse() {
            Ok(n) => (stem.to_owned(), n),
            Err(_) => (address.to_owned(), 0),
        },
        None => (address.to_owned(), 0),
    }
}

/// Where a file's time went.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StageTimes {
    /// Running the simulator.
    pub simulating: Duration,
    /// Encoding and staging the traces in the store.
    pub staging: Duration,
}

/// Simulate traces `traces` of the run seeded `seed` with `program` from
/// the prior (observation noise `noise`, if not the simulator's own) and
/// stage them in `writer`, counting their types in `summary` and calling
/// `on_trace` with each after it is staged.
pub fn simulate_into(
    writer: &mut TraceStoreWriter,
    program: Program<'_>,
    (seed, noise): (u64, Option<f32>),
    traces: Range<u64>,
    summary: &mut Summary,
    mut on_trace: impl FnMut(u64, &Recorded),
) -> Result<StageTimes, TraceStoreError> {
    let mut times = StageTimes::default();
    for index in traces {
        let t = Instant::now();
        let run =
            run_prior_of(program, seed, index, noise).map_err(|source| TraceStoreError::Simulate { index, source })?;
        times.simulating += t.elapsed();
        let t = Instant::now();
        let trace = to_trace(&run, |a| writer.address_id(a));
        writer.add(&trace).map_err(|source| TraceStoreError::Stage { index, source })?;
        times.staging += t.elapsed();
        summary.add(run.trace_type().into_iter().map(str::to_owned).collect(), run.choices.len());
        on_trace(index, &run);
    }
    Ok(times)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_take_consecutive_blocks_that_cover_every_trace_once() {
        for traces in 1..40u64 {
            for files in 1..=traces.min(9) {
                let blocks: Vec<Range<u64>> = (0..files).map(|f| file_traces(f, files, traces)).collect();
                let flat: Vec<u64> = blocks.iter().flat_map(|b| b.clone()).collect();
                assert_eq!(flat, (0..traces).collect::<Vec<_>>(), "{traces} traces over {files} files");
                let sizes: Vec<u64> = blocks.iter().map(|b| b.end - b.start).collect();
                assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1, "{sizes:?}");
            }
        }
    }

    #[test]
    fn the_dictionary_orders_instances_as_numbers() {
        let mut addresses = vec!["x__Uniform__10", "x__Uniform__2", "a__Normal", "x__Uniform__1"];
        addresses.sort_by_key(|a| dictionary_order(a));
        assert_eq!(addresses, vec!["a__Normal", "x__Uniform__1", "x__Uniform__2", "x__Uniform__10"]);
    }
}
