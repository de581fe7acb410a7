//! Logs to stderr with `tracing`: human-readable by default, one JSON object per
//! line with `--log-format json` (fields `timestamp`, `level`, `target`,
//! `message` and the event's own), for journald, Loki and the like.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

use crate::settings::LogFormat;

pub fn init(format: LogFormat, level: &str) -> anyhow::Result<()> {
    let filter = EnvFilter::try_new(level)?;
    // Colour only for a person at a terminal: the journal and log files would
    // keep the escape codes as text. https://no-color.org asks for none at all.
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(std::io::stderr);
    let result = match format {
        // People read the module in the filter they wrote, not in every line.
        LogFormat::Human => builder.with_target(false).try_init(),
        // Machines filter on it (the query log is `bulwark::query`).
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_target(true)
            .try_init(),
    };
    result.map_err(|e| anyhow::anyhow!("cannot start logging: {e}"))
}
