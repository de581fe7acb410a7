//! Turning an unsigned zone into a signed one, in two halves so the caller can
//! spread the expensive half over cores: `ZonePlan::new` works out the DNSKEY
//! RRset, the NSEC or NSEC3 chain and the list of RRsets to sign (one
//! `SignJob` each); `ZonePlan::sign` signs any slice of those jobs.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use bulwark_crypto::{nsec3_hash, DigestType};
use bulwark_proto::encoding::base32hex_encode;
use bulwark_proto::rdata::{Nsec, Nsec3, Nsec3param, TypeBitmap};
use bulwark_proto::{Class, Name, Rdata, Record, Rtype};

use crate::denial::{Denial, Nsec3Settings, NSEC3_FLAG_OPT_OUT, NSEC3_HASH_SHA1};
use crate::key::ZoneKey;
use crate::reuse::{fingerprint, SignatureCache};
use crate::rrsig::{CanonicalRrset, RrsetSigner, SignatureValidity};
use crate::signature::Signature;
use crate::SignError;

/// What the signer needs besides the keys.
#[derive(Clone, Debug)]
pub struct SignerSettings {
    pub denial: Denial,
    /// TTL of DNSKEY, CDS and CDNSKEY; the SOA's TTL when None.
    pub dnskey_ttl: Option<u32>,
    /// Publish CDS (SHA-256) and CDNSKEY for the zone's SEP keys (RFC 7344).
    pub publish_cds: bool,
    /// Which key-signing keys get CDS/CDNSKEY; all published ones when None
    /// (a rollover names only the key the parent should switch to).
    pub cds_key_tags: Option<Vec<u16>>,
    /// Unix seconds: which keys are published and active.
    pub now: u64,
}

/// One RRset to sign, and whether it is signed by the key-signing keys
/// (DNSKEY, CDS, CDNSKEY) or by the zone-signing keys.
#[derive(Clone, Debug)]
pub struct SignJob {
    pub rrset: CanonicalRrset,
    pub by_key_signing_keys: bool,
    /// Index in the plan's records of the RRset's first record.
    pub first_record: usize,
}

/// Where a name stands in the zone (RFC 4035 §2.2: only authoritative data
/// and the delegation's DS and NSEC are signed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Standing {
    Authoritative,
    Delegation {
        secure: bool,
    },
    /// Below a zone cut or a DNAME: glue and occluded data, neither signed
    /// nor in the chain.
    Occluded,
}

/// A name's RRsets: indices into the plan's record arena, by type.
type Node = BTreeMap<u16, Vec<usize>>;

/// The records of the signed zone except the signatures, and the jobs that make them.
#[derive(Debug)]
pub struct ZonePlan {
    apex: Name,
    records: Vec<Record>,
    jobs: Vec<SignJob>,
}

/// Types the signer owns and recomputes; a zone file's copies are dropped.
fn is_signer_output(rtype: Rtype, at_apex: bool, settings: &SignerSettings) -> bool {
    matches!(
        rtype,
        Rtype::RRSIG | Rtype::NSEC | Rtype::NSEC3 | Rtype::NSEC3PARAM
    ) || (at_apex && rtype == Rtype::DNSKEY)
        || (at_apex && settings.publish_cds && matches!(rtype, Rtype::CDS | Rtype::CDNSKEY))
}

/// RFC 4035 §2.2 and §2.3: at a delegation only NS, DS and the chain's own
/// types are the zone's data.
fn delegation_types(node: &Node) -> impl Iterator<Item = Rtype> + '_ {
    node.keys()
        .map(|&t| Rtype(t))
        .filter(|t| matches!(*t, Rtype::NS | Rtype::DS))
}

/// The zone's names in canonical order with their RRsets, found by binary
/// search on precomputed sort keys (memcmp instead of label-by-label
/// comparisons: a million-record zone is sorted once, quickly).
#[derive(Debug, Default)]
struct Nodes {
    keys: Vec<Vec<u8>>,
    names: Vec<Name>,
    nodes: Vec<Node>,
    /// Every record of the signed zone but the NSEC3 chain and the
    /// signatures; nodes point into it, so records are moved only once.
    arena: Vec<Record>,
}

