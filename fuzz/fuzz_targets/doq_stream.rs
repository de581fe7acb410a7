//! DNS over QUIC stream framing (RFC 9250 §4.2): `doq::read_query` on any
//! stream contents, `doq::length_prefix` as its inverse, and
//! `doq::replay_safe` on whatever query comes out.
//!
//! Input: the octets a client stream carried up to its FIN. Nothing may
//! panic; an accepted stream is exactly its two-octet length and a message
//! of that length, at least a header long, with ID 0; the message's length
//! prefix is the stream's first two octets; a query called safe to replay
//! is a standard query.
#![no_main]

use bulwark_net::doq::{length_prefix, read_query, replay_safe};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match read_query(data) {
        Ok(message) => {
            assert!(message.len() >= 12);
            assert_eq!(&message[..2], &[0, 0]);
            assert_eq!(usize::from(u16::from_be_bytes([data[0], data[1]])), message.len());
            let prefix = length_prefix(message).expect("a read message frames again");
            assert_eq!(&prefix[..], &data[..2]);
            if replay_safe(message) {
                assert_eq!((message[2] >> 3) & 0x0f, 0, "only QUERY is replayable");
            }
        }
        Err(_) => {
            // A stream that is not one framed query never is, whatever
            // follows in it: the reader looks at nothing past a bad frame.
        }
    }
    let _ = replay_safe(data);
});
