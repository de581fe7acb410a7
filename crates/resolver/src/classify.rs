//! What a server's response says about the question it was asked, and which
//! of its records may be believed.
//!
//! The bailiwick rule: a server asked as a server of zone Z is believed only
//! for names at or below Z (RFC 2181 §5.4.1, and the defence against the
//! poisoning that in-response data for other zones allowed). Records outside
//! it are dropped here, before anything reaches the cache; a CNAME chain that
//! leaves the bailiwick is followed by asking again. A forwarder, asked to
//! recurse, is believed for any name.

use std::collections::HashMap;

use bulwark_proto::message::RecordView;
use bulwark_proto::rdata::Rdata;
use bulwark_proto::wire::Reader;
use bulwark_proto::{MessageView, Name, Rcode, Rtype};

use crate::rrset::{expanded_rdata, RrSet};

/// Who was asked what.
#[derive(Debug, Clone, Copy)]
pub struct Asked<'a> {
    pub qname: &'a Name,
    pub qtype: Rtype,
    /// The zone the server was asked as a server of: its bailiwick.
    pub zone: &'a Name,
    /// Asked to recurse (a forwarder): believed for any name.
    pub forwarding: bool,
}

/// What the response says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// The data asked for, after `chain` (CNAMEs, DNAMEs and the CNAMEs they
    /// synthesise, all within the bailiwick).
    Answer {
        chain: Vec<RrSet>,
        data: RrSet,
        authoritative: bool,
        /// For NS data (a priming answer, or a minimised query's zone cut):
        /// the targets' addresses within the bailiwick.
        glue: Vec<RrSet>,
        /// For signed data: the NSEC and NSEC3 records of the authority
        /// section, which prove a wildcard answer was the right one (RFC
        /// 4035 §3.1.3.3).
        proof: Vec<RrSet>,
    },
    /// A chain whose end this server did not answer (outside its bailiwick,
    /// or simply not included): ask again for `target`.
    Cname {
        chain: Vec<RrSet>,
        target: Box<Name>,
        authoritative: bool,
        /// For a signed chain: the NSEC and NSEC3 records that prove its
        /// wildcard expansions.
        proof: Vec<RrSet>,
    },
    /// A delegation to `zone`, below the zone asked: its NS set and the glue
    /// within the bailiwick.
    Referral {
        zone: Box<Name>,
        ns: RrSet,
        glue: Vec<RrSet>,
        /// What a signed parent says of the child's DS (RFC 4035 §3.1.4):
        /// the DS set, or the NSEC or NSEC3 records proving there is none.
        /// The validator uses them instead of asking again.
        ds: Option<Box<RrSet>>,
        no_ds: Vec<RrSet>,
    },
    /// The name at the end of `chain` does not exist (RFC 2308 §2.1).
    /// `extra`: the rest of the authority section within the SOA's zone
    /// (its NS set, NSEC records), passed on to clients as received.
    NxDomain {
        chain: Vec<RrSet>,
        soa: Option<RrSet>,
        extra: Vec<RrSet>,
    },
    /// The name exists without the type (RFC 2308 §2.2).
    NoData {
        chain: Vec<RrSet>,
        soa: Option<RrSet>,
        extra: Vec<RrSet>,
    },
    /// YXDOMAIN: a DNAME would rewrite the name past 255 octets (RFC 6672
    /// §2.2); the DNAME goes to the client with that rcode.
    TooLong { dname: RrSet },
    /// The server has no authority for the zone (or says nothing useful).
    Lame(&'static str),
    /// An error rcode: another server may do better.
    Failure(Rcode),
}

/// DNAME synthesis is refused past this many labels of result (RFC 6672
/// §2.2's YXDOMAIN case: the new name would be too long).
const MAX_CHAIN: usize = 16;

/// Authority RRsets kept with a negative answer beyond its SOA (an NS set,
/// NSEC or NSEC3 records and their signatures need far fewer).
const MAX_NEGATIVE_EXTRA: usize = 8;

