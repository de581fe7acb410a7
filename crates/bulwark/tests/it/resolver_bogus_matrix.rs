#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! The bogus matrix (issue 24): bulwark's resolver, Unbound and delv judge
//! the same broken zones on the same simulated internet, and agree.
//!
//! Inside a private network namespace (`bulwark_testkit::netns`), on port
//! 53 of addresses of 127.1.0.0/24: a root `.` (knotd), the TLD `test.`
//! (NSD), and one child zone per case in two variants, `CASE.bind.test.`
//! signed by BIND's dnssec-signzone with dnssec-keygen's keys (served by a
//! second knotd) and `CASE.bulwark.test.` signed by `bulwark sign` with
//! `bulwark keys generate`'s keys (served by a second NSD). Every zone is
//! signed offline, ECDSAP256SHA256, and served as a file: the servers do no
//! signing. A case is broken after signing, by editing the signed file or
//! the parent's DS, so both signers' output meets the same breakage. The
//! root's DS is the only trust anchor any validator gets.
//!
//! The cases: a good zone with NSEC and one with NSEC3 (controls), expired
//! and not-yet-valid signatures, data signed by a key outside the DNSKEY
//! set, a DS that matches no key, no DNSKEY RRset, a DS whose algorithm no
//! validator implements (insecure, RFC 4035 §5.2), an NSEC and an NSEC3
//! chain with the record covering a name deleted, an NSEC3 opt-out span
//! over an unsigned delegation (insecure, RFC 5155 §6), and a wildcard
//! answer whose NSEC, or NSEC3, proof was deleted. Signatures out of their
//! validity period come from dnssec-signzone's `-s`/`-e` and from
//! `bulwark sign --now` (hidden; its keys' timing moved back to match).
//!
//! Each question is asked, with RD and DO, of bulwark (iterating from the
//! root hints, validating) and of Unbound (`validator iterator`), each once
//! without and once with CD, and of delv, which validates for itself
//! through a second, non-validating Unbound. bulwark must agree with Unbound on the RCODE and the AD
//! bit (with and without CD) and on the Extended DNS Error code where both
//! give one, and with delv on the verdict (secure, insecure, bogus), except
//! for the differences listed in [`KNOWN_DIFFERENCES`], each justified
//! there by RFC text. Unbound must also give the verdict each case was
//! built for, or the harness, not bulwark, is broken. The whole matrix is
//! printed (`-- --nocapture`) for the notes.

use std::fmt::Write as _;
use std::fs;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hickory_proto::rr::RecordType;

use crate::support::{self, Answer, ChildGuard, EdnsSpec, QuerySpec, Transport};

// ---------------------------------------------------------------------------
// The simulated internet's addresses (all port 53, inside the namespace)
// ---------------------------------------------------------------------------

/// knotd serving the root zone.
const ROOT_SERVER: Ipv4Addr = Ipv4Addr::new(127, 1, 0, 1);
/// NSD serving `test.`.
const TLD_SERVER: Ipv4Addr = Ipv4Addr::new(127, 1, 0, 2);
/// knotd serving the zones dnssec-signzone signed (`ns-bind.test.`).
const BIND_CHILDREN: Ipv4Addr = Ipv4Addr::new(127, 1, 0, 3);
/// NSD serving the zones `bulwark sign` signed (`ns-bulwark.test.`).
const BULWARK_CHILDREN: Ipv4Addr = Ipv4Addr::new(127, 1, 0, 4);
/// The validators under comparison.
const BULWARK_RESOLVER: Ipv4Addr = Ipv4Addr::new(127, 1, 0, 10);
const UNBOUND_RESOLVER: Ipv4Addr = Ipv4Addr::new(127, 1, 0, 11);
/// A non-validating Unbound that delv asks (delv validates for itself).
const UNBOUND_ITERATOR: Ipv4Addr = Ipv4Addr::new(127, 1, 0, 12);

const DNS_PORT: u16 = 53;
const DAY: u64 = 86_400;
/// How long a validator gets for one question (a cold one walks from the root).
const QUERY_TIMEOUT: Duration = Duration::from_secs(5);
/// An algorithm number no validator implements: PRIVATEDNS (RFC 4034
/// Appendix A.1), whose keys name their real algorithm inside the key.
const UNKNOWN_ALGORITHM: &str = "253";

// ---------------------------------------------------------------------------
// The cases
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Signer {
    Bind,
    Bulwark,
}

impl Signer {
    const ALL: [Signer; 2] = [Signer::Bind, Signer::Bulwark];

