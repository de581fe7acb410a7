//! Parsing one large master file in parts at once, with the same result as
//! reading it from start to end.
//!
//! A master file cannot simply be cut anywhere: an entry may continue over line
//! ends inside parentheses, a line that starts with a blank repeats the
//! previous owner, and `$ORIGIN`, `$TTL`, the zone's class and the SOA minimum
//! carry from one entry to the next. So the parse is speculative:
//!
//! 1. The first part reads the file's head on its own until the SOA has given
//!    its minimum and nothing is held back (see `Parser::held`).
//! 2. The rest is cut at line starts that begin with an owner name, and every
//!    later part starts from the state the head ended in, while the first part
//!    reads on to the first cut.
//! 3. A part is kept only when the part before it stopped on an entry that
//!    starts exactly at the cut (so the cut was not inside parentheses) and
//!    ended in the state the part started from. Otherwise the parts from there
//!    on are dropped and the last kept one reads on to the end of the file.
//!
//! Records, diagnostics and their order come out as a sequential parse gives
//! them; the parts only change how long it takes. This crate spawns no
//! threads: the caller's [`Fork`] decides how parts run.

use std::path::Path;

use bulwark_proto::{Name, Rdata, Record};

use crate::fork::Fork;

use super::lexer::Lexer;
use super::{FileState, Parser, RdataParser, State, Step, MAX_DIAGNOSTICS};
use crate::diagnostic::Diagnostic;

/// Below this much text after the head, splitting costs more than it saves.
pub const MIN_PART_OCTETS: usize = 1 << 20;

/// Where a split parse sends records. Each part after the first gets its own
/// sink from [`RecordSink::fork`]; kept parts are appended in file order.
pub trait RecordSink: Send {
    /// Takes one record, in file order within a part.
    fn add(&mut self, record: &Record);
    /// An empty sink for a later part, set up as this one is now.
    fn fork(&self) -> Self;
    /// Appends what a later part's sink took after what this one took.
    fn append(&mut self, later: Self);
    /// Told before a part starts how many octets of text it covers, so that
    /// its buffers can be sized once instead of growing (and remapping) while
    /// other parts fault in their pages.
    fn expect(&mut self, _text_octets: usize) {}
}

/// Parses the master file at `path` for the zone `origin` into `sink`, in up
/// to `parts` parts run through `fork`. Same result as
/// [`super::parse_file_with`]: on `Err` the caller discards the sink.
pub fn parse_file_in_parts<S: RecordSink>(
    path: &Path,
    origin: &Name,
    sink: &mut S,
    fork: &impl Fork,
    parts: usize,
) -> Result<(), Vec<Diagnostic>> {
    let cut = Cutting {
        parts,
        min_part: MIN_PART_OCTETS,
    };
    parse_in_parts(Rdata::parse_presentation, path, origin, sink, fork, cut).0
}

/// How to divide a file: into at most `parts`, none under `min_part` octets.
#[derive(Debug, Clone, Copy)]
struct Cutting {
    parts: usize,
    min_part: usize,
}

/// What one part ended with.
struct Part<'t, S> {
    sink: S,
    state: State,
    file: FileState,
    /// Where the part stopped; the next part's entries start here.
    lexer: Lexer<'t>,
    /// The part stopped on an entry starting exactly at its end cut.
    exact: bool,
}

