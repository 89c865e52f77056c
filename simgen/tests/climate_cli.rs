//! `simgen climate` end to end: real HDF5 files, real `mpirun`, the
//! loader's own reader.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use formats::climate::{self, ClimateShape, STATS_FILE};
use formats::manifest::{MANIFEST_FILE, Manifest};
use loader::dataset::Dataset;
use loader::deepcam::DeepcamDataset;

const SIMGEN: &str = env!("CARGO_BIN_EXE_simgen");
const SHAPE: ClimateShape = ClimateShape { height: 128, width: 256, channels: 16 };

fn small(out: &Path, samples: u64) -> Vec<String> {
    ["climate", "--height", "128", "--width", "256", "--cyclones", "1-3", "--rivers", "1-2", "--seed", "9"]
        .into_iter()
        .map(str::to_owned)
        .chain(["--val-fraction".into(), "0.25".into(), "--out".into(), out.to_str().unwrap().to_owned()])
        .chain(["--samples".into(), samples.to_string()])
        .collect()
}

fn sample_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = ["train", "validation"]
        .iter()
        .flat_map(|s| std::fs::read_dir(dir.join(s)).unwrap().map(|e| e.unwrap().path()))
        .collect();
    out.sort();
    out
}

#[test]
fn one_and_four_ranks_write_the_same_samples_and_statistics_the_loader_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (one, four) = (dir.path().join("one"), dir.path().join("four"));
    let mut report = serde_json::Value::Null;
    for (ranks, out) in [(1, &one), (4, &four)] {
        let args = small(out, 8);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let result = e2e::mpirun(ranks, &[], SIMGEN.as_ref(), &args);
        assert!(result.status.success(), "{ranks} ranks: {}", String::from_utf8_lossy(&result.stderr));
        report = serde_json::from_slice(&result.stdout).unwrap();
    }
    let (a, b) = (sample_files(&one), sample_files(&four));
    assert_eq!(a.len(), 8);
    assert_eq!(b.len(), 8);
    // HDF5 files carry no timestamps here, so equal samples are equal bytes.
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.file_name(), y.file_name());
        let (sx, sy) = (climate::read_sample(x, SHAPE).unwrap(), climate::read_sample(y, SHAPE).unwrap());
        assert!(sx == sy, "{} differs between 1 and 4 ranks", x.display());
    }
    assert_eq!(std::fs::read_dir(one.join("validation")).unwrap().count(), 2);
    // Each file names its channels and their units.
    let described = climate::read_channel_descriptions(&a[0]).unwrap();
    assert_eq!(described.len(), 16);
    assert_eq!(described[0], ("TMQ".to_owned(), "kg/m^2".to_owned()));
    assert_eq!(described[15].0, "ZBOT");
    // stats.h5 is the statistics of the training samples, recomputed here.
    let stats = climate::read_stats(&four.join(STATS_FILE)).unwrap();
    let train: Vec<PathBuf> = std::fs::read_dir(four.join("train")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(stats.count, train.len() as i64);
    let mut sum = [0f64; 16];
    let mut min = [f64::INFINITY; 16];
    for path in &train {
        let s = climate::read_sample(path, SHAPE).unwrap();
        for px in s.data.chunks(16) {
            for (k, &v) in px.iter().enumerate() {
                sum[k] += f64::from(v);
                min[k] = min[k].min(f64::from(v));
            }
        }
    }
    for k in 0..16 {
        let mean = sum[k] / (train.len() * SHAPE.pixels()) as f64;
        assert!((f64::from(stats.mean[k]) - mean).abs() <= 1e-5 * mean.abs().max(1e-9), "channel {k}");
        assert_eq!(f64::from(stats.minval[k]), min[k], "channel {k}");
    }
    // The report gives each channel's range over every sample (training
    // and validation), inside the bounds it names.
    let mut range = [(f64::INFINITY, f64::NEG_INFINITY); 16];
    for path in &b {
        for px in climate::read_sample(path, SHAPE).unwrap().data.chunks(16) {
            for (r, &v) in range.iter_mut().zip(px) {
                *r = (r.0.min(f64::from(v)), r.1.max(f64::from(v)));
            }
        }
    }
    for (k, channel) in report["channels"].as_array().unwrap().iter().enumerate() {
        let (min, max) = (channel["min"].as_f64().unwrap(), channel["max"].as_f64().unwrap());
        // The report writes f32 values, which JSON carries in f32's digits.
        assert_eq!((min as f32, max as f32), (range[k].0 as f32, range[k].1 as f32), "{channel}");
        let bounds = channel["bounds"].as_array().unwrap();
        assert!(bounds[0].as_f64().unwrap() <= min && max <= bounds[1].as_f64().unwrap(), "{channel}");
    }
    // The loader reads every file the manifest lists.
    let manifest = Manifest::load(&four.join(MANIFEST_FILE)).unwrap();
    assert_eq!(manifest.total_samples(), 8);
    let data = DeepcamDataset::open(&b, &four.join(STATS_FILE), SHAPE).unwrap();
    let (mut x, mut y) = (vec![0f32; data.x_len()], vec![0f32; data.y_len()]);
    for i in 0..data.len() {
        data.read_into(i, &mut x, &mut y).unwrap();
        assert!(y.iter().all(|&l| l == 0.0 || l == 1.0 || l == 2.0));
    }
}

