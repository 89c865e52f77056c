//! End-to-end checks that span Stagehand's crates (package `stagehand-e2e`,
//! folder `e2e`).
//!
//! The binaries in `src/bin` are real MPI programs; the tests in `tests/`
//! launch them with [`mpirun`] (Open MPI), so multi-rank behaviour is checked
//! for real, never mocked.

pub mod cli_docs;
pub mod skip;
mod stuck_mpirun;

pub use skip::skip;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

/// Held while this process has a file open for writing, and while it
/// starts a child. Tests in one binary run as threads of one process, and a
/// child inherits every descriptor open at the fork: started while another
/// test is writing an HDF5 file, it holds that file's exclusive HDF5 lock
/// for as long as it runs, and a concurrent test's trainers then fail to
/// open their own data ("unable to lock file, errno = 11").
static FORKING: Mutex<()> = Mutex::new(());

fn no_fork_now() -> MutexGuard<'static, ()> {
    FORKING.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Run `write`, which opens files for writing, while no child is being
/// started (see [`FORKING`]); every file it opens must be closed when it
/// returns.
pub fn writing<T>(write: impl FnOnce() -> T) -> T {
    let _no_fork = no_fork_now();
    write()
}

/// `command.output()`, started while no file of this process is open for
/// writing (see [`FORKING`]): how the tests start every long-lived child.
pub fn output(command: &mut Command) -> std::io::Result<Output> {
    let child = {
        let _no_writer = no_fork_now();
        command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?
    };
    child.wait_with_output()
}

/// `mpirun` options of every multi-rank test: more ranks than cores, no
/// pinning, and only the shared-memory transport. Everything runs on one
/// machine, so a shared-memory setup that fails must fail the test rather
/// than fall back to TCP loopback (which once hid a bad vader setting that
/// made staging 3x slower). `pml ob1` names the only messaging layer that
/// drives those transports: without it every rank's `MPI_Init` also tries
/// the `cm` layer and its PSM/PSM2 (Omni-Path) drivers, 0.29 s instead of
/// 0.11 s with 4 ranks on 2 cores (Debian's Open MPI 4.1).
pub const MPIRUN_ARGS: &[&str] =
    &["--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader", "--mca", "pml", "ob1"];

/// A command running `bench/peers/<script>` with the Python of the
/// benchmark peers' venv. The first call runs `bench/setup-peers.sh`
/// (idempotent); `None`, with a line on stderr, if that failed.
pub fn peer_command(script: &str) -> Option<Command> {
    static READY: OnceLock<bool> = OnceLock::new();
    let bench = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench");
    let ready = *READY
        .get_or_init(|| Command::new("bash").arg(bench.join("setup-peers.sh")).status().is_ok_and(|s| s.success()));
    if !ready {
        eprintln!("peer {script}: could not set up bench/.venv (bash bench/setup-peers.sh)");
        return None;
    }
    let mut command = Command::new(bench.join(".venv/bin/python"));
    command.arg(bench.join("peers").join(script));
    Some(command)
}

