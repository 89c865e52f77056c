//! The proposal distributions of the address heads, after pyprob's
//! proposal layers (pyprob `nn/proposal_*.py`, the layers Baydin et al.
//! 2019 trained): what a head's outputs mean, and the log density of the
//! recorded values under them, batched as tensors for training.
//!
//! A head's output row is, by kind:
//! - **uniform** prior on [low, high]: `3K` numbers, a mixture of K normals
//!   truncated to [low, high], means `low + sigmoid(m)·(high − low)`,
//!   deviations `(high − low)·(1/1000 + 10·sigmoid(s))`, weights
//!   `softmax(c)` (`ProposalUniformTruncatedNormalMixture`);
//! - **normal** prior N(μ, σ): `3K` numbers, a mixture of K normals with
//!   means `μ + m·σ` and deviations `exp(s)·σ` (`ProposalNormalNormalMixture`);
//! - **categorical** prior of n categories: n logits
//!   (`ProposalCategoricalCategorical`);
//! - **Poisson** prior: logits of the counts 0..n−1 (see
//!   [`poisson_counts`](super::layout::poisson_counts)). pyprob proposes a
//!   truncated-normal mixture on [0, 40] instead, a density over reals for
//!   a prior over integers; a categorical over counts is a proper proposal
//!   for importance sampling, which weighs a drawn count by prior over
//!   proposal mass;
//! - **Bernoulli** prior: one logit (`ProposalBernoulliBernoulli`).

use burn::tensor::activation::{log_sigmoid, log_softmax, sigmoid};
use burn::tensor::{Device, Tensor, TensorData};

use super::layout::{AddressLayer, Kind};

/// Output width of an address's head with mixtures of `components`.
pub fn head_width(layer: &AddressLayer, components: usize) -> usize {
    match layer.kind {
        Kind::Normal | Kind::Uniform => 3 * components,
        Kind::Categorical | Kind::Poisson => layer.outcomes,
        Kind::Bernoulli => 1,
    }
}

/// The recorded choices of one address, one row each: the value and the
/// prior's two numbers (`loader::traces::prior_parameters`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rows {
    /// The values.
    pub values: Vec<f32>,
    /// A normal's mean, a uniform's low bound.
    pub first: Vec<f32>,
    /// A normal's deviation, a uniform's high bound.
    pub second: Vec<f32>,
}

impl Rows {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// True if there is no row.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Add one row.
    pub fn push(&mut self, value: f32, first: f32, second: f32) {
        self.values.push(value);
        self.first.push(first);
        self.second.push(second);
    }
}

fn column(v: &[f32], device: &Device) -> Tensor<2> {
    Tensor::from_data(TensorData::new(v.to_vec(), [v.len(), 1]), device)
}

/// log Σ_k exp(x[:, k]) as [rows]: the first column minus its log-softmax
/// (an identity that inherits log_softmax's numerical care).
fn log_sum_exp(x: Tensor<2>) -> Tensor<1> {
    let rows = x.dims()[0];
    (x.clone().narrow(1, 0, 1) - log_softmax(x, 1).narrow(1, 0, 1)).reshape([rows])
}

/// log N(v | mean, std) for [rows, K] means and deviations.
fn log_normal(v: Tensor<2>, mean: Tensor<2>, std: Tensor<2>) -> Tensor<2> {
    let z = (v - mean) / std.clone();
    z.powi_scalar(2).mul_scalar(-0.5) - std.log() - 0.5 * (2.0 * std::f32::consts::PI).ln()
}

/// The standard normal's distribution function, Φ(z) = (1 + erf(z/√2))/2.
fn normal_cdf(z: Tensor<2>) -> Tensor<2> {
    z.mul_scalar(std::f32::consts::FRAC_1_SQRT_2).erf().add_scalar(1.0).mul_scalar(0.5)
}

