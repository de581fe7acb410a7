//! Every `*.zone` file under `crates/*/tests/data/` parses, prints and parses back
//! to the same records; the printed file is accepted by BIND, Knot and NSD, and
//! BIND and NSD read the same records from it (and BIND from the original).
//!
//! A file's origin comes from a `; origin: NAME` comment in its leading comment
//! block, else from its first `$ORIGIN`, else from the file name. A file whose
//! leading comments say `; roundtrip: skip` is left out (for deliberately broken
//! zones). A peer that is not installed is left out with a note, except under
//! `CI`, where the test fails (see `bulwark_testkit`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use bulwark_proto::{Name, Record};
use bulwark_testkit::require_tool;
use bulwark_zone::parse_str;
use bulwark_zone::printer::{print_zone, write_record};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn zone_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            zone_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "zone") {
            out.push(p);
        }
    }
}

fn all_zone_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for krate in std::fs::read_dir(workspace_root().join("crates"))
        .unwrap()
        .flatten()
    {
        zone_files(&krate.path().join("tests/data"), &mut out);
    }
    out.sort();
    out
}

/// The leading comment block's lines, without the `;`.
fn leading_comments(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .take_while(|l| l.starts_with(';') || l.is_empty())
        .map(|l| l.trim_start_matches(';').trim().to_owned())
        .collect()
}

fn origin_of(path: &Path, text: &str) -> Name {
    let comments = leading_comments(text);
    if let Some(o) = comments.iter().find_map(|c| c.strip_prefix("origin:")) {
        return o.trim().parse().unwrap();
    }
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if words
            .next()
            .is_some_and(|w| w.eq_ignore_ascii_case("$ORIGIN"))
        {
            return words.next().unwrap().parse().unwrap();
        }
    }
    path.file_stem().unwrap().to_str().unwrap().parse().unwrap()
}

fn line(r: &Record) -> String {
    let mut s = String::new();
    write_record(&mut s, r).unwrap();
    s.trim_end().to_owned()
}

/// Sorted and without duplicates (peers drop duplicate records, RFC 2181 §5).
fn normalised(records: &[Record]) -> Vec<Record> {
    let mut v: Vec<(String, String, Record)> = records
        .iter()
        .map(|r| (line(r).to_ascii_lowercase(), line(r), r.clone()))
        .collect();
    v.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let mut out: Vec<Record> = v.into_iter().map(|x| x.2).collect();
    out.dedup();
    out
}

fn assert_same(what: &str, path: &Path, expected: &[Record], got: &[Record]) {
    let (e, g) = (normalised(expected), normalised(got));
    if e != g {
        let el: Vec<String> = e.iter().map(line).collect();
        let gl: Vec<String> = g.iter().map(line).collect();
        let missing: Vec<&String> = el.iter().filter(|l| !gl.contains(l)).collect();
        let extra: Vec<&String> = gl.iter().filter(|l| !el.contains(l)).collect();
        panic!(
            "{}: {what} differs\n  missing: {missing:#?}\n  extra: {extra:#?}",
            path.display()
        );
    }
}

fn parse_or_panic(text: &str, origin: &Name, label: &str) -> Vec<Record> {
    parse_str(text, origin, label).unwrap_or_else(|d| {
        panic!(
            "{label} does not parse:\n{}",
            d.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        )
    })
}

/// The peers' checkers. A missing one is left out with a note, except under
/// `CI`, where it fails the test (see `bulwark_testkit`).
struct Peers {
    bind: Option<PathBuf>,
    nsd: Option<PathBuf>,
    knot: Option<PathBuf>,
}

impl Peers {
    fn find() -> Peers {
        Peers {
            bind: require_tool("named-compilezone"),
            nsd: require_tool("nsd-checkzone"),
            knot: require_tool("knotc"),
        }
    }
}

