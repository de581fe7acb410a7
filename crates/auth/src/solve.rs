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
use crate::denial::{Proved, Prover};
use crate::dname::{self, Substitution};
use crate::dnssec::{push_rrsigs, push_signed, rrsig_query_answer, Signing};
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
    /// The NSEC/NSEC3 records already in the response (DO answers only).
    pub(crate) proved: Proved,
    /// Names answered from a wildcard, with their closest encloser's offset,
    /// whose non-existence a signed answer must prove (DO answers only).
    pub(crate) wildcards: Vec<(Name, usize)>,
    /// The lowercased copy of a followed CNAME or DNAME target with capitals.
    pub(crate) lower: Name,
}

/// The zone that answers the name whose lowercased wire form is `lower`: the
/// longest suffix match, except that a DS query at a zone's apex belongs to the
/// parent side of the cut (RFC 4035 §3.1.4.1), so the parent zone answers it
/// when we serve that too.
pub(crate) fn zone_for<'z>(zones: &'z ZoneSet, lower: &[u8], qtype: Rtype) -> Option<&'z Zone> {
    let zone = zones.find_by_lowercase_wire(lower)?;
    if qtype == Rtype::DS && zone.apex().as_wire() == lower {
        let parent = lower
            .first()
            .filter(|&&len| len > 0)
            .and_then(|&len| lower.get(usize::from(len).saturating_add(1)..))
            .and_then(|p| zones.find_by_lowercase_wire(p));
        if let Some(parent) = parent {
            return Some(parent);
        }
    }
    Some(zone)
}

/// `name` in canonical (lower) case: `name` itself when it has no capitals,
/// as almost every query name has, otherwise a lowercased copy written into
/// `copy`, a buffer kept between queries.
pub(crate) fn lowercased<'n>(name: &'n Name, copy: &'n mut Name) -> &'n Name {
    if name.has_uppercase() {
        copy.assign_lowercase(name);
        copy
    } else {
        name
    }
}

/// What answering at one node led to.
// `Name` is stored inline by design (no allocation per query); boxing it would allocate.
#[allow(clippy::large_enum_variant)]
enum Next {
    Done,
    Follow(Name),
}

/// How the walk reached a node.
#[derive(Debug, Clone, Copy)]
enum Via {
    /// The name exists.
    Exact,
    /// A wildcard stands in for the name, whose closest encloser starts at
    /// this offset of its wire form.
    Wildcard(usize),
}

