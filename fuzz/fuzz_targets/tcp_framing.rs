//! DNS over TCP framing (RFC 1035 §4.2.2, RFC 7766 §8): `FrameDecoder` against a
//! model that splits the whole stream at once.
//!
//! Input: byte 0 picks the length limit, byte 1 seeds the schedule that cuts the
//! rest (the stream) into reads of 1 to 600 octets, each delivered by `feed` or
//! by `read_space` + `commit`, with every complete message drained after each
//! read. The decoder must hand out exactly the model's messages, in order, then
//! the model's error (if the stream has a bad length prefix), and hold no more
//! than one unfinished message plus room for one read.
#![no_main]

use bulwark_net::frame::{FrameDecoder, FrameError, MAX_MESSAGE_LEN, MIN_MESSAGE_LEN, READ_CHUNK};
use libfuzzer_sys::fuzz_target;

const PREFIX_LEN: usize = 2;

/// The length limits worth telling apart: the smallest, a UDP-sized one, an odd
/// one, and the largest.
fn max_len(selector: u8) -> usize {
    match selector % 4 {
        0 => MIN_MESSAGE_LEN,
        1 => 512,
        2 => 1000 + usize::from(selector),
        _ => MAX_MESSAGE_LEN,
    }
}

/// What splitting the whole stream yields: the messages, then either the error
/// at the first bad prefix or nothing (the rest is an unfinished message).
fn model(stream: &[u8], max_len: usize) -> (Vec<&[u8]>, Option<FrameError>) {
    let mut frames = Vec::new();
    let mut at = 0;
    while let Some(prefix) = stream.get(at..at + PREFIX_LEN) {
        let len = usize::from(u16::from_be_bytes([prefix[0], prefix[1]]));
        if len < MIN_MESSAGE_LEN {
            return (frames, Some(FrameError::TooShort { len }));
        }
        if len > max_len {
            return (frames, Some(FrameError::TooLong { len, max: max_len }));
        }
        let body = at + PREFIX_LEN;
        match stream.get(body..body + len) {
            Some(frame) => frames.push(frame),
            None => break,
        }
        at = body + len;
    }
    (frames, None)
}

/// A small deterministic generator for the read schedule (xorshift).
struct Schedule(u32);

impl Schedule {
    fn next(&mut self) -> u32 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.0 = x;
        x
    }
}

fuzz_target!(|data: &[u8]| {
    let [selector, seed, stream @ ..] = data else {
        return;
    };
    let max_len = max_len(*selector);
    let (want, want_err) = model(stream, max_len);

    let mut decoder = FrameDecoder::new(max_len);
    assert_eq!(decoder.max_len(), max_len);
    let mut schedule = Schedule(u32::from(*seed) | 0x100);
    let mut got: Vec<Vec<u8>> = Vec::new();
    let mut got_err = None;
    let mut rest = stream;
    'reads: while !rest.is_empty() {
        let r = schedule.next();
        let chunk = (r as usize % 600 + 1).min(rest.len());
        let (now, later) = rest.split_at(chunk);
        if r & 0x8000_0000 == 0 {
            decoder.feed(now);
        } else {
            // Reads of at most 600 octets always fit the offered space.
            let pending = decoder.pending();
            let space = decoder.read_space();
            assert!(
                space.len() >= READ_CHUNK,
                "read space {} octets",
                space.len()
            );
            // The buffer never holds more than one message in progress and
            // room for one read (or the rest of that message).
            let bound = (max_len + PREFIX_LEN) + (max_len + PREFIX_LEN).max(READ_CHUNK);
            assert!(
                pending + space.len() <= bound,
                "buffer of {} octets with a limit of {max_len}",
                pending + space.len()
            );
            space[..chunk].copy_from_slice(now);
            decoder.commit(chunk);
        }
        rest = later;
        loop {
            match decoder.next_frame() {
                Ok(Some(frame)) => got.push(frame.to_vec()),
                Ok(None) => break,
                Err(e) => {
                    got_err = Some(e);
                    // The stream cannot be resynchronised: the caller closes.
                    break 'reads;
                }
            }
        }
        // Drained: what is left is one unfinished message (with its prefix).
        assert!(
            decoder.pending() < max_len + PREFIX_LEN,
            "{} octets pending with a limit of {max_len}",
            decoder.pending()
        );
    }
    assert_eq!(got_err, want_err);
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g.as_slice(), *w);
    }
    if want_err.is_none() {
        // What is left is exactly the unfinished tail of the stream.
        let consumed: usize = want.iter().map(|f| f.len() + PREFIX_LEN).sum();
        assert_eq!(decoder.pending(), stream.len() - consumed);
    }
});
