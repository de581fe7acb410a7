//! RFC 1996 §3.7–3.11: a NOTIFY for a secondary zone from one of its
//! primaries (or a client its `allow_notify` lets in) is acknowledged and
//! starts a refresh; any other is NOTAUTH, as Knot answers.

use super::{Facts, Handled, Note, Outcome, Refusal, Request, Signature};
use crate::acl::any_allows;
use crate::notify::{read_notify, write_notify_response};

pub(super) fn notify(
    request: &Request<'_, '_>,
    facts: &dyn Facts,
    sig: Signature,
    now: u64,
    out: &mut Vec<u8>,
) -> Handled {
    let view = request.view;
    let query = view.as_bytes();
    // Who may notify is decided before what they sent is judged, as Knot
    // does: a stranger learns nothing from a FORMERR.
    let Some(apex) = view.question().map(|q| q.qname.to_lowercase()) else {
        return Handled::refused(Refusal::NoQuestion, &sig, query, out, now);
    };
    let Some(policy) = facts.zone_policy(&apex) else {
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
    let client = request.client;
    let from_primary = policy
        .primaries
        .iter()
        .any(|p| p.sent(client, key.as_ref()));
    if !policy.is_secondary()
        || !(from_primary || any_allows(&policy.allow_notify, client, key.as_ref()))
    {
        return Handled::refused(
            Refusal::NotifyRefused {
                apex: Box::new(apex),
            },
            &sig,
            query,
            out,
            now,
        );
    }
    let notified = match read_notify(view) {
        Ok(r) => r,
        Err(e) => return Handled::refused(Refusal::NotifyMalformed(e), &sig, query, out, now),
    };
    out.clear();
    if write_notify_response(query, out).is_err() {
        return Handled {
            outcome: Outcome::Drop,
            note: None,
        };
    }
    Handled {
        outcome: sig.respond(out, now).into(),
        note: Some(Note::NotifyAccepted {
            origin: Box::new(policy.origin),
            serial: notified.serial,
        }),
    }
}
