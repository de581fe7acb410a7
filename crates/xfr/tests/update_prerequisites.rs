//! RFC 2136 §3.2: the prerequisite section, every row of the §3.2.5 table,
//! the malformed forms and the order in which failures are reported.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod update_support;

use bulwark_proto::Rcode;
use bulwark_xfr::update::{UpdateError, UpdateOptions};
use update_support::{expect, outcome, soa, zone, Msg, ZONE};

/// The update every case carries: it lands only when the prerequisites hold.
const MARKER: &str = "marker 300 IN TXT \"ok\"";

fn landed() -> Vec<String> {
    expect(
        ZONE,
        &[
            &format!("-{}", soa(1)),
            &format!("+{}", soa(2)),
            "+marker TXT \"ok\"",
        ],
    )
}

fn check(cases: &[(&str, &[&str], Rcode)]) {
    let base = zone(ZONE);
    let untouched = expect(ZONE, &[]);
    for &(what, prereqs, want) in cases {
        let mut msg = Msg::new();
        for p in prereqs {
            msg = msg.prereq(p);
        }
        let (rcode, after) = outcome(&base, msg.update(MARKER), &UpdateOptions::default());
        assert_eq!(rcode, want, "{what}");
        let expected = if want == Rcode::NOERROR {
            landed()
        } else {
            untouched.clone()
        };
        assert_eq!(
            after, expected,
            "{what}: the update lands only when the prerequisites hold"
        );
    }
}

#[test]
fn every_row_of_the_prerequisite_table_gives_its_rcode() {
    // RFC 2136 §3.2.5: CLASS, TYPE, RDATA -> meaning (rcode when false).
    check(&[
        // ANY ANY empty: name is in use (NXDOMAIN).
        ("name in use", &["www 0 ANY ANY"], Rcode::NOERROR),
        (
            "name in use, case ignored",
            &["WWW 0 ANY ANY"],
            Rcode::NOERROR,
        ),
        ("apex in use", &["example. 0 ANY ANY"], Rcode::NOERROR),
        ("name not in use", &["nothere 0 ANY ANY"], Rcode::NXDOMAIN),
        (
            "an empty non-terminal holds no RR",
            &["deep 0 ANY ANY"],
            Rcode::NXDOMAIN,
        ),
        // ANY rrset empty: RRset exists, value independent (NXRRSET).
        ("RRset exists", &["www 0 ANY A"], Rcode::NOERROR),
        (
            "RRset missing at a used name",
            &["www 0 ANY AAAA"],
            Rcode::NXRRSET,
        ),
        (
            "RRset missing at an unused name",
            &["nothere 0 ANY A"],
            Rcode::NXRRSET,
        ),
        // NONE ANY empty: name is not in use (YXDOMAIN).
        ("name not in use", &["nothere 0 NONE ANY"], Rcode::NOERROR),
        (
            "empty non-terminal not in use",
            &["b.deep 0 NONE ANY"],
            Rcode::NOERROR,
        ),
        ("name in use", &["www 0 NONE ANY"], Rcode::YXDOMAIN),
        // NONE rrset empty: RRset does not exist (YXRRSET).
        ("RRset absent", &["www 0 NONE AAAA"], Rcode::NOERROR),
        (
            "RRset absent at unused name",
            &["nothere 0 NONE A"],
            Rcode::NOERROR,
        ),
        ("RRset present", &["www 0 NONE A"], Rcode::YXRRSET),
        // zone rrset rr: RRset exists, value dependent (NXRRSET).
        (
            "whole RRset matches",
            &["www 0 IN A 192.0.2.10", "www 0 IN A 192.0.2.11"],
            Rcode::NOERROR,
        ),
        (
            "order and repeats do not count",
            &[
                "www 0 IN A 192.0.2.11",
                "www 0 IN A 192.0.2.10",
                "www 0 IN A 192.0.2.11",
            ],
            Rcode::NOERROR,
        ),
        (
            "part of the RRset is not the RRset",
            &["www 0 IN A 192.0.2.10"],
            Rcode::NXRRSET,
        ),
        (
            "more than the RRset is not the RRset",
            &[
                "www 0 IN A 192.0.2.10",
                "www 0 IN A 192.0.2.11",
                "www 0 IN A 192.0.2.12",
            ],
            Rcode::NXRRSET,
        ),
        (
            "names in rdata compare without case",
            &["alias 0 IN CNAME WWW.Example."],
            Rcode::NOERROR,
        ),
        (
            "value of a missing RRset",
            &["nothere 0 IN A 192.0.2.10"],
            Rcode::NXRRSET,
        ),
        (
            "two value-dependent RRsets, both hold",
            &["www 0 IN TXT \"hello\"", "mail 0 IN MX 10 mx"],
            Rcode::NOERROR,
        ),
        (
            "two value-dependent RRsets, one fails",
            &["www 0 IN TXT \"hello\"", "mail 0 IN MX 20 mx"],
            Rcode::NXRRSET,
        ),
        (
            "two value-dependent RRsets, the later one fails",
            &["www 0 IN TXT \"nope\"", "mail 0 IN MX 10 mx"],
            Rcode::NXRRSET,
        ),
        ("no prerequisites at all", &[], Rcode::NOERROR),
    ]);
}

