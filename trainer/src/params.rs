//! A model's float parameters as flat `f32` vectors, in the fixed order of
//! burn's module traversal: read values and gradients out, write values
//! back, and a seeded initialisation that does not depend on burn's RNG.
//! The trainer's optimisers, fusion buffers and checkpoints all work on
//! these vectors, so every rank holds bit-identical parameters.

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::tensor::{Device, Gradients, Tensor, TensorData};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The shape of every float parameter of `model`, in traversal order.
pub fn shapes<M: Module>(model: &M) -> Vec<Vec<usize>> {
    struct Shapes(Vec<Vec<usize>>);
    impl ModuleVisitor for Shapes {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            self.0.push(param.val().dims().to_vec());
        }
    }
    let mut visitor = Shapes(Vec::new());
    model.visit(&mut visitor);
    visitor.0
}

/// Number of values of each shape.
pub fn lengths(shapes: &[Vec<usize>]) -> Vec<usize> {
    shapes.iter().map(|s| s.iter().product()).collect()
}

fn to_vec<const D: usize>(tensor: Tensor<D>) -> Vec<f32> {
    // A float tensor of this crate's models always converts to f32.
    tensor.into_data().try_into_vec_as::<f32>().unwrap_or_default()
}

/// Every float parameter's values.
pub fn values<M: Module>(model: &M) -> Vec<Vec<f32>> {
    struct Values(Vec<Vec<f32>>);
    impl ModuleVisitor for Values {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            self.0.push(to_vec(param.val()));
        }
    }
    let mut visitor = Values(Vec::new());
    model.visit(&mut visitor);
    visitor.0
}

/// Hand each parameter's gradient (zeros where the loss does not depend on
/// it) to `sink(index, gradient)`, in traversal order.
pub fn gradients<M: Module>(model: &M, grads: &Gradients, sink: impl FnMut(usize, &[f32])) {
    struct Grads<'g, F> {
        grads: &'g Gradients,
        sink: F,
        index: usize,
    }
    impl<F: FnMut(usize, &[f32])> ModuleVisitor for Grads<'_, F> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            let value = param.val();
            let grad = match value.grad(self.grads) {
                Some(g) => to_vec(g),
                None => vec![0.0; value.dims().iter().product()],
            };
            (self.sink)(self.index, &grad);
            self.index += 1;
        }
    }
    model.visit(&mut Grads { grads, sink, index: 0 });
}

/// `model` with its float parameters replaced by `values` (traversal order),
/// placed on `device` and tracked for gradients.
pub fn with_values<M: Module>(model: M, values: &[Vec<f32>], device: &Device) -> M {
    struct Write<'v> {
        values: &'v [Vec<f32>],
        device: &'v Device,
        index: usize,
    }
    impl ModuleMapper for Write<'_> {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
            let Some(values) = self.values.get(self.index) else { return param };
            self.index += 1;
            let device = self.device;
            param.map(|old| {
                let shape = old.dims();
                Tensor::<D>::from_data(TensorData::new(values.clone(), shape), device).require_grad()
            })
        }
    }
    model.map(&mut Write { values, device, index: 0 })
}

/// How the initial weights are drawn (biases always start at zero).
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Init {
    /// Glorot uniform, `U(±√(6 / (fan_in + fan_out)))`: Keras' default for
    /// Conv3D and Dense, so the MLPerf reference model's default.
    #[default]
    GlorotUniform,
    /// He uniform scaled for LeakyReLU with slope `a`, `U(±√(6 / ((1 + a²)
    /// fan_in)))`: the MLPerf HPC reference's `kernel_init:
    /// he_uniform_mod` (mlcommons/hpc `cosmoflow/models/cosmoflow.py`),
    /// made to keep the activations' variance from layer to layer. Where a
    /// layer doubles the filters, Glorot's weight variance is 0.36 of it.
    HeUniformLeaky {
        /// Negative slope of the LeakyReLU that follows each layer.
        slope: f32,
    },
}

/// Initial weights per `init` and zero biases, from a seeded stream: the
/// same `seed` gives the same parameters on every machine and every build.
/// Rank 5 is a convolution kernel [out, in, k, k, k]; rank 2 a burn
/// `Linear` weight [in, out]; rank 1 a bias.
pub fn initial(shapes: &[Vec<usize>], init: Init, seed: u64) -> Vec<Vec<f32>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    shapes
        .iter()
        .map(|shape| {
            let len: usize = shape.iter().product();
            let (fan_in, fan_out) = match shape.as_slice() {
                [out, input, kernel @ ..] if !kernel.is_empty() => {
                    let k: usize = kernel.iter().product();
                    (input * k, out * k)
                }
                [input, out] => (*input, *out),
                _ => return vec![0.0; len],
            };
            let limit = match init {
                Init::GlorotUniform => (6.0 / (fan_in + fan_out) as f64).sqrt(),
                Init::HeUniformLeaky { slope } => (6.0 / ((1.0 + f64::from(slope).powi(2)) * fan_in as f64)).sqrt(),
            } as f32;
            (0..len).map(|_| rng.random_range(-limit..=limit)).collect()
        })
        .collect()
}