/// The last non-empty line of what a peer `command` ([`peer_command`])
/// printed, as JSON: its figures. `None`, with the peer's stderr on ours,
/// if it could not run or failed.
pub fn peer_json(mut command: Command) -> Option<serde_json::Value> {
    let out = command.output().ok()?;
    if !out.status.success() {
        eprintln!("peer failed: {}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    serde_json::from_slice(out.stdout.split(|&b| b == b'\n').rfind(|l| !l.is_empty())?).ok()
}

/// Run `program args` under `mpirun -np ranks --oversubscribe` with the
/// given extra environment, as root if need be. Panics only when `mpirun`
/// itself cannot be started (a broken test machine, not a test failure).
pub fn mpirun(ranks: usize, env: &[(&str, &str)], program: &Path, args: &[&str]) -> Output {
    let mut command = Command::new("mpirun");
    let session = own_mpi_session(&mut command);
    command
        .args(MPIRUN_ARGS)
        .args(["-np", &ranks.to_string()])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    for (key, value) in env {
        command.env(key, value).args(["-x", key]);
    }
    command.arg(program).args(args);
    let result = {
        let child = {
            let _no_writer = no_fork_now();
            command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()
        };
        child.and_then(stuck_mpirun::wait_with_output)
    };
    let _ = std::fs::remove_dir_all(&session);
    match result {
        Ok(output) => output,
        Err(e) => panic!("cannot start mpirun (run deploy/setup.sh): {e}"),
    }
}

/// Give one `mpirun` a session directory of its own (a new directory under
/// the system's temporary one), and return it. Open MPI otherwise puts
/// every job's under one `/tmp/ompi.HOST.UID`, and mpiruns started at once
/// (tests run in parallel) race to create and remove it: "A call to mkdir
/// was unable to create the desired directory ... File exists", then
/// `orte_init` fails and the job never starts.
pub fn own_mpi_session(command: &mut Command) -> std::path::PathBuf {
    static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("stagehand-mpi-{}-{n}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        panic!("creating an MPI session directory {}: {e}", dir.display());
    }
    command.env("OMPI_MCA_orte_tmpdir_base", &dir);
    dir
}

/// The median of `values` (the upper one of an even count); NaN when empty.
/// Benchmarks report medians of several runs on a noisy machine.
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// A step-time comparison with a peer (PyTorch, TensorFlow): `ours` and
/// `peer` run `reps` times, alternating which goes first so neither always
/// gets the warmer machine; prints each repetition and the medians, and the
/// ratios when the peer ran. `ours` returns (step seconds, forward seconds,
/// parameters); `peer` the peer's JSON line with `step_seconds` and
/// `forward_seconds`, or `None` when it could not run (the output says so).
/// Returns the medians, or `None` when the peer never ran.
///
/// The step ratio is the median of the repetitions' own ratios, each of
/// two runs back to back: a shared machine's speed swings for a minute or
/// more at a time, whichever program runs (`docs/benchmarks.md`,
/// Machines), and the ratio of the two medians would set runs of one in a
/// slow spell against runs of the other outside it.
pub fn alternate_with_peer(
    label: &str,
    reps: usize,
    mut ours: impl FnMut() -> (f64, f64, usize),
    mut peer: impl FnMut() -> Option<serde_json::Value>,
) -> Option<PeerComparison> {
    let (mut ours_step, mut ours_fwd, mut peer_step, mut peer_fwd) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut step_ratios, mut last_peer) = (Vec::new(), None);
    for rep in 0..reps {
        let (o, p) = if rep % 2 == 0 {
            let o = ours();
            (o, peer())
        } else {
            let p = peer();
            (ours(), p)
        };
        println!("{label} rep {rep}: ours step {:.4} s fwd {:.4} s ({} parameters); peer {p:?}", o.0, o.1, o.2);
        ours_step.push(o.0);
        ours_fwd.push(o.1);
        let seconds = |key: &str| p.as_ref().and_then(|p| p[key].as_f64());
        if let (Some(step), Some(forward)) = (seconds("step_seconds"), seconds("forward_seconds")) {
            peer_step.push(step);
            peer_fwd.push(forward);
            step_ratios.push(o.0 / step);
            last_peer = p;
        }
    }
    let (os, of) = (median(ours_step), median(ours_fwd));
    println!("{label} ours: step {os:.4} s, forward {of:.4} s");
    let Some(peer) = last_peer else {
        println!("{label}: the peer did not run (bash bench/setup-peers.sh); no ratio");
        return None;
    };
    let (ps, pf) = (median(peer_step), median(peer_fwd));
    println!("{label} peer: step {ps:.4} s, forward {pf:.4} s");
    let listed: Vec<String> = step_ratios.iter().map(|r| format!("{r:.2}")).collect();
    let step_ratio = median(step_ratios);
    println!(
        "{label} ratio ours/peer: step {step_ratio:.2}x (median of the repetitions' {}), forward {:.2}x",
        listed.join(", "),
        of / pf
    );
    Some(PeerComparison { ours_step: os, ours_forward: of, peer_step: ps, peer_forward: pf, step_ratio, peer })
}

/// Medians of [`alternate_with_peer`] and its ratio.
pub struct PeerComparison {
    /// Our training step, seconds.
    pub ours_step: f64,
    /// Our forward pass alone, seconds.
    pub ours_forward: f64,
    /// The peer's training step, seconds.
    pub peer_step: f64,
    /// The peer's forward pass, seconds.
    pub peer_forward: f64,
    /// The median over the repetitions of our step time over the peer's in
    /// the same repetition.
    pub step_ratio: f64,
    /// The peer's last JSON line (its version, parameter count).
    pub peer: serde_json::Value,
}

impl PeerComparison {
    /// Our step time over the peer's: the median of the repetitions'
    /// ratios ([`alternate_with_peer`]).
    pub fn step_ratio(&self) -> f64 {
        self.step_ratio
    }
}

/// Another workspace package's binary (`simgen` for the trainer's tests),
/// from the target directory the running test was built into. `cargo test
/// --workspace` (what `make test` runs) builds every binary; after a
/// narrower build the message says what to build.
pub fn workspace_binary(name: &str) -> std::path::PathBuf {
    // A test runs from target/<profile>/deps/<test>-<hash>.
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("finding the test executable: {e}"));
    let profile_dir = exe.parent().and_then(Path::parent);
    match profile_dir.map(|d| d.join(name)).filter(|p| p.is_file()) {
        Some(path) => path,
        None => {
            // `cargo bench` builds into target/release: the binary must come from the same profile.
            let release = profile_dir.and_then(Path::file_name).is_some_and(|d| d == "release");
            let flag = if release { " --release" } else { "" };
            panic!(
                "the `{name}` binary is not next to this test ({}): build it first with \
                 `cargo build{flag} -p stagehand-{name} --bin {name}` (cargo test --workspace and make bench build it)",
                exe.display()
            )
        }
    }
}

