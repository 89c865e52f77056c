//! From partons to the three-channel image the HEP-CNN reads: partons
//! hadronise into jets of particles, pile-up interactions add soft
//! particles, and a cylindrical detector unrolled in (η, φ) records each
//! cell's electromagnetic and hadronic transverse energy and its tracks,
//! as Bhimji et al. 2017 (arXiv:1711.03573, §3) made their images from
//! Delphes events: channels ECAL E_T, HCAL E_T and track count, |η| < 2.5
//! (the tracker's acceptance) over the full azimuth.
//!
//! - **Hadronisation** (a parametrisation, not a shower): a parton of
//!   energy E gives 1 + Poisson(2 ln(E / 1 GeV)) particles (multiplicity
//!   growing with ln E as in e⁺e⁻ data), sharing its momentum by
//!   exponential draws (an even split of the simplex), each off the
//!   parton's axis by a Gaussian of width [`JET_WIDTH`] in η and φ (a
//!   jet of radius about 0.4, ATLAS' anti-kt R). Two in three are charged
//!   pions and one in three a photon from a neutral pion: isospin's
//!   π⁺ : π⁻ : π⁰ = 1 : 1 : 1.
//! - **Pile-up**: Poisson(μ) extra proton-proton interactions, each
//!   adding charged particles at 2.874 per unit η (ATLAS, Phys. Lett. B
//!   758 (2016) 67: dN_ch/dη at 13 TeV for pT > 500 MeV) with pT 0.5 GeV
//!   plus an exponential of mean [`PILEUP_PT`], and as many photons,
//!   uniform in η and φ. μ defaults to 24, ATLAS' 2016 average.
//! - **Calorimeters**: as Delphes 3 does (de Favereau et al., JHEP 02
//!   (2014) 057), photons deposit in the ECAL and charged hadrons in the
//!   HCAL; each cell's energy is smeared by a Gaussian (cut at 0) of the
//!   ATLAS card's resolution: ECAL σ² = (0.0017 E)² + 0.101² E; HCAL
//!   σ² = (0.0302 E)² + 0.5205² E + 1.59² for |η| ≤ 1.7 and (0.05 E)² +
//!   0.706² E beyond. Cells store E_T = E / cosh η, GeV.
//! - **Tracks**: each charged particle of pT > [`TRACK_PT_MIN`] adds one to
//!   its cell (straight lines: the field's bending is left out).

use std::f64::consts::PI;

use super::kinematics::P4;
use super::process::poisson;
use crate::random::Normals;

/// Angular width of a jet's particles about its axis (η and φ).
pub const JET_WIDTH: f64 = 0.1;
/// The image's extent in pseudorapidity: |η| < 2.5.
pub const ETA_MAX: f64 = 2.5;
/// Charged particles per unit η per pile-up interaction.
pub const PILEUP_DENSITY: f64 = 2.874;
/// Mean of a pile-up particle's pT above 0.5 GeV.
pub const PILEUP_PT: f64 = 0.5;
/// The softest track the tracker records.
pub const TRACK_PT_MIN: f64 = 0.5;

/// The image channels.
pub const ECAL: usize = 0;
/// The hadronic calorimeter's channel.
pub const HCAL: usize = 1;
/// The tracks' channel.
pub const TRACKS: usize = 2;

/// A particle leaving the collision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Particle {
    /// Its momentum.
    pub p: P4,
    /// Charged (a pion) or not (a photon).
    pub charged: bool,
}

/// The particles a parton hadronises into.
pub fn hadronise(parton: P4, rng: &mut Normals, out: &mut Vec<Particle>) {
    let count = 1 + poisson(2.0 * parton.e.max(1.0).ln(), rng);
    let draws: Vec<f64> = (0..count).map(|_| -rng.uniform().ln()).collect();
    let total: f64 = draws.iter().sum();
    let (eta, phi) = (parton.eta(), parton.phi());
    for (k, draw) in draws.iter().enumerate() {
        let e = parton.e * draw / total;
        let particle_eta = eta + JET_WIDTH * rng.normal();
        let particle_phi = phi + JET_WIDTH * rng.normal();
        out.push(Particle {
            p: P4::from_pt_eta_phi_m(e / particle_eta.cosh(), particle_eta, particle_phi, 0.0),
            charged: k % 3 != 2,
        });
    }
}

