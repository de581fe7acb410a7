//! Tokens of presentation format, shared by the zone-file parser and record data.
//!
//! The zone lexer splits a record into fields; record data parses them. Escapes are
//! left in place (`raw`) because what they mean depends on the field: a `\.` inside
//! a name is a literal dot in a label, inside a TXT string it is just a dot.

/// One whitespace-separated field of a record's text, with escapes still in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field<'a> {
    /// The bytes between the delimiters, quotes removed, escapes intact.
    pub raw: &'a [u8],
    /// Whether the field was written in double quotes.
    pub quoted: bool,
}

impl<'a> Field<'a> {
    pub fn plain(raw: &'a [u8]) -> Field<'a> {
        Field { raw, quoted: false }
    }

    pub fn quoted(raw: &'a [u8]) -> Field<'a> {
        Field { raw, quoted: true }
    }

    /// The field as UTF-8 text, when it is (numbers, mnemonics, base64 and hex are).
    pub fn as_str(&self) -> Option<&'a str> {
        core::str::from_utf8(self.raw).ok()
    }
}

/// Splits a line of presentation text into fields the way a zone file's lexer would
/// (whitespace separates; double quotes group; backslash escapes the next byte).
/// No comments, parentheses or directives: for short texts such as a CLI argument
/// or a test's record data.
pub fn split_fields(text: &[u8]) -> Result<Vec<Field<'_>>, SplitError> {
    let mut out = Vec::new();
    let mut i = 0usize;
    while i < text.len() {
        let Some(&c) = text.get(i) else { break };
        if c.is_ascii_whitespace() {
            i = i.saturating_add(1);
            continue;
        }
        if c == b'"' {
            let start = i.saturating_add(1);
            let mut j = start;
            loop {
                match text.get(j) {
                    None => return Err(SplitError::UnterminatedQuote),
                    Some(b'\\') => j = j.saturating_add(2),
                    Some(b'"') => break,
                    Some(_) => j = j.saturating_add(1),
                }
            }
            out.push(Field::quoted(
                text.get(start..j).ok_or(SplitError::UnterminatedQuote)?,
            ));
            i = j.saturating_add(1);
        } else {
            let start = i;
            let mut j = i;
            while let Some(&b) = text.get(j) {
                if b.is_ascii_whitespace() || b == b'"' {
                    break;
                }
                j = j.saturating_add(if b == b'\\' { 2 } else { 1 });
            }
            let end = j.min(text.len());
            out.push(Field::plain(text.get(start..end).unwrap_or(&[])));
            i = end;
        }
    }
    Ok(out)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SplitError {
    #[error("unterminated quoted string")]
    UnterminatedQuote,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn splits_quoted_and_escaped_fields() {
        let f = split_fields(br#"10 mail "a b\" c" x\ y"#).unwrap();
        assert_eq!(
            f,
            vec![
                Field::plain(b"10"),
                Field::plain(b"mail"),
                Field::quoted(br#"a b\" c"#),
                Field::plain(br"x\ y"),
            ]
        );
        assert!(split_fields(b"\"open").is_err());
    }
}
