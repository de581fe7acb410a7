//! Authenticated denial of existence (RFC 4035 §3.1.3 for NSEC, RFC 5155 §7.2
//! for NSEC3): the NSEC or NSEC3 records, with their RRSIGs, that prove a
//! name or type absent, a wildcard expansion legitimate, or a delegation
//! insecure. All go in the authority section; each record at most once.

use bulwark_proto::message::Section;
use bulwark_proto::{Name, Rtype};
use bulwark_zone::nsec3::{Denial, Nsec3Lookup};
use bulwark_zone::zone::Node;

use crate::dnssec::{push_signed, Signing};
use crate::response::Response;

/// The NSEC and NSEC3 nodes already written to this response, by address, so
/// that one record proving two things appears once. Reused between queries.
#[derive(Debug, Default)]
pub(crate) struct Proved {
    nodes: Vec<usize>,
}

impl Proved {
    pub(crate) fn clear(&mut self) {
        self.nodes.clear();
    }

    /// Notes a node whose NSEC is already in the response (as an answer).
    pub(crate) fn mark(&mut self, node: &Node) {
        let _ = self.first_time(node);
    }

    /// True the first time a node is offered.
    fn first_time(&mut self, node: &Node) -> bool {
        let key = core::ptr::from_ref(node) as usize;
        if self.nodes.contains(&key) {
            return false;
        }
        self.nodes.push(key);
        true
    }
}

/// The proofs being written: the zone, the response and what is already in it.
pub(crate) struct Prover<'a, 'b, 'z> {
    pub(crate) resp: &'a mut Response<'b>,
    pub(crate) signing: Signing<'z>,
    pub(crate) proved: &'a mut Proved,
}

/// The offset in `wire` where the label just below `ancestor_at` starts: the
/// "next closer" name to a closest encloser (RFC 5155 §1.3).
fn next_closer_at(wire: &[u8], ancestor_at: usize) -> Option<usize> {
    let mut pos = 0usize;
    let mut last = None;
    while pos < ancestor_at {
        last = Some(pos);
        let len = usize::from(*wire.get(pos)?);
        pos = pos.checked_add(len)?.checked_add(1)?;
    }
    last
}

/// The suffix of `name` starting at `offset`, as a name.
fn suffix_at(name: &Name, offset: usize) -> Option<Name> {
    Name::from_wire(name.as_wire().get(offset..)?).ok()
}

impl<'z> Prover<'_, '_, 'z> {
    /// Writes one NSEC or NSEC3 RRset of `node` (owner `owner_wire`) with its
    /// RRSIGs, unless already written. TC when it does not fit.
    fn push_proof(&mut self, owner_wire: &[u8], node: &Node, rtype: Rtype) {
        if self.resp.is_truncated() || !self.proved.first_time(node) {
            return;
        }
        let (Some(rrset), Ok(owner)) = (node.rrset(rtype), Name::from_wire(owner_wire)) else {
            return;
        };
        let pushed = push_signed(
            self.resp,
            Section::Authority,
            &owner,
            node,
            rrset,
            rrset.ttl(),
            Some(self.signing),
        );
        if pushed.is_err() {
            self.resp.set_truncated();
        }
    }

    /// RFC 4034 §4.1: the NSEC at `name` when it has one, else the NSEC of
    /// the name before it that covers it.
    fn nsec(&mut self, name: &Name) {
        let lower = name.to_lowercase();
        if let Some((owner, node)) = self.signing.zone.nsec_covering(lower.as_wire()) {
            self.push_proof(owner, node, Rtype::NSEC);
        }
    }

