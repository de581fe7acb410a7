//! Ethernet frames of the AF_XDP path: the UDP datagram inside one, and a
//! reply framed for the way it came. Pure code on byte slices, so it is tested
//! (and fuzzed) without an interface.
//!
//! The XDP program hands over IPv4 without options and not fragmented, and
//! IPv6 without extension headers; this reader checks all of it again, since
//! a frame it cannot read is dropped here, not answered wrongly.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

const ETH_HEADER: usize = 14;
const IPV4_HEADER: usize = 20;
const IPV6_HEADER: usize = 40;
const UDP_HEADER: usize = 8;
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const PROTO_UDP: u8 = 17;
/// TTL and hop limit of replies, as Linux's default.
const HOP_LIMIT: u8 = 64;
/// IPv4 "don't fragment": a reply never needs fragmenting, it is truncated.
const IPV4_DF: u16 = 0x4000;
const DNS_HEADER: usize = 12;
const DNS_TC: u8 = 0x02;

/// Why a frame was not read as a UDP datagram to answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unusual {
    /// Shorter than the headers it announces.
    Short,
    /// Not IPv4 or IPv6 (a VLAN tag, say).
    NotIp,
    /// IPv4 options or IPv6 extension headers.
    IpOptions,
    /// A fragment.
    Fragment,
    /// Not UDP.
    NotUdp,
    /// Lengths in the IP and UDP headers that disagree with each other.
    BadLength,
}

/// Both ends of a datagram, as a reply needs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flow {
    /// The query's destination, which is the reply's source.
    pub local_mac: [u8; 6],
    pub peer_mac: [u8; 6],
    pub local: SocketAddr,
    pub peer: SocketAddr,
}

/// A UDP datagram read from a frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Datagram {
    pub flow: Flow,
    /// Where the UDP payload lies in the frame.
    pub payload: std::ops::Range<usize>,
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    let s = b.get(at..at.checked_add(2)?)?;
    Some(u16::from_be_bytes([*s.first()?, *s.get(1)?]))
}

fn array<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at.checked_add(N)?)?.try_into().ok()
}