/// The soft particles of `mu` pile-up interactions on average.
pub fn pileup(mu: f64, rng: &mut Normals, out: &mut Vec<Particle>) {
    for _ in 0..poisson(mu, rng) {
        let charged = poisson(PILEUP_DENSITY * 2.0 * ETA_MAX, rng);
        for k in 0..2 * charged {
            let pt = if k < charged {
                TRACK_PT_MIN - PILEUP_PT * rng.uniform().ln()
            } else {
                -PILEUP_PT * rng.uniform().ln()
            };
            let eta = ETA_MAX * (2.0 * rng.uniform() - 1.0);
            let phi = PI * (2.0 * rng.uniform() - 1.0);
            out.push(Particle { p: P4::from_pt_eta_phi_m(pt, eta, phi, 0.0), charged: k < charged });
        }
    }
}

/// The ECAL's energy resolution σ(E) (Delphes' ATLAS card, |η| ≤ 3.2).
pub fn ecal_resolution(e: f64) -> f64 {
    ((0.0017 * e).powi(2) + 0.101f64.powi(2) * e).sqrt()
}

/// The HCAL's energy resolution σ(E) at `eta` (Delphes' ATLAS card).
pub fn hcal_resolution(e: f64, eta: f64) -> f64 {
    if eta.abs() <= 1.7 {
        ((0.0302 * e).powi(2) + 0.5205f64.powi(2) * e + 1.59f64.powi(2)).sqrt()
    } else {
        ((0.05 * e).powi(2) + 0.706f64.powi(2) * e).sqrt()
    }
}

/// The detector's cells: `height` bins of η over [-2.5, 2.5], `width` of
/// φ over [-π, π).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    /// η bins.
    pub height: usize,
    /// φ bins.
    pub width: usize,
}

impl Grid {
    /// The cell (row, column) of direction (η, φ); `None` outside |η| < 2.5.
    pub fn cell(&self, eta: f64, phi: f64) -> Option<(usize, usize)> {
        // NaN falls outside too.
        if eta.is_nan() || eta.abs() >= ETA_MAX {
            return None;
        }
        let row = ((eta + ETA_MAX) / (2.0 * ETA_MAX) * self.height as f64) as usize;
        let turned = (phi + PI).rem_euclid(2.0 * PI);
        let column = (turned / (2.0 * PI) * self.width as f64) as usize;
        Some((row.min(self.height - 1), column.min(self.width - 1)))
    }

    /// η at the centre of row `row`.
    pub fn eta_of_row(&self, row: usize) -> f64 {
        -ETA_MAX + (row as f64 + 0.5) * 2.0 * ETA_MAX / self.height as f64
    }

