//! Times burn's matrix products at the Etalumis `paper` dense layers'
//! shapes (rows × inputs × outputs): with burn's `Linear` weight W
//! [inputs, outputs], the forward product x·W and the two backward ones,
//! g·Wᵀ (input gradient) and xᵀ·g (weight gradient), each as burn's
//! autodiff computes them (on transposed views); then the input gradient
//! as `kernels::dense_input_grad`'s dot products, and whether the trainer
//! uses them at that shape; in microseconds (median of 9).
//! `RAYON_NUM_THREADS=1` for one thread.
#![allow(missing_docs, clippy::unwrap_used)]
use burn::tensor::{Device, Tensor, TensorData};
use std::time::Instant;
use trainer::kernels::dense_input_grad;

fn median(mut f: impl FnMut()) -> f64 {
    f();
    let mut t: Vec<f64> = (0..9)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[4]
}

fn values(rows: usize, cols: usize) -> Vec<f32> {
    (0..rows * cols).map(|i| ((i * 37) % 23) as f32 / 11.5 - 1.0).collect()
}

fn tensor(rows: usize, cols: usize, device: &Device) -> Tensor<2> {
    Tensor::from_data(TensorData::new(values(rows, cols), [rows, cols]), device)
}

fn main() {
    let device = Device::default();
    trainer::kernels::on_pool(|| {
        println!("# threads {}", rayon::current_num_threads());
        println!("rows inputs outputs | burn: forward input-grad weight-grad | dots input-grad (µs)");
        for (m, k, n) in [
            (2, 512, 2048),
            (6, 512, 2048),
            (16, 512, 2048),
            (16, 324, 2048),
            (247, 324, 2048),
            (16, 512, 271),
            (16, 2048, 256),
        ] {
            let x = tensor(m, k, &device);
            let w = tensor(k, n, &device);
            let g = tensor(m, n, &device);
            let forward = median(|| drop(x.clone().matmul(w.clone()).into_data()));
            let input_grad = median(|| drop(g.clone().matmul(w.clone().transpose()).into_data()));
            let weight_grad = median(|| drop(x.clone().transpose().matmul(g.clone()).into_data()));
            let (gv, wv) = (values(m, n), values(k, n));
            let dots = median(|| drop(dense_input_grad::input_grad(&gv, &wv, [m, k, n])));
            let used = if dense_input_grad::pays([m, k, n]) { "used" } else { "not used" };
            println!("{m} {k} {n} | {forward:.0} {input_grad:.0} {weight_grad:.0} | {dots:.0} ({used})");
        }
    });
}