/// The parse, and how many parts' records were kept as parsed (1 when the
/// file was read in one go).
fn parse_in_parts<S: RecordSink>(
    rdata_parser: RdataParser,
    path: &Path,
    origin: &Name,
    sink: &mut S,
    fork: &impl Fork,
    cut: Cutting,
) -> (Result<(), Vec<Diagnostic>>, usize) {
    let mut add = |r: &Record| sink.add(r);
    let mut head = Parser::new(rdata_parser, &mut add);
    let Some((text, mut file)) = head.open(path, origin.clone(), None) else {
        return (head.finish(), 1);
    };
    let mut lexer = Lexer::new(&text);
    let cuts = loop {
        if head.state.soa_minimum.is_some() && head.state.held.is_empty() {
            break cut_points(&text, head_end(&lexer), cut);
        }
        match head.step(&mut lexer, usize::MAX, &mut file) {
            Step::Parsed => {}
            Step::Stopped { .. } | Step::End => break Vec::new(),
        }
    };
    if cuts.is_empty() {
        head.run(&mut lexer, usize::MAX, &mut file);
        return (head.finish(), 1);
    }
    let start = head.state.clone();
    drop(head);

    // Each later part starts as the head ended, with its own diagnostics and
    // the TTL it inherits marked as such.
    let mut later_start = start.clone();
    later_start.diagnostics.clear();
    later_start.inherited_ttl = true;
    later_start.used_inherited_ttl = false;
    let later_file = FileState {
        last_owner: None,
        owner_from_before: true,
        used_owner_from_before: false,
        ..file.clone()
    };
    let later: Vec<(usize, usize, S)> = cuts
        .iter()
        .enumerate()
        .map(|(i, &from)| {
            let to = cuts.get(i.saturating_add(1)).copied().unwrap_or(usize::MAX);
            (from, to, sink.fork())
        })
        .collect();
    let first_stop = cuts.first().copied().unwrap_or(usize::MAX);
    let text = text.as_slice();
    let (first, rest) = fork.join(
        || {
            // The kept parts are appended to this sink: room for all of them.
            sink.expect(text.len());
            let mut add = |r: &Record| sink.add(r);
            let mut parser = Parser::resume(rdata_parser, start, &mut add);
            let exact = matches!(
                parser.run(&mut lexer, first_stop, &mut file),
                Step::Stopped { exact: true }
            );
            (parser.state, file, lexer, exact)
        },
        || {
            in_parallel(fork, later, &|(from, to, mut part_sink)| {
                let line = line_at(text, from);
                let mut lexer = Lexer::starting_at(text, from, line);
                let mut file = later_file.clone();
                part_sink.expect(to.min(text.len()).saturating_sub(from));
                let mut add = |r: &Record| part_sink.add(r);
                let mut parser = Parser::resume(rdata_parser, later_start.clone(), &mut add);
                let exact = matches!(
                    parser.run(&mut lexer, to, &mut file),
                    Step::Stopped { exact: true }
                );
                let state = parser.state;
                Part {
                    sink: part_sink,
                    state,
                    file,
                    lexer,
                    exact,
                }
            })
        },
    );
    let (mut state, mut file, mut lexer, mut exact) = first;
    let mut kept = 1usize;
    for part in rest {
        if state.diagnostics.len() >= MAX_DIAGNOSTICS {
            break;
        }
        if !(exact && continues(&state, &file, &later_start, &later_file, &part)) {
            let mut add = |r: &Record| sink.add(r);
            let mut parser = Parser::resume(rdata_parser, state, &mut add);
            parser.run(&mut lexer, usize::MAX, &mut file);
            state = parser.state;
            break;
        }
        sink.append(part.sink);
        let mut diagnostics = core::mem::take(&mut state.diagnostics);
        diagnostics.extend(part.state.diagnostics);
        diagnostics.truncate(MAX_DIAGNOSTICS);
        // What the part never set is still what it was before the part.
        let last_ttl = if part.state.inherited_ttl {
            state.last_ttl
        } else {
            part.state.last_ttl
        };
        let last_owner = if part.file.owner_from_before {
            file.last_owner
        } else {
            part.file.last_owner
        };
        state = State {
            diagnostics,
            last_ttl,
            inherited_ttl: false,
            used_inherited_ttl: false,
            ..part.state
        };
        file = FileState {
            last_owner,
            owner_from_before: false,
            used_owner_from_before: false,
            ..part.file
        };
        lexer = part.lexer;
        exact = part.exact;
        kept = kept.saturating_add(1);
    }
    let mut add = |r: &Record| sink.add(r);
    (Parser::resume(rdata_parser, state, &mut add).finish(), kept)
}

