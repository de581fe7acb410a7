//! A parsed scenario: its configuration, the simulated servers (`RANGE`
//! blocks) and the steps (`STEP` blocks), as `doc/scenario_guide.rst` of
//! Deckard describes them.

use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;

use crate::config::Config;
use crate::message::Message;

/// One `.rpl` file.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The file it was read from (errors and reports name it).
    pub path: PathBuf,
    /// The file name without `.rpl`, e.g. `iter_minim_a`.
    pub name: String,
    /// What follows `SCENARIO_BEGIN`.
    pub description: String,
    pub config: Config,
    /// In file order: the first eligible range answers.
    pub ranges: Vec<Range>,
    /// In file order, which is the order they are played in.
    pub steps: Vec<Step>,
    /// `FILE:LINE: ...` for every record bulwark-proto's presentation
    /// parser refused and the runner read another way
    /// ([`crate::record::lenient_rdata`]): gaps worth knowing.
    pub notes: Vec<String>,
}

impl Scenario {
    /// `NAME.rpl:LINE`, for messages about a place in this scenario (the
    /// report gives the directory once).
    pub fn at(&self, line: usize) -> String {
        let file = self.path.file_name().map_or_else(
            || self.path.display().to_string(),
            |f| f.to_string_lossy().into_owned(),
        );
        format!("{file}:{line}")
    }

    /// Every address a simulated server must answer on: the `ADDRESS`es of
    /// the ranges, the root hint (`stub-addr`), the forwarder
    /// (`forward-addr`), the servers of `forward-zone` and `stub-zone`
    /// lines, and the A/AAAA data of `REPLY` steps, as Deckard
    /// binds them (a `REPLY` step answers whoever is asked).
    pub fn server_addresses(&self) -> Vec<IpAddr> {
        let mut out: Vec<IpAddr> = Vec::new();
        let mut add = |a: IpAddr| {
            if !out.contains(&a) {
                out.push(a);
            }
        };
        for range in &self.ranges {
            range.addresses.iter().copied().for_each(&mut add);
        }
        self.config.stub_addr.into_iter().for_each(&mut add);
        self.config.forward_addr.into_iter().for_each(&mut add);
        for zone in self
            .config
            .forward_zones
            .iter()
            .chain(&self.config.stub_zones)
        {
            zone.addresses.iter().copied().for_each(&mut add);
        }
        for step in &self.steps {
            if step.kind != StepKind::Reply {
                continue;
            }
            if let Some(entry) = &step.entry {
                for rr in entry.message.records() {
                    match rr.rdata {
                        bulwark_proto::Rdata::A(a) => add(IpAddr::V4(a)),
                        bulwark_proto::Rdata::Aaaa(a) => add(IpAddr::V6(a)),
                        _ => {}
                    }
                }
            }
        }
        out
    }

    /// The step with this id, if any.
    pub fn step(&self, id: u32) -> Option<&Step> {
        self.steps.iter().find(|s| s.id == id)
    }
}

/// `RANGE_BEGIN a b` … `RANGE_END`: the answers some servers give while the
/// step being played has an id in `from..=to`.
#[derive(Debug, Clone)]
pub struct Range {
    /// Line of `RANGE_BEGIN`.
    pub line: usize,
    pub from: u32,
    pub to: u32,
    /// The servers this range speaks for; empty means any.
    pub addresses: Vec<IpAddr>,
    /// Tried in order; the first that matches answers.
    pub entries: Vec<Entry>,
}

impl Range {
    /// Deckard's eligibility rule: the step id is inside the range, and the
    /// query went to one of its addresses (an unknown server address, or a
    /// range without addresses, accepts any).
    pub fn eligible(&self, step: u32, server: Option<IpAddr>) -> bool {
        (self.from..=self.to).contains(&step)
            && match server {
                None => true,
                Some(a) => self.addresses.is_empty() || self.addresses.contains(&a),
            }
    }
}

/// What a step does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// Send the entry's message to the resolver and wait for the answer
    /// (a `RAW` entry is sent as is, and no answer is awaited).
    Query,
    /// Compare the last answer with the entry.
    CheckAnswer,
    /// Move the resolver's clock forward by this many seconds.
    TimePasses(u64),
    /// A one-shot answer, used when no range is eligible (discouraged by
    /// the guide; `iter_tcbit` and `iter_lame_noaa` rely on it).
    Reply,
    /// Deckard ignores it; so does the runner.
    CheckOutQuery,
}

impl fmt::Display for StepKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepKind::Query => f.write_str("QUERY"),
            StepKind::CheckAnswer => f.write_str("CHECK_ANSWER"),
            StepKind::TimePasses(s) => write!(f, "TIME_PASSES ELAPSE {s}"),
            StepKind::Reply => f.write_str("REPLY"),
            StepKind::CheckOutQuery => f.write_str("CHECK_OUT_QUERY"),
        }
    }
}

/// `STEP id TYPE`, with the entry that follows it, if any.
#[derive(Debug, Clone)]
pub struct Step {
    pub line: usize,
    pub id: u32,
    pub kind: StepKind,
    pub entry: Option<Entry>,
}

/// An element of a `MATCH` line (the guide's table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MatchElement {
    Opcode,
    Qtype,
    Qname,
    Qcase,
    Subdomain,
    Flags,
    Rcode,
    /// `qtype qname`.
    Question,
    Answer,
    Authority,
    Additional,
    Edns,
    Nsid,
    /// The project's own, not Deckard's: the answer section's TTLs, each
    /// expected record received with the TTL written (RFC 8767's TTL of 30
    /// on a stale answer, say).
    Ttl,
    /// `opcode qtype qname flags rcode answer authority additional`.
    All,
    /// The project's own, as Unbound's testbound has them: the query came
    /// over TCP, or over UDP. Only a range entry's query has a transport;
    /// [`crate::network`] checks them, [`crate::matching`] ignores them.
    Tcp,
    Udp,
}

