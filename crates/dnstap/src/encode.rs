//! Encoding one dnstap message straight from borrowed parts into a Frame
//! Streams data frame, with prost's wire-format primitives.
//!
//! The query path logs two messages per query. Filling prost's generated
//! `Dnstap` struct first would copy the DNS message into it and then copy it
//! again while encoding; here the fields go out once, in field-number order,
//! and the lengths are computed up front. `tests/encode.rs` checks the result
//! against prost's own decoding of the schema.

use std::net::{IpAddr, Ipv6Addr};

use prost::encoding::{encoded_len_varint, key_len, WireType};

use crate::schema;
use crate::{MessageContext, MessageKind};

// Field numbers of `Dnstap` and `Message` in dnstap.proto.
const DNSTAP_IDENTITY: u32 = 1;
const DNSTAP_VERSION: u32 = 2;
const DNSTAP_MESSAGE: u32 = 14;
const DNSTAP_TYPE: u32 = 15;
const MESSAGE_TYPE: u32 = 1;
const SOCKET_FAMILY: u32 = 2;
const SOCKET_PROTOCOL: u32 = 3;
const QUERY_ADDRESS: u32 = 4;
const RESPONSE_ADDRESS: u32 = 5;
const QUERY_PORT: u32 = 6;
const RESPONSE_PORT: u32 = 7;
const QUERY_TIME_SEC: u32 = 8;
const QUERY_TIME_NSEC: u32 = 9;
const QUERY_MESSAGE: u32 = 10;
const QUERY_ZONE: u32 = 11;
const RESPONSE_TIME_SEC: u32 = 12;
const RESPONSE_TIME_NSEC: u32 = 13;
const RESPONSE_MESSAGE: u32 = 14;

/// An address as dnstap carries it: 4 or 16 octets.
struct Address {
    octets: [u8; 16],
    len: usize,
}

impl Address {
    fn new(ip: IpAddr) -> Address {
        let mut octets = [0u8; 16];
        let len = match ip {
            IpAddr::V4(v4) => {
                let (head, _) = octets.split_at_mut(4);
                head.copy_from_slice(&v4.octets());
                4
            }
            IpAddr::V6(v6) => {
                octets = v6.octets();
                16
            }
        };
        Address { octets, len }
    }

    fn bytes(&self) -> &[u8] {
        self.octets.get(..self.len).unwrap_or(&self.octets)
    }
}

/// The address family and the two addresses as dnstap wants them: IPv4 as 4
/// octets (INET), IPv6 as 16 (INET6). IPv4-mapped IPv6 addresses (a dual-stack
/// socket's view of an IPv4 peer) are reported as the IPv4 they stand for;
/// if the two sides still differ in family, both are given as IPv6.
fn family_and_addresses(client: IpAddr, server: IpAddr) -> (schema::SocketFamily, IpAddr, IpAddr) {
    match (client.to_canonical(), server.to_canonical()) {
        (client @ IpAddr::V4(_), server @ IpAddr::V4(_)) => {
            (schema::SocketFamily::Inet, client, server)
        }
        (client, server) => (
            schema::SocketFamily::Inet6,
            IpAddr::V6(as_v6(client)),
            IpAddr::V6(as_v6(server)),
        ),
    }
}

fn as_v6(ip: IpAddr) -> Ipv6Addr {
    match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    }
}

fn varint_field_len(tag: u32, value: u64) -> usize {
    key_len(tag).saturating_add(encoded_len_varint(value))
}

fn bytes_field_len(tag: u32, len: usize) -> usize {
    key_len(tag)
        .saturating_add(encoded_len_varint(len as u64))
        .saturating_add(len)
}

fn fixed32_field_len(tag: u32) -> usize {
    key_len(tag).saturating_add(4)
}

/// Where small fields are written: the protobuf primitives on top of two
/// ways to store an octet.
trait Emit {
    fn byte(&mut self, b: u8);
    fn slice(&mut self, bytes: &[u8]);

    #[inline(always)]
    fn varint(&mut self, mut value: u64) {
        // Keys, ports' first octets, families, types: mostly one octet.
        if value < 0x80 {
            self.byte((value & 0x7f) as u8);
            return;
        }
        while value >= 0x80 {
            // The low seven bits, with the continuation bit set.
            self.byte((value & 0x7f) as u8 | 0x80);
            value >>= 7;
        }
        self.byte((value & 0x7f) as u8);
    }

    #[inline(always)]
    fn key(&mut self, tag: u32, wire_type: WireType) {
        self.varint(u64::from(tag << 3 | wire_type as u32));
    }

