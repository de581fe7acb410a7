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

/// The names already answered for in this response after the question's,
/// to stop at a loop. The question's name is not copied in: most answers
/// follow no CNAME at all.
#[derive(Debug, Default)]
pub(crate) struct Chain {
    followed: Vec<Name>,
}

impl Chain {
    pub(crate) fn start(&mut self) {
        self.followed.clear();
    }

    /// Records `next` as the name to answer next after `qname`'s; false when
    /// it was seen already or the chain is at its limit.
    pub(crate) fn advance(&mut self, qname: &Name, next: &Name) -> bool {
        if self.followed.len() >= MAX_CHAIN || next == qname || self.followed.contains(next) {
            return false;
        }
        self.followed.push(next.clone());
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
        let q = n("a.example.");
        c.start();
        assert!(c.advance(&q, &n("b.example.")));
        assert!(!c.advance(&q, &n("A.EXAMPLE.")));
        assert!(!c.advance(&q, &n("B.example.")));
        assert!(c.advance(&q, &n("c.example.")));
    }

    #[test]
    fn chain_stops_at_its_length_limit() {
        let mut c = Chain::default();
        let q = n("start.example.");
        c.start();
        let followed = (0..100)
            .take_while(|i| c.advance(&q, &n(&format!("n{i}.example."))))
            .count();
        assert_eq!(followed, MAX_CHAIN);
    }
}
