//! `stager plan --capacity` on a real manifest: what a global shuffle over
//! a sharded dataset reads each epoch from the source, from peers and
//! locally, and the refusals of options that do not fit it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use formats::manifest::{MANIFEST_FILE, Manifest};
use serde_json::Value;

mod common;

fn plan(source: &Path, extra: &[&str]) -> Output {
    let args = ["plan", "--source", source.to_str().unwrap(), "--nodes", "4", "--ranks-per-node", "2"];
    Command::new(common::STAGER).args(args).args(extra).output().unwrap()
}

fn capacity_report(source: &Path, capacity: u64, extra: &[&str]) -> Value {
    let capacity = capacity.to_string();
    let mut args = vec!["--policy", "shard", "--json", "--epochs", "3", "--capacity", capacity.as_str()];
    args.extend_from_slice(extra);
    let output = plan(source, &args);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    json["capacity"].clone()
}

fn bytes(v: &Value) -> u64 {
    v.as_u64().unwrap()
}

/// Each epoch reads every sample from somewhere (the first also stages
/// what the nodes hold); with room for the whole shard
/// the source is read once in all, and with room for a quarter of the
/// dataset over the 4 nodes together it is read again every epoch, less
/// with furthest-next-use eviction than with LRU.
#[test]
fn plan_with_a_capacity_shows_source_peer_and_local_bytes_per_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let data = e2e::simulated_cosmo(dir.path(), 8, 31);
    let manifest = Manifest::load(&data.join(MANIFEST_FILE)).unwrap();
    let dataset: u64 = manifest.files.iter().filter(|f| f.samples > 0).map(|f| f.bytes).sum();

    // Room for a node's shard (a quarter) and a cache of another quarter.
    let roomy = capacity_report(&data, dataset / 2, &[]);
    let chosen = &roomy["chosen"];
    assert_eq!(bytes(&chosen["dataset_bytes"]), dataset);
    assert_eq!(bytes(&chosen["unheld_bytes"]), 0);
    let epochs = chosen["epochs"].as_array().unwrap();
    assert_eq!(epochs.len(), 3);
    for (k, e) in epochs.iter().enumerate() {
        let staged = if k == 0 { dataset } else { 0 };
        assert_eq!(bytes(&e["source"]), staged, "epoch {}", k + 1);
        // Every sample is read (files from peers come whole, with all their samples).
        assert!(bytes(&e["local"]) <= dataset && bytes(&e["peers"]) + bytes(&e["local"]) >= dataset, "{e}");
        assert!(bytes(&e["peers"]) > 0, "a global shuffle reads other nodes' files");
    }

    let tight = capacity_report(&data, dataset / 16, &["--cache", &(dataset / 64).to_string()]);
    let fetched = |report: &Value| -> u64 {
        report["epochs"].as_array().unwrap().iter().map(|e| bytes(&e["source"]) + bytes(&e["peers"])).sum()
    };
    let (fnu, lru) = (&tight["chosen"], &tight["other_rule"]);
    assert!(bytes(&fnu["unheld_bytes"]) > dataset / 2, "{fnu}");
    for e in fnu["epochs"].as_array().unwrap() {
        assert!(bytes(&e["source"]) > 0, "{e}");
    }
    assert!(fetched(fnu) <= fetched(lru), "furthest next use {} against LRU {}", fetched(fnu), fetched(lru));

    let text = plan(&data, &["--policy", "shard", "--capacity", &(dataset / 2).to_string()]);
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(stdout.contains("source reads 1.00x the dataset over 3 epochs"), "{stdout}");
    assert!(stdout.contains("with LRU eviction"), "{stdout}");
}

#[test]
fn a_capacity_without_shard_or_a_cache_without_a_capacity_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let data = e2e::simulated_cosmo(dir.path(), 2, 32);
    let replicate = plan(&data, &["--policy", "replicate", "--capacity", "1GiB"]);
    assert_eq!(replicate.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&replicate.stderr);
    assert!(stderr.contains("give --policy shard") && stderr.trim().lines().count() == 1, "{stderr}");
    let cache_alone = plan(&data, &["--policy", "shard", "--cache", "1GiB"]);
    assert_eq!(cache_alone.status.code(), Some(2));
    let too_big = plan(&data, &["--policy", "shard", "--capacity", "1GiB", "--cache", "2GiB"]);
    assert_eq!(too_big.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&too_big.stderr).contains("is more than --capacity"));
}
