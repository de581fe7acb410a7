//! RFC 2136 §3.4: the update section, every row of the §3.4.2.6 table, the
//! special rules of §3.4.2 (SOA, apex NS, CNAME as RFC 4035 §2.5 amends it,
//! duplicates, absent records), TTLs, and the prescan's FORMERR and NOTZONE.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod update_support;

use bulwark_proto::{Class, Rcode, Rtype};
use bulwark_xfr::update::{ClientSoa, IgnoreReason, UpdateOptions, ZoneEdit};
use update_support::{expect, outcome, soa, zone, Msg, ZONE};

/// The serial moves from 1 to 2 whenever something changed.
fn bumped<'a>(changes: &[&'a str], soa_lines: &'a [String; 2]) -> Vec<&'a str> {
    let mut all: Vec<&str> = vec![&soa_lines[0], &soa_lines[1]];
    all.extend_from_slice(changes);
    all
}

/// `(what, update records, zone-file line changes)`: each message must be
/// NOERROR and leave ZONE with exactly these changes (none: no new version).
fn check(cases: &[(&str, &[&str], &[&str])]) {
    let base = zone(ZONE);
    let soa_lines = [format!("-{}", soa(1)), format!("+{}", soa(2))];
    for &(what, updates, changes) in cases {
        let mut msg = Msg::new();
        for u in updates {
            msg = msg.update(u);
        }
        let (rcode, after) = outcome(&base, msg, &UpdateOptions::default());
        assert_eq!(rcode, Rcode::NOERROR, "{what}");
        let want = if changes.is_empty() {
            expect(ZONE, &[])
        } else {
            expect(ZONE, &bumped(changes, &soa_lines))
        };
        assert_eq!(after, want, "{what}");
    }
}

#[test]
fn every_row_of_the_update_table_does_what_it_says() {
    // RFC 2136 §3.4.2.6: CLASS, TYPE, RDATA -> meaning.
    check(&[
        // ANY ANY empty: delete all RRsets from a name.
        (
            "delete a name",
            &["www 0 ANY ANY"],
            &[
                "-www A 192.0.2.10",
                "-www A 192.0.2.11",
                "-www TXT \"hello\"",
            ],
        ),
        // ANY rrset empty: delete an RRset.
        (
            "delete an RRset",
            &["www 0 ANY A"],
            &["-www A 192.0.2.10", "-www A 192.0.2.11"],
        ),
        // NONE rrset rr: delete an RR from an RRset.
        (
            "delete an RR",
            &["www 0 NONE A 192.0.2.10"],
            &["-www A 192.0.2.10"],
        ),
        (
            "delete the last RR of an RRset",
            &["www 0 NONE TXT \"hello\""],
            &["-www TXT \"hello\""],
        ),
        // zone rrset rr: add to an RRset.
        (
            "add to an RRset",
            &["www 300 IN A 192.0.2.12"],
            &["+www A 192.0.2.12"],
        ),
        (
            "add a new RRset",
            &["www 300 IN AAAA 2001:db8::1"],
            &["+www AAAA 2001:db8::1"],
        ),
        (
            "add a new name",
            &["new 300 IN A 192.0.2.77"],
            &["+new A 192.0.2.77"],
        ),
        (
            "add below an empty non-terminal",
            &["c.deep 300 IN A 192.0.2.78"],
            &["+c.deep A 192.0.2.78"],
        ),
    ]);
}

#[test]
fn absent_records_and_duplicates_change_nothing() {
    check(&[
        ("delete a name not there", &["nothere 0 ANY ANY"], &[]),
        ("delete an empty non-terminal", &["deep 0 ANY ANY"], &[]),
        ("delete an RRset not there", &["www 0 ANY AAAA"], &[]),
        ("delete an RR not there", &["www 0 NONE A 192.0.2.99"], &[]),
        (
            "delete an RR at a name not there",
            &["nothere 0 NONE A 192.0.2.10"],
            &[],
        ),
        ("add an RR already there", &["www 300 IN A 192.0.2.10"], &[]),
        (
            "add it with names in another case",
            &["mail 300 IN MX 10 MX.EXAMPLE."],
            &[],
        ),
        (
            "add the same RR twice",
            &["www 300 IN A 192.0.2.12", "www 300 IN A 192.0.2.12"],
            &["+www A 192.0.2.12"],
        ),
        (
            "add then delete",
            &["new 300 IN A 192.0.2.77", "new 0 NONE A 192.0.2.77"],
            &[],
        ),
        (
            "delete then add back",
            &["www 0 ANY TXT", "www 300 IN TXT \"hello\""],
            &[],
        ),
    ]);
}

