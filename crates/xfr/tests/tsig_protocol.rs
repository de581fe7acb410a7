//! TSIG behaviour (RFC 8945) between bulwark's own client and server sides:
//! what the MAC covers, the order of the server's checks, the error answers,
//! and multi-message responses.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation
)]

use bulwark_crypto::{HmacAlgorithm, HmacContext};
use bulwark_proto::message::{MessageBuilder, OptRecord, Section};
use bulwark_proto::{Class, MessageView, Name, Rcode, Rtype};
use bulwark_xfr::tsig::{
    sign_request, strip_tsig, verify_request, write_tsig_error_response, KeyRing, MalformedTsig,
    ResponseSigner, ResponseVerifier, TsigAlgorithm, TsigFailure, TsigKey, TsigRcode, TsigRdata,
    MAX_UNSIGNED_RUN,
};

const NOW: u64 = 1_700_000_000;

fn name(s: &str) -> Name {
    s.parse().unwrap()
}

fn key(alg: TsigAlgorithm) -> TsigKey {
    TsigKey::new(name("xfr.example."), alg, (1..=32).collect())
}

fn ring(key: &TsigKey) -> KeyRing {
    [key.clone()].into_iter().collect()
}

/// A query for `qname`/`qtype` with id `id`, optionally with an OPT record.
fn query(id: u16, qname: &str, qtype: Rtype, edns: bool) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut b = MessageBuilder::new(&mut buf, 65535);
    b.header_mut().id = id;
    b.push_question(&name(qname), qtype, Class::IN).unwrap();
    let opt = OptRecord::default();
    b.finish(edns.then_some(&opt)).unwrap();
    buf
}

/// A response message with `n` A records, for multi-message tests.
fn response_part(id: u16, n: u8) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut b = MessageBuilder::new(&mut buf, 65535);
    b.header_mut().id = id;
    b.header_mut().flags.qr = true;
    b.push_question(&name("example."), Rtype::AXFR, Class::IN)
        .unwrap();
    for i in 0..n {
        b.push_record(
            Section::Answer,
            &name(&format!("h{i}.example.")),
            Rtype::A,
            Class::IN,
            3600,
            &[192, 0, 2, i],
        )
        .unwrap();
    }
    b.finish(None).unwrap();
    buf
}

fn tsig_of(msg: &[u8]) -> TsigRdata<'_> {
    let view = MessageView::parse(msg).unwrap();
    TsigRdata::parse(view.tsig().unwrap().rdata).unwrap()
}

/// The MAC of a request, computed here from RFC 8945 §4.3.1 and §4.3.3 with
/// the digest input written out octet by octet, independently of the code.
#[test]
fn request_mac_covers_message_then_tsig_variables() {
    let k = TsigKey::new(
        name("Key.Example."),
        TsigAlgorithm::HmacSha256,
        b"sekrit".to_vec(),
    );
    let mut msg = query(0x4242, "a.example.", Rtype::A, false);
    let unsigned = msg.clone();
    let mac = sign_request(&mut msg, &k, 0x0000_6000_0001, 300).unwrap();

    let mut digest = unsigned.clone();
    digest.extend_from_slice(b"\x03key\x07example\x00"); // key name, lowercased
    digest.extend_from_slice(&[0x00, 0xff]); // CLASS ANY
    digest.extend_from_slice(&[0, 0, 0, 0]); // TTL 0
    digest.extend_from_slice(b"\x0bhmac-sha256\x00");
    digest.extend_from_slice(&[0x00, 0x00, 0x60, 0x00, 0x00, 0x01]); // time signed
    digest.extend_from_slice(&[0x01, 0x2c]); // fudge 300
    digest.extend_from_slice(&[0x00, 0x00]); // error
    digest.extend_from_slice(&[0x00, 0x00]); // other length
    let mut h = HmacContext::new(HmacAlgorithm::Sha256, b"sekrit");
    h.update(&digest);
    assert_eq!(mac, h.finish());

    // The record itself: ARCOUNT 1, owner as configured, then the rdata.
    assert_eq!(&msg[10..12], &[0, 1]);
    assert_eq!(&msg[..unsigned.len()][12..], &unsigned[12..]);
    let rr = &msg[unsigned.len()..];
    let mut want = b"\x03Key\x07Example\x00\x00\xfa\x00\xff\x00\x00\x00\x00".to_vec();
    want.extend_from_slice(&[0, 13 + 16 + 32]);
    want.extend_from_slice(b"\x0bhmac-sha256\x00\x00\x00\x60\x00\x00\x01\x01\x2c\x00\x20");
    want.extend_from_slice(&mac);
    want.extend_from_slice(&[0x42, 0x42, 0, 0, 0, 0]);
    assert_eq!(rr, want.as_slice());
    assert_eq!(rr.len(), k.record_len());
}

