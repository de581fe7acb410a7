//! The client's side: signing a request (RFC 8945 §4.3.1) and checking
//! every message of the response (§5.3.1, §5.4).

use bulwark_crypto::HmacContext;
use bulwark_proto::MessageView;

use super::key::TsigKey;
use super::rdata::{
    check_mac_size, digest_mac, read_tsig, received_mac_verifies, sign_and_append, within_fudge,
    Covers, ReceivedTsig,
};
use super::{MalformedTsig, TsigError, TsigFailure, TsigRcode};

/// RFC 8945 §5.3.1: a client MUST accept up to 99 unsigned messages between
/// signed ones, for servers that sign only every 100th.
pub const MAX_UNSIGNED_RUN: usize = 99;

/// Signs a request: appends the TSIG record to `msg` (a complete message
/// without one), adds one to ARCOUNT, and returns the MAC, which the
/// response's first MAC covers. The Original ID is the message's ID.
pub fn sign_request(
    msg: &mut Vec<u8>,
    key: &TsigKey,
    now: u64,
    fudge: u16,
) -> Result<Vec<u8>, TsigError> {
    let tag = sign_and_append(
        msg,
        key,
        Covers::Request,
        now,
        fudge,
        TsigRcode::NOERROR,
        &[],
    )?;
    Ok(tag.as_ref().to_vec())
}

/// Checks the messages of a response to a request signed with `key`, in
/// order: one for an ordinary response, many for a zone transfer over TCP.
/// After a failure the response must be abandoned (RFC 8945 §5.3.1: the
/// client MUST close the connection); every later call repeats the failure.
#[derive(Debug)]
pub struct ResponseVerifier {
    key: TsigKey,
    /// The request MAC until the first message verifies, then the last
    /// verified MAC (a reused buffer: no allocation per message).
    prior_mac: Vec<u8>,
    /// After a signed message: the MAC of the next one, begun with the prior
    /// MAC and the unsigned messages since (RFC 8945 §5.3.1).
    running: Option<HmacContext>,
    unsigned_run: usize,
    seen_signed: bool,
    last_signed: bool,
    failed: Option<TsigFailure>,
}

impl ResponseVerifier {
    /// For the response to a request signed with `key` whose MAC was `request_mac`.
    pub fn new(key: &TsigKey, request_mac: &[u8]) -> ResponseVerifier {
        ResponseVerifier {
            key: key.clone(),
            prior_mac: request_mac.to_vec(),
            running: None,
            unsigned_run: 0,
            seen_signed: false,
            last_signed: false,
            failed: None,
        }
    }

    /// Checks the next message of the response.
    pub fn verify(&mut self, msg: &[u8], now: u64) -> Result<(), TsigFailure> {
        // After a failure the response is abandoned: the first reason stands.
        if let Some(f) = &self.failed {
            return Err(f.clone());
        }
        let view = MessageView::parse(msg).map_err(MalformedTsig::Message);
        match view {
            Ok(view) => self.verify_view(&view, now),
            Err(m) => self.fail(m.into()),
        }
    }

    /// As [`ResponseVerifier::verify`], for a message the caller has parsed already.
    pub fn verify_view(&mut self, view: &MessageView<'_>, now: u64) -> Result<(), TsigFailure> {
        if let Some(f) = &self.failed {
            return Err(f.clone());
        }
        let tsig = match read_tsig(view) {
            Ok(t) => t,
            Err(m) => return self.fail(m.into()),
        };
        let result = match tsig {
            Some(tsig) => self.signed(view.as_bytes(), &tsig, now),
            None => self.unsigned(view.as_bytes()),
        };
        match result {
            Ok(()) => Ok(()),
            Err(f) => self.fail(f),
        }
    }

    /// Ends the response: RFC 8945 §5.3.1 requires its last message to be signed.
    pub fn finish(&self) -> Result<(), TsigFailure> {
        if let Some(f) = &self.failed {
            return Err(f.clone());
        }
        if !self.seen_signed {
            return Err(TsigFailure::Unsigned);
        }
        if !self.last_signed {
            return Err(TsigFailure::LastUnsigned);
        }
        Ok(())
    }

    /// The MAC of the last signed message (the request MAC before any).
    pub fn last_mac(&self) -> &[u8] {
        &self.prior_mac
    }

    fn fail(&mut self, f: TsigFailure) -> Result<(), TsigFailure> {
        self.failed = Some(f.clone());
        Err(f)
    }

    fn unsigned(&mut self, msg: &[u8]) -> Result<(), TsigFailure> {
        // RFC 8945 §5.3.1: the first message must be signed.
        let Some(running) = self.running.as_mut() else {
            return Err(TsigFailure::Unsigned);
        };
        self.unsigned_run = self.unsigned_run.saturating_add(1);
        if self.unsigned_run > MAX_UNSIGNED_RUN {
            return Err(TsigFailure::TooManyUnsigned);
        }
        // Unsigned messages are covered whole, as received.
        running.update(msg);
        self.last_signed = false;
        Ok(())
    }

    fn signed(&mut self, msg: &[u8], tsig: &ReceivedTsig<'_>, now: u64) -> Result<(), TsigFailure> {
        let r = &tsig.rdata;
        // RFC 8945 §5.3.2: the server answers key and MAC errors unsigned,
        // with an empty MAC; §5.4 has the client take a NOTAUTH answer as a
        // TSIG error. Report the server's error, not a bad signature.
        if r.mac.is_empty() && r.error != TsigRcode::NOERROR {
            return Err(TsigFailure::ServerError {
                error: r.error,
                server_time: r.other_time(),
            });
        }
        // §5.4.1: an answer signed with another key is a key error.
        if tsig.owner != *self.key.name()
            || !self
                .key
                .algorithm()
                .wire_name()
                .eq_ignore_ascii_case(r.algorithm.as_wire())
        {
            return Err(TsigFailure::BadKey {
                key: Box::new(tsig.owner.clone()),
                algorithm: Box::new(r.algorithm.clone()),
            });
        }
        check_mac_size(self.key.algorithm(), r.mac.len())?;
        let (ctx, full_variables) = match self.running.take() {
            None => (
                Covers::Response {
                    request_mac: &self.prior_mac,
                }
                .start(&self.key),
                true,
            ),
            Some(running) => (running, false),
        };
        if !received_mac_verifies(ctx, full_variables, &self.key, msg, tsig) {
            return Err(TsigFailure::BadSig);
        }
        // A signed error answer (BADTIME, BADTRUNC; §5.3.2) verified: report it.
        if r.error != TsigRcode::NOERROR {
            return Err(TsigFailure::ServerError {
                error: r.error,
                server_time: r.other_time(),
            });
        }
        // §5.4.3: the answer's time, like the request's, must be within its fudge.
        if !within_fudge(now, r.time_signed, r.fudge) {
            return Err(TsigFailure::BadTime {
                time_signed: r.time_signed,
                fudge: r.fudge,
                now,
            });
        }
        if r.mac.len() < self.key.min_mac_len() {
            return Err(TsigFailure::BadTrunc {
                len: r.mac.len(),
                min: self.key.min_mac_len(),
            });
        }
        self.prior_mac.clear();
        self.prior_mac.extend_from_slice(r.mac);
        let mut next = self.key.mac_context();
        digest_mac(&mut next, &self.prior_mac);
        self.running = Some(next);
        self.unsigned_run = 0;
        self.seen_signed = true;
        self.last_signed = true;
        Ok(())
    }
}