    /// The NSEC3 chain's answer for `name`'s hash (RFC 5155 §5), not written.
    fn nsec3_lookup(&self, name: &Name) -> Option<Nsec3Lookup<'z>> {
        let signing = self.signing;
        let Denial::Nsec3 { salt, iterations } = signing.denial else {
            return None;
        };
        let lower = name.to_lowercase();
        let hash = bulwark_crypto::nsec3_hash(lower.as_wire(), salt, *iterations);
        signing.zone.nsec3(&hash)
    }

    /// Writes the NSEC3 matching or covering `name`; returns whether it matched.
    fn nsec3(&mut self, name: &Name) -> bool {
        let Some(found) = self.nsec3_lookup(name) else {
            return false;
        };
        let record = found.record();
        let (owner, node) = (record.owner, record.node);
        self.push_proof(owner, node, Rtype::NSEC3);
        matches!(found, Nsec3Lookup::Matching(_))
    }

    /// RFC 5155 §7.2.1: the NSEC3 matching the closest encloser (at offset
    /// `ce` in `name`) and the one covering the next closer name.
    fn closest_encloser_proof(&mut self, name: &Name, ce: usize) {
        if let Some(encloser) = suffix_at(name, ce) {
            self.nsec3(&encloser);
        }
        self.next_closer(name, ce);
    }

    /// RFC 5155 §7.2.6: the NSEC3 covering the next closer name below the
    /// closest encloser at offset `ce`.
    fn next_closer(&mut self, name: &Name, ce: usize) {
        if let Some(next) = next_closer_at(name.as_wire(), ce).and_then(|o| suffix_at(name, o)) {
            self.nsec3(&next);
        }
    }

    /// RFC 5155 §7.2.1 with §6 (Opt-Out): for a name with no NSEC3 of its own,
    /// the closest ancestor that has one (the closest provable encloser) and
    /// the NSEC3 covering the next closer name.
    fn closest_provable_encloser_proof(&mut self, name: &Name) {
        let wire = name.as_wire();
        let apex_len = self.signing.zone.apex().wire_len();
        let mut pos = 0usize;
        while let Some(&len) = wire.get(pos) {
            if len == 0 {
                return;
            }
            pos = pos.saturating_add(usize::from(len)).saturating_add(1);
            let Some(ancestor) = suffix_at(name, pos) else {
                return;
            };
            let matched = matches!(self.nsec3_lookup(&ancestor), Some(Nsec3Lookup::Matching(_)));
            if matched || wire.len().saturating_sub(pos) <= apex_len {
                self.closest_encloser_proof(name, pos);
                return;
            }
        }
    }

    /// NXDOMAIN (RFC 4035 §3.1.3.2, RFC 5155 §7.2.2): the name does not exist
    /// and no wildcard at its closest encloser (offset `ce`) could stand in.
    pub(crate) fn nxdomain(&mut self, name: &Name, ce: usize) {
        let Some(wildcard) = suffix_at(name, ce).and_then(|e| e.wildcard_child().ok()) else {
            return;
        };
        match self.signing.denial {
            Denial::Nsec => {
                self.nsec(name);
                self.nsec(&wildcard);
            }
            Denial::Nsec3 { .. } => {
                self.closest_encloser_proof(name, ce);
                self.nsec3(&wildcard);
            }
        }
    }

    /// NODATA at an existing name (RFC 4035 §3.1.3.1, RFC 5155 §7.2.3–4): its
    /// NSEC (for an empty non-terminal, which has none, the NSEC covering it),
    /// or its NSEC3. A name without an NSEC3 (under Opt-Out, a DS query at an
    /// insecure delegation or an empty non-terminal above one) gets the
    /// closest provable encloser proof.
    pub(crate) fn nodata(&mut self, name: &Name, node: &Node) {
        match self.signing.denial {
            Denial::Nsec => {
                if node.has(Rtype::NSEC) {
                    let lower = name.to_lowercase();
                    self.push_proof(lower.as_wire(), node, Rtype::NSEC);
                } else {
                    self.nsec(name);
                }
            }
            Denial::Nsec3 { .. } => {
                if matches!(self.nsec3_lookup(name), Some(Nsec3Lookup::Matching(_))) {
                    self.nsec3(name);
                } else {
                    self.closest_provable_encloser_proof(name);
                }
            }
        }
    }

    /// Wildcard NODATA (RFC 4035 §3.1.3.4, RFC 5155 §7.2.5): the name does not
    /// exist, and the wildcard at its closest encloser (offset `ce`) that
    /// stands in for it lacks the type.
    pub(crate) fn wildcard_nodata(&mut self, name: &Name, ce: usize) {
        let Some(wildcard) = suffix_at(name, ce).and_then(|e| e.wildcard_child().ok()) else {
            return;
        };
        match self.signing.denial {
            Denial::Nsec => {
                self.nsec(name);
                self.nsec(&wildcard);
            }
            Denial::Nsec3 { .. } => {
                self.closest_encloser_proof(name, ce);
                self.nsec3(&wildcard);
            }
        }
    }

    /// A wildcard expansion (RFC 4035 §3.1.3.3, RFC 5155 §7.2.6): proof that
    /// the name itself does not exist, so the wildcard applied.
    pub(crate) fn wildcard_answer(&mut self, name: &Name, ce: usize) {
        match self.signing.denial {
            Denial::Nsec => self.nsec(name),
            Denial::Nsec3 { .. } => self.next_closer(name, ce),
        }
    }

    /// A referral (RFC 4035 §3.1.4, RFC 5155 §7.2.7): the cut's DS with its
    /// RRSIGs, or proof that it has none: its NSEC, its NSEC3, or under
    /// Opt-Out the closest provable encloser proof.
    pub(crate) fn delegation(&mut self, cut: &Name, node: &Node) {
        if let Some(ds) = node.rrset(Rtype::DS) {
            let pushed = push_signed(
                self.resp,
                Section::Authority,
                cut,
                node,
                ds,
                ds.ttl(),
                Some(self.signing),
            );
            if pushed.is_err() {
                self.resp.set_truncated();
            }
            return;
        }
        self.nodata(cut, node);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn n(s: &str) -> Name {
        Name::from_presentation(s.as_bytes(), None).unwrap()
    }

    #[test]
    fn next_closer_is_one_label_below_the_encloser() {
        let name = n("a.b.c.example.");
        let ce = n("c.example.");
        let at = name.as_wire().len() - ce.wire_len();
        let nc = next_closer_at(name.as_wire(), at).unwrap();
        assert_eq!(suffix_at(&name, nc).unwrap(), n("b.c.example."));
        assert_eq!(next_closer_at(name.as_wire(), 0), None);
    }
}
