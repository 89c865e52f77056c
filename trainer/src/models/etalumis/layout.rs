//! Which address-specific layers the network is made with: one entry per
//! controlled address that any trace of the training stores visits, read
//! from the stores' address dictionaries and type tables before training
//! (or from a pilot of simulated runs, for online training),
//! so that every rank builds the same parameters (Baydin et al. 2019,
//! section V-B: pyprob made layers the first time a minibatch met an
//! address, which at scale left the ranks with different networks).

use std::collections::BTreeMap;
use std::path::Path;

use formats::lmdb::TraceStore;
use formats::lmdb::trace_codec::Distribution;
use serde::{Deserialize, Serialize};
use simgen::traces::executor::Recorded;

use crate::engine::TrainError;

/// The kind of prior an address has, and so of its proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum Kind {
    Normal,
    Uniform,
    Categorical,
    Poisson,
    Bernoulli,
}

/// The kinds, as they are named in addresses.
const KINDS: [(&str, Kind); 5] = [
    ("Normal", Kind::Normal),
    ("Uniform", Kind::Uniform),
    ("Categorical", Kind::Categorical),
    ("Poisson", Kind::Poisson),
    ("Bernoulli", Kind::Bernoulli),
];

impl Kind {
    /// The kind an address `site__Distribution__instance` names (the
    /// executor's address scheme, after pyprob's), or why there is none.
    pub fn of_address(address: &str) -> Result<Kind, String> {
        let mut parts = address.rsplit("__");
        let (_instance, distribution) = (parts.next(), parts.next());
        let Some(distribution) = distribution else {
            return Err(format!("address '{address}' does not name its distribution (site__Distribution__instance)"));
        };
        KINDS.iter().find(|(name, _)| *name == distribution).map(|(_, kind)| *kind).ok_or_else(|| {
            let known: Vec<&str> = KINDS.iter().map(|(name, _)| *name).collect();
            format!(
                "address '{address}' has a {distribution} prior, for which the network has no proposal (it has \
                 them for {})",
                known.join(", ")
            )
        })
    }

    /// Whether its proposal is a categorical over a number of outcomes the
    /// data decides.
    pub fn counted(self) -> bool {
        matches!(self, Kind::Categorical | Kind::Poisson)
    }
}

/// Standard deviations above a Poisson prior's mean (plus 10) that its
/// proposal's counts reach: a count beyond is less likely than 1e-20
/// under the prior, so a proposal that cannot draw it loses nothing that
/// importance sampling would see.
const POISSON_TAIL_SIGMAS: f64 = 10.0;

/// The counts 0..n a Poisson prior of `rate` is proposed over.
pub fn poisson_counts(rate: f64) -> usize {
    (rate + POISSON_TAIL_SIGMAS * rate.sqrt() + 10.0).ceil() as usize + 1
}

/// One address's layers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddressLayer {
    /// The address.
    pub address: String,
    /// Its prior's kind.
    pub kind: Kind,
    /// A categorical's categories, the counts a Poisson is proposed over
    /// (0 to `outcomes - 1`); 0 for the other kinds.
    pub outcomes: usize,
}

/// The address-specific layers, sorted by address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Layout {
    /// One entry per controlled address.
    pub addresses: Vec<AddressLayer>,
}

impl Layout {
    /// The addresses, in layout order (what [`loader::traces::TraceStores`]
    /// translates ids into).
    pub fn names(&self) -> Vec<String> {
        self.addresses.iter().map(|a| a.address.clone()).collect()
    }

