//! Cache answers kept as they go on the wire: a hit is then a copy and a
//! few patches (the ID, RD and CD, the question's case, the TTLs counted
//! down, the client's OPT) instead of unpacking RRsets and compressing
//! names again. dnsdist's packet cache does this in front of a resolver;
//! here the rendering lives in the cache entry it was made from, so
//! whatever replaces, evicts or flushes the entry takes it along, and it
//! can never say what the cache no longer holds.
//!
//! Only answers made from one entry are kept so (the data asked for, a
//! NODATA, an NXDOMAIN): an answer through a CNAME chain depends on several
//! entries and is written the long way. An entry is rendered when a second
//! client is answered from it: most entries a cold cache fills are never
//! asked for by a client twice.
//!
//! The bytes a hit writes are exactly those [`write_response`] writes for
//! the same question and [`Cache::answer`]'s resolution (a test holds them
//! to it): same header, same compression, same TTLs.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bulwark_proto::message::{
    append_opt, EdnsOption, MessageBuilder, MessageView, OptRecord, DEFAULT_UDP_PAYLOAD, HEADER_LEN,
};
use bulwark_proto::{Class, Name, Opcode, Rcode, Rtype};

use super::{Cache, Data, Entry, KeyBuf, Trust, NXDOMAIN};
use crate::packed::PackedSet;
use crate::response::{write_response, Resolution, Security};
use crate::rrset::RrSet;
use crate::Millis;

/// The RD bit in the header's third octet, AD and CD in its fourth.
const RD: u8 = 0x01;
const CD: u8 = 0x10;
const AD: u8 = 0x20;
/// From the end of a record's TTL to its data: the RDLENGTH.
const TTL_TO_RDATA: usize = 6;
/// The rcode's bits in the header's fourth octet.
const RCODE_BITS: u8 = 0x0f;

/// An entry's answer written for the question in lowercase, with ID 0, RD
/// and CD clear and no OPT, and where its TTLs are. One allocation, so that
/// a hit reads it in as few cache lines as it can: the number of TTL slots
/// (two octets), each slot (where the TTL is: two octets; the most it may
/// say: four), then the message. A negative answer's other authority
/// records keep their own TTL when it is lower than the entry's (as
/// [`Resolution::negative`] writes them): that is what a slot's most is.
#[derive(Debug)]
pub struct Rendered(Box<[u8]>);

#[derive(Debug, Clone, Copy)]
struct TtlSlot {
    at: u16,
    cap: u32,
}

const SLOT_LEN: usize = 6;

impl Rendered {
    fn new(slots: &[TtlSlot], wire: &[u8]) -> Option<Rendered> {
        let count = u16::try_from(slots.len()).ok()?;
        let mut buf = Vec::with_capacity(
            slots
                .len()
                .checked_mul(SLOT_LEN)?
                .checked_add(wire.len())?
                .checked_add(2)?,
        );
        buf.extend_from_slice(&count.to_be_bytes());
        for slot in slots {
            buf.extend_from_slice(&slot.at.to_be_bytes());
            buf.extend_from_slice(&slot.cap.to_be_bytes());
        }
        buf.extend_from_slice(wire);
        Some(Rendered(buf.into_boxed_slice()))
    }

    /// The TTL slots and the message.
    fn parts(&self) -> Option<(&[u8], &[u8])> {
        let (count, rest) = self.0.split_first_chunk::<2>()?;
        let slots = usize::from(u16::from_be_bytes(*count)).checked_mul(SLOT_LEN)?;
        rest.split_at_checked(slots)
    }

    /// What it costs the cache: the allocation and its header.
    pub fn weight(&self) -> usize {
        self.0
            .len()
            .saturating_add(crate::packed::ALLOCATION_OVERHEAD)
    }

