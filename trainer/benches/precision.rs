//! Mixed precision's speed: one training step of every model, ours in f32
//! and in bf16 (`--precision bf16`: convolutions and dense layers on bf16
//! operands, f32 sums) against its peer's in f32 and in its own mixed
//! precision on the same number of CPU threads, all four alternating in
//! the same run. The peers are those of the model benches: PyTorch under
//! `torch.autocast("cpu", dtype=torch.bfloat16)` for HEP-CNN (`small`
//! 64×64 and `paper` 224×224), CosmoGAN (`small` 64², `paper` 256²), the
//! `small` Tiramisu and DeepLabv3+ (16-channel climate fields, as the
//! `segmentation` bench), the `small` inverse FC-DenseNet (as the
//! `inverse` bench) and the `small` Etalumis network (bucketed batches of
//! traces `simgen traces` writes, as the `etalumis` bench); TensorFlow
//! under Keras' `mixed_bfloat16` policy for CosmoFlow (`mlperf-small`, as
//! the `step` bench). Then the bf16 matrix product alone at the shape of
//! a HEP-CNN `small` weight gradient (32 × 65536 × 288): on AMX tiles and
//! on `VDPBF16PS`, against burn's f32 matmul on the same values. Needs a
//! CPU with AVX512_BF16; elsewhere it says so and records nothing.
//!
//! ```sh
//! bash bench/setup-peers.sh
//! cargo build --release -p stagehand-simgen --bin simgen
//! cargo bench -p stagehand-trainer --bench precision
//! ```
//! `STAGEHAND_BENCH_STEPS` (10), `STAGEHAND_BENCH_REPS` (3: medians),
//! `STAGEHAND_BENCH_ONLY` (the rows whose label holds it, say
//! `hepcnn-paper`; the others stay as recorded).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use bench_rows::Row;
use e2e::median;
use serde_json::Value;
use trainer::kernels::Precision;
use trainer::models::segmentation::deeplab::DeeplabConfig;
use trainer::models::segmentation::tiramisu::TiramisuConfig;

#[path = "support/cosmoflow_steps.rs"]
mod cosmoflow_steps;
#[path = "support/cosmogan_steps.rs"]
mod cosmogan_steps;
#[path = "support/etalumis_steps.rs"]
mod etalumis_steps;
#[path = "support/hepcnn_steps.rs"]
mod hepcnn_steps;
#[path = "support/model_steps.rs"]
mod model_steps;
#[path = "support/segmentation_steps.rs"]
mod segmentation_steps;

/// Every row's label, as `STAGEHAND_BENCH_ONLY` matches them.
const ROWS: [&str; 10] = [
    "hepcnn-small",
    "hepcnn-paper",
    "cosmogan-small",
    "cosmogan-paper",
    "tiramisu-small",
    "deeplab-small",
    "inverse-small",
    "cosmoflow-mlperf-small",
    "etalumis-small",
    "bf16-gemm",
];

/// Median step seconds of ours in f32 and bf16, then the peer's in f32
/// and bf16, over `reps` rounds whose order rotates; and the medians of
/// each round's own ratios, our bf16 step over our f32 step and over the
/// peer's bf16 step (as `e2e::alternate_with_peer`: the host's slow
/// spells last about a round, and hit whichever program runs).
fn four_ways(
    label: &str,
    reps: usize,
    ours: impl Fn(Precision) -> f64,
    peer: impl Fn(Precision) -> Option<Value>,
) -> ([f64; 4], [f64; 2]) {
    let mut times: [Vec<f64>; 4] = Default::default();
    let peer_step = |p| peer(p).and_then(|v| v["step_seconds"].as_f64()).expect("the peer did not run (above)");
    for rep in 0..reps {
        let mut round: Vec<(usize, Box<dyn Fn() -> f64>)> = vec![
            (0, Box::new(|| ours(Precision::F32))),
            (1, Box::new(|| ours(Precision::Bf16))),
            (2, Box::new(|| peer_step(Precision::F32))),
            (3, Box::new(|| peer_step(Precision::Bf16))),
        ];
        round.rotate_left(rep % 4);
        for (slot, run) in round {
            times[slot].push(run());
        }
        println!(
            "{label} rep {rep}: ours f32/bf16, peer f32/bf16 {:?}",
            times.iter().map(|t| t[rep]).collect::<Vec<_>>()
        );
    }
    let ratios = |over: usize| times[1].iter().zip(&times[over]).map(|(bf16, other)| bf16 / other).collect();
    let own_and_peer = [median(ratios(0)), median(ratios(3))];
    (times.map(median), own_and_peer)
}

