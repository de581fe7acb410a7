//! Authenticated denial of existence: which chain a zone carries and with what
//! parameters.

/// NSEC3 parameters (RFC 5155 §3.1; RFC 9276 §3.1: iterations 0, no salt).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Nsec3Settings {
    pub iterations: u16,
    pub salt: Vec<u8>,
    /// RFC 5155 §6: unsigned delegations are left out of the chain.
    pub opt_out: bool,
}

/// The chain a signed zone carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Denial {
    Nsec,
    Nsec3(Nsec3Settings),
}

/// RFC 5155 §3.1.1: SHA-1 is the only hash algorithm.
pub const NSEC3_HASH_SHA1: u8 = 1;
/// RFC 5155 §3.1.2.1.
pub const NSEC3_FLAG_OPT_OUT: u8 = 0x01;
