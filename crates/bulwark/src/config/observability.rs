//! `[log]`, `[statistics]` and `[prometheus]` as written, and their
//! validation: the log's format and filter, whether statistics are kept, and
//! where the Prometheus endpoint listens.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use serde::Deserialize;
use toml::Spanned;
use tracing_subscriber::EnvFilter;

use super::source::Locate;
use crate::settings::{LogFormat, PrometheusSettings, StatsSettings};

pub const DEFAULT_LOG_LEVEL: &str = "info";
/// The levels a `[log] modules` entry may take.
const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

/// `[log]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogSection {
    /// Spelled as the `--log-format` flag is.
    pub format: Option<crate::cli::LogFormat>,
    pub level: Option<Spanned<String>>,
    /// Levels per module, e.g. `bulwark_net = "debug"`, laid over `level`.
    pub modules: Option<BTreeMap<String, Spanned<String>>>,
    /// One log line per query (debugging; dnstap is the fast way).
    pub queries: Option<bool>,
}

/// `--log-format`, else `[log] format`, else human-readable.
pub fn build_log_format(flag: Option<crate::cli::LogFormat>, s: &LogSection) -> LogFormat {
    match flag.or(s.format).unwrap_or_default() {
        crate::cli::LogFormat::Human => LogFormat::Human,
        crate::cli::LogFormat::Json => LogFormat::Json,
    }
}

/// The log filter: `--log-level`, else `[log] level`, else `info`, each
/// checked, with `[log] modules` laid over it.
pub fn build_log_level(
    flag: Option<&String>,
    s: &LogSection,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> String {
    let level = match (flag, &s.level) {
        (Some(l), _) => {
            if let Err(e) = EnvFilter::try_new(l) {
                problems.push(format!("--log-level: `{l}`: {e}"));
            }
            l.clone()
        }
        (None, Some(l)) => {
            if let Err(e) = EnvFilter::try_new(l.get_ref()) {
                problems.push(loc.at(l.span(), format!("level: `{}`: {e}", l.get_ref())));
            }
            l.get_ref().clone()
        }
        (None, None) => DEFAULT_LOG_LEVEL.to_string(),
    };
    with_modules(level, s.modules.as_ref(), loc, problems)
}

/// Lays `[log] modules` (`target = "level"`) over the base `level` filter, as
/// `level,target=level,...`: a module's own level wins over the base one for
/// its events (the more specific directive decides). Each entry is checked;
/// a bad one is reported where its level is written.
fn with_modules(
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

/// `[statistics]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatisticsSection {
    pub enabled: Option<bool>,
}

/// `[statistics]`: on unless `enabled = false`.
pub fn build_statistics(s: &StatisticsSection) -> StatsSettings {
    StatsSettings {
        enabled: s.enabled.unwrap_or(true),
    }
}

/// `[prometheus]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrometheusSection {
    pub listen: Option<Spanned<String>>,
}

/// `[prometheus]`: off unless `listen` is given; `listen` is `IP:PORT`
/// (`[IPv6]:PORT`).
pub fn build_prometheus(
    s: &PrometheusSection,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> Option<PrometheusSettings> {
    let listen = s.listen.as_ref()?;
    match listen.get_ref().trim().parse::<SocketAddr>() {
        Ok(addr) => Some(PrometheusSettings { listen: addr }),
        Err(e) => {
            problems.push(loc.at(
                listen.span(),
                format!(
                    "[prometheus] listen: `{}`: {e} (expected IP:PORT, like 127.0.0.1:9153)",
                    listen.get_ref()
                ),
            ));
            None
        }
    }
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

    struct AtFile;
    impl Locate for AtFile {
        fn at(&self, span: std::ops::Range<usize>, message: String) -> String {
            format!("f.toml:{}: {message}", span.start)
        }
    }

    #[test]
    fn listen_is_off_by_default_and_checked_when_given() {
        let mut problems = Vec::new();
        assert!(build_prometheus(&PrometheusSection::default(), &AtFile, &mut problems).is_none());
        let good = PrometheusSection {
            listen: Some(Spanned::new(3..17, "127.0.0.1:9153".to_string())),
        };
        let s = build_prometheus(&good, &AtFile, &mut problems).unwrap();
        assert_eq!(s.listen, "127.0.0.1:9153".parse().unwrap());
        let bad = PrometheusSection {
            listen: Some(Spanned::new(3..12, "localhost".to_string())),
        };
        assert!(build_prometheus(&bad, &AtFile, &mut problems).is_none());
        assert_eq!(problems.len(), 1);
        assert!(problems[0].starts_with("f.toml:3: [prometheus] listen: `localhost`"));
    }
}