/// Glorot-uniform weights and zero biases ([`initial`] with [`Init::GlorotUniform`]).
pub fn glorot_uniform(shapes: &[Vec<usize>], seed: u64) -> Vec<Vec<f32>> {
    initial(shapes, Init::GlorotUniform, seed)
}

/// xxh3 of every value's bytes: equal on all ranks if and only if (up to
/// hash collisions) the parameters are bit-identical.
pub fn checksum(values: &[Vec<f32>]) -> u64 {
    use std::hash::Hasher as _;
    let mut hasher = twox_hash::XxHash3_64::new();
    let mut bytes = Vec::new();
    for tensor in values {
        bytes.clear();
        bytes.extend(tensor.iter().flat_map(|v| v.to_le_bytes()));
        hasher.write(&bytes);
    }
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glorot_limits_follow_the_fans_and_biases_start_at_zero() {
        let shapes = vec![vec![8, 4, 3, 3, 3], vec![8], vec![100, 20]];
        let values = glorot_uniform(&shapes, 1);
        let conv_limit = (6.0f32 / (4.0 * 27.0 + 8.0 * 27.0)).sqrt();
        assert!(values[0].iter().all(|v| v.abs() <= conv_limit));
        assert!(values[0].iter().any(|v| v.abs() > 0.9 * conv_limit));
        assert!(values[1].iter().all(|&v| v == 0.0));
        let dense_limit = (6.0f32 / 120.0).sqrt();
        assert!(values[2].iter().all(|v| v.abs() <= dense_limit));
        assert_eq!(values, glorot_uniform(&shapes, 1));
        assert_ne!(values, glorot_uniform(&shapes, 2));
    }

    #[test]
    fn he_limits_follow_the_fan_in_and_the_leaky_slope() {
        let shapes = vec![vec![8, 4, 3, 3, 3], vec![8], vec![100, 20]];
        let values = initial(&shapes, Init::HeUniformLeaky { slope: 0.3 }, 1);
        let conv_limit = (6.0f32 / (1.09 * 4.0 * 27.0)).sqrt();
        assert!(values[0].iter().all(|v| v.abs() <= conv_limit));
        assert!(values[0].iter().any(|v| v.abs() > 0.9 * conv_limit));
        assert!(values[1].iter().all(|&v| v == 0.0));
        let dense_limit = (6.0f32 / (1.09 * 100.0)).sqrt();
        assert!(values[2].iter().all(|v| v.abs() <= dense_limit));
        assert!(values[2].iter().any(|v| v.abs() > 0.9 * dense_limit));
    }

    #[test]
    fn values_written_into_a_model_read_back_the_same_in_traversal_order() {
        let device = Device::flex().autodiff();
        let model =
            crate::model::cosmoflow::CosmoflowConfig::mlperf_small().init(&device).unwrap_or_else(|e| panic!("{e}"));
        let shapes = shapes(&model);
        // 5 convolutions and 3 dense layers, weight and bias each.
        assert_eq!(shapes.len(), 16);
        assert_eq!(shapes[0], vec![8, 4, 3, 3, 3]);
        assert_eq!(shapes[10], vec![128, 128]);
        let values = glorot_uniform(&shapes, 9);
        let model = with_values(model, &values, &device);
        assert_eq!(super::values(&model), values);
    }

    #[test]
    fn every_parameter_written_back_receives_a_gradient() {
        use crate::model::cosmoflow::{CosmoflowConfig, mse};
        let device = Device::flex().autodiff();
        let config = CosmoflowConfig::mlperf_small();
        let model = config.init(&device).unwrap_or_else(|e| panic!("{e}"));
        let shapes = shapes(&model);
        let model = with_values(model, &glorot_uniform(&shapes, 3), &device);
        let d = config.input;
        let x: Vec<f32> = (0..2 * d * d * d * 4).map(|i| ((i * 31) % 7) as f32 / 3.0).collect();
        let x = Tensor::<5>::from_data(TensorData::new(x, [2, d, d, d, 4]), &device);
        let y = Tensor::<2>::from_data(TensorData::new(vec![0.5f32; 8], [2, 4]), &device);
        let grads = mse(model.forward(x, None), y).backward();
        let mut norms = Vec::new();
        gradients(&model, &grads, |_, g| norms.push(g.iter().map(|v| v * v).sum::<f32>()));
        assert_eq!(norms.len(), shapes.len());
        assert!(norms.iter().all(|&n| n > 0.0), "{norms:?}");
    }

    #[test]
    fn checksum_sees_a_single_bit() {
        let a = vec![vec![1.0f32, 2.0], vec![3.0]];
        let mut b = a.clone();
        b[1][0] = f32::from_bits(3.0f32.to_bits() ^ 1);
        assert_ne!(checksum(&a), checksum(&b));
        assert_eq!(checksum(&a), checksum(&a.clone()));
    }
}
