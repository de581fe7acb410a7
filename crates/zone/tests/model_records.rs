//! A zone gives back the records it was built from, as typed data.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use bulwark_proto::Name;
use bulwark_zone::{parse_str, Zone};

const TEXT: &str = "$TTL 300
@        IN SOA  ns1 hostmaster 7 3600 900 604800 300
@        IN NS   ns1
@        IN MX   10 mail
ns1      IN A    192.0.2.53
mail     IN A    192.0.2.25
mail     IN A    192.0.2.24
www      IN CNAME mail
a.b.c    IN TXT  \"deep\"
";

#[test]
fn records_round_trip_through_a_built_zone() {
    let origin: Name = "example.".parse().unwrap();
    let parsed = parse_str(TEXT, &origin, "t.zone").unwrap();
    let (zone, warnings) = Zone::build(origin, parsed.clone()).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let show =
        |r: &bulwark_proto::Record| format!("{} {} {} {}", r.owner, r.ttl, r.rtype(), r.rdata);
    let mut want: Vec<String> = parsed.iter().map(show).collect();
    let mut got: Vec<String> = zone.records().map(|r| show(&r)).collect();
    want.sort();
    got.sort();
    assert_eq!(got, want);
    assert_eq!(zone.serial(), Some(7));
}

#[test]
fn empty_nonterminals_give_back_no_records() {
    let origin: Name = "example.".parse().unwrap();
    let (zone, _) = Zone::build(
        origin,
        parse_str(TEXT, &"example.".parse().unwrap(), "t").unwrap(),
    )
    .unwrap();
    assert!(zone
        .node(&"b.c.example.".parse().unwrap())
        .unwrap()
        .is_empty_nonterminal());
    assert_eq!(
        zone.records()
            .filter(|r| r.owner == "c.example.".parse::<Name>().unwrap())
            .count(),
        0
    );
}
