//! Finding the scenarios, choosing which to run, running them, and the
//! table of results by prefix.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::parse::parse_file;
use crate::resolver::Resolver;
use crate::runner::{run_once, Failure, RunOptions, RunResult, Verdict};

/// A directory of scenarios instead of the default one.
pub const SCENARIOS_ENV: &str = "BULWARK_SCENARIOS";
/// Only these scenarios: names or prefixes ending in `*`, comma-separated
/// (`iter_minim_a`, `iter_pc*,fwd_*`).
pub const SELECT_ENV: &str = "BULWARK_SCENARIO";
/// `on`, `off` or `both`: which QNAME minimisation modes to play scenarios
/// that do not set one (default `both`, as Deckard's CI).
pub const QMIN_ENV: &str = "BULWARK_SCENARIO_QMIN";
/// How many scenarios run at once, each in its own namespace (the test
/// plays one at a time unless told; the `replay` example two).
pub const JOBS_ENV: &str = "BULWARK_SCENARIO_JOBS";
/// Print every failure's details, not only those of the scenarios that
/// must pass.
pub const DETAILS_ENV: &str = "BULWARK_SCENARIO_DETAILS";
/// Keep the work directory of failed runs.
pub const KEEP_ENV: &str = "BULWARK_SCENARIO_KEEP";

/// Where the scenarios are expected: `$BULWARK_SCENARIOS`, else
/// `resolver-scenarios` in the directory `shared` beside the workspace
/// (`WORKSPACE/../shared/resolver-scenarios`), as CI has them.
pub fn scenario_root(workspace: &Path) -> PathBuf {
    let root = match std::env::var_os(SCENARIOS_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => workspace
            .join("..")
            .join("shared")
            .join("resolver-scenarios"),
    };
    std::fs::canonicalize(&root).unwrap_or(root)
}

/// The directory holding the `.rpl` files under `root`: `root` itself, or
/// its `sets/resolver` or `deckard/sets/resolver`.
pub fn scenario_dir(root: &Path) -> Option<PathBuf> {
    [
        root.join("deckard").join("sets").join("resolver"),
        root.join("sets").join("resolver"),
        root.to_path_buf(),
    ]
    .into_iter()
    .find(|d| has_scenarios(d))
}

fn has_scenarios(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == "rpl"))
    })
}

/// The `.rpl` files of `dir` whose names start with one of `prefixes` and
/// pass `selection` (names, or prefixes ending in `*`), sorted by name.
pub fn select(dir: &Path, prefixes: &[&str], selection: Option<&str>) -> Vec<PathBuf> {
    let patterns: Vec<&str> = selection
        .map(|s| {
            s.split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| {
        let Some(name) = scenario_name(p) else {
            return false;
        };
        p.extension().is_some_and(|x| x == "rpl")
            && prefixes.iter().any(|pre| name.starts_with(pre))
            && (patterns.is_empty() || patterns.iter().any(|pat| selected(&name, pat)))
    });
    files.sort();
    files
}

fn selected(name: &str, pattern: &str) -> bool {
    let pattern = pattern.trim_end_matches(".rpl");
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == pattern,
    }
}

fn scenario_name(path: &Path) -> Option<String> {
    path.file_stem().map(|s| s.to_string_lossy().into_owned())
}

/// The group a scenario belongs to in the report: `iter_`, `val_`,
/// `nsec`, ... (what its name starts with, up to the first `_`).
pub fn prefix_of(name: &str) -> &str {
    match name.find('_') {
        Some(i) => name.get(..=i).unwrap_or(name),
        None => name,
    }
}

/// Which QNAME minimisation modes to play.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QminModes {
    On,
    Off,
    Both,
}

impl QminModes {
    /// From `BULWARK_SCENARIO_QMIN` (default: both).
    pub fn from_env() -> QminModes {
        match std::env::var(QMIN_ENV).as_deref() {
            Ok("on") => QminModes::On,
            Ok("off") => QminModes::Off,
            _ => QminModes::Both,
        }
    }

    /// The modes for a scenario that sets `fixed` (or not): Deckard plays
    /// one that sets it once, in its mode, and the others in both.
    pub fn for_scenario(self, fixed: Option<bool>) -> Vec<bool> {
        match (fixed, self) {
            (Some(q), _) => vec![q],
            (None, QminModes::On) => vec![true],
            (None, QminModes::Off) => vec![false],
            (None, QminModes::Both) => vec![true, false],
        }
    }
}