    fn label(self) -> &'static str {
        match self {
            Signer::Bind => "bind",
            Signer::Bulwark => "bulwark",
        }
    }

    /// The name server of this signer's child zones (an address record in `test.`).
    fn name_server(self) -> String {
        format!("ns-{}.test.", self.label())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Denial {
    Nsec,
    Nsec3,
    /// NSEC3 with the opt-out flag (RFC 5155 §6): unsigned delegations are
    /// left out of the chain.
    Nsec3OptOut,
}

/// What is done to a zone, or to its DS in `test.`, to break it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Breakage {
    None,
    /// Every signature's expiration is a day past.
    Expired,
    /// Every signature's inception is ten days ahead.
    NotYetValid,
    /// The data is signed by a key the DNSKEY RRset does not hold.
    WrongKey,
    /// The parent's DS is a stranger key's.
    DsMatchesNoKey,
    /// The DNSKEY RRset and its signatures are deleted.
    NoDnskey,
    /// The parent's DS names an algorithm no validator implements.
    UnknownDsAlgorithm,
    /// The NSEC record (and its RRSIG) at this owner, below the apex, is deleted.
    DropNsecAt(&'static str),
    /// The NSEC3 record (and its RRSIG) covering this name's hash is deleted.
    DropNsec3Covering(&'static str),
    /// An unsigned delegation `insecure` under an opt-out NSEC3 span.
    OptOutDelegation,
}

/// A verdict: what a validator makes of an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    /// RFC 4035 §4.3: proven authentic (AD).
    Secure,
    /// Proven to need no signatures, or not provable by design: no AD.
    Insecure,
    /// Should have been signed and is not provably so: SERVFAIL.
    Bogus,
    /// Anything else (another RCODE, no answer, delv output not understood).
    Other,
}

impl Class {
    fn of(verdict: &Verdict) -> Class {
        match (verdict.rcode, verdict.ad) {
            (RCODE_SERVFAIL, _) => Class::Bogus,
            (RCODE_NOERROR | RCODE_NXDOMAIN, true) => Class::Secure,
            (RCODE_NOERROR | RCODE_NXDOMAIN, false) => Class::Insecure,
            _ => Class::Other,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Class::Secure => "secure",
            Class::Insecure => "insecure",
            Class::Bogus => "bogus",
            Class::Other => "other",
        }
    }
}

const RCODE_NOERROR: u16 = 0;
const RCODE_SERVFAIL: u16 = 2;
const RCODE_NXDOMAIN: u16 = 3;

/// One question of a case: `label` before the zone's name, the type, and
/// what it must come to: the RCODE the data gives (SERVFAIL when bogus) and
/// the verdict.
struct Question {
    label: &'static str,
    qtype: RecordType,
    rcode: u16,
    class: Class,
}

const fn q(label: &'static str, qtype: RecordType, rcode: u16, class: Class) -> Question {
    Question {
        label,
        qtype,
        rcode,
        class,
    }
}

struct Case {
    /// The zone's first label: `LABEL.bind.test.`, `LABEL.bulwark.test.`.
    label: &'static str,
    denial: Denial,
    breakage: Breakage,
    questions: &'static [Question],
}

use Class::{Bogus, Insecure, Secure};
use RecordType::{A, TXT};

const CASES: [Case; 13] = [
    Case {
        label: "good",
        denial: Denial::Nsec,
        breakage: Breakage::None,
        questions: &[
            q("www", A, RCODE_NOERROR, Secure),
            q("nope", A, RCODE_NXDOMAIN, Secure),
            q("x.wild", TXT, RCODE_NOERROR, Secure),
        ],
    },
    Case {
        label: "good3",
        denial: Denial::Nsec3,
        breakage: Breakage::None,
        questions: &[
            q("www", A, RCODE_NOERROR, Secure),
            q("nope", A, RCODE_NXDOMAIN, Secure),
            q("x.wild", TXT, RCODE_NOERROR, Secure),
        ],
    },
    Case {
        label: "expired",
        denial: Denial::Nsec,
        breakage: Breakage::Expired,
        questions: &[q("www", A, RCODE_SERVFAIL, Bogus)],
    },
    Case {
        label: "notyet",
        denial: Denial::Nsec,
        breakage: Breakage::NotYetValid,
        questions: &[q("www", A, RCODE_SERVFAIL, Bogus)],
    },
    Case {
        label: "wrongkey",
        denial: Denial::Nsec,
        breakage: Breakage::WrongKey,
        questions: &[q("www", A, RCODE_SERVFAIL, Bogus)],
    },
    Case {
        label: "dsnokey",
        denial: Denial::Nsec,
        breakage: Breakage::DsMatchesNoKey,
        questions: &[q("www", A, RCODE_SERVFAIL, Bogus)],
    },
    Case {
        label: "nodnskey",
        denial: Denial::Nsec,
        breakage: Breakage::NoDnskey,
        questions: &[q("www", A, RCODE_SERVFAIL, Bogus)],
    },
    Case {
        label: "unknownalg",
        denial: Denial::Nsec,
        breakage: Breakage::UnknownDsAlgorithm,
        questions: &[q("www", A, RCODE_NOERROR, Insecure)],
    },
    Case {
        label: "brokennsec",
        denial: Denial::Nsec,
        // `nope` sorts between `mail` and `*.wild` (RFC 4034 §6.1).
        breakage: Breakage::DropNsecAt("mail"),
        questions: &[
            q("www", A, RCODE_NOERROR, Secure),
            q("nope", A, RCODE_SERVFAIL, Bogus),
        ],
    },
    Case {
        label: "brokennsec3",
        denial: Denial::Nsec3,
        breakage: Breakage::DropNsec3Covering("nope"),
        questions: &[
            q("www", A, RCODE_NOERROR, Secure),
            q("nope", A, RCODE_SERVFAIL, Bogus),
        ],
    },
    Case {
        label: "optout",
        denial: Denial::Nsec3OptOut,
        breakage: Breakage::OptOutDelegation,
        questions: &[
            q("www", A, RCODE_NOERROR, Secure),
            q("www.insecure", A, RCODE_NOERROR, Insecure),
            q("nope", A, RCODE_NXDOMAIN, Insecure),
        ],
    },
    Case {
        label: "nowildproof",
        denial: Denial::Nsec,
        // `x.wild` sorts right after `*.wild`, whose NSEC covers it.
        breakage: Breakage::DropNsecAt("*.wild"),
        questions: &[
            q("www", A, RCODE_NOERROR, Secure),
            q("x.wild", TXT, RCODE_SERVFAIL, Bogus),
        ],
    },
    Case {
        label: "nowildproof3",
        denial: Denial::Nsec3,
        // RFC 5155 §7.2.6: the NSEC3 covering the next closer name.
        breakage: Breakage::DropNsec3Covering("x.wild"),
        questions: &[
            q("www", A, RCODE_NOERROR, Secure),
            q("x.wild", TXT, RCODE_SERVFAIL, Bogus),
        ],
    },
];

fn zone_name(case: &Case, signer: Signer) -> String {
    format!("{}.{}.test.", case.label, signer.label())
}

fn qname(question: &Question, zone: &str) -> String {
    format!("{}.{zone}", question.label)
}

// ---------------------------------------------------------------------------
// Known differences
// ---------------------------------------------------------------------------

/// What is compared between bulwark and another validator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Rcode,
    Ad,
    Ede,
    CdRcode,
    CdAd,
    Delv,
}

/// A difference between bulwark and Unbound or delv that is bulwark's
/// considered choice, with the RFC text that justifies it.
struct KnownDifference {
    case: &'static str,
    /// `None`: both variants.
    signer: Option<Signer>,
    /// `LABEL TYPE` as in the matrix, e.g. `www A`.
    question: &'static str,
    field: Field,
    /// Why bulwark's answer is right, quoting the RFC.
    why: &'static str,
}

/// Every difference the test accepts: real ones, met with Unbound 1.17.1
/// and delv 9.18 (Debian 12), where bulwark's side is the one the RFC asks
/// for or the more precise of two it allows. Nothing else may differ; an
/// entry no run meets any more fails the test, so the list stays true.
const KNOWN_DIFFERENCES: &[KnownDifference] = &[
    // KNOWN DIFFERENCE: the Extended DNS Error of a denial whose proof is gone.
    KnownDifference {
        case: "brokennsec",
        signer: None,
        question: "nope A",
        field: Field::Ede,
        why: WHY_NSEC_MISSING,
    },
    KnownDifference {
        case: "brokennsec3",
        signer: None,
        question: "nope A",
        field: Field::Ede,
        why: WHY_NSEC_MISSING,
    },
    KnownDifference {
        case: "nowildproof",
        signer: None,
        question: "x.wild TXT",
        field: Field::Ede,
        why: WHY_NSEC_MISSING,
    },
    KnownDifference {
        case: "nowildproof3",
        signer: None,
        question: "x.wild TXT",
        field: Field::Ede,
        why: WHY_NSEC_MISSING,
    },
    // KNOWN DIFFERENCE: delv calls an NXDOMAIN under opt-out secure.
    KnownDifference {
        case: "optout",
        signer: None,
        question: "nope A",
        field: Field::Delv,
        why: WHY_OPT_OUT_NXDOMAIN,
    },
];

/// bulwark: SERVFAIL with EDE 12; Unbound: SERVFAIL with EDE 6.
const WHY_NSEC_MISSING: &str = "RFC 8914 §4.13, Extended DNS Error Code 12 - NSEC \
    Missing: \"The resolver attempted to perform DNSSEC validation, but the requested \
    data was missing and a covering NSEC or NSEC3 was not provided.\" That is this \
    case: the record covering the name was deleted. Unbound's 6 (§4.7, \"validation \
    ended in the Bogus state\") is true too, and less precise; the RCODE is SERVFAIL \
    in both, and §6 makes the code diagnostic only.";

/// bulwark and Unbound: NXDOMAIN without AD; delv: "negative response,
/// fully validated".
const WHY_OPT_OUT_NXDOMAIN: &str = "RFC 5155 §9.2: \"The AD bit, as defined by \
    [RFC4035], MUST NOT be set when returning a response containing a closest \
    (provable) encloser proof in which the NSEC3 RR that covers the 'next closer' \
    name has the Opt-Out bit set. [...] names that would be covered by the Opt-Out \
    NSEC3 RR may or may not exist as insecure delegations.\" Every NSEC3 of the \
    opt-out zone has the flag; Unbound agrees (no AD), delv 9.18 reports the \
    negative answer as fully validated.";

