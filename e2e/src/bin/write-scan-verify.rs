//! Write, scan and verify a CosmoFlow dataset under MPI, end to end
//! (`e2e/tests/write_scan_verify.rs` runs it on 4 ranks as 2 pretend nodes):
//!
//! 1. every rank writes its share of a small CosmoFlow-format dataset
//!    (TFRecords in the MLPerf HPC layout, plain and GZIP, with offset
//!    indexes);
//! 2. rank 0 scans the manifest (xxh3 of every file) and broadcasts it;
//! 3. every rank reads back a share written by another rank and checks
//!    checksums, record CRCs, index offsets, sample shapes and values;
//! 4. rank 0 prints a JSON report.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail, ensure};
use clap::Parser;
use cluster::World;
use cluster::progress::Progress;
use formats::checksum::hash_file;
use formats::cosmoflow::{CosmoSampleView, CosmoShape};
use formats::manifest::{self, MANIFEST_FILE, Manifest, ScanOptions, Schema};
use formats::tfrecord::{RecordIndex, TfRecordFile, TfRecordFileWriter, index_path_for};
use mpi::traits::*;

/// Write, scan and verify a small CosmoFlow dataset across MPI ranks.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Dataset directory (shared by all ranks; recreated).
    #[arg(long, default_value = "/tmp/stagehand-write-scan-verify/dataset")]
    out: PathBuf,
    /// Node-local directory template shown per rank ({node}, {rank}, {local_rank}, $VAR).
    #[arg(long, default_value = "/tmp/stagehand-write-scan-verify/node{node}")]
    dest: String,
    /// Number of samples.
    #[arg(long, default_value_t = 32)]
    samples: u64,
    /// Samples per TFRecord file.
    #[arg(long, default_value_t = 4)]
    samples_per_file: u64,
    /// Cube edge D of each (D, D, D, 4) sample.
    #[arg(long, default_value_t = 32)]
    size: usize,
    /// Seed of the synthetic samples.
    #[arg(long, default_value_t = 2026)]
    seed: u64,
    /// Write the JSON report here as well as to stdout.
    #[arg(long)]
    report: Option<PathBuf>,
}

fn main() {
    let args = Args::parse();
    let world = World::init().unwrap_or_else(|e| e2e::exit_with(&e.into()));
    cluster::logging::init(world.topology(), None);
    if let Err(e) = run(&world, &args) {
        world.fail(cluster::logging::chain(e.as_ref()));
    }
}

fn file_name(index: u64) -> String {
    // Every third file is GZIP-compressed, as MLPerf HPC v1.0 ships them.
    if index % 3 == 2 { format!("cosmo_{index:04}.tfrecord.gz") } else { format!("cosmo_{index:04}.tfrecord") }
}

