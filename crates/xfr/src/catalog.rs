//! Catalog zones (RFC 9432): a zone whose records list the member zones a
//! set of servers should serve, so that adding a zone on the primary reaches
//! every secondary through an ordinary zone transfer.
//!
//! Both roles, as pure functions:
//! - the producer turns a list of member zones into the catalog zone's
//!   records ([`catalog_records`]);
//! - the consumer reads a catalog zone into its members ([`read_catalog`])
//!   and compares two versions of it ([`catalog_changes`]) so a secondary
//!   knows which member zones to create, delete, start afresh or reconfigure.
//!
//! The layout, with `$CATZ` the catalog's apex:
//! ```text
//! $CATZ                    SOA  ...
//! $CATZ                    NS   invalid.
//! version.$CATZ            TXT  "2"
//! <id>.zones.$CATZ         PTR  example.com.
//! group.<id>.zones.$CATZ   TXT  "some-group"
//! coo.<id>.zones.$CATZ     PTR  new-catalog.example.
//! ```

use std::collections::{BTreeMap, BTreeSet};

use bulwark_crypto::{ds_digest, DigestType};
use bulwark_proto::rdata::Soa;
use bulwark_proto::{Class, Name, Rdata, Record};
use bulwark_zone::Zone;

/// RFC 9432 §4.3.1: the one schema version this memo defines.
pub const CATALOG_VERSION: &[u8] = b"2";

/// RFC 9432 §4.1: "A single NS RR with an NSDNAME field containing the
/// absolute name "invalid." is RECOMMENDED" — a catalog is not meant to be
/// resolved, only transferred.
const CATALOG_NS: &[u8] = b"\x07invalid\x00";

const VERSION_LABEL: &[u8] = b"version";
const ZONES_LABEL: &[u8] = b"zones";
const GROUP_LABEL: &[u8] = b"group";
const COO_LABEL: &[u8] = b"coo";

/// Octets of SHA-256 kept for a member node label: 8 octets, 16 hex digits.
const MEMBER_ID_OCTETS: usize = 8;

/// TXT character-strings hold at most 255 octets (RFC 1035 §3.3).
const MAX_CHARACTER_STRING: usize = 255;

/// One member zone as the producer is told about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberSpec {
    pub zone: Name,
    /// RFC 9432 §4.4.2: zero, one or more `group` values.
    pub groups: Vec<String>,
    /// RFC 9432 §4.4.1: the catalog this member is migrating to.
    pub coo: Option<Name>,
}

impl MemberSpec {
    /// A member with no properties.
    pub fn new(zone: Name) -> MemberSpec {
        MemberSpec {
            zone,
            groups: Vec::new(),
            coo: None,
        }
    }
}

/// One member zone as read from a catalog zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogMember {
    /// The PTR target of the member node.
    pub zone: Name,
    /// The member node label, `<unique-N>` in RFC 9432 §4.2, lowercased.
    pub unique_id: Vec<u8>,
    /// `group` values, sorted and without duplicates. RFC 9432 §4.4.2 lets
    /// the consumer ignore values it does not understand: a value that is not
    /// UTF-8 cannot name any configured group, so it is left out here.
    pub groups: Vec<String>,
    /// The `coo` property: the catalog this member zone is migrating to.
    pub coo: Option<Name>,
}

/// The member zones of a catalog zone, sorted by zone name (canonical order).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalog {
    pub members: Vec<CatalogMember>,
}

impl Catalog {
    pub fn member(&self, zone: &Name) -> Option<&CatalogMember> {
        self.members
            .binary_search_by(|m| m.zone.cmp(zone))
            .ok()
            .and_then(|i| self.members.get(i))
    }
}

