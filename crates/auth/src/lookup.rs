//! Finding what a zone holds for a name: RFC 1034 §4.3.2 step 3, walking down
//! from the apex one label at a time.

use bulwark_proto::{Name, Rtype};
use bulwark_zone::zone::{Node, RRset, Zone};

use crate::wildcard;

/// What the walk down from the apex found for one name.
#[derive(Debug)]
pub(crate) enum Found<'z> {
    /// The name exists (possibly as an empty non-terminal).
    Exact(&'z Node),
    /// The name does not exist; this wildcard at its closest encloser stands in
    /// for it (RFC 4592 §3.3.1). `closest_encloser` is the offset in the name's
    /// wire form where the encloser (the wildcard's parent) starts.
    Wildcard {
        node: &'z Node,
        closest_encloser: usize,
    },
    /// A zone cut at or above the name: the answer is a referral (RFC 1034 §4.3.2 3b).
    /// `node` is the cut's node (its DS or NSEC prove the delegation's security).
    Delegation {
        cut: Name,
        node: &'z Node,
        ns: &'z RRset,
    },
    /// A DNAME at a proper ancestor rewrites the name (RFC 6672 §3.2).
    Dname {
        owner: Name,
        node: &'z Node,
        dname: &'z RRset,
    },
    /// Neither the name nor a wildcard exists. `closest_encloser` is the
    /// offset in the name's wire form where its closest encloser starts.
    NxDomain { closest_encloser: usize },
    /// The zone has no apex node: it cannot be answered from.
    Broken,
}

/// Walks from the apex of `zone` towards `name` (which must be at or below the
/// apex), stopping at the first zone cut or DNAME on the way. `lower` is
/// `name`'s wire form lowercased: zone owners are lowercase, so each ancestor
/// is looked up as a slice of it, and no name is copied on the way.
///
/// A cut at `name` itself is not a referral for DS: DS lives on the parent side
/// of the cut (RFC 4035 §3.1.4.1).
pub(crate) fn find<'z>(zone: &'z Zone, name: &Name, lower: &[u8], qtype: Rtype) -> Found<'z> {
    let wire = name.as_wire();
    let apex_labels = zone.apex().label_count();
    let total = name.label_count();
    let Some(below_apex) = total.checked_sub(apex_labels) else {
        return Found::Broken;
    };
    // Label start offsets of `name`, most specific first; the apex starts at
    // offsets[below_apex] (or the root byte when the apex is the root).
    let mut offsets = [0u8; 128];
    let mut n = 0usize;
    let mut pos = 0usize;
    while let Some(&len) = wire.get(pos) {
        if let (Some(slot), Ok(p)) = (offsets.get_mut(n), u8::try_from(pos)) {
            *slot = p;
        }
        n = n.saturating_add(1);
        if len == 0 {
            break;
        }
        pos = pos.saturating_add(usize::from(len)).saturating_add(1);
    }
    let mut closest_encloser: Option<usize> = None;
    // depth counts labels below the apex: 0 is the apex itself.
    for depth in 0..=below_apex {
        let start = offsets
            .get(below_apex.saturating_sub(depth))
            .copied()
            .map(usize::from)
            .unwrap_or(0);
        let node = if depth == 0 {
            zone.apex_node()
        } else {
            lower
                .get(start..)
                .and_then(|w| zone.node_by_lowercase_wire(w))
        };
        let Some(node) = node else {
            return match closest_encloser {
                Some(ce) => wildcard_at(zone, lower, ce),
                None => Found::Broken,
            };
        };
        let at_name = depth == below_apex;
        if depth > 0 && !(at_name && qtype == Rtype::DS) {
            if let Some(ns) = node.rrset(Rtype::NS) {
                return match owner_at(wire, start) {
                    Some(cut) => Found::Delegation { cut, node, ns },
                    None => Found::Broken,
                };
            }
        }
        if at_name {
            return Found::Exact(node);
        }
        // RFC 6672 §2.3: a DNAME redirects the names below its owner, not the owner.
        if let Some(dname) = node.rrset(Rtype::DNAME) {
            return match owner_at(wire, start) {
                Some(owner) => Found::Dname { owner, node, dname },
                None => Found::Broken,
            };
        }
        closest_encloser = Some(start);
    }
    Found::Broken
}

