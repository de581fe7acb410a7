//! Referrals (RFC 1034 §4.3.2 step 3b): the cut's NS RRset in the authority
//! section, not authoritative, and glue for its in-zone name servers.

use bulwark_proto::message::Section;
use bulwark_proto::{Name, Rtype};
use bulwark_zone::zone::RRset;

use crate::additional::Additional;
use crate::response::Response;

/// Writes the NS RRset of the cut (never signed: the child holds the
/// authoritative copy, RFC 4035 §2.2) and queues its targets for glue. AA stays set
/// only when the answer section already holds authoritative data (a CNAME that led
/// here), as Knot does.
pub(crate) fn referral(
    resp: &mut Response<'_>,
    cut: &Name,
    ns: &RRset,
    additional: &mut Additional,
) {
    if resp.count(Section::Answer) == 0 {
        resp.set_authoritative(false);
    }
    // RFC 2181 §9: the NS RRset is required; if it does not fit, TC.
    if resp
        .push_rrset(Section::Authority, cut, Rtype::NS, ns.ttl(), ns.rdatas())
        .is_err()
    {
        resp.set_truncated();
        return;
    }
    additional.queue_targets(Rtype::NS, ns);
    additional.require_glue_below(cut);
}
