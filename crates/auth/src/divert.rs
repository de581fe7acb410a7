//! Queries this crate does not answer: replication and signed messages go to
//! the server's own handlers, which need state answering does not have (the
//! TSIG keys, the journal, the zones' primaries, a way to reply later).

use bulwark_proto::message::MessageView;
use bulwark_proto::{Opcode, Rtype};

/// Which handler a query belongs to instead of the answering steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Divert {
    /// RFC 1996 NOTIFY.
    Notify,
    /// RFC 2136 dynamic UPDATE.
    Update,
    /// AXFR (RFC 5936) or IXFR (RFC 1995).
    Transfer,
    /// A standard query carrying a TSIG record (RFC 8945): its signature is
    /// checked and its response signed by the server, around answering.
    Signed,
}

/// Where `query` goes instead of answering, if anywhere. Cheap: an opcode,
/// the question's type and whether a TSIG record was seen while parsing.
pub(crate) fn divert_of(query: &MessageView<'_>) -> Option<Divert> {
    let header = query.header();
    match header.opcode {
        Opcode::NOTIFY => Some(Divert::Notify),
        Opcode::UPDATE => Some(Divert::Update),
        Opcode::QUERY => {
            let transfer = query
                .sole_qtype()
                .is_some_and(|t| t == Rtype::AXFR || t == Rtype::IXFR);
            if transfer {
                Some(Divert::Transfer)
            } else if query.tsig_offset().is_some() {
                Some(Divert::Signed)
            } else {
                None
            }
        }
        _ => None,
    }
}
