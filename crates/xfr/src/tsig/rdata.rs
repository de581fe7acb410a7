//! The TSIG record's layout (RFC 8945 §4.2) and the pieces its MAC covers
//! (§4.3): reading and writing the record, and feeding a MAC computation
//! without copying the message.

use bulwark_crypto::{HmacContext, HmacTag};
use bulwark_proto::message::HEADER_LEN;
use bulwark_proto::wire::{Reader, WireError};
use bulwark_proto::MessageView;
use bulwark_proto::{Class, Name, Rtype};

use super::key::{TsigAlgorithm, TsigKey};
use super::{MalformedTsig, TsigError, TsigRcode};

/// Largest value of the 48-bit Time Signed field.
pub const MAX_TIME: u64 = 0xffff_ffff_ffff;

/// Octets of the record before its rdata, after the owner: type, class, TTL, rdlength.
const RR_FIXED_LEN: usize = 10;
/// Octets of the rdata besides the algorithm name, the MAC and Other Data:
/// time 6, fudge 2, MAC size 2, original ID 2, error 2, other length 2.
const RDATA_FIXED_LEN: usize = 16;
/// Where ARCOUNT sits in the header (RFC 1035 §4.1.1).
const ARCOUNT_AT: usize = 10;

/// The rdata of a TSIG record as received, borrowing the MAC and Other Data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TsigRdata<'a> {
    /// Read uncompressed, as RFC 8945 §4.2 requires; case as sent.
    pub algorithm: Name,
    pub time_signed: u64,
    pub fudge: u16,
    pub mac: &'a [u8],
    pub original_id: u16,
    pub error: TsigRcode,
    pub other: &'a [u8],
}