fn run(world: &World, args: &Args) -> anyhow::Result<()> {
    ensure!(args.samples_per_file > 0, "--samples-per-file must be positive");
    let shape = CosmoShape { size: args.size, channels: 4 };
    let files = args.samples.div_ceil(args.samples_per_file);
    let (rank, size) = (world.rank() as u64, world.size() as u64);
    let t = world.topology();
    let node_local = cluster::paths::expand(&args.dest, &t.path_vars())?;
    tracing::info!("node-local directory of this rank: {}", node_local.display());

    if world.is_root() {
        if args.out.exists() {
            std::fs::remove_dir_all(&args.out).with_context(|| format!("clearing {}", args.out.display()))?;
        }
        std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
        tracing::info!(
            "writing {} samples of {:?} int16 in {files} files on {size} ranks / {} nodes",
            args.samples,
            shape.dims(),
            t.nodes
        );
    }
    world.barrier();

    // 1. Write: file i is written by rank i % size.
    let started = Instant::now();
    let mine: Vec<u64> = (0..files).filter(|i| i % size == rank).collect();
    let progress = Progress::start(world, "writing", files * args.samples_per_file * shape.x_bytes() as u64, files);
    for &i in &mine {
        let path = args.out.join(file_name(i));
        let mut writer = TfRecordFileWriter::create(&path, path.extension().is_some_and(|e| e == "gz"), true)?;
        for id in sample_ids(i, args) {
            let sample = e2e::demo_sample(args.seed, id, shape);
            writer.write_record(&sample.to_example_bytes())?;
            progress.counters().add_bytes(shape.x_bytes() as u64);
        }
        writer.finish()?;
        progress.counters().add_item();
    }
    progress.finish();
    world.barrier();
    let write_secs = started.elapsed().as_secs_f64();

    // 2. Scan on rank 0, broadcast the manifest.
    let started = Instant::now();
    let mut manifest_json = Vec::new();
    if world.is_root() {
        let manifest = manifest::scan(&args.out, &ScanOptions::new(Schema::cosmoflow(shape)))?;
        manifest.save(&args.out.join(MANIFEST_FILE))?;
        manifest_json = manifest.to_json();
    }
    let manifest = broadcast_manifest(world, manifest_json)?;
    manifest.validate_against_root(&args.out)?;
    let scan_secs = started.elapsed().as_secs_f64();

    // 3. Verify the files of the next rank over.
    let started = Instant::now();
    let checker = (rank + 1) % size;
    let mut checked = [0u64; 3]; // files, samples, bytes
    for i in (0..files).filter(|i| i % size == checker) {
        let (samples, bytes) = verify_file(&args.out, &manifest, i, args, shape)?;
        checked[0] += 1;
        checked[1] += samples;
        checked[2] += bytes;
    }
    let mut totals = [0u64; 3];
    world.comm().all_reduce_into(&checked[..], &mut totals[..], mpi::collective::SystemOperation::sum());
    let verify_secs = started.elapsed().as_secs_f64();
    ensure!(
        totals[0] == manifest.files.iter().filter(|f| f.samples > 0).count() as u64,
        "not every data file was verified"
    );
    ensure!(totals[1] == args.samples, "verified {} samples, wrote {}", totals[1], args.samples);

    if world.is_root() {
        let report = serde_json::json!({
            "ranks": size, "nodes": t.nodes,
            "samples": args.samples, "sample_shape": shape.dims(),
            "files": manifest.files.len(), "dataset_bytes": manifest.total_bytes(),
            "verified": { "files": totals[0], "samples": totals[1], "bytes": totals[2] },
            "seconds": { "write": write_secs, "scan": scan_secs, "verify": verify_secs },
            "manifest": args.out.join(MANIFEST_FILE),
        });
        let text = serde_json::to_string_pretty(&report)?;
        println!("{text}");
        if let Some(path) = &args.report {
            std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?;
        }
        tracing::info!("demo passed: every sample written, scanned and verified across {size} ranks");
    }
    Ok(())
}

fn sample_ids(file: u64, args: &Args) -> impl Iterator<Item = u64> {
    let first = file * args.samples_per_file;
    first..(first + args.samples_per_file).min(args.samples)
}

fn broadcast_manifest(world: &World, mut json: Vec<u8>) -> anyhow::Result<Manifest> {
    let root = world.comm().process_at_rank(0);
    let mut len = json.len() as u64;
    root.broadcast_into(&mut len);
    json.resize(len as usize, 0);
    root.broadcast_into(&mut json[..]);
    Ok(Manifest::from_json(&json, Path::new("<broadcast manifest>"))?)
}

/// Check one file against the manifest and regenerate its samples.
fn verify_file(
    dir: &Path,
    manifest: &Manifest,
    index: u64,
    args: &Args,
    shape: CosmoShape,
) -> anyhow::Result<(u64, u64)> {
    let name = file_name(index);
    let entry = manifest.entry(&name).with_context(|| format!("{name} is missing from the manifest"))?;
    let path = dir.join(&name);
    let (bytes, sum) = hash_file(&path, &mut Vec::new()).with_context(|| format!("hashing {}", path.display()))?;
    ensure!(
        sum == entry.xxh3 && bytes == entry.bytes,
        "{}: checksum {sum} differs from the manifest's {}",
        path.display(),
        entry.xxh3
    );

    let file = TfRecordFile::open(&path)?;
    let index_file = index_path_for(&path);
    let offsets = RecordIndex::load(&index_file)?;
    offsets.check_covers(file.as_bytes().len() as u64, &index_file)?;
    let ids: Vec<u64> = sample_ids(index, args).collect();
    ensure!(
        offsets.len() == ids.len() && entry.samples == ids.len() as u64,
        "{}: {} records, expected {}",
        path.display(),
        offsets.len(),
        ids.len()
    );
    // Read back to front through the index, to exercise seeking.
    for (k, id) in ids.iter().enumerate().rev() {
        let Some(offset) = offsets.offset(k) else { bail!("index of {} has no record {k}", path.display()) };
        let record = file.record_at(offset)?;
        let view = CosmoSampleView::parse(record.data, shape)
            .with_context(|| format!("{} at byte {offset}", path.display()))?;
        let expected = e2e::demo_sample(args.seed, *id, shape);
        ensure!(
            view.y == expected.y() && view.x_values().eq(expected.x().iter().copied()),
            "{} at byte {offset}: sample {id} differs from what was written",
            path.display()
        );
    }
    Ok((ids.len() as u64, bytes))
}
