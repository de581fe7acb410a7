//! Presentation and wire round trips for every typed record: text → Rdata → text
//! is stable, text → wire → Rdata → wire is identical, and the RFC 3597 generic
//! form of the wire data parses back to the same typed value.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use bulwark_proto::rdata::Rdata;
use bulwark_proto::wire::Reader;
use bulwark_proto::{Name, Rtype};

mod rdata_cases;

fn origin() -> Name {
    "example.com.".parse().unwrap()
}

use rdata_cases::CASES;

fn parse(rtype: Rtype, text: &str) -> Rdata {
    Rdata::from_text(rtype, text, &origin())
        .unwrap_or_else(|e| panic!("{rtype} {text:?} rejected: {e}"))
}

fn read(rtype: Rtype, wire: &[u8]) -> Rdata {
    Rdata::read(rtype, &mut Reader::new(wire), wire.len())
        .unwrap_or_else(|e| panic!("{rtype} wire {wire:02x?} rejected: {e}"))
}

#[test]
fn presentation_round_trip_is_stable() {
    for &(rtype, input, expected) in CASES {
        let rd = parse(rtype, input);
        assert_eq!(rd.rtype(), rtype, "{input}");
        let printed = rd.to_string();
        assert_eq!(printed, expected.unwrap_or(input), "{rtype} {input}");
        let again = parse(rtype, &printed);
        assert_eq!(again, rd, "{rtype} {printed}");
        assert_eq!(again.to_string(), printed);
    }
}

#[test]
fn wire_round_trip_is_identical() {
    for &(rtype, input, _) in CASES {
        let rd = parse(rtype, input);
        let wire = rd.to_wire();
        let back = read(rtype, &wire);
        assert_eq!(back, rd, "{rtype} {input}");
        assert_eq!(back.to_wire(), wire, "{rtype} {input}");
    }
}

#[test]
fn generic_form_of_a_known_type_yields_the_typed_value() {
    for &(rtype, input, _) in CASES {
        let rd = parse(rtype, input);
        let wire = rd.to_wire();
        let mut generic = format!("\\# {}", wire.len());
        if !wire.is_empty() {
            generic.push(' ');
            // Split the hex in two fields: whitespace is allowed inside (RFC 3597 §5).
            let hex: String = wire.iter().map(|b| format!("{b:02x}")).collect();
            let (a, b) = hex.split_at(hex.len() / 2 / 2 * 2);
            generic.push_str(a);
            generic.push(' ');
            generic.push_str(b);
        }
        assert_eq!(parse(rtype, generic.trim_end()), rd, "{rtype} {generic}");
    }
}

#[test]
fn canonical_form_lowercases_names_of_the_rfc4034_types_only() {
    let cases: &[(Rtype, &str, bool)] = &[
        (Rtype::NS, "NS.Example.COM.", true),
        (Rtype::CNAME, "WWW.Example.", true),
        (Rtype::DNAME, "Example.NET.", true),
        (Rtype::PTR, "Host.Example.", true),
        (Rtype::MX, "10 MAIL.Example.", true),
        (Rtype::SOA, "NS.Example. Host.Example. 1 2 3 4 5", true),
        (Rtype::SRV, "0 0 1 SIP.Example.", true),
        (Rtype::RP, "A.Example. B.Example.", true),
        (Rtype::AFSDB, "1 AFS.Example.", true),
        (Rtype::RT, "1 Relay.Example.", true),
        (Rtype::KX, "1 KX.Example.", true),
        (Rtype::PX, "1 A.Example. B.Example.", true),
        (Rtype::NAPTR, r#"1 1 "u" "s" "" REPL.Example."#, true),
        (Rtype::RRSIG, "A 8 2 60 1 0 1 Example.COM. AA==", true),
        // RFC 6840 §5.1: NSEC next names keep their case.
        (Rtype::NSEC, "Next.Example. A", false),
        (Rtype::SVCB, "1 Target.Example.", false),
    ];
    for &(rtype, text, lowered) in cases {
        let rd = parse(rtype, text);
        let mut canon = Vec::new();
        rd.write_canonical(&mut canon);
        let wire = rd.to_wire();
        if lowered {
            assert_eq!(canon, wire.to_ascii_lowercase(), "{text}");
            assert_ne!(canon, wire, "{text}");
        } else {
            assert_eq!(canon, wire, "{text}");
        }
    }
}

#[test]
fn target_name_is_the_name_that_needs_glue_or_chasing() {
    let o = origin();
    let t = |rtype, text| parse(rtype, text).target_name().cloned();
    let n = |s: &str| Some(s.parse::<Name>().unwrap());
    assert_eq!(t(Rtype::NS, "ns1"), n("ns1.example.com."));
    assert_eq!(t(Rtype::MX, "10 mx"), n("mx.example.com."));
    assert_eq!(t(Rtype::CNAME, "@"), Some(o.clone()));
    assert_eq!(t(Rtype::DNAME, "x."), n("x."));
    assert_eq!(t(Rtype::SRV, "0 0 1 sip"), n("sip.example.com."));
    assert_eq!(t(Rtype::PTR, "p."), n("p."));
    assert_eq!(t(Rtype::A, "192.0.2.1"), None);
    assert_eq!(t(Rtype::MX, "0 ."), None);
    assert_eq!(t(Rtype::HTTPS, "1 . alpn=h2"), None);
    assert_eq!(t(Rtype::HTTPS, "0 svc.example.net."), n("svc.example.net."));
    assert_eq!(t(Rtype::TXT, "x"), None);
}
