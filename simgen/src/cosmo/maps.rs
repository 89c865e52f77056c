//! Mass maps for CosmoGAN: two-dimensional projected matter densities cut
//! from simulated boxes, as CosmoGAN's training maps were cut from N-body
//! boxes (Mustafa et al. 2019, §2.1: maps projected from the dark matter of
//! an N-body simulation at one cosmology).
//!
//! A box of S³ cells (the map side S) is simulated as for CosmoFlow
//! ([`super::generate::box_counts`]: Gaussian initial conditions, 2LPT,
//! optionally particle-mesh steps) at one fixed cosmology, its particles
//! assigned to the cells by cloud-in-cell (the maps are float: nothing is
//! lost to int16 counts), and the box is cut along each of its three axes
//! into slabs `depth` cells thick; each slab summed along its axis and
//! divided by the mean gives one map of ρ/ρ̄. A box gives 3·S/depth maps.

use super::assign::Assignment;
use super::cosmology::Cosmology;
use super::fft3::Fft3;
use super::generate::{CosmoConfig, MAX_SPACING, MIN_SPACING, OMEGA_B, Priors, box_counts};
use super::transfer::Transfer;

/// Planck 2015 (Planck Collaboration XIII 2016, A&A 594, A13, Table 4,
/// last column: TT,TE,EE+lowP+lensing+ext): Ω_m, σ8, n_s, h. Our choice of
/// the one cosmology the maps are made at.
pub const PLANCK_2015: [f64; 4] = [0.3089, 0.8159, 0.9667, 0.6774];

/// What to generate.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MapsConfig {
    /// Map side, pixels: the box is simulated on a side³ grid.
    pub side: usize,
    /// Particles per side of the box.
    pub particles: usize,
    /// Box side, Mpc/h.
    pub box_size: f64,
    /// Cells per slab along the projected axis.
    pub depth: usize,
    /// Redshift of the maps.
    pub redshift: f64,
    /// Order of Lagrangian perturbation theory, 1 or 2.
    pub lpt: u8,
    /// Particle-mesh steps after 2LPT (0: the maps are 2LPT's).
    pub steps: usize,
    /// Ω_m, σ8, n_s, h of every box.
    pub cosmology: [f64; 4],
    /// Master seed.
    pub seed: u64,
}

impl MapsConfig {
    /// Why this configuration cannot run, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        if !(8..=1024).contains(&self.side) {
            return Err(format!("--size {} must be 8 to 1024 pixels", self.side));
        }
        if self.depth == 0 || !self.side.is_multiple_of(self.depth) {
            return Err(format!("--depth {} must divide --size {}", self.depth, self.side));
        }
        if !(1..=2).contains(&self.lpt) {
            return Err(format!("--lpt {} must be 1 or 2", self.lpt));
        }
        if self.steps > 0 && self.particles < 4 {
            return Err(format!("--steps needs --particles of at least 4, not {}", self.particles));
        }
        let spacing = self.box_size / self.particles.max(1) as f64;
        if self.particles == 0 || !(self.box_size.is_finite() && (MIN_SPACING..=MAX_SPACING).contains(&spacing)) {
            return Err(format!(
                "--box-size {} with --particles {} puts particles {spacing:.3} Mpc/h apart; simgen accepts \
                 {MIN_SPACING} to {MAX_SPACING} Mpc/h",
                self.box_size, self.particles
            ));
        }
        if !(self.redshift >= 0.0 && self.redshift < super::generate::DEFAULT_START_REDSHIFT) {
            return Err(format!(
                "--redshift {} must be from 0 to below {} (where the boxes start)",
                self.redshift,
                super::generate::DEFAULT_START_REDSHIFT
            ));
        }
        let [omega_m, sigma_8, n_s, h] = self.cosmology;
        if !(omega_m > OMEGA_B && omega_m < 1.0 && sigma_8 > 0.0 && sigma_8 < 2.0 && n_s > 0.5 && n_s < 1.5) {
            return Err(format!("cosmology Ω_m {omega_m}, σ8 {sigma_8}, n_s {n_s}: outside what simgen models"));
        }
        if !(h > 0.3 && h < 1.2) {
            return Err(format!("--hubble {h} must be between 0.3 and 1.2"));
        }
        Ok(())
    }

    /// Maps each box gives: three axes, side/depth slabs each.
    pub fn maps_per_box(&self) -> usize {
        3 * self.side / self.depth
    }

    /// Memory one rank needs for a box, in bytes, roughly (as
    /// [`CosmoConfig::memory_bytes`], plus the box's maps).
    pub fn memory_bytes(&self) -> f64 {
        self.volume().memory_bytes() + (self.maps_per_box() * self.side * self.side * 4) as f64
    }

    /// Mpc/h per pixel.
    pub fn pixel_size(&self) -> f64 {
        self.box_size / self.side as f64
    }

    /// The box simulation as `simgen cosmo` configures it.
    fn volume(&self) -> CosmoConfig {
        CosmoConfig {
            boxes: 1,
            grid: self.side,
            particles: self.particles,
            box_size: self.box_size,
            split: 1,
            redshifts: vec![self.redshift],
            lpt: self.lpt,
            seed: self.seed,
            assignment: Assignment::Cic,
            samples_per_file: 1,
            gzip: false,
            priors: Priors::CosmoFlow,
            transfer: Transfer::EisensteinHu,
            steps: self.steps,
            start_redshift: super::generate::DEFAULT_START_REDSHIFT,
        }
    }

    /// The cosmology every box has.
    pub fn cosmology(&self) -> Cosmology {
        super::generate::cosmology_of(self.cosmology)
    }

    /// The maps of box `box_index` ([`project`]), generated with `fft`
    /// (of side [`particles`](Self::particles)).
    pub fn box_maps(&self, box_index: usize, fft: &mut Fft3) -> Vec<Vec<f32>> {
        let counts = box_counts(&self.volume(), &self.cosmology(), box_index, fft);
        let mean = (self.particles as f64 / self.side as f64).powi(3);
        counts.first().map(|grid| project(grid, self.side, self.depth, mean)).unwrap_or_default()
    }
}

