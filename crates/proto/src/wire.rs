//! A bounds-checked cursor over received bytes.

use thiserror::Error;

/// Why a wire-format read failed, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum WireError {
    #[error("message ends at offset {at} where {wanted} more bytes were expected")]
    ShortInput { at: usize, wanted: usize },
    #[error("bad name at offset {at}: {reason}")]
    BadName {
        at: usize,
        reason: crate::name::NameError,
    },
    #[error("record data at offset {at} does not fit its declared length")]
    RdataLength { at: usize },
    #[error("malformed record data at offset {at}: {what}")]
    BadRdata { at: usize, what: &'static str },
    #[error("{what} at offset {at}")]
    Malformed { at: usize, what: &'static str },
}

/// A read position in a byte slice. Reads never panic: past the end they fail.
#[derive(Debug, Clone, Copy)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// A reader over `buf` that starts at `pos` (used to follow data inside a whole message).
    pub fn at(buf: &'a [u8], pos: usize) -> Self {
        Reader { buf, pos }
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    /// The whole underlying buffer (for compression pointers, which point into the message).
    pub fn buffer(&self) -> &'a [u8] {
        self.buf
    }

    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    fn short(&self, wanted: usize) -> WireError {
        WireError::ShortInput {
            at: self.pos,
            wanted,
        }
    }

    pub fn read_bytes(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end = self.pos.checked_add(n).ok_or(self.short(n))?;
        let out = self.buf.get(self.pos..end).ok_or(self.short(n))?;
        self.pos = end;
        Ok(out)
    }

    pub fn read_u8(&mut self) -> Result<u8, WireError> {
        let b = *self.buf.get(self.pos).ok_or(self.short(1))?;
        self.pos = self.pos.saturating_add(1);
        Ok(b)
    }

    pub fn read_u16(&mut self) -> Result<u16, WireError> {
        let b = self.read_bytes(2)?;
        Ok(u16::from_be_bytes([
            *b.first().unwrap_or(&0),
            *b.get(1).unwrap_or(&0),
        ]))
    }

    pub fn read_u32(&mut self) -> Result<u32, WireError> {
        let b = self.read_bytes(4)?;
        let mut a = [0u8; 4];
        a.copy_from_slice(b);
        Ok(u32::from_be_bytes(a))
    }

    pub fn read_u48(&mut self) -> Result<u64, WireError> {
        let b = self.read_bytes(6)?;
        Ok(b.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x)))
    }

    /// The rest of the buffer.
    pub fn read_rest(&mut self) -> &'a [u8] {
        let out = self.buf.get(self.pos..).unwrap_or(&[]);
        self.pos = self.buf.len();
        out
    }

    /// A one-byte length followed by that many bytes (a DNS `<character-string>`).
    pub fn read_character_string(&mut self) -> Result<&'a [u8], WireError> {
        let len = self.read_u8()?;
        self.read_bytes(usize::from(len))
    }

    /// A sub-reader over the next `n` bytes, positioned in the same buffer so
    /// compression pointers inside it still resolve against the whole message.
    pub fn limit(&mut self, n: usize) -> Result<Reader<'a>, WireError> {
        let start = self.pos;
        let end = start.checked_add(n).ok_or(self.short(n))?;
        let sub = self.buf.get(..end).ok_or(self.short(n))?;
        self.pos = end;
        Ok(Reader {
            buf: sub,
            pos: start,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fail_past_end_instead_of_panicking() {
        let mut r = Reader::new(&[1, 2, 3]);
        assert_eq!(r.read_u16(), Ok(0x0102));
        assert!(r.read_u16().is_err());
        assert_eq!(r.read_u8(), Ok(3));
        assert!(r.read_u8().is_err());
        assert!(r.read_bytes(usize::MAX).is_err());
    }

    #[test]
    fn limit_confines_reads_but_keeps_message_offsets() {
        let mut r = Reader::new(&[0, 1, 2, 3, 4]);
        r.read_u8().ok();
        let mut sub = r.limit(2).ok().unwrap_or(Reader::new(&[]));
        assert_eq!(sub.position(), 1);
        assert_eq!(sub.read_u16(), Ok(0x0102));
        assert!(sub.read_u8().is_err());
        assert_eq!(r.read_u8(), Ok(3));
    }
}
