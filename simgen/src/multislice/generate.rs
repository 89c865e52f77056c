//! One scattering sample from a run's configuration and the sample's index:
//! the specimen variation it draws, the CBED stack over its scan (or the
//! HRTEM image), and its target image.
//!
//! Every sample draws from its own random streams (`random::mix(seed,
//! index, stream)`), so its bytes are the same whichever rank makes it.
//! Work that does not depend on the probe position (potential slices,
//! transmission functions, propagator, FFT plans) is done once per sample
//! and phonon configuration; the positions then run in parallel.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rayon::prelude::*;
use rustfft::num_complex::Complex32;

use super::crystal::{Crystal, CrystalError, OrthogonalCell};
use super::debye_waller;
use super::elements::Element;
use super::fft2::Fft2;
use super::grid::Grid;
use super::optics::{Beam, EnergyOutOfRange};
use super::potential::{FactorTables, Target, elements_of, project, slice_potentials};
use super::specimen::{Specimen, SpecimenError, fit_axis, slice_count};
use super::wave::{Probe, Slices, add_pattern, lens_image, probe_at};
use crate::random::{Normals, mix};

/// What each sample records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A focused probe scanned over the specimen; one diffraction pattern
    /// per position.
    Cbed,
    /// A plane wave and the objective lens: one bright-field image.
    Hrtem,
}

/// RMS thermal displacement per axis of an element neither the structure
/// nor the elemental table gives one for, Å: silicon's (0.0766 Å in
/// [`debye_waller`]), the value the command line has always defaulted to.
pub const DEFAULT_PHONON_SIGMA: f64 = 0.076;

/// A multislice run, as the command line gives it.
#[derive(Debug, Clone)]
pub struct MultisliceConfig {
    /// The crystal.
    pub crystal: Crystal,
    /// Zone axis `[u v w]` along the beam.
    pub zone: [i32; 3],
    /// Largest random specimen tilt, rad (0: none).
    pub max_tilt: f64,
    /// Whether each sample shifts the crystal by a random lateral offset
    /// (uniform over one cell), or keeps it where the cell puts it.
    pub random_offset: bool,
    /// Thickness range, Å (equal ends: fixed).
    pub thickness: (f64, f64),
    /// The beam.
    pub beam: Beam,
    /// Probe-forming lens (CBED) or objective lens (HRTEM): aperture
    /// semi-angle and aberrations.
    pub lens: Probe,
    /// Pixels per side.
    pub grid: usize,
    /// Requested pixel size, Å.
    pub sampling: f64,
    /// How far (relative) the sampling fitted to whole cells may stray from
    /// `sampling` ([`super::specimen::SAMPLING_TOLERANCE`] unless a list of many cells
    /// needs more).
    pub sampling_tolerance: f64,
    /// Requested slice thickness, Å.
    pub slice: f64,
    /// Probe positions along x and y over one cell.
    pub scan: (usize, usize),
    /// Frozen-phonon configurations averaged per sample (0: atoms at rest).
    pub phonons: usize,
    /// RMS thermal displacement per axis, Å, of each element the crystal
    /// gives none for (of every element unless `crystal_thermal`).
    pub phonon_sigma: f64,
    /// Take each element's displacement from the crystal where it gives
    /// one (a CIF's `_atom_site_U_iso_or_equiv` or `_B_iso_or_equiv`).
    pub crystal_thermal: bool,
    /// The target image.
    pub target: Target,
    /// CBED or HRTEM.
    pub mode: Mode,
    /// Run seed.
    pub seed: u64,
}

/// A configuration that cannot run.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Crystal or zone axis.
    #[error(transparent)]
    Crystal(#[from] CrystalError),
    /// Grid or thickness.
    #[error(transparent)]
    Specimen(#[from] SpecimenError),
    /// Beam energy.
    #[error(transparent)]
    Energy(#[from] EnergyOutOfRange),
    /// A slice thicker than the thinnest specimen.
    #[error("--slice {slice} Å is thicker than the specimen ({thickness} Å)")]
    SliceTooThick {
        /// Slice asked for.
        slice: f64,
        /// Thinnest specimen.
        thickness: f64,
    },
    /// A thickness range upside down or not positive.
    #[error("thickness range {0} .. {1} Å must be positive and increasing")]
    ThicknessRange(f64, f64),
    /// The aperture reaches past the band limit of the grid.
    #[error(
        "the {semiangle_mrad} mrad aperture reaches past this grid's band limit ({max_mrad:.1} mrad at {sampling:.4} Å/pixel): \
         use a finer --sampling"
    )]
    ApertureBeyondBand {
        /// Aperture asked for.
        semiangle_mrad: f64,
        /// Largest angle the grid holds.
        max_mrad: f64,
        /// Pixel size.
        sampling: f64,
    },
    /// More memory than the machine has.
    #[error(
        "--grid {grid} with {slices} slices and {positions} positions needs about {needed_gib:.1} GiB per rank; \
         this machine has {available_gib:.1} GiB available"
    )]
    Memory {
        /// Pixels per side.
        grid: usize,
        /// Slices of the thickest specimen.
        slices: usize,
        /// Positions per sample.
        positions: usize,
        /// What a sample needs.
        needed_gib: f64,
        /// What the machine has.
        available_gib: f64,
    },
    /// Grid size outside what makes sense.
    #[error("--grid {0} must be between 16 and 8192")]
    GridSize(usize),
    /// A scan with no positions, or an aperture that is not positive.
    #[error("{0}")]
    Invalid(&'static str),
}

