//! One box, start to finish: parameters drawn from the chosen priors,
//! initial conditions, displacements, one particle-count grid per redshift,
//! cut into sub-volumes whose channels are the redshifts. And the file
//! layout: file `f` holds samples `f*K .. (f+1)*K` of the global sample
//! order (box-major), so the output does not depend on how many ranks
//! wrote it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use formats::cosmoflow::{CosmoSample, CosmoShape};
use formats::tfrecord::{TfRecordError, TfRecordFileWriter};

use super::assign::{Assignment, assign, cut_into};
use super::cosmology::{Cosmology, EARLIEST_REDSHIFT};
use super::fft3::Fft3;
use super::field::{Displacements, FieldConfig, displacements, linear_modes};
use super::pm::{Particles, Stepper, step_boundaries};
use super::transfer::Transfer;
use crate::random::{Normals, mix};

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct CosmoConfig {
    /// Boxes to generate.
    pub boxes: usize,
    /// Count grid per side (before the split).
    pub grid: usize,
    /// Particles per side.
    pub particles: usize,
    /// Box side in Mpc/h.
    pub box_size: f64,
    /// Sub-volumes per side: split³ samples of (grid/split)³ per box.
    pub split: usize,
    /// Redshifts, one channel each.
    pub redshifts: Vec<f64>,
    /// Order of Lagrangian perturbation theory, 1 or 2.
    pub lpt: u8,
    /// Master seed.
    pub seed: u64,
    /// Mass assignment.
    pub assignment: Assignment,
    /// Samples per TFRecord file.
    pub samples_per_file: usize,
    /// GZIP-compress the files.
    pub gzip: bool,
    /// Where the target parameters are drawn from.
    pub priors: Priors,
    /// The matter transfer function of every box.
    pub transfer: Transfer,
    /// Particle-mesh steps after 2LPT (0: the boxes are 2LPT's).
    pub steps: usize,
    /// Where the particle-mesh steps start: the 2LPT initial conditions'
    /// redshift. Channels at this redshift or earlier are 2LPT's.
    pub start_redshift: f64,
}

/// FastPM's start, a = 0.1 (Feng et al. 2016, §4: ten steps from z = 9
/// reproduce the large-scale power to a per cent).
pub const DEFAULT_START_REDSHIFT: f64 = 9.0;

/// Closest mean particle spacing accepted, Mpc/h.
pub const MIN_SPACING: f64 = 0.5;
/// Widest mean particle spacing accepted, Mpc/h.
pub const MAX_SPACING: f64 = 100.0;

