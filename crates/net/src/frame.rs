//! DNS over TCP framing (RFC 1035 §4.2.2, RFC 7766 §8): every message is
//! preceded by its length as a two-octet big-endian integer.
//!
//! [`FrameDecoder`] is pure: bytes go in (by [`FrameDecoder::feed`], or by reading
//! straight into [`FrameDecoder::read_space`] and calling
//! [`FrameDecoder::commit`]), complete messages come out of
//! [`FrameDecoder::next_frame`] as slices of its one reused buffer. It never
//! panics, whatever the input, and holds at most one partial message plus the
//! bytes of the last read, so its memory is bounded by the length limit.
//!
//! ```
//! use bulwark_net::frame::FrameDecoder;
//! let mut d = FrameDecoder::new(512);
//! d.feed(&[0, 12, 1, 2, 3]);
//! assert_eq!(d.next_frame(), Ok(None)); // 3 of 12 octets so far
//! d.feed(&[0; 9]);
//! assert_eq!(d.next_frame().map(|f| f.map(<[u8]>::len)), Ok(Some(12)));
//! assert_eq!(d.pending(), 0);
//! ```

/// RFC 1035 §4.1.1: a message has at least its 12-octet header, so a shorter
/// length cannot frame a DNS message.
pub const MIN_MESSAGE_LEN: usize = 12;
/// The length prefix is two octets.
const PREFIX_LEN: usize = 2;
/// The largest length two octets can state.
pub const MAX_MESSAGE_LEN: usize = 65535;
/// What [`FrameDecoder::read_space`] offers at least, so that pipelined small
/// queries arrive in one read rather than one read each.
pub const READ_CHUNK: usize = 2048;

/// A length prefix no DNS message may carry. The stream cannot be resynchronised
/// after one (there is no marker to find the next message by), so the caller
/// closes the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    #[error("length prefix {len} is shorter than a DNS header ({MIN_MESSAGE_LEN} octets)")]
    TooShort { len: usize },
    #[error("length prefix {len} is over the limit of {max} octets")]
    TooLong { len: usize, max: usize },
}

/// Splits a TCP byte stream into DNS messages. See the module documentation.
#[derive(Debug, Clone)]
pub struct FrameDecoder {
    /// `buf[start..filled]` holds received bytes not yet returned as a frame;
    /// `buf[filled..]` is space already allocated for the next read.
    buf: Vec<u8>,
    start: usize,
    filled: usize,
    max_len: usize,
}

impl FrameDecoder {
    /// A decoder accepting messages of up to `max_len` octets (clamped to
    /// 12..=65535).
    pub fn new(max_len: usize) -> FrameDecoder {
        FrameDecoder {
            buf: Vec::new(),
            start: 0,
            filled: 0,
            max_len: max_len.clamp(MIN_MESSAGE_LEN, MAX_MESSAGE_LEN),
        }
    }

    /// The largest message accepted.
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// Octets received and not yet returned as a frame: non-zero means a
    /// message (or its length prefix) has started and not finished.
    pub fn pending(&self) -> usize {
        self.filled.saturating_sub(self.start)
    }