/// The JSON report rank 0 of a successful `trainer train` prints on
/// stdout; panics with both streams when the run failed.
pub fn trainer_report(output: &Output) -> serde_json::Value {
    assert!(
        output.status.success(),
        "trainer failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    match serde_json::from_slice(&output.stdout) {
        Ok(report) => report,
        Err(e) => panic!("rank 0 printed no JSON report on stdout: {e}"),
    }
}

/// The f32 values of `file` (`params.f32`, `model_state.f32`) in the latest
/// checkpoint under `checkpoint`.
pub fn checkpoint_floats(checkpoint: &Path, file: &str) -> Vec<f32> {
    let read = || -> std::io::Result<Vec<u8>> {
        let latest = std::fs::read_to_string(checkpoint.join("latest"))?;
        std::fs::read(checkpoint.join(latest.trim()).join(file))
    };
    match read() {
        Ok(bytes) => bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
        Err(e) => panic!("reading {file} of the latest checkpoint in {}: {e}", checkpoint.display()),
    }
}

/// Check that a training run resumed from its checkpoint continues bit for
/// bit: `run(checkpoint, epochs)` (a `trainer train` to `epochs` epochs in
/// total with `--checkpoint checkpoint`, its report) two epochs straight,
/// and one epoch then a rerun to two that resumes; the latest checkpoints'
/// `files` (`params.f32`, `model_state.f32`) must hold the same bits.
pub fn assert_resumes_bit_for_bit(dir: &Path, run: impl Fn(&Path, &str) -> serde_json::Value, files: &[&str]) {
    let (straight, resumed) = (dir.join("straight"), dir.join("resumed"));
    run(&straight, "2");
    run(&resumed, "1");
    assert_eq!(run(&resumed, "2")["resumed_from_epoch"], 1, "the rerun resumed from the first epoch's checkpoint");
    for file in files {
        assert_eq!(checkpoint_floats(&straight, file), checkpoint_floats(&resumed, file), "{file}");
    }
}

