//! Back-propagation in segments, so that the last layers' gradients are
//! final, and can be exchanged, while the earlier layers' backward pass
//! still runs (`--reduce-during-backward`, [`crate::overlap`]).
//!
//! burn's autodiff runs a whole backward pass in one call and gives no
//! point at which one parameter's gradient is final: its own hook for that
//! (`grad_distributed`) feeds burn's in-process multi-device server, which
//! the Dispatch backend does not route to. So a model cuts its forward pass
//! where such points should be: [`Cuts::cut`] hands the next layers a
//! detached copy of an activation that requires a gradient of its own. The
//! engine back-propagates the loss first (every parameter after the last
//! cut gets its final gradient), then each cut in reverse order of
//! cutting: the cut activation `a`, whose gradient `g` the later segments
//! produced, is back-propagated as the scalar `sum(a ⊙ g)`, whose gradient
//! with respect to `a` is `g` itself, so its segment's parameters receive
//! what one backward pass would have given them (the chain rule, one
//! vector-Jacobian product at a time).
//!
//! Reverse order of cutting is an order in which every consumer of a cut
//! has been back-propagated before it: an operation after cut `j` feeds the
//! loss either directly or through a later cut's activation.

use burn::tensor::{Gradients, Tensor};

/// Where a model's forward pass is cut, in the order it was cut.
pub struct Cuts {
    on: bool,
    cuts: Vec<Cut>,
}

/// An activation as its segment computed it, flattened, and how to read
/// the gradient of the detached copy the next layers consumed, flattened.
/// The copy itself is what they consume, unreshaped: a reshape after it
/// would be an operation two segments share, whose backward step the first
/// of them would consume (burn keeps no graph for a second backward pass).
struct Cut {
    activation: Tensor<1>,
    leaf_grad: LeafGrad,
}

/// A cut's copy's gradient in one segment's gradients, flattened.
type LeafGrad = Box<dyn Fn(&Gradients) -> Option<Tensor<1>>>;

impl Cuts {
    /// Cut nowhere: [`cut`](Self::cut) gives its input back (validation,
    /// inference, an exchange after the whole backward pass).
    pub fn off() -> Self {
        Cuts { on: false, cuts: Vec::new() }
    }

    /// Cut where the model says.
    pub fn on() -> Self {
        Cuts { on: true, cuts: Vec::new() }
    }

    /// Cuts made.
    pub fn len(&self) -> usize {
        self.cuts.len()
    }

    /// True if none was made.
    pub fn is_empty(&self) -> bool {
        self.cuts.is_empty()
    }

    /// `x` for the next layers: the same values, cut from the graph that
    /// made them when cutting is on (an `x` no parameter produced, such as
    /// the input batch, is not cut).
    pub fn cut<const D: usize>(&mut self, x: Tensor<D>) -> Tensor<D> {
        if !self.on || !x.is_tracked() {
            return x;
        }
        let values = x.dims().iter().product::<usize>() as i64;
        let leaf = x.clone().detach().require_grad();
        let copy = leaf.clone();
        self.cuts.push(Cut {
            activation: x.reshape([values]),
            leaf_grad: Box::new(move |grads| copy.grad(grads).map(|g| g.reshape([values]))),
        });
        leaf
    }
}

/// Back-propagate `loss`, computed through `cuts`, one segment at a time,
/// last segment first: `segment(gradients, last)` sees each segment's
/// gradients as soon as they are final (`last` for the one after which
/// nothing is left to back-propagate). Each parameter should lie within one
/// segment; one that spans two has its gradient split between two calls.
pub fn backward_in_segments<E>(
    loss: &Tensor<1>,
    cuts: Cuts,
    mut segment: impl FnMut(&Gradients, bool) -> Result<(), E>,
) -> Result<(), E> {
    let cuts = cuts.cuts;
    let mut pending: Vec<Option<Tensor<1>>> = (0..cuts.len()).map(|_| None).collect();
    let mut grads = loss.backward();
    let mut before = cuts.len();
    loop {
        for (cut, pending) in cuts[..before].iter().zip(&mut pending) {
            if let Some(g) = (cut.leaf_grad)(&grads) {
                *pending = Some(match pending.take() {
                    Some(sum) => sum + g,
                    None => g,
                });
            }
        }
        // A cut whose copy nothing used has no gradient to push back: its
        // segment gives its parameters none, as one backward pass would.
        let next = (0..before).rev().find(|&j| pending[j].is_some());
        segment(&grads, next.is_none())?;
        let Some(j) = next else { return Ok(()) };
        let Some(g) = pending[j].take() else { return Ok(()) };
        grads = (cuts[j].activation.clone() * g).sum().backward();
        before = j;
    }
}

