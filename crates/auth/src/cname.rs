//! CNAME chains (RFC 1034 §4.3.2 step 3a): after a CNAME the answer restarts at
//! its target, within the same zone (as Knot does: a target in another of our
//! zones is left to the resolver), until the chain ends, loops or grows too long.

use bulwark_proto::message::Section;
use bulwark_proto::Name;
use bulwark_zone::zone::{Node, RRset};

use crate::dnssec::{push_signed, Signing};
use crate::response::Response;

/// How many CNAMEs (given or synthesized) one answer follows.
pub(crate) const MAX_CHAIN: usize = 16;

/// The target of a CNAME RRset (its single record).
pub(crate) fn target(cname: &RRset) -> Option<Name> {
    cname.rdatas().next().and_then(|r| Name::from_wire(r).ok())
}

/// Writes the CNAME at `owner` (the name as asked), signed when `signing`, and
/// returns its target, the name the answer continues at; `None` when it did
/// not fit (TC is then set) or its rdata is not a name.
pub(crate) fn follow_cname(
    resp: &mut Response<'_>,
    owner: &Name,
    node: &Node,
    cname: &RRset,
    signing: Option<Signing<'_>>,
) -> Option<Name> {
    if push_signed(
        resp,
        Section::Answer,
        owner,
        node,
        cname,
        cname.ttl(),
        signing,
    )
    .is_err()
    {
        resp.set_truncated();
        return None;
    }
    target(cname)
}

/// The names already answered for in this response, to stop at a loop.
#[derive(Debug, Default)]
pub(crate) struct Chain {
    visited: Vec<Name>,
}

impl Chain {
    pub(crate) fn start(&mut self, qname: &Name) {
        self.visited.clear();
        self.visited.push(qname.clone());
    }

    /// Records `next` as the name to answer next; false when it was seen already
    /// or the chain is at its limit.
    pub(crate) fn advance(&mut self, next: &Name) -> bool {
        if self.visited.len() > MAX_CHAIN || self.visited.contains(next) {
            return false;
        }
        self.visited.push(next.clone());
        true
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
    fn chain_refuses_a_name_seen_before_in_any_case() {
        let mut c = Chain::default();
        c.start(&n("a.example."));
        assert!(c.advance(&n("b.example.")));
        assert!(!c.advance(&n("A.EXAMPLE.")));
        assert!(!c.advance(&n("b.example.")));
    }

    #[test]
    fn chain_stops_at_its_length_limit() {
        let mut c = Chain::default();
        c.start(&n("start.example."));
        let followed = (0..100)
            .take_while(|i| c.advance(&n(&format!("n{i}.example."))))
            .count();
        assert_eq!(followed, MAX_CHAIN);
    }
}
