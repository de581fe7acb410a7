//! The answer state machine for IN queries inside one zone: look the name up,
//! then answer, follow a CNAME or DNAME, refer, or deny existence — each a step of
//! its own module, in the order RFC 1034 §4.3.2 gives them.

use bulwark_guard::ResponseClass;
use bulwark_proto::message::Section;
use bulwark_proto::{Name, Rcode, Rtype};
use bulwark_zone::zone::{Node, Zone};
use bulwark_zone::ZoneSet;

use crate::additional::Additional;
use crate::any::minimal_any;
use crate::cname::{self, Chain};
use crate::dname::{self, Substitution};
use crate::imputed::Imputed;
use crate::lookup::{self, Found};
use crate::negative::deny_existence;
use crate::referral::referral;
use crate::response::Response;

/// Scratch state reused from query to query.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    pub(crate) chain: Chain,
    pub(crate) additional: Additional,
    /// The class and imputed name of the last response, for RRL.
    pub(crate) imputed: Imputed,
}

/// The zone that answers `qname`: the longest suffix match, except that a DS query
/// at a zone's apex belongs to the parent side of the cut (RFC 4035 §3.1.4.1), so
/// the parent zone answers it when we serve that too.
pub(crate) fn zone_for<'z>(zones: &'z ZoneSet, qname: &Name, qtype: Rtype) -> Option<&'z Zone> {
    let zone = zones.find(qname)?;
    if qtype == Rtype::DS && zone.apex() == qname {
        if let Some(parent) = qname.parent().and_then(|p| zones.find(&p)) {
            return Some(parent);
        }
    }
    Some(zone)
}

/// What answering at one node led to.
// `Name` is stored inline by design (no allocation per query); boxing it would allocate.
#[allow(clippy::large_enum_variant)]
enum Next {
    Done,
    Follow(Name),
}

/// Answers `qname`/`qtype` from `zone` into `resp` (AA already set).
pub(crate) fn answer_in_zone(
    resp: &mut Response<'_>,
    zone: &Zone,
    qname: &Name,
    qtype: Rtype,
    scratch: &mut Scratch,
) {
    scratch.chain.start(qname);
    scratch.additional.clear();
    // Set when the answer's class is decided by what the walk met (a referral or
    // a wildcard) rather than by its outcome; the last such step wins.
    let mut decided = false;
    let mut name = qname.clone();
    loop {
        let next = match lookup::find(zone, &name, qtype) {
            Found::Exact(node) => {
                answer_at_node(resp, zone, &name, node, qtype, &mut scratch.additional)
            }
            Found::Wildcard {
                node,
                closest_encloser,
            } => {
                let encloser = name.as_wire().get(closest_encloser..).unwrap_or(&[0]);
                scratch.imputed.set_wildcard(encloser);
                decided = true;
                answer_at_node(resp, zone, &name, node, qtype, &mut scratch.additional)
            }
            Found::Delegation { cut, ns } => {
                scratch.imputed.set(ResponseClass::Referral, cut.as_wire());
                decided = true;
                referral(resp, &cut, ns, &mut scratch.additional);
                Next::Done
            }
            Found::Dname { owner, dname } => follow_dname(resp, zone, &name, &owner, dname, qtype),
            Found::NxDomain => {
                deny_existence(resp, zone, Rcode::NXDOMAIN);
                Next::Done
            }
            Found::Broken => {
                resp.set_rcode(Rcode::SERVFAIL);
                Next::Done
            }
        };
        match next {
            Next::Done => break,
            Next::Follow(target) => {
                // RFC 1034 §4.3.2: the chain continues only while we hold the
                // target; outside this zone it is the resolver's to follow.
                if resp.is_truncated()
                    || !target.ends_with(zone.apex())
                    || !scratch.chain.advance(&target)
                {
                    break;
                }
                name = target;
            }
        }
    }
    if !resp.is_truncated() {
        scratch.additional.write(resp, zone);
    }
    classify(resp, zone, qname, decided, &mut scratch.imputed);
}

