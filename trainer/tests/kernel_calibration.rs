//! The kernel path measured on this CPU: every candidate it can run is
//! timed and the fastest runs from then on. In a binary of its own: the
//! measurement switches the process's path while it times each.

use trainer::kernels::calibrate::{self, Candidate};
use trainer::kernels::cpu::{self, ChosenBy};

#[test]
fn calibration_times_every_candidate_this_cpu_runs_and_keeps_the_fastest() {
    let choice = calibrate::calibrate();
    assert_eq!(choice.chosen_by, ChosenBy::Measured);
    let names: Vec<String> = calibrate::candidates().iter().map(Candidate::name).collect();
    let timed: Vec<&str> = choice.probe_ms.iter().map(|p| p.candidate.as_str()).collect();
    assert_eq!(timed, names, "every candidate is timed, narrowest first");
    assert!(choice.probe_ms.iter().all(|p| p.ms > 0.0 && p.probes >= 1), "{choice:?}");
    let fastest =
        choice.probe_ms.iter().min_by(|a, b| a.ms.total_cmp(&b.ms)).map(|p| p.candidate.clone()).unwrap_or_default();
    assert_eq!(choice.path, fastest, "the candidate with the shortest median runs: {choice:?}");
    assert_eq!(Candidate::current().name(), choice.path);
    assert_eq!(calibrate::choice(), choice, "the choice reports what the measurement found");
    // Once per process: a second call measures nothing new.
    assert_eq!(calibrate::calibrate(), choice);
    // A path forced afterwards is what runs, and says so.
    cpu::force(cpu::KernelPath::Portable).unwrap_or_else(|e| panic!("{e}"));
    let forced = calibrate::choice();
    assert_eq!((forced.path.as_str(), forced.chosen_by), ("portable", ChosenBy::Forced));
    assert!(forced.probe_ms.is_empty());
    assert_eq!(calibrate::calibrate().chosen_by, ChosenBy::Forced, "a forced path stays");
    eprintln!("kernel_calibration: {}", choice.line());
}
