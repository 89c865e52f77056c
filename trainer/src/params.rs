//! A model's tensors as flat `f32` vectors, in the fixed order of burn's
//! module traversal, split by what they are:
//!
//! - **parameters** (convolution and dense weights and biases, BatchNorm's
//!   scale `gamma` and shift `beta`): trained; they go through the gradient
//!   exchange, the optimiser and checkpoints;
//! - **state** (BatchNorm's `running_mean` and `running_var`): updated by
//!   the forward pass as burn does, never by the optimiser; the engine
//!   averages it over the ranks and checkpoints it.
//!
//! What a tensor is comes from where it sits in the module: its field name
//! and the type of the module that holds it, which burn's visitors report
//! (`enter_module("gamma", "Struct:BatchNorm")`). A tensor this module does
//! not recognise is an error, not a silently zeroed parameter.

use burn::backend::Flex;
use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::tensor::{Device, Gradients, Tensor, TensorData};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

/// What a tensor of a model is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A convolution or dense weight: drawn by the model's scheme.
    Weight,
    /// A bias: starts at 0.
    Bias,
    /// BatchNorm's scale: starts at 1.
    Gamma,
    /// BatchNorm's shift: starts at 0.
    Beta,
    /// BatchNorm's running mean (state): starts at 0.
    RunningMean,
    /// BatchNorm's running variance (state): starts at 1.
    RunningVar,
}

impl Role {
    /// True for tensors the optimiser trains; false for state.
    pub fn trainable(self) -> bool {
        !matches!(self, Role::RunningMean | Role::RunningVar)
    }
}

/// One tensor of a model.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TensorInfo {
    /// Dotted path of field names (`convs.0.weight`).
    pub path: String,
    /// The module type that holds it (`Conv3d`, `BatchNorm`, `Linear`).
    pub module: String,
    /// What it is.
    pub role: Role,
    /// Its shape.
    pub shape: Vec<usize>,
}

impl TensorInfo {
    /// Number of values.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// True if it holds no value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A tensor whose role cannot be told from its place in the module.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "tensor '{path}' of module type '{module}' is neither a weight, a bias nor BatchNorm's gamma, beta or running statistics: the trainer does not know how to initialise or train it"
)]
pub struct UnknownTensor {
    /// Its path.
    pub path: String,
    /// The module type holding it.
    pub module: String,
}

/// The path of field names and module types down to the tensor being
/// visited, as burn's visitors and mappers report it.
#[derive(Default)]
struct Place {
    stack: Vec<(String, String)>,
}

impl Place {
    fn enter(&mut self, name: &str, container: &str) {
        self.stack.push((name.to_owned(), container.to_owned()));
    }

    fn exit(&mut self) {
        self.stack.pop();
    }

    fn path(&self) -> String {
        self.stack.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(".")
    }

    /// The tensor's field name and the type of the struct holding it.
    fn role(&self) -> Result<(Role, String), UnknownTensor> {
        let field = self.stack.last().map_or("", |(n, _)| n.as_str());
        let module = self.stack.last().and_then(|(_, c)| c.strip_prefix("Struct:")).unwrap_or("").to_owned();
        let role = match (module.as_str(), field) {
            ("BatchNorm", "gamma") => Role::Gamma,
            ("BatchNorm", "beta") => Role::Beta,
            ("BatchNorm", "running_mean") => Role::RunningMean,
            ("BatchNorm", "running_var") => Role::RunningVar,
            (_, "weight") => Role::Weight,
            (_, "bias") => Role::Bias,
            _ => return Err(UnknownTensor { path: self.path(), module }),
        };
        Ok((role, module))
    }
}

/// Every float tensor of `model`, in traversal order, with its role.
pub fn inventory<M: Module>(model: &M) -> Result<Vec<TensorInfo>, UnknownTensor> {
    struct Inventory {
        place: Place,
        found: Result<Vec<TensorInfo>, UnknownTensor>,
    }
    impl ModuleVisitor for Inventory {
        fn enter_module(&mut self, name: &str, container: &str) {
            self.place.enter(name, container);
        }
        fn exit_module(&mut self, _: &str, _: &str) {
            self.place.exit();
        }
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            let shape = param.val().dims().to_vec();
            let info =
                self.place.role().map(|(role, module)| TensorInfo { path: self.place.path(), module, role, shape });
            match (&mut self.found, info) {
                (Ok(found), Ok(info)) => found.push(info),
                (Ok(_), Err(e)) => self.found = Err(e),
                (Err(_), _) => {}
            }
        }
    }
    let mut visitor = Inventory { place: Place::default(), found: Ok(Vec::new()) };
    model.visit(&mut visitor);
    visitor.found
}