#[test]
fn the_apex_keeps_its_soa_and_ns() {
    check(&[
        // §3.4.2.3: at the zone name, everything but SOA and NS goes.
        (
            "delete all at the apex",
            &["example. 0 ANY ANY"],
            &["-@ TXT \"apex\""],
        ),
        ("delete the apex SOA RRset", &["example. 0 ANY SOA"], &[]),
        ("delete the apex NS RRset", &["example. 0 ANY NS"], &[]),
        // §3.4.2.4: the SOA RR is never deleted, nor the last apex NS.
        (
            "delete the SOA RR",
            &["example. 0 NONE SOA ns hostmaster 1 3600 600 86400 300"],
            &[],
        ),
        (
            "delete one of two apex NS",
            &["example. 0 NONE NS ns2"],
            &["-@ NS ns2"],
        ),
        (
            "delete both apex NS: the second stays",
            &["example. 0 NONE NS ns2", "example. 0 NONE NS ns"],
            &["-@ NS ns2"],
        ),
        (
            "replace the apex NS set one RR at a time",
            &[
                "example. 300 IN NS ns3",
                "ns3 300 IN A 192.0.2.3",
                "example. 0 NONE NS ns",
                "example. 0 NONE NS ns2",
            ],
            &["+@ NS ns3", "+ns3 A 192.0.2.3", "-@ NS ns", "-@ NS ns2"],
        ),
        // A delegation's NS is no apex NS: it may go whole.
        (
            "delete a delegation",
            &["sub 300 IN NS ns.other.", "sub 0 ANY NS"],
            &[],
        ),
    ]);
}

#[test]
fn a_client_soa_replaces_the_zones_only_with_a_newer_serial() {
    let base = zone(ZONE);
    let cases: &[(&str, &str, Option<u32>)] = &[
        (
            "newer serial",
            "example. 600 IN SOA ns hostmaster 10 3600 600 86400 300",
            Some(10),
        ),
        (
            "equal serial",
            "example. 300 IN SOA ns hostmaster 1 7200 600 86400 300",
            None,
        ),
        (
            "older serial",
            "example. 300 IN SOA ns hostmaster 0 3600 600 86400 300",
            None,
        ),
        // RFC 1982: 2^31 + 2 is "before" 1 on the circle; 2^31 is unordered.
        (
            "serial behind on the circle",
            "example. 300 IN SOA ns hostmaster 2147483650 3600 600 86400 300",
            None,
        ),
        (
            "serial exactly 2^31 ahead",
            "example. 300 IN SOA ns hostmaster 2147483649 3600 600 86400 300",
            None,
        ),
        (
            "a second SOA elsewhere",
            "www 300 IN SOA ns hostmaster 10 3600 600 86400 300",
            None,
        ),
    ];
    for &(what, update, serial) in cases {
        let mut edit = ZoneEdit::new(&base);
        let applied = edit
            .apply(
                &Msg::new().update(update).request(),
                &UpdateOptions::default(),
            )
            .unwrap();
        let diff = edit.finish(bulwark_xfr::serial::SerialPolicy::Increment, 0);
        match serial {
            Some(s) => {
                let diff = diff.unwrap_or_else(|| panic!("{what}"));
                assert_eq!(diff.new_serial(), s, "{what}: the client's serial is kept");
                assert_eq!(
                    diff.new_soa.ttl, 600,
                    "{what}: the whole SOA is the client's"
                );
                assert!(diff.removed.is_empty() && diff.added.is_empty(), "{what}");
            }
            None => {
                assert!(diff.is_none(), "{what}");
                assert_eq!(applied.ignored.len(), 1, "{what}");
            }
        }
    }
    // A server keeping the SOA to itself ignores even a newer one.
    let mut edit = ZoneEdit::new(&base);
    let options = UpdateOptions {
        client_soa: ClientSoa::Ignored,
        ..UpdateOptions::default()
    };
    let applied = edit
        .apply(
            &Msg::new()
                .update("example. 300 IN SOA ns hostmaster 10 3600 600 86400 300")
                .request(),
            &options,
        )
        .unwrap();
    assert_eq!(applied.ignored[0].reason, IgnoreReason::ClientSoaRefused);
    assert!(edit
        .finish(bulwark_xfr::serial::SerialPolicy::Increment, 0)
        .is_none());
}

