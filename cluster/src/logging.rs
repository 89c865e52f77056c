//! A `tracing` subscriber whose lines say which rank and node wrote them.
//!
//! The level comes from `STAGEHAND_LOG` (or `RUST_LOG`), `info` by default.
//! Lines go to stderr, so stdout stays free for reports; colours only on a terminal.

use std::fmt;
use std::io::IsTerminal;

use tracing::{Event, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::{self, Format, Full, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use crate::Topology;

/// Variable holding the log filter (`debug`, `stager=trace,info`, ...).
pub const LOG_ENV: &str = "STAGEHAND_LOG";

struct RankFormat {
    prefix: String,
    inner: Format<Full>,
}

impl<S, N> FormatEvent<S, N> for RankFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        writer.write_str(&self.prefix)?;
        self.inner.format_event(ctx, writer, event)
    }
}

/// The prefix of every line of `topology`: `[rank 3/8 node 1] `.
pub fn prefix(topology: &Topology) -> String {
    format!("[rank {}/{} node {}] ", topology.rank, topology.size, topology.node)
}

/// Install the subscriber for this process. `default_filter` is used when
/// neither variable is set (`info` if `None`). Does nothing if a subscriber
/// is already installed.
pub fn init(topology: &Topology, default_filter: Option<&str>) {
    let filter = std::env::var(LOG_ENV)
        .or_else(|_| std::env::var("RUST_LOG"))
        .ok()
        .and_then(|f| EnvFilter::try_new(f).ok())
        .unwrap_or_else(|| EnvFilter::new(default_filter.unwrap_or("info")));
    let ansi = std::io::stderr().is_terminal();
    let format = RankFormat { prefix: prefix(topology), inner: format::format().with_ansi(ansi).with_target(false) };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr)
        .event_format(format)
        .try_init();
}

/// `error` and its chain of causes on one line, `a: b: c`, each cause
/// once: our error types put their cause in their own message (so a plain
/// `{e}` is complete) and also report it as `source()`, so anyhow's `{:#}`
/// would repeat it ("Permission denied: Permission denied").
pub fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut line = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !line.ends_with(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        cause = c.source();
    }
    line
}

/// This process's rank as its launcher announced it in the environment,
/// before MPI starts (Open MPI, PMI/PMIx, Slurm's `srun`); `None` when no
/// launcher said (a plain run).
pub fn launcher_rank() -> Option<u64> {
    launcher_rank_in(|name| std::env::var(name).ok())
}

fn launcher_rank_in(var: impl Fn(&str) -> Option<String>) -> Option<u64> {
    ["OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"]
        .iter()
        .find_map(|name| var(name).and_then(|v| v.trim().parse().ok()))
}

/// Whether this process prints a message that every rank of a job would
/// print alike (a usage error found before MPI starts): rank 0 does, or a
/// process no launcher started. Under `mpirun -np 64` a typo then prints
/// one line, not 64 interleaved with the launcher's own.
pub fn speaks_for_all_ranks() -> bool {
    launcher_rank().is_none_or(|rank| rank == 0)
}

/// Print `error: {message}` when [`speaks_for_all_ranks`]: for errors
/// every rank meets alike before MPI starts.
pub fn print_error_once(message: impl std::fmt::Display) {
    if speaks_for_all_ranks() {
        print_error(message);
    }
}

/// Exit with `code` after `print` (a command-line parser's usage error or
/// help text) ran on [`speaks_for_all_ranks`] only: every rank parses the
/// same arguments, so one prints.
pub fn exit_after_usage(print: impl FnOnce(), code: i32) -> ! {
    if speaks_for_all_ranks() {
        print();
    } else if code != 0 {
        // `mpirun` ends the job at the first rank that exits non-zero and
        // kills the others: a silent rank exiting before the speaking one
        // has printed would lose the only message.
        std::thread::sleep(SILENT_RANK_EXIT_DELAY);
    }
    std::process::exit(code)
}

/// Exit after a command-line parser's output, printed once for all ranks
/// ([`exit_after_usage`]): an error (`rendered` starts with `error:`) as
/// the one line of [`usage_line`], anything else (help, version) in full
/// by `print_in_full`. `code` is the parser's (2 for an error, 0 for help).
///
/// ```no_run
/// use clap::Parser;
///
/// #[derive(Parser)]
/// struct Cli {
///     #[arg(long)]
///     dest: String,
/// }
///
/// let cli = Cli::try_parse().unwrap_or_else(|e| {
///     cluster::logging::exit_on_usage(&e.render().to_string(), e.exit_code(), || drop(e.print()))
/// });
/// ```
pub fn exit_on_usage(rendered: &str, code: i32, print_in_full: impl FnOnce()) -> ! {
    if rendered.trim_start().starts_with("error:") {
        let line = usage_line(rendered);
        let message = line.strip_prefix("error:").map_or(line.as_str(), str::trim_start);
        exit_after_usage(|| print_error(message), code)
    }
    exit_after_usage(print_in_full, code)
}

