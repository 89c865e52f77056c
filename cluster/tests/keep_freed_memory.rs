//! `cluster::allocator::keep_freed_memory`: a block larger than glibc's
//! 32 MiB heap ceiling, allocated on a thread, freed and allocated again,
//! is served from memory the process already touched (few page faults),
//! where glibc's defaults map it afresh (a fault per page). The check runs
//! this binary twice as a child, with the policy and without it, so it can
//! fail both ways. glibc only: elsewhere the policy does nothing and the
//! check says so.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

/// Larger than glibc's mmap-threshold ceiling (32 MiB) and a thread
/// arena's heap (64 MiB).
const BLOCK: usize = 96 << 20;
const PAGE: usize = 4096;
const CHILD: &str = "STAGEHAND_ALLOCATOR_CHILD";

fn minor_faults() -> u64 {
    cluster::memory::minor_page_faults().expect("getrusage")
}

/// Faults of a second block of BLOCK bytes written page by page, after a
/// first one was written and freed, on a thread as the trainer's pool
/// allocates.
fn faults_of_the_second_block() -> u64 {
    std::thread::spawn(|| {
        let touch = || {
            let mut block = vec![0u8; BLOCK];
            for page in block.chunks_mut(PAGE) {
                page[0] = 1;
            }
            std::hint::black_box(&block);
        };
        touch();
        let before = minor_faults();
        touch();
        minor_faults() - before
    })
    .join()
    .unwrap()
}

fn child(policy: &str) -> u64 {
    let out = Command::new(std::env::current_exe().unwrap()).env(CHILD, policy).output().unwrap();
    assert!(out.status.success(), "child ({policy}): {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// Says on stderr that the check was skipped and appends the line to the
/// file `STAGEHAND_SKIP_LOG` names, which `make test` counts at its end.
/// `e2e::skip` does this for the other tests; it depends on this crate, so
/// this crate's tests cannot use it.
fn record_skip(line: &str) {
    use std::io::Write as _;
    eprintln!("SKIPPED {line}");
    if let Some(path) = std::env::var_os("STAGEHAND_SKIP_LOG") {
        let mut log = std::fs::OpenOptions::new().create(true).append(true).open(&path).unwrap();
        log.write_all(format!("{line}\n").as_bytes()).unwrap();
    }
}

fn main() {
    match std::env::var(CHILD).as_deref() {
        Ok("keep") => {
            cluster::allocator::keep_freed_memory();
            println!("{}", faults_of_the_second_block());
        }
        Ok(_) => println!("{}", faults_of_the_second_block()),
        Err(_) => {
            if !cfg!(all(target_os = "linux", target_env = "gnu")) {
                record_skip("keep_freed_memory: not glibc, the policy does nothing here");
                return;
            }
            let pages = (BLOCK / PAGE) as u64;
            let (kept, default) = (child("keep"), child("default"));
            println!(
                "keep_freed_memory: second {} MiB block: {kept} page faults kept, {default} with glibc's defaults \
                 ({pages} pages)",
                BLOCK >> 20
            );
            assert!(
                default > pages / 2,
                "glibc's defaults faulted only {default} of {pages} pages: the check shows nothing"
            );
            assert!(kept < pages / 20, "{kept} of {pages} pages faulted again with the policy");
            println!("test keep_freed_memory_reuses_a_block_above_glibcs_ceiling ... ok");
        }
    }
}