#[test]
fn a_cname_stands_alone_except_for_its_dnssec_records() {
    check(&[
        // §3.4.2.2: a CNAME joining other data is ignored...
        ("CNAME at a name with data", &["www 300 IN CNAME mail"], &[]),
        ("CNAME at the apex", &["example. 300 IN CNAME mail"], &[]),
        // ...and so is other data joining a CNAME...
        ("A at an alias", &["alias 300 IN A 192.0.2.1"], &[]),
        ("TXT at an alias", &["alias 300 IN TXT \"no\""], &[]),
        // ...but RFC 4035 §2.5 lets RRSIG and NSEC join it.
        (
            "NSEC at an alias",
            &["alias 300 IN NSEC mail CNAME RRSIG NSEC"],
            &["+alias NSEC mail CNAME RRSIG NSEC"],
        ),
        // A CNAME replaces the alias's CNAME (one target per alias).
        (
            "new target",
            &["alias 300 IN CNAME mail"],
            &["-alias CNAME www", "+alias CNAME mail"],
        ),
        ("same target", &["alias 300 IN CNAME WWW.example."], &[]),
        (
            "CNAME at a new name",
            &["alias2 300 IN CNAME www"],
            &["+alias2 CNAME www"],
        ),
        // Once the data is gone the CNAME may come, and the other way round.
        (
            "data deleted, then CNAME",
            &["www 0 ANY ANY", "www 300 IN CNAME mail"],
            &[
                "-www A 192.0.2.10",
                "-www A 192.0.2.11",
                "-www TXT \"hello\"",
                "+www CNAME mail",
            ],
        ),
        (
            "alias deleted, then data",
            &["alias 0 ANY CNAME", "alias 300 IN A 192.0.2.5"],
            &["-alias CNAME www", "+alias A 192.0.2.5"],
        ),
    ]);
}

#[test]
fn cname_conflicts_are_reported_as_ignored() {
    let base = zone(ZONE);
    let mut edit = ZoneEdit::new(&base);
    let applied = edit
        .apply(
            &Msg::new()
                .update("www 300 IN CNAME mail")
                .update("new 300 IN A 192.0.2.1")
                .update("alias 300 IN A 192.0.2.1")
                .request(),
            &UpdateOptions::default(),
        )
        .unwrap();
    assert_eq!(applied.changed, 1);
    let reasons: Vec<(usize, IgnoreReason)> = applied
        .ignored
        .iter()
        .map(|i| (i.index, i.reason))
        .collect();
    assert_eq!(
        reasons,
        [
            (0, IgnoreReason::CnameBesideData),
            (2, IgnoreReason::DataBesideCname)
        ]
    );
}

#[test]
fn singletons_and_wks_replace_what_they_match() {
    check(&[
        (
            "DNAME replaces DNAME",
            &["d 300 IN DNAME a.example.", "d 300 IN DNAME b.example."],
            &["+d DNAME b.example."],
        ),
        (
            "WKS with the same address and protocol replaces",
            &[
                "w 300 IN WKS \\# 6 c000020106 40",
                "w 300 IN WKS \\# 6 c000020106 80",
            ],
            &["+w WKS \\# 6 c000020106 80"],
        ),
        (
            "WKS for another protocol is another record",
            &[
                "w 300 IN WKS \\# 6 c000020106 40",
                "w 300 IN WKS \\# 6 c000020111 40",
            ],
            &["+w WKS \\# 6 c000020106 40", "+w WKS \\# 6 c000020111 40"],
        ),
    ]);
}

#[test]
fn an_added_record_gives_its_ttl_to_the_whole_rrset() {
    check(&[
        // RFC 2181 §5.2 and BIND and Knot: the RRset takes the newest TTL.
        (
            "new record, new TTL",
            &["www 60 IN A 192.0.2.12"],
            &[
                "-www A 192.0.2.10",
                "-www A 192.0.2.11",
                "+www 60 A 192.0.2.10",
                "+www 60 A 192.0.2.11",
                "+www 60 A 192.0.2.12",
            ],
        ),
        (
            "an existing record re-added with a new TTL",
            &["www 3600 IN A 192.0.2.10"],
            &[
                "-www A 192.0.2.10",
                "-www A 192.0.2.11",
                "+www 3600 A 192.0.2.10",
                "+www 3600 A 192.0.2.11",
            ],
        ),
        ("the same TTL again", &["www 300 IN A 192.0.2.11"], &[]),
        (
            "the last TTL in a message wins",
            &["new 60 IN A 192.0.2.1", "new 120 IN A 192.0.2.2"],
            &["+new 120 A 192.0.2.1", "+new 120 A 192.0.2.2"],
        ),
        // Other RRsets at the name keep theirs.
        (
            "other RRsets keep theirs",
            &["www 60 IN TXT \"hello\""],
            &["-www TXT \"hello\"", "+www 60 TXT \"hello\""],
        ),
        // RFC 2181 §8: a TTL with the top bit set counts as zero.
        (
            "TTL above 2^31-1",
            &["new 2147483648 IN A 192.0.2.1"],
            &["+new 0 A 192.0.2.1"],
        ),
    ]);
}

