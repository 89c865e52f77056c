//! What a run's traces look like: how many of each trace type, how long,
//! and how the counts fall off (the long tail Etalumis' sorting is for).

use std::collections::HashMap;

/// One trace type's line in the summary.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TypeLine {
    /// Rank by count, 1 = most frequent.
    pub rank: usize,
    /// Traces of the type.
    pub count: u64,
    /// Share of all traces.
    pub share: f64,
    /// Controlled choices in a trace of the type.
    pub length: usize,
    /// The decay channel and attempt count, as a person reads the type.
    pub label: String,
}

/// What [`Summary::to_bytes`] carries: types with counts, lengths with counts, traces.
type Wire = (Vec<(Vec<String>, u64)>, Vec<(usize, u64)>, u64);

/// Counts of trace types and lengths.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    types: HashMap<Vec<String>, u64>,
    lengths: HashMap<usize, u64>,
    traces: u64,
}

impl Summary {
    /// Count one trace of `trace_type` with `length` choices in all.
    pub fn add(&mut self, trace_type: Vec<String>, length: usize) {
        *self.types.entry(trace_type).or_insert(0) += 1;
        *self.lengths.entry(length).or_insert(0) += 1;
        self.traces += 1;
    }

    /// Add another summary's counts (another rank's).
    pub fn merge(&mut self, other: Summary) {
        for (t, n) in other.types {
            *self.types.entry(t).or_insert(0) += n;
        }
        for (l, n) in other.lengths {
            *self.lengths.entry(l).or_insert(0) += n;
        }
        self.traces += other.traces;
    }

    /// Traces counted.
    pub fn traces(&self) -> u64 {
        self.traces
    }

    /// Distinct trace types.
    pub fn distinct_types(&self) -> usize {
        self.types.len()
    }

    /// Types seen exactly once.
    pub fn singletons(&self) -> usize {
        self.types.values().filter(|&&n| n == 1).count()
    }

    /// Every type, most frequent first (ties by type, so the order is stable).
    pub fn lines(&self) -> Vec<TypeLine> {
        let mut all: Vec<(&Vec<String>, u64)> = self.types.iter().map(|(t, &n)| (t, n)).collect();
        all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        all.into_iter()
            .enumerate()
            .map(|(i, (t, n))| TypeLine {
                rank: i + 1,
                count: n,
                share: n as f64 / self.traces.max(1) as f64,
                length: t.len(),
                label: label(t),
            })
            .collect()
    }

    /// Share of traces in the `k` most frequent types.
    pub fn top_share(&self, k: usize) -> f64 {
        self.lines().iter().take(k).map(|l| l.share).sum()
    }

    /// (total choices, traces) pairs, shortest first.
    pub fn lengths(&self) -> Vec<(usize, u64)> {
        let mut v: Vec<(usize, u64)> = self.lengths.iter().map(|(&l, &n)| (l, n)).collect();
        v.sort_unstable();
        v
    }

    /// The counts as bytes, to gather from every rank.
    pub fn to_bytes(&self) -> Result<Vec<u8>, serde_json::Error> {
        let types: Vec<(&Vec<String>, u64)> = self.types.iter().map(|(t, &n)| (t, n)).collect();
        let lengths: Vec<(usize, u64)> = self.lengths();
        serde_json::to_vec(&(types, lengths, self.traces))
    }

    /// Counts from [`to_bytes`](Self::to_bytes).
    pub fn from_bytes(bytes: &[u8]) -> Result<Summary, serde_json::Error> {
        let (types, lengths, traces): Wire = serde_json::from_slice(bytes)?;
        Ok(Summary { types: types.into_iter().collect(), lengths: lengths.into_iter().collect(), traces })
    }
}

/// A type as a person reads it: its sites with repeat counts, e.g.
/// `tau__px, tau__py, tau__pz, tau__decay_channel, decay__energy_share x6, ...`.
fn label(trace_type: &[String]) -> String {
    let mut parts: Vec<(String, usize)> = Vec::new();
    for address in trace_type {
        let site = address.split("__").take(2).collect::<Vec<_>>().join("__");
        match parts.last_mut() {
            Some((last, n)) if *last == site => *n += 1,
            _ => parts.push((site, 1)),
        }
    }
    parts.into_iter().map(|(s, n)| if n == 1 { s } else { format!("{s} x{n}") }).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_most_frequent_first_and_merge_adds() {
        let t = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut a = Summary::default();
        a.add(t(&["x__a__Uniform__1"]), 3);
        a.add(t(&["x__a__Uniform__1", "x__a__Uniform__2"]), 4);
        let mut b = Summary::default();
        b.add(t(&["x__a__Uniform__1"]), 3);
        a.merge(Summary::from_bytes(&b.to_bytes().unwrap()).unwrap());
        let lines = a.lines();
        assert_eq!(lines[0].count, 2);
        assert_eq!(lines[1].label, "x__a x2");
        assert_eq!(a.singletons(), 1);
        assert_eq!(a.lengths(), [(3, 2), (4, 1)]);
        assert!((a.top_share(1) - 2.0 / 3.0).abs() < 1e-12);
    }
}
