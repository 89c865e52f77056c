//! `simgen multislice` end to end: real LMDB stores, real `mpirun`, the
//! loader's own decoder.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use formats::lmdb::SampleStore;
use formats::manifest::{MANIFEST_FILE, Manifest};
use loader::dataset::Dataset;
use loader::lmdb::ScatteringDataset;

const SIMGEN: &str = env!("CARGO_BIN_EXE_simgen");

/// Si [001] on a 64-pixel grid of one cell (0.085 Å), 20 Å thick in 2 Å
/// slices, a 2 × 2 scan, two phonon configurations, a random tilt: every
/// per-sample draw is exercised.
fn small(out: &Path, samples: u64) -> Vec<String> {
    let fixed = ["multislice", "--grid", "64", "--sampling", "0.085A", "--thickness", "16A..24A", "--scan", "2x2"];
    fixed
        .into_iter()
        .map(str::to_owned)
        .chain(["--phonons", "2", "--tilt-mrad", "3", "--seed", "5", "--out"].map(str::to_owned))
        .chain([out.to_str().unwrap().to_owned(), "--samples".into(), samples.to_string()])
        .collect()
}

/// Every sample of every store under `dir`, by key.
fn samples(dir: &Path) -> BTreeMap<u64, Vec<u8>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "lmdb") {
            let store = SampleStore::open(&path).unwrap();
            let reader = store.reader().unwrap();
            for id in reader.ids().unwrap() {
                assert!(out.insert(id, reader.get(id).unwrap().unwrap().to_vec()).is_none(), "sample {id} twice");
            }
        }
    }
    out
}

#[test]
fn one_and_four_ranks_store_the_same_sample_bytes_and_the_loader_decodes_them() {
    let dir = tempfile::tempdir().unwrap();
    let (one, four) = (dir.path().join("one"), dir.path().join("four"));
    let run = |ranks: usize, out: &Path| {
        let args = small(out, 5);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let result = e2e::mpirun(ranks, &[], SIMGEN.as_ref(), &args);
        assert!(result.status.success(), "{ranks} ranks: {}", String::from_utf8_lossy(&result.stderr));
    };
    run(1, &one);
    run(4, &four);
    let (a, b) = (samples(&one), samples(&four));
    assert_eq!(a.keys().copied().collect::<Vec<_>>(), vec![0, 1, 2, 3, 4]);
    assert!(a == b, "the same seed gave different sample bytes on 1 and 4 ranks");
    // The manifest counts every sample once, in its stores' data files.
    let manifest = Manifest::load(&four.join(MANIFEST_FILE)).unwrap();
    assert_eq!(manifest.total_samples(), 5);
    assert!(manifest.files.iter().all(|f| f.path.ends_with("/data.mdb")), "{:?}", manifest.files);
    // The loader's decoder reads every sample at the run's shape, and the
    // patterns are real diffraction: each sums to about one electron.
    let mut read = 0;
    for entry in &manifest.files {
        let store = four.join(&entry.path);
        let data = ScatteringDataset::open(store.parent().unwrap()).unwrap();
        let shape = data.shape();
        assert_eq!((shape.positions, shape.height, shape.width), (4, 64, 64));
        let (mut x, mut y) = (vec![0f32; data.x_len()], vec![0f32; data.y_len()]);
        for i in 0..data.len() {
            data.read_into(i, &mut x, &mut y).unwrap();
            for pattern in x.chunks(64 * 64) {
                let total: f32 = pattern.iter().sum();
                assert!(total > 0.9 && total <= 1.0001, "a pattern holds {total} electrons");
            }
            read += 1;
        }
    }
    assert_eq!(read, 5);
}