fn scratch_dir() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "bulwark-roundtrip-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `named-compilezone` output (master-file text with absolute names) for `file`,
/// run from `cwd` because BIND resolves `$INCLUDE` against its working directory.
fn bind_compile(program: &Path, origin: &Name, file: &Path, cwd: &Path) -> String {
    let out = Command::new(program)
        .current_dir(cwd)
        // Host-name rules (check-names) are policy, not syntax.
        .args(["-k", "ignore", "-f", "text", "-F", "text", "-o", "-"])
        .arg(origin.to_string())
        .arg(file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "named-compilezone rejected {}:\n{stdout}\n{}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    // Status lines ("zone ...: loaded serial", "OK") share stdout with the zone.
    stdout
        .lines()
        .filter(|l| !l.starts_with("zone ") && *l != "OK")
        .collect::<Vec<_>>()
        .join("\n")
}

fn nsd_print(program: &Path, origin: &Name, file: &Path) -> String {
    let out = Command::new(program)
        .arg("-p")
        .arg(origin.to_string())
        .arg(file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "nsd-checkzone rejected {}:\n{stdout}\n{}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn knot_check(program: &Path, origin: &Name, file: &Path, dir: &Path) {
    let conf = dir.join("knot.conf");
    std::fs::create_dir_all(dir.join("storage")).unwrap();
    std::fs::write(
        &conf,
        format!(
            "database:\n    storage: {}\nzone:\n  - domain: {origin}\n    file: {}\n",
            dir.join("storage").display(),
            file.display()
        ),
    )
    .unwrap();
    let out = Command::new(program)
        .arg("-c")
        .arg(&conf)
        .arg("zone-check")
        .arg(origin.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "knotc zone-check rejected {}:\n{}{}",
        file.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn round_trip(path: &Path, peers: &Peers) {
    let text = std::fs::read_to_string(path).unwrap();
    let origin = origin_of(path, &text);
    let records = bulwark_zone::parse_file(path, &origin).unwrap_or_else(|d| {
        panic!(
            "{} does not parse:\n{}",
            path.display(),
            d.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        )
    });
    assert!(!records.is_empty(), "{}: no records", path.display());

    let printed = print_zone(&records);
    let again = parse_or_panic(&printed, &origin, "printed");
    assert_same("parse of the printed file", path, &records, &again);
    assert_eq!(
        print_zone(&again),
        printed,
        "{}: printing is not stable",
        path.display()
    );

    let dir = scratch_dir();
    let printed_path = dir.join("printed.zone");
    std::fs::write(&printed_path, &printed).unwrap();
    if let Some(bind) = &peers.bind {
        let cwd = path.parent().unwrap();
        let original = bind_compile(bind, &origin, path, cwd);
        let bind_records = parse_or_panic(&original, &origin, "BIND's copy of the original");
        assert_same(
            "BIND's reading of the original",
            path,
            &records,
            &bind_records,
        );
        let reread = bind_compile(bind, &origin, &printed_path, &dir);
        let bind_records = parse_or_panic(&reread, &origin, "BIND's copy of the printed file");
        assert_same(
            "BIND's reading of the printed file",
            path,
            &records,
            &bind_records,
        );
    }
    if let Some(nsd) = &peers.nsd {
        let nsd = nsd_print(nsd, &origin, &printed_path);
        let nsd_records = parse_or_panic(&nsd, &origin, "NSD's copy of the printed file");
        assert_same(
            "NSD's reading of the printed file",
            path,
            &records,
            &nsd_records,
        );
    }
    if let Some(knot) = &peers.knot {
        knot_check(knot, &origin, &printed_path, &dir);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_test_zone_round_trips_through_the_printer_and_the_peers() {
    let peers = Peers::find();
    let files = all_zone_files();
    assert!(
        files
            .iter()
            .any(|f| f.ends_with("zone/tests/data/everything.zone")),
        "{files:?}"
    );
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        if leading_comments(&text)
            .iter()
            .any(|c| c == "roundtrip: skip")
        {
            continue;
        }
        round_trip(f, &peers);
    }
}
