//! Load-time checks on a built zone: what would make answers wrong or
//! surprising. Errors stop a zone from loading; warnings are reported and the
//! zone is served.
//!
//! Record-level problems (out-of-zone owners, meta types, TTL range, class,
//! differing TTLs in an RRset) are found while grouping records, in `build`;
//! this module checks the shape of the grouped zone.

use core::fmt;

use bulwark_proto::wire::Reader;
use bulwark_proto::{Class, Name, Rtype};

use crate::fork::{join_if_large, Fork, InTurn};
use crate::zone::{suffixes, Node, Zone};

/// How bad a [`Problem`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The zone is not loaded.
    Error,
    /// Reported; the zone is loaded.
    Warning,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        })
    }
}

/// One finding about a zone's data: the owner and type concerned, and what is wrong.
///
/// Records carry no source position, so a problem names the record by owner and
/// type; the loader prefixes the file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub severity: Severity,
    pub owner: Name,
    /// The record type concerned, when the problem is about one type.
    pub rtype: Option<Rtype>,
    pub message: String,
}

impl Problem {
    pub fn error(owner: &Name, rtype: Option<Rtype>, message: impl Into<String>) -> Problem {
        Problem {
            severity: Severity::Error,
            owner: owner.clone(),
            rtype,
            message: message.into(),
        }
    }

    pub fn warning(owner: &Name, rtype: Option<Rtype>, message: impl Into<String>) -> Problem {
        Problem {
            severity: Severity::Warning,
            owner: owner.clone(),
            rtype,
            message: message.into(),
        }
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Problem {
    /// `owner TYPE: message`, with `warning: ` before the message for warnings.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.owner)?;
        if let Some(t) = self.rtype {
            write!(f, " {t}")?;
        }
        f.write_str(": ")?;
        if self.severity == Severity::Warning {
            f.write_str("warning: ")?;
        }
        f.write_str(&self.message)
    }
}

/// Types that may sit beside a CNAME (RFC 2181 §10.1, RFC 4035 §2.5: the DNSSEC
/// records of the CNAME itself).
const CNAME_COMPANIONS: [Rtype; 3] = [Rtype::CNAME, Rtype::RRSIG, Rtype::NSEC];

/// Types that belong at a delegation point: the NS set, the parent-side DS and
/// its proof (RFC 4035 §2.4, §2.3), and the cut's own address as glue when an NS
/// target is the cut itself.
const AT_CUT: [Rtype; 6] = [
    Rtype::NS,
    Rtype::DS,
    Rtype::RRSIG,
    Rtype::NSEC,
    Rtype::A,
    Rtype::AAAA,
];

/// Address types: the only data below a zone cut that is served (as glue).
const GLUE: [Rtype; 2] = [Rtype::A, Rtype::AAAA];

/// Runs every structural check on `zone`. Problems come sorted by owner
/// (canonical order), then errors before warnings.
pub fn check_zone(zone: &Zone) -> Vec<Problem> {
    check_zone_with(zone, &InTurn)
}

/// [`check_zone`], with the per-node checks of each half of the zone run
/// through `fork`.
pub fn check_zone_with(zone: &Zone, fork: &impl Fork) -> Vec<Problem> {
    let mut out = unsorted_problems(zone, fork, usize::MAX).problems;
    sort_problems(&mut out);
    out
}

/// What the checks found: every error, and the warnings up to a number, the
/// rest only counted. A zone can have a warning at most of its names (an MX
/// target without an address, say); the server logs a few and a count, and
/// a message and a `Problem` for each of the others cost 30 ms of a 0.40 s
/// load (the benchmark's 1M-record zone, 66,666 such warnings).
pub(crate) struct Findings {
    pub problems: Vec<Problem>,
    /// How many more warnings are kept in full.
    room: usize,
    /// Warnings found once there was no more room.
    pub unkept: usize,
}

impl Findings {
    pub fn new(room: usize) -> Findings {
        Findings {
            problems: Vec::new(),
            room,
            unkept: 0,
        }
    }

