//! Reading a `.rpl` file: the configuration block, then `SCENARIO_BEGIN`,
//! `RANGE` blocks and `STEP`s with their entries, as Deckard's grammar
//! (`pydnstest/deckard.aug`) has them. Comments start with `;` (outside
//! double quotes), and in the configuration block also with `#`. Every error
//! names the file and line.

use std::fmt;
use std::path::{Path, PathBuf};

use bulwark_proto::{Name, Opcode, Rcode};

use crate::config::{Config, ConfigLine};
use crate::message::{Edns, Message};
use crate::record::{parse_question, parse_record_lenient};
use crate::scenario::{Adjust, Entry, MatchElement, Range, Scenario, Step, StepKind};

/// Deckard's TTL for a record line without one.
const DEFAULT_TTL: u32 = 3600;

/// A scenario that could not be read: where, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub path: PathBuf,
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.path.display(), self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

/// Reads and parses a scenario file.
pub fn parse_file(path: &Path) -> Result<Scenario, ParseError> {
    let bytes = std::fs::read(path).map_err(|e| ParseError {
        path: path.to_path_buf(),
        line: 0,
        message: format!("cannot read: {e}"),
    })?;
    parse_str(path, &String::from_utf8_lossy(&bytes))
}

/// Parses a scenario's text; `path` names it in errors and reports.
pub fn parse_str(path: &Path, text: &str) -> Result<Scenario, ParseError> {
    let mut p = Parser {
        path,
        lines: text.lines().collect(),
        next: 0,
        notes: Vec::new(),
    };
    let config = p.config()?;
    let description = p.scenario_begin()?;
    let mut scenario = Scenario {
        path: path.to_path_buf(),
        name: path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        description,
        config,
        ranges: Vec::new(),
        steps: Vec::new(),
        notes: Vec::new(),
    };
    p.body(&mut scenario)?;
    scenario.notes = p.notes;
    Ok(scenario)
}

/// A significant line: its number, its text without the comment, its words.
struct Line<'t> {
    number: usize,
    text: &'t str,
    words: Vec<&'t str>,
}

impl Line<'_> {
    fn keyword(&self) -> &str {
        self.words.first().copied().unwrap_or("")
    }

    fn args(&self) -> &[&str] {
        self.words.get(1..).unwrap_or(&[])
    }

    /// The text after the first word.
    fn rest(&self) -> &str {
        let t = self.text.trim_start();
        t.get(self.keyword().len()..).unwrap_or("").trim()
    }
}

struct Parser<'t> {
    path: &'t Path,
    lines: Vec<&'t str>,
    /// Index of the next line to read.
    next: usize,
    /// See [`Scenario::notes`].
    notes: Vec<String>,
}

impl<'t> Parser<'t> {
    fn error(&self, line: usize, message: impl Into<String>) -> ParseError {
        ParseError {
            path: self.path.to_path_buf(),
            line,
            message: message.into(),
        }
    }