#[test]
fn every_algorithm_signs_and_verifies_requests() {
    for alg in TsigAlgorithm::ALL {
        let k = key(alg);
        let mut msg = query(7, "example.", Rtype::SOA, true);
        let mac = sign_request(&mut msg, &k, NOW, 300).unwrap();
        assert_eq!(mac.len(), alg.mac_len());
        let v = verify_request(&msg, &ring(&k), NOW + 10).unwrap().unwrap();
        assert_eq!(v.request_mac(), mac.as_slice());
        assert_eq!(v.key().name(), k.name());
        assert_eq!(v.time_signed(), NOW);
        assert_eq!(v.fudge(), 300);
        assert_eq!(v.original_id(), 7);
    }
}

#[test]
fn unsigned_request_is_not_a_failure() {
    let msg = query(1, "example.", Rtype::A, false);
    assert!(
        verify_request(&msg, &ring(&key(TsigAlgorithm::HmacSha256)), NOW)
            .unwrap()
            .is_none()
    );
    assert!(strip_tsig(&msg).is_none());
}

#[test]
fn any_changed_octet_of_a_signed_request_fails() {
    let k = key(TsigAlgorithm::HmacSha256);
    let keys = ring(&k);
    let mut msg = query(9, "www.example.", Rtype::AAAA, true);
    sign_request(&mut msg, &k, NOW, 300).unwrap();
    let tsig_at = MessageView::parse(&msg).unwrap().tsig_offset().unwrap();
    for i in 0..msg.len() {
        let mut bad = msg.clone();
        bad[i] ^= 0x01;
        let got = verify_request(&bad, &keys, NOW);
        // The Original ID stands in for the header ID, so flipping the ID
        // alone is allowed (RFC 8945 §4.3.3: forwarders may change it).
        if i < 2 {
            assert!(matches!(got, Ok(Some(_))), "octet {i}: {got:?}");
            continue;
        }
        assert!(
            matches!(got, Err(_) | Ok(None)),
            "octet {i} (TSIG at {tsig_at}) still verified"
        );
        if (12..tsig_at).contains(&i) {
            // Inside the signed message, where parsing may still succeed.
            assert!(
                matches!(
                    got,
                    Err(TsigFailure::BadSig) | Err(TsigFailure::Malformed(_))
                ),
                "octet {i}: {got:?}"
            );
        }
    }
}

#[test]
fn forwarded_request_with_a_new_id_verifies_by_original_id() {
    let k = key(TsigAlgorithm::HmacSha512);
    let mut msg = query(0x1111, "example.", Rtype::SOA, false);
    sign_request(&mut msg, &k, NOW, 300).unwrap();
    msg[0] = 0x99;
    msg[1] = 0x99;
    let v = verify_request(&msg, &ring(&k), NOW).unwrap().unwrap();
    assert_eq!(v.original_id(), 0x1111);
    let stripped = strip_tsig(&msg).unwrap();
    assert_eq!(&stripped[..2], &[0x11, 0x11]);
}

