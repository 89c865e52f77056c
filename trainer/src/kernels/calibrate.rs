//! The kernel path chosen by measurement: every version this CPU can run
//! ([`Candidate`]s: the [`KernelPath`]s it supports, and on AVX-512 both
//! kernels of the 3-D weight gradient) times one probe of our hottest
//! kernels, and the fastest runs from then on; the ranks of a job agree on
//! the one fastest on their slowest rank ([`calibrate_agreed`]).
//!
//! Every candidate gives the same bits (`tests/kernel_paths.rs` checks
//! it), so the choice changes only the speed. What a CPU's name says about its
//! vector units is a guess (Zen 4 runs 512-bit operations as two halves,
//! Zen 1 256-bit ones); a few milliseconds of measurement at start-up
//! settle it on the machine the run has.
//!
//! ```
//! use std::time::Duration;
//! use trainer::kernels::calibrate::{Candidate, measure};
//! use trainer::kernels::cpu::KernelPath;
//!
//! let candidates = [Candidate::of(KernelPath::Portable), Candidate::of(KernelPath::Avx2)];
//! // A timer that says the portable build takes 10 ms and AVX2 1 ms.
//! let measured = measure(&candidates, 5, |c| {
//!     Duration::from_millis(if c.path == KernelPath::Portable { 10 } else { 1 })
//! });
//! assert_eq!(measured.fastest(), Some(Candidate::of(KernelPath::Avx2)));
//! ```

use std::hint::black_box;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::batch_norm::{self, Layout};
use super::columns::Window;
use super::cpu::{self, ChosenBy, KernelPath};
use super::direct_conv::{self, ConvShape};
use super::{direct_conv2d, direct_weight_grad2d};

/// Rounds of the probe per candidate still in the race.
const ROUNDS: usize = 5;

/// A candidate whose first probe took longer than this many times the
/// fastest first probe is not timed again: it cannot win, and the
/// portable build (multiply-adds in software) is several times slower.
const HOPELESS: f64 = 3.0;

/// One version of the kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// The compiled path.
    pub path: KernelPath,
    /// On the AVX-512 path: the 3-D weight gradient's 3-tap blocks on the
    /// AVX2 kernel instead of the AVX-512 one.
    pub weight_grad_3d_on_avx2: bool,
}

impl Candidate {
    /// `path` with its own kernels throughout.
    pub fn of(path: KernelPath) -> Self {
        Candidate { path, weight_grad_3d_on_avx2: false }
    }

    /// Its name in reports: the path's (`STAGEHAND_KERNELS`), with
    /// `+avx2-wgrad3d` for the AVX-512 path that takes the AVX2 3-D weight
    /// gradient.
    pub fn name(&self) -> String {
        if self.weight_grad_3d_on_avx2 {
            format!("{}{}", self.path.name(), cpu::AVX2_WEIGHT_GRAD_3D)
        } else {
            self.path.name().to_string()
        }
    }

    /// The candidate that runs now.
    pub fn current() -> Self {
        let path = cpu::path();
        Candidate { path, weight_grad_3d_on_avx2: path == KernelPath::Avx512 && cpu::weight_grad_3d_on_avx2() }
    }

    /// Run the kernels as this candidate from now on, in the whole process
    /// (as [`cpu::force`] does for a path).
    pub fn force(self) -> Result<(), cpu::Unsupported> {
        self.apply(ChosenBy::Forced)
    }

    fn apply(self, how: ChosenBy) -> Result<(), cpu::Unsupported> {
        cpu::set(self.path, how)?;
        if self.path == KernelPath::Avx512 {
            cpu::set_weight_grad_3d_on_avx2(self.weight_grad_3d_on_avx2);
        }
        Ok(())
    }
}

/// Every candidate any CPU can have, narrowest first: the same list, in
/// the same order, on every rank, whatever its CPU runs.
pub fn all_candidates() -> Vec<Candidate> {
    let mut all = Vec::new();
    for path in KernelPath::ALL {
        all.push(Candidate::of(path));
        if path == KernelPath::Avx512 {
            all.push(Candidate { path, weight_grad_3d_on_avx2: true });
        }
    }
    all
}

/// Every candidate this CPU can run, narrowest first.
pub fn candidates() -> Vec<Candidate> {
    all_candidates().into_iter().filter(|c| c.path.supported()).collect()
}

/// The probe's times of each candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// Each candidate with the times of its probes (one if it was dropped
    /// after the first round).
    pub times: Vec<(Candidate, Vec<Duration>)>,
}