/// Reads the UDP datagram in an Ethernet frame.
pub fn parse(frame: &[u8]) -> Result<Datagram, Unusual> {
    let peer_mac: [u8; 6] = array(frame, 6).ok_or(Unusual::Short)?;
    let local_mac: [u8; 6] = array(frame, 0).ok_or(Unusual::Short)?;
    let ethertype = be16(frame, 12).ok_or(Unusual::Short)?;
    let ip = frame.get(ETH_HEADER..).ok_or(Unusual::Short)?;
    let (src, dst, udp_at, ip_payload_len) = match ethertype {
        ETHERTYPE_IPV4 => {
            let head: [u8; IPV4_HEADER] = array(ip, 0).ok_or(Unusual::Short)?;
            if head[0] >> 4 != 4 {
                return Err(Unusual::NotIp);
            }
            if head[0] & 0x0f != 5 {
                return Err(Unusual::IpOptions);
            }
            if u16::from_be_bytes([head[6], head[7]]) & 0x3fff != 0 {
                return Err(Unusual::Fragment);
            }
            if head[9] != PROTO_UDP {
                return Err(Unusual::NotUdp);
            }
            let total = usize::from(u16::from_be_bytes([head[2], head[3]]));
            let payload_len = total.checked_sub(IPV4_HEADER).ok_or(Unusual::BadLength)?;
            let src = Ipv4Addr::from([head[12], head[13], head[14], head[15]]);
            let dst = Ipv4Addr::from([head[16], head[17], head[18], head[19]]);
            (IpAddr::V4(src), IpAddr::V4(dst), IPV4_HEADER, payload_len)
        }
        ETHERTYPE_IPV6 => {
            let head: [u8; IPV6_HEADER] = array(ip, 0).ok_or(Unusual::Short)?;
            if head[0] >> 4 != 6 {
                return Err(Unusual::NotIp);
            }
            if head[6] != PROTO_UDP {
                return Err(Unusual::IpOptions);
            }
            let payload_len = usize::from(u16::from_be_bytes([head[4], head[5]]));
            let src: [u8; 16] = array(&head, 8).ok_or(Unusual::Short)?;
            let dst: [u8; 16] = array(&head, 24).ok_or(Unusual::Short)?;
            (
                IpAddr::V6(Ipv6Addr::from(src)),
                IpAddr::V6(Ipv6Addr::from(dst)),
                IPV6_HEADER,
                payload_len,
            )
        }
        _ => return Err(Unusual::NotIp),
    };
    let udp = ip.get(udp_at..).ok_or(Unusual::Short)?;
    let udp_head: [u8; UDP_HEADER] = array(udp, 0).ok_or(Unusual::Short)?;
    let sport = u16::from_be_bytes([udp_head[0], udp_head[1]]);
    let dport = u16::from_be_bytes([udp_head[2], udp_head[3]]);
    let udp_len = usize::from(u16::from_be_bytes([udp_head[4], udp_head[5]]));
    // Ethernet pads short frames: the IP length, not the frame's, is the
    // datagram's; UDP's must agree with it.
    if udp_len != ip_payload_len || udp_len < UDP_HEADER {
        return Err(Unusual::BadLength);
    }
    if udp.len() < udp_len {
        return Err(Unusual::Short);
    }
    let start = ETH_HEADER
        .checked_add(udp_at)
        .and_then(|s| s.checked_add(UDP_HEADER))
        .ok_or(Unusual::Short)?;
    let end = ETH_HEADER
        .checked_add(udp_at)
        .and_then(|s| s.checked_add(udp_len))
        .ok_or(Unusual::Short)?;
    Ok(Datagram {
        flow: Flow {
            local_mac,
            peer_mac,
            local: SocketAddr::new(dst, dport),
            peer: SocketAddr::new(src, sport),
        },
        payload: start..end,
    })
}

/// The octets of Ethernet, IP and UDP headers in front of a payload to `flow`.
pub fn header_len(flow: &Flow) -> usize {
    let ip = if flow.peer.is_ipv4() {
        IPV4_HEADER
    } else {
        IPV6_HEADER
    };
    ETH_HEADER.saturating_add(ip).saturating_add(UDP_HEADER)
}

/// The largest payload a reply to `flow` may carry in frames of `mtu`
/// octets of IP (the interface's MTU).
pub fn max_payload(flow: &Flow, mtu: usize) -> usize {
    mtu.saturating_sub(header_len(flow).saturating_sub(ETH_HEADER))
}

