//! Optimizers of the papers on flat parameter tensors: SGD with momentum,
//! Adam, and the LARC/LARS layer-wise trust-ratio wrapper. Pure arithmetic
//! on `f32` slices, identical on every rank given identical inputs, so the
//! data-parallel ranks stay in step without exchanging parameters.

use rayon::prelude::*;

/// Per-tensor trust ratio (You et al., LARS; NVIDIA's LARC as CosmoFlow used
/// it): the gradient of each tensor is scaled by `trust ||w|| / ||g||`;
/// with `clip` (LARC) that local rate is divided by the global rate and
/// capped at 1, so it only ever slows a tensor down.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrustRatio {
    /// η (CosmoFlow: 0.002).
    pub trust: f32,
    /// LARC clipping (true) or plain LARS scaling (false).
    pub clip: bool,
}

impl TrustRatio {
    /// The factor applied to the gradient of one tensor at learning rate `lr`.
    pub fn factor(&self, weights: &[f32], grads: &[f32], lr: f32) -> f32 {
        let (w, g) = (norm(weights), norm(grads));
        if w == 0.0 || g == 0.0 {
            return 1.0;
        }
        let local = self.trust * w / g;
        if self.clip { (local / lr).min(1.0) } else { local }
    }
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| f64::from(*x) * f64::from(*x)).sum::<f64>().sqrt() as f32
}

/// Which update rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    /// SGD with momentum μ (PyTorch form: v = μ v + g, w -= lr v).
    Sgd {
        /// μ.
        momentum: f32,
    },
    /// Adam (Kingma & Ba 2015) with bias correction.
    Adam {
        /// β1.
        beta1: f32,
        /// β2.
        beta2: f32,
        /// ε, added to √v̂ (the papers use 1e-8; burn's default is 1e-5).
        epsilon: f32,
    },
}

impl Rule {
    /// Adam with the paper's defaults.
    pub const ADAM: Rule = Rule::Adam { beta1: 0.9, beta2: 0.999, epsilon: 1e-8 };
}

/// An optimizer over a fixed list of tensors; its state is plain vectors
/// (saved and restored with checkpoints).
#[derive(Debug, Clone, PartialEq)]
pub struct Optimizer {
    rule: Rule,
    trust: Option<TrustRatio>,
    /// L2 weight decay λ: λ·w is added to every gradient before the trust
    /// ratio and the rule see it (as a λ/2·‖w‖² term in the loss would).
    weight_decay: f32,
    /// First moments (SGD: velocity), per tensor.
    pub first: Vec<Vec<f32>>,
    /// Second moments (Adam), per tensor.
    pub second: Vec<Vec<f32>>,
    /// Steps taken.
    pub steps: u64,
}

impl Optimizer {
    /// An optimizer for tensors of `lengths`, optionally with a trust ratio.
    pub fn new(rule: Rule, trust: Option<TrustRatio>, lengths: &[usize]) -> Self {
        let zeros = || lengths.iter().map(|&n| vec![0.0; n]).collect();
        let second = if matches!(rule, Rule::Adam { .. }) { zeros() } else { Vec::new() };
        Optimizer { rule, trust, weight_decay: 0.0, first: zeros(), second, steps: 0 }
    }

    /// The same with L2 weight decay λ (Laanait et al.: 1e-4).
    pub fn with_weight_decay(mut self, lambda: f32) -> Self {
        self.weight_decay = lambda;
        self
    }

    /// One step at learning rate `lr`: `params[t] -= update(grads[t])`.
    pub fn step(&mut self, lr: f32, params: &mut [&mut [f32]], grads: &[&[f32]]) {
        self.step_where(lr, params, grads, &vec![true; params.len()]);
    }

    /// One step of the tensors `t` with `has_gradient[t]`; the others, which
    /// no rank had a gradient for, keep their values and moments (as
    /// PyTorch's optimisers skip a parameter whose gradient is `None`).
    pub fn step_where(&mut self, lr: f32, params: &mut [&mut [f32]], grads: &[&[f32]], has_gradient: &[bool]) {
        self.steps += 1;
        let t = self.steps as i32;
        let mut decayed = Vec::new();
        for (i, (w, g)) in params.iter_mut().zip(grads).enumerate() {
            if !has_gradient.get(i).copied().unwrap_or(true) {
                continue;
            }
            let g: &[f32] = if self.weight_decay == 0.0 {
                g
            } else {
                decayed.clear();
                decayed.extend(g.iter().zip(w.iter()).map(|(g, w)| g + self.weight_decay * w));
                &decayed
            };
            let scale = self.trust.map_or(1.0, |tr| tr.factor(w, g, lr));
            match self.rule {
                Rule::Sgd { momentum } => {
                    let update = |((w, g), v): (WeightsAndGrads<'_>, &mut [f32])| {
                        for ((w, g), v) in w.iter_mut().zip(g).zip(v) {
                            *v = momentum * *v + scale * g;
                            *w -= lr * *v;
                        }
                    };
                    let v = &mut self.first[i][..];
                    if w.len() < PARALLEL_FROM {
                        update(((w, g), v));
                    } else {
                        w.par_chunks_mut(CHUNK).zip(g.par_chunks(CHUNK)).zip(v.par_chunks_mut(CHUNK)).for_each(update);
                    }
                }
                Rule::Adam { beta1, beta2, epsilon } => {
                    let (c1, c2) = (1.0 - beta1.powi(t), 1.0 - beta2.powi(t));
                    let update = |((w, g), (m, v)): (WeightsAndGrads<'_>, Moments<'_>)| {
                        for ((w, g), (m, v)) in w.iter_mut().zip(g).zip(m.iter_mut().zip(v)) {
                            let g = scale * g;
                            *m = beta1 * *m + (1.0 - beta1) * g;
                            *v = beta2 * *v + (1.0 - beta2) * g * g;
                            *w -= lr * (*m / c1) / ((*v / c2).sqrt() + epsilon);
                        }
                    };
                    let (m, v) = (&mut self.first[i][..], &mut self.second[i][..]);
                    if w.len() < PARALLEL_FROM {
                        update(((w, g), (m, v)));
                    } else {
                        let moments = m.par_chunks_mut(CHUNK).zip(v.par_chunks_mut(CHUNK));
                        w.par_chunks_mut(CHUNK).zip(g.par_chunks(CHUNK)).zip(moments).for_each(update);
                    }
                }
            }
        }
    }
}