/// For the models' tests: `loss(cuts)` back-propagated in segments gives
/// each of `net`'s parameters, in exactly one segment, what one backward
/// pass gives it (relative difference at most `1e-4` of the tensor's
/// largest gradient), over at least `min_cuts` cuts.
#[cfg(test)]
pub(crate) fn assert_segments_match<N: burn::module::Module>(
    net: &N,
    loss: impl Fn(&mut Cuts) -> Tensor<1>,
    min_cuts: usize,
) {
    let mut whole = Vec::new();
    let present = crate::params::gradients(net, &loss(&mut Cuts::off()).backward(), |_, g| whole.push(g.to_vec()));
    let mut cuts = Cuts::on();
    let cut_loss = loss(&mut cuts);
    assert!(cuts.len() >= min_cuts, "{} cuts, expected at least {min_cuts}", cuts.len());
    let mut seen: Vec<Option<Vec<f32>>> = vec![None; whole.len()];
    backward_in_segments(&cut_loss, cuts, |grads, _| {
        crate::params::present_gradients(net, grads, |i, g| {
            assert!(seen[i].replace(g.to_vec()).is_none(), "tensor {i} has gradients in two segments");
            Ok::<(), ()>(())
        })
    })
    .unwrap_or_else(|()| panic!("a segment failed"));
    for (i, (expected, got)) in whole.iter().zip(&seen).enumerate() {
        let Some(got) = got else {
            assert!(!present[i], "tensor {i} had a gradient in one pass but none in segments");
            continue;
        };
        let scale = expected.iter().fold(0f32, |m, v| m.max(v.abs())).max(1e-12);
        let largest = expected.iter().zip(got).map(|(e, g)| (e - g).abs()).fold(0f32, f32::max);
        assert!(largest <= 1e-4 * scale, "tensor {i}: differs by {largest} (largest gradient {scale})");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use burn::tensor::{Device, Distribution, Tensor};

    use super::*;

    fn random<const D: usize>(shape: [usize; D], device: &Device) -> Tensor<D> {
        Tensor::random(shape, Distribution::Normal(0.0, 1.0), device)
    }

    /// A small network with a skip connection around two layers: x → tanh(x W1)
    /// = a → tanh(a W2) = b → (b + a) W3 → loss, cut after a and after b,
    /// so a's copy is used in two later segments.
    fn loss(weights: &[Tensor<2>; 3], x: &Tensor<2>, cuts: &mut Cuts) -> Tensor<1> {
        let a = cuts.cut(x.clone().matmul(weights[0].clone()).tanh());
        let b = cuts.cut(a.clone().matmul(weights[1].clone()).tanh());
        (b + a).matmul(weights[2].clone()).powi_scalar(2).sum()
    }

    /// Back-propagating in segments gives every parameter the gradient one
    /// backward pass gives it, each in exactly one segment, the last
    /// layer's first.
    #[test]
    fn segments_give_the_gradients_of_one_backward_pass_layer_by_layer() {
        let device = Device::flex().autodiff();
        let x = random([4, 6], &device);
        let weights =
            [random([6, 5], &device), random([5, 5], &device), random([5, 3], &device)].map(|w| w.require_grad());
        let whole = loss(&weights, &x, &mut Cuts::off()).backward();
        let expected: Vec<Vec<f32>> =
            weights.iter().map(|w| w.grad(&whole).unwrap().into_data().try_into_vec_as::<f32>().unwrap()).collect();

        let mut cuts = Cuts::on();
        let cut_loss = loss(&weights, &x, &mut cuts);
        assert_eq!(cuts.len(), 2);
        let mut seen = Vec::new();
        backward_in_segments(&cut_loss, cuts, |grads, last| {
            for (i, w) in weights.iter().enumerate() {
                if let Some(g) = w.grad(grads) {
                    seen.push((i, last, g.into_data().try_into_vec_as::<f32>().unwrap()));
                }
            }
            Ok::<(), ()>(())
        })
        .unwrap();
        let order: Vec<(usize, bool)> = seen.iter().map(|(i, last, _)| (*i, *last)).collect();
        assert_eq!(order, [(2, false), (1, false), (0, true)], "the last layer's gradient first, each once");
        for (i, _, got) in &seen {
            let largest = expected[*i].iter().zip(got).map(|(e, g)| (e - g).abs()).fold(0.0f32, f32::max);
            assert!(largest <= 1e-5 * (1.0 + expected[*i].iter().fold(0.0f32, |m, v| m.max(v.abs()))), "W{i}");
        }
    }

    /// With cutting off, nothing is cut and one call sees every gradient.
    #[test]
    fn without_cuts_one_segment_holds_every_gradient() {
        let device = Device::flex().autodiff();
        let x = random([2, 6], &device);
        let weights =
            [random([6, 5], &device), random([5, 5], &device), random([5, 3], &device)].map(|w| w.require_grad());
        let mut cuts = Cuts::off();
        let l = loss(&weights, &x, &mut cuts);
        let mut calls = 0;
        backward_in_segments(&l, cuts, |grads, last| {
            calls += 1;
            assert!(last);
            assert!(weights.iter().all(|w| w.grad(grads).is_some()));
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(calls, 1);
    }
}
