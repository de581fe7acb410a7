//! EDNS(0): the OPT pseudo-record and its options (RFC 6891, RFC 5001 NSID,
//! RFC 7871 client subnet, RFC 7873 cookies, RFC 7828 keepalive, RFC 7830
//! padding, RFC 8914 extended errors).

use super::{ParseError, ParseErrorKind};

/// DNS flag day 2020: a UDP payload that avoids IP fragmentation on common paths.
pub const DEFAULT_UDP_PAYLOAD: u16 = 1232;
/// RFC 6891 §6.2.5: values below 512 are treated as 512.
pub const MIN_UDP_PAYLOAD: u16 = 512;

/// RFC 5001.
pub const OPTION_NSID: u16 = 3;
/// RFC 7871.
pub const OPTION_SUBNET: u16 = 8;
/// RFC 7873.
pub const OPTION_COOKIE: u16 = 10;
/// RFC 7828.
pub const OPTION_TCP_KEEPALIVE: u16 = 11;
/// RFC 7830.
pub const OPTION_PADDING: u16 = 12;
/// RFC 8914.
pub const OPTION_EDE: u16 = 15;

/// RFC 7873 §4: the client cookie is exactly 8 octets.
const CLIENT_COOKIE_LEN: usize = 8;
/// RFC 7873 §4: the server cookie is 8 to 32 octets.
const SERVER_COOKIE_MIN: usize = 8;
const SERVER_COOKIE_MAX: usize = 32;
/// Owner (1) + type (2) + class (2) + TTL (4) + rdlength (2) of an OPT record.
pub(crate) const OPT_FIXED_LEN: usize = 11;
/// Option code and option length.
const OPTION_HEADER_LEN: usize = 4;
/// RFC 6891 §6.1.4: the DO bit is the top bit of the flags half of the TTL.
const DO_BIT: u16 = 0x8000;