/// A configuration checked and resolved: the cell, the repeats and the grid.
pub struct Plan {
    /// The configuration.
    pub config: MultisliceConfig,
    /// The orthogonal cell along the zone axis.
    pub cell: OrthogonalCell,
    /// Cells across x and y.
    pub repeats: [usize; 2],
    /// The grid (its sampling fitted to whole cells).
    pub grid: Grid,
    /// Each element's RMS thermal displacement per axis, Å, and whether
    /// the crystal gave it.
    pub thermal: Vec<Thermal>,
    potential_tables: FactorTables,
    target_tables: FactorTables,
}

/// A configuration's crystal on its grid: [`MultisliceConfig::layout`].
#[derive(Debug, Clone)]
pub struct Layout {
    /// The orthogonal cell along the zone axis.
    pub cell: OrthogonalCell,
    /// Cells across x and y.
    pub repeats: [usize; 2],
    /// The grid (its sampling fitted to whole cells).
    pub grid: Grid,
    /// Each element's RMS thermal displacement per axis, in the order of
    /// the cell's elements.
    pub thermal: Vec<Thermal>,
}

/// One element's thermal vibration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thermal {
    /// The element.
    pub element: Element,
    /// RMS displacement per axis, Å.
    pub sigma: f64,
    /// Where `sigma` came from.
    pub source: ThermalSource,
}

/// Where an element's thermal displacement came from, in the order the
/// plan looks (unless `crystal_thermal` is off: then always `Given`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThermalSource {
    /// The crystal's own refinement (its CIF's U_iso or B_iso).
    Crystal,
    /// Peng et al. (1996)'s table, for a crystal of that one element.
    ElementalTable,
    /// `phonon_sigma`.
    Given,
}

/// σ of an element of `thermal` (every element of the specimen has one:
/// the plan makes `thermal` from the specimen's elements).
fn sigma_lookup(thermal: &[Thermal]) -> impl Fn(Element) -> f64 + '_ {
    |element| thermal.iter().find(|t| t.element == element).map_or(0.0, |t| t.sigma)
}

/// Bytes one sample holds at its peak: the potential slices (f32) and
/// transmission functions (complex f32) of the thickest specimen and the
/// pattern stack (each thread's wave and scratch, a few planes, aside).
fn sample_bytes(grid: usize, slices: usize, positions: usize) -> u64 {
    let plane = (grid * grid) as u64;
    slices as u64 * plane * (4 + 8) + positions as u64 * plane * 4
}

impl MultisliceConfig {
    /// Probe positions per sample (1 in HRTEM mode).
    pub fn positions(&self) -> usize {
        match self.mode {
            Mode::Cbed => self.scan.0 * self.scan.1,
            Mode::Hrtem => 1,
        }
    }

    /// Check everything that can be checked before a sample is made and
    /// build the scattering-factor tables the samples share.
    pub fn plan(self) -> Result<Plan, ConfigError> {
        let Layout { cell, repeats, grid, thermal } = self.layout()?;
        let elements = thermal.iter().map(|t| t.element).collect::<Vec<_>>();
        let potential_tables = FactorTables::new(grid, Target::Potential, elements.iter().copied());
        let target_tables = FactorTables::thermal(grid, self.target, elements, &sigma_lookup(&thermal));
        Ok(Plan { config: self, cell, repeats, grid, thermal, potential_tables, target_tables })
    }

