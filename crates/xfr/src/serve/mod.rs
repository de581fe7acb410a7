//! The requests a primary or secondary serves besides ordinary queries, as
//! a pure engine: TSIG-signed queries (RFC 8945), NOTIFY received (RFC 1996),
//! zone transfers out (AXFR, RFC 5936; IXFR, RFC 1995) and dynamic updates
//! (RFC 2136).
//!
//! [`handle`] takes the message already parsed, who sent it and how, what
//! the server knows ([`Facts`]) and the time, checks the TSIG first
//! (RFC 8945 §5.2), then the zone's role and ACLs, and says what to do
//! ([`Outcome`]): send the response it wrote, answer the query and then
//! sign the answer ([`SignedQuery`]), stream a transfer ([`TransferPlan`]),
//! or apply an update and then answer ([`UpdatePlan`]). Every response to a
//! signed request is signed (RFC 8945 §5.3), errors included. A refusal
//! carries its reason ([`Refusal`]) for the server's logs and metrics; an
//! accepted NOTIFY says which zone to refresh ([`Note::NotifyAccepted`]).
//!
//! No socket, no clock: the server moves the bytes and brings the time.

mod notify;
mod signature;
mod signed_query;
mod transfer;
mod update;

use std::net::IpAddr;
use std::sync::Arc;

use bulwark_proto::message::{bits, MessageView};
use bulwark_proto::{Name, Rcode, Rtype};
use bulwark_zone::Zone;

use crate::acl::KeyedAcl;
use crate::notify::NotifyError;
use crate::remote::Remote;
use crate::serial::SerialPolicy;
use crate::transfer_out::WriteError;
use crate::tsig::{verify_request_view, write_tsig_error_response, KeyRing, TsigFailure};
use crate::update::{UpdateError, UpdateOptions};

pub use signature::Signature;
pub use signed_query::SignedQuery;
pub use transfer::{StreamError, TransferMessages, TransferPlan};
pub use update::{UpdatePlan, UpdateResult};

/// Which of the diverted requests this is (the answering step decides, from
/// the opcode, the question type and whether a TSIG was seen).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    /// RFC 1996 NOTIFY.
    Notify,
    /// AXFR (RFC 5936) or IXFR (RFC 1995).
    Transfer,
    /// RFC 2136 UPDATE.
    Update,
    /// A standard query carrying a TSIG record.
    Signed,
}

/// How the request came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Udp,
    /// TCP, or any other stream transport.
    Tcp,
}

/// A request as received: the parsed message and who sent it how.
#[derive(Debug, Clone, Copy)]
pub struct Request<'v, 'a> {
    pub view: &'v MessageView<'a>,
    pub kind: RequestKind,
    pub client: IpAddr,
    pub transport: Transport,
    /// The server's largest UDP response (its EDNS payload size).
    pub max_udp_payload: u16,
}

/// What the server knows that the requests are judged by.
pub trait Facts {
    /// The keys signed requests are checked with.
    fn keyring(&self) -> &KeyRing;
    /// The replication settings of the zone whose apex is `apex`
    /// (lowercased), when it is configured here.
    fn zone_policy(&self, apex: &Name) -> Option<ZonePolicy>;
    /// The version of the zone at `apex` (lowercased) being served.
    fn served_zone(&self, apex: &Name) -> Option<Arc<Zone>>;
    /// Whether changes can be made durable (an update is acknowledged only
    /// once stored).
    fn has_storage(&self) -> bool;
}

/// A zone's replication settings, as the requests need them.
#[derive(Debug, Clone)]
pub struct ZonePolicy {
    /// The zone's name, as configured.
    pub origin: Name,
    /// Set for a secondary zone: its primaries.
    pub primaries: Vec<Arc<Remote>>,
    pub allow_transfer: Vec<Arc<KeyedAcl>>,
    /// For a secondary, NOTIFY is also accepted from its primaries.
    pub allow_notify: Vec<Arc<KeyedAcl>>,
    pub allow_update: Vec<Arc<KeyedAcl>>,
    /// How an update is applied (whether the server signs the zone).
    pub update: UpdateOptions,
    /// How an update moves the serial.
    pub serial_policy: SerialPolicy,
}

impl ZonePolicy {
    pub fn is_secondary(&self) -> bool {
        !self.primaries.is_empty()
    }
}

