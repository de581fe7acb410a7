//! Splits master-file text into entries (one record or directive each) of tokens.
//!
//! RFC 1035 §5.1: fields are separated by blanks; `;` starts a comment to the end
//! of the line; parentheses let an entry continue over line ends; double quotes
//! group a field in which blanks, `;` and parentheses are ordinary; a backslash
//! takes the next character literally. Escapes stay in the token (`\DDD`
//! included) because what they mean depends on the field that receives them.

/// Where a token starts: 1-based line and column (columns count characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pos {
    pub line: u32,
    pub column: u32,
}

/// One field: the bytes between its delimiters, quotes removed, escapes intact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token<'a> {
    pub text: &'a [u8],
    pub quoted: bool,
    pub pos: Pos,
}

/// The tokens of one logical line (a record or a directive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<'a> {
    pub tokens: Vec<Token<'a>>,
    /// The entry's first line starts with a blank: RFC 1035 §5.1, the owner is
    /// omitted and the previous one applies.
    pub starts_blank: bool,
    /// Just past the last token, where a missing field would have gone.
    pub end: Pos,
}

/// What stopped the lexer on a line. After one, lexing resumes on the next line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LexErrorKind {
    UnterminatedQuote,
    UnclosedParenthesis,
    UnopenedParenthesis,
}

impl LexErrorKind {
    pub fn message(self) -> &'static str {
        match self {
            LexErrorKind::UnterminatedQuote => {
                "quoted string not closed before the end of the line"
            }
            LexErrorKind::UnclosedParenthesis => "'(' never closed",
            LexErrorKind::UnopenedParenthesis => "')' without a matching '('",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LexError {
    pub pos: Pos,
    pub kind: LexErrorKind,
}

/// Iterator over the entries of a master file's text.
#[derive(Debug, Clone)]
pub struct Lexer<'a> {
    src: &'a [u8],
    at: usize,
    line: u32,
    column: u32,
    /// Where the line that began the last entry or error starts.
    item_start: usize,
    /// A token buffer handed back by [`Lexer::recycle`], so that entries do
    /// not each allocate one.
    spare: Vec<Token<'a>>,
}

/// A lexer's place in its text, to go back to (see [`Lexer::mark`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    at: usize,
    line: u32,
    column: u32,
    item_start: usize,
}

