//! Shared by the `update_*` tests: a small zone, UPDATE messages written
//! from text, and the zone a diff leads to.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use bulwark_proto::message::MessageView;
use bulwark_proto::{Class, Name, Rcode, Rdata, Rtype};
use bulwark_xfr::serial::SerialPolicy;
use bulwark_xfr::update::{
    read_update, Applied, UpdateError, UpdateOptions, UpdateRequest, ZoneEdit,
};
use bulwark_zone::{apply_diff, Zone, ZoneDiff};

/// The zone most cases start from: two apex NS, a name with two RRsets, an
/// alias, a mail exchanger and an empty non-terminal (`deep`, `b.deep`).
pub const ZONE: &str = "$TTL 300
@ SOA ns hostmaster 1 3600 600 86400 300
@ NS ns
@ NS ns2
@ TXT \"apex\"
ns A 192.0.2.1
ns2 A 192.0.2.2
www A 192.0.2.10
www A 192.0.2.11
www TXT \"hello\"
alias CNAME www
mail MX 10 mx
mx A 192.0.2.25
a.b.deep TXT \"x\"
";

pub fn n(s: &str) -> Name {
    s.parse().unwrap()
}

pub fn origin() -> Name {
    n("example.")
}

pub fn zone(text: &str) -> Zone {
    let records = bulwark_zone::parse_str(text, &origin(), "test").unwrap();
    Zone::build(origin(), records)
        .unwrap_or_else(|p| panic!("{p:?}"))
        .0
}

/// An UPDATE message for `example.` (class IN), written from text.
#[derive(Debug, Clone)]
pub struct Msg {
    pub id: u16,
    pub zones: Vec<(Name, Rtype, Class)>,
    pub prereqs: Vec<Vec<u8>>,
    pub updates: Vec<Vec<u8>>,
}

impl Default for Msg {
    fn default() -> Self {
        Msg::new()
    }
}

impl Msg {
    pub fn new() -> Msg {
        Msg {
            id: 0x4242,
            zones: vec![(origin(), Rtype::SOA, Class::IN)],
            prereqs: Vec::new(),
            updates: Vec::new(),
        }
    }

    /// A prerequisite as `owner ttl class type [rdata]`; owners are relative
    /// to `example.` unless they end in a dot.
    pub fn prereq(mut self, text: &str) -> Msg {
        self.prereqs.push(record_wire(text));
        self
    }

    /// An update record, written as for [`Msg::prereq`].
    pub fn update(mut self, text: &str) -> Msg {
        self.updates.push(record_wire(text));
        self
    }

    /// An update record with raw record data.
    pub fn update_raw(
        mut self,
        owner: &str,
        ttl: u32,
        class: Class,
        rtype: Rtype,
        rdata: &[u8],
    ) -> Msg {
        self.updates
            .push(raw_record(&owner_name(owner), ttl, class, rtype, rdata));
        self
    }

    pub fn wire(&self) -> Vec<u8> {
        let mut w = Vec::new();
        w.extend_from_slice(&self.id.to_be_bytes());
        w.extend_from_slice(&[0x28, 0x00]); // opcode UPDATE
        for count in [self.zones.len(), self.prereqs.len(), self.updates.len(), 0] {
            w.extend_from_slice(&u16::try_from(count).unwrap().to_be_bytes());
        }
        for (name, rtype, class) in &self.zones {
            w.extend_from_slice(name.as_wire());
            w.extend_from_slice(&rtype.0.to_be_bytes());
            w.extend_from_slice(&class.0.to_be_bytes());
        }
        for r in self.prereqs.iter().chain(&self.updates) {
            w.extend_from_slice(r);
        }
        w
    }

    pub fn request(&self) -> UpdateRequest {
        let wire = self.wire();
        read_update(&MessageView::parse(&wire).unwrap()).unwrap()
    }
}