/// Reads `view`, the response to `asked`.
pub fn classify(asked: Asked<'_>, view: &MessageView<'_>) -> Kind {
    let msg = view.as_bytes();
    let header = view.header();
    let rcode = view.rcode();
    let believed = |owner: &Name| asked.forwarding || owner.ends_with(asked.zone);
    if rcode == Rcode::YXDOMAIN {
        let answers = rrsets(msg, view.answers(), &believed);
        let qname = asked.qname.to_lowercase();
        let dname = answers
            .into_values()
            .find(|s| s.rtype == Rtype::DNAME && qname.is_below(&s.owner));
        return match dname {
            Some(dname) => Kind::TooLong { dname },
            None => Kind::Failure(rcode),
        };
    }
    if rcode != Rcode::NOERROR && rcode != Rcode::NXDOMAIN {
        return Kind::Failure(rcode);
    }
    let answers = rrsets(msg, view.answers(), &believed);
    let authoritative = header.flags.aa || asked.forwarding;

    // Follow the chain from the question through what the answer holds.
    let mut chain: Vec<RrSet> = Vec::new();
    let mut name = asked.qname.to_lowercase();
    for _ in 0..MAX_CHAIN {
        // A CNAME asked for under a DNAME is the one the DNAME synthesises
        // (RFC 6672 §3.1): it goes with the DNAME, which is what is signed.
        if asked.qtype == Rtype::CNAME {
            if let Some((dname, synthesised)) = dname_for(&answers, &name) {
                if !chain
                    .iter()
                    .any(|s| s.rtype == Rtype::DNAME && s.owner == dname.owner)
                {
                    chain.push(dname);
                }
                return Kind::Answer {
                    chain,
                    data: synthesised,
                    authoritative,
                    glue: Vec::new(),
                    proof: Vec::new(),
                };
            }
        }
        if let Some(data) = answers.get(&(name.clone(), asked.qtype)) {
            let glue = if data.rtype == Rtype::NS {
                glue(msg, view, data, &believed)
            } else {
                Vec::new()
            };
            let proof = if data.sigs.is_empty() {
                Vec::new()
            } else {
                denial_records(msg, view, &believed)
            };
            return Kind::Answer {
                chain,
                data: data.clone(),
                authoritative,
                glue,
                proof,
            };
        }
        if asked.qtype == Rtype::CNAME {
            break;
        }
        // A DNAME above the name comes first: the CNAME beside it in the
        // answer is the one it synthesises (RFC 6672 §3.1), and both are
        // passed on.
        if let Some((dname, synthesised)) = dname_for(&answers, &name) {
            let Some(target) = synthesised.target_names().into_iter().next() else {
                break;
            };
            let looped = visited(&chain, &target) || target.to_lowercase() == name;
            // One DNAME may rewrite several links of a chain: it is in the
            // answer once.
            if !chain
                .iter()
                .any(|s| s.rtype == Rtype::DNAME && s.owner == dname.owner)
            {
                chain.push(dname);
            }
            chain.push(synthesised);
            name = target.to_lowercase();
            if looped {
                break;
            }
            continue;
        }
        if let Some(cname) = answers.get(&(name.clone(), Rtype::CNAME)) {
            let Some(target) = cname.target_names().into_iter().next() else {
                break;
            };
            let looped = visited(&chain, &target) || cname.owner == target.to_lowercase();
            chain.push(cname.clone());
            name = target.to_lowercase();
            if looped {
                break;
            }
            continue;
        }
        break;
    }

    let authority = rrsets(msg, view.authority(), &believed);
    let soa = authority
        .values()
        .find(|s| s.rtype == Rtype::SOA && name.ends_with(&s.owner))
        .cloned();
    let extra = || negative_extra(&authority, soa.as_ref());
    if rcode == Rcode::NXDOMAIN {
        let extra = extra();
        return Kind::NxDomain { chain, soa, extra };
    }
    // A delegation: an NS set for a zone strictly below the one asked, at or
    // above the name sought (RFC 1034 §4.3.2 step 3b).
    let referral = authority
        .values()
        .filter(|s| s.rtype == Rtype::NS)
        .filter(|s| name.ends_with(&s.owner))
        .filter(|s| asked.forwarding || s.owner.label_count() > asked.zone.label_count())
        .max_by_key(|s| s.owner.label_count())
        .cloned();
    // AA set on a delegation is a server's mistake, not a NODATA: without a
    // SOA, an NS set below the zone asked is followed (as Unbound does).
    let negative = soa.is_some() && header.flags.aa;
    if let (Some(ns), false) = (&referral, negative || asked.forwarding) {
        if chain.is_empty() {
            let glue = glue(msg, view, ns, &believed);
            let ds = authority
                .get(&(ns.owner.to_lowercase(), Rtype::DS))
                .cloned()
                .map(Box::new);
            let no_ds = if ds.is_some() {
                Vec::new()
            } else {
                negative_extra(&authority, None)
            };
            return Kind::Referral {
                zone: Box::new(ns.owner.to_lowercase()),
                ns: ns.clone(),
                glue,
                ds,
                no_ds,
            };
        }
    }
    if !chain.is_empty() {
        let proof = if chain.iter().any(|s| !s.sigs.is_empty()) {
            denial_records(msg, view, &believed)
        } else {
            Vec::new()
        };
        return Kind::Cname {
            chain,
            target: Box::new(name),
            authoritative,
            proof,
        };
    }
    // Seen before the bailiwick filter: an NS set above the zone asked is
    // outside it, and is what makes the answer an upward referral.
    let upward = view.authority().any(|r| {
        r.rtype == Rtype::NS && {
            let owner = r.owner.to_lowercase();
            asked.zone.ends_with(&owner) && owner != *asked.zone
        }
    });
    // An upward referral is lame even with AA set; a NODATA without a SOA
    // is believed only from a server that says it is authoritative.
    if soa.is_some() || (header.flags.aa && !upward) {
        let extra = extra();
        return Kind::NoData { chain, soa, extra };
    }
    // Records for the name of another type, and nothing else: the name
    // exists without the type asked (Knot Resolver reads it so too).
    if answers.keys().any(|(owner, _)| *owner == name) {
        return Kind::NoData {
            chain,
            soa: None,
            extra: Vec::new(),
        };
    }
    if upward
        || authority
            .values()
            .any(|s| s.rtype == Rtype::NS && s.owner == *asked.zone)
    {
        return Kind::Lame("a referral to the zone asked, or above it");
    }
    Kind::Lame("neither data, nor a negative answer, nor a referral")
}