impl Measured {
    /// The candidate with the shortest median probe (the first of equals):
    /// the choice of a process on its own.
    pub fn fastest(&self) -> Option<Candidate> {
        let timed: Vec<Candidate> = self.times.iter().map(|(c, _)| *c).collect();
        fastest_on_the_slowest_rank(&timed, &self.median_ms(&timed))
    }

    /// The median probe of each of `slots` in milliseconds, infinite for
    /// one not timed (a path this CPU lacks).
    pub fn median_ms(&self, slots: &[Candidate]) -> Vec<f64> {
        slots
            .iter()
            .map(|slot| {
                let times = self.times.iter().find(|(c, _)| c == slot).map(|(_, t)| t.as_slice());
                times.and_then(median).map_or(f64::INFINITY, |m| m.as_secs_f64() * 1e3)
            })
            .collect()
    }
}

/// The slot whose time is shortest (the first of equals), given each
/// slot's time on the slowest rank: a synchronous step waits for its
/// slowest rank, so that is the time that counts. None if every time is
/// infinite.
pub fn fastest_on_the_slowest_rank(slots: &[Candidate], slowest_ms: &[f64]) -> Option<Candidate> {
    let mut best: Option<(Candidate, f64)> = None;
    for (&slot, &ms) in slots.iter().zip(slowest_ms) {
        if ms.is_finite() && best.is_none_or(|(_, b)| ms < b) {
            best = Some((slot, ms));
        }
    }
    best.map(|(c, _)| c)
}

/// The median of `times` (the lower of the middle two for an even count);
/// none of none.
fn median(times: &[Duration]) -> Option<Duration> {
    let mut sorted = times.to_vec();
    sorted.sort_unstable();
    sorted.get(sorted.len().saturating_sub(1) / 2).copied()
}

/// Times each of `candidates` with `time` (which runs the probe as that
/// candidate and says how long it took), `rounds` rounds taking the
/// candidates in turn, so that a change of the machine's speed during the
/// measurement falls on all of them; after the first round only those
/// within [`HOPELESS`] times the fastest go on.
///
/// Each candidate runs once untimed before the first round: a kernel's
/// first run pays for its own buffers' first page faults and anything it
/// sets up once. Timed, that one run could make a candidate hopeless, a
/// median of one: the AVX-512 3-D weight gradient's first probe, many
/// times its usual, once made the calibration choose the slower kernel
/// for a whole run (`docs/benchmarks.md`, Etalumis).
pub fn measure(candidates: &[Candidate], rounds: usize, mut time: impl FnMut(Candidate) -> Duration) -> Measured {
    for &candidate in candidates {
        time(candidate);
    }
    let mut times: Vec<(Candidate, Vec<Duration>)> = candidates.iter().map(|&c| (c, vec![time(c)])).collect();
    let first_best = times.iter().map(|(_, t)| t[0]).min().unwrap_or_default();
    let racing: Vec<usize> =
        (0..times.len()).filter(|&i| times[i].1[0].as_secs_f64() <= HOPELESS * first_best.as_secs_f64()).collect();
    for _ in 1..rounds {
        for &i in &racing {
            let took = time(times[i].0);
            times[i].1.push(took);
        }
    }
    Measured { times }
}

/// What runs, how it was chosen, and what the measurement found.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct KernelChoice {
    /// The candidate that runs ([`Candidate::name`]).
    pub path: String,
    /// How it was chosen.
    pub chosen_by: ChosenBy,
    /// The median probe of each candidate in milliseconds, when measured:
    /// on the slowest of the ranks that measured, for each candidate.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub probe_ms: Vec<ProbeTime>,
    /// Ranks whose measurements decided, all of which run the same
    /// candidate (1 for a process on its own).
    pub ranks: usize,
}

/// One candidate's median probe.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ProbeTime {
    /// [`Candidate::name`].
    pub candidate: String,
    /// Milliseconds, the median of its probes.
    pub ms: f64,
    /// Probes timed.
    pub probes: usize,
}