/// How far apart the parameters are that 2 ranks with batch `b` and 1
/// rank with batch `2b` train to in one epoch of `steps` steps:
/// `run(ranks, batch, checkpoint)` is that `trainer train` with
/// `--checkpoint checkpoint` (a directory under `dir`), returning its
/// report. The largest difference between the two runs' `params.f32`.
pub fn ranks_against_batch(
    dir: &Path,
    b: usize,
    steps: u64,
    run: impl Fn(usize, &str, &Path) -> serde_json::Value,
) -> f32 {
    let params: Vec<Vec<f32>> = [(2usize, b), (1, 2 * b)]
        .into_iter()
        .map(|(ranks, batch)| {
            let checkpoint = dir.join(format!("ranks-{ranks}"));
            let report = run(ranks, &batch.to_string(), &checkpoint);
            assert_eq!(report["epochs"][0]["steps"], steps, "{ranks} ranks × batch {batch}: {report}");
            checkpoint_floats(&checkpoint, "params.f32")
        })
        .collect();
    let difference = max_difference(&params[0], &params[1]);
    eprintln!("1 rank and 2 ranks differ by at most {difference}");
    difference
}

/// `program` run with `args` as a user runs it, without `mpirun` (a refusal
/// that comes before MPI starts): its exit code and stderr.
pub fn refusal(program: &Path, args: &[&str]) -> (Option<i32>, String) {
    match output(Command::new(program).args(args)) {
        Ok(out) => (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned()),
        Err(e) => panic!("running {}: {e}", program.display()),
    }
}

/// The largest absolute difference between two equally long vectors.
pub fn max_difference(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "vectors of different lengths");
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

/// A deterministic stream of pseudo-random numbers (SplitMix64), so a sample
/// can be regenerated from its id and checked bit for bit after a round trip.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A stream seeded by `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next value.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// The demo's synthetic CosmoFlow sample `id`: Poisson-like small counts and
/// targets in [-1, 1], a pure function of (seed, id).
pub fn demo_sample(seed: u64, id: u64, shape: formats::cosmoflow::CosmoShape) -> formats::cosmoflow::CosmoSample {
    let mut rng = SplitMix64::new(seed ^ id.wrapping_mul(0x2545_f491_4f6c_dd1d));
    let x = (0..shape.voxels()).map(|_| (rng.next() % 5 + rng.next() % 3) as i16).collect();
    let mut y = [0f32; 4];
    for v in &mut y {
        *v = (rng.next() % 2001) as f32 / 1000.0 - 1.0;
    }
    match formats::cosmoflow::CosmoSample::new(shape, x, y) {
        Ok(sample) => sample,
        Err(_) => unreachable!("x has shape.voxels() values by construction"),
    }
}

/// Print an error as one line (`error: cause: cause...`) and exit 1. For
/// failures before MPI is up; after, use `cluster::World::fail`.
pub fn exit_with(error: &anyhow::Error) -> ! {
    cluster::logging::print_error(format_args!("{}", cluster::logging::chain(error.as_ref())));
    std::process::exit(1)
}

/// `boxes` universes simulated by simgen (2LPT, 64³ particles, 64³ counts
/// over 256 Mpc/h, 4 redshifts) cut into 8 samples of 32³ × 4 each, one
/// universe per TFRecord file, with a manifest: CosmoFlow data for the
/// trainer's tests and benches. Returns the dataset directory under `dir`.
pub fn simulated_cosmo(dir: &Path, boxes: usize, seed: u64) -> std::path::PathBuf {
    simulate_cosmo(&dir.join(format!("cosmo-{boxes}-{seed}")), &cosmo_config(boxes, seed))
}

