//! AXFR and IXFR out. Over UDP, AXFR is NOTIMP (RFC 5936 §4.2, as Knot
//! answers) and IXFR gets the current SOA (RFC 1995 §2: "ask over TCP");
//! over TCP the transfer is a plan the server streams.

use std::sync::Arc;

use bulwark_proto::message::{udp_response_limit, Question};
use bulwark_proto::{Name, Rtype};
use bulwark_zone::{Zone, ZoneDiff};

use super::{Facts, Handled, Outcome, Refusal, Request, Signature, Transport};
use crate::acl::any_allows;
use crate::transfer_out::{
    ixfr_client_serial, plan_ixfr, write_ixfr_udp_answer, MessageInfo, TransferWriter, WriteError,
};
use crate::tsig::{ResponseSigner, TsigError};

pub(super) fn transfer(
    request: &Request<'_, '_>,
    facts: &dyn Facts,
    sig: Signature,
    now: u64,
    out: &mut Vec<u8>,
) -> Handled {
    let view = request.view;
    let query = view.as_bytes();
    let Some(q) = view.sole_question() else {
        return Handled::refused(Refusal::NoQuestion, &sig, query, out, now);
    };
    if q.qtype == Rtype::AXFR && request.transport == Transport::Udp {
        return Handled::refused(Refusal::AxfrOverUdp, &sig, query, out, now);
    }
    let apex = q.qname.to_lowercase();
    let (Some(zone), Some(policy)) = (facts.served_zone(&apex), facts.zone_policy(&apex)) else {
        return Handled::refused(
            Refusal::NotOurZone {
                apex: Box::new(apex),
            },
            &sig,
            query,
            out,
            now,
        );
    };
    let key = sig.key_name();
    if !any_allows(&policy.allow_transfer, request.client, key.as_ref()) {
        let reason = Refusal::TransferRefused {
            qname: Box::new(q.qname.clone()),
            qtype: q.qtype,
        };
        return Handled::refused(reason, &sig, query, out, now);
    }
    let client_serial = if q.qtype == Rtype::IXFR {
        match ixfr_client_serial(view) {
            Some(s) => Some(s),
            None => return Handled::refused(Refusal::IxfrWithoutSoa, &sig, query, out, now),
        }
    } else {
        None
    };
    let id = view.header().id;
    if request.transport == Transport::Udp {
        out.clear();
        let limit = udp_response_limit(view.edns().as_ref(), request.max_udp_payload)
            .saturating_sub(sig.record_len());
        if let Err(e) = write_ixfr_udp_answer(&zone, id, &q, out, limit, None) {
            return Handled::refused(Refusal::CannotAnswer(e), &sig, query, out, now);
        }
        return Handled::plain(sig.respond(out, now).into());
    }
    Handled::plain(Outcome::Transfer(Box::new(TransferPlan {
        zone,
        question: q,
        id,
        client_serial,
        signature: sig,
    })))
}

/// A transfer over TCP to stream: the version of the zone to send and how
/// the client asked.
#[derive(Debug, Clone)]
pub struct TransferPlan {
    zone: Arc<Zone>,
    question: Question,
    id: u16,
    client_serial: Option<u32>,
    signature: Signature,
}

impl TransferPlan {
    /// The version of the zone sent.
    pub fn zone(&self) -> &Arc<Zone> {
        &self.zone
    }

    pub fn apex(&self) -> &Name {
        self.zone.apex()
    }

    /// AXFR or IXFR, as asked.
    pub fn qtype(&self) -> Rtype {
        self.question.qtype
    }

    /// For IXFR, the serial the client holds: the server's journal from it
    /// is what [`TransferPlan::messages`] needs.
    pub fn client_serial(&self) -> Option<u32> {
        self.client_serial
    }

    pub fn signature(&self) -> &Signature {
        &self.signature
    }

    /// The messages of the transfer: AXFR, or for IXFR what [`plan_ixfr`]
    /// picks from `journal` (the differences since the client's serial; an
    /// AXFR-style answer when they cannot take it to the current version),
    /// each signed when the request was.
    pub fn messages<'p>(
        &'p self,
        journal: &'p [ZoneDiff],
    ) -> Result<TransferMessages<'p>, WriteError> {
        let writer = match self.client_serial {
            None => TransferWriter::axfr(&self.zone, self.id, &self.question)?,
            Some(serial) => {
                let plan = plan_ixfr(serial, &self.zone, journal);
                TransferWriter::for_ixfr_plan(&self.zone, &plan, journal, self.id, &self.question)?
            }
        };
        let signer = self.signature.signer();
        Ok(TransferMessages {
            writer,
            reserve: signer.as_ref().map_or(0, ResponseSigner::record_len),
            signer,
        })
    }
}

/// Why a transfer stopped part way: messages may have gone out already, so
/// the connection is the only way left to say it (RFC 5936 §2.2 lets the
/// client treat an incomplete transfer as failed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StreamError {
    #[error("{0}")]
    Write(WriteError),
    #[error("cannot sign a transfer message: {0}")]
    Sign(TsigError),
}

/// The messages of one transfer, written and signed one at a time.
#[derive(Debug)]
pub struct TransferMessages<'p> {
    writer: TransferWriter<'p>,
    signer: Option<ResponseSigner>,
    reserve: usize,
}

impl TransferMessages<'_> {
    /// Writes the next message into `out`, signed at `now` when the request
    /// was (RFC 8945 §5.3.1: bulwark signs every message). `None` once the
    /// last was written; after an error, stop.
    pub fn next_message(
        &mut self,
        out: &mut Vec<u8>,
        now: u64,
    ) -> Option<Result<MessageInfo, StreamError>> {
        let info = match self.writer.next_message(out, self.reserve)? {
            Ok(info) => info,
            Err(e) => return Some(Err(StreamError::Write(e))),
        };
        if let Some(s) = self.signer.as_mut() {
            if let Err(e) = s.sign(out, now) {
                return Some(Err(StreamError::Sign(e)));
            }
        }
        Some(Ok(info))
    }
}
