//! TSIG (RFC 8945) on both sides, against a key ring of two keys: `xfr.key.`
//! (hmac-sha256, full MACs only) and `other.` (hmac-sha1, MACs truncated to 10
//! octets accepted, §5.2.2.1).
//!
//! Input layout: six octets of the server's clock (48-bit Unix seconds, as
//! TSIG carries it), then a message. The message is checked as a request
//! (`verify_request`, `strip_tsig`, `write_tsig_error_response`) and as the
//! answer to a request whose MAC was `REQUEST_MAC` (`ResponseVerifier`, with
//! each key). The octets after the clock are also read as a sequence of
//! length-prefixed messages, one response of several messages (a transfer).
//!
//! What must hold, whatever the input:
//! - no panic;
//! - a request without TSIG has nothing to strip; a stripped message parses,
//!   carries the Original ID and no TSIG, and ends where the TSIG began;
//! - a verified request's key is in the ring, and a response signed with
//!   `ResponseSigner` (two messages) verifies with `ResponseVerifier` at the
//!   same time;
//! - the answer to a failed request parses, with the query's ID and QR; for a
//!   TSIG error it is NOTAUTH and the client, checking it against the
//!   request's MAC, reads back the same TSIG error (and for BADTIME the
//!   server's clock);
//! - a `ResponseVerifier` repeats its first failure for every later message
//!   and at `finish`, and `finish` accepts only a response whose last message
//!   was signed and verified.
#![no_main]

use std::sync::OnceLock;

use bulwark_proto::message::{MessageBuilder, MessageView};
use bulwark_proto::Rcode;
use bulwark_xfr::tsig::{
    strip_tsig, verify_request, write_tsig_error_response, KeyRing, ResponseSigner,
    ResponseVerifier, TsigAlgorithm, TsigFailure, TsigKey, TsigRcode, TsigRdata,
};
use libfuzzer_sys::fuzz_target;

/// The secrets, as in `fuzz/make_corpus.py` (which signs the seeds).
const XFR_SECRET: &[u8] = b"bulwark-fuzz-xfr-key-secret-0001";
const OTHER_SECRET: &[u8] = b"other-key-secret";
/// The MAC of the request the input is read as an answer to.
const REQUEST_MAC: [u8; 32] = *b"fuzz-request-mac-fuzz-request-ma";

fn keys() -> &'static (KeyRing, [TsigKey; 2]) {
    static KEYS: OnceLock<(KeyRing, [TsigKey; 2])> = OnceLock::new();
    KEYS.get_or_init(|| {
        let xfr = TsigKey::new(
            "xfr.key.".parse().expect("name"),
            TsigAlgorithm::HmacSha256,
            XFR_SECRET.to_vec(),
        );
        let other = TsigKey::new(
            "other.".parse().expect("name"),
            TsigAlgorithm::HmacSha1,
            OTHER_SECRET.to_vec(),
        )
        .with_truncation(10)
        .expect("truncation to 10 octets is allowed for hmac-sha1");
        let ring: KeyRing = [xfr.clone(), other.clone()].into_iter().collect();
        (ring, [xfr, other])
    })
}

/// The length-prefixed messages of the input.
fn messages(mut rest: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while let Some((len, tail)) = rest.split_first_chunk::<2>() {
        let len = usize::from(u16::from_be_bytes(*len)).min(tail.len());
        let (msg, next) = tail.split_at(len);
        out.push(msg);
        rest = next;
    }
    out
}

fn parse_or_panic<'a>(what: &str, msg: &'a [u8]) -> MessageView<'a> {
    match MessageView::parse(msg) {
        Ok(v) => v,
        Err(e) => panic!("{what} does not parse: {e}\n{msg:02x?}"),
    }
}

fn check_strip(msg: &[u8], expect_some: Option<bool>) {
    let stripped = strip_tsig(msg);
    if let Some(expected) = expect_some {
        assert_eq!(stripped.is_some(), expected, "strip_tsig result");
    }
    let Some(stripped) = stripped else {
        return;
    };
    let original = MessageView::parse(msg).expect("strip_tsig took a message that parses");
    let view = parse_or_panic("stripped message", &stripped);
    assert!(view.tsig().is_none(), "stripped message still has a TSIG");
    let tsig = original
        .tsig()
        .expect("strip_tsig took a message with TSIG");
    assert_eq!(
        original.tsig_offset(),
        Some(stripped.len()),
        "stripped length"
    );
    let rdata = TsigRdata::parse(tsig.rdata).expect("strip_tsig read the TSIG");
    assert_eq!(view.header().id, rdata.original_id, "stripped ID");
    assert_eq!(
        view.header().arcount.checked_add(1),
        Some(original.header().arcount),
        "stripped ARCOUNT"
    );
}