/// `files` opaque files of `bytes` bytes each and one sample each under
/// `src` (`{prefix}-0000.bin`, ...), with their manifest: the benches'
/// datasets. Kept when `src` already holds them whole.
pub fn opaque_dataset(
    src: &Path,
    (files, bytes): (usize, usize),
    seed: u64,
    prefix: &str,
) -> formats::manifest::Manifest {
    use formats::manifest::{self, MANIFEST_FILE, Manifest, ScanOptions, Schema};
    if let Ok(m) = Manifest::load(&src.join(MANIFEST_FILE))
        && m.files.len() == files
        && m.files.iter().all(|f| f.bytes == bytes as u64)
        && m.validate_against_root(src).is_ok()
    {
        return m;
    }
    let _ = std::fs::remove_dir_all(src);
    std::fs::create_dir_all(src).unwrap_or_else(|e| panic!("creating {}: {e}", src.display()));
    let mut rng = SplitMix64::new(seed);
    let block: Vec<u8> = (0..bytes).map(|_| rng.next() as u8).collect();
    for i in 0..files {
        let data: Vec<u8> = block.iter().map(|b| b ^ (i as u8)).collect();
        let path = src.join(format!("{prefix}-{i:04}.bin"));
        std::fs::write(&path, &data).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    }
    let mut m = manifest::scan(src, &ScanOptions::new(Schema::opaque()))
        .unwrap_or_else(|e| panic!("scanning {}: {e}", src.display()));
    m.files.iter_mut().for_each(|f| f.samples = 1);
    m.save(&src.join(MANIFEST_FILE)).unwrap_or_else(|e| panic!("saving the manifest of {}: {e}", src.display()));
    m
}

/// The configuration [`simulated_cosmo`] writes; tests change fields of it.
pub fn cosmo_config(boxes: usize, seed: u64) -> simgen::cosmo::generate::CosmoConfig {
    simgen::cosmo::generate::CosmoConfig {
        boxes,
        grid: 64,
        particles: 64,
        box_size: 256.0,
        split: 2,
        redshifts: vec![0.0, 0.5, 1.5, 3.0],
        lpt: 2,
        seed,
        assignment: simgen::cosmo::assign::Assignment::Ngp,
        samples_per_file: 8,
        gzip: false,
        transfer: simgen::cosmo::transfer::Transfer::EisensteinHu,
        priors: simgen::cosmo::generate::Priors::CosmoFlow,
        steps: 0,
        start_redshift: simgen::cosmo::generate::DEFAULT_START_REDSHIFT,
    }
}

/// Write the dataset `config` describes into `out`, with its manifest, the
/// files shared among the machine's cores. Returns `out`.
pub fn simulate_cosmo(out: &Path, config: &simgen::cosmo::generate::CosmoConfig) -> std::path::PathBuf {
    use formats::manifest::{MANIFEST_FILE, ScanOptions, Schema, scan};
    use simgen::cosmo::generate::write_files;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(config.files());
    let write_share = |first: usize| -> Result<(), String> {
        let share = (first..config.files()).step_by(threads.max(1));
        write_files(config, out, share, |_, _| Ok::<_, formats::tfrecord::TfRecordError>(()))
            .map_err(|e| e.to_string())?;
        Ok(())
    };
    let written = std::fs::create_dir_all(out).map_err(|e| e.to_string()).and_then(|()| {
        std::thread::scope(|scope| {
            let shares: Vec<_> = (0..threads).map(|t| scope.spawn(move || write_share(t))).collect();
            shares.into_iter().try_for_each(|share| share.join().map_err(|_| "a writer thread panicked".to_string())?)
        })?;
        let manifest = scan(out, &ScanOptions::new(Schema::cosmoflow(config.shape()))).map_err(|e| e.to_string())?;
        manifest.save(&out.join(MANIFEST_FILE)).map_err(|e| e.to_string())
    });
    if let Err(e) = written {
        panic!("simulating test data into {}: {e}", out.display());
    }
    out.to_path_buf()
}

/// The field size of [`simulated_climate`]: the smallest `simgen climate`
/// allows (a pixel no wider than the smallest cyclone) that the
/// segmentation networks take (multiples of 16).
pub const CLIMATE_TEST_FIELD: (usize, usize) = (112, 208);