#[test]
fn key_names_match_in_any_case() {
    let signer = TsigKey::new(
        name("XFR.Example."),
        TsigAlgorithm::HmacSha256,
        (1..=32).collect(),
    );
    let mut msg = query(3, "example.", Rtype::SOA, false);
    sign_request(&mut msg, &signer, NOW, 300).unwrap();
    // RFC 8945 §4.3.3: the key name enters the MAC in canonical (lowercase) form.
    assert!(
        verify_request(&msg, &ring(&key(TsigAlgorithm::HmacSha256)), NOW)
            .unwrap()
            .is_some()
    );
}

#[test]
fn strip_tsig_gives_the_message_before_signing() {
    let k = key(TsigAlgorithm::HmacSha256);
    let unsigned = query(0x0102, "example.", Rtype::A, true);
    let mut msg = unsigned.clone();
    sign_request(&mut msg, &k, NOW, 300).unwrap();
    assert_eq!(strip_tsig(&msg).unwrap(), unsigned);
}

#[test]
fn unknown_key_and_md5_are_badkey() {
    let mut msg = query(5, "example.", Rtype::SOA, false);
    let other = TsigKey::new(
        name("other.example."),
        TsigAlgorithm::HmacSha256,
        vec![1; 32],
    );
    sign_request(&mut msg, &other, NOW, 300).unwrap();
    let keys = ring(&key(TsigAlgorithm::HmacSha256));
    assert!(matches!(
        verify_request(&msg, &keys, NOW),
        Err(TsigFailure::BadKey { .. })
    ));
    // The right name with another algorithm is another key.
    let mut msg = query(5, "example.", Rtype::SOA, false);
    sign_request(&mut msg, &key(TsigAlgorithm::HmacSha384), NOW, 300).unwrap();
    assert!(matches!(
        verify_request(&msg, &keys, NOW),
        Err(TsigFailure::BadKey { .. })
    ));
    // hmac-md5: rewrite the algorithm name of a signed request.
    let msg = with_algorithm(&msg, b"\x08hmac-md5\x07sig-alg\x03reg\x03int\x00");
    match verify_request(&msg, &keys, NOW) {
        Err(TsigFailure::BadKey { key, algorithm }) => {
            assert_eq!(*key, name("xfr.example."));
            assert_eq!(*algorithm, name("hmac-md5.sig-alg.reg.int."));
        }
        other => panic!("{other:?}"),
    }
}

/// The message with its TSIG's algorithm name replaced (MAC left as it was).
fn with_algorithm(msg: &[u8], alg: &[u8]) -> Vec<u8> {
    let view = MessageView::parse(msg).unwrap();
    let rr = view.tsig().unwrap();
    let old = TsigRdata::parse(rr.rdata).unwrap();
    let old_len = old.algorithm.wire_len();
    let mut out = msg[..rr.rdata_offset - 2].to_vec();
    let rdlen = rr.rdata.len() - old_len + alg.len();
    out.extend_from_slice(&(rdlen as u16).to_be_bytes());
    out.extend_from_slice(alg);
    out.extend_from_slice(&rr.rdata[old_len..]);
    out
}

#[test]
fn time_is_checked_after_the_mac() {
    let k = key(TsigAlgorithm::HmacSha256);
    let keys = ring(&k);
    let mut msg = query(5, "example.", Rtype::SOA, false);
    sign_request(&mut msg, &k, NOW, 300).unwrap();
    assert!(verify_request(&msg, &keys, NOW + 300).unwrap().is_some());
    assert!(verify_request(&msg, &keys, NOW - 300).unwrap().is_some());
    assert_eq!(
        verify_request(&msg, &keys, NOW + 301).unwrap_err(),
        TsigFailure::BadTime {
            time_signed: NOW,
            fudge: 300,
            now: NOW + 301
        }
    );
    // A bad MAC outside the window is BADSIG, not BADTIME (RFC 8945 §5.2.3).
    let last = msg.len() - 7; // inside the MAC
    msg[last] ^= 0xff;
    assert_eq!(
        verify_request(&msg, &keys, NOW + 10_000).unwrap_err(),
        TsigFailure::BadSig
    );
}

