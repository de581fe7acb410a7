//! Wire-format byte literals from the RFCs' examples, compression inside rdata,
//! and the exact-length rule.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use bulwark_proto::rdata::Rdata;
use bulwark_proto::wire::{Reader, WireError};
use bulwark_proto::{Name, Rtype};

fn text(rtype: Rtype, s: &str) -> Rdata {
    Rdata::from_text(rtype, s, &Name::root()).unwrap()
}

fn read(rtype: Rtype, wire: &[u8]) -> Result<Rdata, WireError> {
    Rdata::read(rtype, &mut Reader::new(wire), wire.len())
}

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn rfc_examples_encode_to_their_published_bytes() {
    let cases: &[(Rtype, &str, &str)] = &[
        // RFC 4034 §4.3: the NSEC bitmap with windows 0 and 4.
        (
            Rtype::NSEC,
            "host.example.com. A MX RRSIG NSEC TYPE1234",
            "04 686f7374 07 6578616d706c65 03 636f6d 00
             00 06 40 01 00 00 00 03
             04 1b 000000000000000000000000000000000000000000000000000020",
        ),
        // RFC 9460 Appendix D.1 (AliasMode) and D.2.
        (
            Rtype::HTTPS,
            "0 foo.example.com.",
            "0000 03666f6f 076578616d706c65 03636f6d 00",
        ),
        (
            Rtype::SVCB,
            "1 .",
            "0001 00",
        ),
        (
            Rtype::SVCB,
            "16 foo.example.com. port=53",
            "0010 03666f6f 076578616d706c65 03636f6d 00 0003 0002 0035",
        ),
        (
            Rtype::SVCB,
            "1 foo.example.com. key667=hello",
            "0001 03666f6f 076578616d706c65 03636f6d 00 029b 0005 68656c6c6f",
        ),
        (
            Rtype::SVCB,
            r#"1 foo.example.com. key667="hello\210qoo""#,
            "0001 03666f6f 076578616d706c65 03636f6d 00 029b 0009 68656c6c6fd2716f6f",
        ),
        (
            Rtype::SVCB,
            r#"1 foo.example.com. ipv6hint="2001:db8::1,2001:db8::53:1""#,
            "0001 03666f6f 076578616d706c65 03636f6d 00 0006 0020
             20010db8000000000000000000000001 20010db8000000000000000000530001",
        ),
        (
            Rtype::SVCB,
            "16 foo.example.org. alpn=h2,h3-19 mandatory=ipv4hint,alpn ipv4hint=192.0.2.1",
            "0010 03666f6f 076578616d706c65 036f7267 00
             0000 0004 00010004
             0001 0009 026832 05 68332d3139
             0004 0004 c0000201",
        ),
        (
            Rtype::SVCB,
            r#"16 foo.example.org. alpn="f\\\\oo\\,bar,h2""#,
            "0010 03666f6f 076578616d706c65 036f7267 00 0001 000c 08 665c6f6f2c626172 02 6832",
        ),
        // RFC 4034 §5.4: the DS example.
        (
            Rtype::DS,
            "60485 5 1 2BB183AF5F22588179A53B0A98631FAD1A292118",
            "ec45 05 01 2bb183af5f22588179a53b0a98631fad1a292118",
        ),
        // RFC 5155 §3.2 layout: salt and hash each with a length octet.
        (
            Rtype::NSEC3,
            "1 1 12 aabbccdd 2t7b4g4vsa5smi47k61mv5bv1a22bojr A RRSIG",
            "01 01 000c 04 aabbccdd 14 174eb240 9fe28bcb 4887a183 6f957f0a 8425e27b 00 06 40 00 00 00 00 02",
        ),
        (Rtype::NSEC3PARAM, "1 0 0 -", "01 00 0000 00"),
        (Rtype::CAA, r#"0 issue "ca.example.net""#, "00 05 6973737565 63612e6578616d706c652e6e6574"),
        (Rtype::TXT, r#""a" "" "bc""#, "01 61 00 02 6263"),
        (Rtype::MX, "10 mx.", "000a 02 6d78 00"),
        // RFC 1876: 42°21'54"N 71°06'18"W -24m 30m (BIND's encoding of the §3 example).
        (
            Rtype::LOC,
            "42 21 54 N 71 06 18 W -24m 30m",
            "00 33 16 13 89 17 2d d0 70 be 15 f0 00 98 8d 20",
        ),
    ];
    for &(rtype, t, bytes) in cases {
        let want = hex(bytes);
        let rd = text(rtype, t);
        assert_eq!(rd.to_wire(), want, "{rtype} {t}");
        assert_eq!(read(rtype, &want).unwrap(), rd, "{rtype} {t}");
    }
}

/// A toy message: a header, "example.com." at offset 12, then `rdata`
/// (whose pointers target offset 12).
fn message_with_compressed_rdata(rdata: &[u8]) -> (Vec<u8>, usize) {
    // A header's worth of octets first: pointers never target the header.
    let mut msg = vec![0u8; 12];
    msg.push(7);
    msg.extend_from_slice(b"example");
    msg.push(3);
    msg.extend_from_slice(b"com");
    msg.push(0);
    let at = msg.len();
    msg.extend_from_slice(rdata);
    (msg, at)
}

#[test]
fn names_in_rfc1035_types_may_be_compressed() {
    let mut mx = vec![0, 10, 4];
    mx.extend_from_slice(b"mail");
    mx.extend_from_slice(&[0xc0, 12]);
    let (msg, at) = message_with_compressed_rdata(&mx);
    let mut r = Reader::at(&msg, at);
    let rd = Rdata::read(Rtype::MX, &mut r, mx.len()).unwrap();
    assert_eq!(rd, text(Rtype::MX, "10 mail.example.com."));
    assert_eq!(r.position(), msg.len());

    // SOA with both names compressed.
    let mut soa = vec![2, b'n', b's', 0xc0, 12, 0xc0, 12];
    soa.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5]);
    let (msg, at) = message_with_compressed_rdata(&soa);
    let rd = Rdata::read(Rtype::SOA, &mut Reader::at(&msg, at), soa.len()).unwrap();
    assert_eq!(rd.to_string(), "ns.example.com. example.com. 1 2 3 4 5");

    // SRV, lenient like peers.
    let srv = [0, 1, 0, 2, 0, 3, 0xc0, 12];
    let (msg, at) = message_with_compressed_rdata(&srv);
    let rd = Rdata::read(Rtype::SRV, &mut Reader::at(&msg, at), srv.len()).unwrap();
    assert_eq!(rd.to_string(), "1 2 3 example.com.");
}