/// `samples` climate samples of [`CLIMATE_TEST_FIELD`] × `channels` as
/// `simgen climate` lays them out (every 5th in `validation/`, the rest in
/// `train/`, `stats.h5` over the training samples, a manifest), for the
/// segmentation models' tests and benches. Returns the dataset directory
/// under `dir`.
pub fn simulated_climate(dir: &Path, samples: u64, channels: usize, seed: u64) -> std::path::PathBuf {
    use formats::climate::{ClimateShape, STATS_FILE, write_sample, write_stats};
    use formats::manifest::{MANIFEST_FILE, ScanOptions, Schema, scan};
    use simgen::climate::generate::{ClimateConfig, DEFAULT_CYCLONES, DEFAULT_RIVERS, is_validation, sample_path};
    // Every fifth sample validates.
    const VAL_FRACTION: f64 = 0.2;
    let (height, width) = CLIMATE_TEST_FIELD;
    let out = dir.join(format!("climate-{samples}-{channels}-{seed}"));
    let config = ClimateConfig { height, width, channels, cyclones: DEFAULT_CYCLONES, rivers: DEFAULT_RIVERS, seed };
    let shape = ClimateShape { height, width, channels };
    let written = writing(|| -> Result<(), String> {
        let mut stats = simgen::climate::stats::Accumulator::new(channels);
        for split in ["train", "validation"] {
            std::fs::create_dir_all(out.join(split)).map_err(|e| e.to_string())?;
        }
        for i in 0..samples {
            let sample = config.sample(i);
            let path = out.join(sample_path(i, VAL_FRACTION));
            write_sample(&path, shape, &sample.data, &sample.labels).map_err(|e| e.to_string())?;
            if !is_validation(i, VAL_FRACTION) {
                stats.add(&sample.data);
            }
        }
        let stats = stats.stats().ok_or("no training sample")?;
        write_stats(&out.join(STATS_FILE), &stats).map_err(|e| e.to_string())?;
        let manifest = scan(&out, &ScanOptions::new(Schema::deepcam(shape))).map_err(|e| e.to_string())?;
        manifest.save(&out.join(MANIFEST_FILE)).map_err(|e| e.to_string())
    });
    if let Err(e) = written {
        panic!("simulating climate test data into {}: {e}", out.display());
    }
    out
}

/// A tmpfs of `bytes` mounted at `dir` (root only), unmounted on drop: a
/// disk that fills up, for the tests of what happens then.
pub struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    /// Mount it; `None`, with the skip recorded ([`skip()`]) for `test`,
    /// where mounting is not allowed.
    pub fn mount(test: &str, dir: &Path, bytes: u64) -> Option<Tmpfs> {
        let mounted = std::fs::create_dir_all(dir).and_then(|()| {
            Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"]).arg(dir).output()
        });
        match mounted {
            Ok(out) if out.status.success() => Some(Tmpfs(dir.to_owned())),
            Ok(out) => {
                let why = String::from_utf8_lossy(&out.stderr).trim().to_owned();
                skip(test, &format!("cannot mount a tmpfs here: {why}"));
                None
            }
            Err(e) => {
                skip(test, &format!("cannot mount a tmpfs here: {e}"));
                None
            }
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_step_ratio_is_the_median_of_the_repetitions_ratios() {
        // Repetition 1 runs in a slow spell for both (1.5 s), repetition 2
        // catches ours in it and the peer out of it: the ratios are 1, 1
        // and 1.5, where the medians' quotient would be 1.5.
        let (mut ours, mut peer) = ([1.0, 1.5, 1.5].into_iter(), [1.0, 1.5, 1.0].into_iter());
        let comparison = alternate_with_peer(
            "test",
            3,
            || (ours.next().unwrap_or(f64::NAN), 0.1, 1),
            || peer.next().map(|s| serde_json::json!({ "step_seconds": s, "forward_seconds": 0.1 })),
        );
        let comparison = comparison.unwrap_or_else(|| panic!("the peer ran"));
        assert_eq!((comparison.ours_step, comparison.peer_step), (1.5, 1.0));
        assert_eq!(comparison.step_ratio(), 1.0);
    }
}
