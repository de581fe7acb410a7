//! Producing catalog zones (RFC 9432): the records written, their stability
//! across restarts and reorderings, and that a consumer reads them back.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use bulwark_proto::rdata::Soa;
use bulwark_proto::{Class, Name, Rdata, Record};
use bulwark_xfr::catalog::{
    catalog_records, member_id, read_catalog, read_catalog_records, CatalogError, MemberSpec,
};
use bulwark_zone::{print_zone, Zone};

fn name(text: &str) -> Name {
    text.parse().unwrap()
}

fn soa(serial: u32) -> Soa {
    Soa {
        mname: name("invalid."),
        rname: name("invalid."),
        serial,
        refresh: 3600,
        retry: 600,
        expire: 2_419_200,
        minimum: 3600,
    }
}

fn apex() -> Name {
    name("catz.example.")
}

fn spec(zone: &str, groups: &[&str], coo: Option<&str>) -> MemberSpec {
    MemberSpec {
        zone: name(zone),
        groups: groups.iter().map(|g| (*g).to_string()).collect(),
        coo: coo.map(name),
    }
}

fn lines(records: &[Record]) -> Vec<String> {
    records.iter().map(Record::to_string).collect()
}

#[test]
fn catalog_has_soa_ns_invalid_version_2_and_one_ptr_per_member() {
    let members = [
        spec("example.com.", &["nodnssec"], None),
        spec("example.net.", &[], Some("new.catz.example.")),
    ];
    let records = catalog_records(&apex(), &members, &soa(7), 0).unwrap();
    let com = String::from_utf8(member_id(&name("example.com."))).unwrap();
    let net = String::from_utf8(member_id(&name("example.net."))).unwrap();
    assert_eq!(
        lines(&records),
        vec![
            "catz.example.\t0\tIN\tSOA\tinvalid. invalid. 7 3600 600 2419200 3600".to_string(),
            "catz.example.\t0\tIN\tNS\tinvalid.".to_string(),
            "version.catz.example.\t0\tIN\tTXT\t\"2\"".to_string(),
            format!("{com}.zones.catz.example.\t0\tIN\tPTR\texample.com."),
            format!("group.{com}.zones.catz.example.\t0\tIN\tTXT\t\"nodnssec\""),
            format!("{net}.zones.catz.example.\t0\tIN\tPTR\texample.net."),
            format!("coo.{net}.zones.catz.example.\t0\tIN\tPTR\tnew.catz.example."),
        ]
    );
    assert!(records.iter().all(|r| r.class == Class::IN));
}

#[test]
fn produced_catalog_builds_as_a_zone_and_reads_back() {
    let members = [
        spec("example.com.", &["b", "a"], None),
        spec("example.net.", &[], None),
        spec("example.org.", &[], Some("other.catz.example.")),
    ];
    let records = catalog_records(&apex(), &members, &soa(1), 3600).unwrap();
    let (zone, warnings) = Zone::build(apex(), records).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let catalog = read_catalog(&zone).unwrap();
    assert_eq!(catalog.members.len(), 3);
    for (m, s) in catalog.members.iter().zip(&members) {
        assert_eq!(m.zone, s.zone);
        assert_eq!(m.unique_id, member_id(&s.zone));
        assert_eq!(m.coo, s.coo);
    }
    assert_eq!(
        catalog.members[0].groups,
        vec!["a".to_string(), "b".to_string()]
    );
}

#[test]
fn printed_catalog_parses_back_to_the_same_members() {
    let members = [
        spec("example.com.", &["g 1", "quote\"d"], None),
        spec("xn--bcher-kva.example.", &[], None),
    ];
    let records = catalog_records(&apex(), &members, &soa(1), 0).unwrap();
    let text = print_zone(&records);
    let parsed = bulwark_zone::parse_str(&text, &apex(), "printed").unwrap();
    assert_eq!(
        read_catalog_records(&apex(), &parsed).unwrap(),
        read_catalog_records(&apex(), &records).unwrap()
    );
}

