//! Splits text in BIND's configuration syntax (named.conf and the files it
//! includes: `key` statements as `tsig-keygen` writes them, `trust-anchors`,
//! `managed-keys`, `trusted-keys`) into tokens. What the statements mean is
//! the callers' business; this is only the lexical layer they share.
//!
//! As BIND's lexer (`isc_lex` with C, C++ and shell comments) reads it:
//! - words run until white space, `{`, `}`, `;`, `"` or a comment; a `/`
//!   that starts no comment is an ordinary character;
//! - a quoted string runs to the next `"` that no backslash escapes, and may
//!   span lines; its text is kept as written (escapes and white space
//!   intact), because what it should become depends on the field;
//! - `#` and `//` comment to the end of the line, `/* … */` to its close, and
//!   a comment ends a word as white space would.
//!
//! Positions are 1-based lines and columns; a column counts characters (a tab
//! or a non-ASCII character is one), and a `\r` before a line end is one.

use core::fmt;
use std::borrow::Cow;

use crate::diagnostic::Diagnostic;
pub use crate::parse::lexer::Pos;

/// One token, with where its first character is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token<'a> {
    pub kind: TokenKind<'a>,
    pub pos: Pos,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind<'a> {
    /// An unquoted word.
    Word(&'a str),
    /// The text between a string's quotes, exactly as written; see
    /// [`unescape`] and [`without_white_space`] for what callers make of it.
    Quoted(&'a str),
    /// `{`
    Open,
    /// `}`
    Close,
    /// `;`
    Semicolon,
}

impl<'a> TokenKind<'a> {
    /// The text of the token as written: a word, a quoted string's text
    /// without its quotes, or the punctuation mark itself.
    pub fn text(&self) -> &'a str {
        match self {
            TokenKind::Word(s) | TokenKind::Quoted(s) => s,
            TokenKind::Open => "{",
            TokenKind::Close => "}",
            TokenKind::Semicolon => ";",
        }
    }

    pub fn is_quoted(&self) -> bool {
        matches!(self, TokenKind::Quoted(_))
    }
}

/// What stopped the tokenizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BindConfErrorKind {
    /// A `"` with no closing one before the end of the text.
    UnterminatedString,
    /// A `/*` with no `*/` before the end of the text.
    UnterminatedComment,
}

impl BindConfErrorKind {
    pub fn message(self) -> &'static str {
        match self {
            BindConfErrorKind::UnterminatedString => "a quoted string that never ends",
            BindConfErrorKind::UnterminatedComment => "a comment that never ends",
        }
    }
}

/// A problem in the text, at the string or comment that opens it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BindConfError {
    pub pos: Pos,
    pub kind: BindConfErrorKind,
}

impl BindConfError {
    /// The problem as a [`Diagnostic`] of the file named `file`.
    pub fn diagnostic(&self, file: &str) -> Diagnostic {
        Diagnostic::new(file, self.pos.line, self.pos.column, self.kind.message())
    }
}

impl fmt::Display for BindConfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.pos.line,
            self.pos.column,
            self.kind.message()
        )
    }
}

impl std::error::Error for BindConfError {}

/// All the tokens of `text`, comments dropped, or the first problem.
pub fn tokens(text: &str) -> Result<Vec<Token<'_>>, BindConfError> {
    Tokens::new(text).collect()
}

/// A quoted string's text with each backslash replaced by the character it
/// escapes (`\"` → `"`, `\\` → `\`, `\.` → `.`). BIND itself drops only the
/// backslash before a `"`; this is the stricter reading the TSIG key-file
/// reader has always applied to key names, algorithms and secrets.
pub fn unescape(raw: &str) -> Cow<'_, str> {
    if !raw.contains('\\') {
        return Cow::Borrowed(raw);
    }
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            _ => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A quoted string's text with all white space dropped: base64 and hex
/// broken over lines, as trust anchors are written.
pub fn without_white_space(raw: &str) -> Cow<'_, str> {
    if raw.contains(char::is_whitespace) {
        Cow::Owned(raw.chars().filter(|c| !c.is_whitespace()).collect())
    } else {
        Cow::Borrowed(raw)
    }
}