/// A run of a tensor's values and the same run of its gradient.
type WeightsAndGrads<'a> = (&'a mut [f32], &'a [f32]);

/// The same run of Adam's first and second moments.
type Moments<'a> = (&'a mut [f32], &'a mut [f32]);

/// Values a parallel task of the update takes: each value's update
/// depends on that value alone, so splitting a tensor among threads gives
/// the same bits as one pass.
const CHUNK: usize = 1 << 14;

/// Tensors shorter than this are updated on the calling thread: waking
/// the others would cost more than their share. Large models (CosmoGAN
/// `paper`'s 17 M parameters) spent a visible part of the step in a
/// one-thread update with the other cores idle (`docs/benchmarks.md`,
/// CosmoGAN).
const PARALLEL_FROM: usize = 4 * CHUNK;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tensor_without_gradient_keeps_its_values_and_moments() {
        for rule in [Rule::ADAM, Rule::Sgd { momentum: 0.9 }] {
            let mut opt = Optimizer::new(rule, None, &[2, 2]).with_weight_decay(0.1);
            let (mut a, mut b) = (vec![1.0f32, 2.0], vec![3.0f32, 4.0]);
            opt.step_where(0.1, &mut [&mut a, &mut b], &[&[1.0, 1.0], &[0.0, 0.0]], &[true, false]);
            assert_ne!(a, [1.0, 2.0]);
            assert_eq!((b.as_slice(), opt.first[1].as_slice()), (&[3.0f32, 4.0][..], &[0.0f32, 0.0][..]), "{rule:?}");
        }
    }

    /// A tensor long enough to be split among threads is updated with the
    /// bits of the rule applied value by value in one pass.
    #[test]
    fn a_tensor_split_among_threads_gets_the_bits_of_one_pass() {
        let n = PARALLEL_FROM + 123;
        let values = |seed: u32| -> Vec<f32> {
            (0..n as u32).map(|i| ((i.wrapping_mul(2_654_435_761) ^ seed) % 2001) as f32 / 1000.0 - 1.0).collect()
        };
        let (w0, g) = (values(7), values(11));
        for rule in [Rule::ADAM, Rule::Sgd { momentum: 0.9 }] {
            let mut opt = Optimizer::new(rule, None, &[n]);
            let mut w = w0.clone();
            for _ in 0..2 {
                opt.step(0.01, &mut [&mut w], &[&g]);
            }
            let (mut want, mut m, mut v) = (w0.clone(), vec![0.0f32; n], vec![0.0f32; n]);
            for t in 1..=2 {
                for k in 0..n {
                    match rule {
                        Rule::Sgd { momentum } => {
                            m[k] = momentum * m[k] + g[k];
                            want[k] -= 0.01 * m[k];
                        }
                        Rule::Adam { beta1, beta2, epsilon } => {
                            let (c1, c2) = (1.0 - beta1.powi(t), 1.0 - beta2.powi(t));
                            m[k] = beta1 * m[k] + (1.0 - beta1) * g[k];
                            v[k] = beta2 * v[k] + (1.0 - beta2) * g[k] * g[k];
                            want[k] -= 0.01 * (m[k] / c1) / ((v[k] / c2).sqrt() + epsilon);
                        }
                    }
                }
            }
            let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&w), bits(&want), "{rule:?}");
        }
    }

    fn run(rule: Rule, trust: Option<TrustRatio>, steps: usize, lr: f32) -> Vec<f32> {
        // Minimise f(w) = Σ (w_i - i)² / 2, gradient w - target.
        let target: Vec<f32> = (0..4).map(|i| i as f32).collect();
        let mut w = vec![5.0f32; 4];
        let mut opt = Optimizer::new(rule, trust, &[4]);
        for _ in 0..steps {
            let g: Vec<f32> = w.iter().zip(&target).map(|(w, t)| w - t).collect();
            opt.step(lr, &mut [&mut w], &[&g]);
        }
        w
    }

    #[test]
    fn adam_first_step_moves_every_weight_by_the_learning_rate() {
        // With bias correction, step 1 is lr * g/|g| (up to ε).
        let mut w = vec![1.0f32, -2.0, 3.0];
        let g = [0.5f32, -4.0, 1e-3];
        let mut opt = Optimizer::new(Rule::ADAM, None, &[3]);
        opt.step(0.1, &mut [&mut w], &[&g]);
        for (after, (before, g)) in w.iter().zip([1.0f32, -2.0, 3.0].iter().zip(g)) {
            assert!((before - after - 0.1 * g.signum()).abs() < 1e-4, "{before} -> {after}");
        }
    }

    #[test]
    fn sgd_with_momentum_matches_the_recurrence_by_hand() {
        let mut w = vec![1.0f32];
        let mut opt = Optimizer::new(Rule::Sgd { momentum: 0.9 }, None, &[1]);
        opt.step(0.1, &mut [&mut w], &[&[2.0]]); // v = 2, w = 1 - 0.2
        opt.step(0.1, &mut [&mut w], &[&[1.0]]); // v = 1.8 + 1 = 2.8, w = 0.8 - 0.28
        assert!((w[0] - 0.52).abs() < 1e-6, "{}", w[0]);
    }

    #[test]
    fn both_rules_converge_on_a_quadratic() {
        for rule in [Rule::Sgd { momentum: 0.9 }, Rule::ADAM] {
            let w = run(rule, None, 500, 0.05);
            for (i, v) in w.iter().enumerate() {
                assert!((v - i as f32).abs() < 1e-2, "{rule:?}: w[{i}] = {v}");
            }
        }
    }

    #[test]
    fn larc_caps_the_trust_ratio_at_one_and_lars_does_not() {
        let larc = TrustRatio { trust: 0.002, clip: true };
        let lars = TrustRatio { trust: 0.002, clip: false };
        let (w, g) = ([3.0f32, 4.0], [0.0f32, 1e-4]); // ||w|| = 5, ||g|| = 1e-4
        assert_eq!(larc.factor(&w, &g, 0.01), 1.0); // 0.002 * 5 / 1e-4 / 0.01 = 10000 -> 1
        assert!((lars.factor(&w, &g, 0.01) - 100.0).abs() < 1e-3);
        let big = [300.0f32, 400.0]; // ||g|| = 500: local rate 2e-5, / lr 0.01 = 2e-3
        assert!((larc.factor(&w, &big, 0.01) - 2e-3).abs() < 1e-7);
        assert_eq!(larc.factor(&[0.0, 0.0], &big, 0.01), 1.0);
        // With LARC the quadratic still converges (a slowed, never a faster step).
        let w = run(Rule::Sgd { momentum: 0.9 }, Some(larc), 3000, 0.05);
        assert!(w.iter().enumerate().all(|(i, v)| (v - i as f32).abs() < 0.05), "{w:?}");
    }

    /// Weight decay adds λ·w to the gradient before LARS sees it: one Adam
    /// step with LARS moves each weight by lr · sign of its decayed
    /// gradient (Adam's first step), and the LARS factor is η‖w‖/‖g + λw‖.
    #[test]
    fn weight_decay_and_lars_with_adam_match_the_closed_form() {
        let (lambda, trust, lr) = (0.1f32, 0.002f32, 0.01f32);
        let w0 = vec![1.0f32, -2.0, 0.5];
        let g = vec![0.3f32, 0.1, -0.2];
        let decayed: Vec<f32> = g.iter().zip(&w0).map(|(g, w)| g + lambda * w).collect();
        let factor = TrustRatio { trust, clip: false }.factor(&w0, &decayed, lr);
        let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((factor - trust * norm(&w0) / norm(&decayed)).abs() < 1e-7);
        let mut opt =
            Optimizer::new(Rule::ADAM, Some(TrustRatio { trust, clip: false }), &[3]).with_weight_decay(lambda);
        let mut w = w0.clone();
        opt.step(lr, &mut [w.as_mut_slice()], &[g.as_slice()]);
        for ((w, w0), d) in w.iter().zip(&w0).zip(&decayed) {
            // m̂ = s·d, v̂ = (s·d)², so the step is lr · sign(d) (to ε).
            assert!((w - (w0 - lr * d.signum())).abs() < 1e-6, "{w} from {w0}");
        }
        // Plain SGD without momentum: w -= lr (g + λ w).
        let mut opt = Optimizer::new(Rule::Sgd { momentum: 0.0 }, None, &[3]).with_weight_decay(lambda);
        let mut w = w0.clone();
        opt.step(lr, &mut [w.as_mut_slice()], &[g.as_slice()]);
        for ((w, w0), d) in w.iter().zip(&w0).zip(&decayed) {
            assert!((w - (w0 - lr * d)).abs() < 1e-7);
        }
    }
}
