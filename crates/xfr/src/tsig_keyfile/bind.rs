//! BIND's `key` statements, as `tsig-keygen` writes them and named.conf
//! includes them: `key "name" { algorithm hmac-sha256; secret "…"; };`.

use crate::tsig::TsigKey;

use super::{algorithm_at, err, name_at, push_unique, secret_at, KeyFileError, KeyFileErrorKind};

/// A token of BIND's configuration syntax, with where it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Token {
    kind: TokenKind,
    line: usize,
    column: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum TokenKind {
    Word(String),
    Quoted(String),
    Open,
    Close,
    Semicolon,
}

impl TokenKind {
    /// The text of a word or string.
    fn text(&self) -> Option<&str> {
        match self {
            TokenKind::Word(s) | TokenKind::Quoted(s) => Some(s),
            _ => None,
        }
    }
}

/// Splits BIND configuration text into tokens, dropping comments.
fn bind_tokens(text: &str) -> Result<Vec<Token>, KeyFileError> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    let (mut line, mut column) = (1usize, 1usize);
    // Advances one character, keeping line and column.
    let step = |c: char, line: &mut usize, column: &mut usize| {
        if c == '\n' {
            *line = line.saturating_add(1);
            *column = 1;
        } else {
            *column = column.saturating_add(1);
        }
    };
    while let Some(&c) = chars.peek() {
        let (at_line, at_column) = (line, column);
        if c.is_whitespace() {
            chars.next();
            step(c, &mut line, &mut column);
            continue;
        }
        let single = match c {
            '{' => Some(TokenKind::Open),
            '}' => Some(TokenKind::Close),
            ';' => Some(TokenKind::Semicolon),
            _ => None,
        };
        if let Some(kind) = single {
            chars.next();
            step(c, &mut line, &mut column);
            tokens.push(Token {
                kind,
                line: at_line,
                column: at_column,
            });
            continue;
        }
        if c == '#' || (c == '/' && text_ahead(&chars, "//")) {
            while let Some(&n) = chars.peek() {
                if n == '\n' {
                    break;
                }
                chars.next();
                step(n, &mut line, &mut column);
            }
            continue;
        }
        if c == '/' && text_ahead(&chars, "/*") {
            chars.next();
            chars.next();
            column = column.saturating_add(2);
            let mut closed = false;
            while let Some(n) = chars.next() {
                step(n, &mut line, &mut column);
                if n == '*' && chars.peek() == Some(&'/') {
                    chars.next();
                    step('/', &mut line, &mut column);
                    closed = true;
                    break;
                }
            }
            if !closed {
                return err(at_line, at_column, KeyFileErrorKind::UnterminatedComment);
            }
            continue;
        }
        if c == '"' {
            chars.next();
            step(c, &mut line, &mut column);
            let mut s = String::new();
            let mut closed = false;
            while let Some(n) = chars.next() {
                step(n, &mut line, &mut column);
                match n {
                    '"' => {
                        closed = true;
                        break;
                    }
                    // BIND: a backslash takes the next character literally.
                    '\\' => {
                        if let Some(e) = chars.next() {
                            step(e, &mut line, &mut column);
                            s.push(e);
                        }
                    }
                    _ => s.push(n),
                }
            }
            if !closed {
                return err(at_line, at_column, KeyFileErrorKind::UnterminatedString);
            }
            tokens.push(Token {
                kind: TokenKind::Quoted(s),
                line: at_line,
                column: at_column,
            });
            continue;
        }
        let mut word = String::new();
        while let Some(&n) = chars.peek() {
            if n.is_whitespace() || matches!(n, '{' | '}' | ';' | '"' | '#') {
                break;
            }
            if n == '/' && (text_ahead(&chars, "//") || text_ahead(&chars, "/*")) {
                break;
            }
            chars.next();
            step(n, &mut line, &mut column);
            word.push(n);
        }
        tokens.push(Token {
            kind: TokenKind::Word(word),
            line: at_line,
            column: at_column,
        });
    }
    Ok(tokens)
}