impl<'a> TsigRdata<'a> {
    /// Reads the rdata; every field must be there and nothing may follow.
    pub fn parse(rdata: &'a [u8]) -> Result<TsigRdata<'a>, MalformedTsig> {
        let mut r = Reader::new(rdata);
        let algorithm = field(&mut r, "an uncompressed algorithm name", |r| {
            Name::read_uncompressed(r)
        })?;
        let time_signed = field(&mut r, "time signed", Reader::read_u48)?;
        let fudge = field(&mut r, "fudge", Reader::read_u16)?;
        let mac_len = field(&mut r, "MAC size", Reader::read_u16)?;
        let mac = field(&mut r, "as many MAC octets as MAC size", |r| {
            r.read_bytes(usize::from(mac_len))
        })?;
        let original_id = field(&mut r, "original ID", Reader::read_u16)?;
        let error = TsigRcode(field(&mut r, "error", Reader::read_u16)?);
        let other_len = field(&mut r, "other length", Reader::read_u16)?;
        let other = field(&mut r, "as many other data octets as other length", |r| {
            r.read_bytes(usize::from(other_len))
        })?;
        if !r.is_empty() {
            return Err(MalformedTsig::Rdata {
                at: r.position(),
                what: "the end of the rdata after other data",
            });
        }
        Ok(TsigRdata {
            algorithm,
            time_signed,
            fudge,
            mac,
            original_id,
            error,
            other,
        })
    }

    /// The server's clock from a BADTIME answer: 6 octets of Other Data
    /// (RFC 8945 §5.2.3).
    pub fn other_time(&self) -> Option<u64> {
        let six: &[u8; 6] = self.other.try_into().ok()?;
        Some(six.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }
}

/// Reads one field; a failure names the field and where it starts.
fn field<'a, T>(
    r: &mut Reader<'a>,
    what: &'static str,
    read: impl FnOnce(&mut Reader<'a>) -> Result<T, WireError>,
) -> Result<T, MalformedTsig> {
    let at = r.position();
    read(r).map_err(|_| MalformedTsig::Rdata { at, what })
}

/// Octets of a whole TSIG record.
pub(crate) fn record_len(
    owner_len: usize,
    algorithm: TsigAlgorithm,
    mac_len: usize,
    other_len: usize,
) -> usize {
    owner_len
        .saturating_add(RR_FIXED_LEN)
        .saturating_add(algorithm.wire_name().len())
        .saturating_add(RDATA_FIXED_LEN)
        .saturating_add(mac_len)
        .saturating_add(other_len)
}

/// The fields of a TSIG record being written, other than the MAC.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TsigFields<'a> {
    /// Uncompressed wire form, written as given.
    pub owner: &'a [u8],
    /// Uncompressed wire form, written as given (RFC 8945 §4.2: never compressed).
    pub algorithm: &'a [u8],
    pub time_signed: u64,
    pub fudge: u16,
    pub original_id: u16,
    pub error: TsigRcode,
    pub other: &'a [u8],
}

/// Appends the TSIG record to `msg` and adds one to ARCOUNT. On error the
/// message is left as it was.
pub(crate) fn append_record(
    msg: &mut Vec<u8>,
    fields: &TsigFields<'_>,
    mac: &[u8],
) -> Result<(), TsigError> {
    let arcount = read_arcount(msg)
        .ok_or(TsigError::ShortMessage)?
        .checked_add(1)
        .ok_or(TsigError::TooManyRecords)?;
    let time = time48(fields.time_signed)?;
    let rdlen = fields
        .algorithm
        .len()
        .saturating_add(RDATA_FIXED_LEN)
        .saturating_add(mac.len())
        .saturating_add(fields.other.len());
    // The algorithm name is at most 255 octets; MAC and Other Data come from
    // our own signing (at most 64 and 6 octets), so this never fails in practice.
    let rdlen = u16::try_from(rdlen).map_err(|_| TsigError::TooManyRecords)?;
    let mac_len = u16::try_from(mac.len()).map_err(|_| TsigError::TooManyRecords)?;
    let other_len = u16::try_from(fields.other.len()).map_err(|_| TsigError::TooManyRecords)?;
    msg.reserve(
        usize::from(rdlen)
            .saturating_add(fields.owner.len())
            .saturating_add(RR_FIXED_LEN),
    );
    msg.extend_from_slice(fields.owner);
    msg.extend_from_slice(&Rtype::TSIG.0.to_be_bytes());
    msg.extend_from_slice(&Class::ANY.0.to_be_bytes());
    msg.extend_from_slice(&0u32.to_be_bytes());
    msg.extend_from_slice(&rdlen.to_be_bytes());
    msg.extend_from_slice(fields.algorithm);
    msg.extend_from_slice(&time);
    msg.extend_from_slice(&fields.fudge.to_be_bytes());
    msg.extend_from_slice(&mac_len.to_be_bytes());
    msg.extend_from_slice(mac);
    msg.extend_from_slice(&fields.original_id.to_be_bytes());
    msg.extend_from_slice(&fields.error.0.to_be_bytes());
    msg.extend_from_slice(&other_len.to_be_bytes());
    msg.extend_from_slice(fields.other);
    write_arcount(msg, arcount);
    Ok(())
}

/// The 48-bit big-endian time.
pub(crate) fn time48(t: u64) -> Result<[u8; 6], TsigError> {
    if t > MAX_TIME {
        return Err(TsigError::TimeOutOfRange(t));
    }
    let [_, _, a, b, c, d, e, f] = t.to_be_bytes();
    Ok([a, b, c, d, e, f])
}

pub(crate) fn read_arcount(msg: &[u8]) -> Option<u16> {
    let b = msg.get(ARCOUNT_AT..HEADER_LEN)?;
    Some(u16::from_be_bytes([*b.first()?, *b.get(1)?]))
}

fn write_arcount(msg: &mut [u8], arcount: u16) {
    if let Some(b) = msg.get_mut(ARCOUNT_AT..HEADER_LEN) {
        b.copy_from_slice(&arcount.to_be_bytes());
    }
}

/// RFC 8945 §4.3.2: a prior or request MAC enters the digest as its 2-octet
/// size followed by the MAC.
pub(crate) fn digest_mac(ctx: &mut HmacContext, mac: &[u8]) {
    // A MAC we hold came from a u16-sized field or from our own HMAC.
    let len = u16::try_from(mac.len()).unwrap_or(u16::MAX);
    ctx.update(&len.to_be_bytes());
    ctx.update(mac);
}

/// RFC 8945 §4.3.3 "DNS Message": a received signed message as it was before
/// its TSIG was added: the TSIG record cut off, ARCOUNT one less, and the ID
/// replaced by the Original ID. Fed in pieces, without a copy.
pub(crate) fn digest_signed_message(
    ctx: &mut HmacContext,
    msg: &[u8],
    tsig_offset: usize,
    original_id: u16,
) -> Option<()> {
    let arcount = read_arcount(msg)?.checked_sub(1)?;
    ctx.update(&original_id.to_be_bytes());
    ctx.update(msg.get(2..ARCOUNT_AT)?);
    ctx.update(&arcount.to_be_bytes());
    ctx.update(msg.get(HEADER_LEN..tsig_offset)?);
    Some(())
}

/// RFC 8945 §4.3.3 "TSIG Variables": key name and algorithm in canonical
/// (lowercase, uncompressed) form, CLASS ANY, TTL 0, the timers, the error
/// and Other Data. The MAC, its size and the Original ID are not covered.
pub(crate) fn digest_variables(
    ctx: &mut HmacContext,
    canonical_key_name: &Name,
    algorithm: TsigAlgorithm,
    time: [u8; 6],
    fudge: u16,
    error: TsigRcode,
    other: &[u8],
) {
    ctx.update(canonical_key_name.as_wire());
    ctx.update(&Class::ANY.0.to_be_bytes());
    ctx.update(&0u32.to_be_bytes());
    ctx.update(algorithm.wire_name());
    digest_timers(ctx, time, fudge);
    ctx.update(&error.0.to_be_bytes());
    // Other Data came from a u16-sized field or is our 6-octet time.
    let other_len = u16::try_from(other.len()).unwrap_or(u16::MAX);
    ctx.update(&other_len.to_be_bytes());
    ctx.update(other);
}

/// RFC 8945 §5.3.1 "TSIG Timers": Time Signed and Fudge, what later
/// messages of a multi-message response cover instead of the variables.
pub(crate) fn digest_timers(ctx: &mut HmacContext, time: [u8; 6], fudge: u16) {
    ctx.update(&time);
    ctx.update(&fudge.to_be_bytes());
}

/// A TSIG record read from a parsed message.
#[derive(Debug, Clone)]
pub(crate) struct ReceivedTsig<'a> {
    /// The key name as sent (decompressed).
    pub owner: Name,
    pub rdata: TsigRdata<'a>,
    /// Where the record starts: the MAC covers the octets before it.
    pub offset: usize,
}

