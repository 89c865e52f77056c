//! Cross-check of the training step against TensorFlow: the
//! reduced MLPerf CosmoFlow with the same initial parameters fed the same
//! batches in both frameworks. Reports the first step's loss, predictions
//! and per-tensor gradient error, then the loss of every step of K Adam
//! steps side by side (`bench/peers/cosmoflow_tf_crosscheck.py`, in the
//! venv of `bench/setup-peers.sh`). Not a timing: it answers "is our
//! forward, backward and optimiser the reference's?".
//!
//! ```sh
//! bash bench/setup-peers.sh
//! cargo bench -p stagehand-trainer --bench tf_crosscheck
//! ```
//! `STAGEHAND_CROSSCHECK_DIR` keeps the files exchanged (parameters,
//! batches, gradients) there. `STAGEHAND_CROSSCHECK_STEPS` (40), `STAGEHAND_CROSSCHECK_LEVELS` (4:
//! inputs are log(1 + counts 0..4), with many equal values as in real
//! volumes; 0: continuous values, so no max pool window has a tie).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;

use burn::tensor::{Device, Tensor, TensorData};
use trainer::models::cosmoflow::{CosmoflowConfig, mse};
use trainer::optim::{Optimizer, Rule};
use trainer::params;

const BATCH: usize = 8;

fn write_f32(path: &Path, values: &[f32]) {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for v in values {
        file.write_all(&v.to_le_bytes()).unwrap();
    }
}

fn main() {
    let steps: usize = std::env::var("STAGEHAND_CROSSCHECK_STEPS").ok().and_then(|v| v.parse().ok()).unwrap_or(40);
    let Some(mut tensorflow) = e2e::peer_command("cosmoflow_tf_crosscheck.py") else { std::process::exit(2) };
    let temp = tempfile::tempdir().unwrap();
    // STAGEHAND_CROSSCHECK_DIR keeps the exchanged files for a closer look.
    let dir = std::env::var_os("STAGEHAND_CROSSCHECK_DIR").map_or_else(|| temp.path().to_path_buf(), Into::into);
    std::fs::create_dir_all(&dir).unwrap();
    let mut config = CosmoflowConfig::mlperf_small();
    config.dropout = 0.0;
    let d = config.input;
    let sample = d * d * d * config.channels;
    let mut rng = e2e::SplitMix64::new(11);
    // Counts 0..levels as in real volumes (ties in every max pool), or with
    // levels = 0 continuous values (no ties).
    let levels: u64 = std::env::var("STAGEHAND_CROSSCHECK_LEVELS").ok().and_then(|v| v.parse().ok()).unwrap_or(4);
    let x: Vec<f32> = (0..steps * BATCH * sample)
        .map(|_| match levels {
            0 => (rng.next() % 1_000_000) as f32 / 250_000.0,
            n => (rng.next() % n) as f32,
        })
        .map(f32::ln_1p)
        .collect();
    let y: Vec<f32> = (0..steps * BATCH * 4).map(|_| (rng.next() % 2001) as f32 / 1000.0 - 1.0).collect();

    let device = Device::flex().autodiff();
    let model = config.init(&device).unwrap();
    let shapes = params::shapes(&model).unwrap();
    let initial = params::glorot_uniform(&shapes, 5);
    let mut values = initial.clone();
    let mut model = params::with_values(model, &values, &device);
    let mut optimizer = Optimizer::new(Rule::ADAM, None, &params::lengths(&shapes));
    let (mut losses, mut first_grads, mut first_pred) = (Vec::new(), Vec::new(), Vec::new());
    for step in 0..steps {
        let xs = x[step * BATCH * sample..(step + 1) * BATCH * sample].to_vec();
        let ys = y[step * BATCH * 4..(step + 1) * BATCH * 4].to_vec();
        let xt = Tensor::<5>::from_data(TensorData::new(xs, [BATCH, d, d, d, config.channels]), &device);
        let yt = Tensor::<2>::from_data(TensorData::new(ys, [BATCH, 4]), &device);
        let prediction = model.forward(xt, None);
        if step == 0 {
            first_pred = prediction.clone().into_data().try_into_vec_as::<f32>().unwrap();
        }
        let loss = mse(prediction, yt);
        let grads = loss.backward();
        losses.push(loss.into_data().try_into_vec_as::<f32>().unwrap()[0]);
        let mut gradients: Vec<Vec<f32>> = Vec::new();
        params::gradients(&model, &grads, |_, g| gradients.push(g.to_vec()));
        if step == 0 {
            first_grads = gradients.concat();
        }
        let refs: Vec<&[f32]> = gradients.iter().map(Vec::as_slice).collect();
        optimizer.step(1e-3, &mut values.iter_mut().map(Vec::as_mut_slice).collect::<Vec<_>>(), &refs);
        model = params::with_values(model, &values, &device);
    }
    let files: [(&str, &[f32]); 6] = [
        ("x.f32", &x),
        ("y.f32", &y),
        ("params.f32", &initial.concat()),
        ("grads.f32", &first_grads),
        ("pred.f32", &first_pred),
        ("losses.f32", &losses),
    ];
    for (name, values) in files {
        write_f32(&dir.join(name), values);
    }
    let status = tensorflow.arg(&dir).arg(steps.to_string()).status().unwrap();
    assert!(status.success(), "the TensorFlow side failed");
}