    /// Keeps `problem`; a warning only while there is room.
    pub fn push(&mut self, problem: Problem) {
        if problem.is_error() {
            self.problems.push(problem);
        } else if let Some(room) = self.room.checked_sub(1) {
            self.room = room;
            self.problems.push(problem);
        } else {
            self.unkept = self.unkept.saturating_add(1);
        }
    }

    /// A warning about `owner` (wire form), its message made only when kept.
    fn warning(&mut self, owner: &[u8], rtype: Option<Rtype>, message: impl FnOnce() -> String) {
        match self.room.checked_sub(1) {
            Some(room) => {
                self.room = room;
                self.problems
                    .push(Problem::warning(&name_of(owner), rtype, message()));
            }
            None => self.unkept = self.unkept.saturating_add(1),
        }
    }

    /// Adds what a check of a later part of the zone found.
    fn absorb(&mut self, mut later: Findings) {
        // Onto the longer list: the order is the sort's business.
        if later.problems.len() > self.problems.len() {
            core::mem::swap(&mut self.problems, &mut later.problems);
        }
        self.problems.append(&mut later.problems);
        self.unkept = self.unkept.saturating_add(later.unkept);
    }
}

/// The problems [`check_zone_with`] finds, in no particular order (a caller
/// adding its own sorts all of them once), with up to `warnings` warnings
/// kept from each half of the zone (see [`Findings`]): a caller wanting the
/// first few in zone order sorts and keeps those.
pub(crate) fn unsorted_problems(zone: &Zone, fork: &impl Fork, warnings: usize) -> Findings {
    let mut out = Findings::new(warnings);
    let apex = zone.apex().clone();
    // Only IN zones are answered (the answering engine serves IN data and the CH
    // identity names); a CH, NONE or ANY zone would otherwise be served as IN.
    if zone.class() != Class::IN {
        out.push(Problem::error(
            &apex,
            None,
            format!(
                "zones of class {} are not served; bulwark serves class IN zones",
                zone.class()
            ),
        ));
    }
    if zone.apex_node().is_none_or(Node::is_empty_nonterminal) {
        out.push(Problem::error(
            &apex,
            Some(Rtype::SOA),
            "no SOA record at the zone apex (RFC 1035 §5.2)",
        ));
        out.push(Problem::error(
            &apex,
            Some(Rtype::NS),
            "no NS records at the zone apex (RFC 1034 §4.2.1)",
        ));
    }
    let half = zone.node_count().div_ceil(2);
    let (first, second) = join_if_large(
        fork,
        zone.node_count(),
        || check_nodes(zone, zone.raw_nodes().take(half), warnings),
        || check_nodes(zone, zone.raw_nodes().skip(half), warnings),
    );
    out.absorb(first);
    out.absorb(second);
    out
}

/// The checks of each node in `nodes` that look at one node (and what it
/// names elsewhere in the zone).
fn check_nodes<'z>(
    zone: &'z Zone,
    nodes: impl Iterator<Item = (&'z [u8], &'z Node)>,
    warnings: usize,
) -> Findings {
    let mut out = Findings::new(warnings);
    let apex_wire = zone.apex().as_wire();
    let apex_dname = zone.apex_node().is_some_and(|n| n.has(Rtype::DNAME));
    for (key, node) in nodes {
        if node.is_empty_nonterminal() {
            continue;
        }
        // Owners become `Name`s only when a problem names them.
        let owner = key;
        let is_apex = key == apex_wire;
        if is_apex {
            check_apex(owner, node, &mut out);
        } else if node.has(Rtype::SOA) {
            out.push(Problem::error(
                &name_of(owner),
                Some(Rtype::SOA),
                "SOA record outside the zone apex (RFC 1035 §5.2)",
            ));
        }
        check_wildcard(owner, node, &mut out);
        check_cname(owner, node, is_apex, &mut out);
        check_dname(owner, node, &mut out);
        let occluded = check_occlusion(zone, key, node, apex_dname, &mut out);
        if occluded {
            // Not served, so its targets do not matter.
            continue;
        }
        if !is_apex && node.has(Rtype::NS) {
            check_cut_contents(owner, node, &mut out);
        } else if node.has(Rtype::DS) {
            // RFC 4035 §2.4: the parent holds DS at the cut; anywhere else
            // (the apex included) it is never used.
            out.warning(owner, Some(Rtype::DS), || {
                "DS belongs at a delegation point, in the parent zone (RFC 4035 §2.4)".into()
            });
        }
        check_targets(zone, owner, node, &mut out);
    }
    out
}