    /// Every controlled address the trace types of `stores` visit. A
    /// categorical's categories and a Poisson's rate are read from the first
    /// trace of a type that has the address. The error names the store and
    /// what is wrong (an unknown distribution, an address whose categories
    /// differ between traces).
    pub fn of_stores<'a>(stores: impl IntoIterator<Item = (&'a Path, &'a TraceStore)>) -> Result<Layout, TrainError> {
        let mut found = Found::default();
        for (path, store) in stores {
            let shown = path.display();
            for trace_type in store.trace_types() {
                let mut first = None;
                for &id in &trace_type.addresses {
                    let name = store.addresses().get(id as usize).ok_or_else(|| {
                        TrainError::Data(format!("{shown}: a trace type names address id {id}, not in the dictionary"))
                    })?;
                    let kind = Kind::of_address(name).map_err(|e| TrainError::Data(format!("{shown}: {e}")))?;
                    let outcomes = if kind.counted() {
                        if first.is_none() {
                            first = store.get(trace_type.first).map_err(TrainError::from)?;
                        }
                        let prior = first
                            .as_ref()
                            .and_then(|t| t.choices.iter().find(|c| c.address == id && c.controlled))
                            .map(|c| &c.distribution);
                        match prior {
                            Some(Distribution::Categorical { probs }) => probs.len(),
                            Some(Distribution::Poisson { rate }) => poisson_counts(*rate),
                            _ => {
                                return Err(TrainError::Data(format!(
                                    "{shown}: trace {} does not draw '{name}' from the {kind:?} prior its address \
                                     names",
                                    trace_type.first
                                )));
                            }
                        }
                    } else {
                        0
                    };
                    found.add(name, kind, outcomes, &shown.to_string())?;
                }
            }
        }
        Ok(found.layout())
    }

    /// Every controlled address that `runs` visit (a pilot of simulated
    /// traces, `trainer train etalumis --online`), read as
    /// [`of_stores`](Self::of_stores) reads stores; `source` names them in
    /// errors.
    pub fn of_runs(runs: &[Recorded], source: &str) -> Result<Layout, TrainError> {
        let mut found = Found::default();
        for (i, run) in runs.iter().enumerate() {
            for choice in run.choices.iter().filter(|c| c.controlled) {
                let name = &choice.address;
                let kind = Kind::of_address(name).map_err(|e| TrainError::Data(format!("{source}: {e}")))?;
                let outcomes = match (kind, &choice.distribution) {
                    (Kind::Categorical, Distribution::Categorical { probs }) => probs.len(),
                    (Kind::Poisson, Distribution::Poisson { rate }) => poisson_counts(*rate),
                    (Kind::Categorical | Kind::Poisson, _) => {
                        return Err(TrainError::Data(format!(
                            "{source}: run {i} does not draw '{name}' from the {kind:?} prior its address names"
                        )));
                    }
                    _ => 0,
                };
                found.add(name, kind, outcomes, &format!("{source} (run {i})"))?;
            }
        }
        Ok(found.layout())
    }
}

/// The addresses met so far: kind, outcomes and where they were first met.
#[derive(Default)]
struct Found(BTreeMap<String, (Kind, usize, String)>);

impl Found {
    /// Meet `name` in `place`: a categorical must keep its categories; a
    /// Poisson proposal covers the widest rate met.
    fn add(&mut self, name: &str, kind: Kind, outcomes: usize, place: &str) -> Result<(), TrainError> {
        match self.0.get(name) {
            Some((_, known, first)) if *known != outcomes && kind == Kind::Categorical => {
                Err(TrainError::Data(format!("{place}: '{name}' has {outcomes} categories, in {first} {known}")))
            }
            Some((_, known, _)) if *known >= outcomes => Ok(()),
            _ => {
                self.0.insert(name.to_owned(), (kind, outcomes, place.to_owned()));
                Ok(())
            }
        }
    }

    fn layout(self) -> Layout {
        let addresses =
            self.0.into_iter().map(|(address, (kind, outcomes, _))| AddressLayer { address, kind, outcomes }).collect();
        Layout { addresses }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_names_its_kind_and_an_unknown_kind_is_refused() {
        assert_eq!(Kind::of_address("tau__px__Uniform__1"), Ok(Kind::Uniform));
        assert_eq!(Kind::of_address("decay__energy_share__Uniform__12"), Ok(Kind::Uniform));
        assert_eq!(Kind::of_address("tau__decay_channel__Categorical__1"), Ok(Kind::Categorical));
        let err = Kind::of_address("muon__lifetime__Gamma__1").unwrap_err();
        assert!(err.contains("Gamma prior") && err.contains("Normal, Uniform"), "{err}");
        assert!(Kind::of_address("plain").unwrap_err().contains("does not name"));
    }

    #[test]
    fn a_poisson_proposal_reaches_far_into_the_tail() {
        // Rate 1.5: counts 0..=24; P(k > 24) under Poisson(1.5) is about 1e-22.
        assert_eq!(poisson_counts(1.5), 25);
        assert!(poisson_counts(100.0) > 200);
    }
}
