//! ANY queries (RFC 8482 §4.1): answered with one RRset of the name, not all.
//!
//! Which one: like Knot, the RRset with the lowest type number (so the choice is
//! stable and matches Knot in differential tests). RRSIG is never chosen on its own.

use bulwark_proto::Rtype;
use bulwark_zone::zone::{Node, RRset};

pub(crate) fn minimal_any(node: &Node) -> Option<&RRset> {
    node.rrsets()
        .iter()
        .filter(|r| r.rtype() != Rtype::RRSIG && !r.is_empty())
        .min_by_key(|r| r.rtype())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn set(rtype: Rtype) -> RRset {
        RRset::new(rtype, 60, vec![vec![0u8; 4].into_boxed_slice()])
    }

    #[test]
    fn minimal_any_picks_the_lowest_type_and_never_rrsig() {
        let node = Node::new(vec![set(Rtype::TXT), set(Rtype::MX), set(Rtype::AAAA)]);
        assert_eq!(minimal_any(&node).unwrap().rtype(), Rtype::MX);
        let node = Node::new(vec![set(Rtype::RRSIG), set(Rtype::TXT)]);
        assert_eq!(minimal_any(&node).unwrap().rtype(), Rtype::TXT);
        assert!(minimal_any(&Node::new(Vec::new())).is_none());
    }
}
