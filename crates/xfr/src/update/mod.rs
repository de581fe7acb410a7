//! Dynamic UPDATE (RFC 2136, with RFC 3007's rules for signed zones) as pure
//! code: an UPDATE message and a zone in, a verdict and a diff out.
//!
//! The caller has already checked TSIG and the update ACL, and found the zone
//! (NOTAUTH for a zone that is not ours is its answer, RFC 2136 §3.1.2). Here:
//! [`read_update`] reads the message, [`ZoneEdit`] applies one or more
//! messages to a zone in order (prerequisites §3.2, prescan §3.4.1, updates
//! §3.4.2), each message all or nothing, and [`ZoneEdit::finish`] gives the
//! [`ZoneDiff`](bulwark_zone::ZoneDiff) to the next version with a new SOA
//! serial. Writing the journal, re-signing and replying
//! ([`write_update_response`]) are the caller's.
//!
//! Per-message work is proportional to the message and to the RRsets it names,
//! never to the zone: the edit is an overlay of changed RRsets over the zone,
//! which it only reads.

mod apply;
mod edit;
mod request;

pub use apply::{Applied, ClientSoa, IgnoreReason, Ignored, UpdateOptions};
pub use edit::ZoneEdit;
pub use request::{read_update, write_update_response, UpdateRecord, UpdateRequest};

use bulwark_proto::{Class, Name, Opcode, Rcode, Rtype};

/// Why an UPDATE message is turned down, and the rcode that says so. Names
/// are boxed to keep the error small on the `Ok` path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UpdateError {
    /// The message is not an UPDATE at all.
    #[error("opcode {0} is not UPDATE")]
    NotUpdate(Opcode),
    /// RFC 2136 §3.1.1: the zone section holds exactly one entry.
    #[error("the zone section holds {0} entries; UPDATE names exactly one zone (RFC 2136 §3.1.1)")]
    ZoneCount(u16),
    /// RFC 2136 §3.1.1: the zone entry's type is SOA.
    #[error(
        "the zone section asks for type {0}; UPDATE names its zone with type SOA (RFC 2136 §3.1.1)"
    )]
    ZoneType(Rtype),
    /// Record data that does not parse as its type.
    #[error("record data of type {rtype} at offset {at} is malformed")]
    BadRdata { at: usize, rtype: Rtype },
    /// RFC 2136 §3.1.2: the zone section names another zone or class.
    #[error("zone {zone} class {class} is not the zone being updated (RFC 2136 §3.1.2)")]
    NotAuthoritative { zone: Box<Name>, class: Class },
    /// RFC 2136 §3.2.5, §3.4.1.3: a record's owner is outside the zone.
    #[error("{owner} {rtype} is outside the zone (RFC 2136 §3.2.5, §3.4.1.3)")]
    NotInZone { owner: Box<Name>, rtype: Rtype },
    /// A prerequisite or update record breaks a rule of its form.
    #[error("{owner} {class} {rtype}: {rule}")]
    Malformed {
        owner: Box<Name>,
        class: Class,
        rtype: Rtype,
        rule: Malformation,
    },
    /// RFC 2136 §2.4.4: "name is in use" does not hold.
    #[error("prerequisite not met: {0} is not in use (RFC 2136 §2.4.4)")]
    NameNotInUse(Box<Name>),
    /// RFC 2136 §2.4.5: "name is not in use" does not hold.
    #[error("prerequisite not met: {0} is in use (RFC 2136 §2.4.5)")]
    NameInUse(Box<Name>),
    /// RFC 2136 §2.4.1: "RRset exists (value independent)" does not hold.
    #[error("prerequisite not met: no {rtype} RRset at {owner} (RFC 2136 §2.4.1)")]
    RrsetMissing { owner: Box<Name>, rtype: Rtype },
    /// RFC 2136 §2.4.3: "RRset does not exist" does not hold.
    #[error("prerequisite not met: {owner} has a {rtype} RRset (RFC 2136 §2.4.3)")]
    RrsetExists { owner: Box<Name>, rtype: Rtype },
    /// RFC 2136 §2.4.2: "RRset exists (value dependent)" does not hold.
    #[error(
        "prerequisite not met: the {rtype} RRset at {owner} is not the one given (RFC 2136 §2.4.2)"
    )]
    RrsetDiffers { owner: Box<Name>, rtype: Rtype },
    /// In a zone the server signs, its DNSSEC records are its own: RFC 3007
    /// leaves that policy to the server (see [`UpdateOptions::signed_by_server`]).
    #[error("{owner} {rtype}: the server maintains this type in a zone it signs")]
    SignerManaged { owner: Box<Name>, rtype: Rtype },
}

/// The rule of RFC 2136 a malformed record breaks (all are FORMERR).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Malformation {
    #[error("a prerequisite's TTL must be zero (RFC 2136 §3.2.1, §3.2.5)")]
    PrerequisiteTtl,
    #[error("class ANY and NONE prerequisites and class ANY deletions carry no record data (RFC 2136 §3.2.5, §3.4.1.3)")]
    DataNotEmpty,
    #[error("a deletion's TTL must be zero (RFC 2136 §3.4.1.3)")]
    DeletionTtl,
    #[error("the class is neither the zone's, ANY nor NONE (RFC 2136 §3.2.5, §3.4.1.3)")]
    BadClass,
    #[error("a meta or query type cannot be added or deleted as data (RFC 2136 §3.4.1.3)")]
    MetaType,
    #[error("the record data is malformed for its type")]
    BadRdata,
}

impl UpdateError {
    /// The response code the UPDATE response carries (RFC 2136 §2.2, §3).
    pub fn rcode(&self) -> Rcode {
        match self {
            UpdateError::NotUpdate(_) => Rcode::NOTIMP,
            UpdateError::ZoneCount(_)
            | UpdateError::ZoneType(_)
            | UpdateError::BadRdata { .. }
            | UpdateError::Malformed { .. } => Rcode::FORMERR,
            UpdateError::NotAuthoritative { .. } => Rcode::NOTAUTH,
            UpdateError::NotInZone { .. } => Rcode::NOTZONE,
            UpdateError::NameNotInUse(_) => Rcode::NXDOMAIN,
            UpdateError::NameInUse(_) => Rcode::YXDOMAIN,
            UpdateError::RrsetMissing { .. } | UpdateError::RrsetDiffers { .. } => Rcode::NXRRSET,
            UpdateError::RrsetExists { .. } => Rcode::YXRRSET,
            UpdateError::SignerManaged { .. } => Rcode::REFUSED,
        }
    }
}