#[test]
fn malformed_prerequisites_are_formerr_and_outside_names_notzone() {
    check(&[
        ("TTL not zero (ANY)", &["www 1 ANY ANY"], Rcode::FORMERR),
        ("TTL not zero (NONE)", &["www 300 NONE A"], Rcode::FORMERR),
        (
            "TTL not zero (value dependent)",
            &["www 300 IN A 192.0.2.10", "www 0 IN A 192.0.2.11"],
            Rcode::FORMERR,
        ),
        (
            "class ANY with data",
            &["www 0 ANY A 192.0.2.10"],
            Rcode::FORMERR,
        ),
        (
            "class NONE with data",
            &["www 0 NONE A 192.0.2.10"],
            Rcode::FORMERR,
        ),
        (
            "class neither zone, ANY nor NONE",
            &["www 0 CH A 192.0.2.10"],
            Rcode::FORMERR,
        ),
        (
            "owner outside the zone",
            &["www.example.net. 0 ANY ANY"],
            Rcode::NOTZONE,
        ),
        ("owner above the zone", &[". 0 NONE ANY"], Rcode::NOTZONE),
        (
            "a name ending like the zone is not in it",
            &["www.notexample. 0 ANY ANY"],
            Rcode::NOTZONE,
        ),
    ]);
}

#[test]
fn the_first_failing_prerequisite_decides_and_value_dependent_ones_come_last() {
    check(&[
        // §3.2.5's loop stops at the first failure, in message order.
        (
            "NXDOMAIN before NOTZONE",
            &["nothere 0 ANY ANY", "x.example.net. 0 ANY ANY"],
            Rcode::NXDOMAIN,
        ),
        (
            "NOTZONE before NXDOMAIN",
            &["x.example.net. 0 ANY ANY", "nothere 0 ANY ANY"],
            Rcode::NOTZONE,
        ),
        (
            "FORMERR before YXRRSET",
            &["www 7 NONE A", "www 0 NONE A"],
            Rcode::FORMERR,
        ),
        // The value-dependent RRsets are compared after the loop (§3.2.5).
        (
            "YXDOMAIN before a failing value check",
            &["www 0 IN A 192.0.2.99", "www 0 NONE ANY"],
            Rcode::YXDOMAIN,
        ),
    ]);
}

#[test]
fn prerequisites_see_the_messages_before_them_in_a_batch() {
    let base = zone(ZONE);
    let first = Msg::new()
        .update("fresh 300 IN A 192.0.2.50")
        .update("www 0 ANY A");
    let second = Msg::new()
        .prereq("fresh 0 IN A 192.0.2.50")
        .prereq("www 0 NONE A")
        .prereq("www 0 ANY ANY")
        .update(MARKER);
    let (results, _) = update_support::run(&base, &[first, second], &UpdateOptions::default());
    assert!(results.iter().all(Result::is_ok), "{results:?}");
}

#[test]
fn errors_name_the_failing_record() {
    let base = zone(ZONE);
    let mut edit = bulwark_xfr::update::ZoneEdit::new(&base);
    let err = edit
        .apply(
            &Msg::new().prereq("www 0 ANY AAAA").request(),
            &UpdateOptions::default(),
        )
        .unwrap_err();
    assert_eq!(err.rcode(), Rcode::NXRRSET);
    let UpdateError::RrsetMissing { owner, rtype } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(owner.to_string(), "www.example.");
    assert_eq!(rtype.to_string(), "AAAA");
    assert!(err.to_string().contains("www.example."), "{err}");
}