impl Nodes {
    fn build(records: Vec<Record>) -> Nodes {
        // Sort (key, index) pairs; the records stay where they are. The
        // index keeps records of one RRset in the file's order.
        let mut order: Vec<(Vec<u8>, usize)> = records
            .iter()
            .enumerate()
            .map(|(i, r)| (r.owner.canonical_sort_key(), i))
            .collect();
        order.sort_unstable();
        let mut nodes = Nodes {
            arena: records,
            ..Nodes::default()
        };
        for (key, index) in order {
            let Some(record) = nodes.arena.get(index) else {
                continue;
            };
            if nodes.keys.last() != Some(&key) {
                nodes.keys.push(key);
                nodes.names.push(record.owner.clone());
                nodes.nodes.push(Node::new());
            }
            let rtype = record.rtype().0;
            if let Some(node) = nodes.nodes.last_mut() {
                node.entry(rtype).or_default().push(index);
            }
        }
        nodes
    }

    /// Adds a record to node `at`.
    fn add(&mut self, at: usize, record: Record) {
        let index = self.arena.len();
        let rtype = record.rtype().0;
        self.arena.push(record);
        if let Some(node) = self.nodes.get_mut(at) {
            node.entry(rtype).or_default().push(index);
        }
    }

    fn records<'a>(&'a self, set: &'a [usize]) -> impl Iterator<Item = &'a Record> + 'a {
        set.iter().filter_map(|&i| self.arena.get(i))
    }

    fn index(&self, name: &Name) -> Option<usize> {
        self.keys.binary_search(&name.canonical_sort_key()).ok()
    }

    fn iter(&self) -> impl Iterator<Item = (&Name, &Node)> {
        self.names.iter().zip(&self.nodes)
    }
}

