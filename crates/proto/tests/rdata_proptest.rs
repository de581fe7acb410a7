//! `Rdata::read` on arbitrary bytes never panics; whatever it accepts survives
//! wire → value → wire → value and value → text → value unchanged.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use bulwark_proto::rdata::Rdata;
use bulwark_proto::wire::Reader;
use bulwark_proto::{Name, Rtype};
use proptest::prelude::*;

const TYPES: &[Rtype] = &[
    Rtype::A,
    Rtype::NS,
    Rtype::CNAME,
    Rtype::SOA,
    Rtype::PTR,
    Rtype::HINFO,
    Rtype::MX,
    Rtype::TXT,
    Rtype::RP,
    Rtype::AFSDB,
    Rtype::RT,
    Rtype::PX,
    Rtype::KX,
    Rtype::AAAA,
    Rtype::LOC,
    Rtype::SRV,
    Rtype::NAPTR,
    Rtype::DNAME,
    Rtype::OPT,
    Rtype::DS,
    Rtype::SSHFP,
    Rtype::RRSIG,
    Rtype::NSEC,
    Rtype::DNSKEY,
    Rtype::NSEC3,
    Rtype::NSEC3PARAM,
    Rtype::TLSA,
    Rtype::CDS,
    Rtype::CDNSKEY,
    Rtype::ZONEMD,
    Rtype::SVCB,
    Rtype::HTTPS,
    Rtype::CAA,
    Rtype::SMIMEA,
    Rtype::CSYNC,
    Rtype::OPENPGPKEY,
    Rtype::DHCID,
    Rtype::URI,
    Rtype::CERT,
    Rtype::EUI48,
    Rtype::EUI64,
    Rtype::NULL,
    Rtype(65280),
];

fn check(rtype: Rtype, bytes: &[u8], offset: usize) {
    // The rdata starts at `offset` so compression pointers have somewhere to go.
    let Ok(rd) = Rdata::read(rtype, &mut Reader::at(bytes, offset), bytes.len() - offset) else {
        return;
    };
    assert_eq!(rd.rtype(), rtype);
    let wire = rd.to_wire();
    let back = Rdata::read(rtype, &mut Reader::new(&wire), wire.len())
        .unwrap_or_else(|e| panic!("{rtype} {rd:?} re-read failed: {e}"));
    assert_eq!(back, rd);
    assert_eq!(back.to_wire(), wire);
    let text = rd.to_string();
    let parsed = Rdata::from_text(rtype, &text, &Name::root())
        .unwrap_or_else(|e| panic!("{rtype} {text:?} does not parse back: {e}"));
    assert_eq!(parsed, rd, "{rtype} {text}");
    let mut canon = Vec::new();
    rd.write_canonical(&mut canon);
    assert_eq!(canon.len(), wire.len());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn read_never_panics_and_accepted_data_round_trips(
        ti in 0..TYPES.len(),
        bytes in proptest::collection::vec(any::<u8>(), 0..120),
        offset in 0usize..8,
    ) {
        let offset = offset.min(bytes.len());
        check(TYPES[ti], &bytes, offset);
    }

    /// Structured prefixes make the typed parsers get past their fixed fields.
    #[test]
    fn svcb_params_round_trip(
        priority in any::<u16>(),
        params in proptest::collection::vec(
            (0u16..10, proptest::collection::vec(any::<u8>(), 0..20)), 0..5),
    ) {
        let mut wire = priority.to_be_bytes().to_vec();
        wire.push(0);
        let mut params = params;
        params.sort_by_key(|p| p.0);
        params.dedup_by_key(|p| p.0);
        for (k, v) in &params {
            wire.extend_from_slice(&k.to_be_bytes());
            wire.extend_from_slice(&(v.len() as u16).to_be_bytes());
            wire.extend_from_slice(v);
        }
        check(Rtype::SVCB, &wire, 0);
    }

    #[test]
    fn text_bearing_types_round_trip_any_octets(
        strings in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..4),
        tag in "[a-zA-Z0-9]{1,15}",
    ) {
        let mut txt = Vec::new();
        for s in &strings {
            txt.push(s.len() as u8);
            txt.extend_from_slice(s);
        }
        check(Rtype::TXT, &txt, 0);
        let mut caa = vec![0, tag.len() as u8];
        caa.extend_from_slice(tag.as_bytes());
        caa.extend_from_slice(&strings[0]);
        check(Rtype::CAA, &caa, 0);
        let mut alpn = vec![0, 1, 0, 0, 1];
        let ids: Vec<u8> = strings.iter().filter(|s| !s.is_empty()).flat_map(|s| {
            let mut v = vec![s.len() as u8];
            v.extend_from_slice(s);
            v
        }).collect();
        alpn.extend_from_slice(&(ids.len() as u16).to_be_bytes());
        alpn.extend_from_slice(&ids);
        check(Rtype::SVCB, &alpn, 0);
    }

    #[test]
    fn loc_round_trips(
        sizes in proptest::collection::vec((1u8..10, 0u8..10), 3),
        lat in (1u32 << 31) - 324_000_000..=(1u32 << 31) + 324_000_000,
        lon in (1u32 << 31) - 648_000_000..=(1u32 << 31) + 648_000_000,
        alt in any::<u32>(),
    ) {
        let mut wire = vec![0];
        wire.extend(sizes.iter().map(|(m, e)| m << 4 | e));
        wire.extend_from_slice(&lat.to_be_bytes());
        wire.extend_from_slice(&lon.to_be_bytes());
        wire.extend_from_slice(&alt.to_be_bytes());
        prop_assert!(Rdata::read(Rtype::LOC, &mut Reader::new(&wire), wire.len()).is_ok());
        check(Rtype::LOC, &wire, 0);
    }

    #[test]
    fn names_with_any_octets_round_trip(label in proptest::collection::vec(any::<u8>(), 1..63)) {
        let mut wire = vec![0, 5, label.len() as u8];
        wire.extend_from_slice(&label);
        wire.push(0);
        check(Rtype::MX, &wire, 0);
        check(Rtype::NS, &wire[2..], 0);
    }
}