impl KernelChoice {
    /// One line for a log: `avx2 (measured: avx2 0.42 ms, portable 11.3 ms a probe)`.
    pub fn line(&self) -> String {
        let how = match self.chosen_by {
            ChosenBy::Widest => "the widest this CPU has".to_string(),
            ChosenBy::Forced => format!("forced by {} or the caller", cpu::KERNELS_ENV),
            ChosenBy::Measured => {
                let times: Vec<String> =
                    self.probe_ms.iter().map(|p| format!("{} {:.2} ms", p.candidate, p.ms)).collect();
                let ranks =
                    if self.ranks > 1 { format!(" on the slowest of {} ranks", self.ranks) } else { String::new() };
                format!("measured: {} a probe{ranks}", times.join(", "))
            }
        };
        format!("{} ({how})", self.path)
    }
}

/// The measurement, once made.
static MEASURED: OnceLock<KernelChoice> = OnceLock::new();

/// What runs now and how it was chosen.
pub fn choice() -> KernelChoice {
    let current = Candidate::current();
    match (cpu::chosen_by(), MEASURED.get()) {
        (ChosenBy::Measured, Some(measured)) if measured.path == current.name() => measured.clone(),
        (how, _) => KernelChoice {
            path: current.name(),
            chosen_by: if how == ChosenBy::Measured { ChosenBy::Forced } else { how },
            probe_ms: Vec::new(),
            ranks: 1,
        },
    }
}

/// Measure every candidate this CPU can run and run the fastest from now
/// on, once per process; a path forced already (`STAGEHAND_KERNELS`,
/// [`cpu::force`]) stays. Switches the process's path while it measures:
/// call it before training starts. A few milliseconds on a vector path;
/// the portable build's two probes (one untimed) are most of it.
pub fn calibrate() -> KernelChoice {
    calibrate_agreed(1, |_| {})
}

/// As [`calibrate`], on each of `ranks` ranks that train together, which
/// then all run one candidate: `slowest(ms)` must replace each of
/// [`all_candidates`]' median probes (infinite where not timed, 0 on a
/// rank whose path is forced) with the largest over the ranks, as an
/// allreduce with `max` does; the candidate fastest on its slowest rank
/// wins. Ranks left to choose apart on a close measurement could run at
/// different speeds, and a synchronous step waits for the slower. Every
/// rank calls it, once.
pub fn calibrate_agreed(ranks: usize, slowest: impl FnOnce(&mut [f64])) -> KernelChoice {
    if cpu::chosen_by() == ChosenBy::Forced {
        // Still in the collective, adding nothing to the others' maxima.
        slowest(&mut vec![0.0; all_candidates().len()]);
        return choice();
    }
    MEASURED.get_or_init(|| measure_this_cpu(ranks, slowest)).clone()
}

fn measure_this_cpu(ranks: usize, slowest: impl FnOnce(&mut [f64])) -> KernelChoice {
    let all = candidates();
    let probe = Probe::new();
    let measured = measure(&all, ROUNDS, |candidate| {
        // Every candidate is one this CPU supports (`candidates`).
        if candidate.apply(ChosenBy::Measured).is_err() {
            return Duration::MAX;
        }
        let started = Instant::now();
        probe.run();
        started.elapsed()
    });
    let slots = all_candidates();
    let mut slowest_ms = measured.median_ms(&slots);
    slowest(&mut slowest_ms);
    // Every rank timed the portable build, so one time at least is finite.
    let winner = fastest_on_the_slowest_rank(&slots, &slowest_ms).unwrap_or(Candidate::of(KernelPath::Portable));
    // The winner has a finite time on every rank, so every rank timed it:
    // it is one of `candidates()`, which this CPU supports.
    let _ = winner.apply(ChosenBy::Measured);
    KernelChoice {
        path: winner.name(),
        chosen_by: ChosenBy::Measured,
        probe_ms: measured
            .times
            .iter()
            .filter_map(|(c, t)| {
                let slot = slots.iter().position(|s| s == c)?;
                Some(ProbeTime { candidate: c.name(), ms: slowest_ms[slot], probes: t.len() })
            })
            .collect(),
        ranks,
    }
}

/// Inputs of one run of the kernels that take most of our models' steps:
/// a 3-D convolution's three passes (CosmoFlow, Etalumis: rows 31 wide,
/// as Etalumis' largest layer, so a row ends in a partial chunk), a 2-D
/// direct convolution and its weight gradient (the segmentation networks),
/// batch normalisation's statistics and backward sums. Small, so that the
/// portable build's single probe stays in the tens of milliseconds, but
/// with enough channels and batch that the two 3-D weight gradients of the
/// AVX-512 path differ beyond the noise: at batch 1, 4 → 16 channels,
/// they timed the same, and the probe chose between them by chance.
struct Probe {
    shape3: ConvShape,
    x3: Vec<f32>,
    w3: Vec<f32>,
    g3: Vec<f32>,
    dims2: [usize; 4],
    c_out2: usize,
    window2: Window,
    x2: Vec<f32>,
    w2: Vec<f32>,
    g2: Vec<f32>,
    norm: Layout,
    x_norm: Vec<f32>,
    dy_norm: Vec<f32>,
}

