//! Sums buffers of several lengths over every rank with the flat and the
//! hierarchical exchange (`cluster::allreduce`), on the calling thread and
//! on a thread of its own, and prints one JSON line per rank: the largest
//! error of each against the exact sum, as a share of the reassociation
//! bound (R - 1) ε Σ|x|, and a digest of the bits it got (every rank must
//! get the same, or the ranks' models drift apart). Every rank makes every
//! rank's values from its seed, so each knows the exact sum. Run under
//! mpirun by the tests.

use cluster::World;
use cluster::allreduce::{Exchange, SumAllreduce};

/// Lengths around the parts' boundaries for 1-4 ranks per node, and one
/// of several fused buffers' size.
const LENGTHS: [usize; 7] = [0, 1, 3, 5, 1000, 4099, 300_001];

fn values(rank: usize, len: usize) -> Vec<f32> {
    // A small xorshift: values of both signs over several magnitudes, the
    // mix a gradient has.
    let mut state = 0x9e37_79b9_7f4a_7c15u64 ^ (rank as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d) ^ len as u64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let unit = (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
            unit * 10f32.powi((state % 5) as i32 - 2)
        })
        .collect()
}

/// The largest |got - exact| / ((R - 1) ε Σ|x|) over the buffer.
fn worst(got: &[f32], ranks: usize, len: usize) -> f64 {
    let all: Vec<Vec<f32>> = (0..ranks).map(|r| values(r, len)).collect();
    let mut worst = 0.0f64;
    for (i, &g) in got.iter().enumerate() {
        let exact: f64 = all.iter().map(|v| v[i] as f64).sum();
        let magnitude: f64 = all.iter().map(|v| (v[i] as f64).abs()).sum();
        let bound = (ranks.saturating_sub(1).max(1)) as f64 * f32::EPSILON as f64 / 2.0 * magnitude;
        let error = (g as f64 - exact).abs();
        if !error.is_finite() {
            return f64::INFINITY;
        }
        if error > 0.0 {
            worst = worst.max(if bound > 0.0 { error / bound } else { f64::INFINITY });
        }
    }
    worst
}

fn main() {
    let world = World::init().unwrap_or_else(|e| e2e::exit_with(&e.into()));
    cluster::logging::init(world.topology(), Some("warn"));
    let rank = world.rank();
    let ranks = world.size();
    let mut line = serde_json::json!({ "rank": rank });
    for exchange in [Exchange::Flat, Exchange::Hierarchical] {
        let mut sum = match SumAllreduce::new(&world, exchange) {
            Ok(sum) => sum,
            Err(e) => world.fail(e),
        };
        let mut on_thread = match SumAllreduce::for_threads(&world, exchange) {
            Some(Ok(sum)) => Some(sum),
            Some(Err(e)) => world.fail(e),
            None => None,
        };
        let (mut here, mut there) = (0.0f64, 0.0f64);
        let mut digest = 0u64;
        for len in LENGTHS {
            let mine = values(rank, len);
            let mut total = vec![f32::NAN; len];
            sum.sum_into(&mine, &mut total);
            here = here.max(worst(&total, ranks, len));
            digest = total.iter().fold(digest, |d, v| d.rotate_left(5) ^ u64::from(v.to_bits()));
            if let Some(threaded) = on_thread.take() {
                let (threaded, total) = std::thread::scope(|s| {
                    s.spawn(move || {
                        let mut threaded = threaded;
                        let mut total = vec![f32::NAN; len];
                        threaded.sum_into(&mine, &mut total);
                        (threaded, total)
                    })
                    .join()
                    .unwrap_or_else(|_| world.fail("the summing thread panicked"))
                });
                there = there.max(worst(&total, ranks, len));
                digest = total.iter().fold(digest, |d, v| d.rotate_left(5) ^ u64::from(v.to_bits()));
                on_thread = Some(threaded);
            }
        }
        line[exchange.to_string()] = serde_json::json!({ "worst": here, "worst_on_thread": there, "digest": digest });
    }
    println!("{line}");
}