/// The ancestor of the asked name starting at `start`, in the case it was asked.
fn owner_at(wire: &[u8], start: usize) -> Option<Name> {
    wire.get(start..).and_then(|w| Name::from_wire(w).ok())
}

/// The name does not exist below the closest encloser at `ce_start` of
/// `lower`, the name's lowercased wire form.
fn wildcard_at<'z>(zone: &'z Zone, lower: &[u8], ce_start: usize) -> Found<'z> {
    let nxdomain = Found::NxDomain {
        closest_encloser: ce_start,
    };
    if !zone.has_wildcards() {
        return nxdomain;
    }
    let source = lower
        .get(ce_start..)
        .and_then(|encloser| wildcard::source(zone, encloser));
    match source {
        Some(node) => Found::Wildcard {
            node,
            closest_encloser: ce_start,
        },
        None => nxdomain,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    fn n(s: &str) -> Name {
        Name::from_presentation(s.as_bytes(), None).unwrap()
    }

    fn find<'z>(zone: &'z Zone, name: &Name, qtype: Rtype) -> Found<'z> {
        super::find(zone, name, name.to_lowercase().as_wire(), qtype)
    }

    fn zone() -> Zone {
        let origin = n("example.");
        let text = "@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n\
                    sub NS ns.sub\nns.sub A 192.0.2.2\n\
                    d DNAME example.org.\n\
                    a.b.ent A 192.0.2.3\n*.ent TXT \"w\"\n";
        let records = bulwark_zone::parse_str(text, &origin, "t").unwrap();
        Zone::build(origin, records).unwrap().0
    }

    #[test]
    fn walk_finds_exact_names_and_empty_nonterminals() {
        let z = zone();
        assert!(
            matches!(find(&z, &n("NS.example."), Rtype::A), Found::Exact(node) if node.rrset(Rtype::A).is_some())
        );
        assert!(
            matches!(find(&z, &n("b.ent.example."), Rtype::A), Found::Exact(node) if node.is_empty_nonterminal())
        );
        assert!(matches!(
            find(&z, &n("example."), Rtype::SOA),
            Found::Exact(_)
        ));
    }

    #[test]
    fn walk_stops_at_the_cut_except_for_ds_at_the_cut() {
        let z = zone();
        for q in ["sub.example.", "ns.sub.example.", "x.y.sub.example."] {
            match find(&z, &n(q), Rtype::A) {
                Found::Delegation { cut, .. } => assert_eq!(cut, n("sub.example.")),
                other => panic!("{q}: {other:?}"),
            }
        }
        assert!(matches!(
            find(&z, &n("sub.example."), Rtype::DS),
            Found::Exact(_)
        ));
        assert!(matches!(
            find(&z, &n("x.sub.example."), Rtype::DS),
            Found::Delegation { .. }
        ));
    }

    #[test]
    fn walk_stops_at_a_dname_above_the_name_only() {
        let z = zone();
        assert!(matches!(
            find(&z, &n("x.d.example."), Rtype::A),
            Found::Dname { .. }
        ));
        assert!(matches!(
            find(&z, &n("d.example."), Rtype::A),
            Found::Exact(_)
        ));
    }

    #[test]
    fn wildcard_applies_at_the_closest_encloser_only() {
        let z = zone();
        assert!(matches!(
            find(&z, &n("c.ent.example."), Rtype::TXT),
            Found::Wildcard { .. }
        ));
        assert!(matches!(
            find(&z, &n("x.c.ent.example."), Rtype::TXT),
            Found::Wildcard { .. }
        ));
        // b.ent exists (an ENT), so x.b.ent is not covered by *.ent.
        assert!(matches!(
            find(&z, &n("x.b.ent.example."), Rtype::TXT),
            Found::NxDomain {
                closest_encloser: 2
            }
        ));
        assert!(matches!(
            find(&z, &n("nothere.example."), Rtype::A),
            Found::NxDomain {
                closest_encloser: 8
            }
        ));
    }
}