/// Writes a reply to `flow` carrying `payload` into `frame`; returns the
/// frame's length, or `None` when `frame` is too small or the payload too
/// long for a UDP datagram.
pub fn write_reply(flow: &Flow, payload: &[u8], frame: &mut [u8]) -> Option<usize> {
    let head = header_len(flow);
    let total = head.checked_add(payload.len())?;
    let udp_len = u16::try_from(payload.len().checked_add(UDP_HEADER)?).ok()?;
    let frame = frame.get_mut(..total)?;
    let (eth, rest) = frame.split_at_mut_checked(ETH_HEADER)?;
    eth.get_mut(0..6)?.copy_from_slice(&flow.peer_mac);
    eth.get_mut(6..12)?.copy_from_slice(&flow.local_mac);
    let (ip_len, ethertype) = match flow.peer.ip() {
        IpAddr::V4(_) => (IPV4_HEADER, ETHERTYPE_IPV4),
        IpAddr::V6(_) => (IPV6_HEADER, ETHERTYPE_IPV6),
    };
    eth.get_mut(12..14)?
        .copy_from_slice(&ethertype.to_be_bytes());
    let (ip, rest) = rest.split_at_mut_checked(ip_len)?;
    let (udp, body) = rest.split_at_mut_checked(UDP_HEADER)?;
    body.copy_from_slice(payload);
    udp.get_mut(0..2)?
        .copy_from_slice(&flow.local.port().to_be_bytes());
    udp.get_mut(2..4)?
        .copy_from_slice(&flow.peer.port().to_be_bytes());
    udp.get_mut(4..6)?.copy_from_slice(&udp_len.to_be_bytes());
    udp.get_mut(6..8)?.copy_from_slice(&[0, 0]);
    // The pseudo-header's sum (RFC 768, RFC 8200 §8.1), then the datagram's.
    let mut sum = Sum::default();
    match (flow.local.ip(), flow.peer.ip()) {
        (IpAddr::V4(src), IpAddr::V4(dst)) => {
            let total_len = u16::try_from(ip_len.checked_add(usize::from(udp_len))?).ok()?;
            let mut h = [0u8; IPV4_HEADER];
            h[0] = 0x45;
            [h[2], h[3]] = total_len.to_be_bytes();
            [h[6], h[7]] = IPV4_DF.to_be_bytes();
            h[8] = HOP_LIMIT;
            h[9] = PROTO_UDP;
            [h[12], h[13], h[14], h[15]] = src.octets();
            [h[16], h[17], h[18], h[19]] = dst.octets();
            let mut head_sum = Sum::default();
            head_sum.add(&h);
            [h[10], h[11]] = head_sum.finish().to_be_bytes();
            ip.copy_from_slice(&h);
            sum.add(&src.octets());
            sum.add(&dst.octets());
        }
        (IpAddr::V6(src), IpAddr::V6(dst)) => {
            let mut h = [0u8; IPV6_HEADER];
            h[0] = 0x60;
            [h[4], h[5]] = udp_len.to_be_bytes();
            h[6] = PROTO_UDP;
            h[7] = HOP_LIMIT;
            h.get_mut(8..24)?.copy_from_slice(&src.octets());
            h.get_mut(24..40)?.copy_from_slice(&dst.octets());
            ip.copy_from_slice(&h);
            sum.add(&src.octets());
            sum.add(&dst.octets());
        }
        // parse() never makes a flow of two families.
        _ => return None,
    }
    sum.add(&[0, PROTO_UDP]);
    sum.add(&udp_len.to_be_bytes());
    sum.add(udp);
    sum.add(body);
    // RFC 768: a computed zero is sent as all ones (zero means "none").
    let check = match sum.finish() {
        0 => 0xffff,
        c => c,
    };
    udp.get_mut(6..8)?.copy_from_slice(&check.to_be_bytes());
    Some(total)
}

/// The Internet checksum (RFC 1071), fed in pieces of even length but the last.
#[derive(Default)]
struct Sum {
    acc: u64,
}

impl Sum {
    /// Adds 32-bit words: congruent to adding their 16-bit halves modulo
    /// 0xffff (2^16 ≡ 1), which is all the folding in `finish` keeps, at
    /// half the additions.
    fn add(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(4);
        for w in &mut words {
            if let [a, b, c, d] = w {
                self.acc = self
                    .acc
                    .wrapping_add(u64::from(u32::from_be_bytes([*a, *b, *c, *d])));
            }
        }
        match words.remainder() {
            [a, b, c] => {
                self.acc = self
                    .acc
                    .wrapping_add(u64::from(u32::from_be_bytes([*a, *b, *c, 0])));
            }
            [a, b] => {
                self.acc = self
                    .acc
                    .wrapping_add(u64::from(u16::from_be_bytes([*a, *b])));
            }
            [a] => {
                self.acc = self
                    .acc
                    .wrapping_add(u64::from(u16::from_be_bytes([*a, 0])));
            }
            _ => {}
        }
    }

    fn finish(&self) -> u16 {
        let mut acc = self.acc;
        while acc > 0xffff {
            acc = (acc & 0xffff).wrapping_add(acc >> 16);
        }
        let folded = u16::try_from(acc).unwrap_or(0xffff);
        !folded
    }
}

