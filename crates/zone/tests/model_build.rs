//! Building a zone: grouping into RRsets, lowercased owners, empty
//! non-terminals, duplicate removal and canonical rdata order.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use bulwark_proto::{Class, Name, Rdata, Record, Rtype};
use bulwark_zone::{Problem, Severity, Zone, ZoneBuilder};

fn n(s: &str) -> Name {
    s.parse().unwrap()
}

fn rec(owner: &str, rtype: Rtype, ttl: u32, data: Vec<u8>) -> Record {
    Record {
        owner: n(owner),
        class: Class::IN,
        ttl,
        rdata: Rdata::Unknown { rtype, data },
    }
}

fn soa_wire(serial: u32) -> Vec<u8> {
    let mut w = n("ns1.example.").as_wire().to_vec();
    w.extend_from_slice(n("hostmaster.example.").as_wire());
    for v in [serial, 3600, 900, 604_800, 300] {
        w.extend_from_slice(&v.to_be_bytes());
    }
    w
}

fn name_wire(s: &str) -> Vec<u8> {
    n(s).as_wire().to_vec()
}

/// SOA, NS and the NS target's address: the least a zone needs to pass the checks.
fn base() -> Vec<Record> {
    vec![
        rec("example.", Rtype::SOA, 3600, soa_wire(2024010101)),
        rec("example.", Rtype::NS, 3600, name_wire("ns1.example.")),
        rec("ns1.example.", Rtype::A, 3600, vec![192, 0, 2, 53]),
    ]
}

fn build(extra: Vec<Record>) -> (Zone, Vec<Problem>) {
    let mut records = base();
    records.extend(extra);
    Zone::build(n("example."), records).expect("zone builds")
}

fn rdatas(zone: &Zone, owner: &str, rtype: Rtype) -> Vec<Vec<u8>> {
    zone.node(&n(owner))
        .and_then(|node| node.rrset(rtype))
        .map(|set| set.rdatas().map(<[u8]>::to_vec).collect())
        .unwrap_or_default()
}

#[test]
fn records_of_one_owner_and_type_form_one_rrset() {
    let (zone, warnings) = build(vec![
        rec("www.example.", Rtype::A, 300, vec![192, 0, 2, 1]),
        rec("www.example.", Rtype::A, 300, vec![192, 0, 2, 2]),
        rec("www.example.", Rtype::TXT, 300, b"\x02hi".to_vec()),
    ]);
    assert!(warnings.is_empty(), "{warnings:?}");
    let node = zone.node(&n("www.example.")).unwrap();
    assert_eq!(node.rrsets().len(), 2);
    assert_eq!(node.rrset(Rtype::A).unwrap().len(), 2);
    assert_eq!(node.rrset(Rtype::A).unwrap().ttl(), 300);
    assert_eq!(node.rrset(Rtype::TXT).unwrap().len(), 1);
    assert!(node.rrset(Rtype::AAAA).is_none());
}

#[test]
fn owners_are_stored_lowercased_and_found_in_any_case() {
    let (zone, _) = build(vec![rec("WWW.Example.", Rtype::A, 300, vec![192, 0, 2, 1])]);
    assert!(zone.node(&n("www.example.")).is_some());
    assert!(zone.node(&n("wWw.EXAMPLE.")).is_some());
    let (owner, _) = zone
        .nodes_canonical()
        .find(|(o, _)| o == &n("www.example."))
        .unwrap();
    assert!(owner.eq_exact(&n("www.example.")));
    assert!(zone
        .node_by_lowercase_wire(n("www.example.").as_wire())
        .is_some());
}

#[test]
fn apex_is_lowercased() {
    let mut records = base();
    records.push(rec("EXAMPLE.", Rtype::TXT, 300, b"\x01x".to_vec()));
    let (zone, _) = Zone::build(n("EXAMPLE."), records).unwrap();
    assert!(zone.apex().eq_exact(&n("example.")));
    assert!(zone.apex_node().unwrap().rrset(Rtype::TXT).is_some());
}

#[test]
fn empty_nonterminals_exist_between_apex_and_owners() {
    let (zone, _) = build(vec![rec(
        "a.b.c.example.",
        Rtype::A,
        300,
        vec![192, 0, 2, 1],
    )]);
    for ent in ["b.c.example.", "c.example."] {
        let node = zone.node(&n(ent)).unwrap_or_else(|| panic!("{ent} exists"));
        assert!(node.is_empty_nonterminal(), "{ent}");
    }
    assert!(!zone
        .node(&n("a.b.c.example."))
        .unwrap()
        .is_empty_nonterminal());
    assert!(zone.node(&n("x.c.example.")).is_none());
    // apex, ns1, a.b.c, b.c, c
    assert_eq!(zone.node_count(), 5);
}