/// The shapes of the trainable parameters of `model`, in traversal order.
pub fn shapes<M: Module>(model: &M) -> Result<Vec<Vec<usize>>, UnknownTensor> {
    Ok(inventory(model)?.into_iter().filter(|t| t.role.trainable()).map(|t| t.shape).collect())
}

/// Number of values of each shape.
pub fn lengths(shapes: &[Vec<usize>]) -> Vec<usize> {
    shapes.iter().map(|s| s.iter().product()).collect()
}

/// A tensor's values as `f32`. Every float tensor of our models holds f32
/// (burn's default float type); anything else is a bug worth stopping for,
/// never a list of zeros.
fn to_vec<const D: usize>(tensor: Tensor<D>) -> Vec<f32> {
    match tensor.into_data().try_into_vec_as::<f32>() {
        Ok(values) => values,
        Err(e) => panic!("a model tensor did not convert to f32: {e:?}"),
    }
}

/// `f` of a tensor's values, read in place when the tensor lives on the
/// Flex CPU backend in one f32 buffer (every gradient of our models does),
/// otherwise from a copy ([`to_vec`]). The copy cost as much as the
/// optimiser's step on CosmoGAN `paper`'s 17 M parameters, mostly in page
/// faults on its fresh buffer (`docs/benchmarks.md`, CosmoGAN).
fn read_values<const D: usize, R>(tensor: Tensor<D>, f: impl FnOnce(&[f32]) -> R) -> R {
    if let Ok(flex) = tensor.clone().try_into_primitive::<Flex>()
        && let Some(values) = flex.as_slice::<f32>()
    {
        return f(values);
    }
    f(&to_vec(tensor))
}

/// The values of the float tensors of one kind (trainable or state), in
/// traversal order.
fn read_kind<M: Module>(model: &M, trainable: bool) -> Vec<Vec<f32>> {
    struct Read {
        place: Place,
        trainable: bool,
        out: Vec<Vec<f32>>,
    }
    impl ModuleVisitor for Read {
        fn enter_module(&mut self, name: &str, container: &str) {
            self.place.enter(name, container);
        }
        fn exit_module(&mut self, _: &str, _: &str) {
            self.place.exit();
        }
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            // `inventory` has checked every role before a run starts.
            let Ok((role, _)) = self.place.role() else { return };
            if role.trainable() == self.trainable {
                self.out.push(to_vec(param.val()));
            }
        }
    }
    let mut visitor = Read { place: Place::default(), trainable, out: Vec::new() };
    model.visit(&mut visitor);
    visitor.out
}

/// Every trainable parameter's values.
pub fn values<M: Module>(model: &M) -> Vec<Vec<f32>> {
    read_kind(model, true)
}

/// The state's values (BatchNorm running statistics), as of the last
/// forward pass. Reads through `model.valid()`, which folds the updates
/// burn's running state still holds per thread into its value.
pub fn state_values<M: Module>(model: &M) -> Vec<Vec<f32>> {
    read_kind(&model.valid(), false)
}

/// Hand each trainable parameter's gradient (zeros where the loss does not
/// depend on it) to `sink(index, gradient)`, in traversal order. Returns
/// which parameters had a gradient: a network whose layers depend on the
/// input (the Etalumis heads of addresses a batch never visits) leaves
/// some without.
pub fn gradients<M: Module>(model: &M, grads: &Gradients, mut sink: impl FnMut(usize, &[f32])) -> Vec<bool> {
    let visited = visit_gradients(model, grads, true, |i, g| {
        sink(i, g);
        Ok::<(), std::convert::Infallible>(())
    });
    match visited {
        Ok(present) => present,
        Err(never) => match never {},
    }
}

/// Hand the gradients `grads` holds (one segment's, in a backward pass
/// driven in segments) to `sink(index, gradient)`, in traversal order,
/// skipping the parameters it holds none for; stops at the first error
/// `sink` returns.
pub fn present_gradients<M: Module, E>(
    model: &M,
    grads: &Gradients,
    sink: impl FnMut(usize, &[f32]) -> Result<(), E>,
) -> Result<(), E> {
    visit_gradients(model, grads, false, sink).map(|_| ())
}

