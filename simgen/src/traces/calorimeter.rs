//! A sampling calorimeter of 20 × 35 × 35 voxels (Etalumis' observation:
//! Baydin et al., SC19, Sec. V: "a 3D calorimeter of 20 × 35 × 35"):
//! layers one radiation length X0 deep along the beam, cells one Molière
//! radius across, lead as the absorber. Particles leave energy as showers
//! (pure functions of the particle, no randomness: the randomness is the
//! simulator's recorded choices and the observation noise).
//!
//! Shower shapes are the textbook parameterisations (Particle Data Group,
//! R. L. Workman et al., Prog. Theor. Exp. Phys. 2022, 083C01, Sec. 34.5,
//! "Electromagnetic cascades"): the longitudinal profile of an
//! electromagnetic shower is a gamma distribution in depth t (in X0),
//! dE/dt = E b (bt)^(a-1) e^(-bt) / Γ(a), with b ≈ 0.5 and its maximum at
//! t_max = (a - 1)/b = ln(E/E_c) + C, C = -0.5 for electrons and +0.5 for
//! photons (Eq. 34.36-34.37); E_c = 7.43 MeV in lead (the same review's
//! table of atomic and nuclear properties); about 90 % of the energy lies
//! within one Molière radius, so the transverse profile is a Gaussian of
//! about half a cell growing with depth. A muon, or a charged hadron that
//! does not interact, leaves the minimum-ionising 1.122 MeV cm²/g × 11.35
//! g/cm³ × 0.56 cm ≈ 7.1 MeV per layer. A hadron that interacts showers
//! from its first interaction, broader and longer, leaving 70 % of its
//! energy visible (a non-compensating calorimeter's e/h response; the
//! hadronic part is our round number, not a fit).

/// Layers (radiation lengths) along the beam.
pub const DEPTH: usize = 20;
/// Cells across, each way.
pub const SIDE: usize = 35;
/// The observation's shape: (depth, y, x), C order.
pub const SHAPE: [usize; 3] = [DEPTH, SIDE, SIDE];
/// Voxels.
pub const VOXELS: usize = DEPTH * SIDE * SIDE;
/// Cells per radian of angle from the beam axis at the front face.
pub const CELLS_PER_RADIAN: f64 = 100.0;
/// Electronic noise per voxel, GeV.
pub const NOISE_GEV: f32 = 0.002;

/// Critical energy of lead, GeV.
const CRITICAL_ENERGY_GEV: f64 = 0.00743;
/// Energy a minimum-ionising particle leaves in one layer, GeV.
const MIP_GEV_PER_LAYER: f64 = 0.0071;
/// Visible fraction of a hadronic shower's energy.
const HADRONIC_RESPONSE: f64 = 0.7;
/// Depth sub-steps per layer when integrating a longitudinal profile.
const SUBSTEPS: usize = 8;

/// How a particle leaves its energy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shower {
    /// An electron or positron.
    Electron,
    /// A photon.
    Photon,
    /// A muon, or a charged hadron that crosses without interacting.
    Track,
    /// A charged hadron whose first interaction is at this depth (layers).
    Hadronic {
        /// Depth of the first interaction, in layers from the front.
        start: f64,
    },
}

/// One particle reaching the calorimeter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Particle {
    /// Energy, GeV.
    pub energy: f64,
    /// Impact point on the front face, in cells (0 at the first cell's edge).
    pub x: f64,
    /// Impact point, cells.
    pub y: f64,
    /// How it showers.
    pub shower: Shower,
}

/// Impact coordinate (cells) of a particle at angle `theta` (rad) from the axis.
pub fn impact(theta: f64) -> f64 {
    SIDE as f64 / 2.0 + theta * CELLS_PER_RADIAN
}

/// Add `particle`'s mean energy deposit (GeV) to `grid` (`VOXELS` long).
pub fn deposit(grid: &mut [f32], particle: &Particle) {
    let e = particle.energy;
    if e <= 0.0 {
        return;
    }
    match particle.shower {
        Shower::Track => {
            for layer in 0..DEPTH {
                spread(grid, layer, particle.x, particle.y, 0.3, MIP_GEV_PER_LAYER.min(e / DEPTH as f64));
            }
        }
        Shower::Electron | Shower::Photon => {
            let c = if particle.shower == Shower::Photon { 0.5 } else { -0.5 };
            let b = 0.5;
            let t_max = ((e / CRITICAL_ENERGY_GEV).ln() + c).max(0.5);
            let a = b * t_max + 1.0;
            for layer in 0..DEPTH {
                let share = layer_share(a, b, layer as f64);
                spread(grid, layer, particle.x, particle.y, 0.5 + 0.06 * layer as f64, e * share);
            }
        }
        Shower::Hadronic { start } => {
            let track_layers = start.floor().clamp(0.0, DEPTH as f64) as usize;
            for layer in 0..track_layers {
                spread(grid, layer, particle.x, particle.y, 0.3, MIP_GEV_PER_LAYER);
            }
            let (a, b) = (2.0, 0.3);
            for layer in track_layers..DEPTH {
                let share = layer_share(a, b, layer as f64 - start);
                let width = 1.2 + 0.12 * (layer as f64 - start).max(0.0);
                spread(grid, layer, particle.x, particle.y, width, HADRONIC_RESPONSE * e * share);
            }
        }
    }
}

