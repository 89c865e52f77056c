//! Helpers the stager's MPI tests share: a source dataset, `stager stage`
//! under mpirun on pretend nodes, and what a destination holds.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use formats::manifest::{self, MANIFEST_FILE, Manifest, ScanOptions, Schema};
use formats::placement::Policy;
use serde_json::Value;

pub const STAGER: &str = env!("CARGO_BIN_EXE_stager");

/// A source dataset of `files` files of varied sizes, with its manifest.
pub fn dataset(root: &Path, files: usize, max_kib: usize) -> Manifest {
    let src = root.join("src");
    std::fs::create_dir_all(src.join("sub")).unwrap();
    let mut rng = e2e::SplitMix64::new(files as u64);
    for i in 0..files {
        let len = (rng.next() as usize % (max_kib * 1024)) + usize::from(i % 5 != 0);
        let data: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let name = if i % 4 == 0 { format!("sub/f{i:03}.bin") } else { format!("f{i:03}.bin") };
        std::fs::write(src.join(name), data).unwrap();
    }
    let m = manifest::scan(&src, &ScanOptions::new(Schema::opaque())).unwrap();
    m.save(&src.join(MANIFEST_FILE)).unwrap();
    m
}

/// What each of `nodes` destinations should hold once `root/src` is
/// staged under `policy` and `seed`: path and bytes of every file.
pub fn expected(root: &Path, m: &Manifest, nodes: usize, policy: Policy, seed: u64) -> Vec<BTreeMap<String, Vec<u8>>> {
    m.files_per_node(nodes, policy, seed)
        .unwrap()
        .into_iter()
        .map(|files| {
            files
                .into_iter()
                .map(|f| (m.files[f].path.clone(), std::fs::read(root.join("src").join(&m.files[f].path)).unwrap()))
                .collect()
        })
        .collect()
}

/// Assert that each node's destination `root/node{n}` holds exactly
/// `want[n]` (from [`expected`]); `why` says after what.
pub fn assert_nodes_hold(root: &Path, want: &[BTreeMap<String, Vec<u8>>], why: &str) {
    for (node, files) in want.iter().enumerate() {
        assert!(contents(&root.join(format!("node{node}"))) == *files, "node {node} differs {why}");
    }
}

pub fn stage(ranks_per_node: &str, root: &Path, extra: &[&str]) -> Output {
    let src = root.join("src");
    let dest = root.join("node{node}");
    let mut args = vec!["stage", "--source", src.to_str().unwrap(), "--dest", dest.to_str().unwrap()];
    args.extend_from_slice(extra);
    e2e::mpirun(4, &[("STAGEHAND_RANKS_PER_NODE", ranks_per_node)], STAGER.as_ref(), &args)
}

/// Start `stager stage` of `root/src` into `root/node{node}` in the
/// background on `ranks` ranks, `per_node` to a pretend node, with `extra`
/// options (a slow `--source-bandwidth` keeps it running while a test
/// injects a fault). Stderr is piped.
pub fn spawn_stage(root: &Path, ranks: usize, per_node: &str, extra: &[&str]) -> std::process::Child {
    spawn_stager("stage", root, ranks, per_node, extra)
}

/// [`spawn_stage`] for any of the stager's MPI commands (`serve`).
pub fn spawn_stager(command: &str, root: &Path, ranks: usize, per_node: &str, extra: &[&str]) -> std::process::Child {
    let (src, dest) = (root.join("src"), root.join("node{node}"));
    let mut mpirun = Command::new("mpirun");
    e2e::own_mpi_session(&mut mpirun);
    mpirun
        .args(e2e::MPIRUN_ARGS)
        .args(["-np", &ranks.to_string(), "-x", "STAGEHAND_RANKS_PER_NODE"])
        .env("STAGEHAND_RANKS_PER_NODE", per_node)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .arg(STAGER)
        .args([command, "--source", src.to_str().unwrap(), "--dest", dest.to_str().unwrap()])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

pub fn report(output: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "stage failed\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("no JSON report ({e}):\n{stdout}"))
}

/// Regular files under `dir` (hidden state excluded) and their bytes.
pub fn contents(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    if !dir.exists() {
        return out;
    }
    for item in walk(dir) {
        let rel = item.strip_prefix(dir).unwrap().to_str().unwrap().to_owned();
        if !rel.starts_with(".stagehand") {
            out.insert(rel, std::fs::read(&item).unwrap());
        }
    }
    out
}

pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() { out.extend(walk(&p)) } else { out.push(p) }
    }
    out
}

pub fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}