impl ZonePlan {
    pub fn new(
        apex: &Name,
        records: Vec<Record>,
        keys: &[ZoneKey],
        settings: &SignerSettings,
    ) -> Result<ZonePlan, SignError> {
        let apex = apex.to_lowercase();
        let mut class = Class::IN;
        let mut records = records;
        if let Some(outside) = records.iter().find(|r| !r.owner.ends_with(&apex)) {
            return Err(SignError::OutOfZone {
                owner: outside.owner.to_string(),
                apex: apex.to_string(),
            });
        }
        // In place: a copy of a million records would touch as much memory
        // again.
        records.retain_mut(|record| {
            record.owner.make_lowercase();
            let at_apex = record.owner == apex;
            if at_apex && record.rtype() == Rtype::SOA {
                class = record.class;
            }
            !is_signer_output(record.rtype(), at_apex, settings)
        });
        let mut nodes = Nodes::build(records);
        let apex_index = nodes
            .index(&apex)
            .filter(|&i| {
                nodes
                    .nodes
                    .get(i)
                    .is_some_and(|n| n.contains_key(&Rtype::SOA.0))
            })
            .ok_or_else(|| SignError::NoSoa(apex.to_string()))?;
        let soa = nodes
            .nodes
            .get(apex_index)
            .and_then(|n| n.get(&Rtype::SOA.0))
            .and_then(|set| set.first())
            .and_then(|&i| nodes.arena.get(i))
            .ok_or_else(|| SignError::NoSoa(apex.to_string()))?;
        let negative_ttl = match &soa.rdata {
            // RFC 9077 §3: the lesser of the SOA's TTL and MINIMUM.
            Rdata::Soa(s) => s.minimum.min(soa.ttl),
            _ => soa.ttl,
        };
        let dnskey_ttl = settings.dnskey_ttl.unwrap_or(soa.ttl);

        let published: Vec<&ZoneKey> = keys
            .iter()
            .filter(|k| k.timing.is_published(settings.now))
            .collect();
        let record = |rdata: Rdata| Record {
            owner: apex.clone(),
            class,
            ttl: dnskey_ttl,
            rdata,
        };
        let mut apex_additions: Vec<Record> = published
            .iter()
            .map(|key| record(Rdata::Dnskey(key.dnskey().clone())))
            .collect();
        if settings.publish_cds {
            let wanted = |k: &&&ZoneKey| {
                k.role.signs_key_set()
                    && settings
                        .cds_key_tags
                        .as_ref()
                        .is_none_or(|tags| tags.contains(&k.key_tag()))
            };
            for key in published.iter().filter(wanted) {
                apex_additions.push(record(Rdata::Cdnskey(key.dnskey().clone())));
                apex_additions.push(record(Rdata::Cds(key.ds(&apex, DigestType::Sha256))));
            }
        }
        if let Denial::Nsec3(params) = &settings.denial {
            apex_additions.push(Record {
                owner: apex.clone(),
                class,
                // BIND and Knot publish NSEC3PARAM with TTL 0: only signers
                // read it.
                ttl: 0,
                rdata: Rdata::Nsec3param(Nsec3param {
                    hash_algorithm: NSEC3_HASH_SHA1,
                    flags: 0,
                    iterations: params.iterations,
                    salt: params.salt.clone(),
                }),
            });
        }
        for r in apex_additions {
            nodes.add(apex_index, r);
        }

        let standing = classify(&apex, &nodes);
        let chain = match &settings.denial {
            Denial::Nsec => {
                add_nsec_chain(&apex, class, negative_ttl, &mut nodes, &standing);
                Vec::new()
            }
            Denial::Nsec3(params) => {
                nsec3_chain(&apex, class, negative_ttl, &nodes, &standing, params)?
            }
        };
        let rrsets: usize = nodes.nodes.iter().map(BTreeMap::len).sum();
        let mut jobs = Vec::with_capacity(rrsets.saturating_add(chain.len()));
        for ((name, node), standing) in nodes.iter().zip(&standing) {
            for (&rtype, set) in node {
                let rtype = Rtype(rtype);
                let signed = match standing {
                    Standing::Authoritative => true,
                    Standing::Delegation { .. } => matches!(rtype, Rtype::DS | Rtype::NSEC),
                    Standing::Occluded => false,
                };
                let Some(&first_record) = set.first() else {
                    continue;
                };
                if signed {
                    let ttl = nodes.records(set).next().map_or(0, |r| r.ttl);
                    jobs.push(SignJob {
                        first_record,
                        rrset: CanonicalRrset::new(
                            name,
                            class,
                            rtype,
                            ttl,
                            nodes.records(set).map(|r| &r.rdata),
                        ),
                        by_key_signing_keys: *name == apex
                            && matches!(rtype, Rtype::DNSKEY | Rtype::CDS | Rtype::CDNSKEY),
                    });
                }
            }
        }
        // The NSEC3 chain goes after the arena (order does not matter to the
        // zone builder or the printer, which sort for themselves), so the
        // arena, the zone's bulk, is never copied.
        let mut out = nodes.arena;
        out.reserve(chain.len());
        for record in chain {
            jobs.push(SignJob {
                first_record: out.len(),
                rrset: CanonicalRrset::new(
                    &record.owner,
                    class,
                    Rtype::NSEC3,
                    record.ttl,
                    [&record.rdata],
                ),
                by_key_signing_keys: false,
            });
            out.push(record);
        }
        Ok(ZonePlan {
            apex,
            records: out,
            jobs,
        })
    }

    pub fn apex(&self) -> &Name {
        &self.apex
    }

    pub fn jobs(&self) -> &[SignJob] {
        &self.jobs
    }

    /// The zone's records, DNSKEY and chain included, without signatures.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    pub fn into_records(self) -> Vec<Record> {
        self.records
    }

    /// Signs `jobs` (any slice of `jobs()`) with the keys active at `now`
    /// (see [`signers`] for which key signs what) into `out`, keeping each
    /// signature in `reuse`'s cache
    /// whose RRset is unchanged, whose key still signs, and that stays
    /// valid for the refresh interval given with it (seconds); returns how
    /// many were kept.
    pub fn sign_into(
        &self,
        jobs: &[SignJob],
        keys: &[ZoneKey],
        now: u64,
        validity: SignatureValidity,
        reuse: Option<(&SignatureCache, u32)>,
        out: &mut Vec<Signature>,
    ) -> Result<usize, SignError> {
        let (key_set_signers, zone_signers) = signers(keys, now);
        out.reserve(jobs.len().saturating_mul(zone_signers.len()));
        let mut signer = RrsetSigner::new(&self.apex, validity);
        let mut kept = 0usize;
        let now32 = crate::time::rrsig_time(now);
        for job in jobs {
            let signers = if job.by_key_signing_keys {
                &key_set_signers
            } else {
                &zone_signers
            };
            if signers.is_empty() {
                return Err(SignError::NoActiveKey(job.rrset.rtype));
            }
            let print = reuse.map(|_| fingerprint(&job.rrset));
            for key in signers {
                let cached = reuse.zip(print).and_then(|((cache, refresh), print)| {
                    cache.reusable(
                        &job.rrset,
                        print,
                        key.key_tag(),
                        key.algorithm_number(),
                        now32,
                        refresh,
                    )
                });
                let fields = match cached {
                    Some(fields) => {
                        kept = kept.saturating_add(1);
                        fields
                    }
                    None => signer.sign(&job.rrset, key)?,
                };
                out.push(Signature {
                    covers: job.first_record,
                    fields,
                });
            }
        }
        Ok(kept)
    }

    /// How many signatures signing every job makes with `keys` at `now`
    /// (an upper bound where a job has no signer: that is an error anyway).
    pub fn signature_count(&self, keys: &[ZoneKey], now: u64) -> usize {
        let (key_set, zone) = signers(keys, now);
        self.jobs
            .iter()
            .map(|job| {
                if job.by_key_signing_keys {
                    key_set.len()
                } else {
                    zone.len()
                }
            })
            .sum()
    }
}