/// A parser's error text (the error, a list it names, a tip, the usage)
/// as one line: the error, what it lists, the tip in brackets, and the
/// command whose `--help` explains. A job's log keeps one line a failure.
pub fn usage_line(rendered: &str) -> String {
    let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty());
    let mut line = lines.next().unwrap_or("error: invalid command line").to_owned();
    // What an error ending in ':' lists (the missing arguments), each on
    // a line of its own.
    let mut listed = Vec::new();
    for rest in lines {
        if !rest.starts_with("tip: ") && !rest.starts_with("Usage: ") {
            listed.push(rest);
            continue;
        }
        if !listed.is_empty() {
            line.push_str(&format!(" {}", listed.join(", ")));
            listed.clear();
        }
        if let Some(tip) = rest.strip_prefix("tip: ") {
            line.push_str(&format!(" ({tip})"));
        } else if let Some(usage) = rest.strip_prefix("Usage: ") {
            // The command's words end at its first option or argument.
            let command: Vec<&str> = usage.split_whitespace().take_while(|w| !w.starts_with(['[', '<', '-'])).collect();
            line.push_str(&format!("; see `{} --help`", command.join(" ")));
        }
    }
    line
}

/// How long a rank that prints nothing waits before it exits with a usage
/// error: ample for the speaking rank to parse the same arguments and print.
const SILENT_RANK_EXIT_DELAY: std::time::Duration = std::time::Duration::from_millis(500);

/// Print `error: {message}` to stderr in a single write. Ranks that fail
/// together share `mpirun`'s stderr, and `eprintln!` writes each formatted
/// piece separately, so their lines came out interleaved mid-word.
pub fn print_error(message: impl std::fmt::Display) {
    use std::io::Write;
    let line = format!("error: {message}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

#[cfg(test)]
mod launcher_tests {
    #[test]
    fn the_launchers_rank_variables_are_read_in_order() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
        };
        assert_eq!(super::launcher_rank_in(env(&[])), None);
        assert_eq!(super::launcher_rank_in(env(&[("SLURM_PROCID", "5")])), Some(5));
        assert_eq!(super::launcher_rank_in(env(&[("OMPI_COMM_WORLD_RANK", "3"), ("SLURM_PROCID", "0")])), Some(3));
        assert_eq!(super::launcher_rank_in(env(&[("PMI_RANK", "x"), ("SLURM_PROCID", "2")])), Some(2));
    }
}

#[cfg(test)]
mod chain_tests {
    #[derive(Debug, thiserror::Error)]
    #[error("{path}: {source}")]
    struct Wrapped {
        path: String,
        source: std::io::Error,
    }

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        let io = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let e = anyhow::Error::new(Wrapped { path: "/data/f2.bin".into(), source: io }).context("scanning /data");
        assert_eq!(super::chain(e.as_ref()), "scanning /data: /data/f2.bin: permission denied");
    }
}

#[cfg(test)]
mod usage_tests {
    use clap::Parser;

    use super::usage_line;

    /// A command of the shape the binaries have: a subcommand with a
    /// required option and a required list.
    #[derive(Parser, Debug)]
    #[command(name = "stager")]
    enum Cli {
        Stage {
            #[arg(long)]
            dest: String,
        },
        Plot {
            #[arg(required = true)]
            reports: Vec<String>,
        },
    }

    fn rendered(args: &[&str]) -> String {
        Cli::try_parse_from(args).map(|cli| format!("{cli:?}")).unwrap_or_else(|e| e.render().to_string())
    }

    #[test]
    fn an_unknown_flag_is_one_line_with_its_tip_and_the_command_to_ask() {
        let line = usage_line(&rendered(&["stager", "stage", "--dest", "d", "--dset", "x"]));
        assert_eq!(
            line,
            "error: unexpected argument '--dset' found (a similar argument exists: '--dest'); see `stager stage --help`"
        );
    }

    #[test]
    fn a_missing_argument_is_named_in_the_one_line() {
        assert_eq!(
            usage_line(&rendered(&["stager", "plot"])),
            "error: the following required arguments were not provided: <REPORTS>...; see `stager plot --help`"
        );
        assert_eq!(
            usage_line(&rendered(&["stager", "stage"])),
            "error: the following required arguments were not provided: --dest <DEST>; see `stager stage --help`"
        );
    }

    #[test]
    fn every_error_of_the_parser_is_one_line_starting_error() {
        for args in [&["stager", "stag"][..], &["stager", "stage", "--dest"], &["stager", "plot", "--x"]] {
            let line = usage_line(&rendered(args));
            assert!(line.starts_with("error: ") && !line.contains('\n'), "{args:?}: {line}");
        }
    }
}