impl CosmoConfig {
    /// Why this configuration cannot run, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.boxes == 0 || self.particles == 0 || self.redshifts.is_empty() || self.samples_per_file == 0 {
            return Err("--boxes, --particles, --samples-per-file and --redshifts must be at least 1".into());
        }
        if self.grid == 0 {
            return Err("--grid must be at least 1".into());
        }
        if self.split == 0 || !self.grid.is_multiple_of(self.split) {
            return Err(format!("--grid {} is not divisible by --split {}", self.grid, self.split));
        }
        if self.assignment == Assignment::Cic {
            // CosmoFlow's samples hold int16 counts: CIC's fractional counts
            // rounded to them lose or gain mass (-5 % to +6 % per volume) and
            // put white noise into the large-scale power.
            return Err("--assignment cic: fractional counts cannot be stored as CosmoFlow's int16 counts without \
                        losing mass; use --assignment ngp"
                .into());
        }
        if !(1..=2).contains(&self.lpt) {
            return Err(format!("--lpt {} must be 1 or 2", self.lpt));
        }
        // Lagrangian perturbation theory (what simgen runs) describes the
        // large scales: with particles closer than half a megaparsec the
        // displacements cross many neighbours and the counts stop meaning
        // anything (at 1e-20 every particle lands in one voxel); boxes with
        // particles farther apart than 100 Mpc/h have no structure to learn.
        let spacing = self.box_size / self.particles as f64;
        if !(self.box_size.is_finite() && (MIN_SPACING..=MAX_SPACING).contains(&spacing)) {
            return Err(format!(
                "--box-size {} with --particles {} puts particles {spacing:.3} Mpc/h apart; simgen accepts {MIN_SPACING} to {MAX_SPACING} Mpc/h (--box-size {} to {} here)",
                self.box_size,
                self.particles,
                MIN_SPACING * self.particles as f64,
                MAX_SPACING * self.particles as f64
            ));
        }
        if let Some(z) = self.redshifts.iter().find(|z| !(**z >= 0.0 && **z <= EARLIEST_REDSHIFT)) {
            return Err(format!("redshift {z} must be a number from 0 to {EARLIEST_REDSHIFT}"));
        }
        if self.steps > 0 {
            if self.particles < 4 {
                return Err(format!(
                    "--steps needs --particles of at least 4 (the force mesh), not {}",
                    self.particles
                ));
            }
            if !(self.start_redshift > 0.0 && self.start_redshift <= EARLIEST_REDSHIFT) {
                return Err(format!(
                    "--start-redshift {} must be a number above 0 and at most {EARLIEST_REDSHIFT} (where the growth factors start)",
                    self.start_redshift
                ));
            }
        }
        if let Transfer::Table(table) = &self.transfer {
            // The box's highest mode, in the corner of the particle grid's
            // Fourier cube: a table that stops short would be extrapolated
            // where the field has power.
            let k_corner = 3f64.sqrt() * std::f64::consts::PI * self.particles as f64 / self.box_size;
            if table.k_max() < k_corner {
                return Err(format!(
                    "--transfer {} ends at k = {:.3} h/Mpc, but --particles {} in --box-size {} has modes up to k = {k_corner:.3} h/Mpc; \
                     write the table with a larger kmax (CAMB: transfer_kmax, CLASS: P_k_max_h/Mpc)",
                    table.source(),
                    table.k_max(),
                    self.particles,
                    self.box_size
                ));
            }
        }
        Ok(())
    }

    /// Memory one rank needs to generate a box, in bytes, roughly: the
    /// particle fields of 2LPT (about 24 f32 or complex values per
    /// particle: density, potentials, three displacement components per
    /// order, FFT scratch) and the count grids (f32 and int16 per voxel per
    /// redshift). With N-body steps, the particles' positions, momenta
    /// and forces and the force mesh's transforms come on top (110 bytes
    /// per particle measured at 256³, so 128 here). In f64, so absurd
    /// sizes do not overflow.
    pub fn memory_bytes(&self) -> f64 {
        let particles = (self.particles as f64).powi(3);
        let voxels = (self.grid as f64).powi(3) * self.redshifts.len() as f64;
        let per_particle = if self.steps > 0 { 128.0 } else { 96.0 };
        particles * per_particle + voxels * 6.0
    }

    /// Sub-volumes per box.
    pub fn samples_per_box(&self) -> usize {
        self.split.pow(3)
    }

    /// Total samples.
    pub fn samples(&self) -> usize {
        self.boxes * self.samples_per_box()
    }

    /// Number of files.
    pub fn files(&self) -> usize {
        self.samples().div_ceil(self.samples_per_file)
    }

    /// The sample shape.
    pub fn shape(&self) -> CosmoShape {
        CosmoShape { size: self.grid / self.split, channels: self.redshifts.len() }
    }

    /// File name of file `f`.
    pub fn file_name(&self, f: usize) -> String {
        format!("cosmo_{f:06}.tfrecord{}", if self.gzip { ".gz" } else { "" })
    }
}

/// The four target parameters, in the order of the sample's `y`.
pub const PARAMETER_NAMES: [&str; 4] = formats::cosmoflow::TARGET_NAMES;

/// Where the target parameters are drawn from: uniform ranges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Priors {
    /// Ω_m, σ8, n_s as in CosmoFlow (Mathuriya et al. 2018), h our choice:
    /// narrow ranges around Planck, as in the community's datasets.
    #[default]
    CosmoFlow,
    /// The Quijote Latin hypercube (Villaescusa-Navarro et al. 2020, ApJS
    /// 250, 2): five times wider in Ω_m, so small volumes tell far more.
    Quijote,
}

impl Priors {
    /// The name reports use.
    pub fn name(self) -> &'static str {
        match self {
            Priors::CosmoFlow => "cosmoflow",
            Priors::Quijote => "quijote",
        }
    }

    /// (low, high) of each parameter, in [`PARAMETER_NAMES`] order.
    pub fn ranges(self) -> [(f64, f64); 4] {
        match self {
            Priors::CosmoFlow => [(0.25, 0.35), (0.78, 0.95), (0.9, 1.0), (0.65, 0.75)],
            Priors::Quijote => [(0.1, 0.5), (0.6, 1.0), (0.8, 1.2), (0.5, 0.9)],
        }
    }

    /// A box's parameters, drawn uniformly from (seed, box).
    pub fn draw(self, seed: u64, box_index: usize) -> [f64; 4] {
        let mut draw = Normals::new(mix(seed, box_index as u64, 1));
        self.ranges().map(|(lo, hi)| lo + (hi - lo) * draw.uniform())
    }

    /// The parameters mapped to [-1, 1] (the sample's `y`).
    pub fn to_unit(self, p: [f64; 4]) -> [f32; 4] {
        let mut out = [0f32; 4];
        for (o, (v, (lo, hi))) in out.iter_mut().zip(p.iter().zip(self.ranges())) {
            *o = (2.0 * (v - lo) / (hi - lo) - 1.0) as f32;
        }
        out
    }

    /// The parameters back from a sample's `y`.
    pub fn from_unit(self, y: [f32; 4]) -> [f64; 4] {
        let mut p = [0f64; 4];
        for (o, (v, (lo, hi))) in p.iter_mut().zip(y.iter().zip(self.ranges())) {
            *o = lo + (f64::from(*v) + 1.0) / 2.0 * (hi - lo);
        }
        p
    }
}

