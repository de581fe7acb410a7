//! The master-file parser (RFC 1035 §5): records and the `$ORIGIN`, `$TTL`,
//! `$INCLUDE` and `$GENERATE` directives, into [`Record`]s.
//!
//! Parsing keeps going after a problem so that one run reports up to
//! [`MAX_DIAGNOSTICS`] of them, each with file, line and column.

pub mod generate;
pub mod lexer;
pub mod split;
pub mod ttl;

use std::path::{Path, PathBuf};

use bulwark_proto::presentation::Field;
use bulwark_proto::rdata::RdataTextError;
use bulwark_proto::{Class, Name, Rdata, Record, Rtype};

use crate::diagnostic::Diagnostic;
use lexer::{Entry, Lexer, Pos, Token};
use ttl::{looks_like_ttl, parse_ttl};

/// How many problems one parse reports before it stops.
pub const MAX_DIAGNOSTICS: usize = 50;

/// Data fields a record may have before they no longer fit on the stack.
const INLINE_FIELDS: usize = 16;

/// How deep `$INCLUDE`s may nest (a file including itself is caught sooner).
pub const MAX_INCLUDE_DEPTH: usize = 16;

/// Turns a record's data fields into [`Rdata`]; the parser is generic over it only
/// so that its own tests do not depend on every record type's syntax.
type RdataParser = fn(Rtype, &[Field<'_>], &Name) -> Result<Rdata, RdataTextError>;

/// Parses the master file at `path` for the zone `origin` (the initial `$ORIGIN`).
/// `$INCLUDE` paths are taken relative to the directory of the file that names them.
pub fn parse_file(path: &Path, origin: &Name) -> Result<Vec<Record>, Vec<Diagnostic>> {
    collect(|sink| file_with(Rdata::parse_presentation, path, origin, sink))
}

/// Like [`parse_file`], showing each record to `sink` as soon as it is complete
/// instead of gathering them all, so that a large zone is never held as typed
/// records at once. Records come in file order, as [`parse_file`] returns them.
/// The sink borrows each record: one that keeps a compact form never copies
/// the large typed record.
///
/// The one exception to "as soon as complete": a record with no TTL before any
/// `$TTL`, earlier TTL or SOA takes the SOA minimum (RFC 2308 §4), so it and the
/// records after it are held back until the first SOA gives that value.
///
/// On `Err` the sink may already have received records; the caller discards them.
pub fn parse_file_with(
    path: &Path,
    origin: &Name,
    sink: &mut impl FnMut(&Record),
) -> Result<(), Vec<Diagnostic>> {
    file_with(Rdata::parse_presentation, path, origin, sink)
}

/// Parses master-file text; `file_label` names it in diagnostics. Text has no
/// directory to resolve `$INCLUDE` against, so `$INCLUDE` is refused here.
pub fn parse_str(
    text: &str,
    origin: &Name,
    file_label: &str,
) -> Result<Vec<Record>, Vec<Diagnostic>> {
    parse_with(Rdata::parse_presentation, text, origin, file_label)
}

/// Like [`parse_str`], handing each record to `sink` as [`parse_file_with`] does.
pub fn parse_str_with(
    text: &str,
    origin: &Name,
    file_label: &str,
    sink: &mut impl FnMut(&Record),
) -> Result<(), Vec<Diagnostic>> {
    text_with(Rdata::parse_presentation, text, origin, file_label, sink)
}

/// Gathers what a streaming parse hands out.
fn collect(
    parse: impl FnOnce(&mut dyn FnMut(&Record)) -> Result<(), Vec<Diagnostic>>,
) -> Result<Vec<Record>, Vec<Diagnostic>> {
    let mut records = Vec::new();
    parse(&mut |r| records.push(r.clone()))?;
    Ok(records)
}

fn parse_with(
    rdata_parser: RdataParser,
    text: &str,
    origin: &Name,
    file_label: &str,
) -> Result<Vec<Record>, Vec<Diagnostic>> {
    collect(|sink| text_with(rdata_parser, text, origin, file_label, sink))
}

fn file_with(
    rdata_parser: RdataParser,
    path: &Path,
    origin: &Name,
    sink: &mut dyn FnMut(&Record),
) -> Result<(), Vec<Diagnostic>> {
    let mut parser = Parser::new(rdata_parser, sink);
    parser.include_file(path, origin.clone(), None);
    parser.finish()
}

fn text_with(
    rdata_parser: RdataParser,
    text: &str,
    origin: &Name,
    file_label: &str,
    sink: &mut dyn FnMut(&Record),
) -> Result<(), Vec<Diagnostic>> {
    let mut parser = Parser::new(rdata_parser, sink);
    let mut file = FileState {
        label: file_label.to_owned(),
        dir: None,
        origin: origin.clone(),
        last_owner: None,
        owner_from_before: false,
        used_owner_from_before: false,
    };
    parser.parse_text(text.as_bytes(), &mut file);
    parser.finish()
}

/// What is local to one file: RFC 1035 §5.1, an `$INCLUDE`d file has its own
/// origin, and returning from it restores the includer's origin.
#[derive(Debug, Clone)]
struct FileState {
    label: String,
    dir: Option<PathBuf>,
    origin: Name,
    last_owner: Option<Name>,
    /// This is a later part of a split parse (see [`split`]) that has given
    /// no owner yet, so an entry repeating the previous owner would need one
    /// from before the part; `used_owner_from_before` records that one did.
    owner_from_before: bool,
    used_owner_from_before: bool,
}

/// The TTL, class and type in front of a record's data.
#[derive(Debug, Clone, Copy)]
struct Head {
    ttl: Option<u32>,
    class: Class,
    rtype: Rtype,
    /// Index of the first data token.
    data: usize,
}

struct Parser<'s> {
    rdata_parser: RdataParser,
    /// Where finished records go.
    sink: &'s mut dyn FnMut(&Record),
    state: State,
    /// The record being read. One record, filled in place entry after entry,
    /// is handed to the sink: building a fresh one (an owner name and record
    /// data of several hundred octets) and moving it through the parse
    /// was a tenth of a large zone's parse.
    record: Record,
}

/// Everything a parse carries from one entry to the next, apart from where the
/// records go: what a part of a split parse hands on (see [`split`]).
#[derive(Debug, Clone, Default)]
struct State {
    /// The zone's class: the first record's, IN when it names none.
    class: Option<Class>,
    /// RFC 2308 §4: `$TTL`, the TTL of records that give none.
    default_ttl: Option<u32>,
    /// Without `$TTL`, a record with no TTL takes the last one given (RFC 1035 §5.1).
    last_ttl: Option<u32>,
    soa_minimum: Option<u32>,
    /// Records held back while the first of them waits for the SOA minimum,
    /// the TTL of records with none to take (RFC 2308 §4, as BIND does); the
    /// flag marks those that take it. Later records queue behind them so that
    /// the sink sees file order.
    held: Vec<(Record, bool)>,
    /// The diagnostic for the first record with no TTL, reported if no SOA comes.
    untimed: Option<Diagnostic>,
    diagnostics: Vec<Diagnostic>,
    /// Canonical paths of the files being read, outermost first.
    includes: Vec<PathBuf>,
    /// `last_ttl` came from before this part of a split parse and has not been
    /// replaced yet; `used_inherited_ttl` records that a record took it.
    inherited_ttl: bool,
    used_inherited_ttl: bool,
}

/// What one step of the parse did.
enum Step {
    Parsed,
    /// The next entry starts at or after the stop offset (exactly at it when
    /// `exact`); it was not parsed and the lexer is left before it.
    Stopped {
        exact: bool,
    },
    End,
}

/// A token as a record data field.
fn field_of<'a>(t: &Token<'a>) -> Field<'a> {
    Field {
        raw: t.text,
        quoted: t.quoted,
    }
}