/// Whether the characters ahead start with `s`.
fn text_ahead(chars: &core::iter::Peekable<core::str::Chars<'_>>, s: &str) -> bool {
    chars.clone().take(s.len()).eq(s.chars())
}

/// A cursor over BIND tokens that knows where the text ended.
struct BindParser {
    tokens: std::vec::IntoIter<Token>,
    end: (usize, usize),
}

impl BindParser {
    fn next(&mut self, expected: &'static str) -> Result<Token, KeyFileError> {
        match self.tokens.next() {
            Some(t) => Ok(t),
            None => err(self.end.0, self.end.1, KeyFileErrorKind::Expected(expected)),
        }
    }

    fn expect(&mut self, kind: &TokenKind, expected: &'static str) -> Result<(), KeyFileError> {
        let t = self.next(expected)?;
        if t.kind == *kind {
            Ok(())
        } else {
            err(t.line, t.column, KeyFileErrorKind::Expected(expected))
        }
    }

    /// A word or quoted string.
    fn text(&mut self, expected: &'static str) -> Result<(String, usize, usize), KeyFileError> {
        let t = self.next(expected)?;
        match t.kind.text() {
            Some(s) => Ok((s.to_owned(), t.line, t.column)),
            None => err(t.line, t.column, KeyFileErrorKind::Expected(expected)),
        }
    }
}

