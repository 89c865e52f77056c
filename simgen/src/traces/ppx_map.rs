//! PPX's distributions and tensors against our traces': the translation
//! both PPX roles share, pure so each rule is tested on its own.
//!
//! Our traces hold five distributions with scalar parameters (a
//! categorical's weights a vector); PPX sends any of eleven, every
//! parameter a tensor. A PPX distribution maps when it is one of the five
//! and each scalar parameter has exactly one value; anything else is
//! refused with the address it came from, never approximated.

use formats::lmdb::trace_codec::Distribution;
use ppx::codec::{distribution_name, scalar, tensor, values};
use ppx::schema::{self, Tensor};

/// The distributions our traces (and proposals) cover.
const COVERED: &str = "Normal, Uniform, Categorical, Poisson, Bernoulli";

/// Why a PPX distribution has no counterpart in our traces.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("at {address}: {reason}")]
pub struct Unmapped {
    /// The address the simulator sent.
    pub address: String,
    /// What does not map.
    pub reason: String,
}

/// Our distribution for the PPX one sent at `address`.
pub fn from_ppx(address: &str, distribution: &schema::Distribution) -> Result<Distribution, Unmapped> {
    let refuse = |reason: String| Unmapped { address: address.to_owned(), reason };
    let one = |what: &str, t: Option<&Tensor>| -> Result<f64, Unmapped> {
        match values(t) {
            [v] => Ok(*v),
            vs => Err(refuse(format!(
                "the {} parameter `{what}` has {} values; a trace's distributions have scalar parameters",
                distribution_name(distribution),
                vs.len()
            ))),
        }
    };
    Ok(match distribution {
        schema::Distribution::Normal(d) => {
            Distribution::Normal { mean: one("mean", d.mean.as_deref())?, std: one("stddev", d.stddev.as_deref())? }
        }
        schema::Distribution::Uniform(d) => {
            Distribution::Uniform { low: one("low", d.low.as_deref())?, high: one("high", d.high.as_deref())? }
        }
        schema::Distribution::Categorical(d) => match values(d.probs.as_deref()) {
            [] => return Err(refuse("a Categorical without probabilities".into())),
            probs => Distribution::Categorical { probs: probs.to_vec() },
        },
        schema::Distribution::Poisson(d) => Distribution::Poisson { rate: one("rate", d.rate.as_deref())? },
        schema::Distribution::Bernoulli(d) => Distribution::Bernoulli { p: one("probs", d.probs.as_deref())? },
        other => {
            return Err(refuse(format!(
                "a {} distribution, which traces cannot hold (they hold {COVERED})",
                distribution_name(other)
            )));
        }
    })
}

/// The PPX distribution for ours.
pub fn to_ppx(distribution: &Distribution) -> schema::Distribution {
    let s = |v: f64| Some(Box::new(scalar(v)));
    match distribution {
        Distribution::Normal { mean, std } => {
            schema::Distribution::Normal(Box::new(schema::Normal { mean: s(*mean), stddev: s(*std) }))
        }
        Distribution::Uniform { low, high } => {
            schema::Distribution::Uniform(Box::new(schema::Uniform { low: s(*low), high: s(*high) }))
        }
        Distribution::Categorical { probs } => schema::Distribution::Categorical(Box::new(schema::Categorical {
            probs: Some(Box::new(tensor(probs.clone(), vec![probs.len() as i32]))),
        })),
        Distribution::Poisson { rate } => schema::Distribution::Poisson(Box::new(schema::Poisson { rate: s(*rate) })),
        Distribution::Bernoulli { p } => schema::Distribution::Bernoulli(Box::new(schema::Bernoulli { probs: s(*p) })),
    }
}

/// A tensor observation PPX sends: a Normal whose mean has several values
/// (or whose value is a tensor), scored as independent normals of one
/// deviation.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorNormal {
    /// Shape, C order (the mean's, else the value's).
    pub shape: Vec<usize>,
    /// The means (one per value; a scalar mean is repeated).
    pub mean: Vec<f32>,
    /// The deviation.
    pub noise: f32,
    /// The values observed, if the simulator sent them.
    pub value: Option<Vec<f32>>,
}

