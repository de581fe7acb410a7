//! Ethernet frames of the AF_XDP path: `xdp::frame::parse` on any frame, a
//! reply written for what it read, and `truncate_response` on any message.
//!
//! Input: the octets of one received frame. Nothing may panic; a frame that
//! parses carries its payload inside it; a reply written to the flow it
//! read parses back as that flow reversed, with the same payload; a
//! truncated message is never longer than it was and has TC set.
#![no_main]

use bulwark_net::xdp::frame::{parse, truncate_response, write_reply, Flow};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(d) = parse(data) {
        let payload = data.get(d.payload.clone()).expect("the payload is inside the frame");
        let mut frame = vec![0u8; 66000];
        let n = write_reply(&d.flow, payload, &mut frame).expect("a read datagram fits a reply");
        let back = parse(&frame[..n]).expect("a written reply parses");
        let reversed = Flow {
            local_mac: d.flow.peer_mac,
            peer_mac: d.flow.local_mac,
            local: d.flow.peer,
            peer: d.flow.local,
        };
        assert_eq!(back.flow, reversed);
        assert_eq!(&frame[back.payload], payload);
    }
    let mut msg = data.to_vec();
    truncate_response(&mut msg);
    assert!(msg.len() <= data.len());
    if msg.len() >= 3 {
        assert_eq!(msg[2] & 0x02, 0x02);
    }
});
