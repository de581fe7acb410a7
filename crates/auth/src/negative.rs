//! Denying existence without DNSSEC: NXDOMAIN and NODATA carry the zone's SOA in
//! the authority section (RFC 2308 §2.1, §2.2).

use bulwark_proto::message::Section;
use bulwark_proto::{Rcode, Rtype};
use bulwark_zone::zone::{RRset, Zone};

use crate::dnssec::{push_rrsigs, Signing};
use crate::response::Response;

/// RFC 1035 §3.3.13: MINIMUM is the last 32-bit field of the SOA rdata.
fn soa_minimum(rdata: &[u8]) -> Option<u32> {
    let at = rdata.len().checked_sub(4)?;
    let b: [u8; 4] = rdata.get(at..)?.try_into().ok()?;
    Some(u32::from_be_bytes(b))
}

/// RFC 2308 §3: the SOA in a negative answer carries min(SOA TTL, SOA MINIMUM).
pub(crate) fn negative_ttl(soa: &RRset) -> u32 {
    let minimum = soa.rdatas().next().and_then(soa_minimum);
    minimum.map_or(soa.ttl(), |m| m.min(soa.ttl()))
}

/// Writes the negative answer: the rcode (NXDOMAIN or NOERROR for NODATA) and the
/// SOA, signed when `signing` (RFC 4035 §3.1.3; the NSEC/NSEC3 proofs are
/// `denial`'s). TC when even the SOA does not fit.
pub(crate) fn deny_existence(
    resp: &mut Response<'_>,
    zone: &Zone,
    rcode: Rcode,
    signing: Option<Signing<'_>>,
) {
    resp.set_rcode(rcode);
    let (Some(soa), Some(apex)) = (zone.soa(), zone.apex_node()) else {
        return;
    };
    let ttl = negative_ttl(soa);
    let mut pushed = resp.push_rrset(
        Section::Authority,
        zone.apex(),
        Rtype::SOA,
        ttl,
        soa.rdatas(),
    );
    if pushed.is_ok() && signing.is_some() {
        pushed = push_rrsigs(resp, Section::Authority, zone.apex(), apex, Rtype::SOA, ttl);
    }
    if pushed.is_err() {
        resp.set_truncated();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn soa(ttl: u32, minimum: u32) -> RRset {
        // mname ".", rname ".", serial, refresh, retry, expire, minimum.
        let mut rdata = vec![0u8, 0];
        for v in [1u32, 2, 3, 4, minimum] {
            rdata.extend_from_slice(&v.to_be_bytes());
        }
        RRset::new(Rtype::SOA, ttl, vec![rdata.into_boxed_slice()])
    }

    #[test]
    fn negative_ttl_is_min_of_soa_ttl_and_minimum() {
        assert_eq!(negative_ttl(&soa(3600, 300)), 300);
        assert_eq!(negative_ttl(&soa(60, 300)), 60);
        assert_eq!(negative_ttl(&soa(300, 300)), 300);
    }

    #[test]
    fn negative_ttl_of_malformed_soa_falls_back_to_its_ttl() {
        let bad = RRset::new(Rtype::SOA, 42, vec![vec![0u8, 1].into_boxed_slice()]);
        assert_eq!(negative_ttl(&bad), 42);
    }
}
