//! Replays scenarios against Unbound or a bulwark binary, outside the test
//! harness, for working on one scenario or on the runner:
//!
//! ```sh
//! cargo run -p bulwark-deckard --example replay -- unbound iter_minim_a
//! cargo run -p bulwark-deckard --example replay -- unbound 'iter_*,fwd_*'
//! cargo run -p bulwark-deckard --example replay -- bulwark=target/debug/bulwark iter_minim_a
//! ```
//!
//! `UNBOUND_EXTRA='harden-referral-path: no;qname-minimisation-strict: no'`
//! adds lines to Unbound's `server:` clause, to see what a setting changes.
//!
//! Needs root (a network namespace per run). Prints the table and every
//! failure's details. `BULWARK_SCENARIOS`, `BULWARK_SCENARIO_QMIN`,
//! `BULWARK_SCENARIO_JOBS` and `BULWARK_SCENARIO_KEEP` apply as in the test.

use std::path::{Path, PathBuf};

use bulwark_deckard::bulwark::Bulwark;
use bulwark_deckard::report::{
    run_all, scenario_dir, scenario_root, select, QminModes, JOBS_ENV, KEEP_ENV,
};
use bulwark_deckard::unbound::{find_libfaketime, Unbound};
use bulwark_deckard::{Resolver, RunOptions};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(which), Some(selection)) = (args.first(), args.get(1)) else {
        eprintln!("usage: replay unbound|bulwark=PATH SCENARIO[,PATTERN*...]");
        std::process::exit(2);
    };
    let resolver: Box<dyn Resolver> = if which == "unbound" {
        let binary = bulwark_testkit::find_tool("unbound").expect("unbound is not installed");
        let faketime =
            find_libfaketime().expect("libfaketime is not installed (apt-get install faketime)");
        let mut unbound = Unbound::new(binary, faketime);
        // Extra `server:` lines, `;`-separated, for experiments.
        if let Ok(extra) = std::env::var("UNBOUND_EXTRA") {
            unbound.extra = extra.split(';').map(|l| l.trim().to_string()).collect();
        }
        Box::new(unbound)
    } else if let Some(path) = which.strip_prefix("bulwark=") {
        Box::new(Bulwark::new(PathBuf::from(path)))
    } else {
        eprintln!("unknown resolver {which:?}");
        std::process::exit(2);
    };
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let root = scenario_root(&workspace);
    let dir = scenario_dir(&root).unwrap_or_else(|| panic!("no scenarios at {}", root.display()));
    let files = select(&dir, &[""], Some(selection));
    let jobs = std::env::var(JOBS_ENV)
        .ok()
        .and_then(|j| j.parse().ok())
        .unwrap_or(2);
    let options = RunOptions {
        keep_failed: std::env::var_os(KEEP_ENV).is_some(),
        ..RunOptions::default()
    };
    let report = run_all(
        &files,
        resolver.as_ref(),
        QminModes::from_env(),
        jobs,
        &options,
    );
    for r in &report.results {
        if !r.passed() && r.skipped().is_none() {
            println!("{}", report.details(&r.name));
        }
    }
    println!("{report}");
}
