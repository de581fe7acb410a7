//! Refresh timers of a secondary zone (RFC 1034 §4.3.5, RFC 1996): what a
//! restarted server needs to go on refreshing, and to stop serving a zone it
//! has not refreshed for longer than the SOA EXPIRE.

use crate::encoding::{FieldReader, FieldWriter};
use crate::error::DecodeError;

/// A secondary zone's refresh state. Times are Unix seconds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ZoneTimers {
    /// When the zone was last confirmed current with a primary.
    pub last_refresh: u64,
    /// When to check the primary's serial next (SOA REFRESH or RETRY on).
    pub next_refresh: u64,
    /// RFC 1034 §4.3.5: when the zone stops being served unless refreshed
    /// (SOA EXPIRE after the last successful refresh).
    pub expire_at: u64,
    /// The serial of the copy held, once one was transferred.
    pub last_serial: Option<u32>,
    /// The primary the copy came from (an address as the configuration names it).
    pub primary: Option<String>,
}

const HAS_SERIAL: u8 = 1;
const HAS_PRIMARY: u8 = 2;

impl ZoneTimers {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut flags = 0u8;
        if self.last_serial.is_some() {
            flags |= HAS_SERIAL;
        }
        // A primary named in more than 65535 octets is not an address; it is
        // stored cut at a character boundary rather than refused.
        let primary = self.primary.as_deref().map(|p| {
            let mut end = p.len().min(usize::from(u16::MAX));
            while !p.is_char_boundary(end) {
                end = end.saturating_sub(1);
            }
            p.get(..end).unwrap_or("")
        });
        if primary.is_some() {
            flags |= HAS_PRIMARY;
        }
        let primary = primary.unwrap_or("");
        FieldWriter::new()
            .u8(flags)
            .u64(self.last_refresh)
            .u64(self.next_refresh)
            .u64(self.expire_at)
            .u32(self.last_serial.unwrap_or(0))
            .u16(u16::try_from(primary.len()).unwrap_or(0))
            .bytes(primary.as_bytes())
            .finish()
    }

    pub(crate) fn decode(value: &[u8]) -> Result<ZoneTimers, DecodeError> {
        let mut f = FieldReader::new(value, "zone timers")?;
        let flags = f.u8()?;
        let last_refresh = f.u64()?;
        let next_refresh = f.u64()?;
        let expire_at = f.u64()?;
        let serial = f.u32()?;
        let len = usize::from(f.u16()?);
        let primary = f.bytes(len)?;
        f.end()?;
        let primary = if flags & HAS_PRIMARY != 0 {
            Some(String::from_utf8(primary.to_vec()).map_err(|_| DecodeError::NotUtf8)?)
        } else {
            None
        };
        Ok(ZoneTimers {
            last_refresh,
            next_refresh,
            expire_at,
            last_serial: (flags & HAS_SERIAL != 0).then_some(serial),
            primary,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn timers_round_trip() {
        let all = [
            ZoneTimers::default(),
            ZoneTimers {
                last_refresh: 1_700_000_000,
                next_refresh: u64::MAX,
                expire_at: 1,
                last_serial: Some(0),
                primary: Some("[2001:db8::1]:53".into()),
            },
            ZoneTimers {
                primary: Some(String::new()),
                ..ZoneTimers::default()
            },
        ];
        for t in all {
            assert_eq!(ZoneTimers::decode(&t.encode()), Ok(t));
        }
    }

    #[test]
    fn timers_value_in_bytes() {
        let t = ZoneTimers {
            last_refresh: 1,
            next_refresh: 2,
            expire_at: 3,
            last_serial: Some(4),
            primary: Some("p".into()),
        };
        assert_eq!(
            t.encode(),
            [
                1, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0,
                0, 4, 0, 1, b'p'
            ]
        );
    }
}
