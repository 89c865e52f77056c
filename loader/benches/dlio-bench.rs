//! DLIO bench: DLIO 2.0.0's `cosmoflow_h100` (TFRecord, TensorFlow) and
//! `unet3d_h100` (`.npz`, PyTorch) workloads, each read by DLIO's own reader
//! of the workload's framework and by `stagehand.dlio.StagehandDataLoader`,
//! same files, same machine, same run. For each reader: the most simulated
//! accelerators (`mpirun -np`) it keeps at the workload's AU threshold
//! (MLPerf Storage's figure of merit), and DLIO's `train_au_mean_percentage`
//! at one accelerator (median of runs); both beside a loader that reads
//! nothing (the most DLIO's own loop reaches on the machine).
//!
//! ```sh
//! cargo bench -p stagehand-loader --bench dlio-bench
//! ```
//! DLIO runs in python/.venv (`python/setup-venv.sh`). The workloads keep
//! their record sizes with fewer files: `STAGEHAND_DLIO_COSMOFLOW_FILES`
//! (512 of 2.8 MB) and `STAGEHAND_DLIO_UNET3D_FILES` (48 of 146 MB), in
//! `STAGEHAND_BENCH_DIR` (default /tmp/stagehand-dlio-bench), generated
//! by DLIO once. `STAGEHAND_BENCH_RUNS` (3) runs at one accelerator;
//! `STAGEHAND_DLIO_MAX_ACCELERATORS` (8) ends the search;
//! `STAGEHAND_DLIO_WORKLOADS=unet3d_h100` runs one workload (its rows
//! replace that workload's only).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use bench_rows::Row;

