//! Load-time checks: one test per rule, each naming the owner and type at fault.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use bulwark_proto::{Class, Name, Rdata, Record, Rtype};
use bulwark_zone::{Problem, Severity, Zone};

fn n(s: &str) -> Name {
    s.parse().unwrap()
}

fn rec(owner: &str, rtype: Rtype, data: Vec<u8>) -> Record {
    Record {
        owner: n(owner),
        class: Class::IN,
        ttl: 3600,
        rdata: Rdata::Unknown { rtype, data },
    }
}

fn soa(serial: u32) -> Vec<u8> {
    let mut w = n("ns1.example.").as_wire().to_vec();
    w.extend_from_slice(n("hostmaster.example.").as_wire());
    for v in [serial, 3600, 900, 604_800, 300] {
        w.extend_from_slice(&v.to_be_bytes());
    }
    w
}

fn name(s: &str) -> Vec<u8> {
    n(s).as_wire().to_vec()
}

fn mx(pref: u16, target: &str) -> Vec<u8> {
    let mut w = pref.to_be_bytes().to_vec();
    w.extend_from_slice(n(target).as_wire());
    w
}

fn srv(target: &str) -> Vec<u8> {
    let mut w = vec![0, 10, 0, 5, 0x01, 0xbb];
    w.extend_from_slice(n(target).as_wire());
    w
}

const ADDR: [u8; 4] = [192, 0, 2, 1];

fn base() -> Vec<Record> {
    vec![
        rec("example.", Rtype::SOA, soa(1)),
        rec("example.", Rtype::NS, name("ns1.example.")),
        rec("ns1.example.", Rtype::A, ADDR.to_vec()),
    ]
}

/// Every problem for `base()` plus `extra`, whether or not the zone loaded.
fn problems(extra: Vec<Record>) -> Vec<Problem> {
    let mut records = base();
    records.extend(extra);
    problems_of(records)
}

fn problems_of(records: Vec<Record>) -> Vec<Problem> {
    match Zone::build(n("example."), records) {
        Ok((_, warnings)) => warnings,
        Err(all) => all,
    }
}

/// The single problem reported, checked for severity, owner and type.
fn only(problems: &[Problem], severity: Severity, owner: &str, rtype: Option<Rtype>) -> String {
    assert_eq!(problems.len(), 1, "{problems:#?}");
    let p = &problems[0];
    assert_eq!(p.severity, severity, "{p}");
    assert_eq!(p.owner, n(owner), "{p}");
    assert_eq!(p.rtype, rtype, "{p}");
    p.message.clone()
}

#[test]
fn a_clean_zone_has_no_problems() {
    assert_eq!(problems(vec![]), vec![]);
}

#[test]
fn missing_soa_is_an_error() {
    let records = vec![
        rec("example.", Rtype::NS, name("ns1.example.")),
        rec("ns1.example.", Rtype::A, ADDR.to_vec()),
    ];
    let msg = only(
        &problems_of(records),
        Severity::Error,
        "example.",
        Some(Rtype::SOA),
    );
    assert!(msg.contains("no SOA"), "{msg}");
}

#[test]
fn an_empty_zone_lacks_soa_and_ns() {
    let all = problems_of(vec![]);
    assert_eq!(all.len(), 2, "{all:#?}");
    assert!(all.iter().all(Problem::is_error));
}

#[test]
fn several_soas_at_the_apex_are_an_error() {
    let msg = only(
        &problems(vec![rec("example.", Rtype::SOA, soa(2))]),
        Severity::Error,
        "example.",
        Some(Rtype::SOA),
    );
    assert!(msg.contains("2 SOA records"), "{msg}");
}

#[test]
fn a_repeated_identical_soa_is_only_a_duplicate() {
    assert_eq!(problems(vec![rec("example.", Rtype::SOA, soa(1))]), vec![]);
}

#[test]
fn missing_apex_ns_is_an_error() {
    let records = vec![rec("example.", Rtype::SOA, soa(1))];
    let msg = only(
        &problems_of(records),
        Severity::Error,
        "example.",
        Some(Rtype::NS),
    );
    assert!(msg.contains("no NS"), "{msg}");
}

#[test]
fn soa_below_the_apex_is_an_error() {
    let msg = only(
        &problems(vec![rec("sub.example.", Rtype::SOA, soa(1))]),
        Severity::Error,
        "sub.example.",
        Some(Rtype::SOA),
    );
    assert!(msg.contains("outside the zone apex"), "{msg}");
}