impl Probe {
    fn new() -> Self {
        let shape3 = ConvShape { batch: 2, c_in: 8, c_out: 16, volume: [4, 8, 31], kernel: 3 };
        let (dims2, c_out2) = ([1, 8, 16, 64], 8);
        let window2 = Window { kernel: [3, 3], stride: [1, 1], padding: [1, 1], dilation: [1, 1] };
        let norm = Layout { samples: 2, channels: 16, positions: 1024, groups: 1 };
        let norm_len = norm.samples * norm.channels * norm.positions;
        Probe {
            shape3,
            x3: values(shape3.input_len(), 1),
            w3: values(shape3.weight_len(), 2),
            g3: values(shape3.output_len(), 3),
            dims2,
            c_out2,
            window2,
            x2: values(dims2.iter().product(), 4),
            w2: values(c_out2 * dims2[1] * 9, 5),
            g2: values(dims2[0] * c_out2 * dims2[2] * dims2[3], 6),
            norm,
            x_norm: values(norm_len, 7),
            dy_norm: values(norm_len, 8),
        }
    }

    fn run(&self) {
        let s = &self.shape3;
        black_box(direct_conv::forward(s, &self.x3, &self.w3, None));
        black_box(direct_conv::input_grad(s, &self.w3, &self.g3));
        black_box(direct_conv::weight_grad(s, &self.x3, &self.g3));
        let out2 = [self.dims2[2], self.dims2[3]];
        black_box(direct_conv2d::forward(&self.x2, self.dims2, &self.w2, self.c_out2, &self.window2, out2));
        black_box(direct_weight_grad2d::weight_grad(&self.x2, self.dims2, &self.g2, self.c_out2, &self.window2, out2));
        let (mean, variance) = batch_norm::statistics(&self.x_norm, self.norm);
        let gamma = vec![1.0; self.norm.channels];
        black_box(batch_norm::backward(&self.x_norm, &self.dy_norm, self.norm, (&mean, &variance), (&gamma, 1e-5)));
    }
}