#[test]
fn names_in_newer_types_must_not_be_compressed() {
    for (rtype, rdata) in [
        (Rtype::NSEC, vec![0xc0, 12]),
        (Rtype::DNAME, vec![0xc0, 12]),
        (Rtype::SVCB, vec![0, 1, 0xc0, 12]),
        (Rtype::RRSIG, {
            let mut v = vec![0, 1, 8, 2, 0, 0, 0, 60, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1];
            v.extend_from_slice(&[0xc0, 12, 1, 2]);
            v
        }),
    ] {
        let (msg, at) = message_with_compressed_rdata(&rdata);
        let res = Rdata::read(rtype, &mut Reader::at(&msg, at), rdata.len());
        assert!(
            matches!(res, Err(WireError::BadName { .. })),
            "{rtype}: {res:?}"
        );
    }
}

#[test]
fn rdata_must_fill_its_declared_length_exactly() {
    let cases: &[(Rtype, &[u8])] = &[
        (Rtype::A, &[192, 0, 2, 1, 0]),
        (Rtype::A, &[192, 0, 2]),
        (Rtype::AAAA, &[0; 15]),
        (Rtype::MX, &[0, 10, 0, 0]),
        (Rtype::MX, &[0, 10]),
        (Rtype::SOA, &[0, 0, 0, 0, 0, 1]),
        (Rtype::HINFO, &[1, b'a']),
        (Rtype::HINFO, &[1, b'a', 1, b'b', 0]),
        (Rtype::NSEC3PARAM, &[1, 0, 0, 0, 2, 0xaa]),
        (Rtype::SVCB, &[0, 1, 0, 0, 3, 0, 2, 0]),
    ];
    for &(rtype, wire) in cases {
        let res = read(rtype, wire);
        assert!(
            matches!(res, Err(WireError::RdataLength { .. })),
            "{rtype} {wire:02x?}: {res:?}"
        );
    }
    // The rdlength running past the message is a short message, not bad rdata.
    assert!(Rdata::read(Rtype::A, &mut Reader::new(&[1, 2]), 4).is_err());
    // After a successful read the reader sits right after the rdata.
    let msg = [10, 0, 0, 1, 0xff];
    let mut r = Reader::new(&msg);
    Rdata::read(Rtype::A, &mut r, 4).unwrap();
    assert_eq!(r.position(), 4);
}