/// Whether a part that started from `start` (in `start_file`) reads as it
/// would have after a part that ended as `before`: every carried value it
/// could have read is the same, and nothing is held back for it to queue
/// behind.
fn continues<S>(
    before: &State,
    before_file: &FileState,
    start: &State,
    start_file: &FileState,
    part: &Part<'_, S>,
) -> bool {
    before.held.is_empty()
        && before.class == start.class
        && before.default_ttl == start.default_ttl
        && before.soa_minimum == start.soa_minimum
        && before.untimed.is_some() == start.untimed.is_some()
        && before.includes == start.includes
        && before_file.origin == start_file.origin
        && (!part.state.used_inherited_ttl || before.last_ttl == start.last_ttl)
        && (!part.file.used_owner_from_before || before_file.last_owner.is_none())
}

/// Runs `each` on every item through `fork`, halving the list at each level,
/// and returns the results in order.
fn in_parallel<T: Send, R: Send>(
    fork: &impl Fork,
    mut items: Vec<T>,
    each: &(impl Fn(T) -> R + Sync),
) -> Vec<R> {
    if items.len() <= 1 {
        return items.into_iter().map(each).collect();
    }
    let second = items.split_off(items.len() / 2);
    let (mut a, b) = fork.join(
        || in_parallel(fork, items, each),
        || in_parallel(fork, second, each),
    );
    a.extend(b);
    a
}

/// Where the head parse stopped: the start of the line the lexer is on.
fn head_end(lexer: &Lexer<'_>) -> usize {
    let mut probe = lexer.clone();
    match probe.next() {
        Some(_) => probe.item_start(),
        None => usize::MAX,
    }
}

/// Up to `parts - 1` cut offsets after `from`, each the start of a line that
/// begins with an owner name, dividing the rest of `text` about evenly. None
/// when the rest is too short to be worth dividing.
fn cut_points(text: &[u8], from: usize, cut: Cutting) -> Vec<usize> {
    let rest = text.len().saturating_sub(from);
    let parts = cut.parts.min(rest.checked_div(cut.min_part).unwrap_or(0));
    let mut cuts: Vec<usize> = Vec::new();
    for k in 1..parts {
        let share = rest.checked_div(parts).unwrap_or(0).saturating_mul(k);
        let aim = from.saturating_add(share);
        let after = cuts.last().copied().unwrap_or(from).max(aim);
        if let Some(cut) = owner_line_after(text, after) {
            cuts.push(cut);
        }
    }
    cuts.dedup();
    cuts
}

/// The first line start after `at` whose first octet can begin an owner name:
/// not a blank (a repeated owner), a comment, a directive, a parenthesis or a
/// quote.
fn owner_line_after(text: &[u8], at: usize) -> Option<usize> {
    let mut i = at;
    loop {
        let nl = text.get(i..)?.iter().position(|&b| b == b'\n')?;
        let start = i.saturating_add(nl).saturating_add(1);
        match text.get(start) {
            None => return None,
            Some(b' ' | b'\t' | b'\r' | b'\n' | b';' | b'$' | b'(' | b')' | b'"') => i = start,
            Some(_) => return Some(start),
        }
    }
}