/// Reads the `key` statements of a BIND configuration fragment.
pub fn parse_bind_keys(text: &str) -> Result<Vec<TsigKey>, KeyFileError> {
    let tokens = bind_tokens(text)?;
    let end_line = text.lines().count().max(1);
    let end_column = text
        .lines()
        .last()
        .map_or(1, |l| l.chars().count().saturating_add(1));
    let mut p = BindParser {
        tokens: tokens.into_iter(),
        end: (end_line, end_column),
    };
    let mut keys = Vec::new();
    while let Some(t) = p.tokens.next() {
        if t.kind != TokenKind::Word("key".to_owned()) {
            return err(t.line, t.column, KeyFileErrorKind::Expected("`key`"));
        }
        let (name_text, name_line, name_column) = p.text("a key name")?;
        let name = name_at(&name_text, name_line, name_column)?;
        p.expect(&TokenKind::Open, "`{`")?;
        let mut algorithm = None;
        let mut secret = None;
        loop {
            let clause = p.next("`algorithm`, `secret` or `}`")?;
            let field = match &clause.kind {
                TokenKind::Close => break,
                TokenKind::Word(w) => w.as_str(),
                _ => {
                    return err(
                        clause.line,
                        clause.column,
                        KeyFileErrorKind::Expected("`algorithm`, `secret` or `}`"),
                    )
                }
            };
            match field {
                "algorithm" => {
                    let (text, line, column) = p.text("an algorithm name")?;
                    if algorithm.is_some() {
                        return err(
                            clause.line,
                            clause.column,
                            KeyFileErrorKind::Duplicate("algorithm"),
                        );
                    }
                    algorithm = Some(algorithm_at(&text, line, column)?);
                }
                "secret" => {
                    let (text, line, column) = p.text("a base64 secret")?;
                    if secret.is_some() {
                        return err(
                            clause.line,
                            clause.column,
                            KeyFileErrorKind::Duplicate("secret"),
                        );
                    }
                    secret = Some(secret_at(&text, line, column)?);
                }
                other => {
                    return err(
                        clause.line,
                        clause.column,
                        KeyFileErrorKind::UnknownOption(other.to_owned()),
                    )
                }
            }
            p.expect(&TokenKind::Semicolon, "`;`")?;
        }
        p.expect(&TokenKind::Semicolon, "`;` after `}`")?;
        let Some(algorithm) = algorithm else {
            return err(
                t.line,
                t.column,
                KeyFileErrorKind::MissingAlgorithm(name.to_string()),
            );
        };
        let Some(secret) = secret else {
            return err(
                t.line,
                t.column,
                KeyFileErrorKind::MissingSecret(name.to_string()),
            );
        };
        push_unique(
            &mut keys,
            TsigKey::new(name, algorithm, secret),
            t.line,
            t.column,
        )?;
    }
    if keys.is_empty() {
        return err(p.end.0, p.end.1, KeyFileErrorKind::NoKeys);
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
    use super::*;
    use crate::tsig::TsigAlgorithm;
    use crate::tsig_keyfile::{detect_format, KeyFileErrorKind, KeyFileFormat};
    use bulwark_proto::{Name, NameError};

    fn name(s: &str) -> Name {
        s.parse().unwrap()
    }

    fn error(r: Result<Vec<TsigKey>, KeyFileError>) -> (usize, usize, KeyFileErrorKind) {
        let e = r.unwrap_err();
        (e.line, e.column, e.kind)
    }

    #[test]
    fn bind_statements_with_every_kind_of_comment() {
        let text = "# made by tsig-keygen\n\
            key \"xfr.example\" {\n\
            \talgorithm hmac-sha256; // the usual\n\
            \tsecret \"AAECAw==\";\n\
            };\n\
            /* a second\n key */ key second. { secret \"BAUG\n\"; algorithm \"HMAC-SHA512\"; };\n";
        let keys = parse_bind_keys(text).unwrap();
        assert_eq!(keys.len(), 2);
        assert_eq!(keys[0].name(), &name("xfr.example."));
        assert_eq!(keys[0].algorithm(), TsigAlgorithm::HmacSha256);
        assert_eq!(keys[0].secret(), &[0, 1, 2, 3]);
        assert_eq!(keys[1].name(), &name("second."));
        assert_eq!(keys[1].algorithm(), TsigAlgorithm::HmacSha512);
        assert_eq!(keys[1].secret(), &[4, 5, 6]);
        assert_eq!(detect_format(text), KeyFileFormat::Bind);
    }

    #[test]
    fn bind_errors_name_line_column_and_what_was_expected() {
        use KeyFileErrorKind as K;
        let cases: &[(&str, (usize, usize, KeyFileErrorKind))] = &[
            ("key k { algorithm hmac-sha256 secret \"AA==\"; };", (1, 31, K::Expected("`;`"))),
            ("key k {\n  algorithm hmac-sha256;\n  secret \"AA==\";\n}", (4, 2, K::Expected("`;` after `}`"))),
            ("key k {\n  algorithm hmac-md5;\n  secret \"AA==\";\n};", (2, 13, K::Md5)),
            ("key k { algorithm hmac-sha256-128; secret \"AA==\"; };", (1, 19, K::UnknownAlgorithm("hmac-sha256-128".into()))),
            ("key k { algorithm hmac-sha256; secret \"A!==\"; };", (1, 39, K::BadSecret)),
            ("key k { algorithm hmac-sha256; };", (1, 1, K::MissingSecret("k.".into()))),
            ("key k { secret \"AA==\"; };", (1, 1, K::MissingAlgorithm("k.".into()))),
            ("key k { algorithm hmac-sha1; algorithm hmac-sha1; };", (1, 30, K::Duplicate("algorithm"))),
            ("key k { keyid 5; };", (1, 9, K::UnknownOption("keyid".into()))),
            ("options { };", (1, 1, K::Expected("`key`"))),
            ("key k { secret \"AA==; };", (1, 16, K::UnterminatedString)),
            ("key k { /* open", (1, 9, K::UnterminatedComment)),
            ("key", (1, 4, K::Expected("a key name"))),
            ("# nothing\n", (1, 10, K::NoKeys)),
            ("key a..b { };", (1, 5, K::BadName(NameError::EmptyLabel))),
            (
                "key k { algorithm hmac-sha1; secret \"AA==\"; };\nkey K. { algorithm hmac-sha1; secret \"AQ==\"; };",
                (2, 1, K::DuplicateKey("K.".into())),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(&error(parse_bind_keys(text)), want, "{text}");
        }
    }
}