/// `n` values in [-1, 1) from a xorshift generator seeded by `seed`: the
/// calibration's operands, and the kernel-path tests' (the same inputs the
/// paths were timed on).
pub fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 20_001) as f32 / 10_000.0 - 1.0
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_candidate_with_the_shortest_median_probe_wins_whatever_its_outliers() {
        let (a, b) = (Candidate::of(KernelPath::Avx2), Candidate::of(KernelPath::Avx512));
        // b's one slow probe (the machine busy) does not move its median.
        let mut b_times = [ms(2), ms(2), ms(40), ms(2), ms(2)].into_iter();
        let measured = measure(&[a, b], 5, |c| if c == a { ms(3) } else { b_times.next().unwrap_or(ms(2)) });
        assert_eq!(measured.fastest(), Some(b));
        assert_eq!(measured.times[1].1.len(), 5);
    }

    #[test]
    fn a_candidate_far_slower_than_the_best_in_the_first_round_is_not_timed_again() {
        let (slow, fast) = (Candidate::of(KernelPath::Portable), Candidate::of(KernelPath::Avx2));
        let mut timed = Vec::new();
        let measured = measure(&[slow, fast], 5, |c| {
            timed.push(c);
            if c == slow { ms(31) } else { ms(10) }
        });
        // One untimed run each, then the rounds.
        assert_eq!(timed.iter().filter(|&&c| c == slow).count(), 1 + 1);
        assert_eq!(timed.iter().filter(|&&c| c == fast).count(), 1 + 5);
        assert_eq!(measured.fastest(), Some(fast));
        // Within the margin it stays in the race.
        let close = measure(&[slow, fast], 5, |c| if c == slow { ms(29) } else { ms(10) });
        assert_eq!(close.times[0].1.len(), 5);
    }

    #[test]
    fn a_slow_first_run_does_not_make_a_candidate_hopeless() {
        let (a, b) = (Candidate::of(KernelPath::Avx2), Candidate::of(KernelPath::Avx512));
        // b's first run pays a one-time cost 20 times its probe.
        let mut b_runs = 0;
        let measured = measure(&[a, b], 5, |c| {
            if c == a {
                return ms(3);
            }
            b_runs += 1;
            if b_runs == 1 { ms(40) } else { ms(2) }
        });
        assert_eq!(measured.fastest(), Some(b));
        assert_eq!(measured.times[1].1, vec![ms(2); 5]);
    }

    #[test]
    fn equal_medians_keep_the_first_candidate_and_nothing_measured_gives_none() {
        let (a, b) = (Candidate::of(KernelPath::Avx2), Candidate::of(KernelPath::Avx512));
        assert_eq!(measure(&[a, b], 3, |_| ms(5)).fastest(), Some(a));
        assert_eq!(measure(&[], 3, |_| ms(5)).fastest(), None);
        assert_eq!(median(&[ms(4), ms(1), ms(3), ms(2)]), Some(ms(2)));
    }

    /// Ranks that would each choose their own fastest run the candidate
    /// whose slowest rank is fastest; one a rank could not time never wins.
    #[test]
    fn the_ranks_agree_on_the_candidate_fastest_on_its_slowest_rank() {
        let slots = all_candidates();
        let (portable, avx2, avx512) = (0, 1, 2);
        let slot = |i: usize| slots[i];
        // Rank A alone would take AVX2 (1 ms), rank B AVX-512 (2 ms).
        let a = [10.0, 1.0, 2.5, 2.6];
        let b = [10.0, 3.0, 2.0, f64::INFINITY];
        let slowest: Vec<f64> = a.iter().zip(&b).map(|(x, y): (&f64, &f64)| x.max(*y)).collect();
        assert_eq!(fastest_on_the_slowest_rank(&slots, &slowest), Some(slot(avx512)));
        // A rank without AVX-512 (infinite) leaves the others AVX2.
        assert_eq!(fastest_on_the_slowest_rank(&slots, &[10.0, 3.0, f64::INFINITY, f64::INFINITY]), Some(slot(avx2)));
        assert_eq!(fastest_on_the_slowest_rank(&slots, &[5.0, 5.0, 5.0, 5.0]), Some(slot(portable)));
        assert_eq!(fastest_on_the_slowest_rank(&slots, &[f64::INFINITY; 4]), None);
    }

    #[test]
    fn the_medians_fill_the_slots_of_every_candidate_and_infinity_where_none_was_timed() {
        let slots = all_candidates();
        let measured = Measured { times: vec![(slots[1], vec![ms(3), ms(1), ms(2)]), (slots[0], vec![ms(20)])] };
        let got = measured.median_ms(&slots);
        assert_eq!(got.len(), slots.len());
        assert_eq!((got[0], got[1]), (20.0, 2.0));
        assert!(got[2..].iter().all(|m| m.is_infinite()), "{got:?}");
    }

    #[test]
    fn every_supported_path_is_a_candidate_and_avx512_twice() {
        let all = candidates();
        for path in KernelPath::ALL {
            let of_path = all.iter().filter(|c| c.path == path).count();
            let expected = match (path.supported(), path) {
                (false, _) => 0,
                (true, KernelPath::Avx512) => 2,
                (true, _) => 1,
            };
            assert_eq!(of_path, expected, "{path:?}");
        }
        let names: Vec<String> = all.iter().map(Candidate::name).collect();
        assert_eq!(names[0], "portable");
        if KernelPath::Avx512.supported() {
            assert!(names.contains(&"avx512+avx2-wgrad3d".to_string()), "{names:?}");
        }
    }

    #[test]
    fn the_log_line_names_the_path_and_each_measured_candidate() {
        let choice = KernelChoice {
            path: "avx2".into(),
            chosen_by: ChosenBy::Measured,
            probe_ms: vec![
                ProbeTime { candidate: "portable".into(), ms: 11.25, probes: 1 },
                ProbeTime { candidate: "avx2".into(), ms: 0.4201, probes: 5 },
            ],
            ranks: 1,
        };
        assert_eq!(choice.line(), "avx2 (measured: portable 11.25 ms, avx2 0.42 ms a probe)");
        let json = serde_json::to_value(&choice).unwrap();
        assert_eq!(json["chosen_by"], "measured");
        assert_eq!(json["probe_ms"][1]["probes"], 5);
        let agreed = KernelChoice { ranks: 4, ..choice };
        assert_eq!(agreed.line(), "avx2 (measured: portable 11.25 ms, avx2 0.42 ms a probe on the slowest of 4 ranks)");
    }
}