#[test]
fn out_of_zone_data_is_an_error() {
    let msg = only(
        &problems(vec![rec("www.example.net.", Rtype::A, ADDR.to_vec())]),
        Severity::Error,
        "www.example.net.",
        Some(Rtype::A),
    );
    assert!(msg.contains("out of zone"), "{msg}");
}

#[test]
fn a_name_that_only_ends_like_the_origin_is_out_of_zone() {
    let all = problems(vec![rec("notexample.", Rtype::A, ADDR.to_vec())]);
    only(&all, Severity::Error, "notexample.", Some(Rtype::A));
}

#[test]
fn cname_beside_other_data_is_an_error() {
    let msg = only(
        &problems(vec![
            rec("www.example.", Rtype::CNAME, name("web.example.net.")),
            rec("www.example.", Rtype::A, ADDR.to_vec()),
        ]),
        Severity::Error,
        "www.example.",
        Some(Rtype::CNAME),
    );
    assert!(msg.contains("beside other data (A)"), "{msg}");
}

#[test]
fn cname_beside_its_rrsig_and_nsec_is_allowed() {
    assert_eq!(
        problems(vec![
            rec("www.example.", Rtype::CNAME, name("web.example.net.")),
            rec("www.example.", Rtype::RRSIG, vec![0, 5, 8, 2]),
            rec("www.example.", Rtype::NSEC, vec![0]),
        ]),
        vec![]
    );
}

#[test]
fn several_cnames_at_one_name_are_an_error() {
    let msg = only(
        &problems(vec![
            rec("www.example.", Rtype::CNAME, name("a.example.net.")),
            rec("www.example.", Rtype::CNAME, name("b.example.net.")),
        ]),
        Severity::Error,
        "www.example.",
        Some(Rtype::CNAME),
    );
    assert!(msg.contains("2 CNAME records"), "{msg}");
}

#[test]
fn cname_at_the_apex_is_an_error() {
    let msg = only(
        &problems(vec![rec("example.", Rtype::CNAME, name("example.net."))]),
        Severity::Error,
        "example.",
        Some(Rtype::CNAME),
    );
    assert!(msg.contains("apex"), "{msg}");
}

#[test]
fn several_dnames_at_one_name_are_an_error() {
    let all = problems(vec![
        rec("d.example.", Rtype::DNAME, name("a.example.net.")),
        rec("d.example.", Rtype::DNAME, name("b.example.net.")),
    ]);
    let msg = only(&all, Severity::Error, "d.example.", Some(Rtype::DNAME));
    assert!(msg.contains("2 DNAME"), "{msg}");
}

#[test]
fn data_below_a_dname_is_occluded_and_warned() {
    let msg = only(
        &problems(vec![
            rec("d.example.", Rtype::DNAME, name("example.net.")),
            rec("x.d.example.", Rtype::TXT, b"\x01x".to_vec()),
        ]),
        Severity::Warning,
        "x.d.example.",
        None,
    );
    assert!(
        msg.contains("TXT occluded by the DNAME at d.example."),
        "{msg}"
    );
}

#[test]
fn a_dname_at_the_apex_occludes_every_name_below_and_outranks_a_cut() {
    let all = problems(vec![
        rec("example.", Rtype::DNAME, name("example.net.")),
        rec("x.example.", Rtype::TXT, b"\x01x".to_vec()),
        rec("cut.example.", Rtype::NS, name("ns.elsewhere.")),
        rec("a.cut.example.", Rtype::TXT, b"\x01x".to_vec()),
    ]);
    // The highest occluding ancestor decides: the apex DNAME, not the cut.
    for owner in [
        "x.example.",
        "cut.example.",
        "a.cut.example.",
        "ns1.example.",
    ] {
        let found = all.iter().find(|p| p.owner == n(owner));
        assert!(
            found.is_some_and(|p| p.severity == Severity::Warning
                && p.message.contains("occluded by the DNAME at example.")),
            "{owner}: {all:#?}"
        );
    }
}

#[test]
fn data_beside_a_dname_is_not_occluded() {
    assert_eq!(
        problems(vec![
            rec("d.example.", Rtype::DNAME, name("example.net.")),
            rec("d.example.", Rtype::TXT, b"\x01x".to_vec()),
        ]),
        vec![]
    );
}

#[test]
fn non_glue_below_a_delegation_is_occluded_and_warned() {
    let msg = only(
        &problems(vec![
            rec("sub.example.", Rtype::NS, name("ns.example.net.")),
            rec("www.sub.example.", Rtype::TXT, b"\x01x".to_vec()),
        ]),
        Severity::Warning,
        "www.sub.example.",
        None,
    );
    assert!(
        msg.contains("below the delegation at sub.example."),
        "{msg}"
    );
}

