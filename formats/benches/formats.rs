//! Throughput of the formats hot paths, each beside a peer measured in the
//! same run (see docs/benchmarks.md for the command and results):
//!
//! - TFRecord read + verify of 16 MiB records from the page cache: ours
//!   (mmap, and read into memory) against the `tfrecord` crate's reader.
//! - Manifest scan (read + xxh3 of every file) against raw xxh3 over the
//!   same bytes already in memory.
//!
//! Its rows of docs/benchmarks.md are criterion's medians, recorded through
//! `bench_rows` at the end of the run.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use bench_rows::{Row, criterion_dir, criterion_median_seconds};
use criterion::{Criterion, Throughput};
use formats::manifest::{self, ScanOptions, Schema};
use formats::tfrecord::{Access, TfRecordFile, TfRecordFileWriter};

const RECORD_BYTES: usize = 16 << 20;
const RECORDS: usize = 16;

fn payload(seed: u64) -> Vec<u8> {
    let mut state = seed;
    (0..RECORD_BYTES / 8)
        .flat_map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            state.to_le_bytes()
        })
        .collect()
}

fn write_file(path: &Path) -> u64 {
    let mut w = TfRecordFileWriter::create(path, false, false).unwrap();
    for i in 0..RECORDS {
        w.write_record(&payload(i as u64)).unwrap();
    }
    w.finish().unwrap();
    std::fs::metadata(path).unwrap().len()
}

fn tfrecord_read_verify(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.tfrecord");
    let bytes = write_file(&path);
    let mut group = c.benchmark_group(TFRECORD_GROUP);
    group.throughput(Throughput::Bytes(bytes)).sample_size(20).measurement_time(Duration::from_secs(8));
    for (name, access) in [("stagehand_mmap", Access::Map), ("stagehand_read", Access::Read)] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let file = TfRecordFile::open_with(&path, access).unwrap();
                let mut n = 0usize;
                for record in file.records() {
                    n += black_box(record.unwrap().data.len());
                }
                assert_eq!(n, RECORDS * RECORD_BYTES);
            })
        });
    }
    group.bench_function("peer_tfrecord_crate", |b| {
        b.iter(|| {
            let config = tfrecord::RecordReaderConfig { check_integrity: true };
            let iter = tfrecord::BytesIter::open(&path, config).unwrap();
            let mut n = 0usize;
            for record in iter {
                n += black_box(record.unwrap().len());
            }
            assert_eq!(n, RECORDS * RECORD_BYTES);
        })
    });
    group.finish();
}

fn manifest_scan(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut in_memory = Vec::new();
    for i in 0..RECORDS {
        let data = payload(1000 + i as u64);
        std::fs::write(dir.path().join(format!("f{i:02}.bin")), &data).unwrap();
        in_memory.push(data);
    }
    let total: u64 = in_memory.iter().map(|d| d.len() as u64).sum();
    let mut group = c.benchmark_group(SCAN_GROUP);
    group.throughput(Throughput::Bytes(total)).sample_size(20).measurement_time(Duration::from_secs(8));
    group.bench_function("peer_raw_xxh3_in_memory", |b| {
        b.iter(|| {
            for d in &in_memory {
                black_box(twox_hash::XxHash3_64::oneshot(d));
            }
        })
    });
    group.bench_function("peer_raw_xxh3_in_memory_2_threads", |b| {
        b.iter(|| {
            std::thread::scope(|s| {
                for half in in_memory.chunks(in_memory.len().div_ceil(2)) {
                    s.spawn(move || {
                        for d in half {
                            black_box(twox_hash::XxHash3_64::oneshot(d));
                        }
                    });
                }
            })
        })
    });
    for (threads, access, name) in
        [(1, Access::Read, "read"), (2, Access::Read, "read"), (1, Access::Map, "mmap"), (2, Access::Map, "mmap")]
    {
        group.bench_function(format!("stagehand_scan_{name}_{threads}_threads"), |b| {
            let options = ScanOptions { threads, schema: Schema::opaque(), progress: None, access };
            b.iter(|| {
                let m = manifest::scan(dir.path(), &options).unwrap();
                assert_eq!(m.total_bytes(), total);
            })
        });
    }
    group.finish();
}

const TFRECORD_GROUP: &str = "tfrecord_read_verify_16MiB_records";
const SCAN_GROUP: &str = "manifest_scan_256MiB";

/// GiB/s of one iteration over `bytes`, from criterion's median.
fn gib_per_s(group: &str, function: &str, bytes: u64) -> f64 {
    let seconds = criterion_median_seconds(&criterion_dir(), group, function).unwrap_or_else(|e| panic!("{e}"));
    bytes as f64 / seconds / (1u64 << 30) as f64
}

fn record_rows() {
    let bytes = (RECORDS * RECORD_BYTES) as u64;
    let mmap = gib_per_s(TFRECORD_GROUP, "stagehand_mmap", bytes);
    let read = gib_per_s(TFRECORD_GROUP, "stagehand_read", bytes);
    let peer = gib_per_s(TFRECORD_GROUP, "peer_tfrecord_crate", bytes);
    let raw = gib_per_s(SCAN_GROUP, "peer_raw_xxh3_in_memory_2_threads", bytes);
    let scan_map = gib_per_s(SCAN_GROUP, "stagehand_scan_mmap_2_threads", bytes);
    let scan_read = gib_per_s(SCAN_GROUP, "stagehand_scan_read_2_threads", bytes);
    let gb_per_s = mmap * (1u64 << 30) as f64 / 1e9;
    let rows = [
        Row::new("tfrecord-mmap", format!("TFRecord read + both CRCs, memory map, 1 core: {mmap:.1} GiB/s"))
            .peer(format!("`tfrecord` 0.15 crate with `check_integrity`: {peer:.2} GiB/s"))
            .ratio(format!("{:.0}×", mmap / peer))
            .target("≥ 4 GB/s", Some(gb_per_s >= 4.0)),
        Row::new("tfrecord-read", format!("TFRecord read + both CRCs, `Access::Read`, 1 core: {read:.2} GiB/s"))
            .peer("the same peer")
            .ratio(format!("{:.1}×", read / peer)),
        Row::new("scan-map", format!("manifest scan (xxh3-64), `Access::Map`, 2 threads: {scan_map:.1} GiB/s"))
            .peer(format!("raw xxh3 over the same bytes in memory, 2 threads: {raw:.1} GiB/s"))
            .ratio(format!("{:.0} %", 100.0 * scan_map / raw))
            .target("≥ 80 %", Some(scan_map / raw >= 0.8)),
        Row::new("scan-read", format!("manifest scan, `Access::Read` (the default), 2 threads: {scan_read:.1} GiB/s"))
            .peer("the same peer")
            .ratio(format!("{:.0} %", 100.0 * scan_read / raw)),
    ];
    bench_rows::record("formats", "cargo bench -p stagehand-formats --bench formats", &rows)
        .unwrap_or_else(|e| panic!("{e}"));
}

// criterion_main! without the macro: the rows are recorded after the
// groups ran, from the estimates they wrote into a known directory.
fn main() {
    let mut criterion = Criterion::default().output_directory(&criterion_dir()).configure_from_args();
    tfrecord_read_verify(&mut criterion);
    manifest_scan(&mut criterion);
    criterion.final_summary();
    // `cargo bench -- <filter>` or `--list` runs a part or nothing: no rows then.
    if std::env::args().skip(1).all(|arg| arg == "--bench") {
        record_rows();
    }
}