#[test]
fn duplicate_records_are_dropped() {
    let (zone, warnings) = build(vec![
        rec("www.example.", Rtype::A, 300, vec![192, 0, 2, 1]),
        rec("www.example.", Rtype::A, 300, vec![192, 0, 2, 1]),
    ]);
    assert!(warnings.is_empty());
    assert_eq!(
        rdatas(&zone, "www.example.", Rtype::A),
        vec![vec![192, 0, 2, 1]]
    );
}

#[test]
fn names_in_rdata_differing_only_in_case_are_duplicates() {
    let (zone, _) = build(vec![
        rec("sub.example.", Rtype::NS, 300, name_wire("NS.other.")),
        rec("sub.example.", Rtype::NS, 300, name_wire("ns.OTHER.")),
    ]);
    let got = rdatas(&zone, "sub.example.", Rtype::NS);
    assert_eq!(got.len(), 1);
    // The first one given keeps its case for answers.
    assert_eq!(got[0], name_wire("NS.other."));
}

#[test]
fn rdata_is_kept_in_canonical_order() {
    // RFC 4034 §6.3: octet-wise, a shorter prefix sorts first.
    let (zone, _) = build(vec![
        rec("www.example.", Rtype::A, 300, vec![192, 0, 2, 10]),
        rec("www.example.", Rtype::A, 300, vec![10, 0, 0, 1]),
        rec("www.example.", Rtype::A, 300, vec![192, 0, 2, 9]),
        rec("t.example.", Rtype::TXT, 300, b"\x01a\x01b".to_vec()),
        rec("t.example.", Rtype::TXT, 300, b"\x01a".to_vec()),
        rec("t.example.", Rtype::TXT, 300, b"\x00".to_vec()),
    ]);
    assert_eq!(
        rdatas(&zone, "www.example.", Rtype::A),
        vec![vec![10, 0, 0, 1], vec![192, 0, 2, 9], vec![192, 0, 2, 10]]
    );
    assert_eq!(
        rdatas(&zone, "t.example.", Rtype::TXT),
        vec![b"\x00".to_vec(), b"\x01a".to_vec(), b"\x01a\x01b".to_vec()]
    );
}

#[test]
fn canonical_order_ignores_case_of_embedded_names() {
    // "B.example." sorts as "b.example.", after "a.example." but before "c.example.".
    let (zone, _) = build(vec![
        rec("m.example.", Rtype::NS, 300, name_wire("c.other.")),
        rec("m.example.", Rtype::NS, 300, name_wire("B.other.")),
        rec("m.example.", Rtype::NS, 300, name_wire("a.other.")),
    ]);
    assert_eq!(
        rdatas(&zone, "m.example.", Rtype::NS),
        vec![
            name_wire("a.other."),
            name_wire("B.other."),
            name_wire("c.other.")
        ]
    );
}

#[test]
fn differing_ttls_in_an_rrset_use_the_first_and_warn() {
    let (zone, warnings) = build(vec![
        rec("www.example.", Rtype::A, 300, vec![192, 0, 2, 1]),
        rec("www.example.", Rtype::A, 60, vec![192, 0, 2, 2]),
    ]);
    assert_eq!(
        zone.node(&n("www.example."))
            .unwrap()
            .rrset(Rtype::A)
            .unwrap()
            .ttl(),
        300
    );
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = &warnings[0];
    assert_eq!(w.severity, Severity::Warning);
    assert_eq!(w.owner, n("www.example."));
    assert_eq!(w.rtype, Some(Rtype::A));
    assert!(
        w.message.contains("60") && w.message.contains("300"),
        "{}",
        w.message
    );
}

#[test]
fn rrsigs_with_differing_ttls_do_not_warn() {
    let (_, warnings) = build(vec![
        rec(
            "www.example.",
            Rtype::RRSIG,
            300,
            vec![0, 1, 8, 2, 0, 0, 1, 44],
        ),
        rec(
            "www.example.",
            Rtype::RRSIG,
            60,
            vec![0, 16, 8, 2, 0, 0, 0, 60],
        ),
    ]);
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn ttl_above_2_pow_31_warns_and_becomes_zero() {
    let (zone, warnings) = build(vec![rec(
        "www.example.",
        Rtype::A,
        0x8000_0000,
        vec![192, 0, 2, 1],
    )]);
    assert_eq!(
        zone.node(&n("www.example."))
            .unwrap()
            .rrset(Rtype::A)
            .unwrap()
            .ttl(),
        0
    );
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].message.contains("RFC 2181 §8"));
}

