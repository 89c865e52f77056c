//! Particle-mesh N-body steps after 2LPT: what moves CosmoFlow-like boxes
//! from perturbation theory toward the nonlinear structure of halos.
//!
//! Forces: particles deposited on an n³ mesh by cloud in cell (the mesh
//! staggered half a cell from the particle lattice, see
//! [`CellMap::staggered`]), Poisson's
//! equation solved by FFT, the gradient taken as i k, and the mesh force
//! read back at each particle with the same cloud-in-cell weights (Hockney
//! & Eastwood 1988, "Computer Simulation Using Particles", ch. 5). The
//! same kernel both ways and an odd gradient operator mean no particle
//! pushes itself and pairs push each other equally and oppositely, so the
//! total momentum stays zero (ibid. §5-4); the Nyquist planes are zeroed
//! to keep the gradient odd.
//!
//! Time: kick-drift-kick steps in the scale factor with FastPM's factors
//! (Feng, Chu, Seljak & McDonald 2016, MNRAS 463, 2273, eqs. 16-20), which
//! make a step exact for a particle that follows linear growth, so a few
//! steps keep the large scales right (what COLA achieves by stepping the
//! difference from 2LPT; Tassev, Zaldarriaga & Eisenstein 2013).
//!
//! Units (H0 = 1, lengths in Mpc/h): momentum p = a³ E(a) dx/da, so
//! dp/da = -∇φ / (a E) with ∇²φ = 1.5 Ω_m δ / a. Writing the force as
//! F = -∇∇⁻²δ (so -∇φ = 1.5 Ω_m F / a), a particle on a linear trajectory
//! x = q + D(a) ψ has F = D ψ and p = G(a) ψ with G = a³ E dD/da; then
//! dG/da = 1.5 Ω_m D / (a² E) (the growth equation), and
//!   kick:  Δp = F(a_c) [G(a1) - G(a0)] / D(a_c),
//!   drift: Δx = p(a_c) [D(a1) - D(a0)] / G(a_c)
//! are exact on such trajectories.

use rustfft::num_complex::Complex32;

use super::assign::{Assignment, CellMap, assign_offsets};
use super::cosmology::Cosmology;
use super::fft3::{Fft3, frequency};
use super::field::{Displacements, for_each_mode};

/// The particles of one box between steps.
pub struct Particles {
    /// Particles per side (also the mesh's cells per side).
    pub n: usize,
    /// Box side in Mpc/h.
    pub box_size: f64,
    /// Scale factor the state is at.
    pub a: f64,
    /// Displacement from the lattice site, Mpc/h, one array per axis.
    pub offset: [Vec<f32>; 3],
    /// Momentum a³ E(a) dx/da in Mpc/h (H0 = 1), one array per axis.
    pub momentum: [Vec<f32>; 3],
}

impl Particles {
    /// Particles on 2LPT trajectories at scale factor `a`:
    /// x = q + D1 psi1 + D2 psi2, p = a² E (dD1/dln a psi1 + dD2/dln a psi2).
    pub fn from_lpt(disp: &Displacements, box_size: f64, cosmology: &Cosmology, a: f64) -> Self {
        let growth = cosmology.growth_with_rates(a);
        let momentum_scale = a * a * cosmology.e_of_a(a);
        let combine = |w1: f64, w2: f64| -> [Vec<f32>; 3] {
            std::array::from_fn(|axis| {
                let first = &disp.first[axis];
                match &disp.second {
                    Some(second) => first
                        .iter()
                        .zip(&second[axis])
                        .map(|(p1, p2)| (w1 * f64::from(*p1) + w2 * f64::from(*p2)) as f32)
                        .collect(),
                    None => first.iter().map(|p1| (w1 * f64::from(*p1)) as f32).collect(),
                }
            })
        };
        Particles {
            n: disp.n,
            box_size,
            a,
            offset: combine(growth.d1, growth.d2),
            momentum: combine(momentum_scale * growth.d1_rate, momentum_scale * growth.d2_rate),
        }
    }