/// Every play of one scenario.
#[derive(Debug, Clone)]
pub struct ScenarioResult {
    pub name: String,
    pub path: PathBuf,
    pub runs: Vec<RunResult>,
    /// A scenario that could not be read does not run.
    pub parse_error: Option<String>,
}

impl ScenarioResult {
    /// Passed only if every play passed.
    pub fn passed(&self) -> bool {
        self.parse_error.is_none()
            && !self.runs.is_empty()
            && self.runs.iter().all(|r| r.verdict == Verdict::Passed)
    }

    /// The first failed play, if any.
    pub fn first_failure(&self) -> Option<(bool, &Failure)> {
        self.runs.iter().find_map(|r| match &r.verdict {
            Verdict::Failed(f) => Some((r.qmin, f)),
            _ => None,
        })
    }

    /// The skip reason, if every play was skipped.
    pub fn skipped(&self) -> Option<&str> {
        let mut reason = None;
        for r in &self.runs {
            match &r.verdict {
                Verdict::Skipped(why) => reason = Some(why.as_str()),
                _ => return None,
            }
        }
        reason
    }

    /// One line: `passed`, `FAILED ...`, `skipped: ...`.
    pub fn status(&self) -> String {
        if let Some(e) = &self.parse_error {
            return format!("FAILED to parse: {e}");
        }
        if let Some((qmin, f)) = self.first_failure() {
            let on_off = |q: bool| if q { "on" } else { "off" };
            let mode = if self.runs.len() > 1 {
                // Say how the other mode went when it passed.
                let other = self
                    .runs
                    .iter()
                    .find(|r| r.qmin != qmin && r.verdict == Verdict::Passed)
                    .map(|r| format!("; qmin {} passed", on_off(r.qmin)))
                    .unwrap_or_default();
                format!(" (qmin {}{other})", on_off(qmin))
            } else {
                String::new()
            };
            return format!("FAILED{mode}: {}", f.summary);
        }
        if let Some(why) = self.skipped() {
            return format!("skipped: {why}");
        }
        "passed".to_string()
    }

    pub fn elapsed(&self) -> Duration {
        self.runs.iter().map(|r| r.elapsed).sum()
    }
}

/// The results of a run of many scenarios against one resolver.
#[derive(Debug, Clone)]
pub struct Report {
    pub resolver: String,
    pub results: Vec<ScenarioResult>,
    pub elapsed: Duration,
}

impl Report {
    pub fn get(&self, name: &str) -> Option<&ScenarioResult> {
        self.results.iter().find(|r| r.name == name)
    }

    /// Names of the scenarios that passed.
    pub fn passed(&self) -> Vec<&str> {
        self.results
            .iter()
            .filter(|r| r.passed())
            .map(|r| r.name.as_str())
            .collect()
    }

    /// The full failure details of `name`'s first failed play.
    pub fn details(&self, name: &str) -> String {
        let Some(r) = self.get(name) else {
            return format!("{name}: not run\n");
        };
        match (r.first_failure(), &r.parse_error) {
            (_, Some(e)) => format!("{name}: {e}\n"),
            (Some((qmin, f)), None) => format!(
                "==== {name} (qmin {}) ====\n{f}\n",
                if qmin { "on" } else { "off" }
            ),
            (None, None) => format!("{name}: {}\n", r.status()),
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "Deckard scenarios against {}: {} scenarios in {:.1}s",
            self.resolver,
            self.results.len(),
            self.elapsed.as_secs_f64()
        )?;
        if let Some(dir) = self.results.first().and_then(|r| r.path.parent()) {
            writeln!(f, "from {}", dir.display())?;
        }
        let mut prefixes: Vec<&str> = self.results.iter().map(|r| prefix_of(&r.name)).collect();
        prefixes.dedup();
        for prefix in prefixes {
            let group: Vec<&ScenarioResult> = self
                .results
                .iter()
                .filter(|r| prefix_of(&r.name) == prefix)
                .collect();
            let passed = group.iter().filter(|r| r.passed()).count();
            let skipped = group.iter().filter(|r| r.skipped().is_some()).count();
            let failed = group.len() - passed - skipped;
            writeln!(
                f,
                "\n{prefix}* ({}): {passed} passed, {failed} failed, {skipped} skipped",
                group.len()
            )?;
            let width = group.iter().map(|r| r.name.len()).max().unwrap_or(0);
            for r in group {
                writeln!(
                    f,
                    "  {:width$}  {:>5.1}s  {}",
                    r.name,
                    r.elapsed().as_secs_f64(),
                    r.status()
                )?;
            }
        }
        Ok(())
    }
}