/// PyTorch's mixed precision, the peer of every model but CosmoFlow.
const AUTOCAST: &str = "PyTorch bf16 autocast";
/// TensorFlow's, CosmoFlow's peer.
const MIXED_BFLOAT16: &str = "TensorFlow `mixed_bfloat16`";

fn row(
    label: &str,
    what: &str,
    peer_name: &str,
    ([ours32, ours16, peer32, peer16], [own, peer]): ([f64; 4], [f64; 2]),
) -> Row {
    println!(
        "{label}: bf16 {ours16:.4} s, f32 {ours32:.4} s ({own:.2}×); {peer_name} {peer16:.4} s, f32 {peer32:.4} s"
    );
    Row::new(
        format!("{label}-bf16-step"),
        format!("{what} step in bf16: {ours16:.3} s, {own:.2}× our f32 step ({ours32:.3} s)"),
    )
    .peer(format!("{peer_name}: {peer16:.3} s (its f32: {peer32:.3} s)"))
    .ratio(format!("{peer:.2}×"))
    .target("≤ 0.6× our f32, ≤ 0.9× the peer's bf16", Some(own <= 0.6 && peer <= 0.9))
}

/// GFLOP/s of the bf16 GEMM on the best path and without tiles, and of
/// burn's f32 matmul, medians of `reps` rounds of 5 products each.
fn gemm_row(reps: usize) -> Row {
    use burn::tensor::{Device, Tensor, TensorData};
    use trainer::kernels::bf16_gemm;
    let [m, k, n] = [32usize, 65536, 288];
    let mut rng = e2e::SplitMix64::new(5);
    let mut draw = |len: usize| (0..len).map(|_| (rng.next() % 2000) as f32 / 1000.0 - 1.0).collect::<Vec<f32>>();
    let (a, b) = (draw(m * k), draw(k * n));
    let flops = 2.0 * (m * k * n) as f64;
    let rate = |product: &dyn Fn() -> usize| {
        let times: Vec<f64> = (0..reps)
            .map(|_| {
                let t = std::time::Instant::now();
                for _ in 0..5 {
                    assert_eq!(product(), m * n);
                }
                t.elapsed().as_secs_f64() / 5.0
            })
            .collect();
        flops / median(times) / 1e9
    };
    let device = Device::flex();
    let (ta, tb) = (
        Tensor::<2>::from_data(TensorData::new(a.clone(), [m, k]), &device),
        Tensor::<2>::from_data(TensorData::new(b.clone(), [k, n]), &device),
    );
    let best = rate(&|| bf16_gemm::gemm(&a, &b, [m, k, n]).len());
    let vector = rate(&|| bf16_gemm::gemm_without_tiles(&a, &b, [m, k, n]).len());
    let single = rate(&|| ta.clone().matmul(tb.clone()).into_data().num_elements());
    println!("bf16 GEMM {m}×{k}×{n}: best {best:.0} GFLOP/s, VDPBF16PS {vector:.0}, burn f32 {single:.0}");
    Row::new(
        "bf16-gemm",
        format!("bf16 GEMM {m} × {k} × {n} (all threads): {best:.0} GFLOP/s (AMX where the CPU has it); VDPBF16PS {vector:.0} GFLOP/s"),
    )
    .peer(format!("burn f32 matmul: {single:.0} GFLOP/s"))
    .ratio(format!("{:.2}× its rate", best / single))
    .target("—", None)
}

/// The bench on a pool thread, as the trainer binary runs.
fn main() {
    // Before the pool's threads start (they keep the arena they first get).
    trainer::allocator::keep_freed_memory();
    trainer::kernels::on_pool(bench);
}