/// The log proposal density of each row's value, [rows], from the head's
/// outputs `out` [rows, width].
pub fn log_density(layer: &AddressLayer, components: usize, out: Tensor<2>, rows: &Rows) -> Tensor<1> {
    let device = out.device();
    let n = rows.len();
    let k = components;
    let v = column(&rows.values, &device);
    match layer.kind {
        Kind::Normal => {
            let (mean, std) = (column(&rows.first, &device), column(&rows.second, &device));
            let means = mean + out.clone().narrow(1, 0, k) * std.clone();
            let stds = out.clone().narrow(1, k, k).exp() * std;
            let weights = log_softmax(out.narrow(1, 2 * k, k), 1);
            log_sum_exp(weights + log_normal(v, means, stds))
        }
        Kind::Uniform => {
            let (low, high) = (column(&rows.first, &device), column(&rows.second, &device));
            let range = high.clone() - low.clone();
            let means = low.clone() + sigmoid(out.clone().narrow(1, 0, k)) * range.clone();
            let stds = range.clone().div_scalar(1000.0) + sigmoid(out.clone().narrow(1, k, k)) * range.mul_scalar(10.0);
            let mass =
                normal_cdf((high - means.clone()) / stds.clone()) - normal_cdf((low - means.clone()) / stds.clone());
            let weights = log_softmax(out.narrow(1, 2 * k, k), 1);
            log_sum_exp(weights + log_normal(v, means, stds) - mass.log())
        }
        Kind::Categorical | Kind::Poisson => {
            let last = layer.outcomes.saturating_sub(1);
            let mut one_hot = vec![0f32; n * layer.outcomes];
            for (r, &value) in rows.values.iter().enumerate() {
                // A Poisson count past the proposal's last (less likely than
                // 1e-20 under the prior) is scored as the last.
                one_hot[r * layer.outcomes + (value.max(0.0) as usize).min(last)] = 1.0;
            }
            let one_hot = Tensor::<2>::from_data(TensorData::new(one_hot, [n, layer.outcomes]), &device);
            (log_softmax(out, 1) * one_hot).sum_dim(1).reshape([n])
        }
        Kind::Bernoulli => {
            let logit = out.narrow(1, 0, 1);
            let (yes, no) = (log_sigmoid(logit.clone()), log_sigmoid(logit.neg()));
            (v.clone() * yes + v.neg().add_scalar(1.0) * no).reshape([n])
        }
    }
}

/// A mixture head's components, in f64 from one output row of `k`
/// components: (log weight, mean, deviation) each, for a normal or uniform
/// prior with parameters `prior`. What [`log_density_one`] scores and the
/// sampler draws from; the formulas are those of [`log_density`]'s tensors.
pub fn mixture_components(kind: Kind, k: usize, out: &[f64], prior: [f64; 2]) -> Vec<(f64, f64, f64)> {
    let logits = &out[2 * k..3 * k];
    let top = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let z = top + logits.iter().map(|v| (v - top).exp()).sum::<f64>().ln();
    let s = |x: f64| 1.0 / (1.0 + (-x).exp());
    (0..k)
        .map(|j| {
            let (mean, std) = match kind {
                Kind::Uniform => {
                    let range = prior[1] - prior[0];
                    (prior[0] + s(out[j]) * range, range / 1000.0 + s(out[k + j]) * range * 10.0)
                }
                _ => (prior[0] + out[j] * prior[1], out[k + j].exp() * prior[1]),
            };
            (logits[j] - z, mean, std)
        })
        .collect()
}