/// What a consumer must do after a new version of a catalog zone arrives.
/// Each list is sorted by zone name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatalogChanges {
    /// Member zones new to the catalog: create them.
    pub added: Vec<CatalogMember>,
    /// Member zones gone from the catalog: delete them and their state
    /// (RFC 9432 §5.3).
    pub removed: Vec<CatalogMember>,
    /// Member zones whose member node label changed: RFC 9432 §5.4 makes this
    /// a removal with all associated state followed by an addition (§5.6, a
    /// zone state reset). Holds the new member.
    pub reset: Vec<CatalogMember>,
    /// Same zone and label, different `group` values: reconfigure.
    pub regrouped: Vec<CatalogMember>,
    /// Same zone and label, a `coo` property added, changed or removed.
    /// RFC 9432 §4.4.1: the migration itself waits until the new catalog
    /// lists the zone; this only says the old catalog now points elsewhere.
    pub coo_changed: Vec<CatalogMember>,
}

impl CatalogChanges {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.reset.is_empty()
            && self.regrouped.is_empty()
            && self.coo_changed.is_empty()
    }
}

/// Why a catalog zone could not be produced or must not be processed.
///
/// The consumer errors are RFC 9432's "broken catalog zone": §5.1 says such
/// a zone loses its catalog meaning, and the members it configured before
/// stay as they are until a correct version arrives.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    #[error("no version TXT record at the catalog apex (RFC 9432 §4.3.1)")]
    MissingVersion,
    #[error("{count} version TXT records; exactly one is allowed (RFC 9432 §4.3.1)")]
    MultipleVersions { count: usize },
    #[error("schema version {version:?}; only \"2\" is supported (RFC 9432 §4.3.1)")]
    UnsupportedVersion { version: String },
    #[error("member node {owner} has {count} PTR records; exactly one is allowed (RFC 9432 §4.2)")]
    MultipleMemberPtrs { owner: Box<Name>, count: usize },
    #[error("member zone {zone} is listed under both {first} and {second} (RFC 9432 §4.2)")]
    DuplicateMember {
        zone: Box<Name>,
        first: Box<Name>,
        second: Box<Name>,
    },
    #[error(
        "coo property {owner} has {count} PTR records; exactly one is allowed (RFC 9432 §4.4.1)"
    )]
    MultipleCoo { owner: Box<Name>, count: usize },
    #[error(
        "{owner} has class {class}; every record of a catalog zone must be IN (RFC 9432 §4.2)"
    )]
    NotClassIn { owner: Box<Name>, class: Class },
    #[error("member zone {zone} is given more than once")]
    DuplicateMemberSpec { zone: Box<Name> },
    #[error("the catalog's names for member zone {zone} do not fit in 255 octets")]
    NameTooLong { zone: Box<Name> },
}

// ---------------------------------------------------------------------------
// Producer

/// The member node label for `zone`: the first 8 octets of SHA-256 over the
/// zone's lowercased wire-form name, as 16 lowercase hex digits.
///
/// Why this derivation: RFC 9432 §5.4 makes a changed label a zone reset on
/// every consumer (zone data and DNSSEC keys dropped), so the label must stay
/// the same for a given zone whatever else happens — a producer restart, a
/// reordered or grown member list. A function of the name alone gives that
/// without remembering anything. SHA-256 rather than a fast non-crypto hash
/// (FNV and the like) because whoever can add one zone to a shared catalog
/// could otherwise pick a name that collides with another customer's zone and,
/// through the collision handling below, change that zone's label and reset
/// it on every secondary; with 64 bits of SHA-256 finding such a name costs
/// about 2^64 hashes. It is computed through `ds_digest`, whose contract is
/// SHA-256 over the owner followed by the rdata, here with no rdata. This
/// derivation must never change: a test pins known values.
pub fn member_id(zone: &Name) -> Vec<u8> {
    let lower = zone.to_lowercase();
    let digest = ds_digest(DigestType::Sha256, lower.as_wire(), &[]);
    hex_lower(digest.get(..MEMBER_ID_OCTETS).unwrap_or(&digest))
}

fn hex_lower(bytes: &[u8]) -> Vec<u8> {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = Vec::with_capacity(bytes.len().saturating_mul(2));
    for &b in bytes {
        for nibble in [b >> 4, b & 0x0f] {
            if let Some(&d) = DIGITS.get(usize::from(nibble)) {
                out.push(d);
            }
        }
    }
    out
}