#[test]
fn group_longer_than_255_octets_survives_the_round_trip() {
    let long = "g".repeat(700);
    let members = [spec("example.com.", &[&long], None)];
    let records = catalog_records(&apex(), &members, &soa(1), 0).unwrap();
    let catalog = read_catalog_records(&apex(), &records).unwrap();
    assert_eq!(catalog.members[0].groups, vec![long]);
}

#[test]
fn same_zone_given_twice_is_refused() {
    let members = [
        spec("example.com.", &[], None),
        spec("EXAMPLE.com.", &["g"], None),
    ];
    assert_eq!(
        catalog_records(&apex(), &members, &soa(1), 0),
        Err(CatalogError::DuplicateMemberSpec {
            zone: Box::new(name("example.com."))
        })
    );
}

#[test]
fn member_names_too_long_for_a_long_catalog_apex_are_refused() {
    // 4 labels of 60 octets: 245 octets; "<16 hex>.zones." does not fit below it.
    let label = "a".repeat(60);
    let long_apex = name(&format!("{label}.{label}.{label}.{label}."));
    let members = [spec("example.com.", &[], None)];
    assert_eq!(
        catalog_records(&long_apex, &members, &soa(1), 0),
        Err(CatalogError::NameTooLong {
            zone: Box::new(name("example.com."))
        })
    );
}

#[test]
fn empty_member_list_gives_a_valid_empty_catalog() {
    let records = catalog_records(&apex(), &[], &soa(1), 0).unwrap();
    assert_eq!(records.len(), 3);
    let (zone, _) = Zone::build(apex(), records).unwrap();
    assert!(read_catalog(&zone).unwrap().members.is_empty());
}

fn thousand_members() -> Vec<MemberSpec> {
    (0..1000)
        .map(|i| {
            spec(
                &format!("zone{i}.example."),
                if i % 3 == 0 { &["g"] } else { &[] },
                None,
            )
        })
        .collect()
}

#[test]
fn thousand_members_round_trip_with_stable_ids_in_any_order() {
    let members = thousand_members();
    let first = catalog_records(&apex(), &members, &soa(1), 0).unwrap();
    let again = catalog_records(&apex(), &members, &soa(1), 0).unwrap();
    assert_eq!(first, again);

    let mut shuffled = members.clone();
    shuffled.reverse();
    // A fixed interleaving as well as the reversal: no order may matter.
    let (evens, odds): (Vec<_>, Vec<_>) = shuffled
        .into_iter()
        .enumerate()
        .partition(|(i, _)| i % 2 == 0);
    let shuffled: Vec<MemberSpec> = odds.into_iter().chain(evens).map(|(_, m)| m).collect();
    assert_ne!(shuffled[0].zone, members[0].zone);
    let reordered = catalog_records(&apex(), &shuffled, &soa(1), 0).unwrap();
    assert_eq!(first, reordered);

    let (zone, _) = Zone::build(apex(), first).unwrap();
    let catalog = read_catalog(&zone).unwrap();
    assert_eq!(catalog.members.len(), 1000);
    for s in &members {
        let m = catalog.member(&s.zone).unwrap();
        assert_eq!(m.unique_id, member_id(&s.zone));
        assert_eq!(m.groups.len(), s.groups.len());
    }
}

#[test]
fn adding_a_member_changes_only_its_own_records() {
    let mut members = thousand_members();
    let before = catalog_records(&apex(), &members, &soa(1), 0).unwrap();
    members.push(spec("new.example.", &[], None));
    let after = catalog_records(&apex(), &members, &soa(2), 0).unwrap();
    let gone: Vec<&Record> = before.iter().filter(|r| !after.contains(r)).collect();
    let new: Vec<&Record> = after.iter().filter(|r| !before.contains(r)).collect();
    assert_eq!(gone.len(), 1);
    assert!(matches!(gone[0].rdata, Rdata::Soa(_)));
    assert_eq!(new.len(), 2);
    assert!(new
        .iter()
        .any(|r| r.rdata == Rdata::Ptr(name("new.example."))));
}