/// Every trainable parameter's gradient in `grads` to `sink`, zeros for
/// those it lacks when `zeros_for_missing`; which had one.
fn visit_gradients<M: Module, E>(
    model: &M,
    grads: &Gradients,
    zeros_for_missing: bool,
    mut sink: impl FnMut(usize, &[f32]) -> Result<(), E>,
) -> Result<Vec<bool>, E> {
    struct Grads<'g, F, E> {
        place: Place,
        grads: &'g Gradients,
        sink: &'g mut F,
        zeros_for_missing: bool,
        index: usize,
        present: Vec<bool>,
        failed: Option<E>,
    }
    impl<F: FnMut(usize, &[f32]) -> Result<(), E>, E> ModuleVisitor for Grads<'_, F, E> {
        fn enter_module(&mut self, name: &str, container: &str) {
            self.place.enter(name, container);
        }
        fn exit_module(&mut self, _: &str, _: &str) {
            self.place.exit();
        }
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            let Ok((role, _)) = self.place.role() else { return };
            if !role.trainable() {
                return;
            }
            let index = self.index;
            self.index += 1;
            let value = param.val();
            let grad = value.grad(self.grads);
            self.present.push(grad.is_some());
            if self.failed.is_some() {
                return;
            }
            let handed = match grad {
                Some(g) => read_values(g, |values| (self.sink)(index, values)),
                None if self.zeros_for_missing => (self.sink)(index, &vec![0.0; value.dims().iter().product()]),
                None => Ok(()),
            };
            if let Err(e) = handed {
                self.failed = Some(e);
            }
        }
    }
    let mut visitor = Grads {
        place: Place::default(),
        grads,
        sink: &mut sink,
        zeros_for_missing,
        index: 0,
        present: Vec::new(),
        failed: None,
    };
    model.visit(&mut visitor);
    match visitor.failed {
        Some(e) => Err(e),
        None => Ok(visitor.present),
    }
}

/// Write `values` into the tensors of one kind, in traversal order.
fn write_kind<M: Module>(model: M, values: &[Vec<f32>], trainable: bool, device: &Device) -> M {
    struct Write<'v> {
        place: Place,
        values: &'v [Vec<f32>],
        trainable: bool,
        device: &'v Device,
        index: usize,
    }
    impl ModuleMapper for Write<'_> {
        fn enter_module(&mut self, name: &str, container: &str) {
            self.place.enter(name, container);
        }
        fn exit_module(&mut self, _: &str, _: &str) {
            self.place.exit();
        }
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
            let Ok((role, _)) = self.place.role() else { return param };
            if role.trainable() != self.trainable {
                return param;
            }
            let Some(values) = self.values.get(self.index) else { return param };
            self.index += 1;
            let (device, trainable) = (self.device, self.trainable);
            param.map(|old| {
                let tensor = Tensor::<D>::from_data(TensorData::new(copied(values), old.dims()), device);
                // Tracked for gradients where there is autodiff to track them.
                if trainable && device.is_autodiff() { tensor.require_grad() } else { tensor }
            })
        }
    }
    model.map(&mut Write { place: Place::default(), values, trainable, device, index: 0 })
}

/// A copy of `values`, made by the pool's threads for a large tensor:
/// this runs after the optimiser, when nothing else is left to the step.
fn copied(values: &[f32]) -> Vec<f32> {
    const CHUNK: usize = 1 << 16;
    if values.len() < 4 * CHUNK {
        return values.to_vec();
    }
    // SAFETY: the chunks of the new vector and of `values` pair up one to
    // one with equal lengths, and each is written whole from its source.
    #[allow(unsafe_code)]
    unsafe {
        crate::kernels::uninit::written_whole(values.len(), |out| {
            out.par_chunks_mut(CHUNK).zip(values.par_chunks(CHUNK)).for_each(|(out, values)| {
                out.write_copy_of_slice(values);
            });
        })
    }
}

/// `model` with its trainable parameters replaced by `values` (traversal
/// order), placed on `device` and tracked for gradients (on an autodiff
/// device). The state is left
/// as the forward passes made it.
pub fn with_values<M: Module>(model: M, values: &[Vec<f32>], device: &Device) -> M {
    write_kind(model, values, true, device)
}

