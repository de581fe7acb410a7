//! The few header facts the counters need, read straight from the wire without
//! a full parse: the query's opcode and QTYPE, the response's rcode and TC.

/// Header length and flag positions (RFC 1035 §4.1.1).
const HEADER_LEN: usize = 12;
const TC_BIT: u8 = 0x02;
/// An OPT record's type (RFC 6891 §6.1.1).
const OPT_TYPE: u16 = 41;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryFacts {
    pub opcode: u8,
    /// `None` without a readable first question.
    pub qtype: Option<u16>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseFacts {
    /// The full 12-bit rcode, the OPT's upper bits included (RFC 6891 §6.1.3).
    pub rcode: u16,
    pub truncated: bool,
}

fn u16_at(m: &[u8], at: usize) -> Option<u16> {
    let b = m.get(at..at.checked_add(2)?)?;
    Some(u16::from_be_bytes([*b.first()?, *b.get(1)?]))
}

/// The offset just past the name at `at`: labels up to the root, or a
/// compression pointer (RFC 1035 §4.1.4), whose target need not be followed.
fn skip_name(m: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let len = *m.get(at)?;
        match len & 0xc0 {
            0x00 if len == 0 => return at.checked_add(1),
            0x00 => at = at.checked_add(usize::from(len))?.checked_add(1)?,
            0xc0 => return at.checked_add(2),
            _ => return None,
        }
    }
}

pub fn query_facts(query: &[u8]) -> QueryFacts {
    let opcode = query.get(2).map_or(0, |b| (b >> 3) & 0x0f);
    let qtype = (|| {
        if u16_at(query, 4)? == 0 {
            return None;
        }
        let end = skip_name(query, HEADER_LEN)?;
        u16_at(query, end)
    })();
    QueryFacts { opcode, qtype }
}

pub fn response_facts(resp: &[u8]) -> ResponseFacts {
    let low = resp.get(3).map_or(0, |b| b & 0x0f);
    let truncated = resp.get(2).is_some_and(|b| b & TC_BIT != 0);
    let high = opt_extended_rcode(resp).unwrap_or(0);
    ResponseFacts {
        rcode: (u16::from(high) << 4) | u16::from(low),
        truncated,
    }
}

/// The OPT record's extended-rcode octet, walking the records only when the
/// additional section is not empty (with EDNS, usually a few records).
fn opt_extended_rcode(m: &[u8]) -> Option<u8> {
    let arcount = u16_at(m, 10)?;
    if arcount == 0 {
        return None;
    }
    let mut at = HEADER_LEN;
    for _ in 0..u16_at(m, 4)? {
        at = skip_name(m, at)?.checked_add(4)?;
    }
    let before = u32::from(u16_at(m, 6)?).checked_add(u32::from(u16_at(m, 8)?))?;
    for i in 0..before.checked_add(u32::from(arcount))? {
        at = skip_name(m, at)?;
        let rtype = u16_at(m, at)?;
        if i >= before && rtype == OPT_TYPE {
            // TYPE, CLASS, then the TTL whose first octet is EXTENDED-RCODE.
            return m.get(at.checked_add(4)?).copied();
        }
        let rdlen = u16_at(m, at.checked_add(8)?)?;
        at = at.checked_add(10)?.checked_add(usize::from(rdlen))?;
    }
    None
}
