//! `simgen cosmo` and `simgen pk` end to end: real files, real `mpirun`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use formats::cosmoflow::{CosmoSample, CosmoShape};
use formats::manifest::{MANIFEST_FILE, Manifest};
use formats::tfrecord::TfRecordFile;
use tfrecord::protobuf::feature::Kind;

const SIMGEN: &str = env!("CARGO_BIN_EXE_simgen");

/// 3 boxes of 16³ particles on a 16³ grid, split 2: 24 samples of 8³ x 4,
/// 5 per file (so files straddle boxes).
fn small(out: &Path) -> Vec<String> {
    ["cosmo", "--out", out.to_str().unwrap(), "--boxes", "3", "--grid", "16", "--particles", "16"]
        .into_iter()
        .chain(["--box-size", "128", "--samples-per-file", "5", "--seed", "11"])
        .map(str::to_owned)
        .collect()
}

fn run_mpi(ranks: usize, args: &[String]) -> std::process::Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    e2e::mpirun(ranks, &[], SIMGEN.as_ref(), &args)
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("cosmo_"))
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect();
    out.sort();
    out
}

#[test]
fn one_and_four_ranks_write_byte_identical_files_that_both_decoders_read() {
    let dir = tempfile::tempdir().unwrap();
    let (one, four) = (dir.path().join("one"), dir.path().join("four"));
    let out = run_mpi(1, &small(&one));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["samples"], 24);
    let out = run_mpi(4, &small(&four));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (a, b) = (files(&one), files(&four));
    assert_eq!(a.len(), 10, "5 files and their indexes");
    assert!(a == b, "1-rank and 4-rank outputs differ");

    // The manifest describes the files; every sample parses and every box
    // holds all its particles in every channel.
    let shape = CosmoShape { size: 8, channels: 4 };
    let manifest = Manifest::load(&one.join(MANIFEST_FILE)).unwrap();
    manifest.validate_against_root(&one).unwrap();
    assert_eq!(manifest.schema.cosmo_shape(), Some(shape));
    assert_eq!(manifest.files.iter().map(|f| f.samples).sum::<u64>(), 24);
    let mut samples = Vec::new();
    for (name, _) in a.iter().filter(|(n, _)| !n.ends_with(".idx")) {
        let file = TfRecordFile::open(&one.join(name)).unwrap();
        for record in file.records() {
            samples.push(CosmoSample::from_example_bytes(record.unwrap().data, shape).unwrap());
        }
    }
    assert_eq!(samples.len(), 24);
    for (b, boxed) in samples.chunks(8).enumerate() {
        for channel in 0..4 {
            let total: i64 =
                boxed.iter().flat_map(|s| s.x().iter().skip(channel).step_by(4)).map(|&v| i64::from(v)).sum();
            assert_eq!(total, 16 * 16 * 16, "box {b} channel {channel}");
        }
        // One parameter set per box, in [-1, 1].
        assert!(boxed.iter().all(|s| s.y() == boxed[0].y()));
        assert!(boxed[0].y().iter().all(|v| (-1.0..=1.0).contains(v)));
    }
    assert_ne!(samples[0].y(), samples[8].y());

    // The tfrecord crate reads our files as Examples with x bytes and 4 floats.
    let bytes = &a[0].1;
    let config = tfrecord::RecordReaderConfig { check_integrity: true };
    let examples: Vec<tfrecord::Example> =
        tfrecord::ExampleIter::from_reader(&bytes[..], config).collect::<Result<_, _>>().unwrap();
    assert_eq!(examples.len(), 5);
    let features = &examples[0].features.as_ref().unwrap().feature;
    match features["x"].kind.as_ref().unwrap() {
        Kind::BytesList(list) => assert_eq!(list.value[0].len(), shape.x_bytes()),
        other => panic!("x is {other:?}"),
    }
    match features["y"].kind.as_ref().unwrap() {
        Kind::FloatList(list) => assert_eq!(list.value, samples[0].y().to_vec()),
        other => panic!("y is {other:?}"),
    }
}