// ---------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------

struct Tools {
    knotd: PathBuf,
    nsd: PathBuf,
    unbound: PathBuf,
    delv: PathBuf,
    keygen: PathBuf,
    signzone: PathBuf,
    dsfromkey: PathBuf,
    nsec3_hash: PathBuf,
}

impl Tools {
    /// `None` (after saying why) when a tool is missing outside CI; in CI a
    /// missing tool fails the test.
    fn find() -> Option<Tools> {
        Some(Tools {
            knotd: support::require_tool("knotd")?,
            nsd: support::require_tool("nsd")?,
            unbound: support::require_tool("unbound")?,
            delv: support::require_tool("delv")?,
            keygen: support::require_tool("dnssec-keygen")?,
            signzone: support::require_tool("dnssec-signzone")?,
            dsfromkey: support::require_tool("dnssec-dsfromkey")?,
            nsec3_hash: support::require_tool("ldns-nsec3-hash")?,
        })
    }
}

/// Runs `program ARGS`, failing the test with its output unless it succeeds.
fn run(program: &Path, args: &[&str]) -> String {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    support::run_tool(program, &args)
}

fn bulwark_cli(args: &[&str]) -> String {
    run(&support::bulwark_bin(), args)
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs()
}

// ---------------------------------------------------------------------------
// Zone files: reading records, signing, breaking
// ---------------------------------------------------------------------------

/// One record line of a signed zone file (both signers write one record a
/// line, owner first: `bulwark sign`, and dnssec-signzone with `-O full`).
struct Rec {
    owner: String,
    rtype: String,
    rdata: Vec<String>,
}

fn parse_record(line: &str) -> Option<Rec> {
    let trimmed = line.trim();
    if trimmed.is_empty() || trimmed.starts_with(';') || trimmed.starts_with('$') {
        return None;
    }
    assert!(
        !line.starts_with(char::is_whitespace),
        "a record line without its owner: {line:?}"
    );
    let tokens: Vec<&str> = trimmed.split_whitespace().collect();
    let mut at = 1;
    while at < tokens.len()
        && (tokens[at].bytes().all(|b| b.is_ascii_digit()) || tokens[at].eq_ignore_ascii_case("IN"))
    {
        at += 1;
    }
    Some(Rec {
        owner: tokens[0].to_ascii_lowercase(),
        rtype: tokens.get(at)?.to_ascii_uppercase(),
        rdata: tokens[at + 1..].iter().map(|t| t.to_string()).collect(),
    })
}

impl Rec {
    /// Whether this is a record of `rtype` or a signature over one.
    fn is_or_signs(&self, rtype: &str) -> bool {
        self.rtype == rtype
            || (self.rtype == "RRSIG"
                && self
                    .rdata
                    .first()
                    .is_some_and(|c| c.eq_ignore_ascii_case(rtype)))
    }
}

/// The zone text without the records `drop` picks; how many went.
fn strip(text: &str, drop: impl Fn(&Rec) -> bool) -> (String, usize) {
    let mut out = String::new();
    let mut dropped = 0;
    for line in text.lines() {
        if parse_record(line).is_some_and(|r| drop(&r)) {
            dropped += 1;
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    (out, dropped)
}

/// The unsigned zone every case starts from: data at names that sort
/// `apex < mail < (nope) < *.wild < (x.wild) < www`.
fn child_zone_text(zone: &str, signer: Signer, breakage: Breakage) -> String {
    let ns = signer.name_server();
    let mut text = format!(
        "$ORIGIN {zone}\n$TTL 300\n@ IN SOA {ns} hostmaster.test. 1 3600 900 604800 300\n\
         @ NS {ns}\nwww A 192.0.2.80\nmail A 192.0.2.25\n*.wild TXT \"wildcard\"\n"
    );
    if breakage == Breakage::OptOutDelegation {
        // No DS: the delegation is unsigned, and opt-out leaves it out of
        // the NSEC3 chain.
        writeln!(text, "insecure NS {ns}").unwrap();
    }
    text
}

/// The unsigned zone below the opt-out span.
fn insecure_zone_text(zone: &str, signer: Signer) -> String {
    let ns = signer.name_server();
    format!(
        "$ORIGIN {zone}\n$TTL 300\n@ IN SOA {ns} hostmaster.test. 1 3600 900 604800 300\n\
         @ NS {ns}\nwww A 192.0.2.81\n"
    )
}

/// A key directory's keys, made by one signer's tool.
struct Keys {
    dir: PathBuf,
    /// The DS records of the key-signing key, as zone-file lines.
    ds: Vec<String>,
}

/// A KSK and a ZSK (ksk = true), or a lone ZSK, for `zone` in `dir`.
fn make_keys(tools: &Tools, signer: Signer, zone: &str, dir: &Path, ksk: bool) -> Keys {
    fs::create_dir_all(dir).unwrap();
    let d = dir.to_str().unwrap();
    let mut ds = Vec::new();
    match signer {
        Signer::Bind => {
            if ksk {
                let base = run(
                    &tools.keygen,
                    &["-q", "-K", d, "-a", "ECDSAP256SHA256", "-f", "KSK", zone],
                );
                let key = dir.join(format!("{}.key", base.trim()));
                let line = run(&tools.dsfromkey, &["-2", key.to_str().unwrap()]);
                ds.extend(line.lines().map(|l| l.trim().to_string()));
            }
            run(
                &tools.keygen,
                &["-q", "-K", d, "-a", "ECDSAP256SHA256", zone],
            );
        }
        Signer::Bulwark => {
            let generate = |role: &str| {
                bulwark_cli(&[
                    "keys",
                    "generate",
                    zone,
                    "-a",
                    "ECDSAP256SHA256",
                    "--role",
                    role,
                    "-K",
                    d,
                ])
            };
            if ksk {
                generate("ksk");
                let lines = bulwark_cli(&["keys", "ds", zone, "-K", d]);
                ds.extend(lines.lines().map(|l| l.trim().to_string()));
            }
            generate("zsk");
        }
    }
    ds.retain(|l| !l.is_empty());
    if ksk {
        assert_eq!(ds.len(), 1, "one DS for {zone}'s KSK: {ds:?}");
    }
    Keys {
        dir: dir.to_path_buf(),
        ds,
    }
}

/// Moves the keys' timing (creation, publication, activation) to 2000, so
/// that `bulwark sign --now` a month back still finds them active.
fn backdate_keys(dir: &Path) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let text = fs::read_to_string(&path).unwrap();
        let moved: Vec<String> = text
            .lines()
            .map(|line| {
                let body = line.strip_prefix("; ").unwrap_or(line);
                match body.split_once(": ") {
                    Some((key @ ("Created" | "Publish" | "Activate"), _)) => {
                        let prefix = &line[..line.len() - body.len()];
                        format!("{prefix}{key}: 20000101000000")
                    }
                    _ => line.to_string(),
                }
            })
            .collect();
        fs::write(&path, moved.join("\n") + "\n").unwrap();
    }
}

/// Signature validity: inception and expiration as Unix times.
#[derive(Clone, Copy)]
struct Window {
    inception: u64,
    expiration: u64,
}

