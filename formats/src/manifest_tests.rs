use std::os::unix::fs::symlink;

use super::*;
use crate::tfrecord::{Access, TfRecordFileWriter};

fn entry(path: &str) -> FileEntry {
    FileEntry { path: path.into(), bytes: 1, samples: 1, xxh3: Checksum(1) }
}

#[test]
fn relative_paths_are_accepted_and_escapes_refused() {
    for ok in ["a", "a/b.tfrecord", "deep/er/file.h5", "..a", "a..b"] {
        check_relative_path(ok).unwrap();
    }
    check_relative_path("a/.stagehand/x").unwrap();
    for bad in
        ["", "/etc/passwd", "../x", "a/../../x", "a/./b", "./a", "a//b", "a/", "a\\b", ".stagehand/journal.jsonl"]
    {
        let err = check_relative_path(bad).unwrap_err();
        assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
    }
}

/// A hostile manifest whose sizes add up past 2^64 made `stager plan`
/// print "0.00 B" and exit 0: it is refused on load, naming the entry.
#[test]
fn sizes_that_add_up_past_64_bits_are_refused() {
    let big = |path: &str| FileEntry { path: path.into(), bytes: u64::MAX / 2 + 1, samples: 1, xxh3: Checksum(1) };
    let m = Manifest::new(Schema::opaque(), vec![big("a"), big("b")]);
    let e = Manifest::from_json(&m.to_json(), Path::new("m.json")).unwrap_err();
    assert!(e.to_string().contains("add up to more than 2^64 (at entry \"b\")"), "{e}");
    assert_eq!(m.total_bytes(), u64::MAX, "saturates rather than wraps");
    let mut many = entry("c");
    many.samples = u64::MAX;
    let e = Manifest::new(Schema::opaque(), vec![entry("a"), many]).validate().unwrap_err();
    assert!(e.to_string().contains("sample counts"), "{e}");
}

#[test]
fn duplicate_entries_are_refused() {
    let m = Manifest::new(Schema::opaque(), vec![entry("a"), entry("a")]);
    assert!(matches!(m.validate(), Err(ManifestError::Duplicate(p)) if p == "a"));
}

#[test]
fn manifest_round_trips_through_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manifest::new(Schema::cosmoflow(CosmoShape::MLPERF), vec![entry("b"), entry("a")]);
    assert_eq!(m.files[0].path, "a");
    let path = dir.path().join(MANIFEST_FILE);
    m.save(&path).unwrap();
    assert_eq!(Manifest::load(&path).unwrap(), m);
    assert_eq!(m.schema.cosmo_shape(), Some(CosmoShape::MLPERF));
    assert_eq!(m.entry("b").unwrap().path, "b");
    assert!(m.entry("c").is_none());
}

#[test]
fn manifest_with_escaping_entry_is_refused_on_load() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manifest::new(Schema::opaque(), vec![entry("../../etc/passwd")]);
    let path = dir.path().join(MANIFEST_FILE);
    std::fs::write(&path, m.to_json()).unwrap();
    let err = Manifest::load(&path).unwrap_err();
    assert!(err.to_string().contains("../../etc/passwd"), "{err}");
}

#[test]
fn future_version_and_foreign_format_are_refused() {
    let mut m = Manifest::new(Schema::opaque(), vec![]);
    m.version = VERSION + 1;
    assert!(matches!(Manifest::from_json(&m.to_json(), Path::new("m")), Err(ManifestError::Version { .. })));
    let err = Manifest::from_json(b"{\"hello\": 1}", Path::new("m.json")).unwrap_err();
    assert!(err.to_string().contains("m.json"), "{err}");
}

#[test]
fn scan_hashes_counts_and_skips_hidden_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("sub")).unwrap();
    std::fs::write(root.join("sub/plain.bin"), b"hello").unwrap();
    std::fs::write(root.join(".hidden.tmp.1"), b"partial").unwrap();
    // A former destination's bookkeeping (and any hidden directory) is not
    // descended into: its journal and lock are not data.
    for hidden in [".stagehand/tmp", "sub/.cache"] {
        std::fs::create_dir_all(root.join(hidden)).unwrap();
        std::fs::write(root.join(hidden).join("journal.jsonl"), b"{}").unwrap();
    }
    let mut w = TfRecordFileWriter::create(&root.join("a.tfrecord"), false, true).unwrap();
    for i in 0..3u8 {
        w.write_record(&[i; 10]).unwrap();
    }
    w.finish().unwrap();
    let mut w = TfRecordFileWriter::create(&root.join("b.tfrecord.gz"), true, false).unwrap();
    w.write_record(b"one").unwrap();
    w.finish().unwrap();
    Manifest::new(Schema::opaque(), vec![]).save(&root.join(MANIFEST_FILE)).unwrap();

    let progress = AtomicU64::new(0);
    let options = ScanOptions {
        threads: 3,
        schema: Schema::cosmoflow(CosmoShape { size: 1, channels: 1 }),
        progress: Some(&progress),
        access: Access::Read,
    };
    let m = scan(root, &options).unwrap();
    let mapped = scan(root, &ScanOptions { access: Access::Map, progress: None, ..options.clone() }).unwrap();
    assert_eq!(mapped, m);
    let paths: Vec<_> = m.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["a.tfrecord", "a.tfrecord.idx", "b.tfrecord.gz", "sub/plain.bin"]);
    assert_eq!(m.entry("a.tfrecord").unwrap().samples, 3);
    assert_eq!(m.entry("b.tfrecord.gz").unwrap().samples, 1);
    assert_eq!(m.entry("a.tfrecord.idx").unwrap().samples, 0);
    let plain = m.entry("sub/plain.bin").unwrap();
    assert_eq!((plain.bytes, plain.xxh3), (5, Checksum::of(b"hello")));
    assert_eq!(progress.load(Ordering::Relaxed), m.total_bytes());
    m.validate_against_root(root).unwrap();
}