impl<'a> Lexer<'a> {
    pub fn new(src: &'a [u8]) -> Lexer<'a> {
        Lexer::starting_at(src, 0, 1)
    }

    /// A lexer over `src` that begins at offset `at`, the start of line `line`,
    /// so that positions are those of the whole text.
    pub fn starting_at(src: &'a [u8], at: usize, line: u32) -> Lexer<'a> {
        Lexer {
            src,
            at,
            line,
            column: 1,
            item_start: at,
            spare: Vec::new(),
        }
    }

    /// Where the lexer is now.
    pub fn mark(&self) -> Mark {
        Mark {
            at: self.at,
            line: self.line,
            column: self.column,
            item_start: self.item_start,
        }
    }

    /// Goes back to `mark`, taken from this lexer.
    pub fn reset(&mut self, mark: Mark) {
        self.at = mark.at;
        self.line = mark.line;
        self.column = mark.column;
        self.item_start = mark.item_start;
    }

    /// Takes back an entry's token buffer for the next entry to fill.
    pub fn recycle(&mut self, mut tokens: Vec<Token<'a>>) {
        tokens.clear();
        self.spare = tokens;
    }

    /// The offset of the line on which the entry (or error) last returned began.
    pub fn item_start(&self) -> usize {
        self.item_start
    }

    fn peek(&self) -> Option<u8> {
        self.src.get(self.at).copied()
    }

    fn pos(&self) -> Pos {
        Pos {
            line: self.line,
            column: self.column,
        }
    }

    /// Steps over one byte, keeping line and column current. A column is one
    /// character, so UTF-8 continuation bytes do not advance it.
    fn bump(&mut self) {
        let Some(b) = self.peek() else { return };
        self.at = self.at.saturating_add(1);
        if b == b'\n' {
            self.line = self.line.saturating_add(1);
            self.column = 1;
        } else if self.peek().is_none_or(|n| n & 0xc0 != 0x80) {
            self.column = self.column.saturating_add(1);
        }
    }

    /// Skips the rest of the physical line, its newline included.
    fn skip_line(&mut self) {
        while let Some(b) = self.peek() {
            self.bump();
            if b == b'\n' {
                break;
            }
        }
    }

    fn skip_comment(&mut self) {
        while let Some(b) = self.peek() {
            if b == b'\n' {
                break;
            }
            self.bump();
        }
    }

    /// A quoted field; the opening quote is the current byte.
    fn quoted(&mut self) -> Result<Token<'a>, LexError> {
        let pos = self.pos();
        self.bump();
        let start = self.at;
        loop {
            match self.peek() {
                None | Some(b'\n') => {
                    return Err(LexError {
                        pos,
                        kind: LexErrorKind::UnterminatedQuote,
                    })
                }
                Some(b'\\') => {
                    self.bump();
                    if self.peek().is_some_and(|b| b != b'\n') {
                        self.bump();
                    }
                }
                Some(b'"') => break,
                Some(_) => self.bump(),
            }
        }
        let text = self.src.get(start..self.at).unwrap_or(&[]);
        self.bump();
        Ok(Token {
            text,
            quoted: true,
            pos,
        })
    }

    /// Steps over a run of printable ASCII octets that carry no meaning to
    /// the lexer, as [`Lexer::bump`] would one by one: most of a zone file is
    /// such runs, and this is most of its lexing.
    fn skip_plain_ascii(&mut self) {
        let rest = self.src.get(self.at..).unwrap_or(&[]);
        let run = rest
            .iter()
            .position(|&b| {
                !(b'!'..=b'~').contains(&b) || matches!(b, b'"' | b'(' | b')' | b';' | b'\\')
            })
            .unwrap_or(rest.len());
        if run == 0 {
            return;
        }
        self.at = self.at.saturating_add(run);
        // One column each, but for a last octet that turns out to lead a
        // (malformed) UTF-8 sequence: `bump` counts a character at its end.
        let continued = self.peek().is_some_and(|n| n & 0xc0 == 0x80);
        let columns = u32::try_from(run.saturating_sub(usize::from(continued))).unwrap_or(u32::MAX);
        self.column = self.column.saturating_add(columns);
    }

    /// An unquoted field: runs to a blank, a quote, a parenthesis or a comment.
    fn plain(&mut self) -> Token<'a> {
        let pos = self.pos();
        let start = self.at;
        loop {
            self.skip_plain_ascii();
            let Some(b) = self.peek() else { break };
            match b {
                b' ' | b'\t' | b'\r' | b'\n' | b'"' | b'(' | b')' | b';' => break,
                b'\\' => {
                    self.bump();
                    // An escaped blank, quote or parenthesis belongs to the field;
                    // a backslash at the end of a line escapes nothing.
                    if self.peek().is_some_and(|b| b != b'\n') {
                        self.bump();
                    }
                }
                _ => self.bump(),
            }
        }
        Token {
            text: self.src.get(start..self.at).unwrap_or(&[]),
            quoted: false,
            pos,
        }
    }