/// The keys that sign key-set RRsets and the rest, at `now`.
/// RFC 4035 §2.2 and RFC 6840 §5.11: every algorithm in the DNSKEY RRset
/// signs every RRset, so keys are chosen per algorithm; where an
/// algorithm has no active key of the role a job needs, all its active
/// keys sign it, which is how a lone key acts as a CSK.
fn signers(keys: &[ZoneKey], now: u64) -> (Vec<&ZoneKey>, Vec<&ZoneKey>) {
    let active: Vec<&ZoneKey> = keys.iter().filter(|k| k.timing.is_active(now)).collect();
    let mut algorithms: Vec<u8> = active.iter().map(|k| k.algorithm_number()).collect();
    algorithms.sort_unstable();
    algorithms.dedup();
    let pick = |key_set: bool| -> Vec<&ZoneKey> {
        let mut chosen = Vec::new();
        for &algorithm in &algorithms {
            let of_algorithm = active
                .iter()
                .copied()
                .filter(|k| k.algorithm_number() == algorithm);
            let for_role: Vec<&ZoneKey> = of_algorithm
                .clone()
                .filter(|k| {
                    if key_set {
                        k.role.signs_key_set()
                    } else {
                        k.role.signs_zone()
                    }
                })
                .collect();
            if for_role.is_empty() {
                chosen.extend(of_algorithm);
            } else {
                chosen.extend(for_role);
            }
        }
        chosen
    };
    (pick(true), pick(false))
}

/// Marks every name: authoritative, a delegation point, or below a cut or DNAME.
/// Canonical order puts a name's descendants right after it, so one pass with
/// the innermost cut in hand is enough.
fn classify(apex: &Name, nodes: &Nodes) -> Vec<Standing> {
    let mut standing = Vec::with_capacity(nodes.names.len());
    let mut cut: Option<&Name> = None;
    for (name, node) in nodes.iter() {
        if cut.is_some_and(|c| name.is_below(c)) {
            standing.push(Standing::Occluded);
            continue;
        }
        cut = None;
        if name != apex && node.contains_key(&Rtype::NS.0) {
            standing.push(Standing::Delegation {
                secure: node.contains_key(&Rtype::DS.0),
            });
            cut = Some(name);
        } else {
            standing.push(Standing::Authoritative);
            if node.contains_key(&Rtype::DNAME.0) {
                // RFC 6672 §2.4: names below a DNAME are occluded.
                cut = Some(name);
            }
        }
    }
    standing
}

fn bitmap_for(node: &Node, standing: Standing, chain_type: Rtype) -> TypeBitmap {
    let mut types: BTreeSet<Rtype> = match standing {
        Standing::Delegation { .. } => delegation_types(node).collect(),
        _ => node.keys().map(|&t| Rtype(t)).collect(),
    };
    let signed = match standing {
        Standing::Authoritative => !types.is_empty(),
        Standing::Delegation { secure } => secure,
        Standing::Occluded => false,
    };
    if chain_type == Rtype::NSEC {
        // The NSEC record itself is signed, so RRSIG is always present.
        types.insert(Rtype::NSEC);
        types.insert(Rtype::RRSIG);
    } else if signed {
        types.insert(Rtype::RRSIG);
    }
    TypeBitmap::new(types)
}

