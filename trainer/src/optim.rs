//! Optimizers of the papers on flat parameter tensors: SGD with momentum,
//! Adam, and the LARC/LARS layer-wise trust-ratio wrapper. Pure arithmetic
//! on `f32` slices, identical on every rank given identical inputs, so the
//! data-parallel ranks stay in step without exchanging parameters.

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
        Optimizer { rule, trust, first: zeros(), second, steps: 0 }
    }

    /// One step at learning rate `lr`: `params[t] -= update(grads[t])`.
    pub fn step(&mut self, lr: f32, params: &mut [&mut [f32]], grads: &[&[f32]]) {
        self.steps += 1;
        let t = self.steps as i32;
        for (i, (w, g)) in params.iter_mut().zip(grads).enumerate() {
            let scale = self.trust.map_or(1.0, |tr| tr.factor(w, g, lr));
            match self.rule {
                Rule::Sgd { momentum } => {
                    for ((w, g), v) in w.iter_mut().zip(g.iter()).zip(self.first[i].iter_mut()) {
                        *v = momentum * *v + scale * g;
                        *w -= lr * *v;
                    }
                }
                Rule::Adam { beta1, beta2, epsilon } => {
                    let (c1, c2) = (1.0 - beta1.powi(t), 1.0 - beta2.powi(t));
                    let moments = self.first[i].iter_mut().zip(self.second[i].iter_mut());
                    for ((w, g), (m, v)) in w.iter_mut().zip(g.iter()).zip(moments) {
                        let g = scale * g;
                        *m = beta1 * *m + (1.0 - beta1) * g;
                        *v = beta2 * *v + (1.0 - beta2) * g * g;
                        *w -= lr * (*m / c1) / ((*v / c2).sqrt() + epsilon);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