/// Iterator over the tokens of a text; it ends after the first error.
#[derive(Debug, Clone)]
pub struct Tokens<'a> {
    text: &'a str,
    /// Byte offset of the next character.
    at: usize,
    line: u32,
    column: u32,
    failed: bool,
}

impl<'a> Tokens<'a> {
    pub fn new(text: &'a str) -> Tokens<'a> {
        Tokens {
            text,
            at: 0,
            line: 1,
            column: 1,
            failed: false,
        }
    }

    fn rest(&self) -> &'a str {
        self.text.get(self.at..).unwrap_or("")
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn pos(&self) -> Pos {
        Pos {
            line: self.line,
            column: self.column,
        }
    }

    /// Steps over one character, keeping line and column current.
    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at = self.at.saturating_add(c.len_utf8());
        if c == '\n' {
            self.line = self.line.saturating_add(1);
            self.column = 1;
        } else {
            self.column = self.column.saturating_add(1);
        }
        Some(c)
    }

    fn slice(&self, start: usize, end: usize) -> &'a str {
        self.text.get(start..end).unwrap_or("")
    }

    /// Whether a `#`, `//` or `/*` comment starts here.
    fn at_comment(&self) -> bool {
        let rest = self.rest();
        rest.starts_with('#') || rest.starts_with("//") || rest.starts_with("/*")
    }

    /// Skips white space and comments.
    fn skip_blank(&mut self) -> Result<(), BindConfError> {
        loop {
            let rest = self.rest();
            if rest.starts_with(char::is_whitespace) {
                self.bump();
            } else if rest.starts_with('#') || rest.starts_with("//") {
                while self.peek().is_some_and(|c| c != '\n') {
                    self.bump();
                }
            } else if rest.starts_with("/*") {
                let pos = self.pos();
                self.bump();
                self.bump();
                loop {
                    if self.rest().starts_with("*/") {
                        self.bump();
                        self.bump();
                        break;
                    }
                    if self.bump().is_none() {
                        return Err(BindConfError {
                            pos,
                            kind: BindConfErrorKind::UnterminatedComment,
                        });
                    }
                }
            } else {
                return Ok(());
            }
        }
    }

    /// A quoted string; the opening quote is the next character.
    fn quoted(&mut self) -> Result<Token<'a>, BindConfError> {
        let pos = self.pos();
        self.bump();
        let start = self.at;
        loop {
            let end = self.at;
            match self.bump() {
                None => {
                    return Err(BindConfError {
                        pos,
                        kind: BindConfErrorKind::UnterminatedString,
                    })
                }
                Some('"') => {
                    return Ok(Token {
                        kind: TokenKind::Quoted(self.slice(start, end)),
                        pos,
                    })
                }
                // A backslash keeps the next character, a quote included,
                // in the string.
                Some('\\') => {
                    self.bump();
                }
                Some(_) => {}
            }
        }
    }

    /// A word; its first character is the next one.
    fn word(&mut self) -> Token<'a> {
        let pos = self.pos();
        let start = self.at;
        while let Some(c) = self.peek() {
            if c.is_whitespace() || matches!(c, '{' | '}' | ';' | '"') || self.at_comment() {
                break;
            }
            self.bump();
        }
        Token {
            kind: TokenKind::Word(self.slice(start, self.at)),
            pos,
        }
    }

    fn next_token(&mut self) -> Option<Result<Token<'a>, BindConfError>> {
        if let Err(e) = self.skip_blank() {
            return Some(Err(e));
        }
        let pos = self.pos();
        let kind = match self.peek()? {
            '{' => TokenKind::Open,
            '}' => TokenKind::Close,
            ';' => TokenKind::Semicolon,
            '"' => return Some(self.quoted()),
            _ => return Some(Ok(self.word())),
        };
        self.bump();
        Some(Ok(Token { kind, pos }))
    }
}