#[test]
fn a_damaged_or_missing_stats_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(SIMGEN).args(small(dir.path(), 2)).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let files = sample_files(dir.path());
    let stats = dir.path().join(STATS_FILE);
    let bytes = std::fs::read(&stats).unwrap();
    std::fs::write(&stats, &bytes[..bytes.len() / 2]).unwrap();
    let e = DeepcamDataset::open(&files, &stats, SHAPE).err().expect("a cut stats.h5 opened").to_string();
    assert!(e.contains("stats.h5"), "{e}");
    std::fs::remove_file(&stats).unwrap();
    let e = DeepcamDataset::open(&files, &stats, SHAPE).err().expect("a missing stats.h5 opened").to_string();
    assert!(e.contains("stats.h5"), "{e}");
}

#[test]
fn bad_input_exits_2_with_one_line_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 6] = [
        (&["--height", "32"], "smallest cyclone"),
        (&["--width", "64"], "smallest cyclone"),
        (&["--samples", "0"], "--samples"),
        (&["--channels", "0"], "--channels"),
        (&["--channels", "17"], "the named set"),
        (&["--cyclones", "4-1"], "--cyclones"),
    ];
    for (i, (extra, expect)) in cases.iter().enumerate() {
        let out_dir = dir.path().join(format!("case{i}"));
        let mut args = vec!["climate", "--out", out_dir.to_str().unwrap()];
        if !extra.contains(&"--samples") {
            args.extend(["--samples", "1"]);
        }
        args.extend(extra.iter());
        let out = Command::new(SIMGEN).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(expect) && err.trim().lines().count() == 1, "{extra:?}: {err}");
        assert!(!out_dir.exists(), "{extra:?} created {}", out_dir.display());
    }
}

#[test]
fn an_output_directory_that_cannot_be_written_or_is_not_empty_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    // A regular file where the directory should be: fails for root too,
    // unlike a read-only mode.
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, b"x").unwrap();
    let out_dir = blocker.join("data");
    let out = Command::new(SIMGEN).args(small(&out_dir, 2)).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let first = err.lines().next().expect("nothing on stderr");
    assert!(
        first.starts_with("error: ") && first.contains("not-a-dir/data") && first.contains("Not a directory"),
        "{err}"
    );

    let full = dir.path().join("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("theirs.h5"), b"x").unwrap();
    let out = Command::new(SIMGEN).args(small(&full, 2)).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.lines().next().is_some_and(|l| l.contains("is not empty")), "{err}");
    assert_eq!(std::fs::read_dir(&full).unwrap().count(), 1, "a refused run wrote something");
}
