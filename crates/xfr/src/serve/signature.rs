//! A request's TSIG standing, and what it asks of every response: RFC 8945
//! §5.3: the response to a signed request is signed, errors included.

use bulwark_proto::message::{bits, write_error_response};
use bulwark_proto::{Name, Rcode};

use super::Response;
use crate::tsig::{ResponseSigner, VerifiedRequest};

/// A request's TSIG: none, or verified (what signing the response needs).
#[derive(Debug, Clone)]
pub struct Signature {
    verified: Option<VerifiedRequest>,
}

impl Signature {
    pub(crate) fn new(verified: Option<VerifiedRequest>) -> Signature {
        Signature { verified }
    }

    /// Whether the request was signed and its TSIG verified.
    pub fn is_verified(&self) -> bool {
        self.verified.is_some()
    }

    /// The verified request, when it was signed.
    pub fn verified(&self) -> Option<&VerifiedRequest> {
        self.verified.as_ref()
    }

    /// The lowercased name of the key the request was signed with, for ACLs.
    pub fn key_name(&self) -> Option<Name> {
        self.verified
            .as_ref()
            .map(|v| v.key().name().to_lowercase())
    }

    /// Octets the TSIG adds to a response: room to keep free.
    pub fn record_len(&self) -> usize {
        self.verified
            .as_ref()
            .map_or(0, |v| ResponseSigner::new(v).record_len())
    }

    /// A signer for the messages of a response, when the request was signed.
    pub fn signer(&self) -> Option<ResponseSigner> {
        self.verified.as_ref().map(ResponseSigner::new)
    }

    /// Signs the response in `out` at `now` when the request was signed;
    /// `false` when it cannot be signed (then it must not be sent).
    pub fn sign(&self, out: &mut Vec<u8>, now: u64) -> bool {
        match &self.verified {
            None => true,
            Some(v) => ResponseSigner::new(v).sign(out, now).is_ok(),
        }
    }

    /// `out`, signed when the request was, is the response; nothing is sent
    /// when it cannot be signed.
    pub fn respond(&self, out: &mut Vec<u8>, now: u64) -> Option<Response> {
        let written = Response::written(out, self.is_verified());
        self.sign(out, now).then_some(written)
    }

    /// An error response to `query` with `rcode`, the question echoed, not
    /// authoritative, signed when the request was.
    pub fn refuse(
        &self,
        query: &[u8],
        rcode: Rcode,
        out: &mut Vec<u8>,
        now: u64,
    ) -> Option<Response> {
        out.clear();
        write_error_response(query, rcode, out)?;
        bits::set_authoritative(out, false);
        self.respond(out, now)
    }
}