    /// Check everything that can be checked before a sample is made, and
    /// lay the crystal out on the grid, without the tables [`Self::plan`]
    /// builds (n² per element): a structure list checks every pair first.
    pub fn layout(&self) -> Result<Layout, ConfigError> {
        if !(16..=8192).contains(&self.grid) {
            return Err(ConfigError::GridSize(self.grid));
        }
        let (lo, hi) = self.thickness;
        if !(lo > 0.0 && hi >= lo && hi.is_finite()) {
            return Err(ConfigError::ThicknessRange(lo, hi));
        }
        if slice_count(lo, self.slice).is_none() {
            return Err(ConfigError::SliceTooThick { slice: self.slice, thickness: lo });
        }
        if self.scan.0 == 0 || self.scan.1 == 0 {
            return Err(ConfigError::Invalid("--scan needs at least one position along each axis"));
        }
        if !(self.lens.semiangle > 0.0 && self.lens.semiangle.is_finite()) {
            return Err(ConfigError::Invalid("--semiangle must be positive"));
        }
        if !(self.phonon_sigma >= 0.0 && self.phonon_sigma.is_finite() && self.max_tilt >= 0.0) {
            return Err(ConfigError::Invalid("--phonon-sigma and --tilt-mrad must be >= 0"));
        }
        let cell = self.crystal.orthogonal_cell(self.zone)?;
        if !(self.sampling_tolerance >= 0.0 && self.sampling_tolerance.is_finite()) {
            return Err(ConfigError::Invalid("--sampling-tolerance must be a fraction >= 0"));
        }
        let (rx, dx) = fit_axis(cell.lengths[0], self.grid, self.sampling, self.sampling_tolerance)?;
        let (ry, dy) = fit_axis(cell.lengths[1], self.grid, self.sampling, self.sampling_tolerance)?;
        let grid = Grid { n: self.grid, dx, dy };
        let max = grid.max_angle(self.beam.wavelength());
        if self.lens.semiangle > max {
            return Err(ConfigError::ApertureBeyondBand {
                semiangle_mrad: self.lens.semiangle * 1e3,
                max_mrad: max * 1e3,
                sampling: dx.max(dy),
            });
        }
        // Before the tables (themselves n² per element), so a size the
        // machine cannot hold fails with one line, not an allocation failure.
        let needed = sample_bytes(self.grid, slice_count(hi, self.slice).unwrap_or(1), self.positions());
        if let Some(available) = cluster::memory::available_bytes()
            && needed > available
        {
            let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
            return Err(ConfigError::Memory {
                grid: self.grid,
                slices: slice_count(hi, self.slice).unwrap_or(1),
                positions: self.positions(),
                needed_gib: gib(needed),
                available_gib: gib(available),
            });
        }
        let elements = elements_of(&cell.atoms);
        let thermal: Vec<Thermal> = elements
            .iter()
            .map(|&element| {
                let refined = self.crystal.thermal.iter().find(|(e, _)| *e == element).map(|&(_, sigma)| sigma);
                // The table is of elemental crystals: an atom in a compound
                // vibrates differently (see `debye_waller`).
                let tabulated = (elements.len() == 1).then(|| debye_waller::elemental_sigma(element)).flatten();
                match (self.crystal_thermal, refined, tabulated) {
                    (true, Some(sigma), _) => Thermal { element, sigma, source: ThermalSource::Crystal },
                    (true, None, Some(sigma)) => Thermal { element, sigma, source: ThermalSource::ElementalTable },
                    _ => Thermal { element, sigma: self.phonon_sigma, source: ThermalSource::Given },
                }
            })
            .collect();
        Ok(Layout { cell, repeats: [rx, ry], grid, thermal })
    }
}

/// How one sample's specimen varies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Variation {
    /// Tilt about y and x, rad.
    pub tilt: [f64; 2],
    /// Lateral offset of the crystal, Å.
    pub offset: [f64; 2],
    /// Thickness, Å.
    pub thickness: f64,
}

/// One generated sample.
pub struct Sample {
    /// Patterns (or the image), position-major, each `[ky][kx]` centred.
    pub cbed: Vec<f32>,
    /// Target image `[y][x]`.
    pub target: Vec<f32>,
    /// What it drew.
    pub variation: Variation,
    /// Slices it was cut into.
    pub slices: usize,
    /// Time in FFTs, summed over threads.
    pub fft_time: Duration,
    /// Time building potentials and transmission functions (wall).
    pub setup_time: Duration,
    /// Time propagating probes (wall).
    pub scan_time: Duration,
}

impl Plan {
    /// Probe positions per sample (1 in HRTEM mode).
    pub fn positions(&self) -> usize {
        self.config.positions()
    }