#[test]
fn a_ttl_change_shows_in_the_diff_as_the_rrset_replaced() {
    let base = zone(ZONE);
    let mut edit = ZoneEdit::new(&base);
    edit.apply(
        &Msg::new().update("www 3600 IN A 192.0.2.10").request(),
        &UpdateOptions::default(),
    )
    .unwrap();
    let diff = edit
        .finish(bulwark_xfr::serial::SerialPolicy::Increment, 0)
        .unwrap();
    let removed: Vec<_> = diff
        .removed
        .iter()
        .map(|r| (r.ttl, r.rdata.to_string()))
        .collect();
    let added: Vec<_> = diff
        .added
        .iter()
        .map(|r| (r.ttl, r.rdata.to_string()))
        .collect();
    assert_eq!(
        removed,
        [(300, "192.0.2.10".into()), (300, "192.0.2.11".into())]
    );
    assert_eq!(
        added,
        [(3600, "192.0.2.10".into()), (3600, "192.0.2.11".into())]
    );
}

#[test]
fn the_prescan_refuses_malformed_updates_and_outside_names() {
    let base = zone(ZONE);
    let cases: &[(&str, Msg, Rcode)] = &[
        (
            "owner outside the zone",
            Msg::new().update("www.example.net. 300 IN A 192.0.2.1"),
            Rcode::NOTZONE,
        ),
        (
            "delete outside the zone",
            Msg::new().update("example.net. 0 ANY ANY"),
            Rcode::NOTZONE,
        ),
        // §3.4.1.3: add of a meta or query type.
        (
            "add type ANY",
            Msg::new().update_raw("www", 300, Class::IN, Rtype::ANY, &[]),
            Rcode::FORMERR,
        ),
        (
            "add type AXFR",
            Msg::new().update_raw("www", 300, Class::IN, Rtype::AXFR, &[]),
            Rcode::FORMERR,
        ),
        (
            "add type MAILB",
            Msg::new().update_raw("www", 300, Class::IN, Rtype::MAILB, &[]),
            Rcode::FORMERR,
        ),
        (
            "add type 0",
            Msg::new().update_raw("www", 300, Class::IN, Rtype(0), &[1]),
            Rcode::FORMERR,
        ),
        // Class ANY: TTL and RDLENGTH zero, no meta type but ANY.
        (
            "ANY with a TTL",
            Msg::new().update("www 300 ANY A"),
            Rcode::FORMERR,
        ),
        (
            "ANY with data",
            Msg::new().update_raw("www", 0, Class::ANY, Rtype::A, &[192, 0, 2, 1]),
            Rcode::FORMERR,
        ),
        (
            "ANY AXFR",
            Msg::new().update_raw("www", 0, Class::ANY, Rtype::AXFR, &[]),
            Rcode::FORMERR,
        ),
        // Class NONE: TTL zero, no meta type at all.
        (
            "NONE with a TTL",
            Msg::new().update("www 300 NONE A 192.0.2.10"),
            Rcode::FORMERR,
        ),
        (
            "NONE ANY",
            Msg::new().update_raw("www", 0, Class::NONE, Rtype::ANY, &[]),
            Rcode::FORMERR,
        ),
        (
            "NONE without data",
            Msg::new().update_raw("www", 0, Class::NONE, Rtype::A, &[]),
            Rcode::FORMERR,
        ),
        (
            "add without data",
            Msg::new().update_raw("www", 300, Class::IN, Rtype::A, &[]),
            Rcode::FORMERR,
        ),
        (
            "class neither zone, ANY nor NONE",
            Msg::new().update("www 300 CH A 192.0.2.1"),
            Rcode::FORMERR,
        ),
    ];
    for (what, msg, want) in cases {
        let (rcode, after) = outcome(&base, msg.clone(), &UpdateOptions::default());
        assert_eq!(rcode, *want, "{what}");
        assert_eq!(after, expect(ZONE, &[]), "{what}: nothing applied");
    }
}

#[test]
fn types_without_a_presentation_format_are_still_data() {
    check(&[(
        "an unknown type",
        &["x 300 IN TYPE65280 \\# 3 010203"],
        &["+x TYPE65280 \\# 3 010203"],
    )]);
}