    #[inline(always)]
    fn varint_field(&mut self, tag: u32, value: u64) {
        self.key(tag, WireType::Varint);
        self.varint(value);
    }

    #[inline(always)]
    fn bytes_field(&mut self, tag: u32, value: &[u8]) {
        self.key(tag, WireType::LengthDelimited);
        self.varint(value.len() as u64);
        self.slice(value);
    }

    #[inline(always)]
    fn fixed32_field(&mut self, tag: u32, value: u32) {
        self.key(tag, WireType::ThirtyTwoBit);
        self.slice(&value.to_le_bytes());
    }
}

/// Octets on the stack, for runs of small fields.
#[derive(Debug, Clone, Copy)]
struct Small {
    buf: [u8; 96],
    len: usize,
    /// Set when something did not fit; the content is then incomplete.
    overflowed: bool,
}

impl Small {
    const fn new() -> Small {
        Small {
            buf: [0; 96],
            len: 0,
            overflowed: false,
        }
    }

    fn bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }

    #[inline(always)]
    fn try_byte(&mut self, b: u8) -> bool {
        match self.buf.get_mut(self.len) {
            Some(slot) => {
                *slot = b;
                self.len = self.len.wrapping_add(1);
                true
            }
            None => false,
        }
    }

    #[inline(always)]
    fn try_slice(&mut self, bytes: &[u8]) -> bool {
        let end = self.len.saturating_add(bytes.len());
        match self.buf.get_mut(self.len..end) {
            Some(space) => {
                space.copy_from_slice(bytes);
                self.len = end;
                true
            }
            None => false,
        }
    }
}

impl Emit for Small {
    #[inline(always)]
    fn byte(&mut self, b: u8) {
        if !self.try_byte(b) {
            self.overflowed = true;
        }
    }

    #[inline(always)]
    fn slice(&mut self, bytes: &[u8]) {
        if !self.try_slice(bytes) {
            self.overflowed = true;
        }
    }
}

/// Appends to a Vec with few capacity checks: small fields gather on the
/// stack and go to the Vec in one copy, before each large field (a DNS
/// message) and at the end. A message's dozen small fields would otherwise
/// cost a dozen bounds-checked pushes each.
struct FrameWriter<'a> {
    out: &'a mut Vec<u8>,
    small: Small,
}

impl<'a> FrameWriter<'a> {
    fn new(out: &'a mut Vec<u8>) -> FrameWriter<'a> {
        FrameWriter {
            out,
            small: Small::new(),
        }
    }

    fn flush(&mut self) {
        self.out.extend_from_slice(self.small.bytes());
        self.small.len = 0;
    }
}

impl Emit for FrameWriter<'_> {
    #[inline(always)]
    fn byte(&mut self, b: u8) {
        if !self.small.try_byte(b) {
            self.flush();
            self.out.push(b);
        }
    }

    #[inline(always)]
    fn slice(&mut self, bytes: &[u8]) {
        if !self.small.try_slice(bytes) {
            self.flush();
            self.out.extend_from_slice(bytes);
        }
    }
}

impl Drop for FrameWriter<'_> {
    fn drop(&mut self) {
        self.flush();
    }
}

/// The fields a query and its response have in common (socket family and
/// protocol, both addresses and ports, the query time), encoded once for
/// both messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Exchange {
    common: Small,
}

impl Exchange {
    pub(crate) fn new(ctx: &MessageContext<'_>) -> Exchange {
        let (family, client, server) = family_and_addresses(ctx.client.ip(), ctx.server.ip());
        let mut common = Small::new();
        common.varint_field(SOCKET_FAMILY, family as u64);
        common.varint_field(SOCKET_PROTOCOL, ctx.protocol.code() as u64);
        common.bytes_field(QUERY_ADDRESS, Address::new(client).bytes());
        common.bytes_field(RESPONSE_ADDRESS, Address::new(server).bytes());
        common.varint_field(QUERY_PORT, u64::from(ctx.client.port()));
        common.varint_field(RESPONSE_PORT, u64::from(ctx.server.port()));
        if let Some(t) = ctx.query_time {
            common.varint_field(QUERY_TIME_SEC, t.secs);
            common.fixed32_field(QUERY_TIME_NSEC, t.nanos);
        }
        Exchange { common }
    }
}

/// The identity and version every message of a sink carries, and the two
/// fields as they are encoded, once, at the start of every frame.
#[derive(Debug, Clone, Default)]
pub(crate) struct Header {
    encoded: Vec<u8>,
}

