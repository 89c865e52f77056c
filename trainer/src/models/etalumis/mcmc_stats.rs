//! Convergence diagnostics of several MCMC chains of one scalar: split
//! R-hat and the effective sample size from the chains' autocorrelation,
//! both as Gelman et al. define them ("Bayesian Data Analysis", 3rd ed.,
//! §11.4-11.5, eqs. 11.1-11.8).
//!
//! ```
//! use trainer::models::etalumis::mcmc_stats::{effective_samples, split_rhat};
//! // Two chains of independent-looking draws around the same value.
//! let a: Vec<f64> = (0..200).map(|i| ((i * 7919) % 101) as f64).collect();
//! let b: Vec<f64> = (0..200).map(|i| ((i * 104_729) % 101) as f64).collect();
//! let rhat = split_rhat(&[a.clone(), b.clone()]).unwrap();
//! assert!(rhat < 1.05);
//! assert!(effective_samples(&[a, b]).unwrap() > 100.0);
//! ```

/// Split R-hat: each chain cut in two halves; the potential scale
/// reduction sqrt(var⁺ / W), var⁺ = (n−1)/n · W + B/n (BDA3 eqs. 11.1-11.4).
/// `None` when it is undefined: fewer than 4 draws per chain, chains of
/// unequal length, or no variation within the half-chains (a discrete
/// value every chain sat on).
pub fn split_rhat(chains: &[Vec<f64>]) -> Option<f64> {
    let halves = split(chains)?;
    let (within, var_plus) = variances(&halves)?;
    Some((var_plus / within).sqrt())
}

/// Effective sample size of all chains together, m·n / (1 + 2 Σ ρ̂_t), the
/// autocorrelations ρ̂_t = 1 − V_t / (2 var⁺) from the variogram V_t over
/// the split chains, summed while consecutive pairs stay positive (Geyer's
/// initial positive sequence; BDA3 eqs. 11.7-11.8). `None` as for
/// [`split_rhat`].
pub fn effective_samples(chains: &[Vec<f64>]) -> Option<f64> {
    let halves = split(chains)?;
    let (_, var_plus) = variances(&halves)?;
    let (m, n) = (halves.len(), halves[0].len());
    let rho = |t: usize| -> f64 {
        let variogram: f64 =
            halves.iter().map(|h| h[t..].iter().zip(h.iter()).map(|(a, b)| (a - b).powi(2)).sum::<f64>()).sum::<f64>()
                / (m * (n - t)) as f64;
        1.0 - variogram / (2.0 * var_plus)
    };
    let mut sum = 0.0;
    let mut t = 1;
    while t + 1 < n {
        let pair = rho(t) + rho(t + 1);
        if pair < 0.0 {
            break;
        }
        sum += pair;
        t += 2;
    }
    Some((m * n) as f64 / (1.0 + 2.0 * sum))
}

/// The chains cut in halves (a middle draw of an odd length dropped).
fn split(chains: &[Vec<f64>]) -> Option<Vec<&[f64]>> {
    let n = chains.first()?.len();
    if n < 4 || chains.iter().any(|c| c.len() != n) {
        return None;
    }
    let half = n / 2;
    Some(chains.iter().flat_map(|c| [&c[..half], &c[n - half..]]).collect())
}

/// W, the mean of the sequences' variances, and var⁺; `None` when W is 0.
fn variances(sequences: &[&[f64]]) -> Option<(f64, f64)> {
    let n = sequences[0].len() as f64;
    let means: Vec<f64> = sequences.iter().map(|s| s.iter().sum::<f64>() / n).collect();
    let within = sequences
        .iter()
        .zip(&means)
        .map(|(s, mean)| s.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0))
        .sum::<f64>()
        / sequences.len() as f64;
    if within <= 0.0 {
        return None;
    }
    let grand = means.iter().sum::<f64>() / means.len() as f64;
    let between = n * means.iter().map(|m| (m - grand).powi(2)).sum::<f64>() / (means.len() as f64 - 1.0);
    Some((within, (n - 1.0) / n * within + between / n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha12Rng;

    fn ar1(phi: f64, n: usize, offset: f64, seed: u64) -> Vec<f64> {
        let mut rng = ChaCha12Rng::seed_from_u64(seed);
        let mut x = 0.0;
        (0..n)
            .map(|_| {
                let e: f64 = rng.sample(rand_distr::StandardNormal);
                x = phi * x + e;
                x + offset
            })
            .collect()
    }

    /// Independent draws: R-hat about 1 and an ESS about the number of
    /// draws; an AR(1) chain with φ = 0.9 has ESS n (1 − φ)/(1 + φ), about
    /// a nineteenth; a chain stuck elsewhere makes R-hat large.
    #[test]
    fn rhat_and_ess_match_what_independent_correlated_and_stuck_chains_have() {
        let independent: Vec<Vec<f64>> = (0..4).map(|s| ar1(0.0, 2000, 0.0, s)).collect();
        let rhat = split_rhat(&independent).unwrap();
        assert!((rhat - 1.0).abs() < 0.01, "{rhat}");
        let ess = effective_samples(&independent).unwrap();
        assert!((ess / 8000.0 - 1.0).abs() < 0.15, "{ess}");

        let correlated: Vec<Vec<f64>> = (0..4).map(|s| ar1(0.9, 20_000, 0.0, 10 + s)).collect();
        let ess = effective_samples(&correlated).unwrap();
        let expected = 80_000.0 * 0.1 / 1.9;
        assert!((ess / expected - 1.0).abs() < 0.25, "{ess} against {expected}");

        let mut stuck = independent.clone();
        stuck[3] = ar1(0.0, 2000, 3.0, 99);
        assert!(split_rhat(&stuck).unwrap() > 1.3);
    }

    #[test]
    fn undefined_cases_are_none() {
        assert_eq!(split_rhat(&[vec![1.0; 10], vec![1.0; 10]]), None);
        assert_eq!(split_rhat(&[vec![1.0, 2.0, 3.0]]), None);
        assert_eq!(effective_samples(&[vec![1.0, 2.0, 3.0, 4.0], vec![1.0, 2.0]]), None);
        assert_eq!(split_rhat(&[]), None);
    }
}
