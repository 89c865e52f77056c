//! `trainer::allocator::keep_freed_memory` under mimalloc, the `trainer`
//! binary's allocator: a large block written, freed, and after a pause
//! allocated and written again is served from pages the process still
//! holds (few page faults), where mimalloc's defaults have handed them
//! back to the kernel (a fault per page, each zeroed anew). The check runs
//! this binary twice as a child, with the policy and without it, so it can
//! fail both ways; the default child also checks that the option the
//! policy sets is mimalloc's purge delay (by its default, 1000 ms).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::Duration;

use trainer::allocator::{self, DEFAULT_PURGE_DELAY_MS, PURGE_DELAY_VARIABLE};

#[global_allocator]
static ALLOCATOR: allocator::Allocator = mimalloc::MiMalloc;

/// As large as a CosmoGAN `paper` step's larger buffers.
const BLOCK: usize = 64 << 20;
const PAGE: usize = 4096;
const HUGE_PAGE: usize = 2 << 20;
const CHILD: &str = "STAGEHAND_ALLOCATOR_CHILD";

fn minor_faults() -> u64 {
    cluster::memory::minor_page_faults().expect("getrusage")
}

/// Faults of a second block written page by page, allocated after a first
/// one was written, freed, and other allocations went on for longer than
/// mimalloc's purge delay (as the next step's do).
fn faults_of_the_second_block() -> u64 {
    let touch = || {
        let mut block = vec![0u8; BLOCK];
        for page in block.chunks_mut(PAGE) {
            page[0] = 1;
        }
        std::hint::black_box(&block);
    };
    touch();
    for _ in 0..75 {
        std::thread::sleep(Duration::from_millis(20));
        // Large enough to come from mimalloc's arena, whose allocations
        // are when it purges what has waited its delay out.
        std::hint::black_box(vec![1u8; 4 << 20]);
    }
    let before = minor_faults();
    touch();
    minor_faults() - before
}

fn child(policy: &str) -> u64 {
    let out = Command::new(std::env::current_exe().unwrap())
        .env(CHILD, policy)
        .env_remove(PURGE_DELAY_VARIABLE)
        .output()
        .unwrap();
    assert!(out.status.success(), "child ({policy}): {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

fn main() {
    match std::env::var(CHILD).as_deref() {
        Ok("keep") => {
            allocator::keep_freed_memory();
            assert_eq!(allocator::purge_delay_ms(), -1, "the policy did not set the purge delay");
            println!("{}", faults_of_the_second_block());
        }
        Ok(_) => {
            assert_eq!(
                allocator::purge_delay_ms(),
                DEFAULT_PURGE_DELAY_MS,
                "the option read is not mimalloc's purge delay (default {DEFAULT_PURGE_DELAY_MS} ms)"
            );
            println!("{}", faults_of_the_second_block());
        }
        Err(_) => {
            // mimalloc asks for transparent huge pages for its arenas: where
            // the kernel grants them, one fault maps (and zeroes) 2 MiB.
            let huge_pages = (BLOCK / HUGE_PAGE) as u64;
            let (kept, default) = (child("keep"), child("default"));
            println!(
                "keep_freed_pages: second {} MiB block: {kept} page faults kept, {default} with mimalloc's defaults",
                BLOCK >> 20
            );
            assert!(
                default >= huge_pages / 2,
                "mimalloc's defaults faulted only {default} times over {huge_pages} huge pages: the check shows nothing"
            );
            assert!(kept * 8 <= default, "{kept} page faults with the policy against {default} without");
            println!("test keep_freed_memory_keeps_mimallocs_pages_for_the_next_step ... ok");
        }
    }
}
