//! The streaming parser entry points hand out exactly the records of the
//! `Vec` ones, in the same order, and hold back only records waiting for the
//! SOA minimum TTL (RFC 2308 §4).
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::path::{Path, PathBuf};

use bulwark_proto::{Name, Record, Rtype};
use bulwark_zone::parse::{parse_file_with, parse_str_with};
use bulwark_zone::{load_zone_file, parse_file, parse_str, Diagnostic};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// The `; origin: NAME.` line every test zone carries.
fn origin_of(path: &Path) -> Name {
    let text = std::fs::read_to_string(path).unwrap();
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("; origin: "))
        .unwrap_or_else(|| panic!("{} has no origin line", path.display()));
    line.trim().parse().unwrap()
}

fn streamed_file(path: &Path, origin: &Name) -> (Vec<Record>, Result<(), Vec<Diagnostic>>) {
    let mut records = Vec::new();
    let result = parse_file_with(path, origin, &mut |r| records.push(r.clone()));
    (records, result)
}

fn streamed_str(text: &str, origin: &Name) -> (Vec<Record>, Result<(), Vec<Diagnostic>>) {
    let mut records = Vec::new();
    let result = parse_str_with(text, origin, "t.zone", &mut |r| records.push(r.clone()));
    (records, result)
}

fn owners_and_ttls(records: &[Record]) -> Vec<(String, u32)> {
    records
        .iter()
        .map(|r| (r.owner.to_string(), r.ttl))
        .collect()
}

#[test]
fn streaming_parse_of_every_test_zone_matches_the_vec_parse_record_for_record() {
    let mut zones: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "zone"))
        .collect();
    zones.sort();
    assert!(zones.len() >= 4, "{zones:?}");
    for path in &zones {
        let origin = origin_of(path);
        let (streamed, result) = streamed_file(path, &origin);
        match parse_file(path, &origin) {
            Ok(records) => {
                assert_eq!(result, Ok(()), "{}", path.display());
                assert!(!records.is_empty(), "{}", path.display());
                assert_eq!(streamed, records, "{}", path.display());
            }
            // The same diagnostics; what the sink got before them is discarded.
            Err(diagnostics) => assert_eq!(result, Err(diagnostics), "{}", path.display()),
        }
    }
}

#[test]
fn streaming_parse_of_text_matches_the_vec_parse() {
    let origin: Name = "example.".parse().unwrap();
    let text = "$TTL 60\n@ SOA ns hm 1 2 3 4 5\n NS ns\nns A 192.0.2.1\n 30 AAAA 2001:db8::1\n$ORIGIN sub\nx TXT \"a\"\n";
    let (streamed, result) = streamed_str(text, &origin);
    assert_eq!(result, Ok(()));
    assert_eq!(streamed, parse_str(text, &origin, "t.zone").unwrap());
    assert_eq!(streamed.len(), 5);
}

#[test]
fn records_without_ttl_before_the_soa_wait_for_its_minimum_and_keep_file_order() {
    let origin: Name = "example.".parse().unwrap();
    // No $TTL and no TTL on `a`: it takes the SOA minimum (RFC 2308 §4), which is
    // only known three lines later. `b` has its own TTL but comes after `a`, so it
    // waits too; the SOA then takes b's TTL as the last one given (RFC 1035 §5.1).
    let text = "a A 192.0.2.1\nb 60 A 192.0.2.2\n@ SOA ns hm 1 2 3 4 777\n NS ns\nns A 192.0.2.3\n";
    let (streamed, result) = streamed_str(text, &origin);
    assert_eq!(result, Ok(()));
    assert_eq!(streamed, parse_str(text, &origin, "t.zone").unwrap());
    assert_eq!(
        owners_and_ttls(&streamed),
        vec![
            ("a.example.".to_owned(), 777),
            ("b.example.".to_owned(), 60),
            ("example.".to_owned(), 60),
            ("example.".to_owned(), 60),
            ("ns.example.".to_owned(), 60),
        ]
    );
}

#[test]
fn records_with_nothing_but_the_soa_to_take_a_ttl_from_all_get_its_minimum() {
    let origin: Name = "example.".parse().unwrap();
    let text = "early A 192.0.2.9\n@ SOA ns hm 1 2 3 4 321\n NS ns\nns A 192.0.2.1\n";
    let (streamed, result) = streamed_str(text, &origin);
    assert_eq!(result, Ok(()));
    assert_eq!(streamed, parse_str(text, &origin, "t.zone").unwrap());
    assert!(streamed.iter().all(|r| r.ttl == 321), "{streamed:?}");
    assert_eq!(streamed[1].rtype(), Rtype::SOA);
}

#[test]
fn records_are_handed_out_before_the_parse_ends() {
    let origin: Name = "example.".parse().unwrap();
    // The held `a` is released when the SOA comes, and the later records as they
    // are read: all reach the sink although a bad line ends the parse in error.
    let text =
        "a A 192.0.2.1\n@ SOA ns hm 1 2 3 4 5\n NS ns\nns A 192.0.2.3\nbad A not-an-address\n";
    let (streamed, result) = streamed_str(text, &origin);
    let diagnostics = result.unwrap_err();
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    assert_eq!(diagnostics[0].line, 5);
    assert_eq!(
        owners_and_ttls(&streamed),
        vec![
            ("a.example.".to_owned(), 5),
            ("example.".to_owned(), 5),
            ("example.".to_owned(), 5),
            ("ns.example.".to_owned(), 5),
        ]
    );
}

#[test]
fn records_without_ttl_and_no_soa_are_never_released_and_reported_once() {
    let origin: Name = "example.".parse().unwrap();
    let text = "a A 192.0.2.1\nb 60 A 192.0.2.2\nc A 192.0.2.3\n";
    let (streamed, result) = streamed_str(text, &origin);
    assert!(streamed.is_empty(), "{streamed:?}");
    let diagnostics = result.unwrap_err();
    assert_eq!(Err(diagnostics.clone()), parse_str(text, &origin, "t.zone"));
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    assert_eq!((diagnostics[0].line, diagnostics[0].column), (1, 1));
    assert!(
        diagnostics[0].message.starts_with("no TTL:"),
        "{}",
        diagnostics[0]
    );
}

#[test]
fn streamed_load_builds_the_zone_the_records_describe() {
    let path = data_dir().join("everything.zone");
    let origin = origin_of(&path);
    let zone = load_zone_file(&origin, &path).unwrap();
    let records = parse_file(&path, &origin).unwrap();
    let again = bulwark_zone::load::load_records(&origin, records, "x")
        .unwrap()
        .zone;
    let a: Vec<Record> = zone.records().collect();
    let b: Vec<Record> = again.records().collect();
    assert!(a.len() > 20, "{}", a.len());
    assert_eq!(a, b);
    assert_eq!(zone.node_count(), again.node_count());
}
