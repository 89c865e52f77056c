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

/// Print `error: {message}` to stderr in a single write. Ranks that fail
/// together share `mpirun`'s stderr, and `eprintln!` writes each formatted
/// piece separately, so their lines came out interleaved mid-word.
pub fn print_error(message: impl std::fmt::Display) {
    use std::io::Write;
    let line = format!("error: {message}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}