/// The response's RRL class and imputed name: NXDOMAIN counts against the zone
/// apex, other rcodes but NOERROR are errors, and a NOERROR not already decided
/// by a referral or wildcard is an answer or NODATA for the query name.
fn classify(resp: &Response<'_>, zone: &Zone, qname: &Name, decided: bool, imputed: &mut Imputed) {
    match resp.rcode() {
        Rcode::NXDOMAIN => imputed.set(ResponseClass::Nxdomain, zone.apex().as_wire()),
        Rcode::NOERROR if decided => {}
        Rcode::NOERROR if resp.count(Section::Answer) > 0 || resp.is_truncated() => {
            imputed.set(ResponseClass::Positive, qname.as_wire());
        }
        Rcode::NOERROR => imputed.set(ResponseClass::Nodata, qname.as_wire()),
        _ => imputed.error(),
    }
}

/// The name exists (or a wildcard stands in for it): answer the type, or follow
/// a CNAME, or say NODATA. `owner` is the name as asked, so a wildcard answer
/// carries the query's name (RFC 4592 §3.4.3).
fn answer_at_node(
    resp: &mut Response<'_>,
    zone: &Zone,
    owner: &Name,
    node: &Node,
    qtype: Rtype,
    additional: &mut Additional,
) -> Next {
    let rrset = if qtype == Rtype::ANY {
        minimal_any(node)
    } else {
        node.rrset(qtype)
    };
    if let Some(rrset) = rrset {
        if resp
            .push_rrset(
                Section::Answer,
                owner,
                rrset.rtype(),
                rrset.ttl(),
                rrset.rdatas(),
            )
            .is_err()
        {
            resp.set_truncated();
            return Next::Done;
        }
        // As Knot does, also for the one RRset an ANY query gets.
        additional.queue_targets(rrset.rtype(), rrset);
        return Next::Done;
    }
    // RRSIG and NSEC live beside a CNAME (RFC 4035 §2.5, RFC 2181 §10.1): they
    // are data of the CNAME's owner, so asking for them does not follow it.
    let cname = node
        .rrset(Rtype::CNAME)
        .filter(|_| !matches!(qtype, Rtype::RRSIG | Rtype::NSEC));
    if let Some(cname) = cname {
        return match cname::follow_cname(resp, owner, cname) {
            Some(target) => Next::Follow(target),
            None => Next::Done,
        };
    }
    // RFC 2308 §2.2: the name exists but not with this type.
    deny_existence(resp, zone, Rcode::NOERROR);
    Next::Done
}

/// RFC 6672 §3.2: the DNAME, the CNAME synthesized from it, then (unless the CNAME
/// itself was asked for) the answer continues at the new name.
fn follow_dname(
    resp: &mut Response<'_>,
    zone: &Zone,
    name: &Name,
    owner: &Name,
    dname: &bulwark_zone::zone::RRset,
    qtype: Rtype,
) -> Next {
    if resp
        .push_rrset(
            Section::Answer,
            owner,
            Rtype::DNAME,
            dname.ttl(),
            dname.rdatas(),
        )
        .is_err()
    {
        resp.set_truncated();
        return Next::Done;
    }
    let target = match dname::substitute(name, owner, dname) {
        Substitution::Target(t) => t,
        Substitution::TooLong => {
            // RFC 6672 §2.2: the substituted name would not fit. Like a negative
            // answer (and like Knot), the SOA goes in authority so the result can
            // be cached for the SOA minimum.
            deny_existence(resp, zone, Rcode::YXDOMAIN);
            return Next::Done;
        }
        Substitution::Unusable => {
            resp.set_rcode(Rcode::SERVFAIL);
            return Next::Done;
        }
    };
    if resp
        .push_rrset(
            Section::Answer,
            name,
            dname::SYNTHESIZED_TYPE,
            dname::synthesized_ttl(dname),
            std::iter::once(target.as_wire()),
        )
        .is_err()
    {
        resp.set_truncated();
        return Next::Done;
    }
    if qtype == Rtype::CNAME {
        return Next::Done;
    }
    Next::Follow(target)
}