impl Header {
    pub(crate) fn new(identity: Option<&[u8]>, version: Option<&[u8]>) -> Header {
        let mut encoded = Vec::new();
        {
            let mut w = FrameWriter::new(&mut encoded);
            if let Some(identity) = identity {
                w.bytes_field(DNSTAP_IDENTITY, identity);
            }
            if let Some(version) = version {
                w.bytes_field(DNSTAP_VERSION, version);
            }
        }
        Header { encoded }
    }
}

/// Appends one Frame Streams data frame (a 4-octet big-endian length, then a
/// `Dnstap` protobuf holding a `Message`) to `out`. Returns false, leaving
/// `out` as it was, only if the frame would exceed a frame's 32-bit length
/// (or, which cannot happen, the common fields did not fit their buffer).
#[cfg(test)]
pub(crate) fn append_frame(
    out: &mut Vec<u8>,
    header: &Header,
    kind: MessageKind,
    ctx: &MessageContext<'_>,
    wire: &[u8],
) -> bool {
    append_exchange_frame(out, header, kind, &Exchange::new(ctx), ctx, wire)
}

/// [`append_frame`] with the fields common to the exchange encoded already:
/// `exchange` must come from the same `ctx`.
pub(crate) fn append_exchange_frame(
    out: &mut Vec<u8>,
    header: &Header,
    kind: MessageKind,
    exchange: &Exchange,
    ctx: &MessageContext<'_>,
    wire: &[u8],
) -> bool {
    if exchange.common.overflowed {
        return false;
    }
    let query = kind.query();
    // A query message carries no response time, whatever the context.
    let response_time = if query { None } else { ctx.response_time };
    let wire_tag = if query {
        QUERY_MESSAGE
    } else {
        RESPONSE_MESSAGE
    };
    let mut message_len = varint_field_len(MESSAGE_TYPE, u64::from(kind.code()))
        .saturating_add(exchange.common.len)
        .saturating_add(bytes_field_len(wire_tag, wire.len()));
    if let Some(zone) = ctx.query_zone {
        message_len = message_len.saturating_add(bytes_field_len(QUERY_ZONE, zone.len()));
    }
    if let Some(t) = response_time {
        message_len = message_len
            .saturating_add(varint_field_len(RESPONSE_TIME_SEC, t.secs))
            .saturating_add(fixed32_field_len(RESPONSE_TIME_NSEC));
    }
    let payload_len = bytes_field_len(DNSTAP_MESSAGE, message_len)
        .saturating_add(varint_field_len(DNSTAP_TYPE, MESSAGE_TYPE_CODE))
        .saturating_add(header.encoded.len());
    let Ok(frame_len) = u32::try_from(payload_len) else {
        return false;
    };
    out.reserve(payload_len.saturating_add(4));
    out.extend_from_slice(&frame_len.to_be_bytes());
    out.extend_from_slice(&header.encoded);
    let mut w = FrameWriter::new(out);
    w.key(DNSTAP_MESSAGE, WireType::LengthDelimited);
    w.varint(message_len as u64);
    // Fields in number order, as prost writes them.
    w.varint_field(MESSAGE_TYPE, u64::from(kind.code()));
    w.slice(exchange.common.bytes());
    if query {
        w.bytes_field(QUERY_MESSAGE, wire);
    }
    if let Some(zone) = ctx.query_zone {
        w.bytes_field(QUERY_ZONE, zone);
    }
    if let Some(t) = response_time {
        w.varint_field(RESPONSE_TIME_SEC, t.secs);
        w.fixed32_field(RESPONSE_TIME_NSEC, t.nanos);
    }
    if !query {
        w.bytes_field(RESPONSE_MESSAGE, wire);
    }
    w.varint_field(DNSTAP_TYPE, MESSAGE_TYPE_CODE);
    true
}

