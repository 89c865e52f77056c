//! Measuring the power spectrum of a gridded field: P = V |δ̂_k|² with
//! δ̂_k = FFT(δ)/N³, averaged in spherical shells of width k_f = 2π/L
//! centred on multiples of k_f, optionally compensating the mass-assignment
//! window W(k) = Π_i sinc(k_i H/2)^p (H the cell size).

use rustfft::num_complex::Complex32;

use super::assign::Assignment;
use super::cosmology::top_hat;
use super::fft3::Fft3;
use super::field::for_each_mode;

/// One shell of the measured spectrum.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct PkBin {
    /// Mean |k| of the shell's modes, h/Mpc.
    pub k: f64,
    /// Mean power, (Mpc/h)³.
    pub power: f64,
    /// Modes in the shell.
    pub modes: u64,
}

/// δ̂_k of a real field on an n³ grid: FFT(δ)/n³.
pub fn modes_of(field: &[f32], fft: &mut Fft3) -> Vec<Complex32> {
    let n = fft.n();
    let mut cube: Vec<Complex32> = field.iter().map(|&v| Complex32::new(v, 0.0)).collect();
    fft.forward(&mut cube);
    let scale = 1.0 / (n * n * n) as f32;
    cube.iter_mut().for_each(|c| *c *= scale);
    cube
}

/// Shell-averaged P(k) of modes δ̂_k of a box of side `box_size`, up to
/// the Nyquist frequency, dividing by the window of `compensate` if given.
pub fn power_spectrum(modes: &[Complex32], n: usize, box_size: f64, compensate: Option<Assignment>) -> Vec<PkBin> {
    let kf = 2.0 * std::f64::consts::PI / box_size;
    let half_cell = box_size / n as f64 / 2.0;
    let bins = n / 2;
    let mut sums = vec![(0.0f64, 0.0f64, 0u64); bins + 1];
    let volume = box_size.powi(3);
    for_each_mode(n, |index, f| {
        let k = kf * ((f[0] * f[0] + f[1] * f[1] + f[2] * f[2]) as f64).sqrt();
        let bin = (k / kf).round() as usize;
        if bin == 0 || bin > bins {
            return;
        }
        let mut p = volume * f64::from(modes[index].norm_sqr());
        if let Some(scheme) = compensate {
            let w: f64 = f.iter().map(|&fi| sinc(kf * fi as f64 * half_cell)).product();
            p /= w.powi(2 * scheme.window_power());
        }
        let s = &mut sums[bin];
        s.0 += k;
        s.1 += p;
        s.2 += 1;
    });
    sums.into_iter()
        .filter(|s| s.2 > 0)
        .map(|(k, p, m)| PkBin { k: k / m as f64, power: p / m as f64, modes: m })
        .collect()
}

/// σ(R) of the field of modes δ̂_k: √(Σ_k |δ̂_k|² W(kR)²) over the grid's modes.
pub fn sigma_r_of_modes(modes: &[Complex32], n: usize, box_size: f64, r: f64) -> f64 {
    let kf = 2.0 * std::f64::consts::PI / box_size;
    let mut var = 0.0;
    for_each_mode(n, |index, f| {
        let k = kf * ((f[0] * f[0] + f[1] * f[1] + f[2] * f[2]) as f64).sqrt();
        if k > 0.0 {
            let w = top_hat(k * r);
            var += f64::from(modes[index].norm_sqr()) * w * w;
        }
    });
    var.sqrt()
}

fn sinc(x: f64) -> f64 {
    if x.abs() < 1e-8 { 1.0 } else { x.sin() / x }
}

/// Density contrast δ = counts / mean - 1 of a grid of counts.
pub fn density_contrast(counts: &[f32]) -> Vec<f32> {
    let mean = counts.iter().map(|&c| f64::from(c)).sum::<f64>() / counts.len().max(1) as f64;
    if mean == 0.0 {
        return vec![0.0; counts.len()];
    }
    counts.iter().map(|&c| (f64::from(c) / mean - 1.0) as f32).collect()
}

#[cfg(test)]
mod tests {
    use super::super::cosmology::Cosmology;
    use super::super::field::{FieldConfig, linear_modes, to_real};
    use super::*;

    #[test]
    fn fixed_amplitude_linear_field_has_the_target_spectrum_and_sigma_8() {
        let (n, box_size) = (128, 512.0);
        let cosmology = Cosmology::REFERENCE;
        let power = cosmology.linear_power();
        let config = FieldConfig { n, box_size, seed: 42, fixed_amplitude: true };
        let mut fft = Fft3::new(n);
        let modes = linear_modes(&config, &power, &mut fft);
        // Through real space and back, as a user measures a written field.
        let field = to_real(&modes, &mut fft);
        let measured = modes_of(&field, &mut fft);
        let kf = 2.0 * std::f64::consts::PI / box_size;
        let k_nyquist = kf * n as f64 / 2.0;
        let pk = power_spectrum(&measured, n, box_size, None);
        let mut checked = 0;
        for bin in pk.iter().filter(|b| b.k >= 2.0 * kf && b.k <= k_nyquist / 2.0) {
            let want = power.at(bin.k);
            assert!((bin.power / want - 1.0).abs() < 0.01, "k {:.4}: {} vs {want}", bin.k, bin.power);
            checked += 1;
        }
        assert!(checked >= 30, "{checked} bins");
        let sigma_8 = sigma_r_of_modes(&measured, n, box_size, 8.0);
        assert!((sigma_8 / cosmology.sigma_8 - 1.0).abs() < 0.02, "σ8 {sigma_8}");
    }

    #[test]
    fn random_amplitude_fields_differ_by_seed_and_repeat_by_seed() {
        let power = Cosmology::REFERENCE.linear_power();
        let mut fft = Fft3::new(16);
        let config = FieldConfig { n: 16, box_size: 100.0, seed: 1, fixed_amplitude: false };
        let a = linear_modes(&config, &power, &mut fft);
        let b = linear_modes(&config, &power, &mut fft);
        let c = linear_modes(&FieldConfig { seed: 2, ..config }, &power, &mut fft);
        assert_eq!(a, b);
        assert_ne!(a, c);
        // A real field: imaginary parts vanish after the inverse transform.
        let mut cube = a.clone();
        fft.inverse(&mut cube);
        let max_im = cube.iter().map(|v| v.im.abs()).fold(0.0, f32::max);
        let max_re = cube.iter().map(|v| v.re.abs()).fold(0.0, f32::max);
        assert!(max_im < 1e-5 * max_re.max(1e-6), "{max_im} vs {max_re}");
    }
}