/// Labels for `members` (already sorted by zone name, canonical order).
///
/// Two zones whose derived labels collide: the one first in canonical order
/// keeps the plain label, the next gets `-1`, then `-2`, and so on. Suffixed
/// labels are longer than any plain one, so they can only clash with each
/// other, and the loop moves past those too. The result depends only on the
/// set of member names, never on input order.
fn assign_member_ids(members: &[&MemberSpec], id_of: impl Fn(&Name) -> Vec<u8>) -> Vec<Vec<u8>> {
    let mut taken: BTreeSet<Vec<u8>> = BTreeSet::new();
    let mut ids = Vec::with_capacity(members.len());
    for m in members {
        let base = id_of(&m.zone);
        let mut id = base.clone();
        let mut counter: u32 = 0;
        while taken.contains(&id) {
            counter = counter.saturating_add(1);
            id = base.clone();
            id.push(b'-');
            id.extend_from_slice(counter.to_string().as_bytes());
        }
        taken.insert(id.clone());
        ids.push(id);
    }
    ids
}

/// The records of a catalog zone at `apex` listing `members`: the SOA (as
/// given: the caller picks the serial, which RFC 9432 §4.1 requires to
/// increase with every change), the NS `invalid.` (§4.1), `version` TXT "2"
/// (§4.3.1), and for each member its PTR (§4.2), `group` TXTs (§4.4.2) and
/// `coo` PTR (§4.4.1). Every record is class IN with `ttl`.
///
/// The output depends only on the set of members, not their order, so the
/// same list always gives the same zone and an IXFR between two versions
/// carries only what changed.
pub fn catalog_records(
    apex: &Name,
    members: &[MemberSpec],
    soa: &Soa,
    ttl: u32,
) -> Result<Vec<Record>, CatalogError> {
    let mut sorted: Vec<&MemberSpec> = members.iter().collect();
    sorted.sort_by(|a, b| a.zone.cmp(&b.zone));
    for pair in sorted.windows(2) {
        if let [a, b] = pair {
            if a.zone == b.zone {
                return Err(CatalogError::DuplicateMemberSpec {
                    zone: Box::new(b.zone.clone()),
                });
            }
        }
    }
    let too_long = |zone: &Name| CatalogError::NameTooLong {
        zone: Box::new(zone.clone()),
    };
    let record = |owner: Name, rdata: Rdata| Record {
        owner,
        class: Class::IN,
        ttl,
        rdata,
    };
    let zones = apex
        .prepend_label(ZONES_LABEL)
        .map_err(|_| too_long(apex))?;
    let version = apex
        .prepend_label(VERSION_LABEL)
        .map_err(|_| too_long(apex))?;
    let ns = Name::from_wire(CATALOG_NS).map_err(|_| too_long(apex))?;

    let mut out = Vec::with_capacity(sorted.len().saturating_add(3));
    out.push(record(apex.clone(), Rdata::Soa(Box::new(soa.clone()))));
    out.push(record(apex.clone(), Rdata::Ns(ns)));
    out.push(record(version, Rdata::Txt(vec![CATALOG_VERSION.to_vec()])));

    let ids = assign_member_ids(&sorted, member_id);
    for (m, id) in sorted.iter().zip(ids) {
        let node = zones.prepend_label(&id).map_err(|_| too_long(&m.zone))?;
        out.push(record(node.clone(), Rdata::Ptr(m.zone.clone())));
        let mut groups: Vec<&String> = m.groups.iter().collect();
        groups.sort();
        groups.dedup();
        if !groups.is_empty() {
            let owner = node
                .prepend_label(GROUP_LABEL)
                .map_err(|_| too_long(&m.zone))?;
            for g in groups {
                out.push(record(
                    owner.clone(),
                    Rdata::Txt(character_strings(g.as_bytes())),
                ));
            }
        }
        if let Some(coo) = &m.coo {
            let owner = node
                .prepend_label(COO_LABEL)
                .map_err(|_| too_long(&m.zone))?;
            out.push(record(owner, Rdata::Ptr(coo.clone())));
        }
    }
    Ok(out)
}

/// `value` as TXT character-strings: one string, or 255-octet pieces when it
/// is longer (the consumer joins them back).
fn character_strings(value: &[u8]) -> Vec<Vec<u8>> {
    if value.is_empty() {
        return vec![Vec::new()];
    }
    value
        .chunks(MAX_CHARACTER_STRING)
        .map(<[u8]>::to_vec)
        .collect()
}