    /// The scan positions, Å: one cell in the middle of the field,
    /// `scan.0 × scan.1` points (endpoint excluded), row by row.
    pub fn scan_positions(&self) -> Vec<[f64; 2]> {
        let (nx, ny) = self.config.scan;
        let [lx, ly] = [self.cell.lengths[0], self.cell.lengths[1]];
        let origin = [(self.repeats[0] / 2) as f64 * lx, (self.repeats[1] / 2) as f64 * ly];
        (0..ny)
            .flat_map(|j| {
                (0..nx).map(move |i| [origin[0] + i as f64 * lx / nx as f64, origin[1] + j as f64 * ly / ny as f64])
            })
            .collect()
    }

    /// Sample `index`'s variation, from its own stream.
    pub fn variation(&self, index: u64) -> Variation {
        let mut draw = Normals::new(mix(self.config.seed, index, 1));
        // Uniform in the disc of the largest tilt.
        let (r, phi) = (self.config.max_tilt * draw.uniform().sqrt(), 2.0 * std::f64::consts::PI * draw.uniform());
        let mut offset = [draw.uniform() * self.cell.lengths[0], draw.uniform() * self.cell.lengths[1]];
        // Drawn either way, so the same seed gives the same tilts and
        // thicknesses with and without offsets.
        if !self.config.random_offset {
            offset = [0.0, 0.0];
        }
        let (lo, hi) = self.config.thickness;
        let thickness = lo + (hi - lo) * draw.uniform();
        Variation { tilt: [r * phi.cos(), r * phi.sin()], offset, thickness }
    }

    /// The specimen (at rest) a sample of `variation` images.
    pub fn specimen(&self, variation: &Variation) -> Result<Specimen, ConfigError> {
        let mut specimen = Specimen::build(&self.cell, self.repeats, variation.thickness)?;
        specimen.shift(variation.offset[0], variation.offset[1]);
        Ok(specimen)
    }

    /// Make sample `index` on the current rayon pool.
    pub fn sample(&self, index: u64) -> Result<Sample, ConfigError> {
        let c = &self.config;
        let n = self.grid.n;
        let variation = self.variation(index);
        let specimen = self.specimen(&variation)?;
        let count = slice_count(variation.thickness, c.slice)
            .ok_or(ConfigError::SliceTooThick { slice: c.slice, thickness: variation.thickness })?;
        let dz = variation.thickness / count as f64;
        let target = project(&specimen.atoms, &self.target_tables, &mut self.target_tables.fft());
        let positions = self.positions();
        let mut cbed = vec![0f32; positions * n * n];
        let configurations = c.phonons.max(1);
        let weight = 1.0 / configurations as f32;
        let mut phonon_draw = Normals::new(mix(c.seed, index, 2));
        let fft_nanos = AtomicU64::new(0);
        let (mut setup_time, mut scan_time) = (Duration::ZERO, Duration::ZERO);
        let probe = (c.mode == Mode::Cbed).then(|| c.lens.spectrum(c.beam, self.grid));
        let scan = self.scan_positions();
        for _ in 0..configurations {
            let started = Instant::now();
            let frozen = if c.phonons > 0 {
                specimen.displaced(&sigma_lookup(&self.thermal), &mut phonon_draw)
            } else {
                specimen.clone()
            };
            let potentials = slice_potentials(&frozen, &self.potential_tables, count);
            let slices = Slices::new(&potentials, dz, c.beam, self.grid, variation.tilt);
            drop(potentials);
            setup_time += started.elapsed();
            let started = Instant::now();
            let grid = self.grid;
            cbed.par_chunks_mut(n * n).enumerate().for_each_init(
                || (Fft2::new(n, grid.band()), vec![Complex32::default(); n * n]),
                |(fft, psi), (p, pattern)| {
                    let before = fft.elapsed();
                    match &probe {
                        Some(spectrum) => {
                            let [x, y] = scan[p];
                            probe_at(spectrum, grid, x, y, psi, fft);
                            slices.propagate(psi, fft);
                            add_pattern(psi, n, weight, pattern);
                        }
                        None => {
                            psi.fill(Complex32::new(1.0, 0.0));
                            slices.propagate(psi, fft);
                            let image = lens_image(psi, c.beam, grid, &c.lens, fft);
                            for (o, v) in pattern.iter_mut().zip(image) {
                                *o += weight * v;
                            }
                        }
                    }
                    fft_nanos.fetch_add((fft.elapsed() - before).as_nanos() as u64, Ordering::Relaxed);
                },
            );
            scan_time += started.elapsed();
        }
        Ok(Sample {
            cbed,
            target,
            variation,
            slices: count,
            fft_time: Duration::from_nanos(fft_nanos.into_inner()),
            setup_time,
            scan_time,
        })
    }
}