/// Answers `qname`/`qtype` from `zone` into `resp` (AA already set); with
/// `dnssec_ok` and a signed zone, with signatures and denial proofs.
/// `qname_lower` is `qname` lowercased (see [`lowercased`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn answer_in_zone(
    resp: &mut Response<'_>,
    zone: &Zone,
    qname: &Name,
    qname_lower: &Name,
    qtype: Rtype,
    dnssec_ok: bool,
    scratch: &mut Scratch,
) {
    scratch.chain.start();
    scratch.additional.clear();
    scratch.proved.clear();
    scratch.wildcards.clear();
    let signing = Signing::for_query(zone, dnssec_ok);
    // Set when the answer's class is decided by what the walk met (a referral or
    // a wildcard) rather than by its outcome; the last such step wins.
    let mut decided = false;
    // The name being answered: the question's until a CNAME or DNAME leads on.
    let mut followed: Option<Name> = None;
    loop {
        let name = followed.as_ref().unwrap_or(qname);
        let lower = match followed {
            Some(_) => lowercased(name, &mut scratch.lower),
            None => qname_lower,
        };
        let next = match lookup::find(zone, name, lower.as_wire(), qtype) {
            Found::Exact(node) => {
                answer_at_node(resp, zone, name, node, qtype, Via::Exact, signing, scratch)
            }
            Found::Wildcard {
                node,
                closest_encloser,
            } => {
                let encloser = name.as_wire().get(closest_encloser..).unwrap_or(&[0]);
                scratch.imputed.set_wildcard(encloser);
                decided = true;
                if signing.is_some() {
                    scratch.wildcards.push((name.clone(), closest_encloser));
                }
                answer_at_node(
                    resp,
                    zone,
                    name,
                    node,
                    qtype,
                    Via::Wildcard(closest_encloser),
                    signing,
                    scratch,
                )
            }
            Found::Delegation { cut, node, ns } => {
                scratch.imputed.set(ResponseClass::Referral, cut.as_wire());
                decided = true;
                referral(resp, &cut, ns, &mut scratch.additional);
                if let Some(signing) = signing.filter(|_| !resp.is_truncated()) {
                    Prover {
                        resp,
                        signing,
                        proved: &mut scratch.proved,
                    }
                    .delegation(&cut, node);
                }
                Next::Done
            }
            Found::Dname { owner, node, dname } => {
                follow_dname(resp, zone, name, &owner, node, dname, qtype, signing)
            }
            Found::NxDomain { closest_encloser } => {
                deny_existence(resp, zone, Rcode::NXDOMAIN, signing);
                if let Some(signing) = signing.filter(|_| !resp.is_truncated()) {
                    Prover {
                        resp,
                        signing,
                        proved: &mut scratch.proved,
                    }
                    .nxdomain(name, closest_encloser);
                }
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
                    || !scratch.chain.advance(qname, &target)
                {
                    break;
                }
                followed = Some(target);
            }
        }
    }
    // RFC 4035 §3.1.3.3: each wildcard expansion comes with proof that the
    // name it answered for does not exist (also after a CNAME or a denial).
    if let Some(signing) = signing {
        for (name, ce) in &scratch.wildcards {
            if resp.is_truncated() {
                break;
            }
            Prover {
                resp,
                signing,
                proved: &mut scratch.proved,
            }
            .wildcard_answer(name, *ce);
        }
    }
    if !resp.is_truncated() {
        scratch.additional.write(resp, zone, signing.is_some());
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
/// carries the query's name (RFC 4592 §3.4.3), and so do its RRSIGs (whose
/// label count tells a validator it was expanded, RFC 4035 §5.3.4).
#[allow(clippy::too_many_arguments)]
fn answer_at_node(
    resp: &mut Response<'_>,
    zone: &Zone,
    owner: &Name,
    node: &Node,
    qtype: Rtype,
    via: Via,
    signing: Option<Signing<'_>>,
    scratch: &mut Scratch,
) -> Next {
    if qtype == Rtype::RRSIG && signing.is_some() {
        if let Some((covered, ttl)) = rrsig_query_answer(node) {
            if push_rrsigs(resp, Section::Answer, owner, node, covered, ttl).is_err() {
                resp.set_truncated();
            }
            return Next::Done;
        }
    }
    let rrset = if qtype == Rtype::ANY {
        minimal_any(node)
    } else {
        node.rrset(qtype)
    };
    if let Some(rrset) = rrset {
        if push_signed(
            resp,
            Section::Answer,
            owner,
            node,
            rrset,
            rrset.ttl(),
            signing,
        )
        .is_err()
        {
            resp.set_truncated();
            return Next::Done;
        }
        // As Knot does, also for the one RRset an ANY query gets.
        scratch.additional.queue_targets(rrset.rtype(), rrset);
        // An NSEC asked for is not repeated as a proof (a wildcard's, say).
        if signing.is_some() && rrset.rtype() == Rtype::NSEC {
            scratch.proved.mark(node);
        }
        return Next::Done;
    }
    // RRSIG and NSEC live beside a CNAME (RFC 4035 §2.5, RFC 2181 §10.1): they
    // are data of the CNAME's owner, so asking for them does not follow it.
    let cname = node
        .rrset(Rtype::CNAME)
        .filter(|_| !matches!(qtype, Rtype::RRSIG | Rtype::NSEC));
    if let Some(cname) = cname {
        return match cname::follow_cname(resp, owner, node, cname, signing) {
            Some(target) => Next::Follow(target),
            None => Next::Done,
        };
    }
    // RFC 2308 §2.2: the name exists but not with this type.
    deny_existence(resp, zone, Rcode::NOERROR, signing);
    if let Some(signing) = signing.filter(|_| !resp.is_truncated()) {
        let mut prover = Prover {
            resp,
            signing,
            proved: &mut scratch.proved,
        };
        match via {
            Via::Exact => prover.nodata(owner, node),
            Via::Wildcard(ce) => prover.wildcard_nodata(owner, ce),
        }
    }
    Next::Done
}

/// RFC 6672 §3.2: the DNAME (signed when `signing`), the CNAME synthesized
/// from it (never signed: RFC 6672 §5.3.1), then (unless the CNAME itself was
/// asked for) the answer continues at the new name.
#[allow(clippy::too_many_arguments)]
fn follow_dname(
    resp: &mut Response<'_>,
    zone: &Zone,
    name: &Name,
    owner: &Name,
    node: &Node,
    dname: &bulwark_zone::zone::RRset,
    qtype: Rtype,
    signing: Option<Signing<'_>>,
) -> Next {
    if push_signed(
        resp,
        Section::Answer,
        owner,
        node,
        dname,
        dname.ttl(),
        signing,
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
            deny_existence(resp, zone, Rcode::YXDOMAIN, signing);
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