// ---------------------------------------------------------------------------
// Consumer

/// What one member node holds, gathered before it is judged.
#[derive(Default)]
struct MemberNode {
    owner: Option<Name>,
    ptrs: Vec<Name>,
    groups: Vec<Vec<u8>>,
    coos: Vec<Name>,
}

/// Reads the catalog zone `zone` (its apex is the catalog's name).
pub fn read_catalog(zone: &Zone) -> Result<Catalog, CatalogError> {
    let records: Vec<Record> = zone.records().collect();
    read_catalog_records(zone.apex(), &records)
}

/// Reads a catalog zone at `apex` from its records (as received by AXFR, or
/// from a zone file). Identical records count once, as in an RRset.
///
/// RFC 9432 §3 and §4.3: records the consumer does not understand are
/// ignored — unknown properties, known property names with other types,
/// custom properties below `ext` (§4.5), anything outside `version` and
/// `zones`, and properties of member nodes that have no PTR.
pub fn read_catalog_records(apex: &Name, records: &[Record]) -> Result<Catalog, CatalogError> {
    let version_owner = apex.prepend_label(VERSION_LABEL).ok();
    let zones = apex.prepend_label(ZONES_LABEL).ok();
    let zones_labels = zones.as_ref().map_or(0, Name::label_count);

    let mut versions: Vec<&[Vec<u8>]> = Vec::new();
    let mut nodes: BTreeMap<Vec<u8>, MemberNode> = BTreeMap::new();
    for r in records {
        if !r.owner.ends_with(apex) {
            continue;
        }
        if r.class != Class::IN {
            return Err(CatalogError::NotClassIn {
                owner: Box::new(r.owner.clone()),
                class: r.class,
            });
        }
        if version_owner.as_ref() == Some(&r.owner) {
            if let Rdata::Txt(strings) = &r.rdata {
                if !versions.contains(&strings.as_slice()) {
                    versions.push(strings);
                }
            }
            continue;
        }
        if !zones.as_ref().is_some_and(|z| r.owner.is_below(z)) {
            continue;
        }
        let depth = r.owner.label_count().saturating_sub(zones_labels);
        let labels: Vec<&[u8]> = r.owner.labels().take(depth).collect();
        match (labels.as_slice(), &r.rdata) {
            ([id], Rdata::Ptr(target)) => {
                let node = nodes.entry(id.to_ascii_lowercase()).or_default();
                node.owner.get_or_insert_with(|| r.owner.to_lowercase());
                if !node.ptrs.contains(target) {
                    node.ptrs.push(target.clone());
                }
            }
            ([property, id], Rdata::Txt(strings)) if property.eq_ignore_ascii_case(GROUP_LABEL) => {
                let value = strings.concat();
                let node = nodes.entry(id.to_ascii_lowercase()).or_default();
                if !node.groups.contains(&value) {
                    node.groups.push(value);
                }
            }
            ([property, id], Rdata::Ptr(target)) if property.eq_ignore_ascii_case(COO_LABEL) => {
                let node = nodes.entry(id.to_ascii_lowercase()).or_default();
                if !node.coos.contains(target) {
                    node.coos.push(target.clone());
                }
            }
            _ => {}
        }
    }

    check_version(&versions)?;

    let mut members: Vec<CatalogMember> = Vec::with_capacity(nodes.len());
    let mut owners: BTreeMap<Name, Name> = BTreeMap::new();
    for (id, node) in nodes {
        let Some(owner) = node.owner else {
            continue; // properties without a member node PTR: nothing to serve
        };
        let zone = match node.ptrs.as_slice() {
            [zone] => zone.clone(),
            more => {
                return Err(CatalogError::MultipleMemberPtrs {
                    owner: Box::new(owner),
                    count: more.len(),
                })
            }
        };
        let coo = match node.coos.as_slice() {
            [] => None,
            [coo] => Some(coo.clone()),
            more => {
                return Err(CatalogError::MultipleCoo {
                    owner: Box::new(owner.prepend_label(COO_LABEL).unwrap_or(owner)),
                    count: more.len(),
                })
            }
        };
        // RFC 9432 §4.2: two member node labels holding the same PTR value
        // make the catalog broken, not just one of the two members.
        if let Some(first) = owners.insert(zone.clone(), owner.clone()) {
            let (first, second) = if first < owner {
                (first, owner)
            } else {
                (owner, first)
            };
            return Err(CatalogError::DuplicateMember {
                zone: Box::new(zone),
                first: Box::new(first),
                second: Box::new(second),
            });
        }
        let mut groups: Vec<String> = node
            .groups
            .into_iter()
            .filter_map(|g| String::from_utf8(g).ok())
            .collect();
        groups.sort();
        members.push(CatalogMember {
            zone,
            unique_id: id,
            groups,
            coo,
        });
    }
    members.sort_by(|a, b| a.zone.cmp(&b.zone));
    Ok(Catalog { members })
}