/// `Dnstap.type`: MESSAGE, the only kind of payload there is.
const MESSAGE_TYPE_CODE: u64 = schema::dnstap::Type::Message as u64;

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )]

    use std::net::SocketAddr;

    use prost::Message as _;

    use super::*;
    use crate::schema::{Dnstap, Message, SocketFamily};
    use crate::{Protocol, Timestamp};

    fn decode_frame(frame: &[u8]) -> Dnstap {
        let len = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
        assert_eq!(len, frame.len() - 4, "length prefix covers the payload");
        Dnstap::decode(&frame[4..]).unwrap()
    }

    fn frame(header: &Header, kind: MessageKind, ctx: &MessageContext<'_>, wire: &[u8]) -> Vec<u8> {
        let mut out = vec![0xee];
        assert!(append_frame(&mut out, header, kind, ctx, wire));
        assert_eq!(out[0], 0xee, "appends, keeping what was there");
        out.split_off(1)
    }

    const QUERY_TIME: Timestamp = Timestamp {
        secs: 1_795_000_000,
        nanos: 123_456_789,
    };
    const RESPONSE_TIME: Timestamp = Timestamp {
        secs: 1_795_000_001,
        nanos: 7,
    };

    #[test]
    fn a_response_decodes_to_every_field_prost_expects() {
        let header = Header::new(Some(b"ns1.test"), Some(b"bulwark 0.1.0"));
        let ctx = MessageContext {
            protocol: Protocol::Tcp,
            client: "[2001:db8::7]:40000".parse::<SocketAddr>().unwrap(),
            server: "[2001:db8::1]:53".parse::<SocketAddr>().unwrap(),
            query_time: Some(QUERY_TIME),
            response_time: Some(RESPONSE_TIME),
            query_zone: Some(b"\x04test\x00"),
        };
        let wire = vec![0x42; 300];
        let got = decode_frame(&frame(&header, MessageKind::AuthResponse, &ctx, &wire));
        let want = Dnstap {
            identity: Some(b"ns1.test".to_vec()),
            version: Some(b"bulwark 0.1.0".to_vec()),
            extra: None,
            r#type: schema::dnstap::Type::Message as i32,
            message: Some(Message {
                r#type: 2,
                socket_family: Some(SocketFamily::Inet6 as i32),
                socket_protocol: Some(2),
                query_address: Some("2001:db8::7".parse::<Ipv6Addr>().unwrap().octets().to_vec()),
                response_address: Some(
                    "2001:db8::1".parse::<Ipv6Addr>().unwrap().octets().to_vec(),
                ),
                query_port: Some(40000),
                response_port: Some(53),
                query_time_sec: Some(QUERY_TIME.secs),
                query_time_nsec: Some(QUERY_TIME.nanos),
                query_zone: Some(b"\x04test\x00".to_vec()),
                response_time_sec: Some(RESPONSE_TIME.secs),
                response_time_nsec: Some(RESPONSE_TIME.nanos),
                response_message: Some(wire.clone()),
                ..Message::default()
            }),
        };
        assert_eq!(got, want);
        // Byte for byte what prost itself writes for the same message.
        assert_eq!(
            &frame(&header, MessageKind::AuthResponse, &ctx, &wire)[4..],
            want.encode_to_vec()
        );
    }

    #[test]
    fn a_query_has_no_response_time_and_mapped_ipv4_is_inet() {
        let header = Header::default();
        let ctx = MessageContext {
            protocol: Protocol::Udp,
            client: "[::ffff:192.0.2.7]:5353".parse::<SocketAddr>().unwrap(),
            server: "127.0.0.1:53".parse::<SocketAddr>().unwrap(),
            query_time: Some(QUERY_TIME),
            response_time: Some(RESPONSE_TIME),
            query_zone: None,
        };
        let wire = [1u8, 2, 3];
        let got = decode_frame(&frame(&header, MessageKind::AuthQuery, &ctx, &wire));
        assert_eq!(got.identity, None);
        assert_eq!(got.version, None);
        let m = got.message.unwrap();
        assert_eq!(m.r#type, 1);
        assert_eq!(m.socket_family, Some(SocketFamily::Inet as i32));
        assert_eq!(m.query_address.as_deref(), Some(&[192, 0, 2, 7][..]));
        assert_eq!(m.response_address.as_deref(), Some(&[127, 0, 0, 1][..]));
        assert_eq!(m.query_port, Some(5353));
        assert_eq!(m.query_message.as_deref(), Some(&wire[..]));
        assert_eq!(m.response_message, None);
        assert_eq!(m.response_time_sec, None);
        assert_eq!(m.response_time_nsec, None);
        assert_eq!(m.query_zone, None);
    }

    #[test]
    fn frames_append_back_to_back() {
        let header = Header::default();
        let ctx = MessageContext {
            protocol: Protocol::Udp,
            client: "192.0.2.7:5353".parse::<SocketAddr>().unwrap(),
            server: "192.0.2.1:53".parse::<SocketAddr>().unwrap(),
            query_time: None,
            response_time: None,
            query_zone: None,
        };
        let mut out = Vec::new();
        for n in 0..3u8 {
            assert!(append_frame(
                &mut out,
                &header,
                MessageKind::AuthQuery,
                &ctx,
                &[n; 200]
            ));
        }
        let mut rest = &out[..];
        for n in 0..3u8 {
            let len = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
            let d = decode_frame(&rest[..4 + len]);
            let m = d.message.unwrap();
            assert_eq!(m.query_message, Some(vec![n; 200]));
            assert_eq!(m.query_time_sec, None);
            rest = &rest[4 + len..];
        }
        assert!(rest.is_empty());
    }
}
