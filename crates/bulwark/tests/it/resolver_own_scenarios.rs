//! The project's own resolver scenarios, in Deckard's `.rpl` format, in
//! `crates/deckard/scenarios`: what Deckard's set does not cover (TTL
//! expiry, negative caching, the NXNSAttack budget, DNAME, CNAME chains and
//! loops across zones, forward and stub zones, EDNS fallback, TCP after
//! truncation, serve-stale). They are the project's, so they are always
//! there: unlike Deckard's, they never skip for want of files. They need
//! root (a network namespace per play), as Deckard's do. One, or a few:
//! `BULWARK_SCENARIO=serve_stale` (names, or prefixes ending in `*`). See
//! docs/testing.md, "The project's own scenarios".

use std::path::{Path, PathBuf};

use bulwark_deckard::bulwark::Bulwark;
use bulwark_deckard::report::{
    retry_failed, run_all, select, QminModes, DETAILS_ENV, JOBS_ENV, KEEP_ENV, SELECT_ENV,
};
use bulwark_deckard::runner::namespaces_available;
use bulwark_deckard::RunOptions;

use crate::support;

/// Scenarios bulwark is known to fail, each for a bug of the resolver's
/// (not of the scenario's), with a comment saying which: played and
/// reported, but not required to pass. Take a name out once its bug is
/// fixed (the test says when one passes). Empty: every scenario must pass.
/// (`dname_cross_zone` was here while the resolver dropped the DNAME record
/// from its answers, passing on only the synthesised CNAME.)
const KNOWN_FAILURES: &[&str] = &[];

/// How many more times a scenario that failed is played (forwarder and
/// server choices are random; a time-out under a loaded machine can land
/// late).
const RETRIES: usize = 1;

fn scenario_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deckard/scenarios")
}

#[test]
fn bulwark_replays_its_own_scenarios() {
    match namespaces_available() {
        Ok(()) => {}
        Err(e) if support::in_ci() => panic!("{e}; the scenario tests need root, and CI is set"),
        Err(e) => {
            println!("SKIPPED: {e}");
            return;
        }
    }
    let dir = scenario_dir();
    let selection = std::env::var(SELECT_ENV).ok().filter(|s| !s.is_empty());
    let all = select(&dir, &[""], None);
    assert!(
        !all.is_empty(),
        "no .rpl files in {} (they are part of the repository)",
        dir.display()
    );
    let names: Vec<String> = all
        .iter()
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    for known in KNOWN_FAILURES {
        assert!(
            names.iter().any(|n| n == known),
            "KNOWN_FAILURES names {known}, which is not in {}",
            dir.display()
        );
    }
    let must_pass: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|n| !KNOWN_FAILURES.contains(n))
        .collect();

    let files = select(&dir, &[""], selection.as_deref());
    let jobs = std::env::var(JOBS_ENV)
        .ok()
        .and_then(|j| j.parse().ok())
        .unwrap_or(1);
    let options = RunOptions {
        keep_failed: std::env::var_os(KEEP_ENV).is_some(),
        ..RunOptions::default()
    };
    let bulwark = Bulwark::new(support::bulwark_bin());
    let qmin = QminModes::from_env();
    let mut report = run_all(&files, &bulwark, qmin, jobs, &options);
    let recovered = retry_failed(&mut report, &must_pass, &bulwark, qmin, RETRIES, &options);
    println!("{report}");
    for (name, plays) in &recovered {
        println!("{name} passed on play {plays}");
    }
    let show_all = selection.is_some() || std::env::var_os(DETAILS_ENV).is_some();
    let failed: Vec<&str> = report
        .results
        .iter()
        .filter(|r| !r.passed() && must_pass.contains(&r.name.as_str()))
        .map(|r| r.name.as_str())
        .collect();
    for r in &report.results {
        if !r.passed() && (show_all || failed.contains(&r.name.as_str())) {
            println!("{}", report.details(&r.name));
        }
    }
    let fixed: Vec<&str> = report
        .passed()
        .into_iter()
        .filter(|n| KNOWN_FAILURES.contains(n))
        .collect();
    if !fixed.is_empty() {
        println!(
            "listed in KNOWN_FAILURES but passed (take them out): {}",
            fixed.join(" ")
        );
    }
    assert!(
        failed.is_empty(),
        "bulwark fails {} of its own scenarios: {} (details above)",
        failed.len(),
        failed.join(" ")
    );
}