/// The message's TSIG record, if it has one. RFC 8945 §4.2: CLASS is ANY and
/// TTL is 0; a record that breaks that or whose rdata does not read cannot be
/// interpreted (§5.2: FORMERR).
pub(crate) fn read_tsig<'a>(
    view: &MessageView<'a>,
) -> Result<Option<ReceivedTsig<'a>>, MalformedTsig> {
    let (Some(rr), Some(offset)) = (view.tsig(), view.tsig_offset()) else {
        return Ok(None);
    };
    if rr.class != Class::ANY {
        return Err(MalformedTsig::Class(rr.class));
    }
    if rr.ttl != 0 {
        return Err(MalformedTsig::Ttl(rr.ttl));
    }
    Ok(Some(ReceivedTsig {
        owner: rr.owner,
        rdata: TsigRdata::parse(rr.rdata)?,
        offset,
    }))
}

/// RFC 8945 §5.2.2.1: a MAC longer than the hash, or shorter than the larger
/// of 10 octets and half the hash, is malformed (FORMERR). An empty MAC is
/// allowed only in the unsigned error answers of §5.3.2, which callers look
/// for before this check.
pub(crate) fn check_mac_size(algorithm: TsigAlgorithm, len: usize) -> Result<(), MalformedTsig> {
    let max = algorithm.mac_len();
    let min = algorithm.shortest_mac_len();
    if len > max {
        return Err(MalformedTsig::MacTooLong { len, max });
    }
    if len < min {
        return Err(MalformedTsig::MacTooShort { len, min });
    }
    Ok(())
}