/// RFC 9432 §4.3.1: exactly one `version` TXT record, with the value "2".
/// Its character-strings are joined, as for any TXT value read as one text.
fn check_version(versions: &[&[Vec<u8>]]) -> Result<(), CatalogError> {
    match versions {
        [] => Err(CatalogError::MissingVersion),
        [one] => {
            let value = one.concat();
            if value == CATALOG_VERSION {
                Ok(())
            } else {
                Err(CatalogError::UnsupportedVersion {
                    version: String::from_utf8_lossy(&value).into_owned(),
                })
            }
        }
        more => Err(CatalogError::MultipleVersions { count: more.len() }),
    }
}

/// What changed between two versions of one catalog, per member zone.
///
/// A member is matched by zone name. Same name, new label: `reset` (RFC 9432
/// §5.4), whatever else changed, since the zone starts afresh with the new
/// properties. Same name and label: `regrouped` when its groups differ and
/// `coo_changed` when its `coo` differs (both, if both changed). Migration
/// between two catalogs (§4.4.1, §5.5) involves both catalogs and is left to
/// the caller, which sees the `coo` here and the zone in the other catalog.
pub fn catalog_changes(old: &Catalog, new: &Catalog) -> CatalogChanges {
    let old_by_zone: BTreeMap<&Name, &CatalogMember> =
        old.members.iter().map(|m| (&m.zone, m)).collect();
    let new_by_zone: BTreeMap<&Name, &CatalogMember> =
        new.members.iter().map(|m| (&m.zone, m)).collect();
    let mut changes = CatalogChanges::default();
    for (zone, m) in &new_by_zone {
        match old_by_zone.get(zone) {
            None => changes.added.push((*m).clone()),
            Some(before) if before.unique_id != m.unique_id => changes.reset.push((*m).clone()),
            Some(before) => {
                if before.groups != m.groups {
                    changes.regrouped.push((*m).clone());
                }
                if before.coo != m.coo {
                    changes.coo_changed.push((*m).clone());
                }
            }
        }
    }
    for (zone, m) in &old_by_zone {
        if !new_by_zone.contains_key(zone) {
            changes.removed.push((*m).clone());
        }
    }
    changes
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    fn name(text: &str) -> Name {
        text.parse().unwrap()
    }

    // Computed independently (Python hashlib) over the lowercased wire form.
    // If this fails, every consumer would reset every member zone.
    #[test]
    fn member_id_is_pinned_sha256_prefix_of_lowercased_wire_name() {
        for (zone, id) in [
            ("example.com.", "902e9c464fa43fca"),
            ("EXAMPLE.Com.", "902e9c464fa43fca"),
            ("example.net.", "5aaf3ac400ef27d3"),
            (".", "6e340b9cffb37a98"),
        ] {
            assert_eq!(member_id(&name(zone)), id.as_bytes(), "{zone}");
        }
    }

    #[test]
    fn colliding_ids_get_counters_in_canonical_order() {
        let specs: Vec<MemberSpec> = ["a.example.", "b.example.", "c.example."]
            .into_iter()
            .map(|z| MemberSpec::new(name(z)))
            .collect();
        let refs: Vec<&MemberSpec> = specs.iter().collect();
        let ids = assign_member_ids(&refs, |_| b"same".to_vec());
        assert_eq!(
            ids,
            vec![b"same".to_vec(), b"same-1".to_vec(), b"same-2".to_vec()]
        );
    }

    #[test]
    fn suffixed_ids_step_past_an_earlier_plain_id_that_looks_suffixed() {
        let specs: Vec<MemberSpec> = ["a.example.", "b.example.", "c.example."]
            .into_iter()
            .map(|z| MemberSpec::new(name(z)))
            .collect();
        let refs: Vec<&MemberSpec> = specs.iter().collect();
        // a's own id is "x-1"; b and c both derive "x".
        let ids = assign_member_ids(&refs, |z| {
            if *z == name("a.example.") {
                b"x-1".to_vec()
            } else {
                b"x".to_vec()
            }
        });
        assert_eq!(ids, vec![b"x-1".to_vec(), b"x".to_vec(), b"x-2".to_vec()]);
    }

    #[test]
    fn long_values_are_split_into_255_octet_character_strings() {
        let long = vec![b'g'; 600];
        let parts = character_strings(&long);
        assert_eq!(
            parts.iter().map(Vec::len).collect::<Vec<_>>(),
            vec![255, 255, 90]
        );
        assert_eq!(parts.concat(), long);
        assert_eq!(character_strings(b""), vec![Vec::<u8>::new()]);
    }

    #[test]
    fn version_must_be_a_single_txt_with_value_2() {
        let two = vec![b"2".to_vec()];
        let split = vec![b"2".to_vec(), Vec::new()];
        let one = vec![b"1".to_vec()];
        assert_eq!(check_version(&[&two]), Ok(()));
        assert_eq!(check_version(&[&split]), Ok(()));
        assert_eq!(check_version(&[]), Err(CatalogError::MissingVersion));
        assert_eq!(
            check_version(&[&one]),
            Err(CatalogError::UnsupportedVersion {
                version: "1".into()
            })
        );
        assert_eq!(
            check_version(&[&two, &one]),
            Err(CatalogError::MultipleVersions { count: 2 })
        );
    }

    fn txt(owner: &str, value: &[u8]) -> Record {
        Record {
            owner: name(owner),
            class: Class::IN,
            ttl: 0,
            rdata: Rdata::Txt(vec![value.to_vec()]),
        }
    }

    fn ptr(owner: &str, target: &str) -> Record {
        Record {
            owner: name(owner),
            class: Class::IN,
            ttl: 0,
            rdata: Rdata::Ptr(name(target)),
        }
    }

    #[test]
    fn group_values_that_are_not_utf8_are_ignored() {
        let apex = name("cat.example.");
        let records = vec![
            txt("version.cat.example.", b"2"),
            ptr("m1.zones.cat.example.", "example.com."),
            txt("group.m1.zones.cat.example.", b"\xff\xfe"),
            txt("group.m1.zones.cat.example.", b"ok"),
        ];
        let catalog = read_catalog_records(&apex, &records).unwrap();
        assert_eq!(catalog.members[0].groups, vec!["ok".to_string()]);
    }

    #[test]
    fn repeated_identical_records_count_once() {
        let apex = name("cat.example.");
        let records = vec![
            txt("version.cat.example.", b"2"),
            txt("version.cat.example.", b"2"),
            ptr("m1.zones.cat.example.", "example.com."),
            ptr("M1.zones.cat.example.", "EXAMPLE.com."),
        ];
        let catalog = read_catalog_records(&apex, &records).unwrap();
        assert_eq!(catalog.members.len(), 1);
        assert_eq!(catalog.members[0].unique_id, b"m1");
    }

    #[test]
    fn a_record_of_another_class_breaks_the_catalog() {
        let apex = name("cat.example.");
        let mut chaos = ptr("m1.zones.cat.example.", "example.com.");
        chaos.class = Class::CH;
        let records = vec![txt("version.cat.example.", b"2"), chaos];
        assert!(matches!(
            read_catalog_records(&apex, &records),
            Err(CatalogError::NotClassIn { .. })
        ));
    }
}