    /// Reads one entry; `None` at the end of the text. Entries with no tokens
    /// (blank and comment-only lines) are skipped.
    fn entry(&mut self) -> Option<Result<Entry<'a>, LexError>> {
        loop {
            self.peek()?;
            self.item_start = self.at;
            let starts_blank = self.column == 1 && matches!(self.peek(), Some(b' ' | b'\t'));
            let mut tokens = core::mem::take(&mut self.spare);
            tokens.clear();
            let mut depth = 0u32;
            let mut open_at = self.pos();
            let mut end = self.pos();
            loop {
                match self.peek() {
                    None => {
                        if depth > 0 {
                            return Some(Err(LexError {
                                pos: open_at,
                                kind: LexErrorKind::UnclosedParenthesis,
                            }));
                        }
                        break;
                    }
                    Some(b'\n') => {
                        self.bump();
                        if depth == 0 {
                            break;
                        }
                    }
                    Some(b' ' | b'\t' | b'\r') => self.bump(),
                    Some(b';') => self.skip_comment(),
                    Some(b'(') => {
                        if depth == 0 {
                            open_at = self.pos();
                        }
                        depth = depth.saturating_add(1);
                        self.bump();
                    }
                    Some(b')') => {
                        if depth == 0 {
                            let pos = self.pos();
                            self.skip_line();
                            return Some(Err(LexError {
                                pos,
                                kind: LexErrorKind::UnopenedParenthesis,
                            }));
                        }
                        depth = depth.saturating_sub(1);
                        self.bump();
                    }
                    Some(b'"') => match self.quoted() {
                        Ok(t) => {
                            tokens.push(t);
                            end = self.pos();
                        }
                        Err(e) => {
                            self.skip_line();
                            return Some(Err(e));
                        }
                    },
                    Some(_) => {
                        tokens.push(self.plain());
                        end = self.pos();
                    }
                }
            }
            if !tokens.is_empty() {
                return Some(Ok(Entry {
                    tokens,
                    starts_blank,
                    end,
                }));
            }
            self.spare = tokens;
        }
    }
}

