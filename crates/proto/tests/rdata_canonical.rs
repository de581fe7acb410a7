//! The canonical form computed from wire bytes (`canonical_wire`, which orders
//! RRsets) and the one written from typed values (`Rdata::write_canonical`,
//! which DNSSEC signs) must never disagree: a mismatch would make signatures
//! fail to validate.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use bulwark_proto::rdata::{canonical_wire, Rdata};
use bulwark_proto::wire::Reader;
use bulwark_proto::{Name, Rtype};
use proptest::prelude::*;

fn check(rd: &Rdata) {
    let wire = rd.to_wire();
    let mut typed = Vec::new();
    rd.write_canonical(&mut typed);
    let from_wire = canonical_wire(rd.rtype(), &wire);
    assert_eq!(
        &from_wire[..],
        &typed[..],
        "{} {rd:?}: canonical_wire and write_canonical disagree",
        rd.rtype()
    );
}

/// A mixed-case name of one to four labels.
fn arb_name() -> impl Strategy<Value = String> {
    proptest::collection::vec("[A-Za-z0-9][A-Za-z0-9-]{0,10}", 1..4)
        .prop_map(|labels| format!("{}.", labels.join(".")))
}

fn arb_text_rdata() -> impl Strategy<Value = (Rtype, String)> {
    let u16s = any::<u16>();
    prop_oneof![
        arb_name().prop_map(|n| (Rtype::NS, n)),
        arb_name().prop_map(|n| (Rtype::CNAME, n)),
        arb_name().prop_map(|n| (Rtype::DNAME, n)),
        arb_name().prop_map(|n| (Rtype::PTR, n)),
        (arb_name(), arb_name(), any::<u32>())
            .prop_map(|(a, b, s)| (Rtype::SOA, format!("{a} {b} {s} 1 2 3 4"))),
        (u16s, arb_name()).prop_map(|(p, n)| (Rtype::MX, format!("{p} {n}"))),
        (u16s, arb_name()).prop_map(|(p, n)| (Rtype::AFSDB, format!("{p} {n}"))),
        (u16s, arb_name()).prop_map(|(p, n)| (Rtype::RT, format!("{p} {n}"))),
        (u16s, arb_name()).prop_map(|(p, n)| (Rtype::KX, format!("{p} {n}"))),
        (arb_name(), arb_name()).prop_map(|(a, b)| (Rtype::RP, format!("{a} {b}"))),
        (u16s, arb_name(), arb_name()).prop_map(|(p, a, b)| (Rtype::PX, format!("{p} {a} {b}"))),
        (u16s, u16s, u16s, arb_name())
            .prop_map(|(p, w, port, n)| (Rtype::SRV, format!("{p} {w} {port} {n}"))),
        (u16s, u16s, "[A-Za-z]{0,3}", "[A-Za-z+:]{0,8}", arb_name())
            .prop_map(|(o, p, f, s, n)| (Rtype::NAPTR, format!(r#"{o} {p} "{f}" "{s}" "" {n}"#))),
        (arb_name(), any::<u32>(), any::<u16>())
            .prop_map(|(n, t, k)| (Rtype::RRSIG, format!("A 8 2 60 {t} 0 {k} {n} AAECAwQ="))),
        arb_name().prop_map(|n| (Rtype::NSEC, format!("{n} A NS RRSIG"))),
        (u16s, arb_name()).prop_map(|(p, n)| (Rtype::SVCB, format!("{} {n}", p.max(1)))),
        "[A-Za-z]{1,10}".prop_map(|t| (Rtype::TXT, format!("\"{t}\""))),
        ("[A-Za-z]{1,10}", "[A-Za-z]{1,10}")
            .prop_map(|(c, o)| (Rtype::HINFO, format!("\"{c}\" \"{o}\""))),
    ]
}

/// Types on the RFC 4034 §6.2 list that have no typed variant: they travel as
/// `Rdata::Unknown` and must still be lowercased alike by both paths.
const UNTYPED: &[Rtype] = &[
    Rtype::MD,
    Rtype::MF,
    Rtype::MB,
    Rtype::MG,
    Rtype::MR,
    Rtype::MINFO,
    Rtype::NXT,
    Rtype::SIG,
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn canonical_wire_matches_write_canonical_for_typed_values((rtype, text) in arb_text_rdata()) {
        let rd = Rdata::from_text(rtype, &text, &Name::root())
            .unwrap_or_else(|e| panic!("{rtype} {text:?}: {e}"));
        check(&rd);
    }

    #[test]
    fn canonical_wire_matches_write_canonical_for_untyped_listed_types(
        ti in 0..UNTYPED.len(),
        names in proptest::collection::vec(arb_name(), 1..3),
        tail in proptest::collection::vec(any::<u8>(), 0..24),
    ) {
        let mut data = Vec::new();
        for n in &names {
            data.extend_from_slice(Name::from_presentation(n.as_bytes(), None).unwrap().as_wire());
        }
        data.extend_from_slice(&tail);
        check(&Rdata::Unknown { rtype: UNTYPED[ti], data });
    }

    #[test]
    fn canonical_wire_matches_write_canonical_for_any_readable_bytes(
        t in 0u16..300,
        bytes in proptest::collection::vec(any::<u8>(), 0..80),
    ) {
        let rtype = Rtype(t);
        if let Ok(rd) = Rdata::read(rtype, &mut Reader::new(&bytes), bytes.len()) {
            check(&rd);
        }
    }
}

#[test]
fn canonical_wire_lowercases_listed_types_only() {
    let mut mx = vec![0, 10];
    mx.extend_from_slice(
        Name::from_presentation(b"MAIL.Example.", None)
            .unwrap()
            .as_wire(),
    );
    let canon = canonical_wire(Rtype::MX, &mx);
    assert_eq!(&canon[2..], b"\x04mail\x07example\x00");
    let svcb = [&[0u8, 1][..], b"\x01A\x00"].concat();
    assert_eq!(&canon_of(Rtype::SVCB, &svcb)[..], &svcb[..]);
}

fn canon_of(rtype: Rtype, data: &[u8]) -> Vec<u8> {
    canonical_wire(rtype, data).into_owned()
}
