//! Drawing a value from a head's proposal: the distributions
//! [`proposal`](super::proposal) scores, sampled in f64 from one output
//! row, for importance sampling ([`guide`](super::guide)).
//!
//! A mixture draws its component by the softmax weights, then the value
//! from that component (pyprob `distributions/mixture.py`). A truncated
//! normal is drawn by rejection from its normal: exact, and cheap because
//! a head's component means lie inside the bounds and its deviations are
//! at most about ten times their width, which keeps at least 4 % of each
//! component's mass inside.

use rand::Rng;
use rand_distr::StandardNormal;

use super::layout::{AddressLayer, Kind};
use super::proposal::mixture_components;

/// Draws a truncated normal gets before it gives up (at 4 % acceptance,
/// the chance of needing more is below 1e-170).
const MAX_REJECTIONS: usize = 10_000;

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// Probabilities from logits (softmax), in f64.
fn softmax(logits: &[f64]) -> Vec<f64> {
    let m = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = logits.iter().map(|v| (v - m).exp()).collect();
    let z: f64 = e.iter().sum();
    e.into_iter().map(|v| v / z).collect()
}

/// An index drawn with probabilities `p` (summing to 1 up to rounding; a
/// `u` past the last cumulative sum takes the last positive one).
fn categorical(p: &[f64], rng: &mut impl Rng) -> Result<usize, String> {
    let mut u = rng.random::<f64>();
    let mut chosen = None;
    for (i, &q) in p.iter().enumerate() {
        if q > 0.0 {
            chosen = Some(i);
            if u < q {
                break;
            }
        }
        u -= q;
    }
    chosen.ok_or_else(|| format!("no positive probability among {p:?}"))
}

/// A value drawn from the proposal of `layer`'s head, whose output row is
/// `out` (mixtures of `components`), for a choice with prior parameters
/// `prior` (`loader::traces::prior_parameters`).
pub fn draw(
    layer: &AddressLayer,
    components: usize,
    out: &[f64],
    prior: [f64; 2],
    rng: &mut impl Rng,
) -> Result<f64, String> {
    if out.iter().any(|v| !v.is_finite()) {
        return Err(format!("the network's output for {} is not finite", layer.address));
    }
    match layer.kind {
        Kind::Normal | Kind::Uniform => {
            let parts = mixture_components(layer.kind, components, out, prior);
            let weights: Vec<f64> = parts.iter().map(|(w, _, _)| w.exp()).collect();
            let (_, mean, std) = parts[categorical(&weights, rng)?];
            if layer.kind == Kind::Normal {
                return Ok(mean + std * rng.sample::<f64, _>(StandardNormal));
            }
            let (low, high) = (prior[0], prior[1]);
            for _ in 0..MAX_REJECTIONS {
                let v = mean + std * rng.sample::<f64, _>(StandardNormal);
                if (low..=high).contains(&v) {
                    return Ok(v);
                }
            }
            Err(format!("no draw of normal({mean}, {std}) fell in [{low}, {high}] in {MAX_REJECTIONS} tries"))
        }
        Kind::Categorical | Kind::Poisson => Ok(categorical(&softmax(&out[..layer.outcomes]), rng)? as f64),
        Kind::Bernoulli => Ok(f64::from(u8::from(rng.random::<f64>() < sigmoid(out[0])))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use rand::SeedableRng;
    use rand_chacha::ChaCha12Rng;

    use super::super::proposal::log_density_one;
    use super::*;

    fn layer(kind: Kind, outcomes: usize) -> AddressLayer {
        AddressLayer { address: "a".into(), kind, outcomes }
    }

    /// Draws follow the density `log_density_one` gives: the mean and the
    /// mass of the lower half of the range agree with the density
    /// integrated on a fine grid, for both mixtures.
    #[test]
    fn mixture_draws_follow_the_scored_density() {
        let mut rng = ChaCha12Rng::seed_from_u64(3);
        let out = [0.8, -1.5, 2.0, -2.0, -0.5, -3.0, 0.3, 1.2, -0.4];
        for (kind, prior, span) in
            [(Kind::Uniform, [43.0, 47.0], (43.0, 47.0)), (Kind::Normal, [0.0, 0.5], (-8.0, 8.0))]
        {
            let l = layer(kind, 0);
            let n = 40_000;
            let draws: Vec<f64> = (0..n).map(|_| draw(&l, 3, &out, prior, &mut rng).unwrap()).collect();
            let middle = 0.5 * (span.0 + span.1);
            let steps = 200_000;
            let dx = (span.1 - span.0) / steps as f64;
            let (mut mass, mut mean, mut lower) = (0.0, 0.0, 0.0);
            for i in 0..steps {
                let x = span.0 + (i as f64 + 0.5) * dx;
                let p = log_density_one(&l, 3, &out, x, prior).exp() * dx;
                mass += p;
                mean += p * x;
                if x < middle {
                    lower += p;
                }
            }
            assert!((mass - 1.0).abs() < 1e-3, "{kind:?}: mass {mass}");
            let got_mean = draws.iter().sum::<f64>() / n as f64;
            let got_lower = draws.iter().filter(|&&x| x < middle).count() as f64 / n as f64;
            assert!((got_mean - mean).abs() < 0.02 * (span.1 - span.0), "{kind:?}: mean {got_mean} vs {mean}");
            assert!((got_lower - lower).abs() < 0.01, "{kind:?}: lower half {got_lower} vs {lower}");
            if kind == Kind::Uniform {
                assert!(draws.iter().all(|x| (43.0..=47.0).contains(x)));
            }
        }
    }

    /// Counts and yes/no follow the softmax and the sigmoid.
    #[test]
    fn discrete_draws_follow_their_probabilities() {
        let mut rng = ChaCha12Rng::seed_from_u64(4);
        let logits = [1.0, -1.0, 0.0, 2.0];
        let l = layer(Kind::Poisson, 4);
        let n = 40_000;
        let mut counts = [0usize; 4];
        for _ in 0..n {
            counts[draw(&l, 3, &logits, [1.5, 0.0], &mut rng).unwrap() as usize] += 1;
        }
        for (c, p) in counts.iter().zip(softmax(&logits)) {
            assert!((*c as f64 / n as f64 - p).abs() < 0.01, "{counts:?}");
        }
        let yes = (0..n).filter(|_| draw(&layer(Kind::Bernoulli, 0), 3, &[0.5], [0.47, 0.0], &mut rng).unwrap() == 1.0);
        assert!((yes.count() as f64 / n as f64 - sigmoid(0.5)).abs() < 0.01);
    }

    #[test]
    fn a_non_finite_output_is_an_error() {
        let mut rng = ChaCha12Rng::seed_from_u64(5);
        let err = draw(&layer(Kind::Bernoulli, 0), 3, &[f64::NAN], [0.5, 0.0], &mut rng).unwrap_err();
        assert!(err.contains("not finite"), "{err}");
    }
}