#[test]
fn mac_size_rules_give_formerr_and_badtrunc() {
    // Truncate a valid MAC to `len` octets by rewriting the record.
    fn truncated(msg: &[u8], len: usize) -> Vec<u8> {
        let view = MessageView::parse(msg).unwrap();
        let rr = view.tsig().unwrap();
        let r = TsigRdata::parse(rr.rdata).unwrap();
        let alg_len = r.algorithm.wire_len();
        let mut rdata = rr.rdata[..alg_len + 8].to_vec();
        rdata.extend_from_slice(&(len as u16).to_be_bytes());
        rdata.extend_from_slice(&r.mac[..len]);
        rdata.extend_from_slice(&rr.rdata[alg_len + 10 + r.mac.len()..]);
        let mut out = msg[..rr.rdata_offset - 2].to_vec();
        out.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
        out.extend_from_slice(&rdata);
        out
    }
    let k = key(TsigAlgorithm::HmacSha256);
    let mut msg = query(5, "example.", Rtype::SOA, false);
    sign_request(&mut msg, &k, NOW, 300).unwrap();

    // Below max(10, 16): FORMERR (RFC 8945 §5.2.2.1), checked before the MAC.
    assert_eq!(
        verify_request(&truncated(&msg, 15), &ring(&k), NOW).unwrap_err(),
        TsigFailure::Malformed(MalformedTsig::MacTooShort { len: 15, min: 16 })
    );
    assert!(matches!(
        verify_request(&truncated(&msg, 0), &ring(&k), NOW),
        Err(TsigFailure::Malformed(_))
    ));
    // Allowed by the RFC but not by a key that wants full MACs: BADTRUNC,
    // after the time check.
    let half = truncated(&msg, 16);
    assert_eq!(
        verify_request(&half, &ring(&k), NOW).unwrap_err(),
        TsigFailure::BadTrunc { len: 16, min: 32 }
    );
    assert!(matches!(
        verify_request(&half, &ring(&k), NOW + 1000),
        Err(TsigFailure::BadTime { .. })
    ));
    let lenient = k.clone().with_truncation(16).unwrap();
    let v = verify_request(&half, &ring(&lenient), NOW)
        .unwrap()
        .unwrap();
    // The response covers the truncated request MAC (RFC 8945 §5.2.2.1).
    assert_eq!(v.request_mac().len(), 16);
    // A wrong truncated MAC is still BADSIG.
    let mut bad = half.clone();
    let at = bad.len() - 7;
    bad[at] ^= 1;
    assert_eq!(
        verify_request(&bad, &ring(&k), NOW).unwrap_err(),
        TsigFailure::BadSig
    );
}

#[test]
fn malformed_tsig_records_are_formerr() {
    let k = key(TsigAlgorithm::HmacSha256);
    let keys = ring(&k);
    let mut msg = query(5, "example.", Rtype::SOA, false);
    sign_request(&mut msg, &k, NOW, 300).unwrap();
    let view = MessageView::parse(&msg).unwrap();
    let rr = view.tsig().unwrap();
    let class_at = rr.rdata_offset - 8;
    let ttl_at = rr.rdata_offset - 6;

    let mut wrong_class = msg.clone();
    wrong_class[class_at..class_at + 2].copy_from_slice(&[0, 1]);
    assert_eq!(
        verify_request(&wrong_class, &keys, NOW).unwrap_err(),
        TsigFailure::Malformed(MalformedTsig::Class(Class::IN))
    );
    let mut ttl = msg.clone();
    ttl[ttl_at + 3] = 1;
    assert_eq!(
        verify_request(&ttl, &keys, NOW).unwrap_err(),
        TsigFailure::Malformed(MalformedTsig::Ttl(1))
    );
    // MAC size larger than the rdata holds.
    let mut long_mac = msg.clone();
    let mac_size_at = rr.rdata_offset + 13 + 8;
    long_mac[mac_size_at + 1] = 0xff;
    assert!(matches!(
        verify_request(&long_mac, &keys, NOW),
        Err(TsigFailure::Malformed(MalformedTsig::Rdata { .. }))
    ));
    // A TSIG that is not the last record: the message does not parse.
    let mut not_last = msg.clone();
    not_last[11] = 2;
    not_last.extend_from_slice(&[0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4, 1, 2, 3, 4]);
    assert!(matches!(
        verify_request(&not_last, &keys, NOW),
        Err(TsigFailure::Malformed(MalformedTsig::Message(_)))
    ));
    let mut out = Vec::new();
    let failure = verify_request(&wrong_class, &keys, NOW).unwrap_err();
    write_tsig_error_response(&wrong_class, &failure, &keys, NOW, &mut out).unwrap();
    let answer = MessageView::parse(&out).unwrap();
    assert_eq!(answer.rcode(), Rcode::FORMERR);
    assert!(answer.tsig().is_none());
}