/// Canonical owner order, errors first, so output is stable whatever the hash order.
/// Problems that compare equal are equal in every field, so the unstable sort
/// (which needs no buffer the size of the list) gives the same order a stable
/// one would.
pub(crate) fn sort_problems(problems: &mut [Problem]) {
    problems.sort_unstable_by(|a, b| {
        a.owner
            .cmp(&b.owner)
            .then(a.severity.cmp(&b.severity))
            .then(a.rtype.cmp(&b.rtype))
            .then_with(|| a.message.cmp(&b.message))
            // Names compare without case; their octets break the tie.
            .then_with(|| a.owner.as_wire().cmp(b.owner.as_wire()))
    });
}

fn check_apex(owner: &[u8], node: &Node, out: &mut Findings) {
    match node.rrset(Rtype::SOA).map(|s| s.len()) {
        None | Some(0) => out.push(Problem::error(
            &name_of(owner),
            Some(Rtype::SOA),
            "no SOA record at the zone apex (RFC 1035 §5.2)",
        )),
        Some(1) => {}
        Some(n) => out.push(Problem::error(
            &name_of(owner),
            Some(Rtype::SOA),
            format!("{n} SOA records at the apex; exactly one is allowed (RFC 1035 §5.2)"),
        )),
    }
    if !node.has(Rtype::NS) {
        out.push(Problem::error(
            &name_of(owner),
            Some(Rtype::NS),
            "no NS records at the zone apex (RFC 1034 §4.2.1)",
        ));
    }
}

fn check_cname(owner: &[u8], node: &Node, is_apex: bool, out: &mut Findings) {
    let Some(cname) = node.rrset(Rtype::CNAME) else {
        return;
    };
    if cname.len() > 1 {
        out.push(Problem::error(
            &name_of(owner),
            Some(Rtype::CNAME),
            format!(
                "{} CNAME records at one name; an alias has exactly one target (RFC 2181 §10.1)",
                cname.len()
            ),
        ));
    }
    if is_apex {
        // The apex must hold SOA and NS, which a CNAME cannot sit beside.
        out.push(Problem::error(
            &name_of(owner),
            Some(Rtype::CNAME),
            "CNAME at the zone apex, where SOA and NS must be (RFC 1034 §3.6.2, RFC 2181 §10.1)",
        ));
        return;
    }
    let others = type_list(node, |t| !CNAME_COMPANIONS.contains(&t));
    if !others.is_empty() {
        out.push(Problem::error(
            &name_of(owner),
            Some(Rtype::CNAME),
            format!(
                "CNAME beside other data ({others}); an alias has no other data (RFC 1034 §3.6.2, RFC 2181 §10.1)"
            ),
        ));
    }
}

/// RFC 4592 §4.2 and §4.4: NS and DNAME at a wildcard owner have no defined
/// meaning; servers differ.
fn check_wildcard(owner: &[u8], node: &Node, out: &mut Findings) {
    if owner.get(..2) != Some(&[1, b'*']) {
        return;
    }
    for (rtype, section) in [(Rtype::NS, "§4.2"), (Rtype::DNAME, "§4.4")] {
        if node.has(rtype) {
            out.warning(owner, Some(rtype), || {
                format!("{rtype} at a wildcard name has no defined meaning (RFC 4592 {section})")
            });
        }
    }
}