/// Whether an `Observe` is a tensor observation: a Normal with more than
/// one mean or more than one observed value. Its deviation must be one
/// number (or the same in every element), its shape consistent.
pub fn tensor_observation(
    address: &str,
    distribution: &schema::Distribution,
    value: Option<&Tensor>,
) -> Result<Option<TensorNormal>, Unmapped> {
    let schema::Distribution::Normal(normal) = distribution else { return Ok(None) };
    let (mean, observed) = (values(normal.mean.as_deref()), values(value));
    if mean.len() <= 1 && observed.len() <= 1 {
        return Ok(None);
    }
    let refuse = |reason: String| Unmapped { address: address.to_owned(), reason };
    let noise = match values(normal.stddev.as_deref()) {
        [first, rest @ ..] if rest.iter().all(|s| s == first) => *first,
        [] => return Err(refuse("a tensor observation without a standard deviation".into())),
        _ => return Err(refuse("a tensor observation whose deviation differs between values".into())),
    };
    let shape_of = |t: Option<&Tensor>, n: usize| -> Result<Vec<usize>, Unmapped> {
        let shape = ppx::codec::shape(t);
        if shape.is_empty() {
            return Ok(vec![n]);
        }
        let dims: Vec<usize> = shape
            .iter()
            .map(|&d| usize::try_from(d).map_err(|_| refuse(format!("a negative dimension in the shape {shape:?}"))))
            .collect::<Result<_, _>>()?;
        if dims.iter().product::<usize>() != n {
            return Err(refuse(format!("the shape {shape:?} does not hold {n} values")));
        }
        Ok(dims)
    };
    let n = mean.len().max(observed.len());
    let shape = if mean.len() == n { shape_of(normal.mean.as_deref(), n)? } else { shape_of(value, n)? };
    let mean: Vec<f32> = match mean {
        [m] => vec![*m as f32; n],
        m if m.len() == n => m.iter().map(|&x| x as f32).collect(),
        m => return Err(refuse(format!("{} means for {n} observed values", m.len()))),
    };
    let value = match observed {
        [] => None,
        v if v.len() == n => Some(v.iter().map(|&x| x as f32).collect()),
        v => return Err(refuse(format!("{} observed values for {n} means", v.len()))),
    };
    Ok(Some(TensorNormal { shape, mean, noise: noise as f32, value }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_five_trace_distributions_map_both_ways() {
        for d in [
            Distribution::Normal { mean: 1.5, std: 0.25 },
            Distribution::Uniform { low: -1.0, high: 3.0 },
            Distribution::Categorical { probs: vec![0.2, 0.3, 0.5] },
            Distribution::Poisson { rate: 2.5 },
            Distribution::Bernoulli { p: 0.4 },
        ] {
            assert_eq!(from_ppx("x", &to_ppx(&d)).unwrap(), d);
        }
    }

    #[test]
    fn a_distribution_traces_cannot_hold_is_refused_naming_the_address() {
        let beta = schema::Distribution::Beta(Box::new(schema::Beta {
            concentration1: Some(Box::new(scalar(2.0))),
            concentration0: Some(Box::new(scalar(3.0))),
        }));
        let err = from_ppx("model/theta", &beta).unwrap_err();
        assert_eq!(err.address, "model/theta");
        assert!(err.to_string().contains("Beta"), "{err}");
        let vector_mean = schema::Distribution::Normal(Box::new(schema::Normal {
            mean: Some(Box::new(tensor(vec![0.0, 1.0], vec![2]))),
            stddev: Some(Box::new(scalar(1.0))),
        }));
        assert!(from_ppx("mu", &vector_mean).unwrap_err().reason.contains("2 values"));
    }

    #[test]
    fn a_normal_over_a_tensor_is_the_tensor_observation() {
        let normal = |mean: Tensor, std: Vec<f64>| {
            schema::Distribution::Normal(Box::new(schema::Normal {
                mean: Some(Box::new(mean)),
                stddev: Some(Box::new(tensor(std.clone(), vec![std.len() as i32]))),
            }))
        };
        let obs = tensor(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], vec![2, 3]);
        // A scalar mean broadcast over an observed 2 x 3 tensor.
        let got = tensor_observation("obs", &normal(scalar(0.5), vec![2.0]), Some(&obs)).unwrap().unwrap();
        assert_eq!(got.shape, vec![2, 3]);
        assert_eq!(got.mean, vec![0.5; 6]);
        assert_eq!(got.noise, 2.0);
        assert_eq!(got.value.unwrap()[5], 6.0);
        // A scalar Normal is not a tensor observation.
        assert_eq!(tensor_observation("y", &normal(scalar(0.0), vec![1.0]), Some(&scalar(0.3))).unwrap(), None);
        // Deviations that differ, and a shape that does not fit, are refused.
        let means = tensor(vec![0.0; 6], vec![2, 3]);
        assert!(tensor_observation("obs", &normal(means.clone(), vec![1.0, 2.0]), None).is_err());
        let wrong = tensor(vec![0.0; 6], vec![4, 2]);
        assert!(tensor_observation("obs", &normal(wrong, vec![1.0]), None).unwrap_err().reason.contains("shape"));
    }
}