/// A server answers `msg` as a zone transfer of `parts` messages, signing them all.
fn sign_response(request: &[u8], keys: &KeyRing, parts: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let v = verify_request(request, keys, NOW).unwrap().unwrap();
    let mut signer = ResponseSigner::new(&v);
    parts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut m = p.clone();
            signer.sign(&mut m, NOW + i as u64).unwrap();
            assert_eq!(m.len(), p.len() + signer.record_len());
            m
        })
        .collect()
}

#[test]
fn multi_message_response_verifies_for_every_algorithm() {
    for alg in TsigAlgorithm::ALL {
        let k = key(alg);
        let keys = ring(&k);
        let mut req = query(77, "example.", Rtype::AXFR, false);
        let mac = sign_request(&mut req, &k, NOW, 300).unwrap();
        let parts: Vec<_> = (1..=5).map(|n| response_part(77, n)).collect();
        let signed = sign_response(&req, &keys, &parts);
        let mut verifier = ResponseVerifier::new(&k, &mac);
        for m in &signed {
            verifier.verify(m, NOW + 2).unwrap();
        }
        verifier.finish().unwrap();
        // Later messages carry only the timers: their Error/Other are not covered.
        assert_eq!(tsig_of(&signed[1]).error, TsigRcode::NOERROR);
    }
}

#[test]
fn reordered_or_altered_messages_fail() {
    let k = key(TsigAlgorithm::HmacSha256);
    let keys = ring(&k);
    let mut req = query(77, "example.", Rtype::AXFR, false);
    let mac = sign_request(&mut req, &k, NOW, 300).unwrap();
    let parts: Vec<_> = (1..=3).map(|n| response_part(77, n)).collect();
    let signed = sign_response(&req, &keys, &parts);

    let mut swapped = ResponseVerifier::new(&k, &mac);
    swapped.verify(&signed[0], NOW).unwrap();
    assert_eq!(swapped.verify(&signed[2], NOW), Err(TsigFailure::BadSig));
    // After a failure every call repeats it, even for a message that does
    // not parse (a fuzzer found it replaced by that message's own error).
    assert_eq!(swapped.verify(&signed[1], NOW), Err(TsigFailure::BadSig));
    assert_eq!(swapped.verify(&[0u8; 3], NOW), Err(TsigFailure::BadSig));
    assert_eq!(swapped.finish(), Err(TsigFailure::BadSig));

    let mut wrong_request = ResponseVerifier::new(&k, &[0; 32]);
    assert_eq!(
        wrong_request.verify(&signed[0], NOW),
        Err(TsigFailure::BadSig)
    );

    let mut altered = signed[1].clone();
    altered[14] ^= 0x20; // the case of a letter of the question name
    let mut v = ResponseVerifier::new(&k, &mac);
    v.verify(&signed[0], NOW).unwrap();
    assert_eq!(v.verify(&altered, NOW), Err(TsigFailure::BadSig));
}

