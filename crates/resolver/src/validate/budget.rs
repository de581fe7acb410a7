//! The work one validation may do (KeyTrap, CVE-2023-50387; and the
//! closest-encloser cost of CVE-2023-50868 draws on the same budget).
//!
//! Two bounds: signature checks in all (each is a public-key operation,
//! the costly part), and keys tried per signature (a zone can publish many
//! keys with one tag, and each must otherwise be tried). Unbound and BIND
//! settled on bounds of this order after KeyTrap; an honest zone needs one
//! or two checks per RRset and one key per tag.
//!
//! The budget also says whether the operator allowed experimental
//! algorithms (Falcon-512 on PRIVATEOID): it is what goes with every step
//! of one validation, so the choice travels with it rather than as an
//! argument of each step.

use super::Bogus;
use crate::ede;

/// The bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkLimits {
    /// Signature checks per validation (one client question, its whole
    /// chain of trust included).
    pub verifications: u32,
    /// Keys tried for one signature: those with its tag and algorithm.
    pub keys_per_signature: u32,
    /// Signatures tried for one RRset.
    pub signatures_per_rrset: u32,
    /// NSEC3 hashes computed per validation (CVE-2023-50868: a long name
    /// under an NSEC3 zone made validators hash every ancestor).
    pub nsec3_hashes: u32,
}

impl Default for WorkLimits {
    fn default() -> WorkLimits {
        WorkLimits {
            verifications: 32,
            keys_per_signature: 4,
            signatures_per_rrset: 8,
            nsec3_hashes: 16,
        }
    }
}

/// What is left of the limits for one validation.
#[derive(Debug, Clone)]
pub struct Budget {
    limits: WorkLimits,
    verifications_left: u32,
    hashes_left: u32,
    used: u32,
    experimental: bool,
}

const EXHAUSTED: Bogus = Bogus::new(ede::DNSSEC_BOGUS, "too much validation work");

impl Budget {
    pub fn new(limits: WorkLimits) -> Budget {
        Budget {
            limits,
            verifications_left: limits.verifications,
            hashes_left: limits.nsec3_hashes,
            used: 0,
            experimental: false,
        }
    }

    /// The same budget, with experimental algorithms allowed or not.
    pub fn with_experimental(self, experimental: bool) -> Budget {
        Budget {
            experimental,
            ..self
        }
    }

    /// Whether experimental algorithms may be checked.
    pub fn experimental(&self) -> bool {
        self.experimental
    }

    /// Whether a key of the zone can be checked: its algorithm is
    /// implemented, or it is an experimental one and those are allowed.
    pub fn can_verify(&self, key: &bulwark_proto::rdata::Dnskey) -> bool {
        bulwark_crypto::can_verify_key(key.algorithm, &key.public_key, self.experimental)
    }

    pub fn limits(&self) -> WorkLimits {
        self.limits
    }

    /// Takes one signature check, or says the budget is spent.
    pub fn take_verification(&mut self) -> Result<(), Bogus> {
        self.verifications_left = self.verifications_left.checked_sub(1).ok_or(EXHAUSTED)?;
        self.used = self.used.saturating_add(1);
        Ok(())
    }

    /// Takes one NSEC3 hash, or says the budget is spent.
    pub fn take_hash(&mut self) -> Result<(), Bogus> {
        self.hashes_left = self.hashes_left.checked_sub(1).ok_or(EXHAUSTED)?;
        Ok(())
    }

    /// Signature checks made so far.
    pub fn used(&self) -> u32 {
        self.used
    }
}