fn lossy(text: &[u8]) -> String {
    String::from_utf8_lossy(text).into_owned()
}

/// A name field: `@` is the origin, anything else is relative to it unless it ends in a dot.
fn name_field(text: &[u8], origin: &Name) -> Result<Name, String> {
    let mut name = Name::root();
    read_name_field(&mut name, text, origin)?;
    Ok(name)
}

/// [`name_field`] into a name that is already there (see
/// [`Name::assign_presentation`]).
fn read_name_field(into: &mut Name, text: &[u8], origin: &Name) -> Result<(), String> {
    if text == b"@" {
        into.assign(origin);
        return Ok(());
    }
    into.assign_presentation(text, Some(origin))
        .map_err(|e| format!("bad name \"{}\": {e}", lossy(text)))
}

/// The SOA minimum is the last 32 bits of its data (RFC 1035 §3.3.13), whatever
/// form the data was given in.
fn soa_minimum(rdata: &Rdata) -> Option<u32> {
    let mut wire = Vec::new();
    rdata.write_wire(&mut wire);
    let start = wire.len().checked_sub(4)?;
    let last: [u8; 4] = wire.get(start..)?.try_into().ok()?;
    Some(u32::from_be_bytes(last))
}

impl<'s> Parser<'s> {
    fn new(rdata_parser: RdataParser, sink: &'s mut dyn FnMut(&Record)) -> Parser<'s> {
        Parser::resume(rdata_parser, State::default(), sink)
    }

    /// A parser that carries on from `state`, handing records to `sink`.
    fn resume(
        rdata_parser: RdataParser,
        state: State,
        sink: &'s mut dyn FnMut(&Record),
    ) -> Parser<'s> {
        Parser {
            rdata_parser,
            sink,
            state,
            record: Record {
                owner: Name::root(),
                class: Class::IN,
                ttl: 0,
                rdata: Rdata::Unknown {
                    rtype: Rtype(0),
                    data: Vec::new(),
                },
            },
        }
    }