fn check_dname(owner: &[u8], node: &Node, out: &mut Findings) {
    if let Some(dname) = node.rrset(Rtype::DNAME) {
        if dname.len() > 1 {
            out.push(Problem::error(
                &name_of(owner),
                Some(Rtype::DNAME),
                format!(
                    "{} DNAME records at one name; only one is allowed (RFC 6672 §2.4)",
                    dname.len()
                ),
            ));
        }
    }
}

/// Warns about data hidden under a DNAME (RFC 6672 §2.3) or below a zone cut
/// (RFC 1034 §4.2.1) other than glue. Returns whether the node is occluded.
/// `apex_dname` says whether the apex has a DNAME, known once per zone: every
/// name's walk ends at the apex, and looking it up again for each name cost a
/// hash probe per name of the zone.
fn check_occlusion(
    zone: &Zone,
    key: &[u8],
    node: &Node,
    apex_dname: bool,
    out: &mut Findings,
) -> bool {
    let apex_len = zone.apex().wire_len();
    // The highest occluding ancestor decides: walk all strict ancestors within the zone.
    let mut found: Option<(&[u8], Rtype)> = None;
    for anc in suffixes(key).skip(1) {
        if anc.len() <= apex_len {
            if anc.len() == apex_len && apex_dname {
                found = Some((anc, Rtype::DNAME));
            }
            break;
        }
        let Some(anode) = zone.node_by_lowercase_wire(anc) else {
            continue;
        };
        if anode.has(Rtype::DNAME) {
            found = Some((anc, Rtype::DNAME));
        } else if anc.len() > apex_len && anode.has(Rtype::NS) {
            found = Some((anc, Rtype::NS));
        }
    }
    let Some((anc, kind)) = found else {
        return false;
    };
    let at = || Name::from_wire(anc).unwrap_or_default();
    if kind == Rtype::DNAME {
        out.warning(key, None, || {
            let types = type_list(node, |_| true);
            format!(
                "{types} occluded by the DNAME at {}: never served (RFC 6672 §2.3)",
                at()
            )
        });
    } else if node.rrsets().iter().any(|s| !GLUE.contains(&s.rtype())) {
        out.warning(key, None, || {
            let types = type_list(node, |t| !GLUE.contains(&t));
            format!(
                "{types} below the delegation at {} is not glue: never served (RFC 1034 §4.2.1)",
                at()
            )
        });
    }
    true
}

/// Data at a delegation point other than NS, DS and glue belongs to the child.
fn check_cut_contents(owner: &[u8], node: &Node, out: &mut Findings) {
    if node.rrsets().iter().any(|s| !AT_CUT.contains(&s.rtype())) {
        out.warning(owner, None, || {
            let types = type_list(node, |t| !AT_CUT.contains(&t));
            format!("{types} at a delegation point belongs to the child zone: never served (RFC 1034 §4.2.1)")
        });
    }
}

/// NS targets need addresses when this zone is the one to give them
/// (RFC 1034 §4.2.1 glue); NS, MX and SRV targets must not be aliases
/// (RFC 2181 §10.3); an MX or SRV target in the zone should have an address.
fn check_targets(zone: &Zone, owner: &[u8], node: &Node, out: &mut Findings) {
    for set in node.rrsets() {
        let rtype = set.rtype();
        let skip = match rtype {
            Rtype::NS => 0,
            Rtype::MX => 2,
            Rtype::SRV => 6,
            _ => continue,
        };
        // Each distinct in-zone target once. A sorted list, not a set: most
        // RRsets have one or two targets, and a B-tree node holds eleven names.
        let mut targets: Vec<Name> = set
            .rdatas()
            .filter_map(|rd| rd.get(skip..).and_then(read_name))
            .map(|target| target.to_lowercase())
            .filter(|target| target.is_below(zone.apex()) || target == zone.apex())
            .collect();
        targets.sort_unstable();
        targets.dedup();
        for target in &targets {
            check_target(zone, owner, rtype, target, out);
        }
    }
}