    /// Writes the answer to `query` into `out`, returning its rcode: `None`
    /// (and `out` left to be written again) when it does not fit `limit`
    /// with the OPT, which the long way then truncates.
    fn write(
        &self,
        query: &MessageView<'_>,
        qname: &[u8],
        ttl_left: u32,
        limit: usize,
        opt: Option<&OptRecord<'_>>,
        out: &mut Vec<u8>,
    ) -> Option<Rcode> {
        let (slots, wire) = self.parts()?;
        let needed = wire.len().checked_add(opt.map_or(0, OptRecord::wire_len))?;
        if needed > limit {
            return None;
        }
        out.clear();
        out.extend_from_slice(wire);
        let h = query.header();
        out.get_mut(..2)?.copy_from_slice(&h.id.to_be_bytes());
        if h.flags.rd {
            *out.get_mut(2)? |= RD;
        }
        if h.flags.cd {
            *out.get_mut(3)? |= CD;
        }
        let name_end = HEADER_LEN.checked_add(qname.len())?;
        out.get_mut(HEADER_LEN..name_end)?.copy_from_slice(qname);
        for slot in slots.chunks_exact(SLOT_LEN) {
            let (at, cap) = slot.split_first_chunk::<2>()?;
            let cap = u32::from_be_bytes(cap.try_into().ok()?);
            let at = usize::from(u16::from_be_bytes(*at));
            let ttl = cap.min(ttl_left).to_be_bytes();
            out.get_mut(at..at.checked_add(4)?)?.copy_from_slice(&ttl);
        }
        // Only NOERROR and NXDOMAIN are kept: the header holds all of it.
        let rcode = Rcode::from_parts(wire.get(3)? & RCODE_BITS, 0);
        if let Some(opt) = opt {
            append_opt(out, limit, opt, rcode).ok()?;
        }
        Some(rcode)
    }
}

/// What a hit was, for the edge's counters, rate limiting and prefetch.
#[derive(Debug, Clone)]
pub struct CachedReply {
    pub rcode: Rcode,
    /// NODATA: the name exists, the type does not.
    pub nodata: bool,
    /// For NXDOMAIN: the zone the SOA came from (rate limiting counts
    /// random names under one zone together).
    pub zone: Option<Name>,
    /// The entry is in the last tenth of its TTL: have it refreshed.
    pub refresh_due: bool,
}