/// Ω_b of every box (fixed, not a target).
pub const OMEGA_B: f64 = 0.049;

/// The cosmology of parameters `p`.
pub fn cosmology_of(p: [f64; 4]) -> Cosmology {
    Cosmology { omega_m: p[0], sigma_8: p[1], n_s: p[2], h: p[3], omega_b: OMEGA_B, t_cmb: 2.7255 }
}

/// One generated box.
pub struct GeneratedBox {
    /// Its sub-volumes in order.
    pub samples: Vec<CosmoSample>,
    /// Its parameters.
    pub parameters: [f64; 4],
    /// Voxels whose count exceeded int16.
    pub saturated: u64,
    /// Time spent in FFTs.
    pub fft_time: Duration,
    /// Total time.
    pub time: Duration,
    /// The full count grid of each redshift (for previews), if kept.
    pub grids: Vec<Vec<f32>>,
}

/// Generate box `box_index`; `keep_grids` keeps the full grids for previews.
pub fn generate_box(config: &CosmoConfig, box_index: usize, fft: &mut Fft3, keep_grids: bool) -> GeneratedBox {
    let started = Instant::now();
    fft.reset_time();
    let parameters = config.priors.draw(config.seed, box_index);
    let cosmology = cosmology_of(parameters);
    let shape = config.shape();
    let channels = config.redshifts.len();
    let mut xs = vec![vec![0i16; shape.voxels()]; config.samples_per_box()];
    let mut saturated = 0;
    let mut grids = Vec::new();
    let counts_per_channel = box_counts(config, &cosmology, box_index, fft);
    for (channel, counts) in counts_per_channel.into_iter().enumerate() {
        saturated += cut_into(&counts, config.grid, config.split, channel, channels, &mut xs);
        if keep_grids {
            grids.push(counts);
        }
    }
    let y = config.priors.to_unit(parameters);
    let samples = xs
        .into_iter()
        .filter_map(|x| CosmoSample::new(shape, x, y).ok()) // lengths match the shape by construction
        .collect();
    GeneratedBox { samples, parameters, saturated, fft_time: fft.time(), time: started.elapsed(), grids }
}

/// The particle-count grid (`config.grid`³, C order) of each of
/// `config.redshifts`, in order, of box `box_index` of `cosmology`: its
/// Gaussian initial conditions (seeded by the box), displacements by
/// `config.lpt`, and `config.steps` particle-mesh steps if any.
pub fn box_counts(config: &CosmoConfig, cosmology: &Cosmology, box_index: usize, fft: &mut Fft3) -> Vec<Vec<f32>> {
    let power = cosmology.linear_power_with(config.transfer.clone());
    let field = FieldConfig {
        n: config.particles,
        box_size: config.box_size,
        seed: mix(config.seed, box_index as u64, 0),
        fixed_amplitude: false,
    };
    let modes = linear_modes(&field, &power, fft);
    let disp = displacements(&modes, config.box_size, config.lpt, fft);
    drop(modes);
    counts_at_redshifts(config, cosmology, disp, fft)
}

/// The count grid of each of `config.redshifts`, in order: 2LPT's
/// particles, moved on by particle-mesh steps to the redshifts after
/// `config.start_redshift` when `config.steps` > 0.
fn counts_at_redshifts(
    config: &CosmoConfig,
    cosmology: &Cosmology,
    disp: Displacements,
    fft: &mut Fft3,
) -> Vec<Vec<f32>> {
    let lpt_counts = |z: f64| {
        let (d1, d2) = cosmology.growth(1.0 / (1.0 + z));
        assign(&disp, config.box_size, d1 as f32, d2 as f32, config.grid, config.assignment)
    };
    if config.steps == 0 {
        return config.redshifts.iter().map(|&z| lpt_counts(z)).collect();
    }
    let a_start = 1.0 / (1.0 + config.start_redshift);
    let outputs: Vec<f64> = config.redshifts.iter().map(|z| 1.0 / (1.0 + z)).collect();
    let boundaries = step_boundaries(a_start, &outputs, config.steps);
    // Channels in the order of time, so one run of steps passes them all.
    let mut by_time: Vec<usize> = (0..outputs.len()).collect();
    by_time.sort_by(|&i, &j| outputs[i].total_cmp(&outputs[j]));
    let mut counts: Vec<(usize, Vec<f32>)> = Vec::with_capacity(outputs.len());
    let mut particles = Particles::from_lpt(&disp, config.box_size, cosmology, a_start);
    let mut stepper = Stepper::new(cosmology, fft);
    for channel in by_time {
        let a = outputs[channel];
        if a <= a_start {
            counts.push((channel, lpt_counts(config.redshifts[channel])));
            continue;
        }
        // step_boundaries made `a` a boundary (or one within 1e-9 of it).
        let until: Vec<f64> = boundaries.iter().copied().filter(|&b| b <= a + 1e-9).collect();
        stepper.run(&mut particles, &until);
        counts.push((channel, particles.assign(config.grid, config.assignment)));
    }
    counts.sort_by_key(|(channel, _)| *channel);
    counts.into_iter().map(|(_, c)| c).collect()
}

