//! Logs to stderr with `tracing`: human-readable by default, one JSON object per
//! line with `--log-format json` (fields `timestamp`, `level`, `target`,
//! `message` and the event's own), for journald, Loki and the like.

use std::collections::BTreeMap;
use std::io::IsTerminal;

use toml::Spanned;
use tracing_subscriber::EnvFilter;

use crate::cli::LogFormat;
use crate::defences::Locate;

/// The levels a `[log] modules` entry may take.
const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

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

/// Lays `[log] modules` (`target = "level"`) over the base `level` filter, as
/// `level,target=level,...`: a module's own level wins over the base one for
/// its events (the more specific directive decides). Each entry is checked;
/// a bad one is reported where its level is written.
pub fn with_modules(
    level: String,
    modules: Option<&BTreeMap<String, Spanned<String>>>,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> String {
    let Some(modules) = modules else {
        return level;
    };
    let mut filter = level;
    for (target, module_level) in modules {
        let value = module_level.get_ref().trim().to_ascii_lowercase();
        if !is_target(target) {
            problems.push(loc.at(
                module_level.span(),
                format!(
                    "modules: `{target}` is not a module path like `bulwark_net` or `bulwark::query`"
                ),
            ));
            continue;
        }
        if !LEVELS.contains(&value.as_str()) {
            problems.push(loc.at(
                module_level.span(),
                format!(
                    "modules: `{target}`: `{}` is not a level ({})",
                    module_level.get_ref(),
                    LEVELS.join(", ")
                ),
            ));
            continue;
        }
        if !filter.is_empty() {
            filter.push(',');
        }
        filter.push_str(target);
        filter.push('=');
        filter.push_str(&value);
    }
    filter
}

/// A Rust module path: identifiers joined by `::`.
fn is_target(target: &str) -> bool {
    !target.is_empty()
        && target.split("::").all(|part| {
            part.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    struct At;
    impl Locate for At {
        fn at(&self, span: std::ops::Range<usize>, message: String) -> String {
            format!("f:{}: {message}", span.start)
        }
    }

    fn modules(toml_text: &str) -> BTreeMap<String, Spanned<String>> {
        toml::from_str(toml_text).unwrap()
    }

    #[test]
    fn modules_are_laid_over_the_base_level() {
        let m = modules("bulwark_net = \"debug\"\n\"bulwark::query\" = \"OFF\"\n");
        let mut problems = Vec::new();
        let filter = with_modules("warn".to_string(), Some(&m), &At, &mut problems);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(filter, "warn,bulwark::query=off,bulwark_net=debug");
        EnvFilter::try_new(&filter).unwrap();
    }

    #[test]
    fn no_modules_keeps_the_level() {
        let mut problems = Vec::new();
        assert_eq!(
            with_modules("info".to_string(), None, &At, &mut problems),
            "info"
        );
    }

    #[test]
    fn bad_level_and_bad_target_are_reported_where_written() {
        let m = modules("bulwark_net = \"loud\"\n\"a b\" = \"info\"\n");
        let mut problems = Vec::new();
        let filter = with_modules("info".to_string(), Some(&m), &At, &mut problems);
        assert_eq!(filter, "info");
        assert_eq!(problems.len(), 2, "{problems:?}");
        // BTreeMap order: "a b" first.
        assert!(
            problems[0].starts_with("f:29: modules: `a b` is not a module path"),
            "{problems:?}"
        );
        assert!(
            problems[1].starts_with("f:14: modules: `bulwark_net`: `loud` is not a level"),
            "{problems:?}"
        );
    }

    #[test]
    fn module_paths_are_identifiers_joined_by_double_colons() {
        assert!(is_target("bulwark_net"));
        assert!(is_target("bulwark::query"));
        assert!(!is_target(""));
        assert!(!is_target("bulwark:query"));
        assert!(!is_target("bulwark=debug"));
        assert!(!is_target("9lives"));
    }
}