/// The authority records that go with a negative answer besides its SOA:
/// those of the SOA's zone, addresses aside, in a stable order (their
/// signatures are with them). Only what is believed is here: the
/// bailiwick rule has filtered `authority` already.
fn negative_extra(authority: &HashMap<(Name, Rtype), RrSet>, soa: Option<&RrSet>) -> Vec<RrSet> {
    // Without a SOA (a DS denial some servers send bare), only the NSEC
    // and NSEC3 records: the proof, which says whose zone it is itself.
    let mut extra: Vec<RrSet> = authority
        .values()
        .filter(|s| match soa {
            Some(soa) => {
                s.owner.ends_with(&soa.owner)
                    && !matches!(s.rtype, Rtype::SOA | Rtype::A | Rtype::AAAA | Rtype::RRSIG)
            }
            None => matches!(s.rtype, Rtype::NSEC | Rtype::NSEC3),
        })
        .cloned()
        .collect();
    extra.sort_by(|a, b| (&a.owner, a.rtype.0).cmp(&(&b.owner, b.rtype.0)));
    extra.truncate(MAX_NEGATIVE_EXTRA);
    extra
}

/// The NSEC and NSEC3 sets of the authority section, within the bailiwick.
fn denial_records(
    msg: &[u8],
    view: &MessageView<'_>,
    believed: &dyn Fn(&Name) -> bool,
) -> Vec<RrSet> {
    let mut sets: Vec<RrSet> = rrsets(msg, view.authority(), believed)
        .into_values()
        .filter(|s| matches!(s.rtype, Rtype::NSEC | Rtype::NSEC3))
        .collect();
    sets.sort_by(|a, b| (&a.owner, a.rtype.0).cmp(&(&b.owner, b.rtype.0)));
    sets.truncate(MAX_NEGATIVE_EXTRA);
    sets
}