/// Cuts a DNS response in `msg` to its header and question with TC set
/// (RFC 1035 §4.2.1, RFC 7766): for an answer that does not fit the link.
/// A message whose question cannot be read is cut to its header.
pub fn truncate_response(msg: &mut Vec<u8>) {
    let keep = question_end(msg).unwrap_or(DNS_HEADER);
    msg.truncate(keep);
    if let Some(flags) = msg.get_mut(2) {
        *flags |= DNS_TC;
    }
    let qdcount: u8 = u8::from(keep > DNS_HEADER);
    for (i, b) in msg.iter_mut().enumerate().take(DNS_HEADER).skip(4) {
        *b = if i == 5 { qdcount } else { 0 };
    }
}

/// Where the first question of a message ends.
fn question_end(msg: &[u8]) -> Option<usize> {
    if be16(msg, 4)? == 0 {
        return None;
    }
    let mut at = DNS_HEADER;
    loop {
        let len = *msg.get(at)?;
        if len == 0 {
            at = at.checked_add(1)?;
            break;
        }
        // A question name is written in full: no compression pointers.
        if len & 0xc0 != 0 {
            return None;
        }
        at = at.checked_add(1)?.checked_add(usize::from(len))?;
    }
    let end = at.checked_add(4)?;
    (end <= msg.len()).then_some(end)
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    clippy::arithmetic_side_effects
)]
mod tests {
    use super::*;

    fn flow(peer: &str, local: &str) -> Flow {
        Flow {
            local_mac: [2, 0, 0, 0, 0, 1],
            peer_mac: [2, 0, 0, 0, 0, 2],
            local: local.parse().unwrap(),
            peer: peer.parse().unwrap(),
        }
    }

    /// A query frame as the peer would send it: the reply to the reverse flow.
    fn query_frame(f: &Flow, payload: &[u8]) -> Vec<u8> {
        let reverse = Flow {
            local_mac: f.peer_mac,
            peer_mac: f.local_mac,
            local: f.peer,
            peer: f.local,
        };
        let mut frame = vec![0u8; 2048];
        let n = write_reply(&reverse, payload, &mut frame).unwrap();
        frame.truncate(n);
        frame
    }

    #[test]
    fn a_reply_reads_back_as_the_flow_reversed_with_its_payload() {
        for (peer, local) in [
            ("192.0.2.7:40000", "198.51.100.1:53"),
            ("[2001:db8::7]:40000", "[2001:db8::1]:53"),
        ] {
            let f = flow(peer, local);
            let frame = query_frame(&f, b"hello, odd length");
            let d = parse(&frame).unwrap();
            assert_eq!(d.flow, f);
            assert_eq!(&frame[d.payload.clone()], b"hello, odd length");
        }
    }

    /// Checked the way a receiver does: the sum over pseudo-header and
    /// datagram, checksum included, folds to all ones.
    #[test]
    fn checksums_verify_as_a_receiver_checks_them() {
        for (peer, local) in [
            ("192.0.2.7:40000", "198.51.100.1:53"),
            ("[2001:db8::7]:40000", "[2001:db8::1]:53"),
        ] {
            let f = flow(peer, local);
            for len in [0usize, 1, 12, 13, 511, 1232] {
                let payload: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect::<Vec<u8>>();
                let mut frame = vec![0u8; 2048];
                let n = write_reply(&f, &payload, &mut frame).unwrap();
                let frame = &frame[..n];
                let (ip_len, src, dst) = if f.peer.is_ipv4() {
                    let ip = &frame[14..34];
                    let mut s = Sum::default();
                    s.add(ip);
                    assert_eq!(s.finish(), 0, "IPv4 header checksum");
                    (20, &frame[26..30], &frame[30..34])
                } else {
                    (40, &frame[22..38], &frame[38..54])
                };
                let udp = &frame[14 + ip_len..];
                let mut s = Sum::default();
                s.add(src);
                s.add(dst);
                s.add(&[0, 17]);
                s.add(&u16::try_from(udp.len()).unwrap().to_be_bytes());
                s.add(udp);
                assert_eq!(s.finish(), 0, "UDP checksum, {peer} len {len}");
            }
        }
    }