    /// Counts on a `grid`³ mesh by `scheme`.
    pub fn assign(&self, grid: usize, scheme: Assignment) -> Vec<f32> {
        assign_offsets(self.n, self.box_size, grid, scheme, |p, axis| self.offset[axis][p])
    }

    /// Σ p over the particles, per axis, in f64.
    pub fn total_momentum(&self) -> [f64; 3] {
        self.momentum.each_ref().map(|axis| axis.iter().map(|&v| f64::from(v)).sum())
    }
}

/// Scale factors bounding the steps: `steps` steps evenly spaced in a from
/// `a_start` to the latest output, with each output later than `a_start`
/// made a boundary too (so the state is exact there, not interpolated).
pub fn step_boundaries(a_start: f64, outputs: &[f64], steps: usize) -> Vec<f64> {
    let a_end = outputs.iter().copied().fold(a_start, f64::max);
    let mut boundaries: Vec<f64> =
        (0..=steps).map(|i| a_start + (a_end - a_start) * i as f64 / steps.max(1) as f64).collect();
    boundaries.extend(outputs.iter().copied().filter(|&a| a > a_start));
    boundaries.sort_by(f64::total_cmp);
    // Outputs that fall on a step's end (within float noise) are that end.
    boundaries.dedup_by(|later, earlier| (*later - *earlier).abs() < 1e-9);
    boundaries
}

/// The N-body stepper of one box: FFT plan, cosmology, and the force of
/// the last step's end (the next step's start).
pub struct Stepper<'a> {
    cosmology: &'a Cosmology,
    fft: &'a mut Fft3,
    force: Option<(f64, [Vec<f32>; 3])>,
}

impl<'a> Stepper<'a> {
    /// Steps particles of `cosmology` with the mesh transforms of `fft`
    /// (sized to the particles per side).
    pub fn new(cosmology: &'a Cosmology, fft: &'a mut Fft3) -> Self {
        Stepper { cosmology, fft, force: None }
    }

    /// Move `particles` through the scale factors of `boundaries` after
    /// their own (ascending), one kick-drift-kick step per interval.
    pub fn run(&mut self, particles: &mut Particles, boundaries: &[f64]) {
        let start = particles.a;
        for &a1 in boundaries.iter().filter(|&&a| a > start + 1e-12) {
            let a0 = particles.a;
            let half = 0.5 * (a0 + a1);
            let force = match self.force.take() {
                Some((at, force)) if at == a0 => force,
                _ => self.force(particles),
            };
            self.kick(particles, &force, a0, half, a0);
            self.drift(particles, a0, a1, half);
            let force = self.force(particles);
            self.kick(particles, &force, half, a1, a1);
            particles.a = a1;
            self.force = Some((a1, force));
        }
    }

    /// G(a) = a³ E dD1/da = a² E dD1/dln a and D1(a).
    fn momentum_growth(&self, a: f64) -> (f64, f64) {
        let growth = self.cosmology.growth_with_rates(a);
        (a * a * self.cosmology.e_of_a(a) * growth.d1_rate, growth.d1)
    }

    fn kick(&self, particles: &mut Particles, force: &[Vec<f32>; 3], a0: f64, a1: f64, at: f64) {
        let (g1, _) = self.momentum_growth(a1);
        let (g0, _) = self.momentum_growth(a0);
        let (_, d_at) = self.momentum_growth(at);
        let factor = ((g1 - g0) / d_at) as f32;
        for (momentum, force) in particles.momentum.iter_mut().zip(force) {
            momentum.iter_mut().zip(force).for_each(|(p, f)| *p += factor * f);
        }
    }

    fn drift(&self, particles: &mut Particles, a0: f64, a1: f64, at: f64) {
        let (_, d1) = self.momentum_growth(a1);
        let (_, d0) = self.momentum_growth(a0);
        let (g_at, _) = self.momentum_growth(at);
        let factor = ((d1 - d0) / g_at) as f32;
        for (offset, momentum) in particles.offset.iter_mut().zip(&particles.momentum) {
            offset.iter_mut().zip(momentum).for_each(|(x, p)| *x += factor * p);
        }
    }