/// Whether the chain already went through `name` (a loop: stop there, and
/// let the caller see the repeated name).
fn visited(chain: &[RrSet], name: &Name) -> bool {
    let name = name.to_lowercase();
    chain
        .iter()
        .any(|s| s.rtype == Rtype::CNAME && s.owner == name)
}

/// The answer's DNAME covering `name` (its owner a proper ancestor), with the
/// CNAME it synthesises (RFC 6672 §3.1).
fn dname_for(answers: &HashMap<(Name, Rtype), RrSet>, name: &Name) -> Option<(RrSet, RrSet)> {
    let mut at = name.parent();
    while let Some(owner) = at {
        if let Some(dname) = answers.get(&(owner.clone(), Rtype::DNAME)) {
            let target = dname.target_names().into_iter().next()?;
            let new = name.replace_suffix(&owner, &target)?.ok()?;
            let mut cname = RrSet::new(name.clone(), Rtype::CNAME, dname.ttl);
            cname.push(Rdata::Cname(new).to_wire(), dname.ttl);
            return Some((dname.clone(), cname));
        }
        at = owner.parent();
    }
    None
}

/// The A and AAAA records of the additional section for the NS set's
/// targets, within the bailiwick (glue for names outside it is what
/// poisoning used to ride in on).
fn glue(
    msg: &[u8],
    view: &MessageView<'_>,
    ns: &RrSet,
    believed: &dyn Fn(&Name) -> bool,
) -> Vec<RrSet> {
    let targets: Vec<Name> = ns.target_names().iter().map(Name::to_lowercase).collect();
    rrsets(msg, view.additional(), believed)
        .into_values()
        .filter(|s| s.rtype == Rtype::A || s.rtype == Rtype::AAAA)
        .filter(|s| targets.contains(&s.owner))
        .collect()
}

/// The section's records gathered into RRsets by lowercased owner and type,
/// keeping only owners `believed` and class IN (RFC 2181 §5: an RRset is
/// the records of one owner, class and type).
fn rrsets<'a>(
    msg: &[u8],
    records: impl Iterator<Item = RecordView<'a>>,
    believed: &dyn Fn(&Name) -> bool,
) -> HashMap<(Name, Rtype), RrSet> {
    let mut sets: HashMap<(Name, Rtype), RrSet> = HashMap::new();
    let mut sigs: Vec<(Name, Rtype, Vec<u8>)> = Vec::new();
    for r in records {
        if r.class != bulwark_proto::Class::IN || r.rtype == Rtype::OPT || r.rtype == Rtype::TSIG {
            continue;
        }
        let owner = r.owner.to_lowercase();
        if !believed(&owner) {
            continue;
        }
        let Some(data) = expanded_rdata(msg, &r) else {
            continue;
        };
        if r.rtype == Rtype::RRSIG {
            if let Some((covered, _)) = data.split_first_chunk::<2>() {
                sigs.push((
                    owner.clone(),
                    Rtype(u16::from_be_bytes(*covered)),
                    data.clone(),
                ));
            }
        }
        sets.entry((owner.clone(), r.rtype))
            .or_insert_with(|| RrSet::new(owner, r.rtype, r.ttl))
            .push(data, r.ttl);
    }
    // RFC 4035 §3.1.1: an RRSIG covers the set of its owner and of the
    // type it names; it travels with that set. (The RRSIG sets stay too,
    // for a question of type RRSIG.)
    for (owner, covered, data) in sigs {
        if let Some(set) = sets.get_mut(&(owner, covered)) {
            set.push_sig(data);
        }
    }
    sets
}

/// The NS targets of a set, as names.
pub fn ns_names(ns: &RrSet) -> Vec<Name> {
    ns.typed()
        .filter_map(|r| match r {
            Rdata::Ns(n) => Some(n.to_lowercase()),
            _ => None,
        })
        .collect()
}

/// Reads one name out of an rdata (for tests and tools).
pub fn read_name(data: &[u8]) -> Option<Name> {
    Name::read(&mut Reader::new(data)).ok()
}