/// RFC 4034 §4: one NSEC per authoritative name and delegation point, in
/// canonical order, the last pointing back to the apex.
fn add_nsec_chain(apex: &Name, class: Class, ttl: u32, nodes: &mut Nodes, standing: &[Standing]) {
    let chain: Vec<usize> = standing
        .iter()
        .enumerate()
        .filter(|(_, s)| **s != Standing::Occluded)
        .map(|(i, _)| i)
        .collect();
    nodes.arena.reserve(chain.len());
    let nexts: Vec<Name> = chain
        .iter()
        .skip(1)
        .filter_map(|&i| nodes.names.get(i).cloned())
        .chain(std::iter::once(apex.clone()))
        .collect();
    for (&i, next) in chain.iter().zip(nexts) {
        let (Some(name), Some(state), Some(node)) = (
            nodes.names.get(i).cloned(),
            standing.get(i).copied(),
            nodes.nodes.get(i),
        ) else {
            continue;
        };
        let record = Record {
            owner: name,
            class,
            ttl,
            rdata: Rdata::Nsec(Nsec {
                next,
                types: bitmap_for(node, state, Rtype::NSEC),
            }),
        };
        nodes.add(i, record);
    }
}

/// RFC 5155 §7.1: an NSEC3 for every authoritative name, delegation point and
/// empty non-terminal, ordered by hash; with opt-out, unsigned delegations
/// are left out and every record carries the Opt-Out flag.
fn nsec3_chain(
    apex: &Name,
    class: Class,
    ttl: u32,
    nodes: &Nodes,
    standing: &[Standing],
    params: &Nsec3Settings,
) -> Result<Vec<Record>, SignError> {
    let empty = Node::new();
    let mut members: Vec<(Name, Standing, &Node)> = Vec::with_capacity(nodes.names.len());
    let mut empty_non_terminals: HashSet<Name> = HashSet::new();
    for ((name, node), &state) in nodes.iter().zip(standing) {
        match state {
            Standing::Occluded => continue,
            Standing::Delegation { secure: false } if params.opt_out => {}
            _ => members.push((name.clone(), state, node)),
        }
        // Empty non-terminals between the name and the apex.
        let mut ancestor = name.parent();
        while let Some(a) = ancestor {
            if !a.is_below(apex) || nodes.index(&a).is_some() || empty_non_terminals.contains(&a) {
                break;
            }
            ancestor = a.parent();
            empty_non_terminals.insert(a);
        }
    }
    members.extend(
        empty_non_terminals
            .into_iter()
            .map(|name| (name, Standing::Authoritative, &empty)),
    );

    let mut hashed: Vec<([u8; 20], Name, TypeBitmap)> = Vec::with_capacity(members.len());
    for (name, state, node) in &members {
        let mut bitmap_types: BTreeSet<Rtype> =
            bitmap_for(node, *state, Rtype::NSEC3).iter().collect();
        if name == apex {
            bitmap_types.insert(Rtype::NSEC3PARAM);
        }
        let hash = nsec3_hash(name.as_wire(), &params.salt, params.iterations);
        hashed.push((hash, name.clone(), TypeBitmap::new(bitmap_types)));
    }
    hashed.sort_unstable_by_key(|h| h.0);
    for pair in hashed.windows(2) {
        if let [a, b] = pair {
            if a.0 == b.0 {
                return Err(SignError::Nsec3Collision(a.1.to_string(), b.1.to_string()));
            }
        }
    }
    let flags = if params.opt_out {
        NSEC3_FLAG_OPT_OUT
    } else {
        0
    };
    let first_hash = hashed.first().map(|h| h.0);
    let nexts = hashed.iter().skip(1).map(|h| h.0).chain(first_hash);
    let mut out = Vec::with_capacity(hashed.len());
    for ((hash, _, types), next) in hashed.iter().zip(nexts) {
        let owner = apex
            .prepend_label(base32hex_encode(hash).as_bytes())
            .map_err(|_| SignError::NameTooLong(apex.to_string()))?;
        out.push(Record {
            owner,
            class,
            ttl,
            rdata: Rdata::Nsec3(Nsec3 {
                hash_algorithm: NSEC3_HASH_SHA1,
                flags,
                iterations: params.iterations,
                salt: params.salt.clone(),
                next_hashed: next.to_vec(),
                types: types.clone(),
            }),
        });
    }
    Ok(out)
}