    /// F = -∇∇⁻²δ at each particle, Mpc/h, one array per axis.
    pub fn force(&mut self, particles: &Particles) -> [Vec<f32>; 3] {
        let n = particles.n;
        let cells = n * n * n;
        let mesh = CellMap::new(n, particles.box_size, n).staggered();
        let mut counts = vec![0f32; cells];
        mesh.for_each_position(
            |p, axis| particles.offset[axis][p],
            |_, x| {
                for (cell, weight) in mesh.cic_corners(x) {
                    counts[cell] += weight;
                }
            },
        );
        // One particle per cell on average: δ = counts - 1.
        let mut delta: Vec<Complex32> = counts.iter().map(|&c| Complex32::new(c - 1.0, 0.0)).collect();
        drop(counts);
        self.fft.forward(&mut delta);
        let kf = 2.0 * std::f64::consts::PI / particles.box_size;
        let scale = 1.0 / cells as f32;
        let nyquist = -(n as i64) / 2;
        // Cloud in cell smooths what it deposits by W(k) = Π sinc²(π f_i / n)
        // (Hockney & Eastwood 1988, §5-8); dividing it out once gives the
        // mesh the particles' density at large scales. The second window,
        // of the read-back, is left: dividing by it too would amplify the
        // mesh corners (by up to (π/2)¹² at the Nyquist corner).
        let sinc2: Vec<f32> = (0..n)
            .map(|i| {
                let x = std::f32::consts::PI * frequency(i, n) as f32 / n as f32;
                if x == 0.0 { 1.0 } else { (x.sin() / x).powi(2) }
            })
            .collect();
        // The potential-like field δ_k / (k W(k)) (in units of the
        // fundamental), once, so each force component is one multiply.
        for_each_mode(n, |index, f| {
            let f2 = (f[0] * f[0] + f[1] * f[1] + f[2] * f[2]) as f32;
            let window = sinc2[f[0].rem_euclid(n as i64) as usize]
                * sinc2[f[1].rem_euclid(n as i64) as usize]
                * sinc2[f[2].rem_euclid(n as i64) as usize];
            delta[index] *= if f2 == 0.0 { 0.0 } else { scale / (f2 * kf as f32 * window) };
        });
        let potential = delta;
        // F_k = i k δ_k / k², two real components per complex transform:
        // A + iB with A, B real fields.
        let mesh_force = |axes: [usize; 2], fft: &mut Fft3| -> [Vec<f32>; 2] {
            let mut cube = vec![Complex32::default(); cells];
            for_each_mode(n, |index, f| {
                let [fa, fb] = axes.map(|axis| if f[axis] == nyquist { 0.0 } else { f[axis] as f32 });
                // i fa φ + i (i fb φ) = (i fa - fb) φ.
                cube[index] = Complex32::new(-fb, fa) * potential[index];
            });
            fft.inverse(&mut cube);
            [cube.iter().map(|c| c.re).collect(), cube.iter().map(|c| c.im).collect()]
        };
        let [fx, fy] = mesh_force([0, 1], self.fft);
        let [fz, _] = mesh_force([2, 2], self.fft);
        drop(potential);
        gather([&fx, &fy, &fz], &mesh, particles)
    }
}

