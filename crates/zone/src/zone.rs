//! One zone's data, shaped for answering.
//!
//! STUB: the lookup API `bulwark-auth` builds against; the build step, checks and
//! storage are being written. Contract:
//! - owners are stored lowercased; `node` looks up case-insensitively;
//! - every empty non-terminal between the apex and an owner exists as a node with
//!   no RRsets (so "does this name exist" is one lookup);
//! - RRsets hold their rdata in uncompressed wire form, ready to copy into answers;
//! - a built zone always has exactly one SOA at the apex.

use std::collections::HashMap;

use bulwark_proto::{Name, Rtype};

/// One RRset: a type, a TTL and the wire-form rdata of each record, in canonical order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RRset {
    rtype: Rtype,
    ttl: u32,
    rdatas: Vec<Box<[u8]>>,
}

impl RRset {
    pub fn new(rtype: Rtype, ttl: u32, rdatas: Vec<Box<[u8]>>) -> RRset {
        RRset { rtype, ttl, rdatas }
    }

    pub fn rtype(&self) -> Rtype {
        self.rtype
    }

    pub fn ttl(&self) -> u32 {
        self.ttl
    }

    pub fn len(&self) -> usize {
        self.rdatas.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rdatas.is_empty()
    }

    /// Each record's rdata, uncompressed wire form.
    pub fn rdatas(&self) -> impl ExactSizeIterator<Item = &[u8]> + Clone {
        self.rdatas.iter().map(|r| &**r)
    }
}

/// The RRsets at one owner name. No RRsets: an empty non-terminal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Node {
    rrsets: Vec<RRset>,
}

impl Node {
    pub fn rrset(&self, rtype: Rtype) -> Option<&RRset> {
        self.rrsets.iter().find(|r| r.rtype() == rtype)
    }

    pub fn rrsets(&self) -> &[RRset] {
        &self.rrsets
    }

    pub fn is_empty_nonterminal(&self) -> bool {
        self.rrsets.is_empty()
    }
}

#[derive(Debug, Clone)]
pub struct Zone {
    apex: Name,
    nodes: HashMap<Name, Node>,
}

impl Zone {
    pub fn empty(apex: Name) -> Zone {
        Zone {
            apex: apex.to_lowercase(),
            nodes: HashMap::new(),
        }
    }

    /// The zone's origin, lowercased.
    pub fn apex(&self) -> &Name {
        &self.apex
    }

    /// The node at exactly `name` (any case), including empty non-terminals.
    pub fn node(&self, name: &Name) -> Option<&Node> {
        self.nodes.get(name)
    }

    /// The apex node.
    pub fn apex_node(&self) -> Option<&Node> {
        self.nodes.get(&self.apex)
    }

    /// The apex SOA RRset.
    pub fn soa(&self) -> Option<&RRset> {
        self.apex_node().and_then(|n| n.rrset(Rtype::SOA))
    }

    /// Whether `name` (strictly below the apex) has an NS RRset: a zone cut.
    pub fn is_delegation(&self, name: &Name) -> bool {
        name != &self.apex
            && self
                .node(name)
                .is_some_and(|n| n.rrset(Rtype::NS).is_some())
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }
}