/// One run of a signer over an unsigned zone file.
struct Signing<'a> {
    signer: Signer,
    zone: &'a str,
    unsigned: &'a Path,
    keys: &'a Path,
    denial: Denial,
    /// `None`: the signer's own default validity, from now.
    window: Option<Window>,
    /// dnssec-signzone checks the zone it wrote unless told not to (`-P`);
    /// a zone signed outside its validity period, or by a lone ZSK, fails
    /// that check by design.
    verify: bool,
}

impl Signing<'_> {
    fn sign(&self, tools: &Tools, out: &Path) {
        let (unsigned, keys, out) = (
            self.unsigned.to_str().unwrap(),
            self.keys.to_str().unwrap(),
            out.to_str().unwrap(),
        );
        let zone = self.zone;
        match self.signer {
            Signer::Bind => {
                let ds_dir = Path::new(out).parent().unwrap().to_str().unwrap();
                let mut args = vec!["-S", "-K", keys, "-O", "full", "-d", ds_dir, "-o", zone];
                args.extend(["-f", out]);
                match self.denial {
                    Denial::Nsec => {}
                    Denial::Nsec3 => args.extend(["-3", "-", "-H", "0"]),
                    Denial::Nsec3OptOut => args.extend(["-3", "-", "-H", "0", "-A"]),
                }
                if !self.verify {
                    args.push("-P");
                }
                let times;
                if let Some(w) = self.window {
                    times = [w.inception.to_string(), w.expiration.to_string()];
                    args.extend(["-s", &times[0], "-e", &times[1]]);
                }
                args.push(unsigned);
                run(&tools.signzone, &args);
            }
            Signer::Bulwark => {
                let mut args = vec!["sign", zone, unsigned, "-K", keys, "-o", out];
                match self.denial {
                    Denial::Nsec => {}
                    Denial::Nsec3 => args.push("--nsec3"),
                    Denial::Nsec3OptOut => args.extend(["--nsec3", "--opt-out"]),
                }
                let times;
                if let Some(w) = self.window {
                    // `--now` (hidden: for tests and for pre-signing) moves
                    // the signing moment; with no inception offset the
                    // signatures start then and end `--validity` later.
                    times = [
                        w.inception.to_string(),
                        format!("{}s", w.expiration - w.inception),
                    ];
                    args.extend([
                        "--now",
                        &times[0],
                        "--validity",
                        &times[1],
                        "--inception-offset",
                        "0s",
                    ]);
                }
                bulwark_cli(&args);
            }
        }
    }
}

