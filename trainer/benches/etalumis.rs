//! The Etalumis network's training speed, on 2 ranks of the
//! `trainer` binary over traces `simgen traces` writes:
//!
//! 1. traces per second and the step-time split with type-sorted, bucketed
//!    minibatches (`--buckets 16`, Baydin et al.'s scheme) against random
//!    minibatches of shuffled traces (`--buckets 0`) on the same data,
//!    alternating in the same run: the gain the paper measured (up to 50×
//!    on its traces);
//! 2. the gradient values the bitvector exchange reduced against a dense
//!    allreduce of every tensor at every step, in bytes per step;
//! 3. one training step of the `small` network on one rank (loss, backward,
//!    gradients read out, Adam, parameters written back) over 6 bucketed
//!    batches of those traces, against the same network and algorithm in
//!    PyTorch on the same batches and threads
//!    (`bench/peers/torch_etalumis.py`, in the venv of
//!    `bench/setup-peers.sh`), alternating in the same run.
//!
//! ```sh
//! bash bench/setup-peers.sh
//! cargo bench -p stagehand-trainer --bench etalumis
//! ```
//! `STAGEHAND_BENCH_TRACES` (2000), `STAGEHAND_BENCH_BATCH` (16 per rank),
//! `STAGEHAND_BENCH_REPS` (3: the two batchings alternate, medians
//! reported).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Instant;

use bench_rows::Row;
use burn::tensor::Device;
use e2e::median;
use formats::manifest::{MANIFEST_FILE, Manifest};
use loader::pipeline::{Batch, Loader, LoaderConfig};
use loader::sampler::BucketedSampler;
use loader::traces::CHOICE_WIDTH;
use serde_json::{Value, json};
use trainer::engine::{ModelChoice, StepContext, TrainModel};
use trainer::models::etalumis::{EtalumisModel, small};
use trainer::optim::{Optimizer, Rule};
use trainer::params;

/// Batches the step comparison cycles through.
const STEP_BATCHES: usize = 6;

/// The `small` model checked against `data`, and `STEP_BATCHES` bucketed
/// batches of `batch` traces from it.
fn model_and_batches(data: &Path, batch: usize) -> (EtalumisModel, Vec<Batch>) {
    let options = trainer::models::etalumis::model::EtalumisOptions::default();
    let model = EtalumisModel::new(&ModelChoice::config("small"), &options).unwrap();
    let manifest = Manifest::load(&data.join(MANIFEST_FILE)).unwrap();
    model.check_data(data, &manifest).unwrap();
    let dataset = model.open_dataset(data, &manifest, None).unwrap();
    let sampler = BucketedSampler { len: dataset.len(), buckets: 16, world: 1, rank: 0, seed: 1 };
    let order: Vec<usize> = sampler.batches(0, batch).into_iter().take(STEP_BATCHES).flatten().collect();
    let config =
        LoaderConfig { batch, workers: 1, prefetch: 2, skip_corrupt: false, check_finite: false, drop_last: false };

    let batches = Loader::new(dataset, order, config).map(Result::unwrap).collect();
    (model, batches)
}

/// The batches as the peer reads them: `batches.json` (configuration,
/// layout, each trace's positions and choices) and standardised
/// observations in `obs-K.f32`.
fn export(model: &EtalumisModel, batches: &[Batch], dir: &Path) {
    let data = model.layout();
    let (mean, std) =
        (data["observation_mean"].as_f64().unwrap() as f32, data["observation_std"].as_f64().unwrap() as f32);
    let mut listed = Vec::new();
    for (k, b) in batches.iter().enumerate() {
        let bytes: Vec<u8> = b.x.iter().flat_map(|v| ((v - mean) / std).to_le_bytes()).collect();
        std::fs::write(dir.join(format!("obs-{k}.f32")), bytes).unwrap();
        let traces: Vec<Value> = (0..b.len())
            .map(|i| {
                let choices: Vec<&[f32]> = b.target(i).chunks_exact(CHOICE_WIDTH).collect();
                json!({
                    "positions": choices.iter().map(|c| c[0] as usize).collect::<Vec<_>>(),
                    "choices": choices.iter().map(|c| [c[1], c[2], c[3]]).collect::<Vec<_>>(),
                })
            })
            .collect();
        listed.push(json!({ "traces": traces }));
    }
    let spec = json!({
        "config": small(),
        "layout": data["layout"]["addresses"],
        "observation": data["observation"],
        "batches": listed,
    });
    std::fs::write(dir.join("batches.json"), serde_json::to_vec(&spec).unwrap()).unwrap();
}

