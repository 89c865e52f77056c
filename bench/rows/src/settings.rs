//! The benches' settings from the environment.

/// A count from the environment variable `key` (`STAGEHAND_BENCH_STEPS=…`),
/// or `default` when unset. Panics with one line naming the variable when
/// it is not a whole number of at least 1: a bench of zero repetitions
/// has no median to report.
pub fn count(key: &str, default: usize) -> usize {
    match std::env::var(key) {
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if n >= 1 => n,
            _ => panic!("{key}={v}: expected a whole number of at least 1"),
        },
        Err(_) => default,
    }
}

/// `STAGEHAND_BENCH_REPS`: how many times a bench repeats each measurement
/// (the page shows their median), `default` when unset.
pub fn repetitions(default: usize) -> usize {
    count("STAGEHAND_BENCH_REPS", default)
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_unset_setting_is_its_default() {
        assert_eq!(super::count("STAGEHAND_BENCH_ROWS_TEST_UNSET_SETTING", 7), 7);
    }
}
