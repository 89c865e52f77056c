//! The machine a row was measured on, named from `/proc/cpuinfo`. The
//! development VM's host CPU changes between sessions, and figures differ
//! by host (TensorFlow's oneDNN picks AVX-512 kernels where it can), so
//! every row carries the CPU it ran on.

/// The CPU as `vendor model (family/model, widest vector ISA)`, for example
/// `AMD EPYC (25/17, AVX-512)`; `unknown CPU` where `/proc/cpuinfo` is not
/// readable.
pub fn machine_label() -> String {
    match std::fs::read_to_string("/proc/cpuinfo") {
        Ok(cpuinfo) => label_from_cpuinfo(&cpuinfo),
        Err(_) => "unknown CPU".to_owned(),
    }
}

fn label_from_cpuinfo(cpuinfo: &str) -> String {
    // The first processor's block describes them all on these machines.
    let field = |name: &str| {
        cpuinfo
            .lines()
            .filter_map(|line| line.split_once(':'))
            .find(|(key, _)| key.trim() == name)
            .map(|(_, value)| value.trim().to_owned())
    };
    let name = field("model name").map_or_else(|| "unknown CPU".to_owned(), |n| short_name(&n));
    let isa = match field("flags") {
        Some(flags) => {
            let has = |flag: &str| flags.split_whitespace().any(|f| f == flag);
            if has("avx512f") {
                "AVX-512"
            } else if has("avx2") {
                "AVX2"
            } else {
                "no AVX2"
            }
        }
        None => "ISA unknown",
    };
    match (field("cpu family"), field("model")) {
        (Some(family), Some(model)) => format!("{name} ({family}/{model}, {isa})"),
        _ => format!("{name} ({isa})"),
    }
}

/// `Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz` → `Intel Xeon Platinum 8481C`.
fn short_name(name: &str) -> String {
    let name = name.split_once(" @ ").map_or(name, |(name, _clock)| name);
    name.replace("(R)", "")
        .replace("(TM)", "")
        .split_whitespace()
        .filter(|word| *word != "CPU" && *word != "Processor")
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_intel_cpu_is_named_without_trademarks_or_clock() {
        let cpuinfo = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 207\nmodel name\t: Intel(R) Xeon(R) Platinum 8581C CPU @ 2.10GHz\nflags\t\t: fpu avx2 avx512f\n\nprocessor\t: 1\n";
        assert_eq!(label_from_cpuinfo(cpuinfo), "Intel Xeon Platinum 8581C (6/207, AVX-512)");
    }

    #[test]
    fn a_cpu_without_avx512_says_its_widest_isa() {
        let cpuinfo = "cpu family\t: 25\nmodel\t\t: 1\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu avx avx2 fma\n";
        assert_eq!(label_from_cpuinfo(cpuinfo), "AMD EPYC 7B13 (25/1, AVX2)");
    }

    #[test]
    fn cpuinfo_without_fields_still_gives_a_label() {
        assert_eq!(label_from_cpuinfo(""), "unknown CPU (ISA unknown)");
    }
}