#[test]
fn scan_follows_symlinks_inside_the_root_only() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), b"s").unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("real"), b"data").unwrap();
    symlink("real", dir.path().join("alias")).unwrap();
    let m = scan(dir.path(), &ScanOptions::new(Schema::opaque())).unwrap();
    assert_eq!(m.entry("alias").unwrap().xxh3, Checksum::of(b"data"));

    symlink(outside.path().join("secret"), dir.path().join("leak")).unwrap();
    let err = scan(dir.path(), &ScanOptions::new(Schema::opaque())).unwrap_err();
    assert!(matches!(&err, ManifestError::OutsideRoot { entry, .. } if entry == "leak"), "{err}");
}

#[test]
fn validate_against_root_refuses_symlinked_directory_escape() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("f"), b"x").unwrap();
    let dir = tempfile::tempdir().unwrap();
    symlink(outside.path(), dir.path().join("d")).unwrap();
    let m = Manifest::new(Schema::opaque(), vec![entry("d/f")]);
    let err = m.validate_against_root(dir.path()).unwrap_err();
    assert!(matches!(&err, ManifestError::OutsideRoot { entry, .. } if entry == "d/f"), "{err}");
}

#[test]
fn missing_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manifest::new(Schema::opaque(), vec![entry("gone.bin")]);
    let err = m.validate_against_root(dir.path()).unwrap_err();
    assert!(err.to_string().contains("gone.bin"), "{err}");
}

#[test]
fn index_sidecars_follow_their_data_file_and_are_placed_with_it() {
    let files = ["a.tfrecord", "a.tfrecord.idx", "b.tfrecord", "b.tfrecord.idx", "c.tfrecord", "orphan.idx"];
    let m = Manifest::new(Schema::opaque(), files.iter().map(|p| entry(p)).collect());
    let follows = m.followers();
    let at = |p: &str| m.files.iter().position(|f| f.path == p).unwrap();
    assert_eq!(follows[at("a.tfrecord.idx")], Some(at("a.tfrecord")));
    assert_eq!(follows[at("b.tfrecord.idx")], Some(at("b.tfrecord")));
    assert_eq!(follows[at("orphan.idx")], None);
    assert_eq!(follows[at("c.tfrecord")], None);
    // 4 leaders (a, b, c, orphan.idx), 2 per node on 2 nodes.
    let placed = m.files_per_node(2, crate::placement::Policy::PerNode(2), 3).unwrap();
    for list in &placed {
        for (data, index) in [("a.tfrecord", "a.tfrecord.idx"), ("b.tfrecord", "b.tfrecord.idx")] {
            assert_eq!(list.contains(&at(data)), list.contains(&at(index)));
        }
    }
    assert_eq!(placed.iter().map(Vec::len).sum::<usize>(), files.len());
}

/// Directories are resolved once per directory, not once per file: the
/// verdict is still that of resolving each entry's whole path, for links
/// at any level, inside the root or out of it.
#[test]
fn validate_against_root_agrees_with_resolving_each_entry() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), b"s").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    std::fs::write(root.join("a/b/f"), b"f").unwrap();
    std::fs::write(root.join("top"), b"t").unwrap();
    symlink("../../top", root.join("a/b/up")).unwrap();
    symlink("a/b", root.join("inner")).unwrap();
    symlink(outside.path().join("secret"), root.join("a/leak")).unwrap();
    symlink(outside.path(), root.join("a/out")).unwrap();
    let canonical = root.canonicalize().unwrap();
    for (paths, escapes) in [
        (&["a/b/f", "a/b/up", "inner/f", "inner/up", "top"][..], None),
        (&["a/b/f", "a/leak"], Some("a/leak")),
        (&["a/b/f", "a/out/secret"], Some("a/out/secret")),
        (&["inner/f", "a/out/secret"], Some("a/out/secret")),
    ] {
        let m = Manifest::new(Schema::opaque(), paths.iter().map(|p| entry(p)).collect());
        for p in paths {
            let each = resolve_inside(&canonical, p);
            assert_eq!(each.is_ok(), Some(*p) != escapes, "{p}: {each:?}");
        }
        match (m.validate_against_root(root), escapes) {
            (Ok(()), None) => {}
            (Err(ManifestError::OutsideRoot { entry, .. }), Some(escaping)) => assert_eq!(entry, escaping),
            (other, _) => panic!("{paths:?}: {other:?}"),
        }
    }
}