/// One EDNS option, borrowing its data from the message (or from the caller when
/// building). Options this crate does not model are kept as `Unknown` so they can
/// be passed over or echoed (RFC 6891 §6.1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdnsOption<'a> {
    /// Empty in a query (a request), the server's identifier in a response.
    Nsid(&'a [u8]),
    /// RFC 7873 §4: an 8-octet client cookie, optionally followed by an 8–32 octet
    /// server cookie.
    Cookie {
        client: [u8; CLIENT_COOKIE_LEN],
        server: Option<&'a [u8]>,
    },
    /// RFC 7828 §3.1: no value in a query; the idle timeout in 100 ms units in a response.
    TcpKeepalive(Option<u16>),
    /// RFC 7830: this many octets of padding (zeros when written).
    Padding(u16),
    /// RFC 8914 §2: an info code and optional UTF-8 text (kept as bytes, not checked).
    Ede {
        code: u16,
        text: &'a [u8],
    },
    /// RFC 7871: kept raw; the authoritative server only echoes or ignores it.
    ClientSubnet(&'a [u8]),
    Unknown {
        code: u16,
        data: &'a [u8],
    },
}

impl<'a> EdnsOption<'a> {
    pub fn code(&self) -> u16 {
        match self {
            EdnsOption::Nsid(_) => OPTION_NSID,
            EdnsOption::Cookie { .. } => OPTION_COOKIE,
            EdnsOption::TcpKeepalive(_) => OPTION_TCP_KEEPALIVE,
            EdnsOption::Padding(_) => OPTION_PADDING,
            EdnsOption::Ede { .. } => OPTION_EDE,
            EdnsOption::ClientSubnet(_) => OPTION_SUBNET,
            EdnsOption::Unknown { code, .. } => *code,
        }
    }

    /// Interprets one option's data; `None` if it breaks its RFC's length rules.
    pub fn parse(code: u16, data: &'a [u8]) -> Option<EdnsOption<'a>> {
        Some(match code {
            OPTION_NSID => EdnsOption::Nsid(data),
            OPTION_COOKIE => {
                // RFC 7873 §5.2.2: total length 8 (client only) or 16–40; anything
                // else is FORMERR.
                let client: [u8; CLIENT_COOKIE_LEN] =
                    data.get(..CLIENT_COOKIE_LEN)?.try_into().ok()?;
                let rest = data.get(CLIENT_COOKIE_LEN..)?;
                let server = match rest.len() {
                    0 => None,
                    SERVER_COOKIE_MIN..=SERVER_COOKIE_MAX => Some(rest),
                    _ => return None,
                };
                EdnsOption::Cookie { client, server }
            }
            OPTION_TCP_KEEPALIVE => match *data {
                [] => EdnsOption::TcpKeepalive(None),
                [a, b] => EdnsOption::TcpKeepalive(Some(u16::from_be_bytes([a, b]))),
                // RFC 7828 §3.1: any other length is malformed.
                _ => return None,
            },
            // RFC 7830 §4: the receiver ignores the padding's content.
            OPTION_PADDING => EdnsOption::Padding(u16::try_from(data.len()).ok()?),
            OPTION_EDE => {
                let (code, text) = data.split_first_chunk::<2>()?;
                EdnsOption::Ede {
                    code: u16::from_be_bytes(*code),
                    text,
                }
            }
            OPTION_SUBNET => EdnsOption::ClientSubnet(data),
            code => EdnsOption::Unknown { code, data },
        })
    }

    /// Length of the option's data (not counting its 4-octet code and length).
    pub fn data_len(&self) -> usize {
        match self {
            EdnsOption::Nsid(d) | EdnsOption::ClientSubnet(d) => d.len(),
            EdnsOption::Unknown { data, .. } => data.len(),
            EdnsOption::Cookie { server, .. } => {
                CLIENT_COOKIE_LEN.saturating_add(server.map_or(0, <[u8]>::len))
            }
            EdnsOption::TcpKeepalive(t) => t.map_or(0, |_| 2),
            EdnsOption::Padding(n) => usize::from(*n),
            EdnsOption::Ede { text, .. } => text.len().saturating_add(2),
        }
    }

    /// Length on the wire, including the option code and length.
    pub fn wire_len(&self) -> usize {
        self.data_len().saturating_add(OPTION_HEADER_LEN)
    }

    /// Appends the option. Data longer than an option can carry is cut at 65535
    /// octets rather than producing a length field that lies.
    pub fn write(&self, out: &mut Vec<u8>) {
        let len = u16::try_from(self.data_len()).unwrap_or(u16::MAX);
        out.extend_from_slice(&self.code().to_be_bytes());
        out.extend_from_slice(&len.to_be_bytes());
        let start = out.len();
        match self {
            EdnsOption::Nsid(d) | EdnsOption::ClientSubnet(d) => out.extend_from_slice(d),
            EdnsOption::Unknown { data, .. } => out.extend_from_slice(data),
            EdnsOption::Cookie { client, server } => {
                out.extend_from_slice(client);
                out.extend_from_slice(server.unwrap_or(&[]));
            }
            EdnsOption::TcpKeepalive(t) => {
                if let Some(t) = t {
                    out.extend_from_slice(&t.to_be_bytes());
                }
            }
            EdnsOption::Padding(n) => out.resize(out.len().saturating_add(usize::from(*n)), 0),
            EdnsOption::Ede { code, text } => {
                out.extend_from_slice(&code.to_be_bytes());
                out.extend_from_slice(text);
            }
        }
        out.truncate(start.saturating_add(usize::from(len)));
    }
}

/// The EDNS information of a received message, read from its OPT record
/// (RFC 6891 §6.1.2–6.1.4). Its options were validated when the message was parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edns<'a> {
    /// The OPT CLASS field, as sent (see [`Edns::effective_payload`]).
    pub udp_payload_size: u16,
    /// Upper 8 bits of the extended rcode.
    pub ext_rcode_high: u8,
    pub version: u8,
    /// DNSSEC OK (RFC 3225).
    pub dnssec_ok: bool,
    /// The other 15 flag bits, which RFC 6891 §6.1.4 says to ignore and clear.
    pub z: u16,
    options: &'a [u8],
}

impl<'a> Edns<'a> {
    /// Reads the OPT fields and checks every option; `rdata_offset` locates errors.
    pub(crate) fn from_opt(
        class: u16,
        ttl: u32,
        rdata: &'a [u8],
        rdata_offset: usize,
    ) -> Result<Edns<'a>, ParseError> {
        let [rcode_high, version, f0, f1] = ttl.to_be_bytes();
        let flags = u16::from_be_bytes([f0, f1]);
        let edns = Edns {
            udp_payload_size: class,
            ext_rcode_high: rcode_high,
            version,
            dnssec_ok: flags & DO_BIT != 0,
            z: flags & !DO_BIT,
            options: rdata,
        };
        let mut rest = rdata;
        let mut at = rdata_offset;
        while !rest.is_empty() {
            let (code, len, data, tail) =
                split_option(rest).ok_or(ParseError::new(at, ParseErrorKind::OptionTruncated))?;
            if EdnsOption::parse(code, data).is_none() {
                return Err(ParseError::new(at, ParseErrorKind::BadOption { code }));
            }
            at = at
                .saturating_add(OPTION_HEADER_LEN)
                .saturating_add(usize::from(len));
            rest = tail;
        }
        Ok(edns)
    }

    /// The payload size to honour: RFC 6891 §6.2.5 treats values below 512 as 512.
    pub fn effective_payload(&self) -> u16 {
        self.udp_payload_size.max(MIN_UDP_PAYLOAD)
    }

    pub fn options(&self) -> EdnsOptions<'a> {
        EdnsOptions { rest: self.options }
    }

    /// The raw option bytes (the OPT RDATA).
    pub fn option_bytes(&self) -> &'a [u8] {
        self.options
    }

    /// The client and server cookies (RFC 7873 §4), if the message has a COOKIE option.
    pub fn cookie(&self) -> Option<([u8; CLIENT_COOKIE_LEN], Option<&'a [u8]>)> {
        match self.option(OPTION_COOKIE)? {
            EdnsOption::Cookie { client, server } => Some((client, server)),
            _ => None,
        }
    }

    /// Whether the client asked for the server's NSID (RFC 5001 §2.1).
    pub fn requests_nsid(&self) -> bool {
        self.option(OPTION_NSID).is_some()
    }

    /// The first option with this code, if any.
    pub fn option(&self, code: u16) -> Option<EdnsOption<'a>> {
        self.options().find(|o| o.code() == code)
    }
}