    fn full(&self) -> bool {
        self.state.diagnostics.len() >= MAX_DIAGNOSTICS
    }

    fn report(&mut self, file: &FileState, pos: Pos, message: impl Into<String>) {
        if !self.full() {
            self.state.diagnostics.push(Diagnostic::new(
                &file.label,
                pos.line,
                pos.column,
                message,
            ));
        }
    }

    fn finish(mut self) -> Result<(), Vec<Diagnostic>> {
        if !self.state.held.is_empty() {
            // No SOA came to give the held records a TTL: they are not released.
            if let Some(diagnostic) = self.state.untimed.take() {
                if !self.full() {
                    self.state.diagnostics.push(diagnostic);
                }
            }
        }
        if self.state.diagnostics.is_empty() {
            Ok(())
        } else {
            Err(self.state.diagnostics)
        }
    }

    /// Hands the finished record on, or holds a copy back (see
    /// `Parser::held`). `untimed` says that it gave no TTL and had none to take.
    fn emit(&mut self, untimed: bool) {
        match self.state.soa_minimum {
            None if untimed || !self.state.held.is_empty() => {
                self.state.held.push((self.record.clone(), untimed))
            }
            Some(minimum) if untimed => {
                self.record.ttl = minimum;
                (self.sink)(&self.record);
            }
            _ => (self.sink)(&self.record),
        }
    }

    /// Releases the held records once the SOA minimum is known.
    fn release(&mut self, minimum: u32) {
        for (mut record, untimed) in core::mem::take(&mut self.state.held) {
            if untimed {
                record.ttl = minimum;
            }
            (self.sink)(&record);
        }
    }