/// The 1-based line number at offset `at` of `text`.
fn line_at(text: &[u8], at: usize) -> u32 {
    // Counted in blocks of 255 into a byte, which the compiler vectorizes:
    // a byte-at-a-time count took 15 ms for half of a 34 MB file.
    let newlines: usize = text
        .get(..at)
        .unwrap_or(text)
        .chunks(255)
        .map(|block| {
            let in_block = block
                .iter()
                .fold(0u8, |n, &b| n.wrapping_add(u8::from(b == b'\n')));
            usize::from(in_block)
        })
        .sum();
    u32::try_from(newlines)
        .unwrap_or(u32::MAX)
        .saturating_add(1)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use proptest::prelude::*;

    use super::*;
    use crate::fork::InTurn;

    impl RecordSink for Vec<Record> {
        fn add(&mut self, record: &Record) {
            self.push(record.clone());
        }

        fn fork(&self) -> Self {
            Vec::new()
        }

        fn append(&mut self, later: Self) {
            self.extend(later);
        }
    }

    /// Runs the second closure on a scoped thread, as the server does.
    struct Threads;

    impl Fork for Threads {
        fn join<A: Send, B: Send>(
            &self,
            a: impl FnOnce() -> A + Send,
            b: impl FnOnce() -> B + Send,
        ) -> (A, B) {
            std::thread::scope(|s| {
                let b = s.spawn(b);
                let a = a();
                (a, b.join().unwrap())
            })
        }
    }

    /// A zone file in its own temporary directory, removed when dropped.
    struct ZoneFile(PathBuf);

    impl core::ops::Deref for ZoneFile {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for ZoneFile {
        fn drop(&mut self) {
            if let Some(dir) = self.0.parent() {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }

    fn write_zone(text: &str) -> ZoneFile {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("bulwark-split-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("zone");
        std::fs::write(&path, text).unwrap();
        ZoneFile(path)
    }

    type Outcome = Result<Vec<Record>, Vec<Diagnostic>>;

    fn in_one_go(path: &Path) -> Outcome {
        let mut records = Vec::new();
        super::super::file_with(
            Rdata::parse_presentation,
            path,
            &"example.".parse().unwrap(),
            &mut |r| records.push(r.clone()),
        )
        .map(|()| records)
    }

    fn in_parts(path: &Path, fork: &impl Fork, parts: usize, min_part: usize) -> (Outcome, usize) {
        let mut records = Vec::new();
        let cut = Cutting { parts, min_part };
        let origin = "example.".parse().unwrap();
        let (result, kept) = parse_in_parts(
            Rdata::parse_presentation,
            path,
            &origin,
            &mut records,
            fork,
            cut,
        );
        (result.map(|()| records), kept)
    }

    const HEAD: &str =
        "$ORIGIN example.\n$TTL 300\n@ IN SOA ns hm 1 2 3 4 5\n@ NS ns\nns A 192.0.2.53\n";

    fn hosts(from: usize, to: usize) -> String {
        (from..to)
            .map(|i| format!("h{i} A 192.0.2.{}\n\tAAAA 2001:db8::{i:x}\n", i % 256))
            .collect()
    }

    #[test]
    fn a_plain_file_is_read_in_every_part_with_the_same_records() {
        let path = write_zone(&format!("{HEAD}{}", hosts(0, 400)));
        let whole = in_one_go(&path);
        assert_eq!(whole.as_ref().map(Vec::len), Ok(803));
        for parts in 2..=5 {
            let (split, kept) = in_parts(&path, &Threads, parts, 64);
            assert_eq!(kept, parts, "{parts} parts");
            assert_eq!(split, whole, "{parts} parts");
        }
    }

    #[test]
    fn a_cut_inside_parentheses_falls_back_to_reading_on() {
        // One record spread over many lines: every line after the first starts
        // with an owner-like word, so the cut lands inside the parentheses.
        let long: String = (0..200).map(|i| format!("x{i}\n")).collect();
        let path = write_zone(&format!("{HEAD}t TXT (\n{long})\n{}", hosts(0, 20)));
        let whole = in_one_go(&path);
        assert!(whole.is_ok(), "{whole:?}");
        let (split, kept) = in_parts(&path, &Threads, 2, 64);
        assert_eq!(kept, 1);
        assert_eq!(split, whole);
    }

    #[test]
    fn a_part_that_read_a_carried_value_that_changed_is_read_again() {
        // $TTL and $ORIGIN change after the head, so later parts started from
        // values that were no longer current.
        for change in ["$TTL 60\n", "$ORIGIN sub.example.\n"] {
            let text = format!("{HEAD}{}{change}{}", hosts(0, 5), hosts(5, 400));
            let path = write_zone(&text);
            let whole = in_one_go(&path);
            let (split, kept) = in_parts(&path, &Threads, 3, 64);
            assert_eq!(kept, 1, "{change}");
            assert_eq!(split, whole, "{change}");
        }
    }

    #[test]
    fn explicit_ttls_without_a_default_do_not_stop_a_split() {
        let body: String = (0..400)
            .map(|i| format!("h{i} {} A 192.0.2.1\n", 60 + i))
            .collect();
        let path = write_zone(&format!(
            "$ORIGIN example.\n@ 30 IN SOA ns hm 1 2 3 4 5\n{body}"
        ));
        let whole = in_one_go(&path);
        let (split, kept) = in_parts(&path, &Threads, 2, 64);
        assert_eq!(kept, 2);
        assert_eq!(split, whole);
        // A record that takes the previous TTL right after the cut needs the
        // TTL the part before ended with.
        let body: String = (0..400)
            .map(|i| format!("h{i} {} A 192.0.2.1\nn{i} A 192.0.2.2\n", 60 + i))
            .collect();
        let path = write_zone(&format!(
            "$ORIGIN example.\n@ 30 IN SOA ns hm 1 2 3 4 5\n{body}"
        ));
        let whole = in_one_go(&path);
        for parts in 2..=4 {
            assert_eq!(in_parts(&path, &Threads, parts, 64).0, whole);
        }
    }

    #[test]
    fn diagnostics_keep_their_lines_and_order_across_parts() {
        let text = format!(
            "{HEAD}{}bad A 999.0.0.1\n{}also-bad AAAA nope\n{}",
            hosts(0, 200),
            hosts(200, 400),
            hosts(400, 600)
        );
        let path = write_zone(&text);
        let whole = in_one_go(&path);
        assert_eq!(whole.as_ref().map_err(Vec::len), Err(2), "{whole:?}");
        for parts in 2..=4 {
            let (split, kept) = in_parts(&path, &Threads, parts, 64);
            assert_eq!(kept, parts);
            assert_eq!(split, whole);
        }
    }

    #[test]
    fn a_file_too_small_to_divide_is_read_in_one_go() {
        let path = write_zone(&format!("{HEAD}{}", hosts(0, 10)));
        let (split, kept) = in_parts(&path, &Threads, 4, MIN_PART_OCTETS);
        assert_eq!(kept, 1);
        assert_eq!(split, in_one_go(&path));
    }

    /// Whole lines of master-file syntax, awkward ones included.
    fn line() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "$ORIGIN example.",
            "$ORIGIN sub.example.",
            "$TTL 300",
            "$TTL 1h",
            "@ IN SOA ns hm 1 2 3 4 5",
            "@ 60 IN SOA ns hm 1 2 3 4 5",
            "www A 192.0.2.1",
            "www 120 A 192.0.2.2",
            "\tAAAA 2001:db8::1",
            " 7200 TXT \"a ( ; b\"",
            "mail IN MX 10 www",
            "multi ( A",
            "192.0.2.9 )",
            "txt TXT ( \"x\"",
            "\"y\" )",
            "; comment",
            "",
            "bad A 999.1.1.1",
            "ch CH A 192.0.2.1",
            "x IN TYPE65280 \\# 2 ABCD",
            "$GENERATE 1-3 g$ A 192.0.2.$",
            "unterminated \"quote",
            ") stray",
            "*.wild 30 A 192.0.2.7",
            "a.b.c A 192.0.2.3",
            "notype",
            "\"q\" A 192.0.2.4",
            "esc\\",
            "  ",
            "crlf A 192.0.2.5\r",
            "$INCLUDE nowhere.zone",
            "h 10 IN A 192.0.2.6",
            "nottl A 192.0.2.8",
        ])
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn any_text_parses_in_parts_as_in_one_go(
            lines in prop::collection::vec(line(), 0..120),
            parts in 2usize..5,
            min_part in 1usize..200,
        ) {
            let path = write_zone(&lines.join("\n"));
            let whole = in_one_go(&path);
            prop_assert_eq!(in_parts(&path, &InTurn, parts, min_part).0, whole.clone());
            prop_assert_eq!(in_parts(&path, &Threads, parts, min_part).0, whole);
        }
    }
}
