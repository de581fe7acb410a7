//! Loading a master file: parse, check, build, and how problems are reported.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::path::PathBuf;

use bulwark_proto::{Name, Rtype};
use bulwark_zone::load::{load_zone_file_with_warnings, LoadError};
use bulwark_zone::load_zone_file;

fn n(s: &str) -> Name {
    s.parse().unwrap()
}

/// Writes `text` to a file named after the test in cargo's per-target temp dir.
fn zone_file(test: &str, text: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("h6-load-{test}.zone"));
    std::fs::write(&path, text).unwrap();
    path
}

const HEAD: &str = "$TTL 3600\n\
@ IN SOA ns1 hostmaster 2024010101 3600 900 604800 300\n\
@ IN NS ns1\n\
ns1 IN A 192.0.2.53\n";

#[test]
fn a_valid_file_loads_into_a_zone() {
    let path = zone_file(
        "valid",
        &format!("{HEAD}www IN A 192.0.2.1\nWWW IN A 192.0.2.2\n"),
    );
    let zone = load_zone_file(&n("example."), &path).unwrap();
    assert_eq!(zone.serial(), Some(2024010101));
    assert_eq!(
        zone.node(&n("www.example."))
            .unwrap()
            .rrset(Rtype::A)
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn syntax_errors_name_file_line_and_column() {
    let path = zone_file("syntax", &format!("{HEAD}www IN A not-an-address\n"));
    let err = load_zone_file(&n("example."), &path).unwrap_err();
    let shown = err.to_string();
    assert_eq!(err.problems.len(), 1, "{shown}");
    assert!(
        shown.starts_with(&format!("{}:5:", path.display())),
        "{shown}"
    );
}

#[test]
fn check_errors_name_file_owner_and_type_one_per_line() {
    let path = zone_file(
        "checks",
        &format!("{HEAD}www IN CNAME web.example.net.\nwww IN TXT \"x\"\nsub IN NS ns.sub\n"),
    );
    let err: LoadError = load_zone_file(&n("example."), &path).unwrap_err();
    let file = path.display().to_string();
    assert_eq!(err.problems.len(), 2, "{err}");
    assert!(
        err.problems[0].starts_with(&format!("{file}: sub.example. NS: missing glue")),
        "{err}"
    );
    assert!(
        err.problems[1].starts_with(&format!(
            "{file}: www.example. CNAME: CNAME beside other data"
        )),
        "{err}"
    );
    assert_eq!(err.to_string().lines().count(), 2);
}

#[test]
fn warnings_do_not_stop_a_load() {
    let path = zone_file(
        "warnings",
        &format!("{HEAD}sub IN NS ns.example.net.\nhidden.sub IN TXT \"x\"\n"),
    );
    let loaded = load_zone_file_with_warnings(&n("example."), &path).unwrap();
    assert_eq!(loaded.warnings.len(), 1);
    let lines = loaded.warning_lines("db.example");
    assert!(
        lines[0].starts_with("db.example: hidden.sub.example.: warning:"),
        "{lines:?}"
    );
    assert!(loaded.zone.node(&n("hidden.sub.example.")).is_some());
}

#[test]
fn an_unreadable_file_is_a_load_error() {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("h6-load-does-not-exist.zone");
    let err = load_zone_file(&n("example."), &path).unwrap_err();
    assert!(!err.problems.is_empty());
}

/// Runs the second closure on a scoped thread, as the server does.
struct Threads;

impl bulwark_zone::Fork for Threads {
    fn join<A: Send, B: Send>(
        &self,
        a: impl FnOnce() -> A + Send,
        b: impl FnOnce() -> B + Send,
    ) -> (A, B) {
        std::thread::scope(|s| {
            let b = s.spawn(b);
            let a = a();
            (a, b.join().unwrap())
        })
    }
}

#[test]
fn a_large_file_loads_in_parts_into_the_same_zone() {
    use bulwark_zone::load::load_zone_file_in_parts;
    use bulwark_zone::parse::split::MIN_PART_OCTETS;
    // Enough text for three parts; duplicates and a TTL clash across the
    // parts must be resolved as in one pass (first record's TTL kept).
    let mut text = String::from(HEAD);
    let mut i = 0;
    while text.len() < 3 * MIN_PART_OCTETS + 4096 {
        text.push_str(&format!(
            "h{i} IN A 192.0.2.{}\n\tIN AAAA 2001:db8::{i:x}\nmx{i} MX 10 h{i}\n",
            i % 256
        ));
        i += 1;
    }
    text.push_str("h1 IN A 192.0.2.1\nh2 60 IN A 192.0.2.99\nWILD.h3 TXT \"last\"\n");
    let path = zone_file("in-parts", &text);
    let origin = n("example.");
    let whole = load_zone_file_with_warnings(&origin, &path).unwrap();
    let parts = load_zone_file_in_parts(&origin, &path, &Threads, 3).unwrap();
    assert_eq!(parts.zone.node_count(), whole.zone.node_count());
    assert!(parts.zone.records().eq(whole.zone.records()));
    assert_eq!(parts.warnings, whole.warnings);
    assert_eq!(whole.warnings.len(), 1, "{:?}", whole.warnings);
}

/// A zone with a warning at many names: MX targets in the zone without an
/// address, spread over both halves the checks split the zone into, and a
/// builder warning (differing TTLs) in between.
fn many_warnings_text(extra: &str) -> String {
    let mut text = String::from(HEAD);
    for i in 0..40 {
        text.push_str(&format!("m{i:02} IN MX 10 nowhere{i:02}\n"));
        text.push_str(&format!("m{i:02} IN A 192.0.2.{i}\n"));
        if i == 20 {
            text.push_str("ttl IN A 192.0.2.1\nttl 60 IN A 192.0.2.2\n");
        }
    }
    text.push_str(extra);
    text
}

#[test]
fn a_load_keeping_a_few_warnings_keeps_the_first_in_zone_order_and_counts_the_rest() {
    use bulwark_zone::load::load_zone_file_keeping;
    let path = zone_file("keeping", &many_warnings_text(""));
    let origin = n("example.");
    let all = load_zone_file_with_warnings(&origin, &path).unwrap();
    assert_eq!(all.warnings.len(), 41, "{:?}", all.warnings);
    assert_eq!(all.unkept_warnings, 0);
    for keep in [0, 1, 5, 30, 41, 100] {
        let some = load_zone_file_keeping(&origin, &path, &Threads, 2, keep).unwrap();
        let kept = keep.min(41);
        assert_eq!(some.warnings, all.warnings[..kept], "keeping {keep}");
        assert_eq!(some.unkept_warnings, 41 - kept, "keeping {keep}");
        assert!(some.zone.records().eq(all.zone.records()));
    }
}

#[test]
fn a_failed_load_keeping_a_few_warnings_lists_every_error_and_counts_the_rest() {
    use bulwark_zone::load::load_zone_file_keeping;
    let path = zone_file(
        "keeping-errors",
        &many_warnings_text("a IN CNAME b\na IN TXT \"x\"\nz IN CNAME b\nz IN A 192.0.2.9\n"),
    );
    let origin = n("example.");
    let all = load_zone_file(&origin, &path).unwrap_err();
    let errors = all
        .problems
        .iter()
        .filter(|p| !p.contains("warning:"))
        .count();
    assert_eq!(errors, 2, "{all}");
    let some = load_zone_file_keeping(&origin, &path, &Threads, 2, 3).unwrap_err();
    let (kept_errors, kept_warnings): (Vec<&String>, Vec<&String>) = some.problems
        [..some.problems.len() - 1]
        .iter()
        .partition(|p| !p.contains("warning:"));
    assert_eq!(kept_errors.len(), 2, "{some}");
    assert_eq!(kept_warnings.len(), 3, "{some}");
    assert!(
        some.problems
            .last()
            .unwrap()
            .ends_with(": and 38 more warnings"),
        "{some}"
    );
}