impl<'a> Iterator for Tokens<'a> {
    type Item = Result<Token<'a>, BindConfError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let item = self.next_token();
        self.failed = matches!(item, Some(Err(_)));
        item
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
    use super::*;

    /// A token as (kind, line, column).
    type Placed<'a> = (TokenKind<'a>, u32, u32);

    fn lex(text: &str) -> Vec<Placed<'_>> {
        tokens(text)
            .unwrap()
            .into_iter()
            .map(|t| (t.kind, t.pos.line, t.pos.column))
            .collect()
    }

    fn error(text: &str) -> (BindConfErrorKind, u32, u32) {
        let e = tokens(text).unwrap_err();
        (e.kind, e.pos.line, e.pos.column)
    }

    use TokenKind::{Close, Open, Quoted, Semicolon, Word};

    #[test]
    fn every_kind_of_token_with_its_place() {
        assert_eq!(
            lex("key \"a b\" {secret;};"),
            vec![
                (Word("key"), 1, 1),
                (Quoted("a b"), 1, 5),
                (Open, 1, 11),
                (Word("secret"), 1, 12),
                (Semicolon, 1, 18),
                (Close, 1, 19),
                (Semicolon, 1, 20),
            ]
        );
        assert_eq!(lex(""), vec![]);
        assert_eq!(lex(" \t\n "), vec![]);
    }

    #[test]
    fn punctuation_and_quotes_end_a_word_but_a_lone_slash_does_not() {
        assert_eq!(
            lex("a{b}c;d\"e\"f/g"),
            vec![
                (Word("a"), 1, 1),
                (Open, 1, 2),
                (Word("b"), 1, 3),
                (Close, 1, 4),
                (Word("c"), 1, 5),
                (Semicolon, 1, 6),
                (Word("d"), 1, 7),
                (Quoted("e"), 1, 8),
                (Word("f/g"), 1, 11),
            ]
        );
        assert_eq!(lex("/ /x"), vec![(Word("/"), 1, 1), (Word("/x"), 1, 3)]);
    }

    #[test]
    fn each_comment_form_is_skipped_and_ends_a_word() {
        let cases: &[(&str, Vec<Placed<'_>>)] = &[
            ("# all\nx", vec![(Word("x"), 2, 1)]),
            ("// all\nx", vec![(Word("x"), 2, 1)]),
            ("/* all */x", vec![(Word("x"), 1, 10)]),
            ("/* over\nlines */ x", vec![(Word("x"), 2, 10)]),
            ("/**/x", vec![(Word("x"), 1, 5)]),
            ("/***/x", vec![(Word("x"), 1, 6)]),
            ("/* a // b # c */x", vec![(Word("x"), 1, 17)]),
            ("a#b\nc", vec![(Word("a"), 1, 1), (Word("c"), 2, 1)]),
            ("a//b\nc", vec![(Word("a"), 1, 1), (Word("c"), 2, 1)]),
            ("a/*b*/c", vec![(Word("a"), 1, 1), (Word("c"), 1, 7)]),
            ("x # no newline at the end", vec![(Word("x"), 1, 1)]),
        ];
        for (text, want) in cases {
            assert_eq!(&lex(text), want, "{text:?}");
        }
    }

    #[test]
    fn comment_marks_inside_a_string_are_text() {
        assert_eq!(lex("\"# // /* */\""), vec![(Quoted("# // /* */"), 1, 1)]);
    }

    #[test]
    fn positions_follow_lines_and_columns_count_characters() {
        assert_eq!(
            lex("a\n\tb\n\n  c \"x\ny\" d"),
            vec![
                (Word("a"), 1, 1),
                (Word("b"), 2, 2),
                (Word("c"), 4, 3),
                (Quoted("x\ny"), 4, 5),
                (Word("d"), 5, 4),
            ]
        );
    }

    #[test]
    fn crlf_line_ends_are_white_space() {
        assert_eq!(
            lex("key k {\r\n  secret \"AA\r\n==\";\r\n}; // done\r\n"),
            vec![
                (Word("key"), 1, 1),
                (Word("k"), 1, 5),
                (Open, 1, 7),
                (Word("secret"), 2, 3),
                (Quoted("AA\r\n=="), 2, 10),
                (Semicolon, 3, 4),
                (Close, 4, 1),
                (Semicolon, 4, 2),
            ]
        );
    }

    #[test]
    fn non_ascii_characters_are_one_column_each() {
        assert_eq!(
            lex("é \"ü→\" ü{ 日本;"),
            vec![
                (Word("é"), 1, 1),
                (Quoted("ü→"), 1, 3),
                (Word("ü"), 1, 8),
                (Open, 1, 9),
                (Word("日本"), 1, 11),
                (Semicolon, 1, 13),
            ]
        );
        // Unicode white space separates words, as `char::is_whitespace` says.
        assert_eq!(lex("a\u{a0}b"), vec![(Word("a"), 1, 1), (Word("b"), 1, 3)]);
    }

    #[test]
    fn a_quoted_string_keeps_its_escapes_and_a_backslash_keeps_a_quote_in() {
        assert_eq!(lex(r#""a\"b""#), vec![(Quoted(r#"a\"b"#), 1, 1)]);
        assert_eq!(
            lex(r#""a\\" b"#),
            vec![(Quoted(r"a\\"), 1, 1), (Word("b"), 1, 7)]
        );
        assert_eq!(lex(r#""""#), vec![(Quoted(""), 1, 1)]);
    }

    #[test]
    fn unterminated_strings_and_comments_are_reported_where_they_open() {
        use BindConfErrorKind::{UnterminatedComment, UnterminatedString};
        let cases: &[(&str, (BindConfErrorKind, u32, u32))] = &[
            ("key \"open", (UnterminatedString, 1, 5)),
            ("a\n  \"x\ny", (UnterminatedString, 2, 3)),
            (r#""ends in an escaped quote\""#, (UnterminatedString, 1, 1)),
            ("\"a backslash at the end\\", (UnterminatedString, 1, 1)),
            ("x /* open", (UnterminatedComment, 1, 3)),
            ("x\n/* open */ /* again *", (UnterminatedComment, 2, 12)),
            ("/*/", (UnterminatedComment, 1, 1)),
        ];
        for (text, want) in cases {
            assert_eq!(&error(text), want, "{text:?}");
        }
    }

    #[test]
    fn the_iterator_stops_after_an_error() {
        let mut t = Tokens::new("a \"b");
        assert_eq!(t.next().unwrap().unwrap().kind, Word("a"));
        assert!(t.next().unwrap().is_err());
        assert!(t.next().is_none());
    }

    #[test]
    fn errors_read_as_diagnostics_and_messages() {
        let e = tokens("x\n /* open").unwrap_err();
        assert_eq!(
            e.diagnostic("named.conf").to_string(),
            "named.conf:2:2: a comment that never ends"
        );
        assert_eq!(
            tokens("\"").unwrap_err().to_string(),
            "line 1, column 1: a quoted string that never ends"
        );
    }

    #[test]
    fn text_of_each_kind() {
        let texts: Vec<&str> = tokens("w \"q s\" { } ;")
            .unwrap()
            .iter()
            .map(|t| t.kind.text())
            .collect();
        assert_eq!(texts, ["w", "q s", "{", "}", ";"]);
        assert!(Quoted("").is_quoted() && !Word("").is_quoted());
    }

    #[test]
    fn unescape_takes_each_escaped_character_literally() {
        assert!(matches!(unescape("plain"), Cow::Borrowed("plain")));
        assert_eq!(unescape(r#"a\"b"#), "a\"b");
        assert_eq!(unescape(r"a\\b\.c"), r"a\b.c");
        assert_eq!(unescape("trailing\\"), "trailing");
    }

    #[test]
    fn without_white_space_joins_text_broken_over_lines() {
        assert!(matches!(without_white_space("AQID"), Cow::Borrowed("AQID")));
        assert_eq!(without_white_space(" AQ\r\n\tID \u{a0}"), "AQID");
    }
}