#[test]
fn malformed_structures_are_rejected() {
    let cases: &[(Rtype, &[u8])] = &[
        // Type bitmap: windows out of order, zero length, trailing zero octet.
        (Rtype::NSEC, &[0, 1, 1, 0x40, 0, 1, 0x40]),
        (Rtype::NSEC, &[0, 0, 0]),
        (Rtype::NSEC, &[0, 0, 2, 0x40, 0]),
        (Rtype::NSEC, &[0, 0, 33, 0]),
        // SVCB: keys out of order, bad port length, mandatory listing itself.
        (Rtype::SVCB, &[0, 1, 0, 0, 3, 0, 2, 0, 1, 0, 1, 0, 1, 0]),
        (Rtype::SVCB, &[0, 1, 0, 0, 3, 0, 1, 0]),
        (Rtype::SVCB, &[0, 1, 0, 0, 0, 0, 2, 0, 0]),
        (Rtype::SVCB, &[0, 1, 0, 0, 1, 0, 1, 0]),
        (Rtype::SVCB, &[0, 1, 0, 0xff, 0xff, 0, 0]),
        // Not self-consistent (RFC 9460 §2.4.3): mandatory=port without port,
        // no-default-alpn without alpn.
        (Rtype::SVCB, &[0, 1, 0, 0, 0, 0, 2, 0, 3]),
        (Rtype::SVCB, &[0, 1, 0, 0, 2, 0, 0]),
        // NSEC without types.
        (Rtype::NSEC, &[0]),
        // Empty blobs cannot be written in presentation format.
        (Rtype::DS, &[0, 1, 8, 2]),
        (Rtype::DS, &[0, 1, 8, 2, 0xaa]),
        (Rtype::DNSKEY, &[1, 0, 3, 8]),
        (Rtype::TXT, &[]),
        // CAA tag must be letters and digits.
        (Rtype::CAA, &[0, 2, b'a', b'-', b'x']),
        (Rtype::CAA, &[0, 0]),
        // NSEC3 with an empty next hashed owner.
        (Rtype::NSEC3, &[1, 0, 0, 0, 0, 0]),
        // ZONEMD digest shorter than 12 octets.
        (Rtype::ZONEMD, &[0, 0, 0, 1, 1, 1, 0xaa]),
    ];
    for &(rtype, wire) in cases {
        assert!(read(rtype, wire).is_err(), "{rtype} {wire:02x?} accepted");
    }
}

#[test]
fn loc_versions_other_than_0_stay_generic() {
    let wire = [1, 2, 3];
    let rd = read(Rtype::LOC, &wire).unwrap();
    assert_eq!(rd.to_string(), r"\# 3 010203");
    assert_eq!(
        Rdata::from_text(Rtype::LOC, r"\# 3 010203", &Name::root()).unwrap(),
        rd
    );
}

#[test]
fn unknown_types_keep_their_bytes() {
    let rd = read(Rtype(65280), &[1, 2, 3]).unwrap();
    assert_eq!(
        rd,
        Rdata::Unknown {
            rtype: Rtype(65280),
            data: vec![1, 2, 3]
        }
    );
    assert_eq!(rd.to_string(), r"\# 3 010203");
    assert_eq!(read(Rtype::NULL, &[]).unwrap().to_string(), r"\# 0");
}