fn owner_name(text: &str) -> Name {
    if text.ends_with('.') {
        n(text)
    } else {
        n(&format!("{text}.example."))
    }
}

fn record_wire(text: &str) -> Vec<u8> {
    let mut fields = text.splitn(5, ' ');
    let owner = owner_name(fields.next().unwrap());
    let ttl: u32 = fields.next().unwrap().parse().unwrap();
    let class: Class = fields.next().unwrap().parse().unwrap();
    let rtype: Rtype = fields.next().unwrap().parse().unwrap();
    let rdata = match fields.next() {
        Some(rest) => Rdata::from_text(rtype, rest, &origin()).unwrap().to_wire(),
        None => Vec::new(),
    };
    raw_record(&owner, ttl, class, rtype, &rdata)
}

fn raw_record(owner: &Name, ttl: u32, class: Class, rtype: Rtype, rdata: &[u8]) -> Vec<u8> {
    let mut w = owner.as_wire().to_vec();
    w.extend_from_slice(&rtype.0.to_be_bytes());
    w.extend_from_slice(&class.0.to_be_bytes());
    w.extend_from_slice(&ttl.to_be_bytes());
    w.extend_from_slice(&u16::try_from(rdata.len()).unwrap().to_be_bytes());
    w.extend_from_slice(rdata);
    w
}

/// Applies `msgs` in order to one edit of `base`; each message's outcome,
/// and the diff (serials by increment).
pub fn run(
    base: &Zone,
    msgs: &[Msg],
    options: &UpdateOptions,
) -> (Vec<Result<Applied, UpdateError>>, Option<ZoneDiff>) {
    let mut edit = ZoneEdit::new(base);
    let outcomes = msgs
        .iter()
        .map(|m| edit.apply(&m.request(), options))
        .collect();
    (outcomes, edit.finish(SerialPolicy::Increment, 0))
}

/// The rcode of a single message applied to `base`, and the zone after it
/// (as sorted zone-file lines).
pub fn outcome(base: &Zone, msg: Msg, options: &UpdateOptions) -> (Rcode, Vec<String>) {
    let (mut results, diff) = run(base, &[msg], options);
    let rcode = match results.remove(0) {
        Ok(_) => Rcode::NOERROR,
        Err(e) => e.rcode(),
    };
    (rcode, after(base, diff.as_ref()))
}

/// The records of `base` with `diff` applied, as sorted zone-file lines.
pub fn after(base: &Zone, diff: Option<&ZoneDiff>) -> Vec<String> {
    let records = base.records().collect();
    let records = match diff {
        Some(d) => apply_diff(records, d).unwrap_or_else(|e| panic!("{e}")),
        None => records,
    };
    // The edited zone must still be a zone.
    let built = Zone::build(origin(), records)
        .unwrap_or_else(|p| panic!("{p:?}"))
        .0;
    lines(&built)
}

pub fn lines(z: &Zone) -> Vec<String> {
    let mut v: Vec<String> = z.records().map(|r| r.to_string()).collect();
    v.sort();
    v
}

/// The zone text with edits: `-line` lines removed, `+line` lines added
/// (owner-relative zone-file lines, `$TTL 300`), as sorted record lines.
pub fn expect(text: &str, changes: &[&str]) -> Vec<String> {
    let mut body: Vec<String> = text.lines().map(str::to_owned).collect();
    for c in changes {
        if let Some(gone) = c.strip_prefix('-') {
            let at = body
                .iter()
                .position(|l| l == gone)
                .unwrap_or_else(|| panic!("no line {gone:?}"));
            body.remove(at);
        } else if let Some(new) = c.strip_prefix('+') {
            body.push(new.to_owned());
        }
    }
    lines(&zone(&body.join("\n")))
}

/// The zone's SOA line with the serial `serial`.
pub fn soa(serial: u32) -> String {
    format!("@ SOA ns hostmaster {serial} 3600 600 86400 300")
}