/// One of DLIO's workloads as this bench runs it.
struct Workload {
    name: &'static str,
    format: &'static str,
    /// DLIO's reader for the workload's framework, and its name on the page.
    theirs: (&'static str, &'static str),
    /// `metric.au` of the workload's configuration.
    threshold: f64,
    files: usize,
    /// Overrides for a shorter run of the same files.
    extra: &'static [&'static str],
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Run DLIO on `ranks` ranks with `overrides`; its summary.json (None for
/// a generation-only run).
fn dlio(dir: &Path, ranks: usize, out: &str, overrides: &[String]) -> Option<serde_json::Value> {
    let root = repo();
    let venv_bin = root.join("python/.venv/bin");
    let path =
        format!("{}:{}:{}", root.join("deploy/dlio").display(), venv_bin.display(), std::env::var("PATH").unwrap());
    let output = dir.join("runs").join(out);
    let _ = std::fs::remove_dir_all(&output);
    let mut command = Command::new("mpirun");
    command
        .args(["--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader", "-np"])
        .arg(ranks.to_string())
        .args(["-x", "PATH", "-x", "TF_CPP_MIN_LOG_LEVEL", "-x", "PYTHONPATH"])
        .arg(venv_bin.join("dlio_benchmark"))
        .args(overrides)
        .arg(format!("++workload.output.folder={}", output.display()))
        .current_dir(dir)
        .env("PATH", path)
        .env("PYTHONPATH", dir)
        .env("TF_CPP_MIN_LOG_LEVEL", "2")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    let done = command.output().unwrap();
    assert!(
        done.status.success(),
        "dlio_benchmark {overrides:?} on {ranks} ranks failed:\n{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let summary = output.join("summary.json");
    summary.exists().then(|| serde_json::from_str(&std::fs::read_to_string(summary).unwrap()).unwrap())
}

fn au(summary: &serde_json::Value) -> f64 {
    summary["metric"]["train_au_mean_percentage"].as_f64().unwrap()
}

const OURS: [&str; 2] = [
    "++workload.reader.data_loader_classname=stagehand.dlio.StagehandDataLoader",
    "++workload.reader.data_loader_sampler=iterative",
];

/// DLIO's synthetic loader without its DALI import: the same stand-in
/// image every step and nothing read, so its AU is the most DLIO's loop
/// reaches on this machine whatever the reader.
const NO_READS: &str = r#"
from dlio_benchmark.common.enumerations import DataLoaderType
from dlio_benchmark.data_loader.base_data_loader import BaseDataLoader


class NoReadLoader(BaseDataLoader):
    def __init__(self, format_type, dataset_type, epoch):
        super().__init__(format_type, dataset_type, epoch, DataLoaderType.CUSTOM)

    def read(self):
        pass

    def next(self):
        super().next()
        batch = [self._args.resized_image] * self.batch_size
        for _ in range(self.num_samples // self._args.comm_size // self.batch_size):
            yield batch

    def finalize(self):
        pass
"#;

/// Which loader a run uses.
#[derive(Clone, Copy, PartialEq)]
enum Reader {
    Ours,
    Theirs,
    NoReads,
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let dir =
        PathBuf::from(std::env::var("STAGEHAND_BENCH_DIR").unwrap_or_else(|_| "/tmp/stagehand-dlio-bench".into()));
    let runs = bench_rows::count("STAGEHAND_BENCH_RUNS", 3);
    let most = bench_rows::count("STAGEHAND_DLIO_MAX_ACCELERATORS", 8);
    let setup = Command::new("bash").arg(repo().join("python/setup-venv.sh")).status().unwrap();
    assert!(setup.success(), "python/setup-venv.sh failed");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("no_read_loader.py"), NO_READS).unwrap();
    let workloads = [
        Workload {
            name: "cosmoflow_h100",
            format: "tfrecord",
            theirs: ("tensorflow", "DLIO's TensorFlow reader (tf.data)"),
            threshold: 70.0,
            files: bench_rows::count("STAGEHAND_DLIO_COSMOFLOW_FILES", 512),
            extra: &["++workload.train.epochs=2"],
        },
        Workload {
            name: "unet3d_h100",
            format: "npz",
            theirs: ("pytorch", "DLIO's PyTorch reader (DataLoader, np.load)"),
            threshold: 90.0,
            files: bench_rows::count("STAGEHAND_DLIO_UNET3D_FILES", 48),
            extra: &["++workload.train.epochs=2", "++workload.workflow.checkpoint=False"],
        },
    ];
    let only = std::env::var("STAGEHAND_DLIO_WORKLOADS").ok();
    let mut rows = Vec::new();
    for w in workloads.iter().filter(|w| only.as_deref().is_none_or(|o| o.split(',').any(|n| n == w.name))) {
        let data = dir.join(w.name);
        let base: Vec<String> = [
            format!("workload={}", w.name),
            format!("++workload.dataset.num_files_train={}", w.files),
            format!("++workload.dataset.data_folder={}", data.display()),
        ]
        .into_iter()
        .chain(w.extra.iter().map(|s| (*s).to_owned()))
        .collect();
        let present = std::fs::read_dir(data.join("train")).map_or(0, |d| {
            d.filter(|e| e.as_ref().is_ok_and(|e| e.path().extension().is_some_and(|x| x == w.format))).count()
        });
        if present != w.files {
            let _ = std::fs::remove_dir_all(&data);
            println!("generating {} files of {} with DLIO", w.files, w.name);
            let generate = [
                &base[..],
                &["++workload.workflow.generate_data=True".into(), "++workload.workflow.train=False".into()],
            ]
            .concat();
            dlio(&dir, 2, &format!("{}-gen", w.name), &generate);
        }
        let reader = |which: Reader, ranks: usize, label: &str| -> f64 {
            let mut overrides = base.clone();
            match which {
                Reader::Ours => overrides.extend(OURS.iter().map(|s| (*s).to_owned())),
                Reader::Theirs => overrides.push(format!("++workload.reader.data_loader={}", w.theirs.0)),
                Reader::NoReads => overrides.extend([
                    "++workload.reader.data_loader_classname=no_read_loader.NoReadLoader".to_owned(),
                    "++workload.reader.data_loader_sampler=iterative".to_owned(),
                ]),
            }
            let summary = dlio(&dir, ranks, &format!("{}-{label}-{ranks}", w.name), &overrides).unwrap();
            let value = au(&summary);
            println!("{} {label} on {ranks} accelerators: AU {value:.1} %", w.name);
            value
        };
        // AU at one accelerator: runs alternate readers, so both see the same machine.
        let (mut mine, mut theirs, mut ceiling) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs {
            mine.push(reader(Reader::Ours, 1, "ours"));
            theirs.push(reader(Reader::Theirs, 1, "theirs"));
            ceiling.push(reader(Reader::NoReads, 1, "no-reads"));
        }
        let (mine, theirs, ceiling) = (median(mine), median(theirs), median(ceiling));
        // Most accelerators at the threshold: double until a run falls below.
        let search = |which: Reader, label: &str, at_one: f64| -> usize {
            let mut kept = if at_one >= w.threshold { 1 } else { 0 };
            let mut ranks = 2;
            while kept == ranks / 2 && ranks <= most {
                if reader(which, ranks, label) >= w.threshold {
                    kept = ranks;
                }
                ranks *= 2;
            }
            kept
        };
        let (kept_mine, kept_theirs) = (search(Reader::Ours, "ours", mine), search(Reader::Theirs, "theirs", theirs));
        // What the machine allows whatever the reader: every simulated
        // accelerator is a rank on the same cores, so DLIO's loop alone
        // stops keeping up at some count.
        let kept_alone = search(Reader::NoReads, "no-reads", ceiling);
        let ratio = if kept_theirs == 0 { f64::INFINITY } else { kept_mine as f64 / kept_theirs as f64 };
        let ratio_text =
            if kept_theirs == 0 { "— (DLIO's reader keeps none)".to_owned() } else { format!("{ratio:.1}×") };
        // No verdict when DLIO's reader keeps none (the ratio is undefined)
        // or when DLIO's loop alone keeps fewer than twice what it keeps:
        // then no reader can show the target on this machine.
        let reachable = kept_alone >= 2 * kept_theirs.max(1);
        let (target, verdict) = if reachable {
            ("≥ 2×".to_owned(), (kept_theirs > 0 || kept_mine == 0).then_some(kept_mine > 0 && ratio >= 2.0))
        } else {
            (format!("≥ 2×: cannot show here (DLIO's loop alone keeps {kept_alone})"), None)
        };
        rows.push(
            Row::new(
                format!("{}-accelerators", w.name),
                format!(
                    "{} ({} files), accelerators kept at AU ≥ {:.0} %, `stagehand.dlio`: {kept_mine} (reading nothing, DLIO's loop alone: {kept_alone})",
                    w.name, w.files, w.threshold
                ),
            )
            .peer(format!("{}: {kept_theirs}", w.theirs.1))
            .ratio(ratio_text)
            .target(target, verdict),
        );
        rows.push(
            Row::new(
                format!("{}-au", w.name),
                format!(
                    "the same, AU at 1 accelerator, `stagehand.dlio`: {mine:.1} % (no reads at all, DLIO's loop alone: {ceiling:.1} %)"
                ),
            )
            .peer(format!("{}: {theirs:.1} %", w.theirs.1))
            .ratio(format!("{:.2}×", mine / theirs)),
        );
    }
    bench_rows::record("dlio-bench", "cargo bench -p stagehand-loader --bench dlio-bench", &rows)
        .unwrap_or_else(|e| panic!("{e}"));
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
