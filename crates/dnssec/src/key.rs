//! A zone's signing key: its role, its DNSKEY, its key tag and its timing.

use bulwark_crypto::{ds_digest, DigestType, SigningKey};
use bulwark_proto::rdata::{Dnskey, Ds};
use bulwark_proto::{Name, Rdata};

/// DNSKEY flags (RFC 4034 §2.1.1): bit 7 Zone Key, bit 15 Secure Entry Point.
pub const ZONE_KEY_FLAG: u16 = 0x0100;
pub const SEP_FLAG: u16 = 0x0001;
/// RFC 4034 §2.1.2: the protocol field is always 3.
pub const DNSKEY_PROTOCOL: u8 = 3;

/// What a key signs (RFC 6781 §3.1): a KSK the DNSKEY RRset (and CDS,
/// CDNSKEY), a ZSK everything else, a CSK both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyRole {
    Ksk,
    Zsk,
    Csk,
}

impl KeyRole {
    pub fn flags(self) -> u16 {
        match self {
            KeyRole::Zsk => ZONE_KEY_FLAG,
            KeyRole::Ksk | KeyRole::Csk => ZONE_KEY_FLAG | SEP_FLAG,
        }
    }

    pub fn signs_key_set(self) -> bool {
        matches!(self, KeyRole::Ksk | KeyRole::Csk)
    }

    pub fn signs_zone(self) -> bool {
        matches!(self, KeyRole::Zsk | KeyRole::Csk)
    }

    pub fn name(self) -> &'static str {
        match self {
            KeyRole::Ksk => "KSK",
            KeyRole::Zsk => "ZSK",
            KeyRole::Csk => "CSK",
        }
    }
}

/// A key's timing, Unix seconds: BIND's metadata (dnssec-settime) plus what
/// the rollover needs to remember across restarts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyTiming {
    pub created: Option<u64>,
    /// In the DNSKEY RRset from then on.
    pub publish: Option<u64>,
    /// Signing from then on.
    pub activate: Option<u64>,
    /// Signing until then.
    pub inactive: Option<u64>,
    /// Out of the DNSKEY RRset from then on.
    pub delete: Option<u64>,
    /// When the parent was seen publishing this key's DS.
    pub ds_published: Option<u64>,
    /// An operator asked for this key to be rolled (`bulwark keys rollover`).
    pub rollover_requested: Option<u64>,
}

impl KeyTiming {
    /// A key made at `now` that is published and signs from then on.
    pub fn starting_at(now: u64) -> KeyTiming {
        KeyTiming {
            created: Some(now),
            publish: Some(now),
            activate: Some(now),
            ..KeyTiming::default()
        }
    }

    /// In the DNSKEY RRset at `now`: published and not yet deleted. A key
    /// without timing is published.
    pub fn is_published(&self, now: u64) -> bool {
        self.publish.is_none_or(|t| t <= now) && self.delete.is_none_or(|t| now < t)
    }

    /// Signing at `now`: activated and not yet inactive. An algorithm
    /// rollover signs with keys not yet published (RFC 6781 §4.1.4).
    pub fn is_active(&self, now: u64) -> bool {
        self.activate.is_none_or(|t| t <= now) && self.inactive.is_none_or(|t| now < t)
    }

    /// Neither removed from the DNSKEY RRset nor done signing: the key still
    /// plays a part.
    pub fn is_live(&self, now: u64) -> bool {
        self.delete.is_none_or(|t| now < t) || self.inactive.is_none_or(|t| now < t)
    }
}

/// RFC 4034 Appendix B: the key tag of a DNSKEY RDATA (algorithms other than 1).
pub fn key_tag(dnskey_rdata: &[u8]) -> u16 {
    let mut acc: u32 = 0;
    for (i, &b) in dnskey_rdata.iter().enumerate() {
        let value = if i % 2 == 0 {
            u32::from(b) << 8
        } else {
            u32::from(b)
        };
        acc = acc.wrapping_add(value);
    }
    acc = acc.wrapping_add(acc >> 16);
    (acc & 0xffff) as u16
}

/// A key of one zone with the role it plays.
#[derive(Debug)]
pub struct ZoneKey {
    pub role: KeyRole,
    pub timing: KeyTiming,
    key: SigningKey,
    dnskey: Dnskey,
    tag: u16,
}

impl ZoneKey {
    pub fn new(role: KeyRole, key: SigningKey, timing: KeyTiming) -> ZoneKey {
        ZoneKey::with_flags(role, role.flags(), key, timing)
    }

    /// Keeps the flags a key file gave (a revoked or odd key keeps its tag).
    pub fn with_flags(role: KeyRole, flags: u16, key: SigningKey, timing: KeyTiming) -> ZoneKey {
        let dnskey = Dnskey {
            flags,
            protocol: DNSKEY_PROTOCOL,
            algorithm: key.algorithm().number(),
            public_key: key.dnskey_public_key().to_vec(),
        };
        let tag = key_tag(&Rdata::Dnskey(dnskey.clone()).to_wire());
        ZoneKey {
            role,
            timing,
            key,
            dnskey,
            tag,
        }
    }

    pub fn dnskey(&self) -> &Dnskey {
        &self.dnskey
    }

    pub fn key_tag(&self) -> u16 {
        self.tag
    }

    pub fn signing_key(&self) -> &SigningKey {
        &self.key
    }

    pub fn algorithm_number(&self) -> u8 {
        self.dnskey.algorithm
    }

    /// The DS record the parent publishes for this key (RFC 4034 §5.1.4).
    pub fn ds(&self, apex: &Name, digest: DigestType) -> Ds {
        let rdata = Rdata::Dnskey(self.dnskey.clone()).to_wire();
        Ds {
            key_tag: self.tag,
            algorithm: self.dnskey.algorithm,
            digest_type: digest.number(),
            digest: ds_digest(digest, apex.to_lowercase().as_wire(), &rdata),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn timing_windows() {
        let t = KeyTiming {
            publish: Some(10),
            activate: Some(20),
            inactive: Some(30),
            delete: Some(40),
            ..KeyTiming::default()
        };
        assert!(
            !t.is_published(9) && t.is_published(10) && t.is_published(39) && !t.is_published(40)
        );
        assert!(!t.is_active(19) && t.is_active(20) && t.is_active(29) && !t.is_active(30));
        assert!(t.is_live(39) && !t.is_live(40));
        assert!(KeyTiming::default().is_active(0));
    }

    #[test]
    fn roles_set_the_sep_bit() {
        assert_eq!(KeyRole::Ksk.flags(), 257);
        assert_eq!(KeyRole::Csk.flags(), 257);
        assert_eq!(KeyRole::Zsk.flags(), 256);
    }
}