#[test]
fn serial_is_read_from_the_soa() {
    let (zone, _) = build(vec![]);
    assert_eq!(zone.serial(), Some(2024010101));
    assert_eq!(zone.soa().unwrap().len(), 1);
    assert_eq!(zone.class(), Class::IN);
}

#[test]
fn wildcards_are_noted() {
    let (plain, _) = build(vec![]);
    assert!(!plain.has_wildcards());
    let (wild, _) = build(vec![rec("*.example.", Rtype::A, 300, vec![192, 0, 2, 1])]);
    assert!(wild.has_wildcards());
}

#[test]
fn records_come_back_in_canonical_owner_order() {
    let (zone, _) = build(vec![
        rec("z.example.", Rtype::A, 300, vec![192, 0, 2, 1]),
        rec("a.example.", Rtype::A, 300, vec![192, 0, 2, 2]),
        rec("b.a.example.", Rtype::A, 300, vec![192, 0, 2, 3]),
    ]);
    let owners: Vec<Name> = zone.records().map(|r| r.owner).collect();
    let mut sorted = owners.clone();
    sorted.sort();
    assert_eq!(owners, sorted);
    assert_eq!(owners.first(), Some(&n("example.")));
    // SOA, NS, ns1 A, and the three above.
    assert_eq!(owners.len(), 6);
    let www: Vec<Record> = zone
        .records()
        .filter(|r| r.owner == n("b.a.example."))
        .collect();
    assert_eq!(www.len(), 1);
    assert_eq!(www[0].ttl, 300);
    assert_eq!(www[0].class, Class::IN);
    assert_eq!(www[0].rtype(), Rtype::A);
    let mut wire = Vec::new();
    www[0].rdata.write_wire(&mut wire);
    assert_eq!(wire, vec![192, 0, 2, 3]);
}

#[test]
fn builder_takes_records_one_at_a_time() {
    let mut b = ZoneBuilder::new(&n("example."));
    for r in base() {
        b.add(&r);
    }
    let (zone, warnings) = Zone::build_from(b).unwrap();
    assert!(warnings.is_empty());
    assert_eq!(zone.node_count(), 2);
}

#[test]
fn the_highest_zone_cut_above_a_name_is_found() {
    let (zone, _) = build(vec![
        rec("sub.example.", Rtype::NS, 300, name_wire("ns.example.net.")),
        rec(
            "deeper.sub.example.",
            Rtype::NS,
            300,
            name_wire("ns.example.net."),
        ),
        rec("www.example.", Rtype::A, 300, vec![192, 0, 2, 1]),
    ]);
    let (cut, node) = zone.zone_cut_above(&n("a.Deeper.SUB.example.")).unwrap();
    assert_eq!(cut, n("sub.example."));
    assert!(node.has(Rtype::NS));
    assert_eq!(
        zone.zone_cut_above(&n("sub.example.")).unwrap().0,
        n("sub.example.")
    );
    assert!(zone.zone_cut_above(&n("www.example.")).is_none());
    // The apex NS is not a cut.
    assert!(zone.zone_cut_above(&n("example.")).is_none());
    assert!(zone.zone_cut_above(&n("example.net.")).is_none());
}

#[test]
fn rrsigs_are_selected_by_the_type_they_cover() {
    let sig_a = vec![0, 1, 8, 2, 0, 0, 1, 44];
    let sig_txt = vec![0, 16, 8, 2, 0, 0, 1, 44];
    let (zone, _) = build(vec![
        rec("www.example.", Rtype::RRSIG, 300, sig_a.clone()),
        rec("www.example.", Rtype::RRSIG, 300, sig_txt.clone()),
    ]);
    let node = zone.node(&n("www.example.")).unwrap();
    assert_eq!(
        node.rrsigs_covering(Rtype::A).collect::<Vec<_>>(),
        vec![&sig_a[..]]
    );
    assert_eq!(
        node.rrsigs_covering(Rtype::TXT).collect::<Vec<_>>(),
        vec![&sig_txt[..]]
    );
    assert_eq!(node.rrsigs_covering(Rtype::MX).count(), 0);
}