/// What precedes the message in a MAC (RFC 8945 §4.3.1, §4.3.2, §5.3.1) and
/// which of the record's fields follow it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Covers<'m> {
    /// A request: the message, then all TSIG variables.
    Request,
    /// A response, or the first message of one: the request MAC, the
    /// message, then all TSIG variables.
    Response { request_mac: &'m [u8] },
    /// A later message of a multi-message response: the prior MAC, the
    /// message, then only the timers.
    Continuation { prior_mac: &'m [u8] },
}

impl Covers<'_> {
    /// Starts the MAC: the preceding MAC, if any.
    pub(crate) fn start(self, key: &TsigKey) -> HmacContext {
        let mut ctx = key.mac_context();
        match self {
            Covers::Request => {}
            Covers::Response { request_mac: mac } | Covers::Continuation { prior_mac: mac } => {
                digest_mac(&mut ctx, mac);
            }
        }
        ctx
    }

    fn full_variables(self) -> bool {
        !matches!(self, Covers::Continuation { .. })
    }
}

/// Signs `msg` (which has no TSIG yet) with `key` and appends the record.
/// The Original ID is the message's ID. Returns the MAC.
#[allow(clippy::too_many_arguments)] // the record's fields, each from the protocol
pub(crate) fn sign_and_append(
    msg: &mut Vec<u8>,
    key: &TsigKey,
    covers: Covers<'_>,
    time_signed: u64,
    fudge: u16,
    error: TsigRcode,
    other: &[u8],
) -> Result<HmacTag, TsigError> {
    let original_id = match msg.get(..2) {
        Some(&[a, b]) if msg.len() >= HEADER_LEN => u16::from_be_bytes([a, b]),
        _ => return Err(TsigError::ShortMessage),
    };
    let time = time48(time_signed)?;
    let mut ctx = covers.start(key);
    ctx.update(msg);
    if covers.full_variables() {
        digest_variables(
            &mut ctx,
            key.canonical_name(),
            key.algorithm(),
            time,
            fudge,
            error,
            other,
        );
    } else {
        digest_timers(&mut ctx, time, fudge);
    }
    let tag = ctx.finish_tag();
    let fields = TsigFields {
        owner: key.name().as_wire(),
        algorithm: key.algorithm().wire_name(),
        time_signed,
        fudge,
        original_id,
        error,
        other,
    };
    append_record(msg, &fields, tag.as_ref())?;
    Ok(tag)
}

/// Whether the received MAC verifies, continuing `ctx` (already holding what
/// precedes the message) with the message as signed and the variables or
/// timers. The MAC size must have been checked.
pub(crate) fn received_mac_verifies(
    mut ctx: HmacContext,
    full_variables: bool,
    key: &TsigKey,
    msg: &[u8],
    tsig: &ReceivedTsig<'_>,
) -> bool {
    let r = &tsig.rdata;
    let Ok(time) = time48(r.time_signed) else {
        return false;
    };
    if digest_signed_message(&mut ctx, msg, tsig.offset, r.original_id).is_none() {
        return false;
    }
    if full_variables {
        digest_variables(
            &mut ctx,
            key.canonical_name(),
            key.algorithm(),
            time,
            r.fudge,
            r.error,
            r.other,
        );
    } else {
        digest_timers(&mut ctx, time, r.fudge);
    }
    ctx.verify_truncated(r.mac)
}