/// Totals of a rank's files.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct WriteStats {
    /// Boxes generated (a box shared by two files counts twice).
    pub boxes: u64,
    /// Files written.
    pub files: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Saturated voxels.
    pub saturated: u64,
    /// Seconds in FFTs.
    pub fft_seconds: f64,
    /// Seconds generating boxes.
    pub box_seconds: f64,
}

/// Write file `f` into `dir`, generating the boxes it needs (the last
/// generated box is kept in `cache` for the next file). Written under a
/// temporary name and renamed, so a reader never sees half a file.
pub fn write_file(
    config: &CosmoConfig,
    f: usize,
    dir: &Path,
    fft: &mut Fft3,
    cache: &mut Option<(usize, GeneratedBox)>,
    stats: &mut WriteStats,
) -> Result<PathBuf, TfRecordError> {
    let path = dir.join(config.file_name(f));
    let mut writer = TfRecordFileWriter::create(&path, config.gzip, true)?;
    let per_box = config.samples_per_box();
    let first = f * config.samples_per_file;
    let last = ((f + 1) * config.samples_per_file).min(config.samples());
    for s in first..last {
        let b = s / per_box;
        if cache.as_ref().is_none_or(|(cached, _)| *cached != b) {
            let generated = generate_box(config, b, fft, false);
            stats.boxes += 1;
            stats.saturated += generated.saturated;
            stats.fft_seconds += generated.fft_time.as_secs_f64();
            stats.box_seconds += generated.time.as_secs_f64();
            *cache = Some((b, generated));
        }
        if let Some((_, generated)) = cache.as_ref() {
            writer.write_record(&generated.samples[s % per_box].to_example_bytes())?;
        }
    }
    writer.finish()?;
    stats.files += 1;
    stats.bytes += std::fs::metadata(&path).map_err(|source| TfRecordError::Io { path: path.clone(), source })?.len();
    Ok(path)
}

/// Write the files `files` (indices) into `dir` with one FFT plan and box
/// cache: what `simgen cosmo` runs on each rank over its share, and what
/// tests run on each thread. `written(f, names)` is told each file with the
/// names (relative to `dir`) it produced, the file and its index sidecar;
/// an error it returns stops the writing.
pub fn write_files<E: From<TfRecordError>>(
    config: &CosmoConfig,
    dir: &Path,
    files: impl IntoIterator<Item = usize>,
    mut written: impl FnMut(usize, [String; 2]) -> Result<(), E>,
) -> Result<WriteStats, E> {
    let (mut fft, mut cache, mut stats) = (Fft3::new(config.particles), None, WriteStats::default());
    for f in files {
        write_file(config, f, dir, &mut fft, &mut cache, &mut stats)?;
        let name = config.file_name(f);
        written(f, [name.clone(), format!("{name}.idx")])?;
    }
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_stay_in_their_priors_and_round_trip_through_y() {
        for priors in [Priors::CosmoFlow, Priors::Quijote] {
            for b in 0..200 {
                let p = priors.draw(3, b);
                let y = priors.to_unit(p);
                for (i, ((v, (lo, hi)), u)) in p.iter().zip(priors.ranges()).zip(y).enumerate() {
                    assert!((lo..=hi).contains(v), "{} {i}: {v}", priors.name());
                    assert!((-1.0..=1.0).contains(&u));
                    assert!((priors.from_unit(y)[i] - v).abs() < 1e-6 * (hi - lo));
                }
            }
        }
    }

    #[test]
    fn both_priors_draw_the_same_quantiles_so_only_the_ranges_differ() {
        // The default (CosmoFlow) draws must not change with the option's
        // arrival: datasets made before it stay reproducible.
        let (narrow, wide) = (Priors::CosmoFlow.draw(7, 11), Priors::Quijote.draw(7, 11));
        for (a, b) in Priors::CosmoFlow.to_unit(narrow).iter().zip(Priors::Quijote.to_unit(wide)) {
            assert!((a - b).abs() < 1e-6, "{a} vs {b}");
        }
        assert_eq!(Priors::default(), Priors::CosmoFlow);
    }
}
