//! The sizes of one 3-D convolution, shared by the kernels that compute it
//! with rows in the vector lanes (`direct_conv`) and with channels there
//! (`channel_conv`).

/// The sizes of one convolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvShape {
    /// Batch size.
    pub batch: usize,
    /// Input channels.
    pub c_in: usize,
    /// Output channels.
    pub c_out: usize,
    /// Volume edges [depth, height, width] (the same in and out).
    pub volume: [usize; 3],
    /// Kernel edge (odd).
    pub kernel: usize,
}

impl ConvShape {
    pub(crate) fn voxels(&self) -> usize {
        self.volume.iter().product()
    }

    pub(crate) fn padded(&self) -> [usize; 3] {
        self.volume.map(|e| e + self.kernel - 1)
    }

    /// Elements of the input [batch, c_in, D, H, W].
    pub fn input_len(&self) -> usize {
        self.batch * self.c_in * self.voxels()
    }

    /// Elements of the output [batch, c_out, D, H, W].
    pub fn output_len(&self) -> usize {
        self.batch * self.c_out * self.voxels()
    }

    /// Elements of the weight [c_out, c_in, k, k, k].
    pub fn weight_len(&self) -> usize {
        self.c_out * self.c_in * self.kernel.pow(3)
    }

    /// The same convolution with input and output channels swapped.
    pub(crate) fn transposed(&self) -> ConvShape {
        ConvShape { c_in: self.c_out, c_out: self.c_in, ..*self }
    }
}