impl Cache {
    /// Answers `query` into `out` from a rendered entry when the cache
    /// answers it from one entry, fresh: the same bytes [`Cache::answer`]
    /// and [`write_response`] would give, with `extra` options (the
    /// COOKIE) in the OPT when the query has EDNS. `None` when the answer
    /// must be written the long way (not held, a chain, too large, not yet
    /// asked twice); `out` is then to be written afresh.
    pub fn reply(
        &self,
        query: &MessageView<'_>,
        limit: usize,
        extra: &[EdnsOption<'_>],
        now: Millis,
        out: &mut Vec<u8>,
    ) -> Option<CachedReply> {
        let h = query.header();
        if h.opcode != Opcode::QUERY {
            return None;
        }
        let q = query.sole_question_wire()?;
        if q.qclass != Class::IN {
            return None;
        }
        let (key, entry) = self.direct_entry(q.qname, q.qtype, now)?;
        // Kept without signatures and proofs: a client that wants them
        // (DO) gets the answer written the long way; so does one of data
        // not validated or bogus (SERVFAIL, or the data for CD).
        let edns = query.edns();
        let dnssec_ok = edns.as_ref().is_some_and(|e| e.dnssec_ok);
        if (dnssec_ok && entry.data.has_dnssec())
            || matches!(entry.security, Security::Unchecked | Security::Bogus { .. })
        {
            return None;
        }
        let rendered = match entry.rendered.get() {
            Some(r) => r.as_ref()?,
            None => {
                if !entry.answered.swap(true, Ordering::Relaxed) {
                    return None;
                }
                let made = render(&entry, q.qname, q.qtype, now);
                self.keep_rendered(&key, &entry, made, now);
                entry.rendered.get()?.as_ref()?
            }
        };
        let opt = edns.as_ref().map(|e| OptRecord {
            udp_payload_size: DEFAULT_UDP_PAYLOAD,
            dnssec_ok: e.dnssec_ok,
            options: extra,
            ..OptRecord::default()
        });
        let ttl_left = ttl_left(&entry, now);
        let rcode = rendered.write(query, q.qname, ttl_left, limit, opt.as_ref(), out)?;
        // RFC 6840 §5.7: AD for secure data, to a client that set DO or AD.
        if entry.security == Security::Secure && (dnssec_ok || h.flags.ad) {
            *out.get_mut(3)? |= AD;
        }
        self.hits.fetch_add(1, Ordering::Relaxed);
        let zone = match &entry.data {
            Data::NxDomain(n) => n.soa.as_ref().and_then(PackedSet::owner),
            _ => None,
        };
        Some(CachedReply {
            rcode,
            nodata: matches!(entry.data, Data::NoData(_)),
            zone,
            refresh_due: entry.refresh_due(now),
        })
    }

    /// The one fresh entry that answers `qname`/`qtype` whole, found as
    /// [`Cache::answer`] looks: the type asked for, then NXDOMAIN. `None`
    /// where that answer would go further (a CNAME) or give nothing (glue).
    fn direct_entry(
        &self,
        qname: &[u8],
        qtype: Rtype,
        now: Millis,
    ) -> Option<(KeyBuf, Arc<Entry>)> {
        for rtype in [qtype, NXDOMAIN] {
            let key = KeyBuf::from_wire(qname, rtype);
            let entry = {
                let shard = self.shard(key.as_slice());
                shard
                    .map
                    .get(key.as_slice())
                    .filter(|e| e.expires > now)
                    .map(Arc::clone)
            };
            let Some(entry) = entry else { continue };
            return match &entry.data {
                _ if entry.trust < Trust::NonAuthAnswer => None,
                Data::Positive(_) | Data::NoData(_) if rtype == qtype => Some((key, entry)),
                Data::NxDomain(_) if rtype == NXDOMAIN => Some((key, entry)),
                // A type-0 question finds the NXDOMAIN entry first; the
                // NXDOMAIN turn answers it.
                _ => continue,
            };
        }
        None
    }

    /// Keeps `made` in `entry` if the entry is still the one held under
    /// `key` (else it is on its way out, and its bytes were already given
    /// back), and counts its bytes.
    fn keep_rendered(&self, key: &KeyBuf, entry: &Arc<Entry>, made: Option<Rendered>, now: Millis) {
        let mut shard = self.shard(key.as_slice());
        let held = shard
            .map
            .get(key.as_slice())
            .is_some_and(|e| Arc::ptr_eq(e, entry));
        let weight = made.as_ref().map_or(0, Rendered::weight);
        if !held || entry.rendered.set(made).is_err() {
            return;
        }
        shard.bytes = shard.bytes.saturating_add(weight);
        // Rendered answers count towards the bound like the rest; eviction
        // makes room as after an insert.
        let evicted = super::evict(&mut shard, self.shard_bytes, now);
        if evicted > 0 {
            self.evictions.fetch_add(evicted, Ordering::Relaxed);
        }
    }
}

fn ttl_left(entry: &Entry, now: Millis) -> u32 {
    u32::try_from(entry.expires.saturating_sub(now) / 1000).unwrap_or(u32::MAX)
}

/// Writes `entry`'s answer to `qname`/`qtype` as [`Cache::answer`] would
/// build it, and notes where its TTLs are. `None` when it cannot be kept
/// so: it would not be the same bytes.
fn render(entry: &Entry, qname: &[u8], qtype: Rtype, now: Millis) -> Option<Rendered> {
    let ttl = ttl_left(entry, now);
    let mut caps: Vec<u32> = Vec::new();
    let record_caps = |caps: &mut Vec<u32>, set: &RrSet, cap: u32| {
        caps.extend(std::iter::repeat_n(cap, set.rdata.len()));
    };
    let resolution = match &entry.data {
        Data::Positive(set) => {
            let mut set = set.unpack()?;
            set.ttl = ttl;
            record_caps(&mut caps, &set, u32::MAX);
            Resolution::answer(vec![set])
        }
        Data::NoData(negative) | Data::NxDomain(negative) => {
            let rcode = match entry.data {
                Data::NxDomain(_) => Rcode::NXDOMAIN,
                _ => Rcode::NOERROR,
            };
            let (soa, extra) = negative.unpack();
            if let Some(soa) = &soa {
                record_caps(&mut caps, soa, u32::MAX);
            }
            // Written for a client without DO: no proofs.
            for set in extra
                .iter()
                .filter(|s| !matches!(s.rtype, Rtype::NSEC | Rtype::NSEC3 | Rtype::RRSIG))
            {
                record_caps(&mut caps, set, set.ttl);
            }
            Resolution::negative(rcode, Vec::new(), &soa, &extra, ttl)
        }
    };
    let lower = Name::from_wire(qname).ok()?.to_lowercase();
    let mut query = Vec::new();
    let mut b = MessageBuilder::new(&mut query, usize::from(u16::MAX));
    b.push_question(&lower, qtype, Class::IN).ok()?;
    b.finish(None).ok()?;
    let view = MessageView::parse(&query).ok()?;
    let mut wire = Vec::new();
    let (rcode, truncated) =
        write_response(&view, &resolution, usize::from(u16::MAX), &[], &mut wire)?;
    if truncated || !matches!(rcode, Rcode::NOERROR | Rcode::NXDOMAIN) {
        return None;
    }
    let written = MessageView::parse(&wire).ok()?;
    let records: Vec<_> = written.answers().chain(written.authority()).collect();
    if records.len() != caps.len() || written.header().arcount != 0 {
        return None;
    }
    let ttls = records
        .iter()
        .zip(caps)
        .map(|(r, cap)| {
            let at = r.rdata_offset.checked_sub(TTL_TO_RDATA)?;
            Some(TtlSlot {
                at: u16::try_from(at).ok()?,
                cap,
            })
        })
        .collect::<Option<Vec<TtlSlot>>>()?;
    Rendered::new(&ttls, &wire)
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )]

    use bulwark_proto::rdata::{Rdata, Soa};
    use proptest::prelude::*;

    use super::*;
    use crate::config::ResolverConfig;

    fn name(s: &str) -> Name {
        s.parse().unwrap()
    }

    fn soa() -> RrSet {
        let mut set = RrSet::new(name("Example.COM."), Rtype::SOA, 3600);
        let rdata = Rdata::Soa(Box::new(Soa {
            mname: name("ns1.example.com."),
            rname: name("hostmaster.example.com."),
            serial: 1,
            refresh: 7200,
            retry: 900,
            expire: 86400,
            minimum: 600,
        }));
        set.push(rdata.to_wire(), 3600);
        set
    }

    /// A cache holding each kind of answer, all stored at time 0: one
    /// address (owner in mixed case), 40 addresses (too big for 512
    /// octets), a NODATA with an NSEC of a lower TTL, an NXDOMAIN, and a
    /// CNAME (a chain: never rendered).
    fn cache() -> Cache {
        let cache = Cache::new(&ResolverConfig::default());
        let mut one = RrSet::new(name("WWW.example.com."), Rtype::A, 300);
        one.push(vec![192, 0, 2, 1], 300);
        cache.insert_rrset(one, Trust::AuthAnswer, 0);
        let mut many = RrSet::new(name("many.example.com."), Rtype::A, 3000);
        for i in 0..40 {
            many.push(vec![198, 51, 100, i], 3000);
        }
        cache.insert_rrset(many, Trust::AuthAnswer, 0);
        let mut nsec = RrSet::new(name("www.example.com."), Rtype::NSEC, 100);
        // The next name, then a type bitmap of window 0 with A.
        let mut nsec_rdata = name("zzz.example.com.").as_wire().to_vec();
        nsec_rdata.extend_from_slice(&[0, 1, 0x40]);
        nsec.push(nsec_rdata, 100);
        cache.insert_negative(
            &name("www.example.com."),
            Some(Rtype::AAAA),
            Some(soa()),
            vec![nsec],
            Trust::AuthAuthority,
            0,
        );
        cache.insert_negative(
            &name("nowhere.example.com."),
            None,
            Some(soa()),
            Vec::new(),
            Trust::AuthAuthority,
            0,
        );
        let mut alias = RrSet::new(name("alias.example.com."), Rtype::CNAME, 300);
        alias.push(Rdata::Cname(name("www.example.com.")).to_wire(), 300);
        cache.insert_rrset(alias, Trust::AuthAnswer, 0);
        let mut signed = RrSet::new(name("signed.example.com."), Rtype::A, 300);
        signed.push(vec![192, 0, 2, 7], 300);
        signed.push_sig(vec![
            0, 1, 13, 3, 0, 0, 1, 44, 0, 0, 0, 9, 0, 0, 0, 1, 0, 7, 0, 9,
        ]);
        cache.insert_rrset(signed, Trust::AuthAnswer, 0);
        cache
    }

    /// The questions, whether their answer is one entry, and whether it
    /// holds signatures or proofs (then rendered only for a client without
    /// DO).
    const QUESTIONS: [(&str, Rtype, bool, bool); 7] = [
        ("www.example.com.", Rtype::A, true, false),
        ("many.example.com.", Rtype::A, true, false),
        ("www.example.com.", Rtype::AAAA, true, true),
        ("nowhere.example.com.", Rtype::MX, true, false),
        ("nowhere.example.com.", Rtype::A, true, false),
        ("alias.example.com.", Rtype::A, false, false),
        ("signed.example.com.", Rtype::A, true, true),
    ];

    /// `qname` with the letters whose bit is set in `case` in uppercase.
    fn recased(qname: &str, case: u64) -> String {
        qname
            .chars()
            .enumerate()
            .map(|(i, c)| {
                if case >> (i % 64) & 1 == 1 {
                    c.to_ascii_uppercase()
                } else {
                    c
                }
            })
            .collect()
    }

    struct Asked {
        qname: String,
        qtype: Rtype,
        id: u16,
        rd: bool,
        cd: bool,
        edns: Option<bool>,
    }

    fn query(a: &Asked) -> Vec<u8> {
        let mut out = Vec::new();
        let mut b = MessageBuilder::new(&mut out, 512);
        b.header_mut().id = a.id;
        b.header_mut().flags.rd = a.rd;
        b.header_mut().flags.cd = a.cd;
        b.push_question(&name(&a.qname), a.qtype, Class::IN)
            .unwrap();
        let opt = a.edns.map(|dnssec_ok| OptRecord {
            dnssec_ok,
            ..OptRecord::default()
        });
        let len = b.finish(opt.as_ref()).unwrap();
        out.truncate(len);
        out
    }

    proptest! {
        /// Whatever the question's case, flags, EDNS, cookie, size limit
        /// and the time passed, a rendered hit is the very bytes the long
        /// way writes, and it is used wherever the answer is one entry and
        /// fits.
        #[test]
        fn a_rendered_hit_is_the_answer_the_long_way_writes(
            which in 0..QUESTIONS.len(),
            case in any::<u64>(),
            id in any::<u16>(),
            rd in any::<bool>(),
            cd in any::<bool>(),
            edns in proptest::option::of(any::<bool>()),
            cookie in any::<bool>(),
            limit in prop::sample::select(vec![512usize, 1232, 4096, 65535]),
            rendered_at in 0u64..50_000,
            later in 0u64..250_000,
        ) {
            let cache = cache();
            let (qname, qtype, one_entry, signed) = QUESTIONS[which];
            let one_entry = one_entry && !(signed && edns == Some(true));
            let asked = Asked { qname: recased(qname, case), qtype, id, rd, cd, edns };
            let wire = query(&asked);
            let view = MessageView::parse(&wire).unwrap();
            let server = [7u8; 16];
            let extra: Vec<EdnsOption<'_>> = cookie
                .then_some(EdnsOption::Cookie { client: [9; 8], server: Some(&server[..]) })
                .into_iter()
                .collect();
            let mut out = Vec::new();
            // The first client's answer is written the long way, the
            // second's renders the entry.
            prop_assert!(cache.reply(&view, 65535, &[], rendered_at, &mut out).is_none());
            let second = cache.reply(&view, 65535, &[], rendered_at, &mut out);
            prop_assert_eq!(second.is_some(), one_entry);

            let now = rendered_at + later;
            let fast = cache.reply(&view, limit, &extra, now, &mut out).map(|r| (r, out.clone()));
            let resolution = cache.answer(&name(qname), qtype, now, false);
            let Some(resolution) = resolution else {
                prop_assert!(fast.is_none());
                return Ok(());
            };
            let mut slow = Vec::new();
            let (rcode, truncated) =
                write_response(&view, &resolution, limit, &extra, &mut slow).unwrap();
            match fast {
                Some((reply, bytes)) => {
                    prop_assert_eq!(&bytes, &slow);
                    prop_assert_eq!(reply.rcode, rcode);
                    prop_assert!(!truncated);
                }
                None => prop_assert!(!one_entry || truncated),
            }
        }
    }

    /// A replaced entry takes its rendering with it: the next hit says what
    /// the cache holds now.
    #[test]
    fn a_replaced_entry_is_never_answered_from_its_old_rendering() {
        let cache = cache();
        let wire = query(&Asked {
            qname: "www.example.com.".into(),
            qtype: Rtype::A,
            id: 1,
            rd: true,
            cd: false,
            edns: None,
        });
        let view = MessageView::parse(&wire).unwrap();
        let mut out = Vec::new();
        cache.reply(&view, 512, &[], 1000, &mut out);
        assert!(cache.reply(&view, 512, &[], 1000, &mut out).is_some());
        let before = cache.stats().bytes;
        let mut new = RrSet::new(name("www.example.com."), Rtype::A, 300);
        new.push(vec![203, 0, 113, 9], 300);
        cache.insert_rrset(new, Trust::AuthAnswer, 2000);
        // The rendering's bytes went with the old entry.
        assert!(cache.stats().bytes < before);
        assert!(cache.reply(&view, 512, &[], 2000, &mut out).is_none());
        let r = cache.reply(&view, 512, &[], 2000, &mut out).unwrap();
        assert_eq!(r.rcode, Rcode::NOERROR);
        assert_eq!(&out[out.len() - 4..], &[203, 0, 113, 9]);
        assert_eq!(cache.flush_name(&name("www.example.com.")), 2);
        assert!(cache.reply(&view, 512, &[], 2000, &mut out).is_none());
    }
}