/// `model` with its state (BatchNorm running statistics) replaced by
/// `state`, in traversal order.
pub fn with_state<M: Module>(model: M, state: &[Vec<f32>], device: &Device) -> M {
    // Fold pending per-thread updates into the running state first, or the
    // next forward pass would average them into what is written here.
    let _ = model.valid();
    write_kind(model, state, false, device)
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
    /// made to keep the activations' variance from layer to layer (He et
    /// al. 2015, with slope 0 for ReLU).
    HeUniformLeaky {
        /// Negative slope of the LeakyReLU that follows each layer.
        slope: f32,
    },
    /// Normal with mean 0 and standard deviation `std`, whatever the
    /// layer's size: the DCGAN initialisation (Radford et al. 2016, §4:
    /// "all weights were initialized from a zero-centered Normal
    /// distribution with standard deviation 0.02").
    Normal {
        /// Standard deviation.
        std: f32,
    },
}

/// Fan-in and fan-out of a weight. burn's `Linear` stores [in, out];
/// convolutions [out, in / groups, k...] and transposed ones [in, out /
/// groups, k...], where PyTorch's convention (`_calculate_fan_in_and_fan_out`)
/// takes dimension 1 times the kernel as the fan-in either way.
fn fans(module: &str, shape: &[usize]) -> (usize, usize) {
    match (module, shape) {
        ("Linear", [input, out]) => (*input, *out),
        (_, [d0, d1, kernel @ ..]) => {
            let k: usize = kernel.iter().product();
            (d1 * k, d0 * k)
        }
        (_, [n]) => (*n, *n),
        _ => (1, 1),
    }
}

/// Initial values of every tensor in `tensors` (trainable ones then state,
/// each in traversal order), from a seeded stream: the same `seed` gives
/// the same values on every machine and every build. Weights follow
/// `init`; biases and BatchNorm shifts and running means start at 0,
/// BatchNorm scales and running variances at 1. Only weights draw from the
/// stream, in traversal order.
pub fn initial(tensors: &[TensorInfo], init: Init, seed: u64) -> (Vec<Vec<f32>>, Vec<Vec<f32>>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut params, mut state) = (Vec::new(), Vec::new());
    for tensor in tensors {
        let len = tensor.len();
        let values = match tensor.role {
            Role::Weight => {
                let (fan_in, fan_out) = fans(&tensor.module, &tensor.shape);
                let limit = match init {
                    Init::GlorotUniform => (6.0 / (fan_in + fan_out) as f64).sqrt(),
                    Init::HeUniformLeaky { slope } => (6.0 / ((1.0 + f64::from(slope).powi(2)) * fan_in as f64)).sqrt(),
                    Init::Normal { std } => {
                        let values = (0..len).map(|_| std * rng.sample::<f32, _>(rand_distr::StandardNormal)).collect();
                        params_or_state(tensor, values, &mut params, &mut state);
                        continue;
                    }
                } as f32;
                (0..len).map(|_| rng.random_range(-limit..=limit)).collect()
            }
            Role::Bias | Role::Beta | Role::RunningMean => vec![0.0; len],
            Role::Gamma | Role::RunningVar => vec![1.0; len],
        };
        params_or_state(tensor, values, &mut params, &mut state);
    }
    (params, state)
}

fn params_or_state(tensor: &TensorInfo, values: Vec<f32>, params: &mut Vec<Vec<f32>>, state: &mut Vec<Vec<f32>>) {
    if tensor.role.trainable() { params.push(values) } else { state.push(values) }
}

/// Glorot-uniform weights and zero biases for a model of convolutions and
/// dense layers given only the shapes (rank 2: a burn `Linear` weight
/// [in, out]; rank 1: a bias; higher: a convolution kernel).
pub fn glorot_uniform(shapes: &[Vec<usize>], seed: u64) -> Vec<Vec<f32>> {
    let tensors: Vec<TensorInfo> = shapes
        .iter()
        .map(|shape| TensorInfo {
            path: String::new(),
            module: if shape.len() == 2 { "Linear" } else { "Conv" }.into(),
            role: if shape.len() == 1 { Role::Bias } else { Role::Weight },
            shape: shape.clone(),
        })
        .collect();
    initial(&tensors, Init::GlorotUniform, seed).0
}

/// xxh3 of every value's bytes: equal on all ranks if and only if (up to
/// hash collisions) the tensors are bit-identical.
pub fn checksum(values: &[Vec<f32>]) -> u64 {
    formats::checkpoint::values_checksum(values)
}
