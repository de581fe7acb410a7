//! BIND's `key` statements, as `tsig-keygen` writes them and named.conf
//! includes them: `key "name" { algorithm hmac-sha256; secret "…"; };`.

use std::borrow::Cow;

use bulwark_zone::bind_conf::{
    self, unescape, BindConfError, BindConfErrorKind, Pos, Token, TokenKind,
};

use crate::tsig::TsigKey;

use super::{algorithm_at, err, name_at, push_unique, secret_at, KeyFileError, KeyFileErrorKind};

/// A line and column as key-file errors give them.
fn at(pos: Pos) -> (usize, usize) {
    let widen = |n: u32| usize::try_from(n).unwrap_or(usize::MAX);
    (widen(pos.line), widen(pos.column))
}

/// The tokenizer's error as a key-file error.
fn lexical_error(e: BindConfError) -> KeyFileError {
    let (line, column) = at(e.pos);
    let kind = match e.kind {
        BindConfErrorKind::UnterminatedComment => KeyFileErrorKind::UnterminatedComment,
        _ => KeyFileErrorKind::UnterminatedString,
    };
    KeyFileError { line, column, kind }
}

/// A cursor over BIND tokens that knows where the text ended.
struct BindParser<'a> {
    tokens: std::vec::IntoIter<Token<'a>>,
    end: (usize, usize),
}

impl<'a> BindParser<'a> {
    fn next(&mut self, expected: &'static str) -> Result<Token<'a>, KeyFileError> {
        match self.tokens.next() {
            Some(t) => Ok(t),
            None => err(self.end.0, self.end.1, KeyFileErrorKind::Expected(expected)),
        }
    }

    fn expect(&mut self, kind: &TokenKind<'_>, expected: &'static str) -> Result<(), KeyFileError> {
        let t = self.next(expected)?;
        if t.kind == *kind {
            Ok(())
        } else {
            let (line, column) = at(t.pos);
            err(line, column, KeyFileErrorKind::Expected(expected))
        }
    }

    /// A word, or a quoted string with its escapes taken literally.
    fn text(
        &mut self,
        expected: &'static str,
    ) -> Result<(Cow<'a, str>, usize, usize), KeyFileError> {
        let t = self.next(expected)?;
        let (line, column) = at(t.pos);
        match t.kind {
            TokenKind::Word(s) => Ok((Cow::Borrowed(s), line, column)),
            TokenKind::Quoted(s) => Ok((unescape(s), line, column)),
            _ => err(line, column, KeyFileErrorKind::Expected(expected)),
        }
    }
}

/// Reads the `key` statements of a BIND configuration fragment.
pub fn parse_bind_keys(text: &str) -> Result<Vec<TsigKey>, KeyFileError> {
    let tokens = bind_conf::tokens(text).map_err(lexical_error)?;
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
        let (key_line, key_column) = at(t.pos);
        if t.kind != TokenKind::Word("key") {
            return err(key_line, key_column, KeyFileErrorKind::Expected("`key`"));
        }
        let (name_text, name_line, name_column) = p.text("a key name")?;
        let name = name_at(&name_text, name_line, name_column)?;
        p.expect(&TokenKind::Open, "`{`")?;
        let mut algorithm = None;
        let mut secret = None;
        loop {
            let clause = p.next("`algorithm`, `secret` or `}`")?;
            let (clause_line, clause_column) = at(clause.pos);
            let field = match clause.kind {
                TokenKind::Close => break,
                TokenKind::Word(w) => w,
                _ => {
                    return err(
                        clause_line,
                        clause_column,
                        KeyFileErrorKind::Expected("`algorithm`, `secret` or `}`"),
                    )
                }
            };
            match field {
                "algorithm" => {
                    let (text, line, column) = p.text("an algorithm name")?;
                    if algorithm.is_some() {
                        return err(
                            clause_line,
                            clause_column,
                            KeyFileErrorKind::Duplicate("algorithm"),
                        );
                    }
                    algorithm = Some(algorithm_at(&text, line, column)?);
                }
                "secret" => {
                    let (text, line, column) = p.text("a base64 secret")?;
                    if secret.is_some() {
                        return err(
                            clause_line,
                            clause_column,
                            KeyFileErrorKind::Duplicate("secret"),
                        );
                    }
                    secret = Some(secret_at(&text, line, column)?);
                }
                other => {
                    return err(
                        clause_line,
                        clause_column,
                        KeyFileErrorKind::UnknownOption(other.to_owned()),
                    )
                }
            }
            p.expect(&TokenKind::Semicolon, "`;`")?;
        }
        p.expect(&TokenKind::Semicolon, "`;` after `}`")?;
        let Some(algorithm) = algorithm else {
            return err(
                key_line,
                key_column,
                KeyFileErrorKind::MissingAlgorithm(name.to_string()),
            );
        };
        let Some(secret) = secret else {
            return err(
                key_line,
                key_column,
                KeyFileErrorKind::MissingSecret(name.to_string()),
            );
        };
        push_unique(
            &mut keys,
            TsigKey::new(name, algorithm, secret),
            key_line,
            key_column,
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
