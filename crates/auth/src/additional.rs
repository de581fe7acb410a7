//! Additional section processing (RFC 1034 §4.3.2 step 6, RFC 2782): addresses of
//! the name servers, mail exchangers and service targets named in the answer,
//! when the same zone holds them. Like Knot, only NS, MX and SRV trigger it.

use bulwark_proto::message::Section;
use bulwark_proto::wire::Reader;
use bulwark_proto::{Name, Rtype};
use bulwark_zone::zone::{RRset, Zone};

use crate::dnssec::push_rrsigs;
use crate::response::Response;

/// Target names waiting to have their addresses added, kept between queries so
/// the list does not allocate once warm.
#[derive(Debug, Default)]
pub(crate) struct Additional {
    targets: Vec<Name>,
    /// The zone cut of a referral in this response: glue for name servers at or
    /// below it is required (RFC 9471 §3), not optional.
    referral_cut: Option<Name>,
}

/// Where the target name sits in each type's rdata.
fn target_offset(rtype: Rtype) -> Option<usize> {
    match rtype {
        Rtype::NS => Some(0),
        Rtype::MX => Some(2),  // RFC 1035 §3.3.9: preference, exchange
        Rtype::SRV => Some(6), // RFC 2782: priority, weight, port, target
        _ => None,
    }
}

impl Additional {
    pub(crate) fn clear(&mut self) {
        self.targets.clear();
        self.referral_cut = None;
    }

    /// Marks this response as a referral to `cut`, so its in-domain glue is required.
    pub(crate) fn require_glue_below(&mut self, cut: &Name) {
        self.referral_cut = Some(cut.clone());
    }

    /// Notes the target names of an answered RRset whose type has additional data.
    pub(crate) fn queue_targets(&mut self, rtype: Rtype, rrset: &RRset) {
        let Some(offset) = target_offset(rtype) else {
            return;
        };
        for rdata in rrset.rdatas() {
            let mut r = Reader::at(rdata, offset);
            if let Ok(name) = Name::read_uncompressed(&mut r) {
                if !self.targets.contains(&name) {
                    self.targets.push(name);
                }
            }
        }
    }

    /// Writes the A and AAAA RRsets of the queued targets found in `zone`.
    /// RFC 2181 §9: additional data that does not fit is left out, without TC —
    /// except a referral's in-domain glue, which RFC 9471 §3 requires: if it does
    /// not fit, the response is marked truncated so the resolver retries over TCP.
    /// With `signed`, an authoritative address RRset is followed by its RRSIGs
    /// when they fit, and left unsigned without TC when they do not (RFC 4035
    /// §3.1.1); glue has no signatures to add.
    pub(crate) fn write(&self, resp: &mut Response<'_>, zone: &Zone, signed: bool) {
        for target in &self.targets {
            if !target.ends_with(zone.apex()) {
                continue;
            }
            let Some(node) = zone.node(target) else {
                continue;
            };
            for rtype in [Rtype::A, Rtype::AAAA] {
                if let Some(rrset) = node.rrset(rtype) {
                    let pushed = resp.push_rrset(
                        Section::Additional,
                        target,
                        rtype,
                        rrset.ttl(),
                        rrset.rdatas(),
                    );
                    let required = self
                        .referral_cut
                        .as_ref()
                        .is_some_and(|cut| target.ends_with(cut));
                    if pushed.is_err() && required {
                        resp.set_truncated();
                    }
                    if pushed.is_ok() && signed {
                        let _ = push_rrsigs(
                            resp,
                            Section::Additional,
                            target,
                            node,
                            rtype,
                            rrset.ttl(),
                        );
                    }
                }
            }
        }
    }
}
