//! An RRset as the resolver holds it: the owner, the type, the TTL as
//! received, and each record's data in uncompressed wire form, ready to copy
//! into an answer.

use bulwark_proto::message::RecordView;
use bulwark_proto::rdata::Rdata;
use bulwark_proto::wire::Reader;
use bulwark_proto::{Class, Name, Rtype};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RrSet {
    /// As the server wrote it (case kept for answers; cache keys lowercase).
    pub owner: Name,
    pub rtype: Rtype,
    pub class: Class,
    /// The TTL the server gave (RFC 2181 §5.2: the lowest of the set's).
    pub ttl: u32,
    /// Each record's data, uncompressed (RFC 3597 §4: names in known types
    /// are expanded; unknown types are kept as they came).
    pub rdata: Vec<Vec<u8>>,
    /// The RRSIG records' data that cover the set (RFC 4035 §3.1.1),
    /// as received: kept with the set so that a DNSSEC-aware client gets
    /// them and the validator can check them.
    pub sigs: Vec<Vec<u8>>,
}

impl RrSet {
    pub fn new(owner: Name, rtype: Rtype, ttl: u32) -> RrSet {
        RrSet {
            owner,
            rtype,
            class: Class::IN,
            ttl,
            rdata: Vec::new(),
            sigs: Vec::new(),
        }
    }

    /// Adds one record's data, once (RFC 2181 §5: an RRset holds no
    /// duplicates), lowering the TTL to the record's when it is lower.
    pub fn push(&mut self, data: Vec<u8>, ttl: u32) {
        self.ttl = self.ttl.min(ttl);
        if !self.rdata.contains(&data) {
            self.rdata.push(data);
        }
    }

    /// Adds one covering RRSIG's data, once.
    pub fn push_sig(&mut self, data: Vec<u8>) {
        if !self.sigs.contains(&data) {
            self.sigs.push(data);
        }
    }

    /// The covering signatures, typed, skipping any that do not parse.
    pub fn rrsigs(&self) -> Vec<bulwark_proto::rdata::Rrsig> {
        self.sigs
            .iter()
            .filter_map(
                |d| match Rdata::read(Rtype::RRSIG, &mut Reader::new(d), d.len()).ok()? {
                    Rdata::Rrsig(sig) => Some(sig),
                    _ => None,
                },
            )
            .collect()
    }

    /// The data as typed records, skipping any that do not parse.
    pub fn typed(&self) -> impl Iterator<Item = Rdata> + '_ {
        self.rdata.iter().filter_map(move |d| {
            let len = d.len();
            Rdata::read(self.rtype, &mut Reader::new(d), len).ok()
        })
    }

    /// The target names of NS, CNAME and DNAME data.
    pub fn target_names(&self) -> Vec<Name> {
        self.typed()
            .filter_map(|r| match r {
                Rdata::Ns(n) | Rdata::Cname(n) | Rdata::Dname(n) => Some(n),
                _ => None,
            })
            .collect()
    }

    /// The addresses of A and AAAA data.
    pub fn addresses(&self) -> Vec<std::net::IpAddr> {
        self.typed()
            .filter_map(|r| match r {
                Rdata::A(a) => Some(std::net::IpAddr::V4(a)),
                Rdata::Aaaa(a) => Some(std::net::IpAddr::V6(a)),
                _ => None,
            })
            .collect()
    }

    /// Octets this set takes, roughly, for the cache's memory bound.
    pub fn weight(&self) -> usize {
        let data: usize = self
            .rdata
            .iter()
            .chain(&self.sigs)
            .map(|d| d.len().saturating_add(16))
            .sum();
        data.saturating_add(self.owner.wire_len())
            .saturating_add(64)
    }
}

/// One record of a received message with its data expanded: compressed names
/// inside known types are read against the whole message (RFC 1035 §4.1.4).
pub fn expanded_rdata(message: &[u8], record: &RecordView<'_>) -> Option<Vec<u8>> {
    let mut r = Reader::at(message, record.rdata_offset);
    let typed = Rdata::read(record.rtype, &mut r, record.rdata.len()).ok()?;
    Some(typed.to_wire())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn duplicates_are_kept_once_and_the_ttl_is_the_lowest() {
        let mut set = RrSet::new("a.test.".parse().unwrap(), Rtype::A, 300);
        set.push(vec![192, 0, 2, 1], 300);
        set.push(vec![192, 0, 2, 1], 200);
        set.push(vec![192, 0, 2, 2], 600);
        assert_eq!(set.rdata.len(), 2);
        assert_eq!(set.ttl, 200);
        assert_eq!(
            set.addresses(),
            [
                "192.0.2.1".parse::<std::net::IpAddr>().unwrap(),
                "192.0.2.2".parse().unwrap()
            ]
        );
    }
}