/// (median step seconds, median forward seconds, parameters) of our step.
fn ours(model: &EtalumisModel, batches: &[Batch], steps: usize) -> (f64, f64, usize) {
    // As `trainer train` runs its steps on one rank here ([`trainer::kernels::wait`]).
    trainer::kernels::wait::busy(trainer::kernels::wait::WaitPolicy::auto_here(1), || ours_in(model, batches, steps))
}

fn ours_in(model: &EtalumisModel, batches: &[Batch], steps: usize) -> (f64, f64, usize) {
    let device = Device::flex().autodiff();
    let net = model.build(&device).unwrap();
    let tensors = params::inventory(&net).unwrap();
    let (mut values, _) = params::initial(&tensors, model.weight_init(), 1);
    let mut net = params::with_values(net, &values, &device);
    let lengths: Vec<usize> = values.iter().map(Vec::len).collect();
    let mut optimizer = Optimizer::new(Rule::ADAM, None, &lengths);
    let mut grads: Vec<Vec<f32>> = lengths.iter().map(|&n| vec![0.0; n]).collect();
    let (mut step_times, mut forward_times) = (Vec::new(), Vec::new());
    for k in 0..steps + 2 {
        let t = Instant::now();
        let context = StepContext { seed: 1, epoch: 0, step: k as u64, rank: 0 };
        let loss = model.loss(&net, &batches[k % batches.len()], &context, &device).unwrap();
        let forward = t.elapsed().as_secs_f64();
        let g = loss.backward();
        let present = params::gradients(&net, &g, |i, v| grads[i].copy_from_slice(v));
        let views: Vec<&[f32]> = grads.iter().map(Vec::as_slice).collect();
        let mut slices: Vec<&mut [f32]> = values.iter_mut().map(Vec::as_mut_slice).collect();
        optimizer.step_where(1e-3, &mut slices, &views, &present);
        net = params::with_values(net, &values, &device);
        if k >= 2 {
            step_times.push(t.elapsed().as_secs_f64());
            forward_times.push(forward);
        }
    }
    (median(step_times), median(forward_times), lengths.iter().sum())
}

fn peer(dir: &Path, steps: usize, threads: usize) -> Option<Value> {
    let mut command = e2e::peer_command("torch_etalumis.py")?;
    command.args([
        "--batches",
        dir.to_str().unwrap(),
        "--steps",
        &steps.to_string(),
        "--threads",
        &threads.to_string(),
    ]);
    let output = e2e::output(&mut command).ok()?;
    if !output.status.success() {
        eprintln!("torch_etalumis.py failed: {}", String::from_utf8_lossy(&output.stderr));
        return None;
    }
    serde_json::from_slice(&output.stdout).ok()
}

/// `simgen traces` on 2 ranks into `out`.
fn generate(out: &Path, traces: usize) {
    let (traces, out) = (traces.to_string(), out.to_str().unwrap().to_owned());
    let args = ["traces", "--out", &out, "--traces", &traces, "--files", "2", "--seed", "1"];
    let result = e2e::mpirun(2, &[], &e2e::workspace_binary("simgen"), &args);
    assert!(result.status.success(), "simgen: {}", String::from_utf8_lossy(&result.stderr));
}

/// One epoch on 2 ranks; its report. A whole epoch, because the two
/// batchings differ in which batches are expensive (the sorted order puts
/// the long, rare trace types together at its end), not in what an epoch
/// holds.
fn train(data: &Path, buckets: usize, batch: usize) -> Value {
    let (buckets, batch) = (buckets.to_string(), batch.to_string());
    let data = data.to_str().unwrap();
    let mut args = vec!["train", "--model", "etalumis", "--config", "small", "--data", data, "--val-fraction", "0"];
    args.extend(["--epochs", "1", "--batch", &batch, "--buckets", &buckets, "--optimizer", "adam", "--workers", "1"]);
    e2e::trainer_report(&e2e::mpirun(2, &[], Path::new(env!("CARGO_BIN_EXE_trainer")), &args))
}