/// What [`handle`] decided, and what the server should know beside it.
#[derive(Debug)]
pub struct Handled {
    pub outcome: Outcome,
    /// A refusal's reason, or an accepted NOTIFY.
    pub note: Option<Note>,
}

/// What to do with a request.
#[derive(Debug)]
pub enum Outcome {
    /// The response is in `out`: send it.
    Respond(Response),
    /// Send nothing (no response could be written, or signed).
    Drop,
    /// A standard query whose TSIG verified: answer it as usual, then have
    /// [`SignedQuery::finish`] sign the answer.
    AnswerThenSign(Box<SignedQuery>),
    /// AXFR or IXFR over TCP: stream the messages [`TransferPlan::messages`]
    /// writes (on a thread that may block).
    Transfer(Box<TransferPlan>),
    /// An UPDATE that may be applied: apply it to the zone with
    /// [`UpdatePlan::apply`], store the change, then send
    /// [`UpdatePlan::respond`].
    Update(Box<UpdatePlan>),
}

/// A response written in `out`, as its header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    /// The request's TSIG verified: its sender holds the key.
    pub verified: bool,
    pub rcode: Rcode,
    pub truncated: bool,
}

impl Response {
    /// The response in `out` as its header says, once its sender's standing
    /// is known. The replication answers use no extended rcode.
    pub fn written(out: &[u8], verified: bool) -> Response {
        Response {
            verified,
            rcode: Rcode::new(u16::from(bits::rcode_low(out).unwrap_or(0))),
            truncated: bits::is_truncated(out).unwrap_or(false),
        }
    }
}

impl From<Option<Response>> for Outcome {
    fn from(r: Option<Response>) -> Outcome {
        r.map_or(Outcome::Drop, Outcome::Respond)
    }
}

/// What the server should know of a request besides what to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// The request was refused (or could not be answered), for this reason.
    Refused(Refusal),
    /// RFC 1996 §3.11: a NOTIFY was accepted: refresh the zone now.
    NotifyAccepted {
        origin: Box<Name>,
        serial: Option<u32>,
    },
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// RFC 8945 §5.2: the TSIG did not verify (or could not be read).
    #[error("{0}")]
    BadTsig(TsigFailure),
    /// No question to find the zone by (FORMERR).
    #[error("no question")]
    NoQuestion,
    /// The zone named is not one served here (NOTAUTH).
    #[error("zone {apex}: not served here")]
    NotOurZone { apex: Box<Name> },
    /// RFC 1996 §3.10: a NOTIFY not from a primary (or `allow_notify`) of a
    /// secondary zone here (NOTAUTH, as Knot answers).
    #[error("zone {apex}: not a primary of a secondary zone here")]
    NotifyRefused { apex: Box<Name> },
    /// A NOTIFY from an allowed sender that does not read.
    #[error("NOTIFY: {0}")]
    NotifyMalformed(NotifyError),
    /// RFC 5936 §4.2: no AXFR over UDP (NOTIMP, as Knot answers).
    #[error("AXFR over UDP")]
    AxfrOverUdp,
    /// A transfer the zone's `allow_transfer` does not let in (NOTAUTH).
    #[error("{qtype} of {qname}: not in allow_transfer")]
    TransferRefused { qname: Box<Name>, qtype: Rtype },
    /// RFC 1995 §3: an IXFR query carries the client's SOA (FORMERR).
    #[error("IXFR without the client's SOA")]
    IxfrWithoutSoa,
    /// The answer could not be written (SERVFAIL).
    #[error("cannot write the answer: {0}")]
    CannotAnswer(WriteError),
    /// An UPDATE that does not read.
    #[error("UPDATE: {0}")]
    UpdateMalformed(UpdateError),
    /// RFC 2136 §3.1.2 lets a secondary forward an update; bulwark does not,
    /// and says so (NOTAUTH).
    #[error("zone {zone}: a secondary zone takes no updates")]
    UpdateToSecondary { zone: Box<Name> },
    /// RFC 2136 §3.3: a requestor without permission (REFUSED).
    #[error("zone {zone}: not in allow_update (key {key:?})")]
    UpdateRefused {
        zone: Box<Name>,
        key: Option<Box<Name>>,
    },
    /// An update that could not be made durable (REFUSED).
    #[error("zone {zone}: no storage is configured, so it could not be made durable")]
    UpdateNotDurable { zone: Box<Name> },
    /// A signed query that answering would not answer as a query (FORMERR).
    #[error("a signed query that is not a standard query")]
    NotAQuery,
}