fn check_target(zone: &Zone, owner: &[u8], rtype: Rtype, target: &Name, out: &mut Findings) {
    let (cut, under_dname) = above_target(zone, target);
    if under_dname {
        // Rewritten by the DNAME: the name the target really is lies elsewhere.
        return;
    }
    let tnode = zone.node_by_lowercase_wire(target.as_wire());
    if tnode.is_some_and(|n| n.has(Rtype::CNAME)) {
        return out.warning(owner, Some(rtype), || {
            format!(
                "{rtype} target {target} is an alias (CNAME); it must name the host itself (RFC 2181 §10.3)"
            )
        });
    }
    let has_address = match tnode {
        Some(n) => GLUE.iter().any(|t| n.has(*t)),
        // RFC 4592 §3.3.1: authoritative data can come from a wildcard; glue cannot.
        None => cut.is_none() && wildcard_has_address(zone, target),
    };
    if has_address {
        return;
    }
    match (rtype, cut) {
        (Rtype::NS, Some(cut)) => out.push(Problem::error(
            &name_of(owner),
            Some(rtype),
            format!(
                "missing glue: NS target {target} is at or below the delegation at {cut} but has no A or AAAA record (RFC 1034 §4.2.1)"
            ),
        )),
        (Rtype::NS, None) => out.push(Problem::error(
            &name_of(owner),
            Some(rtype),
            format!("NS target {target} is in the zone but has no A or AAAA record"),
        )),
        // Below a cut the child zone answers for it.
        (_, Some(_)) => {}
        (_, None) => out.warning(owner, Some(rtype), || {
            format!("{rtype} target {target} is in the zone but has no A or AAAA record")
        }),
    }
}

/// For a name in the zone: the highest zone cut (non-apex NS owner) at or above
/// it, and whether a DNAME at a strict ancestor rewrites it.
fn above_target(zone: &Zone, name: &Name) -> (Option<Name>, bool) {
    let apex_len = zone.apex().wire_len();
    let mut cut = None;
    let mut under_dname = false;
    for (i, s) in suffixes(name.as_wire()).enumerate() {
        if s.len() < apex_len {
            break;
        }
        let Some(n) = zone.node_by_lowercase_wire(s) else {
            continue;
        };
        if s.len() > apex_len && n.has(Rtype::NS) {
            cut = Some(s);
        }
        if i > 0 && n.has(Rtype::DNAME) {
            under_dname = true;
        }
    }
    (cut.and_then(|s| Name::from_wire(s).ok()), under_dname)
}

/// Whether a wildcard would give `name` (which has no node) an address: the
/// `*` child of its closest encloser (RFC 4592 §3.3.1) has A or AAAA.
fn wildcard_has_address(zone: &Zone, name: &Name) -> bool {
    if !zone.has_wildcards() {
        return false;
    }
    let Some(encloser) = suffixes(name.as_wire())
        .skip(1)
        .find(|s| zone.node_by_lowercase_wire(s).is_some())
    else {
        return false;
    };
    let mut wild = vec![1, b'*'];
    wild.extend_from_slice(encloser);
    zone.node_by_lowercase_wire(&wild)
        .is_some_and(|n| GLUE.iter().any(|t| n.has(*t)))
}

/// The owner named by a lowercased wire key (validated when the zone was built).
fn name_of(key: &[u8]) -> Name {
    Name::from_wire(key).unwrap_or_default()
}

/// An uncompressed name at the start of `bytes`.
fn read_name(bytes: &[u8]) -> Option<Name> {
    Name::read_uncompressed(&mut Reader::new(bytes)).ok()
}

/// The node's types that pass `keep`, as `A, TXT`.
fn type_list(node: &Node, keep: impl Fn(Rtype) -> bool) -> String {
    let mut types: Vec<String> = node
        .rrsets()
        .iter()
        .map(|s| s.rtype())
        .filter(|t| keep(*t))
        .map(|t| t.to_string())
        .collect();
    types.dedup();
    types.join(", ")
}