/// The NSEC3 hash (RFC 5155 §5, no salt, no extra iterations) of `name`,
/// in base32hex, lowercase, by ldns.
fn nsec3_hash(tools: &Tools, name: &str) -> String {
    run(&tools.nsec3_hash, &["-t", "0", name])
        .trim()
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

/// Whether the NSEC3 `owner_hash -> next_hash` covers `hash` (RFC 5155
/// §3.1.7; base32hex keeps the hashes' order, the last one wraps around).
fn nsec3_covers(owner_hash: &str, next_hash: &str, hash: &str) -> bool {
    if owner_hash < next_hash {
        owner_hash < hash && hash < next_hash
    } else {
        owner_hash < hash || hash < next_hash
    }
}

/// One child zone, signed and broken, and what its parent says of it.
struct Child {
    zone: String,
    signer: Signer,
    file: PathBuf,
    /// The NS and DS records for `test.`.
    delegation: Vec<String>,
    /// The unsigned zone under the opt-out span, if any.
    insecure: Option<(String, PathBuf)>,
}

fn build_child(tools: &Tools, case: &Case, signer: Signer, dir: &Path, now: u64) -> Child {
    let zone = zone_name(case, signer);
    let zdir = dir.join(&zone);
    fs::create_dir_all(&zdir).unwrap();
    let unsigned = zdir.join("zone");
    fs::write(&unsigned, child_zone_text(&zone, signer, case.breakage)).unwrap();
    let keys = make_keys(tools, signer, &zone, &zdir.join("keys"), true);
    let window = match case.breakage {
        Breakage::Expired => {
            if signer == Signer::Bulwark {
                backdate_keys(&keys.dir);
            }
            Some(Window {
                inception: now - 30 * DAY,
                expiration: now - DAY,
            })
        }
        Breakage::NotYetValid => Some(Window {
            inception: now + 10 * DAY,
            expiration: now + 40 * DAY,
        }),
        _ => None,
    };
    let signing = Signing {
        signer,
        zone: &zone,
        unsigned: &unsigned,
        keys: &keys.dir,
        denial: case.denial,
        window,
        verify: window.is_none(),
    };
    let signed = zdir.join("zone.signed");
    signing.sign(tools, &signed);
    let text = fs::read_to_string(&signed).unwrap();
    let ns = signer.name_server();
    let mut delegation = vec![format!("{zone} NS {ns}")];
    let mut ds = keys.ds.clone();
    let mut insecure = None;
    let broken = match case.breakage {
        Breakage::None | Breakage::Expired | Breakage::NotYetValid => text,
        Breakage::WrongKey => {
            // The same zone signed by a lone stranger ZSK; its DNSKEY RRset
            // (and that set's signatures) replaced by the real keys'.
            let stranger = make_keys(tools, signer, &zone, &zdir.join("stranger"), false);
            let other = zdir.join("zone.stranger");
            Signing {
                keys: &stranger.dir,
                verify: false,
                ..signing
            }
            .sign(tools, &other);
            let (real_keys, _) = strip(&text, |r| !r.is_or_signs("DNSKEY"));
            let (stranger_data, dropped) = strip(&fs::read_to_string(&other).unwrap(), |r| {
                r.is_or_signs("DNSKEY")
            });
            assert!(dropped >= 2, "{zone}: the stranger's DNSKEY and RRSIG");
            format!("{real_keys}{stranger_data}")
        }
        Breakage::DsMatchesNoKey => {
            let stranger = make_keys(tools, signer, &zone, &zdir.join("stranger"), true);
            ds = stranger.ds;
            text
        }
        Breakage::NoDnskey => {
            let (out, dropped) = strip(&text, |r| r.is_or_signs("DNSKEY"));
            assert!(dropped >= 3, "{zone}: two DNSKEYs and a signature at least");
            out
        }
        Breakage::UnknownDsAlgorithm => {
            // The real DS, its algorithm field (RFC 4034 §5.1.2) replaced.
            ds = ds
                .iter()
                .map(|line| {
                    let rec = parse_record(line).unwrap();
                    assert_eq!(rec.rtype, "DS", "{line}");
                    format!(
                        "{zone} DS {} {UNKNOWN_ALGORITHM} {} {}",
                        rec.rdata[0],
                        rec.rdata[2],
                        rec.rdata[3..].concat()
                    )
                })
                .collect();
            text
        }
        Breakage::DropNsecAt(label) => {
            let owner = format!("{label}.{zone}");
            let (out, dropped) = strip(&text, |r| r.owner == owner && r.is_or_signs("NSEC"));
            assert_eq!(dropped, 2, "{zone}: the NSEC at {owner} and its RRSIG");
            out
        }
        Breakage::DropNsec3Covering(label) => {
            let hash = nsec3_hash(tools, &format!("{label}.{zone}"));
            let apex_hash = nsec3_hash(tools, &zone);
            let covering: Vec<String> = text
                .lines()
                .filter_map(parse_record)
                .filter(|r| r.rtype == "NSEC3")
                .filter(|r| {
                    let owner_hash = r.owner.split('.').next().unwrap();
                    nsec3_covers(owner_hash, &r.rdata[4].to_ascii_lowercase(), &hash)
                })
                .map(|r| r.owner)
                .collect();
            assert_eq!(covering.len(), 1, "{zone}: one NSEC3 covers {label}");
            let owner = covering[0].clone();
            // The case is a gap in the chain, not a zone without its apex's
            // NSEC3 (which servers need to find the chain at all).
            assert!(
                !owner.starts_with(&apex_hash),
                "{zone}: {label}'s hash is covered by the apex's NSEC3; choose another name"
            );
            let (out, dropped) = strip(&text, |r| r.owner == owner && r.is_or_signs("NSEC3"));
            assert_eq!(dropped, 2, "{zone}: the NSEC3 at {owner} and its RRSIG");
            out
        }
        Breakage::OptOutDelegation => {
            // RFC 5155 §9.2 withholds AD when the NSEC3 covering the next
            // closer name has the Opt-Out flag: both signers set it on all.
            let flags: Vec<String> = text
                .lines()
                .filter_map(parse_record)
                .filter(|r| r.rtype == "NSEC3")
                .map(|r| r.rdata[1].clone())
                .collect();
            assert!(
                !flags.is_empty() && flags.iter().all(|f| f == "1"),
                "{zone}: every NSEC3 has the Opt-Out flag: {flags:?}"
            );
            let name = format!("insecure.{zone}");
            let file = zdir.join("insecure.zone");
            fs::write(&file, insecure_zone_text(&name, signer)).unwrap();
            insecure = Some((name, file));
            text
        }
    };
    let file = zdir.join("zone.served");
    fs::write(&file, broken).unwrap();
    delegation.extend(ds);
    Child {
        zone,
        signer,
        file,
        delegation,
        insecure,
    }
}

/// The whole internet, signed, on disk.
struct World {
    root_file: PathBuf,
    tld_file: PathBuf,
    children: Vec<Child>,
    /// The root KSK's DS, the one trust anchor: `. IN DS TAG 13 2 HEX`.
    root_ds: String,
}

fn build_world(tools: &Tools, dir: &Path) -> World {
    let now = unix_now();
    let mut children = Vec::new();
    std::thread::scope(|scope| {
        // One thread per signer: key generation and signing are processes.
        let handles: Vec<_> = Signer::ALL
            .iter()
            .map(|&signer| {
                scope.spawn(move || {
                    CASES
                        .iter()
                        .map(|case| build_child(tools, case, signer, dir, now))
                        .collect::<Vec<Child>>()
                })
            })
            .collect();
        for handle in handles {
            children.extend(handle.join().unwrap());
        }
    });

    // test.: the delegations with their DS, the name servers' addresses.
    let mut tld = format!(
        "$ORIGIN test.\n$TTL 300\n@ IN SOA ns.test. hostmaster.test. 1 3600 900 604800 300\n\
         @ NS ns.test.\nns A {TLD_SERVER}\nns-bind A {BIND_CHILDREN}\n\
         ns-bulwark A {BULWARK_CHILDREN}\n"
    );
    for child in &children {
        for line in &child.delegation {
            writeln!(tld, "{line}").unwrap();
        }
    }
    let tld_dir = dir.join("test.");
    fs::create_dir_all(&tld_dir).unwrap();
    fs::write(tld_dir.join("zone"), tld).unwrap();
    let tld_keys = make_keys(tools, Signer::Bind, "test.", &tld_dir.join("keys"), true);
    let tld_file = tld_dir.join("zone.signed");
    Signing {
        signer: Signer::Bind,
        zone: "test.",
        unsigned: &tld_dir.join("zone"),
        keys: &tld_keys.dir,
        denial: Denial::Nsec,
        window: None,
        verify: true,
    }
    .sign(tools, &tld_file);

    let mut root = format!(
        "$ORIGIN .\n$TTL 300\n@ IN SOA ns-root. hostmaster.ns-root. 1 3600 900 604800 300\n\
         @ NS ns-root.\nns-root. A {ROOT_SERVER}\ntest. NS ns.test.\nns.test. A {TLD_SERVER}\n"
    );
    for line in &tld_keys.ds {
        writeln!(root, "{line}").unwrap();
    }
    let root_dir = dir.join("root");
    fs::create_dir_all(&root_dir).unwrap();
    fs::write(root_dir.join("zone"), root).unwrap();
    let root_keys = make_keys(tools, Signer::Bind, ".", &root_dir.join("keys"), true);
    let root_file = root_dir.join("zone.signed");
    Signing {
        signer: Signer::Bind,
        zone: ".",
        unsigned: &root_dir.join("zone"),
        keys: &root_keys.dir,
        denial: Denial::Nsec,
        window: None,
        verify: true,
    }
    .sign(tools, &root_file);
    World {
        root_file,
        tld_file,
        children,
        root_ds: root_keys.ds[0].clone(),
    }
}

// ---------------------------------------------------------------------------
// Authoritative servers
// ---------------------------------------------------------------------------

fn knot_conf(run: &Path, addr: Ipv4Addr, zones: &[(String, PathBuf)]) -> String {
    let r = run.display();
    let mut conf = format!(
        "server:\n    rundir: {r}\n    pidfile: {r}/knot.pid\n    listen: {addr}@{DNS_PORT}\n    \
         udp-workers: 1\n    tcp-workers: 1\n    background-workers: 1\n    identity: \"\"\n    \
         version: \"\"\n\ncontrol:\n    listen: {r}/knot.sock\n\ndatabase:\n    storage: {r}\n\n\
         log:\n  - target: stderr\n    any: notice\n\ntemplate:\n  - id: default\n    \
         storage: {r}\n    zonefile-sync: -1\n    zonefile-load: whole\n    \
         journal-content: none\n    semantic-checks: off\n\nzone:\n"
    );
    for (origin, file) in zones {
        writeln!(
            conf,
            "  - domain: \"{origin}\"\n    file: {}",
            file.display()
        )
        .unwrap();
    }
    conf
}

fn nsd_conf(run: &Path, addr: Ipv4Addr, zones: &[(String, PathBuf)]) -> String {
    let r = run.display();
    let mut conf = format!(
        "server:\n    server-count: 1\n    port: {DNS_PORT}\n    do-ip6: no\n    \
         ip-address: {addr}\n    username: \"\"\n    chroot: \"\"\n    database: \"\"\n    \
         zonesdir: \"{r}\"\n    zonelistfile: \"{r}/zone.list\"\n    \
         xfrdfile: \"{r}/xfrd.state\"\n    xfrdir: \"{r}\"\n    pidfile: \"{r}/nsd.pid\"\n    \
         logfile: \"{r}/nsd.log\"\n    cookie-secret-file: \"{r}/cookie-secrets.txt\"\n    \
         zonefiles-write: 0\n    zonefiles-check: no\n    hide-version: yes\n    \
         hide-identity: yes\n    verbosity: 1\n    rrl-ratelimit: 0\n    \
         rrl-whitelist-ratelimit: 0\n\nremote-control:\n    control-enable: no\n\n"
    );
    for (origin, file) in zones {
        writeln!(
            conf,
            "zone:\n    name: \"{origin}\"\n    zonefile: \"{}\"",
            file.display()
        )
        .unwrap();
    }
    conf
}

/// One authoritative server process and the zones it must serve.
struct Authority {
    process: ChildGuard,
    addr: SocketAddr,
    zones: Vec<String>,
    /// NSD logs to a file of its own.
    extra_log: Option<PathBuf>,
}

fn start_authority(
    tools: &Tools,
    kind: &str,
    addr: Ipv4Addr,
    zones: Vec<(String, PathBuf)>,
    dir: &Path,
) -> Authority {
    let run = dir.join(format!("{kind}-{addr}"));
    fs::create_dir_all(&run).unwrap();
    let conf = run.join(format!("{kind}.conf"));
    let log = run.join("output.log");
    let (process, extra_log) = match kind {
        "knotd" => {
            fs::write(&conf, knot_conf(&run, addr, &zones)).unwrap();
            let args = vec!["-c".to_string(), conf.display().to_string()];
            (ChildGuard::spawn("knotd", &tools.knotd, &args, log), None)
        }
        "nsd" => {
            fs::write(&conf, nsd_conf(&run, addr, &zones)).unwrap();
            let args = vec![
                "-d".to_string(),
                "-c".to_string(),
                conf.display().to_string(),
            ];
            (
                ChildGuard::spawn("nsd", &tools.nsd, &args, log),
                Some(run.join("nsd.log")),
            )
        }
        other => panic!("unknown server kind {other}"),
    };
    Authority {
        process,
        addr: SocketAddr::new(IpAddr::V4(addr), DNS_PORT),
        zones: zones.into_iter().map(|(origin, _)| origin).collect(),
        extra_log,
    }
}

fn authority_log(authority: &Authority) -> String {
    let extra = authority
        .extra_log
        .as_ref()
        .map(|p| fs::read_to_string(p).unwrap_or_default())
        .unwrap_or_default();
    format!("{}{extra}", authority.process.log())
}

/// Polls every zone's SOA at its server until each is served
/// authoritatively (knotd and NSD load zones after binding).
fn wait_until_served(authorities: &mut [Authority]) {
    let deadline = Instant::now() + support::STARTUP_DEADLINE;
    let mut pending: Vec<(usize, String)> = authorities
        .iter()
        .enumerate()
        .flat_map(|(i, a)| a.zones.iter().map(move |z| (i, z.clone())))
        .collect();
    let mut last = String::new();
    loop {
        for authority in authorities.iter_mut() {
            if let Some(status) = authority.process.exited() {
                panic!(
                    "{} on {} exited with {status}; its output:\n{}",
                    authority.process.name(),
                    authority.addr,
                    authority_log(authority)
                );
            }
        }
        pending.retain(|(i, zone)| {
            let addr = authorities[*i].addr;
            let spec = QuerySpec::new(zone, RecordType::SOA);
            match support::query(addr, &spec, Transport::Udp, Duration::from_millis(200)) {
                Ok(a) if a.rcode == RCODE_NOERROR && a.aa && !a.answer.is_empty() => false,
                Ok(a) => {
                    last = format!("{zone} at {addr}: {a}");
                    true
                }
                Err(e) => {
                    last = format!("{zone} at {addr}: {e}");
                    true
                }
            }
        });
        if pending.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} zones not served within {:?}, e.g. {last}\n{}",
            pending.len(),
            support::STARTUP_DEADLINE,
            authority_log(&authorities[pending[0].0])
        );
        // A pause that ends at once if the first server exits.
        let _ = authorities[0].process.wait_exit(Duration::from_millis(50));
    }
}