#[test]
fn half_precision_and_zstd_store_smaller_samples_that_decode_close_to_f32() {
    let dir = tempfile::tempdir().unwrap();
    let (full, small_out) = (dir.path().join("f32"), dir.path().join("f16"));
    let mut args = small(&full, 1);
    assert!(Command::new(SIMGEN).args(&args).output().unwrap().status.success());
    args = small(&small_out, 1);
    args.extend(["--dtype", "f16", "--zstd"].map(str::to_owned));
    let out = Command::new(SIMGEN).args(&args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (a, b) = (samples(&full), samples(&small_out));
    assert!(b[&0].len() * 2 < a[&0].len(), "f16 + zstd {} bytes vs f32 {}", b[&0].len(), a[&0].len());
    let decode = |bytes: &[u8]| {
        let (mut c, mut p, mut s) = (vec![0f32; 4 * 64 * 64], vec![0f32; 64 * 64], Vec::new());
        formats::scattering::decode_into(bytes, &mut c, &mut p, &mut s).unwrap();
        c
    };
    let (x, y) = (decode(&a[&0]), decode(&b[&0]));
    let peak = x.iter().copied().fold(0.0, f32::max);
    assert!(x.iter().zip(&y).all(|(u, v)| (u - v).abs() <= 1e-3 * peak));
}

/// Each bad input fails before anything is written: exit 2, one line that
/// names the problem, no output directory.
#[test]
fn bad_input_exits_2_with_one_line_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cif = dir.path().join("broken.cif");
    std::fs::write(&cif, "data_x\n_cell_length_a 5.43\n_cell_length_b 5.43\n_cell_length_c five\n").unwrap();
    let cases: [(&[&str], &str); 10] = [
        (&["--grid", "8192", "--sampling", "0.0053A", "--thickness", "2000A", "--slice", "0.5A"], "GiB available"),
        (&["--cif", cif.to_str().unwrap()], "broken.cif: line 4"),
        (&["--cif", "/nonexistent.cif"], "/nonexistent.cif"),
        (&["--structure", "Unobtainium"], "unknown structure"),
        (&["--thickness", "5A", "--slice", "10A"], "thicker than the specimen"),
        (&["--energy", "5MV"], "outside 1 kV"),
        (&["--sampling", "0.1A"], "cannot hold a whole number"),
        (&["--zone-axis", "0x1"], "zone axis"),
        (&["--semiangle", "200mrad"], "band limit"),
        (&["--thickness", "20 parsecs"], "not a length"),
    ];
    for (i, (extra, expect)) in cases.iter().enumerate() {
        let out_dir = dir.path().join(format!("case{i}"));
        let mut args = vec!["multislice", "--out", out_dir.to_str().unwrap(), "--samples", "1"];
        if !extra.contains(&"--grid") {
            args.extend(["--grid", "64"]);
        }
        if !extra.contains(&"--sampling") {
            args.extend(["--sampling", "0.085A"]);
        }
        args.extend(extra.iter());
        let out = Command::new(SIMGEN).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(expect) && err.trim().lines().count() == 1, "{extra:?}: {err}");
        assert!(!out_dir.exists(), "{extra:?} created {}", out_dir.display());
    }
}

