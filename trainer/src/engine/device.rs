//! `--device cpu|gpu[:N]`: where the model trains.
//!
//! `cpu` is burn's Flex backend with autodiff, where our own convolution
//! and pooling kernels run (see [`kernels`](crate::kernels)). `gpu` is
//! burn's Vulkan backend (wgpu compiling to SPIR-V), built only with the
//! cargo feature `gpu`; see `docs/trainer.md` for why Vulkan and how to run
//! on a GPU node.

use std::fmt;
use std::str::FromStr;

use burn::tensor::Device;

/// A `--device` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeviceChoice {
    /// The CPU (burn Flex).
    #[default]
    Cpu,
    /// GPU number N (burn Vulkan).
    Gpu(usize),
}

/// Why a device cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    /// Not `cpu`, `gpu` or `gpu:N`.
    #[error("--device '{0}': expected cpu, gpu or gpu:N")]
    Syntax(String),
    /// The binary has no GPU backend.
    #[error(
        "--device {0}: this trainer was built without GPU support (rebuild with `cargo build --release -p stagehand-trainer --features gpu` on a machine with a Vulkan driver)"
    )]
    NotBuilt(DeviceChoice),
    /// The GPU backend found no such GPU.
    #[error("--device {choice}: {reason}")]
    Unavailable {
        /// What was asked for.
        choice: DeviceChoice,
        /// What the GPU backend said.
        reason: String,
    },
}

impl fmt::Display for DeviceChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceChoice::Cpu => write!(f, "cpu"),
            DeviceChoice::Gpu(n) => write!(f, "gpu:{n}"),
        }
    }
}

impl FromStr for DeviceChoice {
    type Err = DeviceError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cpu" => Ok(DeviceChoice::Cpu),
            "gpu" => Ok(DeviceChoice::Gpu(0)),
            other => other
                .strip_prefix("gpu:")
                .and_then(|n| n.parse().ok())
                .map(DeviceChoice::Gpu)
                .ok_or_else(|| DeviceError::Syntax(other.to_owned())),
        }
    }
}

impl DeviceChoice {
    /// Check that the device exists, without starting any computation on
    /// it: what `trainer train` does before MPI starts.
    pub fn check(self) -> Result<(), DeviceError> {
        match self {
            DeviceChoice::Cpu => Ok(()),
            DeviceChoice::Gpu(n) => gpu::check(n).map_err(|reason| match reason {
                None => DeviceError::NotBuilt(self),
                Some(reason) => DeviceError::Unavailable { choice: self, reason },
            }),
        }
    }

    /// The burn device to train on (with autodiff).
    pub fn device(self) -> Result<Device, DeviceError> {
        self.check()?;
        match self {
            DeviceChoice::Cpu => Ok(Device::flex().autodiff()),
            DeviceChoice::Gpu(n) => gpu::device(n).ok_or(DeviceError::NotBuilt(self)),
        }
    }
}

#[cfg(not(feature = "gpu"))]
mod gpu {
    use burn::tensor::Device;

    /// `Err(None)`: no GPU backend in this build.
    pub(super) fn check(_: usize) -> Result<(), Option<String>> {
        Err(None)
    }

    pub(super) fn device(_: usize) -> Option<Device> {
        None
    }
}

#[cfg(feature = "gpu")]
mod gpu {
    use burn::tensor::Device;

    /// Whether Vulkan reports GPU `n` (wgpu's adapter list, the same one
    /// burn's Vulkan backend picks from).
    pub(super) fn check(n: usize) -> Result<(), Option<String>> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends: wgpu::Backends::VULKAN,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        });
        let adapters: Vec<_> = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::VULKAN))
            .into_iter()
            .filter(|a| {
                matches!(a.get_info().device_type, wgpu::DeviceType::DiscreteGpu | wgpu::DeviceType::IntegratedGpu)
            })
            .collect();
        match adapters.len() {
            0 => Err(Some("no GPU found (Vulkan lists none; is the driver's Vulkan ICD installed?)".into())),
            count if n >= count => Err(Some(format!("there are {count} GPUs (0 to {})", count - 1))),
            _ => Ok(()),
        }
    }

    pub(super) fn device(n: usize) -> Option<Device> {
        Some(Device::vulkan(burn::tensor::DeviceKind::DiscreteGpu(n)).autodiff())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_parse_and_print_back() {
        assert_eq!("cpu".parse(), Ok(DeviceChoice::Cpu));
        assert_eq!("gpu".parse(), Ok(DeviceChoice::Gpu(0)));
        assert_eq!("gpu:3".parse(), Ok(DeviceChoice::Gpu(3)));
        assert_eq!(DeviceChoice::Gpu(3).to_string(), "gpu:3");
        for bad in ["GPU", "gpu:", "gpu:x", "tpu", ""] {
            assert!(matches!(bad.parse::<DeviceChoice>(), Err(DeviceError::Syntax(_))), "{bad}");
        }
    }

    #[cfg(not(feature = "gpu"))]
    #[test]
    fn a_gpu_without_the_gpu_feature_is_refused_with_how_to_build_it() {
        let e = DeviceChoice::Gpu(0).check().unwrap_err().to_string();
        assert!(e.contains("--device gpu:0") && e.contains("--features gpu"), "{e}");
        assert!(DeviceChoice::Cpu.check().is_ok());
    }
}