/// The bench on a pool thread, as the trainer binary runs.
fn main() {
    // Before the pool's threads start (they keep the arena they first get).
    cluster::allocator::keep_freed_memory();
    trainer::kernels::on_pool(|| {
        // The kernels `trainer train` would run here, measured as it does.
        println!("# kernels: {}", trainer::kernels::calibrate::calibrate().line());
        bench()
    });
}

fn bench() {
    let traces = bench_rows::count("STAGEHAND_BENCH_TRACES", 2000);
    let batch = bench_rows::count("STAGEHAND_BENCH_BATCH", 16);
    let reps = bench_rows::repetitions(3);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("traces");
    generate(&data, traces);
    println!("# etalumis small, 2 ranks, one epoch of {traces} traces, batch {batch} per rank, {reps} runs each");
    let (mut sorted, mut random) = (Vec::new(), Vec::new());
    let mut last = None;
    for _ in 0..reps {
        let report = train(&data, 16, batch);
        sorted.push(report["samples_per_sec"].as_f64().unwrap());
        last = Some(report);
        random.push(train(&data, 0, batch)["samples_per_sec"].as_f64().unwrap());
    }
    let (sorted, random) = (median(sorted), median(random));
    println!("traces/s: type-sorted bucketed {sorted:.2}, random {random:.2}, gain {:.2}x", sorted / random);
    let report = last.unwrap();
    let f = &report["fractions"];
    println!(
        "step split (sorted): data wait {:.2}% compute {:.1}% comm {:.2}% optimizer {:.1}%",
        100.0 * f[0].as_f64().unwrap(),
        100.0 * f[1].as_f64().unwrap(),
        100.0 * f[2].as_f64().unwrap(),
        100.0 * f[3].as_f64().unwrap(),
    );
    let parameters = report["parameters"].as_f64().unwrap();
    let share = report["reduced_gradient_share"].as_f64().unwrap();
    let addresses = &report["model"]["details"]["addresses"];
    println!(
        "gradient exchange: {addresses} address layer sets, {parameters} parameters; bitvector exchange reduced {:.1}% \
         of a dense allreduce: {:.2} MB against {:.2} MB per step",
        100.0 * share,
        share * parameters * 4.0 / 1e6,
        parameters * 4.0 / 1e6,
    );

    let steps = bench_rows::count("STAGEHAND_BENCH_STEPS", 10);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (model, batches) = model_and_batches(&data, batch);
    let exported = dir.path().join("batches");
    std::fs::create_dir_all(&exported).unwrap();
    export(&model, &batches, &exported);
    println!("# etalumis small step, one rank, {STEP_BATCHES} bucketed batches of {batch}, {threads} threads");
    let comparison = e2e::alternate_with_peer(
        "etalumis",
        reps,
        || ours(&model, &batches, steps),
        || peer(&exported, steps, threads),
    )
    .unwrap_or_else(|| panic!("the PyTorch peer did not run (above): no rows recorded"));
    let ratio = comparison.step_ratio();
    let rows = [
        Row::new(
            "etalumis-step",
            format!("Etalumis `small` step, 1 rank, bucketed batches of {batch} traces: {:.3} s", comparison.ours_step),
        )
        .peer(format!(
            "PyTorch {}, same network and algorithm: {:.3} s",
            comparison.peer["torch"].as_str().unwrap(),
            comparison.peer_step
        ))
        .ratio(format!("{ratio:.2}×"))
        .target("≤ 1.5×", Some(ratio <= 1.5)),
        Row::new("sorted-vs-random", format!("2 ranks, type-sorted bucketed minibatches: {sorted:.1} traces/s"))
            .peer(format!("random minibatches: {random:.1}"))
            .ratio(format!("{:.2}×", sorted / random))
            .target("(the paper: up to 50×, mostly I/O)", None),
        Row::new(
            "bitvector-exchange",
            format!("bitvector gradient exchange: {:.2} MB per step", share * parameters * 4.0 / 1e6),
        )
        .peer(format!("dense allreduce of every tensor: {:.2} MB", parameters * 4.0 / 1e6))
        .ratio(format!("{:.0} %", 100.0 * share)),
    ];
    bench_rows::record(
        "etalumis",
        &format!("STAGEHAND_BENCH_REPS={reps} cargo bench -p stagehand-trainer --bench etalumis"),
        &rows,
    )
    .unwrap_or_else(|e| panic!("{e}"));
}
