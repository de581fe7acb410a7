//! A zone transfer signs and checks every message, so neither side may
//! allocate per message once its buffer is warm.
//!
//! Allocations are counted by the workspace's one counting global allocator,
//! `bulwark_testkit::CountingAllocator` (per thread, forwarding to `System`).
//! It sees Rust allocations; aws-lc's HMAC state lives inline in the prepared
//! key and is copied, not allocated, per message.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use bulwark_proto::message::{MessageBuilder, Section};
use bulwark_proto::{Class, Name, Rtype};
use bulwark_xfr::tsig::{
    sign_request, verify_request, KeyRing, ResponseSigner, ResponseVerifier, TsigAlgorithm, TsigKey,
};

#[global_allocator]
static GLOBAL: bulwark_testkit::CountingAllocator = bulwark_testkit::CountingAllocator::new();

fn allocations() -> usize {
    GLOBAL.allocations()
}

const NOW: u64 = 1_700_000_000;

/// A transfer message with a few records, written into `buf`.
fn transfer_message(buf: &mut Vec<u8>, i: u8) {
    let mut b = MessageBuilder::new(buf, 65535);
    b.header_mut().id = 9;
    b.header_mut().flags.qr = true;
    let owner = Name::root();
    for j in 0..8u8 {
        b.push_record(
            Section::Answer,
            &owner,
            Rtype::A,
            Class::IN,
            60,
            &[10, i, j, 1],
        )
        .unwrap();
    }
    b.finish(None).unwrap();
}

#[test]
fn signing_and_verifying_transfer_messages_does_not_allocate() {
    let key = TsigKey::new(
        "xfr.example.".parse().unwrap(),
        TsigAlgorithm::HmacSha256,
        vec![7; 32],
    );
    let keys: KeyRing = [key.clone()].into_iter().collect();
    let mut request = Vec::new();
    {
        let mut b = MessageBuilder::new(&mut request, 512);
        b.push_question(&"example.".parse().unwrap(), Rtype::AXFR, Class::IN)
            .unwrap();
        b.finish(None).unwrap();
    }
    let mac = sign_request(&mut request, &key, NOW, 300).unwrap();
    let verified = verify_request(&request, &keys, NOW).unwrap().unwrap();
    let mut signer = ResponseSigner::new(&verified);
    let mut verifier = ResponseVerifier::new(&key, &mac);
    let mut buf = Vec::with_capacity(65535);

    // Warm up: the first message takes the request-MAC path.
    transfer_message(&mut buf, 0);
    signer.sign(&mut buf, NOW).unwrap();
    verifier.verify(&buf, NOW).unwrap();

    let before = allocations();
    for i in 1..=50u8 {
        transfer_message(&mut buf, i);
        signer.sign(&mut buf, NOW).unwrap();
        verifier.verify(&buf, NOW).unwrap();
    }
    verifier.finish().unwrap();
    assert_eq!(allocations() - before, 0);
}