/// The kinds of refusal a server reports (logs and counts); the others are
/// answered without a word, as a plain refusal of a query is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalKind {
    BadTsig,
    TransferRefused,
    NotifyRefused,
    UpdateRefused,
    Malformed,
}

impl Refusal {
    /// How the server reports this refusal, if at all.
    pub fn kind(&self) -> Option<RefusalKind> {
        match self {
            Refusal::BadTsig(_) => Some(RefusalKind::BadTsig),
            Refusal::NotifyRefused { .. } => Some(RefusalKind::NotifyRefused),
            Refusal::NotifyMalformed(_) => Some(RefusalKind::Malformed),
            Refusal::TransferRefused { .. } => Some(RefusalKind::TransferRefused),
            Refusal::UpdateRefused { .. } | Refusal::UpdateNotDurable { .. } => {
                Some(RefusalKind::UpdateRefused)
            }
            _ => None,
        }
    }

    /// The rcode the refusal is answered with.
    pub fn rcode(&self) -> Rcode {
        match self {
            Refusal::BadTsig(f) => f.rcode().unwrap_or(Rcode::NOTAUTH),
            Refusal::NoQuestion | Refusal::IxfrWithoutSoa | Refusal::NotAQuery => Rcode::FORMERR,
            Refusal::NotOurZone { .. }
            | Refusal::NotifyRefused { .. }
            | Refusal::TransferRefused { .. }
            | Refusal::UpdateToSecondary { .. } => Rcode::NOTAUTH,
            Refusal::NotifyMalformed(e) => e.rcode(),
            Refusal::UpdateMalformed(e) => e.rcode(),
            Refusal::AxfrOverUdp => Rcode::NOTIMP,
            Refusal::CannotAnswer(_) => Rcode::SERVFAIL,
            Refusal::UpdateRefused { .. } | Refusal::UpdateNotDurable { .. } => Rcode::REFUSED,
        }
    }
}

impl Handled {
    fn plain(outcome: Outcome) -> Handled {
        Handled {
            outcome,
            note: None,
        }
    }

    /// A refusal answered with its rcode, the question echoed, signed when
    /// the request was.
    fn refused(
        reason: Refusal,
        sig: &Signature,
        query: &[u8],
        out: &mut Vec<u8>,
        now: u64,
    ) -> Handled {
        let outcome = sig.refuse(query, reason.rcode(), out, now).into();
        Handled {
            outcome,
            note: Some(Note::Refused(reason)),
        }
    }
}

/// Handles one diverted request at `now` (Unix seconds), writing any
/// immediate response into `out`. The message is not read again: `request`
/// holds it parsed.
pub fn handle(
    request: &Request<'_, '_>,
    facts: &dyn Facts,
    now: u64,
    out: &mut Vec<u8>,
) -> Handled {
    let sig = match check_tsig(request.view, facts.keyring(), now, out) {
        Ok(sig) => sig,
        Err(handled) => return handled,
    };
    match request.kind {
        RequestKind::Signed => Handled::plain(Outcome::AnswerThenSign(Box::new(SignedQuery::new(
            request, sig,
        )))),
        RequestKind::Notify => notify::notify(request, facts, sig, now, out),
        RequestKind::Transfer => transfer::transfer(request, facts, sig, now, out),
        RequestKind::Update => update::update(request, facts, sig, now, out),
    }
}

/// RFC 8945 §5.2: checks the request's TSIG. On a failure the error
/// response (§5.3.2) is already in `out`.
fn check_tsig(
    view: &MessageView<'_>,
    keyring: &KeyRing,
    now: u64,
    out: &mut Vec<u8>,
) -> Result<Signature, Handled> {
    match verify_request_view(view, keyring, now) {
        Ok(verified) => Ok(Signature::new(verified)),
        Err(failure) => {
            out.clear();
            let outcome =
                match write_tsig_error_response(view.as_bytes(), &failure, keyring, now, out) {
                    Some(()) => Outcome::Respond(Response::written(out, false)),
                    None => Outcome::Drop,
                };
            Err(Handled {
                outcome,
                note: Some(Note::Refused(Refusal::BadTsig(failure))),
            })
        }
    }
}
