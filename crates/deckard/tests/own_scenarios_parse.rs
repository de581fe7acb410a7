//! The project's own scenarios (`crates/deckard/scenarios`) are read
//! without error or note, without root: a typo in one fails here, before
//! `tests/it/resolver_own_scenarios.rs` plays them.

use std::path::Path;

use bulwark_deckard::parse_file;
use bulwark_deckard::report::select;

#[test]
fn the_projects_own_scenarios_parse() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let files = select(&dir, &[""], None);
    assert!(!files.is_empty(), "no scenarios in {}", dir.display());
    for path in &files {
        let scenario = parse_file(path).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            scenario.notes.is_empty(),
            "{}: {:?}",
            path.display(),
            scenario.notes
        );
        assert!(
            scenario.steps.iter().any(|s| s.entry.is_some()),
            "{}: no step with an entry",
            path.display()
        );
    }
}
