//! A TSIG-signed standard query: answered as any query is (from the message
//! already read: answering looks at its question and OPT, not at the TSIG),
//! then signed here.

use bulwark_proto::message::{truncate_to_question, udp_response_limit};
use bulwark_proto::Rcode;

use super::{Handled, Refusal, Request, Response, Signature, Transport};

/// A signed query to answer, then sign with [`SignedQuery::finish`].
#[derive(Debug, Clone)]
pub struct SignedQuery {
    signature: Signature,
    /// Over UDP, the largest response the client takes.
    udp_limit: Option<usize>,
}

impl SignedQuery {
    pub(crate) fn new(request: &Request<'_, '_>, signature: Signature) -> SignedQuery {
        let udp_limit = (request.transport == Transport::Udp)
            .then(|| udp_response_limit(request.view.edns().as_ref(), request.max_udp_payload));
        SignedQuery {
            signature,
            udp_limit,
        }
    }

    pub fn signature(&self) -> &Signature {
        &self.signature
    }

    /// Signs the answer in `out` (its rcode and TC as answering wrote them)
    /// at `now`. RFC 8945 §5.3: the TSIG must fit too; over UDP an answer
    /// that would pass the client's size once signed goes out truncated to
    /// its question. `None`: nothing can be sent.
    pub fn finish(
        &self,
        rcode: Rcode,
        truncated: bool,
        out: &mut Vec<u8>,
        now: u64,
    ) -> Option<Response> {
        let mut truncated = truncated;
        if let (true, Some(limit)) = (self.signature.is_verified(), self.udp_limit) {
            if out.len().saturating_add(self.signature.record_len()) > limit {
                truncated = truncate_to_question(out) || truncated;
            }
        }
        self.signature.sign(out, now).then_some(Response {
            verified: self.signature.is_verified(),
            rcode,
            truncated,
        })
    }

    /// Answering would not take it as a standard query: FORMERR, signed.
    pub fn refuse(&self, query: &[u8], out: &mut Vec<u8>, now: u64) -> Handled {
        Handled::refused(Refusal::NotAQuery, &self.signature, query, out, now)
    }
}
