//! DNSSEC validation (RFC 4033–4035, RFC 5155, RFC 6840): the judgements
//! that need no network. Whether an RRset's signatures hold with a zone's
//! keys ([`rrset`]); which of a zone's keys its parent's DS set vouches for
//! ([`ds`]) and so whether its DNSKEY set is trusted ([`zone_keys`]); where
//! the chain of trust starts ([`anchors`]); what NSEC and NSEC3 records
//! prove ([`nsec`], [`nsec3`]). The engine walks the chain of trust down
//! from the anchors with these.
//!
//! Every judgement draws on a [`Budget`]: KeyTrap (CVE-2023-50387) makes a
//! validator try every key that shares a tag against every signature, so
//! one answer can cost millions of signature checks. Here a validation
//! tries a bounded number of each, and running out is a bogus answer, not
//! more work.

pub mod anchors;
pub mod budget;
pub mod ds;
pub mod nsec;
pub mod nsec3;
pub mod rfc5011;
pub mod rrset;
pub mod zone_keys;

pub use anchors::{parse_anchors, root_anchors, AnchorData, TrustAnchor};
pub use budget::{Budget, WorkLimits};
pub use ds::{keys_vouched_for, DsVerdict};
pub use rrset::{verify_rrset, Verified};
pub use zone_keys::{trust_by_anchors, trust_by_ds, ZoneKeys};

/// Why data is bogus: the Extended DNS Error (RFC 8914) it is answered
/// with, and words for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bogus {
    pub ede: u16,
    pub why: &'static str,
}

impl Bogus {
    pub const fn new(ede: u16, why: &'static str) -> Bogus {
        Bogus { ede, why }
    }
}

/// What a proof that a name has no DS says of it (RFC 4035 §5.2, RFC 5155
/// §8.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DsDenial {
    /// A delegation without a DS, or one an opt-out span may hide: the
    /// zone below is unsigned.
    Unsigned,
    /// No zone cut there: whatever is at or below the name belongs to the
    /// zone that gave the proof.
    NoCut,
}

/// A time as RRSIGs carry it: seconds since 1970, modulo 2^32.
pub type SigTime = u32;

/// RFC 4034 §3.1.5: `a` is at or before `b` in serial number arithmetic
/// (RFC 1982), so that signatures keep working past 2106.
pub(crate) fn serial_le(a: SigTime, b: SigTime) -> bool {
    i32::from_ne_bytes(b.wrapping_sub(a).to_ne_bytes()) >= 0
}

/// The DNSKEY flag that makes a key a zone key (RFC 4034 §2.1.1).
pub(crate) const ZONE_KEY: u16 = 0x0100;
/// The DNSKEY flag of a revoked key (RFC 5011 §3).
pub(crate) const REVOKED: u16 = 0x0080;
/// The only DNSKEY protocol there is (RFC 4034 §2.1.2).
pub(crate) const PROTOCOL: u8 = 3;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_comparison_wraps_as_rfc_1982_says() {
        assert!(serial_le(10, 20));
        assert!(serial_le(20, 20));
        assert!(!serial_le(21, 20));
        // Across the wrap: u32::MAX - 5 comes before 10.
        assert!(serial_le(u32::MAX - 5, 10));
        assert!(!serial_le(10, u32::MAX - 5));
    }
}