#[test]
fn unsigned_messages_between_signed_ones_are_covered() {
    let k = key(TsigAlgorithm::HmacSha256);
    let keys = ring(&k);
    let mut req = query(77, "example.", Rtype::AXFR, false);
    let mac = sign_request(&mut req, &k, NOW, 300).unwrap();
    let v = verify_request(&req, &keys, NOW).unwrap().unwrap();

    // An old-style server: sign the first, leave `MAX_UNSIGNED_RUN` unsigned,
    // then sign one that covers them (RFC 8945 §5.3.1 digest components).
    let first = {
        let mut m = response_part(77, 1);
        ResponseSigner::new(&v).sign(&mut m, NOW).unwrap();
        m
    };
    let prior = tsig_of(&first).mac.to_vec();
    let unsigned: Vec<_> = (0..MAX_UNSIGNED_RUN)
        .map(|i| response_part(77, (i % 7) as u8))
        .collect();
    let last_unsigned = response_part(77, 2);
    let mut h = HmacContext::new(HmacAlgorithm::Sha256, k.secret());
    h.update(&(prior.len() as u16).to_be_bytes());
    h.update(&prior);
    for m in &unsigned {
        h.update(m);
    }
    h.update(&last_unsigned);
    let time = NOW.to_be_bytes();
    h.update(&time[2..]);
    h.update(&300u16.to_be_bytes());
    let last_mac = h.finish();
    // The signed form: ARCOUNT 1 and the TSIG record after the unsigned form.
    let mut last = last_unsigned.clone();
    last[11] = 1;
    last.extend_from_slice(b"\x03xfr\x07example\x00\x00\xfa\x00\xff\0\0\0\0");
    last.extend_from_slice(&[0, 13 + 16 + 32]);
    last.extend_from_slice(b"\x0bhmac-sha256\x00");
    last.extend_from_slice(&time[2..]);
    last.extend_from_slice(&[0x01, 0x2c, 0, 32]);
    last.extend_from_slice(&last_mac);
    last.extend_from_slice(&[0, 77, 0, 0, 0, 0]);
    let mut verifier = ResponseVerifier::new(&k, &mac);
    verifier.verify(&first, NOW).unwrap();
    for m in &unsigned {
        verifier.verify(m, NOW).unwrap();
        assert_eq!(verifier.finish(), Err(TsigFailure::LastUnsigned));
    }
    verifier.verify(&last, NOW).unwrap();
    verifier.finish().unwrap();

    // One more unsigned message than allowed ends the transfer.
    let mut verifier = ResponseVerifier::new(&k, &mac);
    verifier.verify(&first, NOW).unwrap();
    for m in &unsigned {
        verifier.verify(m, NOW).unwrap();
    }
    assert_eq!(
        verifier.verify(&last_unsigned, NOW),
        Err(TsigFailure::TooManyUnsigned)
    );
}

#[test]
fn first_message_must_be_signed() {
    let k = key(TsigAlgorithm::HmacSha256);
    let mut v = ResponseVerifier::new(&k, &[0; 32]);
    assert_eq!(v.finish(), Err(TsigFailure::Unsigned));
    assert_eq!(
        v.verify(&response_part(1, 1), NOW),
        Err(TsigFailure::Unsigned)
    );
}

#[test]
fn response_outside_its_fudge_is_badtime_for_the_client() {
    let k = key(TsigAlgorithm::HmacSha256);
    let keys = ring(&k);
    let mut req = query(77, "example.", Rtype::SOA, false);
    let mac = sign_request(&mut req, &k, NOW, 300).unwrap();
    let signed = sign_response(&req, &keys, &[response_part(77, 1)]);
    let mut v = ResponseVerifier::new(&k, &mac);
    assert!(matches!(
        v.verify(&signed[0], NOW + 301),
        Err(TsigFailure::BadTime { .. })
    ));
}

#[test]
fn response_signed_with_another_key_is_badkey() {
    let k = key(TsigAlgorithm::HmacSha256);
    let other = TsigKey::new(
        name("other."),
        TsigAlgorithm::HmacSha256,
        (1..=32).collect(),
    );
    let mut req = query(77, "example.", Rtype::SOA, false);
    let mac = sign_request(&mut req, &other, NOW, 300).unwrap();
    let signed = sign_response(&req, &ring(&other), &[response_part(77, 1)]);
    let mut v = ResponseVerifier::new(&k, &mac);
    assert!(matches!(
        v.verify(&signed[0], NOW),
        Err(TsigFailure::BadKey { .. })
    ));
}