#[test]
fn glue_below_a_delegation_is_accepted() {
    assert_eq!(
        problems(vec![
            rec("sub.example.", Rtype::NS, name("ns.sub.example.")),
            rec("ns.sub.example.", Rtype::A, ADDR.to_vec()),
            rec(
                "ns.sub.example.",
                Rtype::AAAA,
                vec![0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
            ),
        ]),
        vec![]
    );
}

#[test]
fn child_data_at_a_delegation_point_is_warned() {
    let msg = only(
        &problems(vec![
            rec("sub.example.", Rtype::NS, name("ns.example.net.")),
            rec("sub.example.", Rtype::MX, mx(10, "mail.example.net.")),
        ]),
        Severity::Warning,
        "sub.example.",
        None,
    );
    assert!(msg.contains("MX at a delegation point"), "{msg}");
}

#[test]
fn missing_glue_below_a_delegation_is_an_error() {
    let msg = only(
        &problems(vec![rec(
            "sub.example.",
            Rtype::NS,
            name("ns.sub.example."),
        )]),
        Severity::Error,
        "sub.example.",
        Some(Rtype::NS),
    );
    assert!(msg.contains("missing glue"), "{msg}");
    assert!(msg.contains("ns.sub.example."), "{msg}");
}

#[test]
fn missing_glue_in_a_sibling_delegation_is_an_error() {
    let all = problems(vec![
        rec("a.example.", Rtype::NS, name("ns.b.example.")),
        rec("b.example.", Rtype::NS, name("ns.example.net.")),
    ]);
    let msg = only(&all, Severity::Error, "a.example.", Some(Rtype::NS));
    assert!(msg.contains("delegation at b.example."), "{msg}");
}

#[test]
fn in_zone_apex_ns_target_without_address_is_an_error() {
    let records = vec![
        rec("example.", Rtype::SOA, soa(1)),
        rec("example.", Rtype::NS, name("ns1.example.")),
    ];
    let msg = only(
        &problems_of(records),
        Severity::Error,
        "example.",
        Some(Rtype::NS),
    );
    assert!(msg.contains("ns1.example."), "{msg}");
}

#[test]
fn out_of_zone_ns_targets_need_no_glue() {
    assert_eq!(
        problems(vec![rec(
            "sub.example.",
            Rtype::NS,
            name("ns.example.net.")
        )]),
        vec![]
    );
}

#[test]
fn ns_target_that_is_an_alias_is_warned() {
    let all = problems(vec![
        rec("example.", Rtype::NS, name("alias.example.")),
        rec("alias.example.", Rtype::CNAME, name("ns1.example.")),
    ]);
    let msg = only(&all, Severity::Warning, "example.", Some(Rtype::NS));
    assert!(msg.contains("alias.example. is an alias"), "{msg}");
}

#[test]
fn mx_target_that_is_an_alias_is_warned() {
    let all = problems(vec![
        rec("example.", Rtype::MX, mx(10, "mail.example.")),
        rec("mail.example.", Rtype::CNAME, name("ns1.example.")),
    ]);
    let msg = only(&all, Severity::Warning, "example.", Some(Rtype::MX));
    assert!(msg.contains("RFC 2181 §10.3"), "{msg}");
}

#[test]
fn srv_target_that_is_an_alias_is_warned() {
    let all = problems(vec![
        rec("_https._tcp.example.", Rtype::SRV, srv("web.example.")),
        rec("web.example.", Rtype::CNAME, name("ns1.example.")),
    ]);
    only(
        &all,
        Severity::Warning,
        "_https._tcp.example.",
        Some(Rtype::SRV),
    );
}

#[test]
fn ttl_over_2_pow_31_minus_1_is_warned() {
    let mut r = rec("www.example.", Rtype::A, ADDR.to_vec());
    r.ttl = u32::MAX;
    let msg = only(
        &problems(vec![r]),
        Severity::Warning,
        "www.example.",
        Some(Rtype::A),
    );
    assert!(msg.contains("treated as 0"), "{msg}");
}

#[test]
fn a_record_of_another_class_is_an_error() {
    let mut r = rec("www.example.", Rtype::A, ADDR.to_vec());
    r.class = Class::CH;
    let msg = only(
        &problems(vec![r]),
        Severity::Error,
        "www.example.",
        Some(Rtype::A),
    );
    assert!(msg.contains("class CH"), "{msg}");
}

#[test]
fn meta_types_are_not_zone_data() {
    let all = problems(vec![rec("www.example.", Rtype::OPT, vec![])]);
    only(&all, Severity::Error, "www.example.", Some(Rtype::OPT));
}

#[test]
fn every_problem_is_reported_at_once() {
    let all = problems(vec![
        rec("example.", Rtype::SOA, soa(9)),
        rec("www.example.", Rtype::CNAME, name("x.example.net.")),
        rec("www.example.", Rtype::A, ADDR.to_vec()),
        rec("out.example.org.", Rtype::A, ADDR.to_vec()),
    ]);
    assert_eq!(all.iter().filter(|p| p.is_error()).count(), 3, "{all:#?}");
}

#[test]
fn problems_display_owner_type_and_message() {
    let p = Problem::error(&n("www.example."), Some(Rtype::CNAME), "bad");
    assert_eq!(p.to_string(), "www.example. CNAME: bad");
    let w = Problem::warning(&n("x.example."), None, "hidden");
    assert_eq!(w.to_string(), "x.example.: warning: hidden");
}

#[test]
fn each_distinct_target_of_an_rrset_is_warned_about_once() {
    let all = problems(vec![
        rec("example.", Rtype::MX, mx(10, "mail.example.")),
        rec("example.", Rtype::MX, mx(20, "MAIL.example.")),
        rec("example.", Rtype::MX, mx(30, "mx2.example.")),
    ]);
    let messages: Vec<&str> = all
        .iter()
        .filter(|p| p.rtype == Some(Rtype::MX))
        .map(|p| p.message.as_str())
        .collect();
    assert_eq!(
        messages,
        [
            "MX target mail.example. is in the zone but has no A or AAAA record",
            "MX target mx2.example. is in the zone but has no A or AAAA record",
        ]
    );
}

#[test]
fn mx_target_in_the_zone_without_address_is_warned() {
    let all = problems(vec![rec("example.", Rtype::MX, mx(10, "mail.example."))]);
    let msg = only(&all, Severity::Warning, "example.", Some(Rtype::MX));
    assert!(
        msg.contains("mail.example. is in the zone but has no A or AAAA"),
        "{msg}"
    );
}

#[test]
fn a_wildcard_address_serves_an_in_zone_target() {
    assert_eq!(
        problems(vec![
            rec("example.", Rtype::MX, mx(10, "mail.example.")),
            rec("*.example.", Rtype::A, ADDR.to_vec()),
        ]),
        vec![]
    );
}

#[test]
fn a_wildcard_is_no_glue() {
    let all = problems(vec![
        rec("sub.example.", Rtype::NS, name("ns.sub.example.")),
        rec("*.sub.example.", Rtype::A, ADDR.to_vec()),
    ]);
    let errors: Vec<&Problem> = all.iter().filter(|p| p.is_error()).collect();
    assert_eq!(errors.len(), 1, "{all:#?}");
    assert!(errors[0].message.contains("missing glue"));
}

#[test]
fn targets_under_a_dname_are_not_checked() {
    assert_eq!(
        problems(vec![
            rec("d.example.", Rtype::DNAME, name("example.net.")),
            rec("example.", Rtype::MX, mx(10, "mail.d.example.")),
        ]),
        vec![]
    );
}

#[test]
fn ns_at_a_wildcard_name_is_warned() {
    let all = problems(vec![rec("*.example.", Rtype::NS, name("ns.example.net."))]);
    let msg = only(&all, Severity::Warning, "*.example.", Some(Rtype::NS));
    assert!(msg.contains("RFC 4592 §4.2"), "{msg}");
}

#[test]
fn ds_away_from_a_delegation_point_is_warned() {
    let ds = vec![0x30, 0x39, 8, 2, 0xaa];
    only(
        &problems(vec![rec("www.example.", Rtype::DS, ds.clone())]),
        Severity::Warning,
        "www.example.",
        Some(Rtype::DS),
    );
    assert_eq!(
        problems(vec![
            rec("sub.example.", Rtype::NS, name("ns.example.net.")),
            rec("sub.example.", Rtype::DS, ds),
        ]),
        vec![]
    );
}

#[test]
fn a_zone_of_a_class_other_than_in_is_an_error() {
    // Served as IN otherwise: the answering engine has no CH or HS data path.
    for class in [Class::CH, Class::HS, Class::NONE, Class::ANY] {
        let records = base().into_iter().map(|r| Record { class, ..r }).collect();
        let msg = only(&problems_of(records), Severity::Error, "example.", None);
        assert!(msg.contains("class IN"), "{class}: {msg}");
    }
}