/// Splits one option off the front: code, length, data, and what follows.
fn split_option(bytes: &[u8]) -> Option<(u16, u16, &[u8], &[u8])> {
    let (head, rest) = bytes.split_first_chunk::<OPTION_HEADER_LEN>()?;
    let [c0, c1, l0, l1] = *head;
    let len = u16::from_be_bytes([l0, l1]);
    let data = rest.get(..usize::from(len))?;
    let tail = rest.get(usize::from(len)..)?;
    Some((u16::from_be_bytes([c0, c1]), len, data, tail))
}

/// The largest UDP response to a query with `edns` (or none), given the
/// largest we send: the client's advertised payload (RFC 6891 §6.2.5: values
/// below 512 count as 512), within ours, never below 512 (RFC 1035 §4.2.1).
pub fn udp_response_limit(edns: Option<&Edns<'_>>, ours: u16) -> usize {
    let client = edns.map_or(MIN_UDP_PAYLOAD, Edns::effective_payload);
    usize::from(client.min(ours).max(MIN_UDP_PAYLOAD))
}

/// Iterator over the options of a validated OPT record.
#[derive(Debug, Clone)]
pub struct EdnsOptions<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for EdnsOptions<'a> {
    type Item = EdnsOption<'a>;
    fn next(&mut self) -> Option<EdnsOption<'a>> {
        let (code, _, data, tail) = split_option(self.rest)?;
        self.rest = tail;
        EdnsOption::parse(code, data)
    }
}

/// The OPT record a response will carry. The extended rcode bits come from the
/// builder's rcode, so they cannot disagree with the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptRecord<'o> {
    pub udp_payload_size: u16,
    pub version: u8,
    pub dnssec_ok: bool,
    pub options: &'o [EdnsOption<'o>],
    /// RFC 7830/RFC 8467 §4.1: pad the whole message to a multiple of this many
    /// octets (468 is the recommended response block), as far as the limit allows.
    pub pad_to_block: Option<u16>,
}

impl Default for OptRecord<'_> {
    fn default() -> Self {
        OptRecord {
            udp_payload_size: DEFAULT_UDP_PAYLOAD,
            version: 0,
            dnssec_ok: false,
            options: &[],
            pad_to_block: None,
        }
    }
}

