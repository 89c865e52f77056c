//! Analytic operation counts, the way the seeds report sustained Flop/s:
//! multiply-adds of the layers that hold the work (convolutions, dense
//! layers, LSTM cells), counted from their shapes, never timed or sampled.
//!
//! Conventions (Kurth et al., SC18, Sec. VI; Mathuriya et al., SC18,
//! Sec. VI-B count the same way): a multiply-add is 2 floating-point
//! operations, and a training step costs 3 forward passes (the forward
//! pass, the gradient of the inputs and the gradient of the weights, each
//! as much as the forward), so one training sample costs 6 × its forward
//! multiply-adds. Activations, pooling, normalisation and the loss are
//! left out: they are a fraction of a percent of these networks' work.

/// Multiply-adds of a convolution producing `outputs` output positions
/// (per channel) from `from` to `to` channels with a kernel of
/// `kernel_volume` taps (9 for 3×3, 27 for 3³). A transposed convolution
/// costs the same with `outputs` its input positions.
pub fn conv(outputs: usize, from: usize, to: usize, kernel_volume: usize) -> f64 {
    outputs as f64 * from as f64 * to as f64 * kernel_volume as f64
}

/// Multiply-adds of a dense layer from `from` to `to` values.
pub fn dense(from: usize, to: usize) -> f64 {
    from as f64 * to as f64
}

/// Multiply-adds of one step of an LSTM layer with `inputs` inputs and
/// `hidden` units: four gates, each a dense layer from the input and the
/// previous hidden state (Hochreiter & Schmidhuber 1997; PyTorch's `LSTM`).
pub fn lstm_step(inputs: usize, hidden: usize) -> f64 {
    4.0 * (dense(inputs, hidden) + dense(hidden, hidden))
}

/// Floating-point operations of training on work of `forward_macs`
/// forward multiply-adds: 2 per multiply-add, 3 passes.
pub fn training_flops(forward_macs: f64) -> f64 {
    6.0 * forward_macs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_convolutions_count_by_hand() {
        // 3³ from 4 to 32 channels over 128³ outputs, then 3³ from 32 to
        // 64 over 64³: outputs × taps × channels in × channels out.
        assert_eq!(conv(128 * 128 * 128, 4, 32, 27), 2_097_152.0 * 27.0 * 128.0);
        assert_eq!(conv(64 * 64 * 64, 32, 64, 27), 262_144.0 * 27.0 * 2048.0);
    }

    #[test]
    fn two_dense_layers_and_two_lstm_steps_count_by_hand() {
        assert_eq!(dense(8192, 128), 1_048_576.0);
        assert_eq!(dense(128, 64), 8192.0);
        // Gates i, f, g, o: 4 × (W_x: in × hidden + W_h: hidden × hidden).
        assert_eq!(lstm_step(10, 5), 4.0 * (50.0 + 25.0));
        assert_eq!(lstm_step(512, 512), 4.0 * 2.0 * 262_144.0);
    }

    #[test]
    fn a_training_sample_costs_six_forward_multiply_adds() {
        assert_eq!(training_flops(1.0e9), 6.0e9);
    }
}