// ---------------------------------------------------------------------------
// The validators
// ---------------------------------------------------------------------------

/// Polls `addr` until it gives any response at all.
fn wait_answers(process: &mut ChildGuard, addr: SocketAddr) {
    let deadline = Instant::now() + support::STARTUP_DEADLINE;
    let spec = QuerySpec::new("localhost.", RecordType::A);
    loop {
        if let Some(status) = process.exited() {
            panic!(
                "{} exited with {status}; its log:\n{}",
                process.name(),
                process.log()
            );
        }
        if support::query(addr, &spec, Transport::Udp, Duration::from_millis(100)).is_ok() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} does not answer on {addr}; its log:\n{}",
            process.name(),
            process.log()
        );
    }
}

fn start_bulwark(world: &World, dir: &Path) -> (ChildGuard, SocketAddr) {
    let conf = format!(
        "[server]\nlisten = [\"{BULWARK_RESOLVER}:{DNS_PORT}\"]\nthreads = 1\n\n\
         [resolver]\nroot_hints = [\"{ROOT_SERVER}:{DNS_PORT}\"]\n\
         allow_recursion = [\"127.0.0.0/8\"]\nquery_localhost = true\n\
         dnssec_validation = true\ntrust_anchors = [\"{}\"]\n",
        world.root_ds
    );
    let path = dir.join("bulwark.toml");
    fs::write(&path, conf).unwrap();
    let args = vec![
        "serve".to_string(),
        "--config".to_string(),
        path.display().to_string(),
    ];
    let (mut process, bound) = support::start_bulwark(&args, &[], dir, "bulwark");
    let addr = bound.dns[0];
    wait_answers(&mut process, addr);
    (process, addr)
}

/// Unbound on `addr`: validating from the root anchor (`validator
/// iterator`), or iterating only, as delv's upstream, so that delv gets
/// the data, bogus or not, and judges it itself (delv sets no CD bit, and
/// a validating upstream would hide a bogus answer behind its SERVFAIL).
fn start_unbound(
    tools: &Tools,
    world: &World,
    dir: &Path,
    addr: Ipv4Addr,
    validating: bool,
) -> (ChildGuard, SocketAddr) {
    fs::create_dir_all(dir).unwrap();
    let hints = dir.join("root.hints");
    fs::write(
        &hints,
        format!(". 3600000 NS ns-root.\nns-root. 3600000 A {ROOT_SERVER}\n"),
    )
    .unwrap();
    let modules = if validating {
        let anchor = dir.join("root.anchor");
        fs::write(&anchor, format!("{}\n", world.root_ds)).unwrap();
        format!(
            "    trust-anchor-file: {}\n    module-config: \"validator iterator\"\n    \
             val-log-level: 2\n    ede: yes\n",
            anchor.display()
        )
    } else {
        "    module-config: \"iterator\"\n".to_string()
    };
    let d = dir.display();
    // Defaults otherwise (harden-*, qname minimisation, aggressive NSEC);
    // loopback servers allowed, `test.` lifted out of Unbound's RFC 6761
    // local zones.
    let conf = format!(
        "server:\n    interface: {addr}\n    port: {DNS_PORT}\n    \
         access-control: 127.0.0.0/8 allow\n    do-not-query-localhost: no\n    do-ip6: no\n    \
         root-hints: {hints}\n{modules}    local-zone: \"test.\" nodefault\n    \
         num-threads: 1\n    so-reuseport: no\n    chroot: \"\"\n    username: \"\"\n    \
         directory: \"{d}\"\n    pidfile: \"\"\n    use-syslog: no\n    logfile: \"\"\n    \
         verbosity: 1\n\nremote-control:\n    control-enable: no\n",
        hints = hints.display(),
    );
    let path = dir.join("unbound.conf");
    fs::write(&path, conf).unwrap();
    let args = vec![
        "-d".to_string(),
        "-c".to_string(),
        path.display().to_string(),
    ];
    let mut process = ChildGuard::spawn("unbound", &tools.unbound, &args, dir.join("unbound.log"));
    let addr = SocketAddr::new(IpAddr::V4(addr), DNS_PORT);
    wait_answers(&mut process, addr);
    (process, addr)
}

/// What a validator said: the RCODE, AD, the Extended DNS Error (RFC 8914)
/// code and text if any.
#[derive(Clone, Debug)]
struct Verdict {
    rcode: u16,
    ad: bool,
    ede: Option<(u16, String)>,
}