    /// RFC 1071 §3's example, and the same octets fed in pieces.
    #[test]
    fn the_checksum_is_rfc_1071s() {
        let octets = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        let mut whole = Sum::default();
        whole.add(&octets);
        assert_eq!(whole.finish(), !0xddf2);
        let mut pieces = Sum::default();
        pieces.add(&octets[..2]);
        pieces.add(&octets[2..8]);
        assert_eq!(pieces.finish(), !0xddf2);
        let mut odd = Sum::default();
        odd.add(&[0x01, 0x02, 0x03]);
        assert_eq!(odd.finish(), !0x0402);
    }

    #[test]
    fn ethernet_padding_after_the_datagram_is_not_payload() {
        let f = flow("192.0.2.7:40000", "198.51.100.1:53");
        let mut frame = query_frame(&f, b"ab");
        frame.resize(60, 0);
        let d = parse(&frame).unwrap();
        assert_eq!(&frame[d.payload], b"ab");
    }

    #[test]
    fn unusual_frames_are_named_not_read() {
        let f = flow("192.0.2.7:40000", "198.51.100.1:53");
        let good = query_frame(&f, b"query");
        for cut in 0..good.len() {
            assert!(parse(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut vlan = good.clone();
        vlan[12..14].copy_from_slice(&0x8100u16.to_be_bytes());
        assert_eq!(parse(&vlan), Err(Unusual::NotIp));
        let mut options = good.clone();
        options[14] = 0x46;
        assert_eq!(parse(&options), Err(Unusual::IpOptions));
        let mut fragment = good.clone();
        fragment[14 + 6] |= 0x20;
        assert_eq!(parse(&fragment), Err(Unusual::Fragment));
        let mut offset = good.clone();
        offset[14 + 7] = 1;
        assert_eq!(parse(&offset), Err(Unusual::Fragment));
        let mut tcp = good.clone();
        tcp[14 + 9] = 6;
        assert_eq!(parse(&tcp), Err(Unusual::NotUdp));
        let mut udp_len = good.clone();
        udp_len[14 + 20 + 5] = udp_len[14 + 20 + 5].wrapping_add(1);
        assert_eq!(parse(&udp_len), Err(Unusual::BadLength));

        let f6 = flow("[2001:db8::7]:40000", "[2001:db8::1]:53");
        let mut ext = query_frame(&f6, b"query");
        ext[14 + 6] = 44;
        assert_eq!(parse(&ext), Err(Unusual::IpOptions));
    }

    #[test]
    fn a_reply_larger_than_its_frame_is_refused() {
        let f = flow("192.0.2.7:40000", "198.51.100.1:53");
        let mut frame = vec![0u8; 100];
        assert_eq!(write_reply(&f, &[0; 58], &mut frame), Some(100));
        assert_eq!(write_reply(&f, &[0; 59], &mut frame), None);
        assert_eq!(max_payload(&f, 1500), 1472);
        let f6 = flow("[2001:db8::7]:40000", "[2001:db8::1]:53");
        assert_eq!(max_payload(&f6, 1500), 1452);
    }

    #[test]
    fn truncation_keeps_the_question_and_sets_tc() {
        // ID 0x1234, QR|AA, 1 question, 2 answers, 0, 1 additional.
        let mut msg = vec![0x12, 0x34, 0x84, 0x00, 0, 1, 0, 2, 0, 0, 0, 1];
        msg.extend_from_slice(b"\x03www\x07example\x00\x00\x01\x00\x01");
        let question_end = msg.len();
        msg.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1]);
        truncate_response(&mut msg);
        assert_eq!(msg.len(), question_end);
        assert_eq!(&msg[..12], &[0x12, 0x34, 0x86, 0, 0, 1, 0, 0, 0, 0, 0, 0]);

        let mut garbage = vec![0x12, 0x34, 0x84, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 1];
        truncate_response(&mut garbage);
        assert_eq!(garbage, vec![0x12, 0x34, 0x86, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    }
}