    /// Appends received bytes. The buffer grows by `bytes.len()`, so a caller
    /// feeding unbounded input without draining [`FrameDecoder::next_frame`]
    /// holds it all; [`FrameDecoder::read_space`] avoids that.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.compact();
        self.buf.truncate(self.filled);
        self.buf.extend_from_slice(bytes);
        self.filled = self.buf.len();
    }

    /// Space to read into, followed by [`FrameDecoder::commit`] with the number
    /// of octets read. It is at least [`READ_CHUNK`] long, and long enough for
    /// the rest of the message in progress, so a whole message is taken in one
    /// read when the peer sends it at once.
    pub fn read_space(&mut self) -> &mut [u8] {
        self.compact();
        let want = self.rest_of_frame().max(READ_CHUNK);
        let need = self.filled.saturating_add(want);
        if self.buf.len() < need {
            self.buf.resize(need, 0);
        }
        self.buf.get_mut(self.filled..).unwrap_or_default()
    }

    /// Records that `n` octets were written at the start of the last
    /// [`FrameDecoder::read_space`] (clamped to its length).
    pub fn commit(&mut self, n: usize) {
        self.filled = self.filled.saturating_add(n).min(self.buf.len());
    }

    /// The next complete message, if one has been received in full. `Ok(None)`
    /// means more bytes are needed; an error means the stream is unusable.
    /// The slice stays valid until the decoder is next changed.
    pub fn next_frame(&mut self) -> Result<Option<&[u8]>, FrameError> {
        let Some(len) = self.announced_len() else {
            return Ok(None);
        };
        if len < MIN_MESSAGE_LEN {
            return Err(FrameError::TooShort { len });
        }
        if len > self.max_len {
            return Err(FrameError::TooLong {
                len,
                max: self.max_len,
            });
        }
        let body = self.start.saturating_add(PREFIX_LEN);
        let end = body.saturating_add(len);
        if end > self.filled {
            return Ok(None);
        }
        self.start = end;
        Ok(self.buf.get(body..end))
    }

    /// The length stated by the prefix at `start`, once both octets are here.
    fn announced_len(&self) -> Option<usize> {
        let hi = *self.buf.get(self.start)?;
        let lo_at = self.start.saturating_add(1);
        if lo_at >= self.filled {
            return None;
        }
        let lo = *self.buf.get(lo_at)?;
        Some(usize::from(u16::from_be_bytes([hi, lo])))
    }

    /// Octets still missing from the message in progress (prefix included);
    /// 0 when it is complete or its length is not acceptable.
    fn rest_of_frame(&self) -> usize {
        let total = match self.announced_len() {
            Some(len) if len <= self.max_len => len.saturating_add(PREFIX_LEN),
            Some(_) => 0,
            None => PREFIX_LEN,
        };
        total.saturating_sub(self.pending())
    }

    /// Moves the unconsumed bytes to the front, so the buffer never holds more
    /// than one partial message ahead of new input.
    fn compact(&mut self) {
        if self.start == 0 {
            return;
        }
        if self.start < self.filled {
            self.buf.copy_within(self.start..self.filled, 0);
        }
        self.filled = self.pending();
        self.start = 0;
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::indexing_slicing,
        clippy::cast_possible_truncation
    )]
    use super::*;

    fn framed(body: &[u8]) -> Vec<u8> {
        let mut v = (body.len() as u16).to_be_bytes().to_vec();
        v.extend_from_slice(body);
        v
    }

    fn message(seed: u8, len: usize) -> Vec<u8> {
        (0..len).map(|i| seed.wrapping_add(i as u8)).collect()
    }

    fn drain(d: &mut FrameDecoder) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while let Some(f) = d.next_frame().unwrap() {
            out.push(f.to_vec());
        }
        out
    }

    #[test]
    fn a_message_split_at_every_position_comes_out_whole_once() {
        let msg = message(7, 40);
        let wire = framed(&msg);
        for split in 0..=wire.len() {
            let mut d = FrameDecoder::new(512);
            d.feed(&wire[..split]);
            let first = drain(&mut d);
            d.feed(&wire[split..]);
            let second = drain(&mut d);
            let all: Vec<_> = first.into_iter().chain(second).collect();
            assert_eq!(all, vec![msg.clone()], "split at {split}");
            assert_eq!(d.pending(), 0);
        }
    }

    #[test]
    fn a_message_fed_one_byte_at_a_time_completes_on_its_last_byte() {
        let msg = message(1, 30);
        let wire = framed(&msg);
        let mut d = FrameDecoder::new(512);
        for (i, b) in wire.iter().enumerate() {
            d.feed(&[*b]);
            let got = drain(&mut d);
            if i + 1 == wire.len() {
                assert_eq!(got, vec![msg.clone()]);
            } else {
                assert!(got.is_empty(), "nothing before the last byte ({i})");
                assert_eq!(d.pending(), i + 1);
            }
        }
    }

    #[test]
    fn many_messages_in_one_read_come_out_in_order() {
        let msgs: Vec<Vec<u8>> = (0..100u8)
            .map(|i| message(i, 12 + usize::from(i)))
            .collect();
        let wire: Vec<u8> = msgs.iter().flat_map(|m| framed(m)).collect();
        let mut d = FrameDecoder::new(512);
        d.feed(&wire);
        assert_eq!(drain(&mut d), msgs);
        assert_eq!(d.pending(), 0);
    }

    #[test]
    fn messages_split_across_reads_at_every_position_come_out_in_order() {
        let msgs: Vec<Vec<u8>> = (0..3u8).map(|i| message(i, 13 + usize::from(i))).collect();
        let wire: Vec<u8> = msgs.iter().flat_map(|m| framed(m)).collect();
        for a in 0..=wire.len() {
            for b in a..=wire.len() {
                let mut d = FrameDecoder::new(512);
                let mut got = Vec::new();
                for part in [&wire[..a], &wire[a..b], &wire[b..]] {
                    d.feed(part);
                    got.extend(drain(&mut d));
                }
                assert_eq!(got, msgs, "splits at {a} and {b}");
            }
        }
    }

    #[test]
    fn a_length_larger_than_the_data_never_completes() {
        let mut d = FrameDecoder::new(512);
        d.feed(&[0x01, 0x00]);
        d.feed(&[0xaa; 255]);
        assert_eq!(d.next_frame(), Ok(None));
        assert_eq!(d.pending(), 257);
        // Still waiting, not misreading the body as new frames.
        assert_eq!(d.next_frame(), Ok(None));
        d.feed(&[0xbb]);
        assert_eq!(d.next_frame().unwrap().map(<[u8]>::len), Some(256));
    }

    #[test]
    fn lengths_below_a_header_are_rejected() {
        for len in 0..12u16 {
            let mut d = FrameDecoder::new(512);
            d.feed(&len.to_be_bytes());
            assert_eq!(
                d.next_frame(),
                Err(FrameError::TooShort {
                    len: usize::from(len)
                })
            );
        }
        let mut d = FrameDecoder::new(512);
        d.feed(&[0, 12]);
        assert_eq!(d.next_frame(), Ok(None), "12 is a bare header: accepted");
    }

    #[test]
    fn lengths_above_the_limit_are_rejected_before_the_body_arrives() {
        let mut d = FrameDecoder::new(512);
        d.feed(&513u16.to_be_bytes());
        assert_eq!(
            d.next_frame(),
            Err(FrameError::TooLong { len: 513, max: 512 })
        );
        let mut d = FrameDecoder::new(512);
        d.feed(&framed(&message(0, 512)));
        assert_eq!(d.next_frame().unwrap().map(<[u8]>::len), Some(512));
    }

    #[test]
    fn a_bad_length_after_good_messages_is_reported_after_them() {
        let mut wire = framed(&message(0, 20));
        wire.extend_from_slice(&[0, 3, 1, 2, 3]);
        let mut d = FrameDecoder::new(512);
        d.feed(&wire);
        assert_eq!(d.next_frame().unwrap().map(<[u8]>::len), Some(20));
        assert_eq!(d.next_frame(), Err(FrameError::TooShort { len: 3 }));
        // The error repeats: the stream stays unusable.
        assert_eq!(d.next_frame(), Err(FrameError::TooShort { len: 3 }));
    }

    #[test]
    fn the_limit_is_clamped_to_what_two_octets_and_a_header_allow() {
        assert_eq!(FrameDecoder::new(0).max_len(), MIN_MESSAGE_LEN);
        assert_eq!(FrameDecoder::new(1 << 20).max_len(), MAX_MESSAGE_LEN);
        let mut d = FrameDecoder::new(usize::MAX);
        d.feed(&framed(&message(0, 65535)));
        assert_eq!(d.next_frame().unwrap().map(<[u8]>::len), Some(65535));
    }

    #[test]
    fn reading_into_read_space_matches_feeding() {
        let msgs: Vec<Vec<u8>> = (0..50u8)
            .map(|i| message(i, 12 + usize::from(i) * 7))
            .collect();
        let wire: Vec<u8> = msgs.iter().flat_map(|m| framed(m)).collect();
        for step in [1usize, 2, 3, 5, 64, 1000, 5000] {
            let mut d = FrameDecoder::new(512);
            let mut got = Vec::new();
            let mut rest = &wire[..];
            while !rest.is_empty() {
                let space = d.read_space();
                assert!(space.len() >= READ_CHUNK);
                let n = step.min(rest.len()).min(space.len());
                space[..n].copy_from_slice(&rest[..n]);
                d.commit(n);
                rest = &rest[n..];
                got.extend(drain(&mut d));
            }
            assert_eq!(got, msgs, "step {step}");
        }
    }

    #[test]
    fn read_space_holds_the_rest_of_a_large_message_at_once() {
        let mut d = FrameDecoder::new(65535);
        d.feed(&[0xff, 0xff, 1, 2]);
        assert!(d.read_space().len() >= 65535 - 2);
    }

    #[test]
    fn the_buffer_stays_bounded_under_a_long_stream() {
        let msg = framed(&message(3, 100));
        let mut d = FrameDecoder::new(512);
        for _ in 0..10_000 {
            let space = d.read_space();
            space[..msg.len()].copy_from_slice(&msg);
            d.commit(msg.len());
            assert_eq!(drain(&mut d).len(), 1);
        }
        assert!(d.buf.len() <= READ_CHUNK + 512 + 2, "{}", d.buf.len());
    }

    #[test]
    fn commit_beyond_the_space_is_clamped() {
        let mut d = FrameDecoder::new(512);
        let n = d.read_space().len();
        d.commit(usize::MAX);
        assert_eq!(d.pending(), n);
    }
}