/// Asks `addr` one question with RD and DO (and CD if `cd`), over TCP when
/// the UDP answer is truncated.
fn ask(addr: SocketAddr, qname: &str, qtype: RecordType, cd: bool) -> Result<Verdict, String> {
    let mut spec = QuerySpec::new(qname, qtype);
    spec.rd = true;
    spec.cd = cd;
    spec.edns = Some(EdnsSpec {
        payload: 1232,
        dnssec_ok: true,
        version: 0,
    });
    let mut last = String::new();
    for id in [0x6b01u16, 0x6b02] {
        let wire = spec.to_wire(id);
        let raw = match support::exchange_udp(addr, &wire, id, QUERY_TIMEOUT) {
            Ok(raw) => raw,
            Err(e) if support::is_timeout(&e) => {
                last = format!("no answer: {e}");
                continue;
            }
            Err(e) => return Err(e.to_string()),
        };
        let mut raw = raw;
        let mut answer = Answer::parse(&raw).ok_or("response shorter than a header")?;
        if answer.tc {
            raw = support::exchange_tcp(addr, &wire, QUERY_TIMEOUT).map_err(|e| e.to_string())?;
            answer = Answer::parse(&raw).ok_or("TCP response shorter than a header")?;
        }
        return Ok(Verdict {
            rcode: answer.rcode,
            ad: answer.ad,
            ede: support::extended_error(&raw),
        });
    }
    Err(last)
}

/// delv's verdict and the line it gave it in.
struct DelvVerdict {
    class: Class,
    detail: String,
}

/// delv, validating for itself from the root anchor, asking a
/// non-validating Unbound for what it needs.
fn delv(
    tools: &Tools,
    anchors: &Path,
    server: SocketAddr,
    qname: &str,
    qtype: RecordType,
) -> DelvVerdict {
    let out = Command::new(&tools.delv)
        .args([
            format!("@{}", server.ip()),
            "-p".to_string(),
            server.port().to_string(),
            "-a".to_string(),
            anchors.display().to_string(),
            "+root=.".to_string(),
            qname.to_string(),
            support::type_name(qtype),
        ])
        .stdin(Stdio::null())
        .output()
        .expect("run delv");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let find = |needle: &str| text.lines().find(|l| l.contains(needle)).map(str::trim);
    let (class, line) = if let Some(l) = find("fully validated") {
        (Class::Secure, l)
    } else if let Some(l) = find("unsigned answer") {
        (Class::Insecure, l)
    } else if let Some(l) = find("resolution failed") {
        (Class::Bogus, l)
    } else {
        (Class::Other, text.trim())
    };
    DelvVerdict {
        class,
        detail: line.trim_start_matches(';').trim().to_string(),
    }
}

// ---------------------------------------------------------------------------
// The matrix
// ---------------------------------------------------------------------------

struct Row {
    case: &'static Case,
    signer: Signer,
    question: &'static Question,
    qname: String,
    bulwark: Result<Verdict, String>,
    bulwark_cd: Result<Verdict, String>,
    unbound: Result<Verdict, String>,
    unbound_cd: Result<Verdict, String>,
    delv: DelvVerdict,
}

impl Row {
    /// `LABEL TYPE`, as known differences name a question.
    fn question_key(&self) -> String {
        format!(
            "{} {}",
            self.question.label,
            support::type_name(self.question.qtype)
        )
    }
}

fn cell(v: &Result<Verdict, String>) -> String {
    match v {
        Err(e) => format!("({e})"),
        Ok(v) => {
            let mut s = support::rcode_name(v.rcode);
            if v.ad {
                s.push_str(" AD");
            }
            if let Some((code, _)) = &v.ede {
                write!(s, " ede={code}").unwrap();
            }
            s
        }
    }
}

fn expected_cell(q: &Question) -> String {
    format!("{} {}", support::rcode_name(q.rcode), q.class.name())
}

fn print_matrix(rows: &[Row]) -> String {
    let mut out = String::new();
    writeln!(
        out,
        "{:<26} {:<14} {:<18} {:<20} {:<16} {:<20} {:<16} delv",
        "zone", "question", "expected", "bulwark", "bulwark +cd", "unbound", "unbound +cd"
    )
    .unwrap();
    for r in rows {
        writeln!(
            out,
            "{:<26} {:<14} {:<18} {:<20} {:<16} {:<20} {:<16} {} ({})",
            zone_name(r.case, r.signer),
            r.question_key(),
            expected_cell(r.question),
            cell(&r.bulwark),
            cell(&r.bulwark_cd),
            cell(&r.unbound),
            cell(&r.unbound_cd),
            r.delv.class.name(),
            r.delv.detail
        )
        .unwrap();
    }
    out
}

/// Where bulwark and another validator part, field by field.
struct Difference {
    row: usize,
    field: Field,
    detail: String,
}

fn differences(rows: &[Row]) -> Vec<Difference> {
    let mut out = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let mut differ = |field: Field, detail: String| {
            out.push(Difference {
                row: i,
                field,
                detail,
            })
        };
        match (&r.bulwark, &r.unbound) {
            (Ok(b), Ok(u)) => {
                if b.rcode != u.rcode {
                    differ(
                        Field::Rcode,
                        format!("bulwark {}, unbound {}", cell(&r.bulwark), cell(&r.unbound)),
                    );
                }
                if b.ad != u.ad {
                    differ(
                        Field::Ad,
                        format!("bulwark {}, unbound {}", cell(&r.bulwark), cell(&r.unbound)),
                    );
                }
                if let (Some(be), Some(ue)) = (&b.ede, &u.ede) {
                    if be.0 != ue.0 {
                        differ(
                            Field::Ede,
                            format!(
                                "bulwark EDE {} {:?}, unbound EDE {} {:?}",
                                be.0, be.1, ue.0, ue.1
                            ),
                        );
                    }
                }
            }
            _ => differ(
                Field::Rcode,
                format!("bulwark {}, unbound {}", cell(&r.bulwark), cell(&r.unbound)),
            ),
        }
        match (&r.bulwark_cd, &r.unbound_cd) {
            (Ok(b), Ok(u)) => {
                if b.rcode != u.rcode {
                    differ(
                        Field::CdRcode,
                        format!(
                            "with CD: bulwark {}, unbound {}",
                            cell(&r.bulwark_cd),
                            cell(&r.unbound_cd)
                        ),
                    );
                }
                if b.ad != u.ad {
                    differ(
                        Field::CdAd,
                        format!(
                            "with CD: bulwark {}, unbound {}",
                            cell(&r.bulwark_cd),
                            cell(&r.unbound_cd)
                        ),
                    );
                }
            }
            _ => differ(
                Field::CdRcode,
                format!(
                    "with CD: bulwark {}, unbound {}",
                    cell(&r.bulwark_cd),
                    cell(&r.unbound_cd)
                ),
            ),
        }
        let bulwark_class = r.bulwark.as_ref().map_or(Class::Other, Class::of);
        if bulwark_class != r.delv.class {
            differ(
                Field::Delv,
                format!(
                    "bulwark {} ({}), delv {} ({})",
                    bulwark_class.name(),
                    cell(&r.bulwark),
                    r.delv.class.name(),
                    r.delv.detail
                ),
            );
        }
    }
    out
}

fn known(rows: &[Row], d: &Difference) -> Option<&'static KnownDifference> {
    let r = &rows[d.row];
    KNOWN_DIFFERENCES.iter().find(|k| {
        k.case == r.case.label
            && k.signer.is_none_or(|s| s == r.signer)
            && k.question == r.question_key()
            && k.field == d.field
    })
}