/// Runs every scenario of `files` against `resolver`, `jobs` at a time,
/// each play in a namespace of its own; results in the order of `files`.
pub fn run_all(
    files: &[PathBuf],
    resolver: &dyn Resolver,
    qmin: QminModes,
    jobs: usize,
    options: &RunOptions,
) -> Report {
    let started = Instant::now();
    let next = Mutex::new(0usize);
    let results: Mutex<Vec<Option<ScenarioResult>>> = Mutex::new(vec![None; files.len()]);
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| loop {
                let i = {
                    let mut n = next
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    let i = *n;
                    *n += 1;
                    i
                };
                let Some(path) = files.get(i) else { return };
                let result = run_file(path, resolver, qmin, options);
                let mut all = results
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if let Some(slot) = all.get_mut(i) {
                    *slot = Some(result);
                }
            });
        }
    });
    Report {
        resolver: resolver.name().to_string(),
        results: results
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .into_iter()
            .flatten()
            .collect(),
        elapsed: started.elapsed(),
    }
}

/// Plays again, up to `attempts` more times, each scenario of `names` in
/// `report` that did not pass, and keeps the first play that passes: for a
/// resolver whose choices vary from run to run (Unbound picks servers at
/// random, and its `harden-referral-path` queries race the answer). A fault
/// of the runner fails every play. Returns the scenarios that passed only on
/// a retry, with the number of plays it took.
pub fn retry_failed(
    report: &mut Report,
    names: &[&str],
    resolver: &dyn Resolver,
    qmin: QminModes,
    attempts: usize,
    options: &RunOptions,
) -> Vec<(String, usize)> {
    let mut recovered = Vec::new();
    for result in &mut report.results {
        if result.passed() || !names.contains(&result.name.as_str()) || result.parse_error.is_some()
        {
            continue;
        }
        for attempt in 1..=attempts {
            let again = run_file(&result.path, resolver, qmin, options);
            if again.passed() {
                *result = again;
                recovered.push((result.name.clone(), attempt + 1));
                break;
            }
        }
    }
    recovered
}

/// Parses and plays one file in every mode it asks for.
pub fn run_file(
    path: &Path,
    resolver: &dyn Resolver,
    qmin: QminModes,
    options: &RunOptions,
) -> ScenarioResult {
    let name = scenario_name(path).unwrap_or_default();
    match parse_file(path) {
        Err(e) => ScenarioResult {
            name,
            path: path.to_path_buf(),
            runs: Vec::new(),
            parse_error: Some(e.to_string()),
        },
        Ok(scenario) => ScenarioResult {
            name,
            path: path.to_path_buf(),
            runs: qmin
                .for_scenario(scenario.config.query_minimization)
                .into_iter()
                .map(|q| run_once(&scenario, resolver, q, options))
                .collect(),
            parse_error: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selections_take_names_and_prefixes() {
        assert!(selected("iter_minim_a", "iter_minim_a"));
        assert!(selected("iter_minim_a", "iter_minim_a.rpl"));
        assert!(!selected("iter_minim_a_nxdomain", "iter_minim_a"));
        assert!(selected("iter_minim_a_nxdomain", "iter_minim*"));
        assert_eq!(prefix_of("iter_minim_a"), "iter_");
        assert_eq!(prefix_of("nsec3_aggr_cache"), "nsec3_");
    }

    #[test]
    fn qmin_modes_follow_the_scenario_first() {
        assert_eq!(QminModes::Both.for_scenario(None), vec![true, false]);
        assert_eq!(QminModes::Both.for_scenario(Some(false)), vec![false]);
        assert_eq!(QminModes::On.for_scenario(Some(false)), vec![false]);
        assert_eq!(QminModes::Off.for_scenario(None), vec![false]);
    }
}