#[test]
fn zeldovich_gzip_and_preview_run_and_differ_from_2lpt() {
    let dir = tempfile::tempdir().unwrap();
    let (lpt1, lpt2) = (dir.path().join("lpt1"), dir.path().join("lpt2"));
    let mut args = small(&lpt1);
    args.extend(["--lpt", "1", "--gzip", "--preview"].map(str::to_owned));
    let out = Command::new(SIMGEN).args(&args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for z in ["0", "0.5", "1.5", "3"] {
        // Magnified to a readable size: the 16³ box's slice is drawn 25x.
        let (width, _) = decode_png(&lpt1.join(format!("preview_box0_z{z}.png")));
        assert!(width > 400, "preview {width} pixels wide");
    }
    let gz = lpt1.join("cosmo_000000.tfrecord.gz");
    assert!(TfRecordFile::open(&gz).unwrap().is_gzip());
    let mut args = small(&lpt2);
    args.extend(["--gzip"].map(str::to_owned));
    assert!(Command::new(SIMGEN).args(&args).output().unwrap().status.success());
    assert_ne!(std::fs::read(&gz).unwrap(), std::fs::read(lpt2.join("cosmo_000000.tfrecord.gz")).unwrap());
}

#[test]
fn bad_arguments_fail_with_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = small(dir.path());
    args.extend(["--split", "3"].map(str::to_owned));
    let out = Command::new(SIMGEN).args(&args).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--grid 16 is not divisible by --split 3"), "{err}");
    // CIC's fractional counts rounded into int16 samples lost mass (-5 % to
    // +6 % per volume) and exited 0: refused before anything is written.
    let out_dir = dir.path().join("cic");
    let mut args = small(&out_dir);
    args.extend(["--assignment", "cic"].map(str::to_owned));
    let out = Command::new(SIMGEN).args(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--assignment cic") && err.trim().lines().count() == 1, "{err}");
    assert!(!out_dir.join("manifest.json").exists());
    let out = Command::new(SIMGEN).args(["pk", "--input", "/nonexistent.tfrecord"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent.tfrecord"));
    // These used to exit 0 with a NaN theory column or empty output.
    for (flag, value) in [("--redshift", "-3"), ("--redshift", "2000"), ("--size", "0"), ("--size", "nan")] {
        let out = Command::new(SIMGEN).args(["pk", "--input", "/nonexistent.tfrecord", flag, value]).output().unwrap();
        assert!(!out.status.success(), "pk {flag} {value} succeeded");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(flag) && err.lines().count() == 1, "pk {flag} {value}: {err}");
    }
}

/// Sizes a hostile tester tried: each fails before anything is written,
/// with one line saying what is accepted, never a panic or an allocation
/// failure.
#[test]
fn sizes_out_of_range_fail_up_front_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    // Arguments simgen cannot accept exit 2 (as clap's usage errors do); a
    // size this machine cannot hold exits 1.
    for (flag, value, says, code) in [
        ("--grid", "0", "--grid must be at least 1", 2),
        ("--box-size", "1e-6", "simgen accepts 0.5 to 100 Mpc/h", 2),
        ("--box-size", "1e-20", "simgen accepts 0.5 to 100 Mpc/h", 2),
        ("--grid", "100000", "GiB available", 1),
        ("--particles", "100000", "--box-size", 2),
    ] {
        let out_dir = dir.path().join(format!("{flag}-{value}"));
        let mut args = small(&out_dir);
        let at = args.iter().position(|a| a == flag).map(|i| i + 1);
        match at {
            Some(i) => args[i] = value.to_owned(),
            None => args.extend([flag.to_owned(), value.to_owned()]),
        }
        let out = Command::new(SIMGEN).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{flag} {value}: {err}");
        assert_eq!(err.lines().count(), 1, "{flag} {value}: {err}");
        assert!(err.contains(says) && !err.contains("panicked"), "{flag} {value}: {err}");
        assert!(!out_dir.exists(), "{flag} {value} wrote {}", out_dir.display());
    }
}

#[test]
fn pk_prints_measured_against_linear_theory_and_plots_it() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("d");
    let args = ["cosmo", "--out", out_dir.to_str().unwrap(), "--boxes", "1", "--grid", "64", "--particles", "64"];
    let out = Command::new(SIMGEN).args(args).args(["--box-size", "256"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let plot = dir.path().join("pk.png");
    let input = out_dir.join("cosmo_000000.tfrecord");
    let out = Command::new(SIMGEN)
        .args(["pk", "--input", input.to_str().unwrap(), "--channel", "3", "--redshift", "3", "--size", "128"])
        .args(["--compensate", "ngp", "--plot", plot.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<Vec<f64>> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().map(|v| v.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 16);
    // At z = 3 the field is nearly linear: on large scales (k < 0.3 h/Mpc,
    // many modes) the measured spectrum is the theory's within sample variance.
    let ratios: Vec<f64> = rows.iter().filter(|r| r[0] > 0.1 && r[0] < 0.3).map(|r| r[3]).collect();
    let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
    assert!((0.8..1.25).contains(&mean), "mean P_measured / P_linear = {mean}: {text}");
    // The picture holds the three curves and the shot-noise line in their
    // colours (blue measured, red linear theory, orange halofit dashes,
    // grey dashes), at a readable size.
    let (width, rgb) = decode_png(&plot);
    assert_eq!(width, 800);
    let count = |colour: [u8; 3]| rgb.chunks_exact(3).filter(|p| *p == colour).count();
    let (blue, red, grey) = (count([30, 90, 200]), count([200, 40, 40]), count([120, 120, 120]));
    let orange = count([230, 140, 20]);
    assert!(
        blue > 500 && red > 500 && grey > 200 && orange > 300,
        "pixels: measured {blue}, theory {red}, shot noise {grey}, halofit {orange}"
    );
}

/// (width, RGB pixels) of a PNG.
fn decode_png(path: &Path) -> (u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut rgb = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut rgb).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    rgb.truncate(info.buffer_size());
    (info.width, rgb)
}

#[test]
fn quijote_priors_are_reported_and_read_back_by_pk() {
    use simgen::cosmo::generate::Priors;
    let dir = tempfile::tempdir().unwrap();
    let mut args = small(dir.path());
    args.extend(["--priors", "quijote"].map(str::to_owned));
    let out = Command::new(SIMGEN).args(&args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["config"]["priors"], "quijote");
    assert_eq!(report["config"]["parameters"][0], serde_json::json!({ "name": "omega_m", "low": 0.1, "high": 0.5 }));
    let input = dir.path().join("cosmo_000000.tfrecord");
    let out = Command::new(SIMGEN)
        .args(["pk", "--input", input.to_str().unwrap(), "--size", "64", "--priors", "quijote"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let header = String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or_default().to_string();
    // Box 0 of seed 11 (`small`), its parameters read back from y.
    let drawn = Priors::Quijote.draw(11, 0);
    let expected = format!("Ω_m {:.4} σ8 {:.4} n_s {:.4} h {:.4}", drawn[0], drawn[1], drawn[2], drawn[3]);
    assert!(header.contains(&expected), "{header} lacks {expected}");
}

/// The manifest lists what the run wrote: a directory holding anything is
/// refused; `--overwrite` removes what the old manifest listed (gzip files
/// after a plain run), leaves unlisted files alone and does not list them.
#[test]
fn a_manifest_lists_only_what_the_run_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cosmo");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("unrelated.txt"), b"mine").unwrap();
    let refused = run_mpi(1, &small(&out));
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("is not empty") && stderr.contains("unrelated.txt"), "{stderr}");
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1, "a refused run wrote something");

    std::fs::remove_file(out.join("unrelated.txt")).unwrap();
    let mut gzip = small(&out);
    gzip.push("--gzip".into());
    let first = run_mpi(2, &gzip);
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let again = run_mpi(2, &small(&out));
    assert!(String::from_utf8_lossy(&again.stderr).contains("--overwrite"));

    std::fs::write(out.join("notes.txt"), b"keep").unwrap();
    let mut overwrite = small(&out);
    overwrite.push("--overwrite".into());
    let second = run_mpi(2, &overwrite);
    assert!(second.status.success(), "{}", String::from_utf8_lossy(&second.stderr));
    let manifest = Manifest::load(&out.join(MANIFEST_FILE)).unwrap();
    manifest.validate_against_root(&out).unwrap();
    let listed: Vec<&str> = manifest.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(listed.len(), 10, "5 files and their indexes: {listed:?}");
    assert!(listed.iter().all(|p| p.starts_with("cosmo_") && !p.contains(".gz")), "{listed:?}");
    assert_eq!(manifest.files.iter().map(|f| f.samples).sum::<u64>(), 24);
    let mut on_disk: Vec<String> =
        std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    on_disk.sort();
    assert!(!on_disk.iter().any(|n| n.contains(".gz") || n.starts_with(".simgen")), "{on_disk:?}");
    assert!(on_disk.contains(&"notes.txt".to_owned()) && !listed.contains(&"notes.txt"));
}

/// Ranks writing into node-local directories (`--out dir/node{node}`)
/// give each directory a manifest of exactly the files written there.
#[test]
fn each_output_directory_gets_the_manifest_of_its_own_files() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("node{node}");
    let args: Vec<String> = small(&template);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = e2e::mpirun(4, &[("STAGEHAND_RANKS_PER_NODE", "2")], SIMGEN.as_ref(), &args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut listed = Vec::new();
    for node in 0..2 {
        let root = dir.path().join(format!("node{node}"));
        let manifest = Manifest::load(&root.join(MANIFEST_FILE)).unwrap();
        manifest.validate_against_root(&root).unwrap();
        let names: Vec<String> = manifest.files.iter().map(|f| f.path.clone()).collect();
        let present: Vec<String> = files(&root).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, present, "node {node}'s manifest and files differ");
        listed.extend(names);
    }
    listed.sort();
    assert_eq!(listed.len(), 10, "5 files and their indexes over both nodes: {listed:?}");
    listed.dedup();
    assert_eq!(listed.len(), 10, "a file listed on both nodes");
}

/// `--transfer` takes CAMB's table (the fixture of `camb_linear_power.rs`)
/// for the boxes and for `pk`'s theory curve; a table that stops short of
/// the box's modes, and one that cannot be read, are one line each.
#[test]
fn a_camb_transfer_table_drives_the_boxes_and_the_theory_curve() {
    let table = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/camb/transfer_z0.dat");
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, transfer: Option<&str>| {
        let out_dir = dir.path().join(name);
        let mut args = small(&out_dir);
        if let Some(t) = transfer {
            args.extend(["--transfer".to_owned(), t.to_owned()]);
        }
        let out = Command::new(SIMGEN).args(&args).output().unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (out_dir, report)
    };
    let (default_dir, report) = run("default", None);
    assert_eq!(report["config"]["transfer"], "eisenstein-hu");
    let (table_dir, report) = run("table", Some(table.to_str().unwrap()));
    assert_eq!(report["config"]["transfer"], format!("table {}", table.display()));
    let (smooth_dir, _) = run("smooth", Some("no-wiggle"));
    let (a, b, c) = (files(&default_dir), files(&table_dir), files(&smooth_dir));
    assert_eq!(a.len(), b.len());
    assert!(a[0].1 != b[0].1 && a[0].1 != c[0].1, "the transfer function changed no count");

    let theory = |transfer: &str| -> Vec<f64> {
        let input = table_dir.join("cosmo_000000.tfrecord");
        let out = Command::new(SIMGEN)
            .args(["pk", "--input", input.to_str().unwrap(), "--size", "64", "--transfer", transfer])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.split_whitespace().nth(2).unwrap().parse().unwrap())
            .collect()
    };
    let (from_table, from_fit) = (theory(table.to_str().unwrap()), theory("eisenstein-hu"));
    assert_eq!(from_table.len(), from_fit.len());
    assert!(from_table.iter().zip(&from_fit).any(|(t, f)| (t / f - 1.0).abs() > 1e-3), "{from_table:?}");

    // The fixture cut at k = 0.3 h/Mpc: 16 particles in 128 Mpc/h reach 0.68.
    let text = std::fs::read_to_string(&table).unwrap();
    let short: String = text
        .lines()
        .filter(|l| l.starts_with('#') || l.split_whitespace().next().unwrap().parse::<f64>().unwrap() <= 0.3)
        .map(|l| format!("{l}\n"))
        .collect();
    let short_path = dir.path().join("short.dat");
    std::fs::write(&short_path, short).unwrap();
    let mut args = small(&dir.path().join("short"));
    args.extend(["--transfer".to_owned(), short_path.to_str().unwrap().to_owned()]);
    let out = Command::new(SIMGEN).args(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ends at k = 0.29") && err.contains("transfer_kmax") && err.trim().lines().count() == 1,
        "{err}"
    );
    assert!(!dir.path().join("short").join("manifest.json").exists());

    let mut args = small(&dir.path().join("missing"));
    args.extend(["--transfer", "/nonexistent/camb_transfer.dat"].map(str::to_owned));
    let out = Command::new(SIMGEN).args(&args).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/camb_transfer.dat") && err.trim().lines().count() == 1, "{err}");
}