/// The maps of a side³ grid of counts (C order, axes 0, 1, 2) of mean
/// `mean` per cell: for each axis in turn, each slab of `depth` cells
/// along it summed and divided by `depth·mean`, as a side² map (C order,
/// the two other axes in order). Maps are axis-major: the slabs of axis 0,
/// then of 1, then of 2.
pub fn project(grid: &[f32], side: usize, depth: usize, mean: f64) -> Vec<Vec<f32>> {
    let slabs = side / depth;
    let scale = 1.0 / (depth as f64 * mean);
    let mut maps = Vec::with_capacity(3 * slabs);
    for axis in 0..3 {
        for slab in 0..slabs {
            let mut map = vec![0f64; side * side];
            for along in slab * depth..(slab + 1) * depth {
                for a in 0..side {
                    for b in 0..side {
                        let cell = match axis {
                            0 => (along * side + a) * side + b,
                            1 => (a * side + along) * side + b,
                            _ => (a * side + b) * side + along,
                        };
                        map[a * side + b] += f64::from(grid[cell]);
                    }
                }
            }
            maps.push(map.into_iter().map(|v| (v * scale) as f32).collect());
        }
    }
    maps
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn projection_sums_each_slab_along_its_axis_over_the_mean() {
        let side = 4;
        // A single cell at (1, 2, 3) holding 8 counts; mean 1 per cell.
        let mut grid = vec![0f32; side * side * side];
        grid[(side + 2) * side + 3] = 8.0;
        let maps = project(&grid, side, 2, 1.0);
        assert_eq!(maps.len(), 3 * 2);
        // Axis 0, slab 0 (cells 0-1): the cell at map (2, 3) holds 8/2.
        assert_eq!(maps[0][2 * side + 3], 4.0);
        assert!(maps[1].iter().all(|&v| v == 0.0));
        // Axis 1 slab 1 (cells 2-3) at (1, 3); axis 2 slab 1 at (1, 2).
        assert_eq!(maps[3][side + 3], 4.0);
        assert_eq!(maps[5][side + 2], 4.0);
        // Each map of a uniform grid is 1 everywhere.
        let uniform = project(&vec![2f32; side * side * side], side, 4, 2.0);
        assert!(uniform.iter().flatten().all(|&v| (v - 1.0).abs() < 1e-6));
    }

    #[test]
    fn a_box_gives_maps_of_mean_one_with_structure() {
        let config = MapsConfig {
            side: 16,
            particles: 16,
            box_size: 64.0,
            depth: 4,
            redshift: 0.0,
            lpt: 2,
            steps: 0,
            cosmology: PLANCK_2015,
            seed: 3,
        };
        config.check().unwrap();
        let maps = config.box_maps(0, &mut Fft3::new(16));
        assert_eq!(maps.len(), config.maps_per_box());
        let values: Vec<f32> = maps.iter().flatten().copied().collect();
        let mean = values.iter().map(|&v| f64::from(v)).sum::<f64>() / values.len() as f64;
        assert!((mean - 1.0).abs() < 1e-4, "{mean}");
        let variance = values.iter().map(|&v| (f64::from(v) - 1.0).powi(2)).sum::<f64>() / values.len() as f64;
        assert!(variance > 0.01, "{variance}");
        assert_eq!(maps, config.box_maps(0, &mut Fft3::new(16)), "seeded");
        assert_ne!(maps, config.box_maps(1, &mut Fft3::new(16)));
    }

    #[test]
    fn configurations_simgen_cannot_run_are_refused() {
        let good = MapsConfig {
            side: 64,
            particles: 64,
            box_size: 128.0,
            depth: 8,
            redshift: 0.0,
            lpt: 2,
            steps: 0,
            cosmology: PLANCK_2015,
            seed: 0,
        };
        good.check().unwrap();
        assert!(MapsConfig { depth: 7, ..good.clone() }.check().unwrap_err().contains("divide"));
        assert!(MapsConfig { box_size: 1.0, ..good.clone() }.check().unwrap_err().contains("apart"));
        assert!(MapsConfig { redshift: -1.0, ..good.clone() }.check().is_err());
        assert!(MapsConfig { side: 4, ..good.clone() }.check().is_err());
        assert!(MapsConfig { cosmology: [0.01, 0.8, 0.96, 0.7], ..good }.check().is_err());
    }
}
