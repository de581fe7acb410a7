//! RFC 2136 dynamic update: for a primary zone served here, from a client
//! its `allow_update` ACL (and key) lets in, when the change can be made
//! durable. The server applies it and answers once the change is stored.

use bulwark_proto::{Name, Rcode};
use bulwark_zone::{Zone, ZoneDiff};

use super::{Facts, Handled, Outcome, Refusal, Request, Signature};
use crate::acl::any_allows;
use crate::serial::SerialPolicy;
use crate::update::{
    read_update, write_update_response, Ignored, UpdateOptions, UpdateRequest, ZoneEdit,
};

pub(super) fn update(
    request: &Request<'_, '_>,
    facts: &dyn Facts,
    sig: Signature,
    now: u64,
    out: &mut Vec<u8>,
) -> Handled {
    let query = request.view.as_bytes();
    let update = match read_update(request.view) {
        Ok(r) => r,
        Err(e) => return Handled::refused(Refusal::UpdateMalformed(e), &sig, query, out, now),
    };
    let zone = update.zone.to_lowercase();
    // RFC 2136 §3.1.2: not a zone we are authoritative for.
    let Some(policy) = facts.zone_policy(&zone) else {
        return Handled::refused(
            Refusal::NotOurZone {
                apex: Box::new(zone),
            },
            &sig,
            query,
            out,
            now,
        );
    };
    if policy.is_secondary() {
        return Handled::refused(
            Refusal::UpdateToSecondary {
                zone: Box::new(zone),
            },
            &sig,
            query,
            out,
            now,
        );
    }
    let key = sig.key_name();
    if !any_allows(&policy.allow_update, request.client, key.as_ref()) {
        let reason = Refusal::UpdateRefused {
            zone: Box::new(update.zone),
            key: key.map(Box::new),
        };
        return Handled::refused(reason, &sig, query, out, now);
    }
    if !facts.has_storage() {
        let reason = Refusal::UpdateNotDurable {
            zone: Box::new(update.zone),
        };
        return Handled::refused(reason, &sig, query, out, now);
    }
    Handled::plain(Outcome::Update(Box::new(UpdatePlan {
        update,
        query: query.to_vec(),
        origin: policy.origin,
        options: policy.update,
        serial_policy: policy.serial_policy,
        signature: sig,
    })))
}

/// An update to apply to the current version of its zone, then answer.
#[derive(Debug, Clone)]
pub struct UpdatePlan {
    update: UpdateRequest,
    query: Vec<u8>,
    origin: Name,
    options: UpdateOptions,
    serial_policy: SerialPolicy,
    signature: Signature,
}

/// What applying an update made of the zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateResult {
    /// The change to store and serve; `None` when the zone is unchanged.
    pub diff: Option<ZoneDiff>,
    /// Update records RFC 2136 §3.4.2 ignores, for the log.
    pub ignored: Vec<Ignored>,
}

impl UpdatePlan {
    /// The zone to change (as configured).
    pub fn origin(&self) -> &Name {
        &self.origin
    }

    pub fn request(&self) -> &UpdateRequest {
        &self.update
    }

    pub fn signature(&self) -> &Signature {
        &self.signature
    }

    /// Applies the update to `zone`, the current unsigned version, at `now`
    /// (the serial policy may use the time): all of it or, with the rcode
    /// to answer, none of it (RFC 2136 §3).
    pub fn apply(&self, zone: &Zone, now: u64) -> Result<UpdateResult, Rcode> {
        let mut edit = ZoneEdit::new(zone);
        let applied = edit
            .apply(&self.update, &self.options)
            .map_err(|e| e.rcode())?;
        Ok(UpdateResult {
            diff: edit.finish(self.serial_policy, now),
            ignored: applied.ignored,
        })
    }

    /// The response with `rcode`, signed at `now` when the request was;
    /// `None` when it cannot be written or signed.
    pub fn respond(&self, rcode: Rcode, now: u64) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        write_update_response(&self.query, rcode, &mut out)?;
        self.signature.sign(&mut out, now).then_some(out)
    }
}