    /// The image (3, height, width), C order, of `particles`: each cell's
    /// calorimeter energies summed and smeared, stored as E_T, and its
    /// tracks counted.
    pub fn image(&self, particles: &[Particle], rng: &mut Normals) -> Vec<f32> {
        let plane = self.height * self.width;
        // Energies before smearing, per calorimeter.
        let mut energy = vec![0f64; 2 * plane];
        let mut image = vec![0f32; 3 * plane];
        for particle in particles {
            let Some((row, column)) = self.cell(particle.p.eta(), particle.p.phi()) else { continue };
            let cell = row * self.width + column;
            let calorimeter = if particle.charged { HCAL } else { ECAL };
            energy[calorimeter * plane + cell] += particle.p.e;
            if particle.charged && particle.p.pt() > TRACK_PT_MIN {
                image[TRACKS * plane + cell] += 1.0;
            }
        }
        for calorimeter in [ECAL, HCAL] {
            for cell in 0..plane {
                let e = energy[calorimeter * plane + cell];
                if e == 0.0 {
                    continue;
                }
                let eta = self.eta_of_row(cell / self.width);
                let sigma = if calorimeter == ECAL { ecal_resolution(e) } else { hcal_resolution(e, eta) };
                let measured = (e + sigma * rng.normal()).max(0.0);
                image[calorimeter * plane + cell] = (measured / eta.cosh()) as f32;
            }
        }
        image
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parton_hadronises_into_particles_that_share_its_energy_near_its_axis() {
        let mut rng = Normals::new(4);
        let parton = P4::from_pt_eta_phi_m(400.0, 0.5, -1.0, 0.0);
        let mut particles = Vec::new();
        hadronise(parton, &mut rng, &mut particles);
        assert!(particles.len() > 5, "{} particles", particles.len());
        let energy: f64 = particles.iter().map(|p| p.p.e).sum();
        assert!((energy / parton.e - 1.0).abs() < 1e-9);
        assert!(particles.iter().all(|p| (p.p.eta() - 0.5).abs() < 8.0 * JET_WIDTH));
        let charged = particles.iter().filter(|p| p.charged).count();
        assert!(charged >= particles.len() / 2, "{charged} of {}", particles.len());
    }

    #[test]
    fn the_grid_covers_the_image_once_and_drops_what_lies_beyond_eta_2_5() {
        let grid = Grid { height: 64, width: 64 };
        assert_eq!(grid.cell(-2.4999, -PI), Some((0, 0)));
        assert_eq!(grid.cell(2.4999, PI - 1e-9), Some((63, 63)));
        assert_eq!(grid.cell(0.0, 3.0 * PI), grid.cell(0.0, PI), "φ wraps");
        assert_eq!(grid.cell(2.6, 0.0), None);
        assert!((grid.eta_of_row(0) + 2.5 - 5.0 / 128.0).abs() < 1e-12);
    }

    #[test]
    fn an_image_holds_a_photons_transverse_energy_and_a_charged_pions_track() {
        let grid = Grid { height: 32, width: 32 };
        let mut rng = Normals::new(5);
        let photon = Particle { p: P4::from_pt_eta_phi_m(100.0, 0.0, 0.1, 0.0), charged: false };
        let pion = Particle { p: P4::from_pt_eta_phi_m(50.0, 1.0, -2.0, 0.0), charged: true };
        let image = grid.image(&[photon, pion], &mut rng);
        let plane = 32 * 32;
        let (pr, pc) = grid.cell(0.0, 0.1).unwrap();
        let (qr, qc) = grid.cell(1.0, -2.0).unwrap();
        let ecal = image[ECAL * plane + pr * 32 + pc];
        // E_T near 100 GeV within a few resolutions (the cell centre's η is not 0).
        assert!((ecal - 100.0).abs() < 5.0, "ECAL {ecal}");
        assert!(image[HCAL * plane + qr * 32 + qc] > 20.0);
        assert_eq!(image[TRACKS * plane + qr * 32 + qc], 1.0);
        assert_eq!(image.iter().filter(|&&v| v != 0.0).count(), 3);
    }

    #[test]
    fn the_resolutions_are_the_atlas_cards_at_100_gev() {
        // ECAL: sqrt(0.17² + 1.01²) = 1.024 GeV; HCAL central:
        // sqrt(3.02² + 0.5205²·100 + 1.59²) = 6.224 GeV; forward:
        // sqrt(5² + 0.706²·100) = 8.651 GeV.
        assert!((ecal_resolution(100.0) - 1.0242).abs() < 1e-3);
        assert!((hcal_resolution(100.0, 0.0) - 6.2242).abs() < 1e-3);
        assert!((hcal_resolution(100.0, 2.0) - 8.6512).abs() < 1e-3);
    }
}
