//! Prints each rank's topology and node-local path as one JSON line, then
//! checks that progress counters reach rank 0. Run under mpirun by the tests.

use anyhow::Context;
use cluster::World;
use cluster::progress::Progress;

fn main() {
    let world = World::init().unwrap_or_else(|e| e2e::exit_with(&e.into()));
    cluster::logging::init(world.topology(), Some("warn"));
    if let Err(e) = run(&world) {
        world.fail(cluster::logging::chain(e.as_ref()));
    }
}

fn run(world: &World) -> anyhow::Result<()> {
    let template = std::env::args().nth(1).unwrap_or_else(|| "/tmp/bb/node{node}/r{local_rank}".into());
    let t = *world.topology();
    let path = cluster::paths::expand(&template, &t.path_vars()).context("expanding the template")?;
    println!(
        "{}",
        serde_json::json!({
            "rank": t.rank, "size": t.size, "node": t.node, "nodes": t.nodes,
            "local_rank": t.local_rank, "local_size": t.local_size,
            "path": path, "ranks_of_node": world.ranks_of_node(t.node),
            "thread_multiple": world.supports_thread_multiple(),
        })
    );

    let progress = Progress::start(world, "probe", 0, 0);
    let counters = progress.counters().clone();
    let worker = std::thread::spawn(move || {
        for _ in 0..=t.rank {
            counters.add_bytes(100);
            counters.add_item();
            std::thread::sleep(std::time::Duration::from_millis(30));
        }
    });
    worker.join().map_err(|_| anyhow::anyhow!("worker panicked"))?;
    let totals = progress.finish();
    // How long rank 0 waits in `finish` for ranks that are already done:
    // the fastest of three starts and finishes right after a barrier.
    let finish_ms = (0..3)
        .map(|_| {
            let progress = Progress::start(world, "probe", 0, 0);
            world.barrier();
            let start = std::time::Instant::now();
            progress.finish();
            start.elapsed().as_secs_f64() * 1e3
        })
        .fold(f64::INFINITY, f64::min);
    if world.is_root() {
        let per_rank: Vec<_> = totals.iter().map(|c| [c.bytes, c.items]).collect();
        println!("{}", serde_json::json!({ "progress": per_rank, "finish_ms": finish_ms }));
    }
    Ok(())
}