impl MatchElement {
    pub fn from_keyword(word: &str) -> Option<MatchElement> {
        Some(match word {
            "opcode" => MatchElement::Opcode,
            "qtype" => MatchElement::Qtype,
            "qname" => MatchElement::Qname,
            "qcase" => MatchElement::Qcase,
            "subdomain" => MatchElement::Subdomain,
            "flags" => MatchElement::Flags,
            "rcode" => MatchElement::Rcode,
            "question" => MatchElement::Question,
            "answer" => MatchElement::Answer,
            "authority" => MatchElement::Authority,
            "additional" => MatchElement::Additional,
            "edns" => MatchElement::Edns,
            "nsid" => MatchElement::Nsid,
            "ttl" => MatchElement::Ttl,
            "all" => MatchElement::All,
            "tcp" => MatchElement::Tcp,
            "udp" => MatchElement::Udp,
            _ => return None,
        })
    }

    pub fn keyword(self) -> &'static str {
        match self {
            MatchElement::Opcode => "opcode",
            MatchElement::Qtype => "qtype",
            MatchElement::Qname => "qname",
            MatchElement::Qcase => "qcase",
            MatchElement::Subdomain => "subdomain",
            MatchElement::Flags => "flags",
            MatchElement::Rcode => "rcode",
            MatchElement::Question => "question",
            MatchElement::Answer => "answer",
            MatchElement::Authority => "authority",
            MatchElement::Additional => "additional",
            MatchElement::Edns => "edns",
            MatchElement::Nsid => "nsid",
            MatchElement::Ttl => "ttl",
            MatchElement::All => "all",
            MatchElement::Tcp => "tcp",
            MatchElement::Udp => "udp",
        }
    }

    /// The basic elements this one stands for (`all` and `question` expand).
    pub fn expand(self) -> &'static [MatchElement] {
        use MatchElement as M;
        match self {
            M::All => &[
                M::Opcode,
                M::Qtype,
                M::Qname,
                M::Flags,
                M::Rcode,
                M::Answer,
                M::Authority,
                M::Additional,
            ],
            M::Question => &[M::Qtype, M::Qname],
            M::Opcode => &[M::Opcode],
            M::Qtype => &[M::Qtype],
            M::Qname => &[M::Qname],
            M::Qcase => &[M::Qcase],
            M::Subdomain => &[M::Subdomain],
            M::Flags => &[M::Flags],
            M::Rcode => &[M::Rcode],
            M::Answer => &[M::Answer],
            M::Authority => &[M::Authority],
            M::Additional => &[M::Additional],
            M::Edns => &[M::Edns],
            M::Nsid => &[M::Nsid],
            M::Ttl => &[M::Ttl],
            M::Tcp => &[M::Tcp],
            M::Udp => &[M::Udp],
        }
    }
}

/// `ADJUST` elements: how a range entry is turned into an answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[allow(clippy::struct_excessive_bools)] // one field per keyword is the clearest model
pub struct Adjust {
    /// The query's id, and the case of its question name when the entry has a question.
    pub copy_id: bool,
    /// The query's whole question section.
    pub copy_query: bool,
    /// The query's id into the first two octets of a `RAW` answer.
    pub raw_id: bool,
    /// No answer at all.
    pub do_not_answer: bool,
}

/// `ENTRY_BEGIN` … `ENTRY_END`: a DNS message and what to do with it.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Line of `ENTRY_BEGIN`.
    pub line: usize,
    /// The `MATCH` elements, in the order written; `None` without a `MATCH`
    /// line (then it matches anything).
    pub matches: Option<Vec<MatchElement>>,
    pub adjust: Adjust,
    /// `MANDATORY`: the scenario fails if this range entry never answered.
    pub mandatory: bool,
    /// The message: header from `REPLY` (opcode, rcode, flags, `DO`), the
    /// sections, and EDNS version 0 with a 4096-octet payload (Deckard's
    /// default for every entry).
    pub message: Message,
    /// `RAW`: octets sent as they are.
    pub raw: Option<Vec<u8>>,
    /// `NO_EDNS` (the project's own): the message has no OPT record, so
    /// `MATCH edns` accepts only a query without EDNS, and the answer goes
    /// out without OPT whatever the query had (a server that does not know
    /// EDNS, RFC 6891 §7).
    pub no_edns: bool,
}

impl Entry {
    /// Whether a query that came over TCP (`tcp`) or UDP satisfies the
    /// entry's `MATCH tcp` or `MATCH udp`, if it has one.
    pub fn transport_matches(&self, tcp: bool) -> bool {
        let wants = |m: MatchElement| self.matches.iter().flatten().any(|x| *x == m);
        !(wants(MatchElement::Tcp) && !tcp || wants(MatchElement::Udp) && tcp)
    }

    /// The basic match elements, each once, in a fixed order (so a
    /// mismatch is reported the same way every run).
    pub fn match_elements(&self) -> Vec<MatchElement> {
        let mut out: Vec<MatchElement> = self
            .matches
            .iter()
            .flatten()
            .flat_map(|m| m.expand().iter().copied())
            .collect();
        out.sort();
        out.dedup();
        out
    }
}
