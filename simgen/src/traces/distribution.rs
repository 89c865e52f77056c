//! Drawing from and scoring the five distributions of a trace (the
//! `formats` trace codec's [`Distribution`]): what the executor needs, kept
//! apart from it so the formulas can be checked on their own.

use formats::lmdb::trace_codec::Distribution;
use rand::Rng;
use rand_chacha::ChaCha12Rng;

/// Why a distribution cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidDistribution(pub String);

/// Check the parameters: what a user-supplied proposal may get wrong.
pub fn validate(d: &Distribution) -> Result<(), InvalidDistribution> {
    let bad = |why: String| Err(InvalidDistribution(why));
    match d {
        Distribution::Normal { mean, std } if !(mean.is_finite() && std.is_finite() && *std > 0.0) => {
            bad(format!("normal({mean}, {std}) needs a finite mean and a positive standard deviation"))
        }
        Distribution::Uniform { low, high } if !(low.is_finite() && high.is_finite() && low < high) => {
            bad(format!("uniform({low}, {high}) needs finite bounds, low < high"))
        }
        Distribution::Categorical { probs }
            if probs.is_empty()
                || probs.iter().any(|p| !p.is_finite() || *p < 0.0)
                || probs.iter().sum::<f64>() <= 0.0 =>
        {
            bad(format!("categorical{probs:?} needs non-negative finite weights with a positive sum"))
        }
        Distribution::Poisson { rate } if !(rate.is_finite() && *rate > 0.0) => {
            bad(format!("poisson({rate}) needs a positive finite rate"))
        }
        Distribution::Bernoulli { p } if !(0.0..=1.0).contains(p) => bad(format!("bernoulli({p}) needs 0 <= p <= 1")),
        _ => Ok(()),
    }
}

/// A draw (categorical: the index; Bernoulli: 0 or 1); an error for
/// parameters [`validate`] refuses.
pub fn draw(d: &Distribution, rng: &mut ChaCha12Rng) -> Result<f64, InvalidDistribution> {
    validate(d)?;
    Ok(match d {
        Distribution::Normal { mean, std } => mean + std * rng.sample::<f64, _>(rand_distr::StandardNormal),
        Distribution::Uniform { low, high } => low + (high - low) * rng.random::<f64>(),
        Distribution::Categorical { probs } => {
            let total: f64 = probs.iter().sum();
            let mut u = rng.random::<f64>() * total;
            let mut chosen = None;
            for (i, p) in probs.iter().enumerate() {
                if *p > 0.0 {
                    // Rounding may leave u at or just above the last
                    // weight: then the last positive category is drawn.
                    chosen = Some(i);
                    if u < *p {
                        break;
                    }
                }
                u -= p;
            }
            chosen.ok_or_else(|| InvalidDistribution(format!("categorical{probs:?} has no positive weight")))? as f64
        }
        Distribution::Poisson { rate } => {
            let poisson =
                rand_distr::Poisson::new(*rate).map_err(|e| InvalidDistribution(format!("poisson({rate}): {e}")))?;
            rng.sample(poisson)
        }
        Distribution::Bernoulli { p } => f64::from(u8::from(rng.random::<f64>() < *p)),
    })
}

/// The log density (or mass) of `x` under `d`; see
/// [`Distribution::log_prob`].
pub fn log_prob(d: &Distribution, x: f64) -> f64 {
    d.log_prob(x)
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn log_probabilities_match_closed_forms() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        // Standard normal at 0: -ln √(2π).
        assert!(close(log_prob(&Distribution::Normal { mean: 0.0, std: 1.0 }, 0.0), -0.918_938_533_204_672_7));
        assert!(close(log_prob(&Distribution::Uniform { low: 1.0, high: 5.0 }, 2.0), -(4f64).ln()));
        assert_eq!(log_prob(&Distribution::Uniform { low: 1.0, high: 5.0 }, 6.0), f64::NEG_INFINITY);
        assert!(close(log_prob(&Distribution::Categorical { probs: vec![1.0, 3.0] }, 1.0), (0.75f64).ln()));
        // Poisson(2) at 3: e^-2 2³ / 3!.
        assert!(close(log_prob(&Distribution::Poisson { rate: 2.0 }, 3.0), ((-2f64).exp() * 8.0 / 6.0).ln()));
        assert!(close(log_prob(&Distribution::Bernoulli { p: 0.25 }, 0.0), (0.75f64).ln()));
        assert_eq!(log_prob(&Distribution::Poisson { rate: 2.0 }, 1.5), f64::NEG_INFINITY);
        // Poisson(1) at 300, where ln 300! comes from Stirling's series.
        let exact = -1.0 - (1..=300).map(|i| (i as f64).ln()).sum::<f64>();
        assert!((log_prob(&Distribution::Poisson { rate: 1.0 }, 300.0) - exact).abs() < 1e-9);
    }

    #[test]
    fn draws_follow_their_distributions() {
        let mut rng = ChaCha12Rng::seed_from_u64(1);
        let n = 40_000;
        let mean =
            |d: &Distribution, rng: &mut ChaCha12Rng| (0..n).map(|_| draw(d, rng).unwrap()).sum::<f64>() / n as f64;
        assert!((mean(&Distribution::Normal { mean: 3.0, std: 2.0 }, &mut rng) - 3.0).abs() < 0.05);
        assert!((mean(&Distribution::Uniform { low: -1.0, high: 3.0 }, &mut rng) - 1.0).abs() < 0.03);
        assert!((mean(&Distribution::Categorical { probs: vec![0.5, 0.0, 0.5] }, &mut rng) - 1.0).abs() < 0.03);
        assert!((mean(&Distribution::Poisson { rate: 2.5 }, &mut rng) - 2.5).abs() < 0.05);
        assert!((mean(&Distribution::Bernoulli { p: 0.2 }, &mut rng) - 0.2).abs() < 0.01);
        let zero_weight = Distribution::Categorical { probs: vec![0.5, 0.0, 0.5] };
        assert!((0..1000).all(|_| draw(&zero_weight, &mut rng).unwrap() != 1.0));
    }

    #[test]
    fn invalid_parameters_are_named() {
        for d in [
            Distribution::Normal { mean: 0.0, std: 0.0 },
            Distribution::Uniform { low: 2.0, high: 1.0 },
            Distribution::Categorical { probs: vec![] },
            Distribution::Categorical { probs: vec![-1.0, 2.0] },
            Distribution::Poisson { rate: f64::NAN },
            Distribution::Bernoulli { p: 1.5 },
        ] {
            assert!(validate(&d).is_err() && draw(&d, &mut ChaCha12Rng::seed_from_u64(0)).is_err(), "{d:?} passed");
        }
        assert!(validate(&Distribution::Poisson { rate: 3.0 }).is_ok());
    }
}