    /// Reads and parses one file. `from` is where an `$INCLUDE` named it, so that
    /// a file that cannot be read is reported there.
    fn include_file(&mut self, path: &Path, origin: Name, from: Option<(&FileState, Pos)>) {
        if let Some((text, mut file)) = self.open(path, origin, from) {
            self.parse_text(&text, &mut file);
            self.state.includes.pop();
        }
    }

    /// Reads one file and enters it (its canonical path pushed on `includes`),
    /// or reports why it cannot be read.
    fn open(
        &mut self,
        path: &Path,
        origin: Name,
        from: Option<(&FileState, Pos)>,
    ) -> Option<(Vec<u8>, FileState)> {
        let label = path.display().to_string();
        let fail = |parser: &mut Parser<'_>, message: String| {
            match from {
                Some((file, pos)) => parser.report(file, pos, message),
                None if !parser.full() => parser
                    .state
                    .diagnostics
                    .push(Diagnostic::new(&label, 0, 0, message)),
                None => {}
            }
            None
        };
        let canonical = match std::fs::canonicalize(path) {
            Ok(c) => c,
            Err(e) => return fail(self, format!("cannot read {label}: {e}")),
        };
        if self.state.includes.contains(&canonical) {
            return fail(
                self,
                format!("$INCLUDE loop: {label} is already being read"),
            );
        }
        if self.state.includes.len() > MAX_INCLUDE_DEPTH {
            return fail(
                self,
                format!("$INCLUDE nested more than {MAX_INCLUDE_DEPTH} deep"),
            );
        }
        let text = match std::fs::read(&canonical) {
            Ok(t) => t,
            Err(e) => return fail(self, format!("cannot read {label}: {e}")),
        };
        self.state.includes.push(canonical);
        let file = FileState {
            label,
            dir: Some(path.parent().map(Path::to_path_buf).unwrap_or_default()),
            origin,
            last_owner: None,
            owner_from_before: false,
            used_owner_from_before: false,
        };
        Some((text, file))
    }

    fn parse_text(&mut self, text: &[u8], file: &mut FileState) {
        self.run(&mut Lexer::new(text), usize::MAX, file);
    }

    /// Parses entries until the end, or until one starts at or after `stop`.
    fn run(&mut self, lexer: &mut Lexer<'_>, stop: usize, file: &mut FileState) -> Step {
        loop {
            match self.step(lexer, stop, file) {
                Step::Parsed => {}
                done => return done,
            }
        }
    }

    /// Parses the next entry unless it starts at or after `stop`.
    fn step(&mut self, lexer: &mut Lexer<'_>, stop: usize, file: &mut FileState) -> Step {
        if self.full() {
            return Step::End;
        }
        let before = lexer.mark();
        let Some(item) = lexer.next() else {
            return Step::End;
        };
        if lexer.item_start() >= stop {
            let exact = lexer.item_start() == stop;
            lexer.reset(before);
            return Step::Stopped { exact };
        }
        match item {
            Err(e) => self.report(file, e.pos, e.kind.message()),
            Ok(entry) => {
                self.entry(&entry, file);
                lexer.recycle(entry.tokens);
            }
        }
        Step::Parsed
    }

    fn entry(&mut self, entry: &Entry<'_>, file: &mut FileState) {
        let Some(first) = entry.tokens.first() else {
            return;
        };
        if !entry.starts_blank && !first.quoted && first.text.first() == Some(&b'$') {
            return self.directive(entry, file);
        }
        let rest = if entry.starts_blank {
            let Some(owner) = &file.last_owner else {
                file.used_owner_from_before |= file.owner_from_before;
                return self.report(
                    file,
                    first.pos,
                    "no owner name: a line starting with a blank repeats the previous owner, and there is none",
                );
            };
            self.record.owner.assign(owner);
            entry.tokens.as_slice()
        } else {
            // A quoted owner is read like an unquoted one, as BIND does.
            match read_name_field(&mut self.record.owner, first.text, &file.origin) {
                Ok(()) => {
                    match &mut file.last_owner {
                        Some(last) => last.assign(&self.record.owner),
                        None => file.last_owner = Some(self.record.owner.clone()),
                    }
                    file.owner_from_before = false;
                    entry.tokens.get(1..).unwrap_or(&[])
                }
                Err(message) => return self.report(file, first.pos, format!("owner: {message}")),
            }
        };
        let Some(head) = self.head(rest, entry.end, file) else {
            return;
        };
        let data = rest.get(head.data..).unwrap_or(&[]);
        // Most records have a few fields: those stay on the stack.
        let mut inline = [Field {
            raw: &[],
            quoted: false,
        }; INLINE_FIELDS];
        let spilled: Vec<Field<'_>>;
        let fields = if data.len() <= INLINE_FIELDS {
            for (slot, t) in inline.iter_mut().zip(data) {
                *slot = field_of(t);
            }
            inline.get(..data.len()).unwrap_or(&[])
        } else {
            spilled = data.iter().map(field_of).collect();
            &spilled
        };
        let position = |i: usize| data.get(i).map(|t| t.pos);
        self.add_record(file, head, fields, &position, entry.end, first.pos);
    }

    /// Reads `[TTL] [class] type` (TTL and class in either order, RFC 1035 §5.1).
    fn head(&mut self, tokens: &[Token<'_>], end: Pos, file: &FileState) -> Option<Head> {
        let mut ttl: Option<u32> = None;
        let mut class: Option<(Class, Pos)> = None;
        let mut i = 0usize;
        let rtype = loop {
            let expected = match (ttl.is_some(), class.is_some()) {
                (false, false) => "a TTL, a class or a type",
                (true, false) => "a class or a type",
                (false, true) => "a TTL or a type",
                (true, true) => "a type",
            };
            let Some(t) = tokens.get(i) else {
                self.report(
                    file,
                    end,
                    format!("expected {expected}, found the end of the line"),
                );
                return None;
            };
            if t.quoted {
                self.report(
                    file,
                    t.pos,
                    format!("expected {expected}, found a quoted string"),
                );
                return None;
            }
            let text = t.text;
            if ttl.is_none() && looks_like_ttl(text) {
                match parse_ttl(text) {
                    Ok(v) => ttl = Some(v),
                    Err(e) => {
                        self.report(file, t.pos, e.message(&lossy(text)));
                        return None;
                    }
                }
            } else if let (None, Ok(c)) = (class, Class::from_text(text)) {
                class = Some((c, t.pos));
            } else if let Ok(rtype) = Rtype::from_text(text) {
                if rtype.is_meta() || rtype.is_query_only() {
                    self.report(
                        file,
                        t.pos,
                        format!("type {rtype} cannot appear in zone data"),
                    );
                    return None;
                }
                break rtype;
            } else {
                let message = if Class::from_text(text).is_ok() || looks_like_ttl(text) {
                    format!("expected {expected}, found \"{}\"", lossy(text))
                } else if text.first() == Some(&b'$') {
                    format!(
                        "expected {expected}, found \"{}\" (a directive must start its line)",
                        lossy(text)
                    )
                } else if text.first().is_some_and(u8::is_ascii_alphabetic) {
                    format!("unknown type {}", lossy(text))
                } else {
                    format!("expected {expected}, found \"{}\"", lossy(text))
                };
                self.report(file, t.pos, message);
                return None;
            }
            i = i.saturating_add(1);
        };
        let zone_class = *self
            .state
            .class
            .get_or_insert(class.map_or(Class::IN, |c| c.0));
        if let Some((c, pos)) = class {
            if c != zone_class {
                self.report(
                    file,
                    pos,
                    format!("class {c} differs from the zone's class {zone_class}"),
                );
                return None;
            }
        }
        Some(Head {
            ttl,
            class: zone_class,
            rtype,
            data: i.saturating_add(1),
        })
    }

    /// Parses the data fields of the record whose owner is in `self.record`
    /// and hands the record on. `position` gives a field's position for
    /// diagnostics; `end` is where a missing field would go.
    fn add_record(
        &mut self,
        file: &FileState,
        head: Head,
        fields: &[Field<'_>],
        position: &dyn Fn(usize) -> Option<Pos>,
        end: Pos,
        at: Pos,
    ) {
        match (self.rdata_parser)(head.rtype, fields, &file.origin) {
            Ok(r) => self.record.rdata = r,
            Err(e) => {
                let pos = position(e.field).unwrap_or(end);
                let message = format!(
                    "bad {} data, field {}: expected {}",
                    head.rtype,
                    e.field.saturating_add(1),
                    e.expected
                );
                return self.report(file, pos, message);
            }
        }
        if head.rtype == Rtype::SOA && self.state.soa_minimum.is_none() {
            self.state.soa_minimum = soa_minimum(&self.record.rdata);
            if let Some(minimum) = self.state.soa_minimum {
                self.release(minimum);
            }
        }
        let ttl = match head.ttl {
            Some(t) => {
                self.state.last_ttl = Some(t);
                self.state.inherited_ttl = false;
                Some(t)
            }
            None => {
                if self.state.default_ttl.is_none() && self.state.inherited_ttl {
                    self.state.used_inherited_ttl = true;
                }
                self.state.default_ttl.or(self.state.last_ttl)
            }
        };
        if ttl.is_none() && self.state.untimed.is_none() {
            self.state.untimed = Some(Diagnostic::new(
                &file.label,
                at.line,
                at.column,
                "no TTL: the record gives none, and there is no $TTL, earlier TTL or SOA to take one from (RFC 2308 §4)",
            ));
        }
        self.record.class = head.class;
        self.record.ttl = ttl.unwrap_or(0);
        self.emit(ttl.is_none());
    }

    fn directive(&mut self, entry: &Entry<'_>, file: &mut FileState) {
        let tokens = entry.tokens.as_slice();
        let Some(first) = tokens.first() else { return };
        let name = lossy(first.text).to_ascii_uppercase();
        let args = tokens.get(1..).unwrap_or(&[]);
        match name.as_str() {
            "$ORIGIN" => {
                let Some(arg) = self
                    .exact_args(&name, args, 1, 1, entry.end, file)
                    .and_then(|a| a.first())
                else {
                    return;
                };
                // RFC 1035 §5.1: a relative $ORIGIN is relative to the current one.
                match name_field(arg.text, &file.origin) {
                    Ok(origin) => file.origin = origin,
                    Err(message) => self.report(file, arg.pos, format!("$ORIGIN: {message}")),
                }
            }
            "$TTL" => {
                let Some(arg) = self
                    .exact_args(&name, args, 1, 1, entry.end, file)
                    .and_then(|a| a.first())
                else {
                    return;
                };
                match parse_ttl(arg.text) {
                    Ok(v) => self.state.default_ttl = Some(v),
                    Err(e) => self.report(file, arg.pos, e.message(&lossy(arg.text))),
                }
            }
            "$INCLUDE" => {
                let Some(args) = self.exact_args(&name, args, 1, 2, entry.end, file) else {
                    return;
                };
                self.include(args, file);
            }
            "$GENERATE" => self.generate(args, entry.end, file),
            _ => self.report(
                file,
                first.pos,
                format!("unknown directive {}", lossy(first.text)),
            ),
        }
    }

    /// The directive's arguments when there are between `min` and `max` of them.
    fn exact_args<'t, 'a>(
        &mut self,
        name: &str,
        args: &'t [Token<'a>],
        min: usize,
        max: usize,
        end: Pos,
        file: &FileState,
    ) -> Option<&'t [Token<'a>]> {
        if args.len() < min {
            self.report(
                file,
                end,
                format!("{name} needs {min} argument(s), found {}", args.len()),
            );
            return None;
        }
        if let Some(extra) = args.get(max) {
            self.report(
                file,
                extra.pos,
                format!(
                    "unexpected \"{}\" after {name}'s arguments",
                    lossy(extra.text)
                ),
            );
            return None;
        }
        Some(args)
    }

    /// `$INCLUDE file [origin]` (RFC 1035 §5.1).
    fn include(&mut self, args: &[Token<'_>], file: &FileState) {
        let Some(path_token) = args.first() else {
            return;
        };
        let Some(dir) = &file.dir else {
            return self.report(
                file,
                path_token.pos,
                "$INCLUDE is not available here: text parsed without a file has no directory to find it in",
            );
        };
        let Ok(relative) = core::str::from_utf8(path_token.text) else {
            return self.report(file, path_token.pos, "$INCLUDE file name is not UTF-8");
        };
        let relative = Path::new(relative);
        let path = if relative.is_absolute() {
            relative.to_path_buf()
        } else {
            dir.join(relative)
        };
        let origin = match args.get(1) {
            Some(t) => match name_field(t.text, &file.origin) {
                Ok(o) => o,
                Err(message) => {
                    return self.report(file, t.pos, format!("$INCLUDE origin: {message}"))
                }
            },
            None => file.origin.clone(),
        };
        self.include_file(&path, origin, Some((file, path_token.pos)));
    }

    /// `$GENERATE range lhs [ttl] [class] type rhs`, BIND's directive.
    fn generate(&mut self, args: &[Token<'_>], end: Pos, file: &mut FileState) {
        let (Some(range_token), Some(lhs)) = (args.first(), args.get(1)) else {
            return self.report(
                file,
                end,
                "$GENERATE needs a range, an owner, a type and record data",
            );
        };
        let range = match generate::parse_range(range_token.text) {
            Ok(r) => r,
            Err(message) => return self.report(file, range_token.pos, message),
        };
        let rest = args.get(2..).unwrap_or(&[]);
        let Some(head) = self.head(rest, end, file) else {
            return;
        };
        let rhs = rest.get(head.data..).unwrap_or(&[]);
        let Some(rhs_pos) = rhs.first().map(|t| t.pos) else {
            return self.report(file, end, "$GENERATE needs record data after the type");
        };
        let errors_before = self.state.diagnostics.len();
        for value in range.values() {
            let owner = generate::expand(lhs.text, value)
                .and_then(|text| read_name_field(&mut self.record.owner, &text, &file.origin));
            if let Err(message) = owner {
                return self.report(file, lhs.pos, format!("$GENERATE owner: {message}"));
            }
            let mut text = Vec::new();
            for (n, t) in rhs.iter().enumerate() {
                let expanded = match generate::expand(t.text, value) {
                    Ok(x) => x,
                    Err(message) => return self.report(file, t.pos, message),
                };
                if n > 0 {
                    text.push(b' ');
                }
                // BIND takes one data token and reads its text as the data; when
                // several are given, quoted ones stay single fields.
                if t.quoted && rhs.len() > 1 {
                    text.push(b'"');
                    text.extend_from_slice(&expanded);
                    text.push(b'"');
                } else {
                    text.extend_from_slice(&expanded);
                }
            }
            let mut entries = Lexer::new(&text);
            let tokens = match (entries.next(), entries.next()) {
                (Some(Ok(e)), None) => e.tokens,
                (None, _) => Vec::new(),
                _ => {
                    return self.report(
                        file,
                        rhs_pos,
                        format!(
                            "$GENERATE data \"{}\" is not one record's data",
                            lossy(&text)
                        ),
                    )
                }
            };
            let fields: Vec<Field<'_>> = tokens.iter().map(field_of).collect();
            self.add_record(file, head, &fields, &|_| Some(rhs_pos), rhs_pos, lhs.pos);
            if self.state.diagnostics.len() > errors_before {
                // One bad iteration is enough to show the template is wrong.
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests;