/// Share of a gamma(a, b) profile between depth `t` and `t + 1` (before
/// 0 it is zero): midpoint rule over `SUBSTEPS` sub-steps.
fn layer_share(a: f64, b: f64, t: f64) -> f64 {
    let log_norm = a * b.ln() - ln_gamma(a);
    (0..SUBSTEPS)
        .map(|i| t + (i as f64 + 0.5) / SUBSTEPS as f64)
        .filter(|&s| s > 0.0)
        .map(|s| (log_norm + (a - 1.0) * s.ln() - b * s).exp() / SUBSTEPS as f64)
        .sum()
}

/// ln Γ(x) for x > 0 by Lanczos' approximation (g = 7, 9 terms: the
/// coefficients of P. Godfrey's table, as in Numerical Recipes 3rd ed.,
/// Sec. 6.1), accurate to about 1e-15 relative.
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 - x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let sum = C[1..].iter().enumerate().fold(C[0], |acc, (i, c)| acc + c / (x + i as f64 + 1.0));
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// Spread `energy` over layer `layer` as a Gaussian of `width` cells
/// around (x, y), cut at 3 widths and normalised over the cut window
/// (energy falling outside the grid is lost, as it leaks in a detector).
fn spread(grid: &mut [f32], layer: usize, x: f64, y: f64, width: f64, energy: f64) {
    if energy <= 0.0 || !x.is_finite() || !y.is_finite() {
        return;
    }
    let reach = (3.0 * width).ceil() as i64;
    let (cx, cy) = (x.floor() as i64, y.floor() as i64);
    let weight = |c: i64, centre: f64| {
        let d = (c as f64 + 0.5 - centre) / width;
        (-0.5 * d * d).exp()
    };
    let wx: Vec<f64> = (cx - reach..=cx + reach).map(|c| weight(c, x)).collect();
    let wy: Vec<f64> = (cy - reach..=cy + reach).map(|c| weight(c, y)).collect();
    let total = wx.iter().sum::<f64>() * wy.iter().sum::<f64>();
    let plane = &mut grid[layer * SIDE * SIDE..(layer + 1) * SIDE * SIDE];
    for (j, row) in (cy - reach..=cy + reach).enumerate() {
        if !(0..SIDE as i64).contains(&row) {
            continue;
        }
        for (i, column) in (cx - reach..=cx + reach).enumerate() {
            if (0..SIDE as i64).contains(&column) {
                plane[row as usize * SIDE + column as usize] += (energy * wx[i] * wy[j] / total) as f32;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn total(grid: &[f32]) -> f64 {
        grid.iter().map(|&v| f64::from(v)).sum()
    }

    #[test]
    fn ln_gamma_matches_factorials() {
        for n in 1..20u32 {
            let factorial: f64 = (1..n).map(f64::from).product();
            assert!((ln_gamma(f64::from(n)) - factorial.ln()).abs() < 1e-12, "Γ({n})");
        }
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-12);
    }

    #[test]
    fn an_electron_shower_is_contained_and_peaks_where_the_pdg_says() {
        let mut grid = vec![0f32; VOXELS];
        let e = 10.0;
        deposit(&mut grid, &Particle { energy: e, x: 17.5, y: 17.5, shower: Shower::Electron });
        // 20 X0 contain nearly all of a 10 GeV shower.
        assert!((total(&grid) / e - 1.0).abs() < 0.02, "{}", total(&grid));
        let layers: Vec<f64> = (0..DEPTH).map(|l| total(&grid[l * SIDE * SIDE..(l + 1) * SIDE * SIDE])).collect();
        let peak = layers.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map(|(l, _)| l).unwrap();
        // t_max = ln(10 / 0.00743) - 0.5 = 6.7 X0: the peak is layer 6.
        assert!((5..=7).contains(&peak), "peak at layer {peak}");
        // Most of each layer's energy is in the central cell and its neighbours.
        let plane = &grid[3 * SIDE * SIDE..4 * SIDE * SIDE];
        let core: f64 = (16..19).flat_map(|y| (16..19).map(move |x| f64::from(plane[y * SIDE + x]))).sum();
        assert!(core / layers[3] > 0.9);
    }

    #[test]
    fn a_photon_showers_deeper_than_an_electron_and_a_hadron_deeper_still() {
        let depth = |shower| {
            let mut grid = vec![0f32; VOXELS];
            deposit(&mut grid, &Particle { energy: 20.0, x: 10.0, y: 20.0, shower });
            let per_layer: Vec<f64> =
                (0..DEPTH).map(|l| total(&grid[l * SIDE * SIDE..(l + 1) * SIDE * SIDE])).collect();
            per_layer.iter().enumerate().map(|(l, e)| l as f64 * e).sum::<f64>() / per_layer.iter().sum::<f64>()
        };
        let (e, g, h) = (depth(Shower::Electron), depth(Shower::Photon), depth(Shower::Hadronic { start: 8.0 }));
        assert!(e < g && g < h, "{e} {g} {h}");
    }

    #[test]
    fn a_track_leaves_a_minimum_ionising_line_and_off_grid_energy_is_lost() {
        let mut grid = vec![0f32; VOXELS];
        deposit(&mut grid, &Particle { energy: 30.0, x: 5.5, y: 5.5, shower: Shower::Track });
        assert!((total(&grid) - 20.0 * MIP_GEV_PER_LAYER).abs() < 1e-5);
        let mut outside = vec![0f32; VOXELS];
        deposit(&mut outside, &Particle { energy: 30.0, x: -40.0, y: 5.5, shower: Shower::Electron });
        assert_eq!(total(&outside), 0.0);
    }
}