/// `--steps` moves the boxes on from 2LPT, the same on any number of ranks,
/// and says so in the report; `pk` prints halofit's spectrum beside the
/// linear one; a start that is no redshift is one line.
#[test]
fn particle_mesh_steps_change_the_boxes_identically_on_one_and_two_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let with_steps = |out: &Path| {
        let mut args = small(out);
        args.extend(["--steps", "4", "--start-redshift", "19"].map(str::to_owned));
        args
    };
    let (lpt, one, two) = (dir.path().join("lpt"), dir.path().join("one"), dir.path().join("two"));
    let out = run_mpi(1, &small(&lpt));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run_mpi(1, &with_steps(&one));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["config"]["steps"], 4);
    assert_eq!(report["config"]["start_redshift"], 19.0);
    let out = run_mpi(2, &with_steps(&two));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (a, b, c) = (files(&one), files(&two), files(&lpt));
    assert_eq!(a, b, "one and two ranks wrote different N-body files");
    assert!(a[0].1 != c[0].1, "the steps changed no count");

    let input = one.join("cosmo_000000.tfrecord");
    let out = Command::new(SIMGEN).args(["pk", "--input", input.to_str().unwrap(), "--size", "64"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("P_halofit"), "{text}");
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let v: Vec<f64> = line.split_whitespace().map(|x| x.parse().unwrap()).collect();
        assert!(v[5] >= 0.99 * v[2], "halofit below linear theory: {line}");
    }

    let mut bad = small(&dir.path().join("bad"));
    bad.extend(["--steps", "2", "--start-redshift", "-1"].map(str::to_owned));
    let out = Command::new(SIMGEN).args(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--start-redshift -1") && stderr.lines().count() == 1, "{stderr}");

    // Before z = 999 the growth factors do not exist: once these ran and
    // wrote NaN boxes with exit 0.
    for (flag, value) in [("--start-redshift", "5000"), ("--redshifts", "1500")] {
        let mut bad = small(&dir.path().join("bad"));
        bad.extend(["--steps", "2", flag, value].map(str::to_owned));
        let out = Command::new(SIMGEN).args(&bad).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(value) && stderr.contains("999") && stderr.lines().count() == 1, "{stderr}");
    }
}
