//! Bad presentation input is rejected with the index of the offending field and
//! a description of what was expected there.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use bulwark_proto::rdata::Rdata;
use bulwark_proto::{Name, Rtype};

/// (type, rdata text, field index, part of the expectation).
const BAD: &[(Rtype, &str, usize, &str)] = &[
    (Rtype::A, "192.0.2", 0, "IPv4 address"),
    (Rtype::A, "", 0, "IPv4 address"),
    (Rtype::A, "192.0.2.1 192.0.2.2", 1, "end of the record data"),
    (Rtype::AAAA, "192.0.2.1", 0, "IPv6 address"),
    (Rtype::NS, "a..b", 0, "domain name"),
    (Rtype::NS, r"bad\25", 0, "domain name"),
    (Rtype::MX, "65536 mail", 0, "16-bit integer"),
    (Rtype::MX, "-1 mail", 0, "16-bit integer"),
    (Rtype::MX, "10", 1, "domain name"),
    (Rtype::SOA, "ns hm 1 2 3 4", 6, "number of seconds"),
    (Rtype::SOA, "ns hm 1h 2 3 4 5", 2, "32-bit integer"),
    (Rtype::SOA, "ns hm 1 2 3 4 5x", 6, "duration"),
    (Rtype::SOA, "ns hm 4294967296 2 3 4 5", 2, "32-bit integer"),
    (Rtype::TXT, "", 0, "character-string"),
    (Rtype::TXT, r#""ok" "bad\2""#, 1, "character-string"),
    (Rtype::HINFO, r#""cpu""#, 1, "character-string"),
    (Rtype::SRV, "0 0 70000 t.", 2, "16-bit integer"),
    (Rtype::NAPTR, r#"1 1 "U" "E2U" "!x!y!""#, 5, "domain name"),
    (Rtype::DS, "1 8 2 XYZ", 3, "hex data"),
    (Rtype::DS, "1 8 2 AABB CCDD", 3, "32-octet digest"),
    (Rtype::DS, "1 8 1 AABBCCDD", 3, "20-octet digest"),
    (Rtype::DS, "1 8 2", 3, "hex data"),
    (Rtype::DS, "1 NOSUCHALG 2 AB", 1, "algorithm"),
    (Rtype::DS, "1 8 256 AB", 2, "8-bit integer"),
    (Rtype::DNSKEY, "256 3 8 !!!!", 3, "base64 data"),
    (Rtype::DNSKEY, "256 3 8 AAA", 3, "base64 data"),
    (
        Rtype::RRSIG,
        "A 8 2 60 20231301000000 1 1 x. AA==",
        4,
        "YYYYMMDDHHmmSS",
    ),
    (
        Rtype::RRSIG,
        "A 8 2 60 1 4294967296 1 x. AA==",
        5,
        "YYYYMMDDHHmmSS",
    ),
    (Rtype::RRSIG, "BOGUS 8 2 60 1 1 1 x. AA==", 0, "record type"),
    (Rtype::RRSIG, "A 8 2 60 1 1 1 x.", 8, "base64 data"),
    (Rtype::NSEC, "next. A BOGUS", 2, "record type"),
    (Rtype::NSEC3, "1 0 0 - notbase32!", 4, "base32hex"),
    (Rtype::NSEC3, "1 0 0 xyz 00", 3, "salt"),
    (Rtype::NSEC3PARAM, "1 0 0", 3, "salt"),
    (
        Rtype::NSEC3PARAM,
        "1 0 0 - extra",
        4,
        "end of the record data",
    ),
    (Rtype::TLSA, "3 1 1 0", 3, "hex data"),
    (Rtype::SSHFP, "1 1", 2, "hex data"),
    (Rtype::CAA, "0 is-sue x", 1, "CAA tag"),
    (Rtype::CAA, "0 issue", 2, "CAA value"),
    (Rtype::ZONEMD, "1 1 1 AABB", 3, "at least 12 octets"),
    (Rtype::LOC, "91 N 0 E 0", 0, "latitude"),
    (Rtype::LOC, "90 1 N 0 E 0", 0, "latitude"),
    (Rtype::LOC, "1 60 N 0 E 0", 1, "latitude"),
    (Rtype::LOC, "1 2 3 4 N 0 E 0", 3, "latitude"),
    (Rtype::LOC, "1 N 181 E 0", 2, "longitude"),
    (Rtype::LOC, "1 N 1 X 0", 3, "longitude"),
    (Rtype::LOC, "1 N 1 E -100000.01m", 4, "altitude"),
    (Rtype::LOC, "1 N 1 E 0 90000000.01m", 5, "size"),
    (Rtype::LOC, "1 N 1 E", 4, "altitude"),
    (Rtype::EUI48, "00-00-5e-00-53", 0, "EUI-48"),
    (Rtype::EUI48, "00-00-5e-00-53-2a-00", 0, "EUI-48"),
    (Rtype::EUI64, "00-00-5e-00-53-2a-00-0", 0, "EUI-64"),
    (Rtype::URI, r#"10 1 """#, 2, "URI"),
    (Rtype::CERT, "BOGUS 0 0 AA==", 0, "certificate type"),
    (Rtype::CERT, "1 0 0", 3, "base64"),
    (Rtype::OPENPGPKEY, "", 0, "base64"),
    (Rtype::CSYNC, "1 0 BOGUS", 2, "record type"),
    (Rtype::SVCB, "1", 1, "domain name"),
    (Rtype::SVCB, "1 . alpn", 2, "alpn"),
    (Rtype::SVCB, "1 . alpn=", 2, "alpn"),
    (Rtype::SVCB, "1 . port=53 port=54", 3, "not already given"),
    (Rtype::SVCB, "1 . port=x", 2, "port"),
    (Rtype::SVCB, "1 . mandatory=port", 2, "port is missing"),
    (
        Rtype::SVCB,
        "1 . mandatory=mandatory,port port=1",
        2,
        "mandatory",
    ),
    (
        Rtype::SVCB,
        "1 . mandatory=port,port port=1",
        2,
        "without repeats",
    ),
    (Rtype::SVCB, "1 . key65535=x", 2, "SvcParamKey"),
    (Rtype::SVCB, "1 . bogus=1", 2, "SvcParamKey"),
    (Rtype::SVCB, "1 . no-default-alpn=x", 2, "no-default-alpn"),
    (Rtype::SVCB, "1 . no-default-alpn port=1", 4, "alpn"),
    (Rtype::NSEC, "next.", 1, "record type"),
    (Rtype::SVCB, "1 . ipv4hint=192.0.2.1,x", 2, "IPv4"),
    (Rtype::SVCB, "1 . ipv6hint=192.0.2.1", 2, "IPv6"),
    (Rtype::SVCB, "1 . ech=???", 2, "base64"),
    (Rtype::HTTPS, r#"1 . "alpn=h2""#, 2, "SvcParam"),
    (Rtype::A, r"\# 3 0102", 2, "3 octets"),
    (Rtype::A, r"\# 2 0102", 2, "valid A wire data"),
    (Rtype::A, r"\# x", 1, "length"),
    (Rtype::A, r"\#", 1, "length"),
    (Rtype::NULL, r"\# 1 0g", 2, "hex data"),
    (Rtype::NULL, "foo", 0, "generic"),
    (Rtype::OPT, "foo", 0, "generic"),
];

#[test]
fn bad_fields_are_named_with_what_was_expected() {
    let origin: Name = "example.com.".parse().unwrap();
    for &(rtype, text, field, expected) in BAD {
        match Rdata::from_text(rtype, text, &origin) {
            Ok(rd) => panic!("{rtype} {text:?} accepted as {rd}"),
            Err(e) => {
                assert_eq!(e.field, field, "{rtype} {text:?}: {e}");
                assert!(
                    e.expected.contains(expected),
                    "{rtype} {text:?}: {e} lacks {expected:?}"
                );
            }
        }
    }
}

#[test]
fn character_strings_longer_than_255_octets_are_rejected() {
    let origin = Name::root();
    let ok = format!("\"{}\"", "x".repeat(255));
    assert!(Rdata::from_text(Rtype::TXT, &ok, &origin).is_ok());
    let long = format!("\"a\" \"{}\"", "x".repeat(256));
    let e = Rdata::from_text(Rtype::TXT, &long, &origin).unwrap_err();
    assert_eq!(e.field, 1);
    // Escapes count as the one octet they stand for.
    let escaped = format!("\"{}\"", r"\255".repeat(255));
    assert!(Rdata::from_text(Rtype::TXT, &escaped, &origin).is_ok());
}