#[test]
fn bulwark_judges_the_bogus_matrix_as_unbound_and_delv_do() {
    let Some(tools) = Tools::find() else { return };
    let started = Instant::now();
    let dir = support::temp_dir("bogus-matrix-");
    let world = build_world(&tools, dir.path());
    let built = started.elapsed();
    bulwark_testkit::netns::isolated_or_skip(|| judge(&tools, &world, dir.path(), started, built));
}

fn judge(tools: &Tools, world: &World, dir: &Path, started: Instant, built: Duration) {
    for addr in [
        ROOT_SERVER,
        TLD_SERVER,
        BIND_CHILDREN,
        BULWARK_CHILDREN,
        BULWARK_RESOLVER,
        UNBOUND_RESOLVER,
        UNBOUND_ITERATOR,
    ] {
        bulwark_testkit::netns::add_address(IpAddr::V4(addr)).expect("add an address to lo");
    }
    let children_of = |signer: Signer| -> Vec<(String, PathBuf)> {
        let mut zones = Vec::new();
        for child in world.children.iter().filter(|c| c.signer == signer) {
            zones.push((child.zone.clone(), child.file.clone()));
            zones.extend(child.insecure.clone());
        }
        zones
    };
    let mut authorities = vec![
        start_authority(
            tools,
            "knotd",
            ROOT_SERVER,
            vec![(".".to_string(), world.root_file.clone())],
            dir,
        ),
        start_authority(
            tools,
            "nsd",
            TLD_SERVER,
            vec![("test.".to_string(), world.tld_file.clone())],
            dir,
        ),
        start_authority(
            tools,
            "knotd",
            BIND_CHILDREN,
            children_of(Signer::Bind),
            dir,
        ),
        start_authority(
            tools,
            "nsd",
            BULWARK_CHILDREN,
            children_of(Signer::Bulwark),
            dir,
        ),
    ];
    wait_until_served(&mut authorities);
    let served = started.elapsed();

    let bulwark_dir = dir.join("bulwark-resolver");
    fs::create_dir_all(&bulwark_dir).unwrap();
    let (bulwark, bulwark_addr) = start_bulwark(world, &bulwark_dir);
    let (unbound, unbound_addr) = start_unbound(
        tools,
        world,
        &dir.join("unbound-validator"),
        UNBOUND_RESOLVER,
        true,
    );
    let (_iterator, iterator_addr) = start_unbound(
        tools,
        world,
        &dir.join("unbound-iterator"),
        UNBOUND_ITERATOR,
        false,
    );

    // delv's anchor: the root DS, as BIND's `trust-anchors` statement.
    let ds = parse_record(&world.root_ds).unwrap();
    let delv_anchors = dir.join("delv.anchors");
    fs::write(
        &delv_anchors,
        format!(
            "trust-anchors {{\n  . static-ds {} {} {} \"{}\";\n}};\n",
            ds.rdata[0],
            ds.rdata[1],
            ds.rdata[2],
            ds.rdata[3..].concat()
        ),
    )
    .unwrap();

    let asking = Instant::now();
    let mut rows = Vec::new();
    for case in &CASES {
        for signer in Signer::ALL {
            let zone = zone_name(case, signer);
            for question in case.questions {
                let name = qname(question, &zone);
                let qt = question.qtype;
                rows.push(Row {
                    case,
                    signer,
                    question,
                    bulwark: ask(bulwark_addr, &name, qt, false),
                    bulwark_cd: ask(bulwark_addr, &name, qt, true),
                    unbound: ask(unbound_addr, &name, qt, false),
                    unbound_cd: ask(unbound_addr, &name, qt, true),
                    delv: delv(tools, &delv_anchors, iterator_addr, &name, qt),
                    qname: name,
                });
            }
        }
    }
    let asked = asking.elapsed();

    let matrix = print_matrix(&rows);
    println!("resolver_bogus_matrix: bulwark, Unbound and delv on the same internet\n{matrix}");

    // The harness built what each case says: Unbound, the oracle, sees it.
    let oracle_wrong: Vec<String> = rows
        .iter()
        .filter(|r| {
            !matches!(&r.unbound, Ok(v) if v.rcode == r.question.rcode
                && Class::of(v) == r.question.class)
        })
        .map(|r| {
            format!(
                "{} {}: expected {}, unbound {}",
                r.qname,
                support::type_name(r.question.qtype),
                expected_cell(r.question),
                cell(&r.unbound)
            )
        })
        .collect();

    // bulwark validates at all: the controls are secure.
    let controls_not_secure: Vec<String> = rows
        .iter()
        .filter(|r| r.case.breakage == Breakage::None)
        .filter(|r| !matches!(&r.bulwark, Ok(v) if v.ad && v.rcode == r.question.rcode))
        .map(|r| format!("{} {}", r.qname, cell(&r.bulwark)))
        .collect();

    let diffs = differences(&rows);
    let mut unexplained = Vec::new();
    let mut explained = Vec::new();
    // Each known difference's reason, once, in the table's order.
    let mut reasons: Vec<&str> = Vec::new();
    for d in &diffs {
        let r = &rows[d.row];
        let line = format!(
            "{} {} [{:?}]: {}",
            zone_name(r.case, r.signer),
            r.question_key(),
            d.field,
            d.detail
        );
        match known(&rows, d) {
            Some(k) => {
                if !reasons.contains(&k.why) {
                    reasons.push(k.why);
                }
                let n = reasons.iter().position(|w| *w == k.why).unwrap() + 1;
                explained.push(format!("{line} (known difference [{n}])"));
            }
            None => unexplained.push(line),
        }
    }
    let stale: Vec<String> = KNOWN_DIFFERENCES
        .iter()
        .filter(|k| {
            !diffs
                .iter()
                .any(|d| known(&rows, d).is_some_and(|m| std::ptr::eq(m, *k)))
        })
        .map(|k| format!("{} {:?} {} [{:?}]", k.case, k.signer, k.question, k.field))
        .collect();
    for line in &explained {
        println!("{line}");
    }
    for (n, why) in reasons.iter().enumerate() {
        println!("[{}] {why}", n + 1);
    }
    println!(
        "resolver_bogus_matrix: {} questions, {} differences ({} known); zones built in \
         {built:.1?}, served after {served:.1?}, asked in {asked:.1?}; {:.1?} in all",
        rows.len(),
        diffs.len(),
        explained.len(),
        started.elapsed()
    );

    let logs = || {
        format!(
            "--- bulwark log (last lines) ---\n{}\n--- unbound log (last lines) ---\n{}",
            tail(&bulwark.log(), 60),
            tail(&unbound.log(), 60)
        )
    };
    assert!(
        oracle_wrong.is_empty(),
        "Unbound does not see the cases as built: the harness is broken, not bulwark:\n{}\n{}",
        oracle_wrong.join("\n"),
        logs()
    );
    assert!(
        controls_not_secure.is_empty(),
        "bulwark does not validate the good zones as secure:\n{}\n{}",
        controls_not_secure.join("\n"),
        logs()
    );
    assert!(
        unexplained.is_empty(),
        "bulwark differs from Unbound or delv in {} places:\n{}\n{}",
        unexplained.len(),
        unexplained.join("\n"),
        logs()
    );
    assert!(
        stale.is_empty(),
        "known differences no longer met (remove them): {stale:?}"
    );
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