/// A destination too small for the store: the run fails naming the error,
/// and neither a store under its final name nor its temporary is left.
#[test]
fn a_full_destination_fails_cleanly_and_leaves_no_store() {
    let dir = tempfile::tempdir().unwrap();
    let disk = dir.path().join("disk");
    let Some(_disk) = e2e::Tmpfs::mount("a_full_destination_fails_cleanly_and_leaves_no_store", &disk, 256 << 10)
    else {
        return;
    };
    let out = Command::new(SIMGEN).args(small(&disk.join("out"), 4)).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a 256 KiB disk held 4 samples of 80 KiB");
    assert!(err.contains("scattering-00000.lmdb"), "{err}");
    let left: Vec<String> = std::fs::read_dir(disk.join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("lmdb"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// The same crystal from a CIF file (hexagonal cell, symmetry operations)
/// and built in: the same samples, but for the CIF's five-digit
/// coordinates (0.33333 for 1/3).
#[test]
fn a_cif_crystal_generates_the_samples_of_the_built_in_one() {
    let dir = tempfile::tempdir().unwrap();
    let cif = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/MoS2.cif");
    let run = |out: &Path, crystal: [&str; 2]| {
        let mut args = vec!["multislice", "--out", out.to_str().unwrap(), "--samples", "1", "--grid", "64"];
        args.extend(["--sampling", "0.0925A", "--thickness", "12.294A", "--scan", "2x2"]);
        args.extend(crystal);
        let result = Command::new(SIMGEN).args(&args).output().unwrap();
        assert!(result.status.success(), "{}", String::from_utf8_lossy(&result.stderr));
        samples(out).remove(&0).unwrap()
    };
    let a = run(&dir.path().join("cif"), ["--cif", cif]);
    let b = run(&dir.path().join("built-in"), ["--structure", "MoS2"]);
    let decode = |bytes: &[u8]| {
        let (mut c, mut p, mut s) = (vec![0f32; 4 * 64 * 64], vec![0f32; 64 * 64], Vec::new());
        formats::scattering::decode_into(bytes, &mut c, &mut p, &mut s).unwrap();
        c
    };
    let (x, y) = (decode(&a), decode(&b));
    let peak = y.iter().copied().fold(0.0, f32::max);
    let worst = x.iter().zip(&y).map(|(u, v)| (u - v).abs()).fold(0.0, f32::max);
    assert!(worst <= 1e-3 * peak, "largest difference {worst}, peak {peak}");
}

/// With `--phonon-sigma auto` (the default) each element vibrates as the
/// CIF's refinement says (√U per axis, B converted), an elemental crystal
/// as Peng et al.'s table says, the others at 0.076 Å; a length sets them
/// all; the report says which came from where, and the thermal target
/// image follows.
#[test]
fn thermal_displacements_come_per_element_from_the_cif() {
    let dir = tempfile::tempdir().unwrap();
    let original = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/MoS2.cif")).unwrap();
    // Mo with U = 0.0036 Å² (σ 0.06 Å); S with "?" (unknown).
    let with_u = original
        .replace("_atom_site_occupancy\n", "_atom_site_occupancy\n_atom_site_U_iso_or_equiv\n")
        .replace("0.25 1.0\n", "0.25 1.0 0.0036\n")
        .replace("0.621 1.0\n", "0.621 1.0 ?\n");
    assert_ne!(with_u, original);
    let cif = dir.path().join("MoS2-u.cif");
    std::fs::write(&cif, with_u).unwrap();
    let run = |name: &str, extra: &[&str]| -> (serde_json::Value, Vec<u8>) {
        let out = dir.path().join(name);
        let mut args = vec!["multislice", "--out", out.to_str().unwrap(), "--samples", "1", "--grid", "64"];
        args.extend(["--sampling", "0.0925A", "--thickness", "12.294A", "--scan", "1x1"]);
        args.extend(["--cif", cif.to_str().unwrap()]);
        args.extend(extra);
        let result = Command::new(SIMGEN).args(&args).output().unwrap();
        assert!(result.status.success(), "{}", String::from_utf8_lossy(&result.stderr));
        (serde_json::from_slice(&result.stdout).unwrap(), samples(&out).remove(&0).unwrap())
    };
    let sigma = |report: &serde_json::Value, element: &str| -> (f64, String) {
        let entry = report["config"]["phonon_sigma"].as_array().unwrap().iter().find(|e| e["element"] == element);
        let entry = entry.unwrap_or_else(|| panic!("{element} missing: {report}"));
        (entry["sigma"].as_f64().unwrap(), entry["source"].as_str().unwrap().to_owned())
    };
    let (auto, auto_sample) = run("auto", &[]);
    assert_eq!(sigma(&auto, "Mo"), (0.06, "cif".to_owned()));
    assert_eq!(sigma(&auto, "S"), (0.076, "default".to_owned()));
    let (uniform, uniform_sample) = run("uniform", &["--phonon-sigma", "0.076A"]);
    assert_eq!(sigma(&uniform, "Mo"), (0.076, "--phonon-sigma".to_owned()));
    // Mo vibrating less sharpens its column in the target image.
    let target = |bytes: &[u8]| {
        let (mut c, mut p, mut s) = (vec![0f32; 64 * 64], vec![0f32; 64 * 64], Vec::new());
        formats::scattering::decode_into(bytes, &mut c, &mut p, &mut s).unwrap();
        p
    };
    let peak = |image: Vec<f32>| image.into_iter().fold(0.0, f32::max);
    let (sharp, soft) = (peak(target(&auto_sample)), peak(target(&uniform_sample)));
    assert!(sharp > 1.1 * soft, "Mo's column peaks at {sharp} with σ 0.06 Å against {soft} with 0.076 Å");

    // A built-in crystal of one element takes Peng et al.'s value for it
    // (Au: B = 0.5925 Å² at 280 K); a compound's elements do not.
    let built_in = |structure: &str| -> serde_json::Value {
        let out = dir.path().join(structure);
        let mut args = vec!["multislice", "--out", out.to_str().unwrap(), "--samples", "1", "--grid", "64"];
        args.extend(["--structure", structure, "--sampling", "0.062A", "--thickness", "8A", "--scan", "1x1"]);
        let result = Command::new(SIMGEN).args(&args).output().unwrap();
        assert!(result.status.success(), "{}", String::from_utf8_lossy(&result.stderr));
        serde_json::from_slice(&result.stdout).unwrap()
    };
    let (au_sigma, au_source) = sigma(&built_in("Au"), "Au");
    assert!((au_sigma - (0.5925f64 / (8.0 * std::f64::consts::PI.powi(2))).sqrt()).abs() < 1e-9, "{au_sigma}");
    assert_eq!(au_source, "Peng et al. 1996, 280 K");
    assert_eq!(sigma(&built_in("SrTiO3"), "Sr"), (0.076, "default".to_owned()));
}

/// `--structures LIST`: one dataset over a CIF and a built-in along several
/// zone axes, on two ranks; each pair's block of samples is byte-for-byte
/// what a run of that structure alone stores at those indices, and
/// `structures.json` says which samples are which.
#[test]
fn a_structure_list_makes_one_dataset_of_every_pair_in_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let cifs = dir.path().join("lists").join("cifs");
    std::fs::create_dir_all(&cifs).unwrap();
    let mos2 = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/MoS2.cif");
    std::fs::copy(mos2, cifs.join("MoS2.cif")).unwrap();
    let list = dir.path().join("lists").join("train.txt");
    std::fs::write(&list, "# structure  zone axes\ncifs/MoS2.cif\nSi 001 110  # two orientations\n").unwrap();
    let common = |out: &Path, samples: &str| -> Vec<String> {
        // 16 Å: whole cells of every pair within 5 % (2 of Si [110]'s 7.68 Å,
        // 5 of MoS2's 3.16 Å).
        let fixed = ["multislice", "--grid", "96", "--sampling", "0.1667A", "--thickness", "8A", "--scan", "1x1"];
        fixed
            .into_iter()
            .chain(["--phonons", "1", "--seed", "3", "--samples", samples, "--out", out.to_str().unwrap()])
            .map(str::to_owned)
            .collect()
    };
    let run = |ranks: usize, out: &Path, extra: &[&str]| -> std::process::Output {
        let mut args = common(out, "6");
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        e2e::mpirun(ranks, &[], SIMGEN.as_ref(), &args)
    };
    let listed = dir.path().join("listed");
    let result = run(2, &listed, &["--structures", list.to_str().unwrap()]);
    assert!(result.status.success(), "{}", String::from_utf8_lossy(&result.stderr));
    let report: serde_json::Value = serde_json::from_slice(&result.stdout).unwrap();
    assert_eq!(report["config"]["structures"]["pairs"], 3, "{report}");

    let index: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(listed.join("structures.json")).unwrap()).unwrap();
    let pairs: Vec<(String, Vec<i64>, Vec<u64>)> = index
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let ints =
                |v: &serde_json::Value| v.as_array().unwrap().iter().map(|x| x.as_i64().unwrap()).collect::<Vec<_>>();
            (
                p["structure"].as_str().unwrap().to_owned(),
                ints(&p["zone_axis"]),
                ints(&p["samples"]).iter().map(|&x| x as u64).collect(),
            )
        })
        .collect();
    assert_eq!(pairs.len(), 3, "{index}");
    assert_eq!((pairs[0].1.clone(), pairs[0].2.clone()), (vec![0, 0, 1], vec![0, 2]));
    assert_eq!((pairs[1].0.as_str(), pairs[1].1.clone(), pairs[1].2.clone()), ("Si", vec![0, 0, 1], vec![2, 4]));
    assert_eq!((pairs[2].0.as_str(), pairs[2].1.clone(), pairs[2].2.clone()), ("Si", vec![1, 1, 0], vec![4, 6]));
    let manifest = Manifest::load(&listed.join(MANIFEST_FILE)).unwrap();
    assert!(manifest.files.iter().any(|f| f.path == "structures.json"));
    let all = samples(&listed);
    assert_eq!(all.keys().copied().collect::<Vec<_>>(), (0..6).collect::<Vec<_>>());

    for (extra, block) in [
        (vec!["--cif", mos2], 0..2u64),
        (vec!["--structure", "Si"], 2..4),
        (vec!["--structure", "Si", "--zone-axis", "110"], 4..6),
    ] {
        let alone = dir.path().join(format!("alone-{}", block.start));
        let result = run(1, &alone, &extra);
        assert!(result.status.success(), "{extra:?}: {}", String::from_utf8_lossy(&result.stderr));
        let theirs = samples(&alone);
        for i in block {
            assert!(all[&i] == theirs[&i], "sample {i} of the list differs from {extra:?} alone");
        }
    }

    // Mistakes fail before anything is written, naming the line.
    let bad_line = dir.path().join("lists").join("bad.txt");
    std::fs::write(&bad_line, "Si\ncifs/missing.cif 001\n").unwrap();
    for (extra, samples, says) in [
        (vec!["--structures", bad_line.to_str().unwrap()], "6", "line 2"),
        (vec!["--structures", list.to_str().unwrap()], "2", "fewer than the 3"),
        (
            vec!["--structures", list.to_str().unwrap(), "--sampling-tolerance", "0.01"],
            "6",
            "MoS2.cif along [0, 0, 1]: a 96-pixel grid",
        ),
        (vec!["--structures", list.to_str().unwrap(), "--structure", "Au"], "6", "cannot be used with"),
    ] {
        let out = dir.path().join("bad-out");
        let mut args = common(&out, samples);
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let result = Command::new(SIMGEN).args(&args).output().unwrap();
        assert_eq!(result.status.code(), Some(2), "{extra:?}");
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert!(stderr.contains(says), "{extra:?}: {stderr}");
        assert!(!out.exists(), "{extra:?} wrote {}", out.display());
    }
}
