//! One event from its index and the run's seed, and the cut-based
//! selection the network is compared with.
//!
//! The selection is a simplified form of the ATLAS RPV multi-jet search's
//! (Phys. Lett. B 785 (2018) 136), which counts hard jets and cuts on
//! their summed momentum: an event passes if at least
//! [`SELECTED_JETS`] jets have pT > [`JET_PT_MIN`] and their scalar sum
//! H_T exceeds [`HT_MIN`]. Jets here are the event's partons within
//! |η| < 2.5 with pT smeared by the HCAL resolution (no clustering): a
//! stand-in for reconstructed jets, chosen so the baseline is as good as
//! a simple cut can be, not better.

use super::detector::{Grid, Particle, hadronise, hcal_resolution, pileup};
use super::kinematics::P4;
use super::process::Processes;
use crate::random::{Normals, mix};

/// Jets the selection asks for.
pub const SELECTED_JETS: usize = 5;
/// The softest jet it counts (GeV).
pub const JET_PT_MIN: f64 = 100.0;
/// The smallest H_T it keeps (GeV).
pub const HT_MIN: f64 = 1600.0;

/// Everything that decides a run's events.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct JetsConfig {
    /// Rows (η bins) of each image.
    pub height: usize,
    /// Columns (φ bins).
    pub width: usize,
    /// Mean pile-up interactions per event.
    pub pileup: f64,
    /// Fraction of the events that are signal.
    pub signal_fraction: f64,
    /// The physics of the two classes.
    pub processes: Processes,
    /// The run's seed.
    pub seed: u64,
}

/// One generated event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The image (3, height, width).
    pub image: Vec<f32>,
    /// 1 signal, 0 background.
    pub label: i32,
    /// Whether the cut-based selection keeps it.
    pub selected: bool,
    /// Partons inside the image and their particles (for the report).
    pub partons: usize,
    /// Particles the event made, pile-up included.
    pub particles: usize,
}

/// Random streams of an event.
const CLASS_STREAM: u64 = 1;
const EVENT_STREAM: u64 = 2;

impl JetsConfig {
    /// Whether event `index` is signal: drawn from its own stream, so the
    /// class of an event never depends on the rank that makes it.
    pub fn is_signal(&self, index: u64) -> bool {
        Normals::new(mix(self.seed, index, CLASS_STREAM)).uniform() <= self.signal_fraction
    }

    /// Event `index` of the run.
    pub fn event(&self, index: u64) -> Event {
        let signal = self.is_signal(index);
        let mut rng = Normals::new(mix(self.seed, index, EVENT_STREAM));
        let partons = if signal { self.processes.signal(&mut rng) } else { self.processes.background(&mut rng) };
        let selected = passes_selection(&partons, &mut rng);
        let mut particles: Vec<Particle> = Vec::with_capacity(1024);
        for &parton in &partons {
            hadronise(parton, &mut rng, &mut particles);
        }
        pileup(self.pileup, &mut rng, &mut particles);
        let grid = Grid { height: self.height, width: self.width };
        Event {
            image: grid.image(&particles, &mut rng),
            label: i32::from(signal),
            selected,
            partons: partons.iter().filter(|p| p.eta().abs() < super::detector::ETA_MAX).count(),
            particles: particles.len(),
        }
    }
}

/// The cut-based selection on `partons` (see the module's doc).
pub fn passes_selection(partons: &[P4], rng: &mut Normals) -> bool {
    let mut jets = 0;
    let mut ht = 0.0;
    for parton in partons {
        if parton.eta().abs() >= super::detector::ETA_MAX {
            continue;
        }
        let e = (parton.e + hcal_resolution(parton.e, parton.eta()) * rng.normal()).max(0.0);
        let pt = e / parton.eta().cosh();
        if pt > JET_PT_MIN {
            jets += 1;
            ht += pt;
        }
    }
    jets >= SELECTED_JETS && ht > HT_MIN
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> JetsConfig {
        JetsConfig {
            height: 32,
            width: 32,
            pileup: 24.0,
            signal_fraction: 0.5,
            processes: Processes::DEFAULT,
            seed: 11,
        }
    }

    #[test]
    fn an_event_is_a_function_of_the_seed_and_its_index() {
        let c = config();
        assert_eq!(c.event(5), c.event(5));
        assert_ne!(c.event(5).image, c.event(6).image);
        assert_ne!(c.event(5).image, JetsConfig { seed: 12, ..c }.event(5).image);
    }

    /// The selection keeps most signal and little background: the
    /// baseline the network must beat is a real one.
    #[test]
    fn the_selection_keeps_signal_far_more_often_than_background() {
        let c = config();
        let (mut kept, mut total) = ([0usize; 2], [0usize; 2]);
        for index in 0..400 {
            let e = c.event(index);
            total[e.label as usize] += 1;
            kept[e.label as usize] += usize::from(e.selected);
        }
        let rate = |k: usize| kept[k] as f64 / total[k] as f64;
        assert!(total[0] > 150 && total[1] > 150, "{total:?}");
        assert!(rate(1) > 0.5 && rate(0) < 0.3, "signal kept {:.2}, background {:.2}", rate(1), rate(0));
    }

    /// Signal carries more transverse energy on average (two 1.4 TeV
    /// gluinos), but the distributions overlap: the total alone is no
    /// perfect classifier.
    #[test]
    fn signal_and_background_overlap_in_total_transverse_energy() {
        let c = config();
        let plane = c.height * c.width;
        let mut totals = [Vec::new(), Vec::new()];
        for index in 0..300 {
            let e = c.event(index);
            let et: f64 = e.image[..2 * plane].iter().map(|&v| f64::from(v)).sum();
            totals[e.label as usize].push(et);
        }
        let mean = |v: &Vec<f64>| v.iter().sum::<f64>() / v.len() as f64;
        let (background, signal) = (mean(&totals[0]), mean(&totals[1]));
        assert!(signal > background, "signal {signal:.0} GeV, background {background:.0} GeV");
        let overlap = totals[0].iter().filter(|&&b| b > totals[1].iter().cloned().fold(f64::MAX, f64::min)).count();
        assert!(overlap > 0, "no background event above the softest signal event");
    }
}