impl OptRecord<'_> {
    /// Size on the wire without any block padding: what to reserve before adding records.
    pub fn wire_len(&self) -> usize {
        self.options
            .iter()
            .fold(OPT_FIXED_LEN, |acc, o| acc.saturating_add(o.wire_len()))
    }

    /// Appends the record with extended rcode bits `ext_rcode_high` and, when
    /// padding is asked for, a padding option sized so the message (which is
    /// `out.len()` long before this call) ends on a block boundary without
    /// passing `limit`.
    pub(crate) fn write(&self, out: &mut Vec<u8>, ext_rcode_high: u8, limit: usize) {
        let start = out.len();
        let options_len = self.wire_len().saturating_sub(OPT_FIXED_LEN);
        let padding = self.pad_to_block.filter(|&b| b > 0).and_then(|block| {
            let unpadded = start
                .checked_add(self.wire_len())?
                .checked_add(OPTION_HEADER_LEN)?;
            let room = limit.checked_sub(unpadded)?;
            let block = usize::from(block);
            let want = block
                .checked_sub(unpadded.checked_rem(block)?)?
                .checked_rem(block)?;
            u16::try_from(want.min(room)).ok()
        });
        let rdlen = options_len.saturating_add(
            padding.map_or(0, |p| usize::from(p).saturating_add(OPTION_HEADER_LEN)),
        );
        out.push(0); // RFC 6891 §6.1.2: the owner is the root
        out.extend_from_slice(&crate::rtype::Rtype::OPT.0.to_be_bytes());
        out.extend_from_slice(&self.udp_payload_size.to_be_bytes());
        let flags: u16 = if self.dnssec_ok { DO_BIT } else { 0 };
        let [f0, f1] = flags.to_be_bytes();
        out.extend_from_slice(&[ext_rcode_high, self.version, f0, f1]);
        out.extend_from_slice(&u16::try_from(rdlen).unwrap_or(u16::MAX).to_be_bytes());
        for o in self.options {
            o.write(out);
        }
        if let Some(p) = padding {
            EdnsOption::Padding(p).write(out);
        }
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

    #[test]
    fn cookie_lengths_follow_rfc7873() {
        let bytes = [7u8; 41];
        for len in 0..=41usize {
            let ok = EdnsOption::parse(OPTION_COOKIE, &bytes[..len]).is_some();
            let expected = len == 8 || (16..=40).contains(&len);
            assert_eq!(ok, expected, "cookie of {len} octets");
        }
    }

    #[test]
    fn keepalive_is_empty_or_two_octets() {
        assert_eq!(
            EdnsOption::parse(OPTION_TCP_KEEPALIVE, &[]),
            Some(EdnsOption::TcpKeepalive(None))
        );
        assert_eq!(
            EdnsOption::parse(OPTION_TCP_KEEPALIVE, &[1, 44]),
            Some(EdnsOption::TcpKeepalive(Some(300)))
        );
        assert_eq!(EdnsOption::parse(OPTION_TCP_KEEPALIVE, &[1]), None);
        assert_eq!(EdnsOption::parse(OPTION_TCP_KEEPALIVE, &[0, 1, 2]), None);
    }

    #[test]
    fn ede_needs_an_info_code() {
        assert_eq!(EdnsOption::parse(OPTION_EDE, &[0]), None);
        assert_eq!(
            EdnsOption::parse(OPTION_EDE, &[0, 18, b'h', b'i']),
            Some(EdnsOption::Ede {
                code: 18,
                text: b"hi"
            })
        );
    }

    #[test]
    fn options_write_what_they_parse_from() {
        let cases: [(u16, &[u8]); 7] = [
            (OPTION_NSID, b"ns1"),
            (OPTION_COOKIE, &[1, 2, 3, 4, 5, 6, 7, 8]),
            (OPTION_COOKIE, &[9; 24]),
            (OPTION_TCP_KEEPALIVE, &[0, 10]),
            (OPTION_EDE, &[0, 3, b'x']),
            (OPTION_SUBNET, &[0, 1, 24, 0, 192, 0, 2]),
            (65001, &[1, 2, 3]),
        ];
        for (code, data) in cases {
            let o = EdnsOption::parse(code, data).unwrap();
            let mut out = Vec::new();
            o.write(&mut out);
            let mut expected = code.to_be_bytes().to_vec();
            expected.extend_from_slice(&(data.len() as u16).to_be_bytes());
            expected.extend_from_slice(data);
            assert_eq!(out, expected, "option {code}");
            assert_eq!(o.wire_len(), out.len());
        }
    }

    #[test]
    fn opt_fields_split_ttl_into_rcode_version_and_flags() {
        let e = Edns::from_opt(4096, 0x0100_8001, &[], 0).unwrap();
        assert_eq!(e.udp_payload_size, 4096);
        assert_eq!(e.ext_rcode_high, 1);
        assert_eq!(e.version, 0);
        assert!(e.dnssec_ok);
        assert_eq!(e.z, 1);
        assert_eq!(
            Edns::from_opt(100, 0, &[], 0).unwrap().effective_payload(),
            512
        );
    }

    #[test]
    fn malformed_option_lengths_are_located() {
        // NSID ok, then an option claiming 5 bytes with 1 present.
        let rdata = [0, 3, 0, 0, 0, 9, 0, 5, 1];
        let err = Edns::from_opt(512, 0, &rdata, 100).unwrap_err();
        assert_eq!(err, ParseError::new(104, ParseErrorKind::OptionTruncated));
        let bad_cookie = [0, 10, 0, 3, 1, 2, 3];
        let err = Edns::from_opt(512, 0, &bad_cookie, 0).unwrap_err();
        assert_eq!(err.kind, ParseErrorKind::BadOption { code: 10 });
        // Unknown options are passed over.
        let unknown = [0xfd, 0xe9, 0, 2, 1, 2, 0, 3, 0, 0];
        let e = Edns::from_opt(512, 0, &unknown, 0).unwrap();
        let opts: Vec<_> = e.options().collect();
        assert_eq!(
            opts,
            [
                EdnsOption::Unknown {
                    code: 65001,
                    data: &[1, 2]
                },
                EdnsOption::Nsid(&[])
            ]
        );
    }
}