/// RFC 8945 §5.2.3: the time is acceptable within Time Signed ± Fudge.
pub(crate) fn within_fudge(now: u64, time_signed: u64, fudge: u16) -> bool {
    now.abs_diff(time_signed) <= u64::from(fudge)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    /// hmac-sha256., time 0x0000_6543_2100, fudge 300, a 4-octet MAC,
    /// original ID 0xbeef, error BADTIME, 6 octets of other data.
    const RDATA: &[u8] = &[
        11, b'h', b'm', b'a', b'c', b'-', b's', b'h', b'a', b'2', b'5', b'6', 0, // algorithm
        0x00, 0x00, 0x65, 0x43, 0x21, 0x00, // time signed
        0x01, 0x2c, // fudge 300
        0x00, 0x04, 0xde, 0xad, 0xbe, 0xef, // MAC size, MAC
        0xbe, 0xef, // original ID
        0x00, 0x12, // error 18
        0x00, 0x06, 0x00, 0x00, 0x65, 0x43, 0x22, 0x00, // other length, other data
    ];

    #[test]
    fn parses_every_field_in_order() {
        let r = TsigRdata::parse(RDATA).unwrap();
        assert_eq!(r.algorithm, TsigAlgorithm::HmacSha256.name());
        assert_eq!(r.time_signed, 0x6543_2100);
        assert_eq!(r.fudge, 300);
        assert_eq!(r.mac, &[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(r.original_id, 0xbeef);
        assert_eq!(r.error, TsigRcode::BADTIME);
        assert_eq!(r.other_time(), Some(0x6543_2200));
    }

    #[test]
    fn every_truncation_and_extension_is_malformed() {
        for cut in 0..RDATA.len() {
            assert!(
                matches!(
                    TsigRdata::parse(&RDATA[..cut]),
                    Err(MalformedTsig::Rdata { .. })
                ),
                "cut at {cut}"
            );
        }
        let mut longer = RDATA.to_vec();
        longer.push(0);
        assert_eq!(
            TsigRdata::parse(&longer),
            Err(MalformedTsig::Rdata {
                at: RDATA.len(),
                what: "the end of the rdata after other data"
            })
        );
    }

    #[test]
    fn compressed_algorithm_name_is_malformed() {
        // RFC 8945 §4.2: the algorithm name is never compressed.
        let mut rdata = vec![0xc0, 0x0c];
        rdata.extend_from_slice(&RDATA[13..]);
        assert!(matches!(
            TsigRdata::parse(&rdata),
            Err(MalformedTsig::Rdata { at: 0, .. })
        ));
    }

    #[test]
    fn written_record_has_the_rfc_layout() {
        let mut msg = vec![0x12, 0x34, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let fields = TsigFields {
            owner: b"\x01k\x00",
            algorithm: TsigAlgorithm::HmacSha1.wire_name(),
            time_signed: 0x0102_0304_0506,
            fudge: 300,
            original_id: 0x1234,
            error: TsigRcode::NOERROR,
            other: &[],
        };
        append_record(&mut msg, &fields, &[0xaa, 0xbb]).unwrap();
        let want: &[u8] = &[
            0x12, 0x34, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, // ARCOUNT 1 -> 2
            1, b'k', 0, // owner
            0x00, 0xfa, 0x00, 0xff, 0, 0, 0, 0, // TSIG, ANY, TTL 0
            0x00, 29, // rdlength: 11 + 16 + 2
            9, b'h', b'm', b'a', b'c', b'-', b's', b'h', b'a', b'1', 0, // algorithm
            0x01, 0x02, 0x03, 0x04, 0x05, 0x06, // time signed
            0x01, 0x2c, // fudge
            0x00, 0x02, 0xaa, 0xbb, // MAC size, MAC
            0x12, 0x34, // original ID
            0x00, 0x00, // error
            0x00, 0x00, // other length
        ];
        assert_eq!(msg, want);
        assert_eq!(
            record_len(3, TsigAlgorithm::HmacSha1, 2, 0),
            want.len() - 12
        );
    }

    #[test]
    fn append_fails_cleanly() {
        let fields = TsigFields {
            owner: b"\x00",
            algorithm: TsigAlgorithm::HmacSha1.wire_name(),
            time_signed: MAX_TIME + 1,
            fudge: 0,
            original_id: 0,
            error: TsigRcode::NOERROR,
            other: &[],
        };
        let mut msg = vec![0; 12];
        assert_eq!(
            append_record(&mut msg, &fields, &[]),
            Err(TsigError::TimeOutOfRange(MAX_TIME + 1))
        );
        assert_eq!(msg, vec![0; 12]);
        let mut full = vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];
        let fields = TsigFields {
            time_signed: 0,
            ..fields
        };
        assert_eq!(
            append_record(&mut full, &fields, &[]),
            Err(TsigError::TooManyRecords)
        );
        assert_eq!(full.len(), 12);
        assert_eq!(
            append_record(&mut vec![0; 11], &fields, &[]),
            Err(TsigError::ShortMessage)
        );
    }
}