fn bench() {
    if !Precision::Bf16.native() {
        println!("this CPU has no AVX512_BF16: --precision bf16 does not run here; no rows recorded");
        return;
    }
    let steps = bench_rows::count("STAGEHAND_BENCH_STEPS", 10);
    let reps = bench_rows::repetitions(3);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    // `STAGEHAND_BENCH_ONLY=hepcnn-paper` re-measures the rows whose
    // label holds it, the others left as recorded.
    let only = std::env::var("STAGEHAND_BENCH_ONLY").ok();
    if let Some(only) = &only {
        // Said before the rows take their quarter of an hour, not after.
        assert!(
            ROWS.iter().any(|label| label.contains(only.as_str())),
            "STAGEHAND_BENCH_ONLY={only} names none of the rows {ROWS:?}"
        );
    }
    let wanted = |label: &str| {
        assert!(ROWS.contains(&label), "row {label} missing from ROWS");
        only.as_deref().is_none_or(|o| label.contains(o))
    };
    let mut rows = Vec::new();
    for (config, batch, steps) in
        [(trainer::models::hepcnn::small(), 16, steps), (trainer::models::hepcnn::paper(), 4, steps.min(5))]
    {
        let label = format!("hepcnn-{}", config.name);
        if wanted(&label) {
            let times = four_ways(
                &label,
                reps,
                |p| hepcnn_steps::ours(&config, batch, steps, p).0,
                |p| hepcnn_steps::peer(&config, batch, steps, threads, p),
            );
            rows.push(row(&label, &format!("HEP-CNN `{}`, batch {batch}", config.name), AUTOCAST, times));
        }
    }
    for (config, batch, steps) in [("small", 16, steps), ("paper", 2, steps.min(5))] {
        let label = format!("cosmogan-{config}");
        if wanted(&label) {
            let times = four_ways(
                &label,
                reps,
                |p| cosmogan_steps::ours(config, batch, steps, p).0,
                |p| cosmogan_steps::peer(config, batch, steps, threads, p),
            );
            rows.push(row(&label, &format!("CosmoGAN `{config}`, batch {batch}"), AUTOCAST, times));
        }
    }
    let (h, w) = segmentation_steps::FIELD;
    let batch = 2;
    let tiramisu = |p| segmentation_steps::segmentation(&TiramisuConfig::small(), batch, steps, p).0;
    let deeplab = |p| segmentation_steps::segmentation(&DeeplabConfig::small(), batch, steps, p).0;
    type Ours<'a> = &'a dyn Fn(Precision) -> f64;
    for (label, model, name, ours) in [
        ("tiramisu-small", "tiramisu", "Tiramisu", &tiramisu as Ours),
        ("deeplab-small", "deeplabv3plus", "DeepLabv3+", &deeplab as Ours),
    ] {
        if !wanted(label) {
            continue;
        }
        let times = four_ways(label, reps, ours, |p| segmentation_steps::peer(model, batch, steps, threads, p));
        rows.push(row(label, &format!("{name} `small`, batch {batch}, {h} × {w} × 16"), AUTOCAST, times));
    }
    let label = "inverse-small";
    if wanted(label) {
        let (side, patterns, batch) = (segmentation_steps::PATTERN_SIDE, segmentation_steps::PATTERNS, 4);
        let times = four_ways(
            label,
            reps,
            |p| segmentation_steps::inverse(batch, steps, p).0,
            |p| segmentation_steps::peer("inverse", batch, steps, threads, p),
        );
        let what = format!("inverse FC-DenseNet `small`, batch {batch}, {patterns} × {side} × {side}");
        rows.push(row(label, &what, AUTOCAST, times));
    }
    let label = "cosmoflow-mlperf-small";
    if wanted(label) {
        let batch = 8;
        let times = four_ways(
            label,
            reps,
            |p| cosmoflow_steps::ours(batch, steps, p).0,
            |p| cosmoflow_steps::peer(batch, steps, threads, p),
        );
        rows.push(row(label, &format!("CosmoFlow `mlperf-small`, batch {batch}"), MIXED_BFLOAT16, times));
    }
    let label = "etalumis-small";
    if wanted(label) {
        let dir = tempfile::tempdir().unwrap();
        let (traces, batch) = (dir.path().join("traces"), 16);
        etalumis_steps::generate(&traces, 2000);
        let (model, batches) = etalumis_steps::model_and_batches(&traces, "small", batch);
        let exported = dir.path().join("batches");
        std::fs::create_dir_all(&exported).unwrap();
        etalumis_steps::export(&model, "small", &batches, &exported);
        let times = four_ways(
            label,
            reps,
            |p| etalumis_steps::ours(&model, &batches, steps, p).0,
            |p| etalumis_steps::peer(&exported, steps, threads, p),
        );
        rows.push(row(label, &format!("Etalumis `small`, bucketed batches of {batch} traces"), AUTOCAST, times));
    }
    if wanted("bf16-gemm") {
        rows.push(gemm_row(reps));
    }
    bench_rows::record(
        "precision",
        &format!("STAGEHAND_BENCH_REPS={reps} cargo bench -p stagehand-trainer --bench precision"),
        &rows,
    )
    .unwrap_or_else(|e| panic!("{e}"));
}