/// The same density of one value, in f64 from one head output row: what
/// the tests check the tensors against, and how inference scores a draw.
pub fn log_density_one(layer: &AddressLayer, components: usize, out: &[f64], value: f64, prior: [f64; 2]) -> f64 {
    let lse = |x: &[f64]| {
        let m = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        m + x.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
    };
    let log_normal = |v: f64, mean: f64, std: f64| {
        let z = (v - mean) / std;
        -0.5 * z * z - std.ln() - 0.5 * (2.0 * std::f64::consts::PI).ln()
    };
    match layer.kind {
        Kind::Normal | Kind::Uniform => {
            let (low, high) = (prior[0], prior[1]);
            let terms: Vec<f64> = mixture_components(layer.kind, components, out, prior)
                .into_iter()
                .map(|(w, mean, std)| {
                    let density = w + log_normal(value, mean, std);
                    if layer.kind == Kind::Uniform {
                        // Truncated to [low, high]: divided by the mass inside.
                        density - (normal_cdf_f64((high - mean) / std) - normal_cdf_f64((low - mean) / std)).ln()
                    } else {
                        density
                    }
                })
                .collect();
            lse(&terms)
        }
        Kind::Categorical | Kind::Poisson => {
            let logits = &out[..layer.outcomes];
            let last = layer.outcomes.saturating_sub(1);
            logits[(value.max(0.0) as usize).min(last)] - lse(logits)
        }
        Kind::Bernoulli => {
            let p = 1.0 / (1.0 + (-out[0]).exp());
            if value >= 0.5 { p.ln() } else { (1.0 - p).ln() }
        }
    }
}

/// Φ(z) in f64, from `libm`'s erf (the C library's algorithm, accurate to
/// about an ulp).
pub fn normal_cdf_f64(z: f64) -> f64 {
    0.5 * (1.0 + libm::erf(z * std::f64::consts::FRAC_1_SQRT_2))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn layer(kind: Kind, outcomes: usize) -> AddressLayer {
        AddressLayer { address: "a".into(), kind, outcomes }
    }

    /// Every kind's tensor density equals the f64 one, and each proposal is
    /// a normalised distribution over its prior's support.
    #[test]
    fn tensor_densities_equal_the_f64_ones() {
        let device = Device::flex();
        let k = 3;
        let cases: [(AddressLayer, [f64; 2], Vec<f64>); 5] = [
            (layer(Kind::Normal, 0), [1.0, 2.0], vec![-3.0, 0.9, 4.5]),
            (layer(Kind::Uniform, 0), [43.0, 47.0], vec![43.0, 45.2, 47.0]),
            (layer(Kind::Categorical, 0).with_outcomes(9), [9.0, 0.0], vec![0.0, 4.0, 8.0]),
            (layer(Kind::Poisson, 25), [1.5, 0.0], vec![0.0, 3.0, 30.0]),
            (layer(Kind::Bernoulli, 0), [0.47, 0.0], vec![0.0, 1.0, 1.0]),
        ];
        for (layer, prior, values) in cases {
            let width = head_width(&layer, k);
            let outs: Vec<f64> = (0..values.len() * width).map(|i| ((i * 7919) % 23) as f64 / 10.0 - 1.1).collect();
            let mut rows = Rows::default();
            for &v in &values {
                rows.push(v as f32, prior[0] as f32, prior[1] as f32);
            }
            let out = Tensor::<2>::from_data(
                TensorData::new(outs.iter().map(|&v| v as f32).collect(), [values.len(), width]),
                &device,
            );
            let got = log_density(&layer, k, out, &rows).into_data().try_to_vec::<f32>().unwrap();
            for (r, &v) in values.iter().enumerate() {
                let want = log_density_one(&layer, k, &outs[r * width..(r + 1) * width], v, prior);
                assert!(
                    (f64::from(got[r]) - want).abs() < 1e-4 * want.abs().max(1.0),
                    "{:?} at {v}: {} vs {want}",
                    layer.kind,
                    got[r]
                );
            }
        }
    }

    /// The truncated mixture integrates to 1 over [low, high].
    #[test]
    fn a_uniform_priors_proposal_integrates_to_one_over_its_support() {
        let layer = layer(Kind::Uniform, 0);
        let out = [0.3, -2.0, 1.5, -1.0, 0.5, -3.0, 0.2, 0.1, -0.4];
        let (low, high, n) = (-0.5, 0.5, 200_000);
        let h = (high - low) / n as f64;
        let integral: f64 =
            (0..n).map(|i| log_density_one(&layer, 3, &out, low + (i as f64 + 0.5) * h, [low, high]).exp() * h).sum();
        assert!((integral - 1.0).abs() < 1e-3, "{integral}");
    }

    impl AddressLayer {
        fn with_outcomes(mut self, n: usize) -> Self {
            self.outcomes = n;
            self
        }
    }
}