proptest! {
    /// A record data is read by bulwark's own octet parser; it must accept
    /// exactly what the standard library's `Ipv4Addr` parser accepts.
    #[test]
    fn a_data_reads_as_the_standard_ipv4_parser_does(
        text in "[0-9.]{1,18}|[0-9]{1,4}(\\.[0-9]{1,4}){3}|[0-9.a+x-]{1,12}"
    ) {
        let ours = Rdata::from_text(Rtype::A, &text, &Name::root()).ok();
        let std = text.parse::<std::net::Ipv4Addr>().ok().map(Rdata::A);
        prop_assert_eq!(ours, std, "{}", text);
    }
}

#[test]
fn a_data_edge_cases_read_as_the_standard_ipv4_parser_does() {
    for text in [
        "0.0.0.0",
        "255.255.255.255",
        "256.0.0.1",
        "1.2.3",
        "1.2.3.4.",
        ".1.2.3.4",
        "01.2.3.4",
        "1.2.3.04",
        "1.2.3.0",
        "1..2.3",
        "1.2.3.4.5",
        "1.2.3.+4",
        "1.2.3.-0",
        "000.1.2.3",
        "1.2.3.1000",
    ] {
        let ours = Rdata::from_text(Rtype::A, text, &Name::root()).ok();
        let std = text.parse::<std::net::Ipv4Addr>().ok().map(Rdata::A);
        assert_eq!(ours, std, "{text}");
    }
}

proptest! {
    /// AAAA data is read by bulwark's own reader for plain hexadecimal
    /// groups and by the standard library's otherwise; together they must
    /// accept exactly what `Ipv6Addr` accepts, with the same value.
    #[test]
    fn aaaa_data_reads_as_the_standard_ipv6_parser_does(
        text in "[0-9a-fA-F:]{0,41}|([0-9a-fA-F]{1,5}:{1,2}){1,9}[0-9a-fA-F]{0,5}|:{0,2}([0-9a-f]{1,4}:){0,8}[0-9.]{0,16}"
    ) {
        let ours = Rdata::from_text(Rtype::AAAA, &text, &Name::root()).ok();
        let std = text.parse::<std::net::Ipv6Addr>().ok().map(Rdata::Aaaa);
        prop_assert_eq!(ours, std, "{}", text);
    }
}

#[test]
fn aaaa_data_edge_cases_read_as_the_standard_ipv6_parser_does() {
    for text in [
        "::",
        "::1",
        "1::",
        "1:2:3:4:5:6:7:8",
        "1:2:3:4:5:6:7::",
        "::2:3:4:5:6:7:8",
        "1:2:3:4:5:6:7:8::",
        "::1:2:3:4:5:6:7:8",
        "1:2:3:4::5:6:7:8",
        "1:2:3:4:5:6:7",
        "1:2:3:4:5:6:7:8:9",
        "2001:db8::1",
        "2001:DB8:0:0:0:0:0:1",
        "2001:db8::1::2",
        ":::",
        "1:::2",
        ":1::2",
        "1::2:",
        "12345::",
        "0000:0000:0000:0000:0000:0000:0000:0000",
        "00000::",
        "::ffff:192.0.2.1",
        "1:2:3:4:5:6:192.0.2.1",
        "::192.0.2.01",
        "g::",
        "",
        ":",
        "1:",
        ":1",
    ] {
        let ours = Rdata::from_text(Rtype::AAAA, text, &Name::root()).ok();
        let std = text.parse::<std::net::Ipv6Addr>().ok().map(Rdata::Aaaa);
        assert_eq!(ours, std, "{text}");
    }
}