/// The mesh fields read at each particle with cloud-in-cell weights.
fn gather(mesh: [&[f32]; 3], cells: &CellMap, particles: &Particles) -> [Vec<f32>; 3] {
    let n = particles.n;
    let mut out: [Vec<f32>; 3] = std::array::from_fn(|_| Vec::with_capacity(n * n * n));
    cells.for_each_position(
        |p, axis| particles.offset[axis][p],
        |_, x| {
            let mut value = [0f32; 3];
            for (cell, weight) in cells.cic_corners(x) {
                for axis in 0..3 {
                    value[axis] += weight * mesh[axis][cell];
                }
            }
            for axis in 0..3 {
                out[axis].push(value[axis]);
            }
        },
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plane_wave(n: usize, amplitude: f32) -> Displacements {
        // δ = A cos(k x0) at D = 1, psi1_0 = -(A/k) sin(k x0).
        let box_size = 100.0;
        let k = (2.0 * std::f64::consts::PI / box_size) as f32;
        let spacing = box_size as f32 / n as f32;
        let first = [
            (0..n * n * n).map(|p| -(amplitude / k) * (k * (p / (n * n)) as f32 * spacing).sin()).collect(),
            vec![0.0; n * n * n],
            vec![0.0; n * n * n],
        ];
        Displacements { n, first, second: None }
    }

    #[test]
    fn a_linear_plane_wave_grows_as_d1_whatever_the_number_of_steps() {
        let cosmology = Cosmology::REFERENCE;
        // Small, so the mesh's second-order error (the force read at the
        // particle's moved position, about s k of it) stays below 0.2 %.
        let n = 32;
        let disp = plane_wave(n, 0.01);
        let mut fft = Fft3::new(n);
        for steps in [1, 3, 10] {
            let mut particles = Particles::from_lpt(&disp, 100.0, &cosmology, 0.1);
            let boundaries = step_boundaries(0.1, &[1.0], steps);
            assert_eq!(boundaries.len(), steps + 1);
            Stepper::new(&cosmology, &mut fft).run(&mut particles, &boundaries);
            // Zel'dovich is exact for a plane wave before shell crossing, so
            // the particles must sit at q + D1(1) psi1 = q + psi1.
            let worst = (0..n * n * n).map(|p| (particles.offset[0][p] - disp.first[0][p]).abs()).fold(0f32, f32::max);
            let largest = disp.first[0].iter().fold(0f32, |m, v| m.max(v.abs()));
            assert!(worst < 0.01 * largest, "{steps} steps: off by {worst} of {largest} Mpc/h");
        }
    }

    #[test]
    fn the_total_momentum_stays_zero_through_nonlinear_steps() {
        let cosmology = Cosmology::REFERENCE;
        let n = 16;
        // A wave strong enough to cross shells before a = 1, plus a shorter
        // wave along a second axis, so the forces are far from linear.
        let mut disp = plane_wave(n, 2.0);
        let spacing = 100.0 / n as f32;
        let k2 = 4.0 * std::f32::consts::PI / 100.0;
        disp.first[1] = (0..n * n * n).map(|p| 3.0 * (k2 * (p % n) as f32 * spacing).sin().powi(3)).collect();
        let mut particles = Particles::from_lpt(&disp, 100.0, &cosmology, 0.2);
        let scale: f64 = particles.momentum.iter().flatten().map(|v| f64::from(v.abs())).sum();
        let start = particles.total_momentum();
        let mut fft = Fft3::new(n);
        let mut stepper = Stepper::new(&cosmology, &mut fft);
        for a in step_boundaries(0.2, &[1.0], 8) {
            stepper.run(&mut particles, &[a]);
            let total = particles.total_momentum();
            for (axis, (sum, start)) in total.iter().zip(start).enumerate() {
                assert!(
                    (sum - start).abs() < 1e-5 * scale && start.abs() < 1e-5 * scale,
                    "a = {a}: Σp along {axis} is {sum} against Σ|p| {scale}"
                );
            }
        }
        let moved: f64 = particles.momentum.iter().flatten().map(|v| f64::from(v.abs())).sum();
        assert!(moved > 2.0 * scale, "the particles accelerated: {moved} from {scale}");
    }

    #[test]
    fn outputs_are_step_boundaries_and_earlier_outputs_are_left_to_2lpt() {
        let boundaries = step_boundaries(0.1, &[1.0, 0.5, 0.05], 3);
        assert_eq!(boundaries.len(), 5, "{boundaries:?}");
        assert!(boundaries.contains(&0.5) && boundaries.contains(&1.0) && boundaries[0] == 0.1);
        assert!(boundaries.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(step_boundaries(0.1, &[0.4], 3), vec![0.1, 0.2, 0.30000000000000004, 0.4]);
    }
}
