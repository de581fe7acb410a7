//! Problems in zone files are reported with file, line, column and what was
//! expected, and parsing goes on to report the others.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use bulwark_proto::Name;
use bulwark_zone::{parse_str, Diagnostic};

fn origin() -> Name {
    "example.com.".parse().unwrap()
}

fn problems(text: &str) -> Vec<String> {
    parse_str(text, &origin(), "db.example")
        .unwrap_err()
        .iter()
        .map(Diagnostic::to_string)
        .collect()
}

const HEAD: &str =
    "$TTL 300\n@ SOA ns hostmaster 1 7200 3600 1209600 300\n@ NS ns\nns A 192.0.2.1\n";

#[test]
fn bad_record_data_points_at_the_offending_field() {
    let text = format!("{HEAD}www A 192.0.2\nmx MX 10\nmx MX ten mail\nsrv SRV 1 2 port target\n");
    let got = problems(&text);
    assert_eq!(got.len(), 4, "{got:#?}");
    assert!(
        got[0].starts_with("db.example:5:7: bad A data, field 1: expected "),
        "{}",
        got[0]
    );
    assert!(got[0].contains("IPv4"), "{}", got[0]);
    // A missing field is reported just past the last token.
    assert!(
        got[1].starts_with("db.example:6:9: bad MX data, field 2: expected "),
        "{}",
        got[1]
    );
    assert!(
        got[2].starts_with("db.example:7:7: bad MX data, field 1: expected "),
        "{}",
        got[2]
    );
    assert!(
        got[3].starts_with("db.example:8:13: bad SRV data, field 3: expected "),
        "{}",
        got[3]
    );
}

#[test]
fn unknown_types_classes_and_ttls_are_named() {
    let text = format!("{HEAD}a FOO 1\nb 1x A 192.0.2.1\nc CH TXT \"x\"\nd 60 60 A 192.0.2.1\n");
    assert_eq!(
        problems(&text),
        vec![
            "db.example:5:3: unknown type FOO",
            "db.example:6:3: bad TTL \"1x\": expected seconds or units such as 1h30m (s, m, h, d, w)",
            "db.example:7:3: class CH differs from the zone's class IN",
            "db.example:8:6: expected a class or a type, found \"60\"",
        ]
    );
}

#[test]
fn directive_problems_are_located() {
    let text = format!(
        "{HEAD}$TTL forever\n$ORIGIN a..b\n$TTL 1 2\n$GENERATE 1-2\n$INCLUDE x.zone\n$WHAT\n"
    );
    assert_eq!(
        problems(&text),
        vec![
            "db.example:5:6: bad TTL \"forever\": expected seconds or units such as 1h30m (s, m, h, d, w)",
            "db.example:6:9: $ORIGIN: bad name \"a..b\": empty label",
            "db.example:7:8: unexpected \"2\" after $TTL's arguments",
            "db.example:8:14: $GENERATE needs a range, an owner, a type and record data",
            "db.example:9:10: $INCLUDE is not available here: text parsed without a file has no directory to find it in",
            "db.example:10:1: unknown directive $WHAT",
        ]
    );
}

#[test]
fn lexical_problems_and_later_records_are_all_reported() {
    let text = format!("{HEAD}t TXT \"never closed\nu A ( 192.0.2.1\n");
    assert_eq!(
        problems(&text),
        vec![
            "db.example:5:7: quoted string not closed before the end of the line",
            "db.example:6:5: '(' never closed",
        ]
    );
}

#[test]
fn columns_count_tabs_as_one_character() {
    let text = format!("{HEAD}\tIN\tA\tnot-an-address\n");
    let got = problems(&text);
    assert_eq!(got.len(), 1);
    assert!(
        got[0].starts_with("db.example:5:7: bad A data, field 1"),
        "{}",
        got[0]
    );
}

#[test]
fn a_wrong_file_stops_after_fifty_problems() {
    let text = format!("{HEAD}{}", "bad BOGUS 1\n".repeat(500));
    assert_eq!(problems(&text).len(), bulwark_zone::parse::MAX_DIAGNOSTICS);
}

#[test]
fn records_without_any_ttl_source_are_an_error() {
    assert_eq!(
        problems("www A 192.0.2.1\n"),
        vec!["db.example:1:1: no TTL: the record gives none, and there is no $TTL, earlier TTL or SOA to take one from (RFC 2308 §4)"]
    );
}