#[test]
fn badkey_and_badsig_answers_are_unsigned_and_echo_the_query() {
    let k = key(TsigAlgorithm::HmacSha256);
    let keys = ring(&k);
    let other = TsigKey::new(
        name("Other.Example."),
        TsigAlgorithm::HmacSha256,
        vec![1; 32],
    );

    let mut unknown = query(0xabcd, "Www.Example.", Rtype::A, true);
    let unknown_mac = sign_request(&mut unknown, &other, NOW, 250).unwrap();
    let mut forged = query(0x1234, "www.example.", Rtype::A, false);
    let forged_mac = sign_request(&mut forged, &k, NOW, 300).unwrap();
    let at = forged.len() - 7;
    forged[at] ^= 1;

    for (q, signer, mac, want) in [
        (&unknown, &other, unknown_mac, TsigRcode::BADKEY),
        (&forged, &k, forged_mac, TsigRcode::BADSIG),
    ] {
        let failure = verify_request(q, &keys, NOW).unwrap_err();
        assert_eq!(failure.tsig_error(), Some(want));
        let mut out = Vec::new();
        write_tsig_error_response(q, &failure, &keys, NOW + 5, &mut out).unwrap();
        let view = MessageView::parse(&out).unwrap();
        let query_view = MessageView::parse(q).unwrap();
        assert_eq!(view.header().id, query_view.header().id);
        assert!(view.header().flags.qr);
        assert_eq!(view.rcode(), Rcode::NOTAUTH);
        let question = view.question().unwrap();
        assert!(question
            .qname
            .eq_exact(&query_view.question().unwrap().qname));
        assert_eq!(view.edns().is_some(), query_view.edns().is_some());
        let rr = view.tsig().unwrap();
        assert!(rr.owner.eq_exact(signer.name()));
        let t = TsigRdata::parse(rr.rdata).unwrap();
        assert_eq!(t.error, want);
        assert!(t.mac.is_empty());
        assert_eq!(t.original_id, query_view.header().id);
        assert_eq!(t.time_signed, NOW);
        assert!(t.other.is_empty());
        // The client reports the server's error, not a bad signature.
        let mut v = ResponseVerifier::new(signer, &mac);
        assert_eq!(
            v.verify(&out, NOW + 5),
            Err(TsigFailure::ServerError {
                error: want,
                server_time: None
            })
        );
    }
}

#[test]
fn md5_request_gets_a_badkey_answer_naming_md5() {
    let k = key(TsigAlgorithm::HmacSha256);
    let keys = ring(&k);
    let mut msg = query(5, "example.", Rtype::SOA, false);
    sign_request(&mut msg, &k, NOW, 300).unwrap();
    let md5 = b"\x08HMAC-MD5\x07SIG-ALG\x03REG\x03INT\x00";
    let msg = with_algorithm(&msg, md5);
    let failure = verify_request(&msg, &keys, NOW).unwrap_err();
    let mut out = Vec::new();
    write_tsig_error_response(&msg, &failure, &keys, NOW, &mut out).unwrap();
    let view = MessageView::parse(&out).unwrap();
    let t = TsigRdata::parse(view.tsig().unwrap().rdata).unwrap();
    assert_eq!(t.error, TsigRcode::BADKEY);
    assert_eq!(t.algorithm.as_wire(), md5);
}