impl<'a> Iterator for Lexer<'a> {
    type Item = Result<Entry<'a>, LexError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.entry()
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )]
    use super::*;

    fn p(line: u32, column: u32) -> Pos {
        Pos { line, column }
    }

    /// A token as (text, quoted, line, column).
    type Tok<'a> = (&'a [u8], bool, u32, u32);

    /// Each entry as (starts_blank, tokens).
    fn lex(src: &[u8]) -> Vec<(bool, Vec<Tok<'_>>)> {
        Lexer::new(src)
            .map(|e| {
                let e = e.unwrap();
                (
                    e.starts_blank,
                    e.tokens
                        .iter()
                        .map(|t| (t.text, t.quoted, t.pos.line, t.pos.column))
                        .collect(),
                )
            })
            .collect()
    }

    #[test]
    fn splits_fields_on_blanks_and_lines() {
        assert_eq!(
            lex(b"www  IN\tA 192.0.2.1\n\tAAAA ::1"),
            vec![
                (
                    false,
                    vec![
                        (&b"www"[..], false, 1, 1),
                        (b"IN", false, 1, 6),
                        (b"A", false, 1, 9),
                        (b"192.0.2.1", false, 1, 11),
                    ]
                ),
                (
                    true,
                    vec![(&b"AAAA"[..], false, 2, 2), (b"::1", false, 2, 7)]
                ),
            ]
        );
    }

    #[test]
    fn parentheses_join_lines_and_comments_inside_them_are_dropped() {
        let src = b"@ SOA ns host ( 1 ; serial\n  2 3 ; more\n 4 5 )\nnext A 1.2.3.4\n";
        let out = lex(src);
        assert_eq!(out.len(), 2);
        let texts: Vec<&[u8]> = out[0].1.iter().map(|t| t.0).collect();
        assert_eq!(
            texts,
            vec![
                &b"@"[..],
                b"SOA",
                b"ns",
                b"host",
                b"1",
                b"2",
                b"3",
                b"4",
                b"5"
            ]
        );
        assert_eq!((out[0].1[5].2, out[0].1[5].3), (2, 3));
        assert_eq!(out[1].1[0], (&b"next"[..], false, 4, 1));
    }

    #[test]
    fn quotes_make_blanks_semicolons_and_parentheses_ordinary() {
        assert_eq!(
            lex(br#"t TXT "a ; (b)" "say \"hi\"" x\ y"z""#),
            vec![(
                false,
                vec![
                    (&b"t"[..], false, 1, 1),
                    (b"TXT", false, 1, 3),
                    (b"a ; (b)", true, 1, 7),
                    (br#"say \"hi\""#, true, 1, 17),
                    (br"x\ y", false, 1, 30),
                    (b"z", true, 1, 34),
                ]
            )]
        );
    }

    #[test]
    fn escapes_stay_in_the_token() {
        assert_eq!(
            lex(b"a\\.b\\059c\\(d TXT \\;"),
            vec![(
                false,
                vec![
                    (&b"a\\.b\\059c\\(d"[..], false, 1, 1),
                    (b"TXT", false, 1, 14),
                    (b"\\;", false, 1, 18),
                ]
            )]
        );
    }

    #[test]
    fn crlf_line_endings_and_a_last_line_without_newline() {
        assert_eq!(
            lex(b"a A 1\r\n\r\n  ; only a comment\r\nb A 2"),
            vec![
                (
                    false,
                    vec![
                        (&b"a"[..], false, 1, 1),
                        (b"A", false, 1, 3),
                        (b"1", false, 1, 5)
                    ]
                ),
                (
                    false,
                    vec![
                        (&b"b"[..], false, 4, 1),
                        (b"A", false, 4, 3),
                        (b"2", false, 4, 5)
                    ]
                ),
            ]
        );
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        let out = lex("\"é\" x".as_bytes());
        assert_eq!(out[0].1[1], (&b"x"[..], false, 1, 5));
    }

    #[test]
    fn entry_end_is_just_past_the_last_token() {
        let e = Lexer::new(b"www A   ; c\n").next().unwrap().unwrap();
        assert_eq!(e.end, p(1, 6));
    }

    #[test]
    fn errors_say_where_and_lexing_resumes_on_the_next_line() {
        let mut l = Lexer::new(b"a TXT \"open\nb A 1\nc ) x\nd ( e\n");
        assert_eq!(
            l.next(),
            Some(Err(LexError {
                pos: p(1, 7),
                kind: LexErrorKind::UnterminatedQuote
            }))
        );
        let b = l.next().unwrap().unwrap();
        assert_eq!(b.tokens[0].text, b"b");
        assert_eq!(
            l.next(),
            Some(Err(LexError {
                pos: p(3, 3),
                kind: LexErrorKind::UnopenedParenthesis
            }))
        );
        assert_eq!(
            l.next(),
            Some(Err(LexError {
                pos: p(4, 3),
                kind: LexErrorKind::UnclosedParenthesis
            }))
        );
        assert_eq!(l.next(), None);
    }

    /// Where a token starts by the rule `bump` applies octet by octet: a line
    /// per newline, and a column per octet not followed by a UTF-8
    /// continuation octet.
    fn reference_pos(src: &[u8], start: usize) -> (u32, u32) {
        let before = &src[..start];
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
        let column = 1
            + (line_start..start)
                .filter(|&j| src.get(j + 1).is_none_or(|n| n & 0xc0 != 0x80))
                .count();
        (u32::try_from(line).unwrap(), u32::try_from(column).unwrap())
    }

    proptest::proptest! {
        #[test]
        fn positions_follow_the_octet_rule(
            src in proptest::collection::vec(
                proptest::sample::select(vec![b'a', b'.', b' ', b'\t', b'\n', b'\\', b'"', b';', 0xc3, 0xa9, 0x80, 0x7f, 0x01]),
                0..40,
            )
        ) {
            for entry in Lexer::new(&src).flatten() {
                for t in entry.tokens {
                    let start = t.text.as_ptr() as usize - src.as_ptr() as usize;
                    // A quoted token's text starts after its quote.
                    let start = if t.quoted { start - 1 } else { start };
                    proptest::prop_assert_eq!((t.pos.line, t.pos.column), reference_pos(&src, start));
                }
            }
        }
    }
}