/// A verified request: signing a response and checking it must agree.
fn check_signed_response(msg: &[u8], verified: &bulwark_xfr::tsig::VerifiedRequest, now: u64) {
    let (ring, _) = keys();
    assert!(
        ring.get(verified.key().name(), verified.key().algorithm())
            .is_some(),
        "verified with a key outside the ring"
    );
    let stripped = strip_tsig(msg).expect("a verified request has a TSIG to strip");
    let query = parse_or_panic("stripped request", &stripped);
    let mut signer = ResponseSigner::new(verified);
    let mut verifier = ResponseVerifier::new(verified.key(), verified.request_mac());
    for n in 0..2 {
        let mut out = Vec::new();
        let b = MessageBuilder::response_to(&mut out, 512, &query).expect("response starts");
        b.finish(None).expect("response finishes");
        if let Err(e) = signer.sign(&mut out, now) {
            panic!("signing response message {n} at {now}: {e}");
        }
        parse_or_panic("signed response", &out);
        if let Err(e) = verifier.verify(&out, now) {
            panic!("our own signed response message {n} does not verify: {e}");
        }
    }
    if let Err(e) = verifier.finish() {
        panic!("our own signed response is refused at the end: {e}");
    }
}

/// A request that failed: its answer parses and says the same failure.
fn check_error_response(msg: &[u8], failure: &TsigFailure, now: u64) {
    let (ring, [xfr, _]) = keys();
    let mut out = Vec::new();
    let written = write_tsig_error_response(msg, failure, ring, now, &mut out);
    let Some(()) = written else {
        assert!(
            msg.len() < 12,
            "no answer to a request that failed with {failure}"
        );
        return;
    };
    let view = parse_or_panic("TSIG error answer", &out);
    assert_eq!(msg.get(..2), out.get(..2), "answer ID differs");
    assert!(view.header().flags.qr, "answer without QR");
    let Some(expected) = failure.tsig_error() else {
        assert_eq!(view.rcode(), Rcode::FORMERR, "answer to {failure}");
        return;
    };
    assert_eq!(view.rcode(), Rcode::NOTAUTH, "answer to {failure}");
    // The client holds the key the request named (any key for the unsigned
    // answers) and the request's MAC.
    let request = MessageView::parse(msg).expect("a TSIG error comes from a message that parses");
    let tsig = request.tsig().expect("a TSIG error comes from a TSIG");
    let rdata = TsigRdata::parse(tsig.rdata).expect("a TSIG error comes from a readable TSIG");
    let key = TsigAlgorithm::from_name(&rdata.algorithm)
        .ok()
        .and_then(|alg| ring.get(&tsig.owner, alg))
        .unwrap_or(xfr);
    let mut verifier = ResponseVerifier::new(key, rdata.mac);
    match verifier.verify(&out, now) {
        Err(TsigFailure::ServerError { error, server_time }) => {
            assert_eq!(error, expected, "the client reads another TSIG error");
            if error == TsigRcode::BADTIME {
                assert_eq!(server_time, Some(now), "BADTIME answer's server time");
            }
        }
        other => panic!("the client reads {other:?} from the answer to {failure}"),
    }
}

/// Feeds `msgs` to a verifier: the first failure sticks.
fn check_verifier(key: &TsigKey, msgs: &[&[u8]], now: u64) {
    let mut verifier = ResponseVerifier::new(key, &REQUEST_MAC);
    let mut first_failure: Option<TsigFailure> = None;
    for msg in msgs {
        let result = verifier.verify(msg, now);
        match (&first_failure, result) {
            (None, Ok(())) => {}
            (None, Err(f)) => first_failure = Some(f),
            (Some(f), result) => assert_eq!(result.as_ref(), Err(f), "a failure was forgotten"),
        }
    }
    let finish = verifier.finish();
    match &first_failure {
        Some(f) => assert_eq!(finish.as_ref(), Err(f), "finish forgets the failure"),
        None => {
            let last_signed = msgs
                .last()
                .and_then(|m| MessageView::parse(m).ok())
                .is_some_and(|v| v.tsig().is_some());
            assert_eq!(
                finish.is_ok(),
                last_signed,
                "finish after {} messages: {finish:?}",
                msgs.len()
            );
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((clock, msg)) = data.split_first_chunk::<6>() else {
        return;
    };
    let now = clock.iter().fold(0u64, |t, &b| (t << 8) | u64::from(b));
    let (ring, response_keys) = keys();

    match verify_request(msg, ring, now) {
        Ok(Some(verified)) => {
            check_strip(msg, Some(true));
            check_signed_response(msg, &verified, now);
        }
        Ok(None) => check_strip(msg, Some(false)),
        Err(failure) => {
            check_strip(msg, None);
            check_error_response(msg, &failure, now);
        }
    }

    let framed = messages(msg);
    for key in response_keys {
        check_verifier(key, &[msg], now);
        if framed.len() > 1 {
            check_verifier(key, &framed, now);
        }
    }
});