#[test]
fn badtime_response_is_signed_and_carries_server_time() {
    let k = key(TsigAlgorithm::HmacSha384);
    let keys = ring(&k);
    let client_time = NOW - 1000;
    let mut q = query(0x5151, "example.", Rtype::SOA, true);
    let mac = sign_request(&mut q, &k, client_time, 300).unwrap();
    let failure = verify_request(&q, &keys, NOW).unwrap_err();
    assert!(matches!(failure, TsigFailure::BadTime { .. }));
    let mut out = Vec::new();
    write_tsig_error_response(&q, &failure, &keys, NOW, &mut out).unwrap();
    let view = MessageView::parse(&out).unwrap();
    assert_eq!(view.rcode(), Rcode::NOTAUTH);
    assert_eq!(view.header().id, 0x5151);
    let t = tsig_of(&out);
    assert_eq!(t.error, TsigRcode::BADTIME);
    assert_eq!(t.mac.len(), 48);
    // RFC 8945 §5.2.3: the client's time in Time Signed, the server's in Other Data.
    assert_eq!(t.time_signed, client_time);
    assert_eq!(t.other.len(), 6);
    assert_eq!(t.other_time(), Some(NOW));
    // The client verifies the MAC (over its request MAC) and learns the server time.
    let mut v = ResponseVerifier::new(&k, &mac);
    assert_eq!(
        v.verify(&out, client_time),
        Err(TsigFailure::ServerError {
            error: TsigRcode::BADTIME,
            server_time: Some(NOW)
        })
    );
    // Tampering with the server time breaks the MAC.
    let mut tampered = out.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 1;
    let mut v = ResponseVerifier::new(&k, &mac);
    assert_eq!(v.verify(&tampered, client_time), Err(TsigFailure::BadSig));
}

#[test]
fn badtime_claimed_for_a_forged_request_is_answered_unsigned() {
    let k = key(TsigAlgorithm::HmacSha256);
    let keys = ring(&k);
    let mut q = query(1, "example.", Rtype::SOA, false);
    sign_request(&mut q, &k, NOW, 300).unwrap();
    let at = q.len() - 7;
    q[at] ^= 1;
    let claimed = TsigFailure::BadTime {
        time_signed: NOW,
        fudge: 300,
        now: NOW,
    };
    let mut out = Vec::new();
    write_tsig_error_response(&q, &claimed, &keys, NOW, &mut out).unwrap();
    let t = tsig_of(&out);
    assert_eq!(t.error, TsigRcode::BADSIG);
    assert!(t.mac.is_empty());
}

#[test]
fn badtrunc_response_is_signed() {
    let k = key(TsigAlgorithm::HmacSha256);
    let keys = ring(&k);
    let mut q = query(1, "example.", Rtype::SOA, false);
    sign_request(&mut q, &k, NOW, 300).unwrap();
    let failure = TsigFailure::BadTrunc { len: 16, min: 32 };
    let mut out = Vec::new();
    write_tsig_error_response(&q, &failure, &keys, NOW + 1, &mut out).unwrap();
    let t = tsig_of(&out);
    assert_eq!(t.error, TsigRcode::BADTRUNC);
    assert_eq!(t.mac.len(), 32);
    assert_eq!(t.time_signed, NOW + 1);
}

#[test]
fn client_side_failures_have_no_answer() {
    let q = query(1, "example.", Rtype::SOA, false);
    let mut out = Vec::new();
    assert!(
        write_tsig_error_response(&q, &TsigFailure::Unsigned, &KeyRing::new(), NOW, &mut out)
            .is_none()
    );
}

/// RFC 8945 §5.3.1 for a message after the first, written out by hand: the
/// prior MAC with its size, the message as it was before signing, then only
/// Time Signed and Fudge.
#[test]
fn later_messages_cover_prior_mac_message_and_timers_only() {
    let k = key(TsigAlgorithm::HmacSha256);
    let mut req = query(77, "example.", Rtype::AXFR, false);
    sign_request(&mut req, &k, NOW, 300).unwrap();
    let parts = [response_part(77, 1), response_part(77, 2)];
    let signed = sign_response(&req, &ring(&k), &parts);
    let prior = tsig_of(&signed[0]).mac.to_vec();
    let mut h = HmacContext::new(HmacAlgorithm::Sha256, k.secret());
    h.update(&[0, 32]);
    h.update(&prior);
    h.update(&parts[1]);
    h.update(&(NOW + 1).to_be_bytes()[2..]); // sign_response signs message i at NOW + i
    h.update(&[0x01, 0x2c]);
    assert_eq!(tsig_of(&signed[1]).mac, h.finish().as_slice());
}