    /// The next line with something on it after the comment is cut.
    fn next_line(&mut self) -> Option<Line<'t>> {
        while let Some(&raw) = self.lines.get(self.next) {
            self.next += 1;
            let text = strip_comment(raw);
            let words: Vec<&str> = text.split_whitespace().collect();
            if !words.is_empty() {
                return Some(Line {
                    number: self.next,
                    text,
                    words,
                });
            }
        }
        None
    }

    fn peek_line(&mut self) -> Option<Line<'t>> {
        let at = self.next;
        let line = self.next_line();
        self.next = at;
        line
    }

    /// Line number for "the file ended" errors.
    fn end(&self) -> usize {
        self.lines.len()
    }

    /// Everything up to `CONFIG_END`. A file without `CONFIG_END` has no
    /// configuration block and starts with `SCENARIO_BEGIN`.
    fn config(&mut self) -> Result<Config, ParseError> {
        let has_block = self
            .lines
            .iter()
            .any(|l| l.trim_start().starts_with("CONFIG_END"));
        let mut config = Config::default();
        if !has_block {
            return Ok(config);
        }
        while let Some(&raw) = self.lines.get(self.next) {
            self.next += 1;
            let number = self.next;
            if raw.trim_start().starts_with("CONFIG_END") {
                return Ok(config);
            }
            let text = strip_comment(raw);
            let text = text.split('#').next().unwrap_or("").trim();
            if text.is_empty() {
                continue;
            }
            let (key, value) = text.split_once(':').ok_or_else(|| {
                self.error(number, format!("expected `key: value`, got {text:?}"))
            })?;
            let line = ConfigLine {
                line: number,
                key: key.trim().to_string(),
                value: value.trim().to_string(),
            };
            if let Some(note) = config.apply(line).map_err(|e| self.error(number, e))? {
                self.notes
                    .push(format!("{}:{number}: {note}", self.path.display()));
            }
        }
        Err(self.error(self.end(), "no CONFIG_END"))
    }

    fn scenario_begin(&mut self) -> Result<String, ParseError> {
        match self.next_line() {
            Some(l) if l.keyword() == "SCENARIO_BEGIN" => Ok(l.rest().to_string()),
            Some(l) => Err(self.error(
                l.number,
                format!("expected SCENARIO_BEGIN, got {:?}", l.keyword()),
            )),
            None => Err(self.error(self.end(), "no SCENARIO_BEGIN")),
        }
    }

    fn body(&mut self, scenario: &mut Scenario) -> Result<(), ParseError> {
        while let Some(line) = self.next_line() {
            match line.keyword() {
                "RANGE_BEGIN" => {
                    let range = self.range(&line)?;
                    scenario.ranges.push(range);
                }
                "STEP" => {
                    let step = self.step(&line)?;
                    if scenario.steps.iter().any(|s| s.id == step.id) {
                        return Err(self.error(line.number, format!("a second STEP {}", step.id)));
                    }
                    scenario.steps.push(step);
                }
                "SCENARIO_END" => return Ok(()),
                other => {
                    return Err(self.error(
                        line.number,
                        format!("expected RANGE_BEGIN, STEP or SCENARIO_END, got {other:?}"),
                    ))
                }
            }
        }
        Err(self.error(self.end(), "no SCENARIO_END"))
    }

    /// `RANGE_BEGIN from to [address]`, `ADDRESS`es, entries, `RANGE_END`.
    fn range(&mut self, begin: &Line<'_>) -> Result<Range, ParseError> {
        let number = |s: Option<&&str>| s.and_then(|s| s.parse::<u32>().ok());
        let args = begin.args();
        let (Some(from), Some(to)) = (number(args.first()), number(args.get(1))) else {
            return Err(self.error(begin.number, "expected RANGE_BEGIN <from> <to>"));
        };
        if from > to {
            return Err(self.error(
                begin.number,
                format!("RANGE_BEGIN {from} {to}: empty range"),
            ));
        }
        let mut range = Range {
            line: begin.number,
            from,
            to,
            addresses: Vec::new(),
            entries: Vec::new(),
        };
        if let Some(a) = args.get(2) {
            range.addresses.push(
                a.parse()
                    .map_err(|_| self.error(begin.number, format!("bad address {a:?}")))?,
            );
        }
        while let Some(line) = self.next_line() {
            match line.keyword() {
                "ADDRESS" => {
                    let a = line.args().first().copied().unwrap_or("");
                    let ip = a
                        .parse()
                        .map_err(|_| self.error(line.number, format!("bad address {a:?}")))?;
                    range.addresses.push(ip);
                }
                "ENTRY_BEGIN" => {
                    let entry = self.entry(line.number)?;
                    range.entries.push(entry);
                }
                "RANGE_END" => return Ok(range),
                other => {
                    return Err(self.error(
                        line.number,
                        format!("expected ADDRESS, ENTRY_BEGIN or RANGE_END, got {other:?}"),
                    ))
                }
            }
        }
        Err(self.error(begin.number, "RANGE_BEGIN without RANGE_END"))
    }

    /// `STEP id TYPE [ELAPSE seconds]`, and the entry that follows, if any.
    fn step(&mut self, line: &Line<'_>) -> Result<Step, ParseError> {
        let args = line.args();
        let id = args
            .first()
            .and_then(|s| s.parse::<u32>().ok())
            .ok_or_else(|| self.error(line.number, "expected STEP <id> <type>"))?;
        let kind = match args.get(1).copied() {
            Some("QUERY") => StepKind::Query,
            Some("CHECK_ANSWER") => StepKind::CheckAnswer,
            Some("REPLY") => StepKind::Reply,
            Some("CHECK_OUT_QUERY") => StepKind::CheckOutQuery,
            Some("TIME_PASSES") => {
                let seconds = match (args.get(2).copied(), args.get(3)) {
                    (Some("ELAPSE"), Some(s)) => s.parse::<u64>().ok(),
                    _ => None,
                };
                StepKind::TimePasses(seconds.ok_or_else(|| {
                    self.error(line.number, "expected TIME_PASSES ELAPSE <seconds>")
                })?)
            }
            other => {
                return Err(self.error(
                    line.number,
                    format!("unknown step type {:?}", other.unwrap_or("")),
                ))
            }
        };
        let entry = match self.peek_line() {
            Some(l) if l.keyword() == "ENTRY_BEGIN" => {
                self.next_line();
                Some(self.entry(l.number)?)
            }
            _ => None,
        };
        if entry.is_none()
            && matches!(
                kind,
                StepKind::Query | StepKind::CheckAnswer | StepKind::Reply
            )
        {
            return Err(self.error(line.number, format!("STEP {id} {kind} needs an ENTRY")));
        }
        Ok(Step {
            line: line.number,
            id,
            kind,
            entry,
        })
    }

    /// From after `ENTRY_BEGIN` to `ENTRY_END`.
    fn entry(&mut self, begin: usize) -> Result<Entry, ParseError> {
        let mut entry = Entry {
            line: begin,
            matches: None,
            adjust: Adjust::default(),
            mandatory: false,
            message: Message {
                edns: Some(Edns::deckard_default()),
                ..Message::default()
            },
            raw: None,
            no_edns: false,
        };
        let mut section: Option<SectionName> = None;
        let mut raw_hex: Option<String> = None;
        let mut origin = Name::root();
        let mut default_ttl = DEFAULT_TTL;
        while let Some(line) = self.next_line() {
            let n = line.number;
            if let Some(hex) = raw_hex.as_mut() {
                if line.keyword() != "ENTRY_END" {
                    hex.extend(line.words.iter().copied());
                    continue;
                }
            }
            match line.keyword() {
                "ENTRY_END" => {
                    if let Some(hex) = raw_hex {
                        entry.raw = Some(decode_hex(&hex).ok_or_else(|| {
                            self.error(n, "RAW data is not an even number of hex digits")
                        })?);
                    }
                    return Ok(entry);
                }
                "MATCH" => {
                    let list = entry.matches.get_or_insert_with(Vec::new);
                    for w in line.args() {
                        let m = MatchElement::from_keyword(w)
                            .ok_or_else(|| self.error(n, format!("unknown MATCH element {w:?}")))?;
                        list.push(m);
                    }
                }
                "ADJUST" => {
                    for w in line.args() {
                        let a = &mut entry.adjust;
                        match *w {
                            "copy_id" => a.copy_id = true,
                            "copy_query" => a.copy_query = true,
                            "raw_id" => a.raw_id = true,
                            "do_not_answer" => a.do_not_answer = true,
                            other => {
                                return Err(
                                    self.error(n, format!("unknown ADJUST element {other:?}"))
                                )
                            }
                        }
                    }
                }
                // `FLAGS` is the grammar's other spelling of `REPLY`.
                "REPLY" | "FLAGS" => {
                    for w in line.args() {
                        apply_reply_word(&mut entry.message, w).map_err(|e| self.error(n, e))?;
                    }
                }
                "MANDATORY" => entry.mandatory = true,
                "NO_EDNS" => {
                    entry.no_edns = true;
                    entry.message.edns = None;
                }
                "TSIG" => return Err(self.error(n, "TSIG entries are not supported")),
                "SECTION" => {
                    let which = line.args().first().copied().unwrap_or("");
                    section = Some(
                        SectionName::from_keyword(which)
                            .ok_or_else(|| self.error(n, format!("unknown SECTION {which:?}")))?,
                    );
                }
                "RAW" => raw_hex = Some(String::new()),
                "$ORIGIN" => {
                    let text = line.args().first().copied().unwrap_or("");
                    origin = Name::from_presentation(text.as_bytes(), Some(&Name::root()))
                        .map_err(|e| self.error(n, format!("$ORIGIN {text:?}: {e}")))?;
                }
                "$TTL" => {
                    let text = line.args().first().copied().unwrap_or("");
                    default_ttl = text
                        .parse()
                        .map_err(|_| self.error(n, format!("$TTL {text:?}: not a number")))?;
                }
                _ => {
                    let Some(s) = section else {
                        return Err(self.error(
                            n,
                            format!("{:?} is neither a keyword nor in a SECTION", line.keyword()),
                        ));
                    };
                    let m = &mut entry.message;
                    let text = line.text;
                    match s {
                        SectionName::Question => m
                            .question
                            .push(parse_question(text, &origin).map_err(|e| self.error(n, e))?),
                        SectionName::Answer | SectionName::Authority | SectionName::Additional => {
                            let (r, note) = parse_record_lenient(text, &origin, default_ttl)
                                .map_err(|e| self.error(n, e))?;
                            if let Some(note) = note {
                                self.notes
                                    .push(format!("{}:{n}: {note}", self.path.display()));
                            }
                            match s {
                                SectionName::Answer => m.answer.push(r),
                                SectionName::Authority => m.authority.push(r),
                                _ => m.additional.push(r),
                            }
                        }
                    }
                }
            }
        }
        Err(self.error(begin, "ENTRY_BEGIN without ENTRY_END"))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SectionName {
    Question,
    Answer,
    Authority,
    Additional,
}

impl SectionName {
    fn from_keyword(word: &str) -> Option<SectionName> {
        Some(match word {
            "QUESTION" => SectionName::Question,
            "ANSWER" => SectionName::Answer,
            "AUTHORITY" => SectionName::Authority,
            "ADDITIONAL" => SectionName::Additional,
            _ => return None,
        })
    }
}

/// One word of a `REPLY` line: an opcode, an rcode, a header flag or `DO`.
fn apply_reply_word(m: &mut Message, word: &str) -> Result<(), String> {
    let f = &mut m.flags;
    match word {
        "QR" => f.qr = true,
        "AA" => f.aa = true,
        "TC" => f.tc = true,
        "RD" => f.rd = true,
        "RA" => f.ra = true,
        "AD" => f.ad = true,
        "CD" => f.cd = true,
        "DO" => {
            if let Some(e) = m.edns.as_mut() {
                e.dnssec_ok = true;
            }
        }
        "QUERY" => m.opcode = Opcode::QUERY,
        "IQUERY" => m.opcode = Opcode::IQUERY,
        "STATUS" => m.opcode = Opcode::STATUS,
        "NOTIFY" => m.opcode = Opcode::NOTIFY,
        "UPDATE" => m.opcode = Opcode::UPDATE,
        other => m.rcode = rcode(other).ok_or_else(|| format!("unknown REPLY word {other:?}"))?,
    }
    Ok(())
}

fn rcode(word: &str) -> Option<Rcode> {
    Some(match word {
        "NOERROR" => Rcode::NOERROR,
        "FORMERR" => Rcode::FORMERR,
        "SERVFAIL" => Rcode::SERVFAIL,
        "NXDOMAIN" => Rcode::NXDOMAIN,
        "NOTIMP" => Rcode::NOTIMP,
        "REFUSED" => Rcode::REFUSED,
        "YXDOMAIN" => Rcode::YXDOMAIN,
        "YXRRSET" => Rcode::YXRRSET,
        "NXRRSET" => Rcode::NXRRSET,
        "NOTAUTH" => Rcode::NOTAUTH,
        "NOTZONE" => Rcode::NOTZONE,
        // RFC 6891 and RFC 8945 share 16.
        "BADVERS" | "BADSIG" => Rcode::BADVERS,
        "BADKEY" => Rcode::BADKEY,
        "BADTIME" => Rcode::BADTIME,
        "BADMODE" => Rcode::BADMODE,
        "BADNAME" => Rcode::BADNAME,
        "BADALG" => Rcode::BADALG,
        "BADTRUNC" => Rcode::BADTRUNC,
        "BADCOOKIE" => Rcode::BADCOOKIE,
        _ => return None,
    })
}

/// The line up to a `;` that is not inside double quotes (a `\` escapes
/// the next character), as Deckard's tokenizer cuts comments.
fn strip_comment(line: &str) -> &str {
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match c {
            '\\' if !escaped => {
                escaped = true;
                continue;
            }
            '"' if !escaped => quoted = !quoted,
            ';' if !quoted && !escaped => return line.get(..i).unwrap_or(line),
            _ => {}
        }
        escaped = false;
    }
    line
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if digits.len() % 2 != 0 {
        return None;
    }
    digits
        .chunks(2)
        .map(|pair| {
            let s = std::str::from_utf8(pair).ok()?;
            u8::from_str_radix(s, 16).ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bulwark_proto::Rtype;

    fn parse(text: &str) -> Result<Scenario, ParseError> {
        parse_str(Path::new("t.rpl"), text)
    }

    const SMALL: &str = "do-ip6: no\n\
        ; config options\n\
        \tstub-addr: 193.0.14.129 \t# K.ROOT-SERVERS.NET.\n\
        \tquery-minimization: off ; a comment\n\
        \ttrust-anchor: \"example. 3600 IN DS 1 8 1 ( 2bb183af5f22588179a53b0a98631fad1a292118 ) ;{id = 1}\"\n\
        \tval-override-date: \"20170228130000\"\n\
        CONFIG_END\n\
        \n\
        SCENARIO_BEGIN A small one; with a comment\n\
        RANGE_BEGIN 0 100 193.0.14.129 ; root\n\
        \tADDRESS 2001:db8::1\n\
        ENTRY_BEGIN\n\
        MANDATORY\n\
        MATCH opcode qtype qname\n\
        ADJUST copy_id\n\
        REPLY QR AA NOERROR\n\
        SECTION QUESTION\n\
        . IN NS\n\
        SECTION ANSWER\n\
        . IN NS\tK.ROOT-SERVERS.NET.\n\
        SECTION ADDITIONAL\n\
        K.ROOT-SERVERS.NET.\tIN\tA\t193.0.14.129\n\
        txt. 60 TXT \"a;b\" ; not part of the data\n\
        ENTRY_END\n\
        RANGE_END\n\
        STEP 1 QUERY\n\
        ENTRY_BEGIN\n\
        FLAGS RD DO\n\
        SECTION QUESTION\n\
        www.example. IN A\n\
        ENTRY_END\n\
        STEP 5 TIME_PASSES ELAPSE 15\n\
        STEP 7 QUERY\n\
        ENTRY_BEGIN\n\
        RAW\n\
        b5c9ca3d\n\
        5010\n\
        ENTRY_END\n\
        STEP 10 CHECK_ANSWER\n\
        ENTRY_BEGIN\n\
        MATCH all\n\
        REPLY QR RD RA NXDOMAIN\n\
        ENTRY_END\n\
        STEP 11 CHECK_OUT_QUERY\n\
        SCENARIO_END\n";

    #[test]
    fn a_small_scenario_reads_whole() {
        let s = parse(SMALL).unwrap();
        assert_eq!(s.name, "t");
        assert_eq!(s.description, "A small one");
        let c = &s.config;
        assert_eq!(c.stub_addr, Some("193.0.14.129".parse().unwrap()));
        assert_eq!(c.query_minimization, Some(false));
        assert!(!c.do_ip6);
        assert_eq!(c.start_time, Some(1_488_286_800));
        assert_eq!(
            c.trust_anchors,
            ["example. 3600 IN DS 1 8 1 2bb183af5f22588179a53b0a98631fad1a292118"]
        );
        assert_eq!(c.trust_anchor_records[0].rtype(), Rtype::DS);

        let r = &s.ranges[0];
        assert_eq!((r.line, r.from, r.to), (10, 0, 100));
        let addresses: Vec<String> = r.addresses.iter().map(ToString::to_string).collect();
        assert_eq!(addresses, ["193.0.14.129", "2001:db8::1"]);
        let e = &r.entries[0];
        assert_eq!(e.line, 12);
        assert!(e.mandatory && e.adjust.copy_id && !e.adjust.copy_query);
        assert_eq!(
            e.match_elements(),
            [
                MatchElement::Opcode,
                MatchElement::Qtype,
                MatchElement::Qname
            ]
        );
        assert!(e.message.flags.qr && e.message.flags.aa && !e.message.flags.rd);
        assert_eq!(e.message.question[0].qtype, Rtype::NS);
        assert_eq!(e.message.answer.len(), 1);
        assert_eq!(e.message.additional.len(), 2);
        assert_eq!(
            e.message.additional[1].rdata,
            bulwark_proto::Rdata::Txt(vec![b"a;b".to_vec()])
        );
        assert_eq!(e.message.additional[1].ttl, 60);
        // Deckard's default EDNS on every entry.
        assert_eq!(e.message.edns, Some(Edns::deckard_default()));

        let kinds: Vec<(u32, StepKind)> = s.steps.iter().map(|st| (st.id, st.kind)).collect();
        assert_eq!(
            kinds,
            [
                (1, StepKind::Query),
                (5, StepKind::TimePasses(15)),
                (7, StepKind::Query),
                (10, StepKind::CheckAnswer),
                (11, StepKind::CheckOutQuery),
            ]
        );
        let query = s.steps[0].entry.as_ref().unwrap();
        assert!(query.message.flags.rd);
        assert!(query.message.edns.as_ref().unwrap().dnssec_ok);
        assert_eq!(
            s.steps[2].entry.as_ref().unwrap().raw,
            Some(vec![0xb5, 0xc9, 0xca, 0x3d, 0x50, 0x10])
        );
        let check = s.steps[3].entry.as_ref().unwrap();
        assert_eq!(check.message.rcode, Rcode::NXDOMAIN);
        assert_eq!(check.match_elements().len(), 8);
        assert!(s.notes.is_empty());
    }

    #[test]
    fn the_server_addresses_include_the_hint_and_reply_steps() {
        let text = SMALL.replace(
            "STEP 11 CHECK_OUT_QUERY\n",
            "STEP 11 REPLY\nENTRY_BEGIN\nSECTION ADDITIONAL\nns. A 198.51.100.9\nENTRY_END\n",
        );
        let s = parse(&text).unwrap();
        let all: Vec<String> = s
            .server_addresses()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(all, ["193.0.14.129", "2001:db8::1", "198.51.100.9"]);
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let cases = [
            (
                SMALL.replace("MATCH opcode qtype qname", "MATCH opcode qtipe"),
                14,
                "unknown MATCH element \"qtipe\"",
            ),
            (
                SMALL.replace("ADJUST copy_id\n", "ADJUST copy_everything\n"),
                15,
                "unknown ADJUST element",
            ),
            (
                SMALL.replace("REPLY QR AA NOERROR", "REPLY QR AA NOERR"),
                16,
                "unknown REPLY word \"NOERR\"",
            ),
            (
                SMALL.replace(". IN NS\tK.ROOT", ". IN NS\tK..ROOT"),
                20,
                "NS data",
            ),
            (
                SMALL.replace("\tquery-minimization: off", "\tquery-maximization: off"),
                4,
                "unsupported configuration key",
            ),
            (
                SMALL.replace("STEP 5 TIME_PASSES ELAPSE 15", "STEP 5 TIME_PASSES 15"),
                32,
                "TIME_PASSES ELAPSE",
            ),
            (
                SMALL.replace("STEP 10 CHECK", "STEP 7 CHECK"),
                39,
                "a second STEP 7",
            ),
            (
                SMALL.replace("RANGE_END\n", ""),
                25,
                "expected ADDRESS, ENTRY_BEGIN or RANGE_END, got \"STEP\"",
            ),
            (SMALL.replace("b5c9ca3d\n", "b5c9ca3\n"), 38, "RAW data"),
            (SMALL.replace("SCENARIO_END\n", ""), 44, "no SCENARIO_END"),
        ];
        for (text, line, what) in cases {
            let e = parse(&text).unwrap_err();
            assert_eq!(
                (e.line, e.path.as_path()),
                (line, Path::new("t.rpl")),
                "{e}"
            );
            assert!(e.to_string().starts_with(&format!("t.rpl:{line}: ")), "{e}");
            assert!(e.message.contains(what), "{e}");
        }
    }

    #[test]
    fn comments_stop_at_semicolons_outside_quotes() {
        assert_eq!(strip_comment("a \"b;c\" ; d"), "a \"b;c\" ");
        assert_eq!(strip_comment("a \\; b ; c"), "a \\; b ");
        assert_eq!(strip_comment("; all"), "");
    }
}
