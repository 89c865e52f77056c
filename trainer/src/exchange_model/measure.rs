//! The model's figures for a node, measured on the machine it runs on: the
//! latency and bandwidth between two ranks (an MPI ping-pong between
//! ranks 0 and 1, half the round trip) and the cost of summing bytes.

use std::time::Instant;

use cluster::World;
use mpi::traits::*;

use super::Link;

/// Round trips of the latency ping-pong (after as many untimed ones).
const SMALL_TRIPS: usize = 2000;
/// Bytes of the bandwidth ping-pong's messages.
const LARGE_BYTES: usize = 16 << 20;
/// Round trips of the bandwidth ping-pong (after one untimed one).
const LARGE_TRIPS: usize = 10;

/// Half the mean round trip of `trips` exchanges of `buffer` between ranks
/// 0 and 1 (the others wait). Collective.
fn half_round_trip(world: &World, buffer: &mut [u8], trips: usize) -> f64 {
    let comm = world.comm();
    let rank = world.rank();
    world.barrier();
    let started = Instant::now();
    for _ in 0..trips {
        match rank {
            0 => {
                comm.process_at_rank(1).send(&buffer[..]);
                comm.process_at_rank(1).receive_into(&mut buffer[..]);
            }
            1 => {
                comm.process_at_rank(0).receive_into(&mut buffer[..]);
                comm.process_at_rank(0).send(&buffer[..]);
            }
            _ => {}
        }
    }
    let mut seconds = started.elapsed().as_secs_f64() / trips as f64 / 2.0;
    comm.process_at_rank(0).broadcast_into(&mut seconds);
    seconds
}

/// The link between ranks 0 and 1 (of one node when they share one).
/// Collective; needs at least 2 ranks.
pub fn link(world: &World) -> Link {
    let mut small = [0u8; 8];
    half_round_trip(world, &mut small, SMALL_TRIPS);
    let latency = half_round_trip(world, &mut small, SMALL_TRIPS);
    let mut large = vec![1u8; LARGE_BYTES];
    half_round_trip(world, &mut large, 1);
    let large_secs = half_round_trip(world, &mut large, LARGE_TRIPS);
    Link { latency, secs_per_byte: (large_secs - latency).max(f64::MIN_POSITIVE) / LARGE_BYTES as f64 }
}

/// Seconds per byte of adding one buffer of f32 into another, as the
/// reduce-scatter does, over buffers larger than the caches. Rank 0's
/// figure, given to every rank. Collective.
pub fn reduce_secs_per_byte(world: &World) -> f64 {
    let values = LARGE_BYTES / 4;
    let (mut sum, part) = (vec![1f32; values], vec![0.5f32; values]);
    let rounds = 20;
    let started = Instant::now();
    for _ in 0..rounds {
        sum.iter_mut().zip(&part).for_each(|(s, p)| *s += p);
        std::hint::black_box(&mut sum);
    }
    let mut per_byte = started.elapsed().as_secs_f64() / (rounds * LARGE_BYTES) as f64;
    world.comm().process_at_rank(0).broadcast_into(&mut per_byte);
    per_byte
}
