//! Trust anchors: the keys the chain of trust starts from (RFC 4033 §2,
//! RFC 4035 §4.4). Built in, IANA's root anchors; read from a file, the
//! forms operators have: zone-file lines of DS or DNSKEY records (Unbound's
//! `trust-anchor-file` and `auto-trust-anchor-file`, Debian's
//! `/usr/share/dns/root.ds` and `root.key`), and BIND's `trust-anchors`,
//! `managed-keys` and `trusted-keys` statements. Mistakes are reported with
//! the file, line and column.

use bulwark_proto::encoding::base64_decode;
use bulwark_proto::rdata::{Dnskey, Ds};
use bulwark_proto::{Name, Rdata};
use bulwark_zone::Diagnostic;

/// One anchor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustAnchor {
    pub owner: Name,
    pub data: AnchorData,
    /// Kept up to date by RFC 5011 (BIND's `initial-key`/`initial-ds`,
    /// Unbound's auto-trust-anchor file) rather than fixed.
    pub managed: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnchorData {
    Ds(Ds),
    Dnskey(Dnskey),
}

/// IANA's root anchors (<https://data.iana.org/root-anchors/>): KSK-2017
/// and KSK-2024, as DS records of SHA-256 digests.
const ROOT_DS: [(u16, &str); 2] = [
    (
        20326,
        "E06D44B80B8F1D39A95C0B0D7C65D08458E880409BBC683457104237C7F8EC8D",
    ),
    (
        38696,
        "683D2D0ACB8C9B712A1948B27F741219298D0A450D612C483AF444A4C0FB2B16",
    ),
];

/// The built-in anchors: the root's.
pub fn root_anchors() -> Vec<TrustAnchor> {
    ROOT_DS
        .iter()
        .filter_map(|(tag, digest)| {
            Some(TrustAnchor {
                owner: Name::root(),
                data: AnchorData::Ds(Ds {
                    key_tag: *tag,
                    algorithm: 8,
                    digest_type: 2,
                    digest: hex(digest)?,
                }),
                managed: true,
            })
        })
        .collect()
}

/// Reads the anchors in `text`, the contents of the file named `file`, in
/// whichever form it is written.
pub fn parse_anchors(text: &str, file: &str) -> Result<Vec<TrustAnchor>, Vec<Diagnostic>> {
    let anchors = if is_bind(text) {
        let tokens = tokens(text, file).map_err(|d| vec![d])?;
        bind_anchors(&tokens, file).map_err(|d| vec![d])?
    } else {
        zone_anchors(text, file)?
    };
    if anchors.is_empty() {
        return Err(vec![Diagnostic::new(
            file,
            1,
            1,
            "no trust anchor in the file",
        )]);
    }
    Ok(anchors)
}

/// Whether the first line that is not blank or a comment opens one of
/// BIND's statements.
fn is_bind(text: &str) -> bool {
    text.lines()
        .map(str::trim_start)
        .find(|l| {
            !(l.is_empty()
                || l.starts_with(';')
                || l.starts_with('#')
                || l.starts_with("//")
                || l.starts_with("/*"))
        })
        .is_some_and(|l| {
            ["trust-anchors", "managed-keys", "trusted-keys"]
                .iter()
                .any(|k| l.starts_with(k))
        })
}

/// Zone-file lines: every DS and DNSKEY record is an anchor; other records
/// are a mistake. A line without a TTL is fine (Debian's files have none).
fn zone_anchors(text: &str, file: &str) -> Result<Vec<TrustAnchor>, Vec<Diagnostic>> {
    // A default TTL on the same line as the text's first, so line numbers
    // stay those of the file.
    let with_ttl = format!("$TTL 0 ; \n{text}");
    let records = bulwark_zone::parse_str(&with_ttl, &Name::root(), file).map_err(|ds| {
        ds.into_iter()
            .map(|mut d| {
                d.line = d.line.saturating_sub(1).max(1);
                d
            })
            .collect::<Vec<_>>()
    })?;
    // The auto-trust-anchor file of Unbound marks its keys' RFC 5011 state
    // in comments: any `;;state=` makes the whole file managed.
    let managed = text.contains(";;state=");
    let mut out = Vec::new();
    for r in records {
        let data = match r.rdata {
            Rdata::Ds(ds) => AnchorData::Ds(ds),
            Rdata::Dnskey(key) => AnchorData::Dnskey(key),
            other => {
                let mnemonic = other.rtype().to_string();
                let line = line_with(text, &mnemonic);
                return Err(vec![Diagnostic::new(
                    file,
                    line,
                    1,
                    format!(
                        "{} {}: only DS and DNSKEY records are trust anchors",
                        r.owner,
                        other.rtype()
                    ),
                )]);
            }
        };
        out.push(TrustAnchor {
            owner: r.owner,
            data,
            managed,
        });
    }
    Ok(out)
}

/// A token of BIND's configuration syntax, with where it starts.
#[derive(Debug, Clone)]
struct Token {
    text: String,
    quoted: bool,
    line: u32,
    column: u32,
}

/// Splits BIND's syntax into tokens: words, quoted strings (their inner
/// white space dropped, as base64 and hex may be broken over lines),
/// braces and semicolons; `#`, `//` and `/* */` comments skipped.
fn tokens(text: &str, file: &str) -> Result<Vec<Token>, Diagnostic> {
    let mut out = Vec::new();
    let (mut line, mut column) = (1u32, 1u32);
    let mut chars = text.chars().peekable();
    let advance = |c: char, line: &mut u32, column: &mut u32| {
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
            advance(c, &mut line, &mut column);
            continue;
        }
        if c == '#' {
            while let Some(&c) = chars.peek() {
                if c == '\n' {
                    break;
                }
                chars.next();
                advance(c, &mut line, &mut column);
            }
            continue;
        }
        if c == '/' {
            chars.next();
            advance(c, &mut line, &mut column);
            match chars.peek().copied() {
                Some('/') => {
                    while let Some(&c) = chars.peek() {
                        if c == '\n' {
                            break;
                        }
                        chars.next();
                        advance(c, &mut line, &mut column);
                    }
                }
                Some('*') => {
                    chars.next();
                    advance('*', &mut line, &mut column);
                    let mut star = false;
                    loop {
                        let Some(c) = chars.next() else {
                            return Err(Diagnostic::new(
                                file,
                                at_line,
                                at_column,
                                "a comment that never ends",
                            ));
                        };
                        advance(c, &mut line, &mut column);
                        if star && c == '/' {
                            break;
                        }
                        star = c == '*';
                    }
                }
                _ => {
                    return Err(Diagnostic::new(file, at_line, at_column, "a stray `/`"));
                }
            }
            continue;
        }
        if c == '"' {
            chars.next();
            advance(c, &mut line, &mut column);
            let mut s = String::new();
            loop {
                let Some(c) = chars.next() else {
                    return Err(Diagnostic::new(
                        file,
                        at_line,
                        at_column,
                        "a quoted string that never ends",
                    ));
                };
                advance(c, &mut line, &mut column);
                if c == '"' {
                    break;
                }
                if !c.is_whitespace() {
                    s.push(c);
                }
            }
            out.push(Token {
                text: s,
                quoted: true,
                line: at_line,
                column: at_column,
            });
            continue;
        }
        if matches!(c, '{' | '}' | ';') {
            chars.next();
            advance(c, &mut line, &mut column);
            out.push(Token {
                text: c.to_string(),
                quoted: false,
                line: at_line,
                column: at_column,
            });
            continue;
        }
        let mut s = String::new();
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() || matches!(c, '{' | '}' | ';' | '"') {
                break;
            }
            s.push(c);
            chars.next();
            advance(c, &mut line, &mut column);
        }
        out.push(Token {
            text: s,
            quoted: false,
            line: at_line,
            column: at_column,
        });
    }
    Ok(out)
}

/// BIND's statements: `trust-anchors { NAME static-key|initial-key FLAGS
/// PROTOCOL ALGORITHM "KEY"; NAME static-ds|initial-ds TAG ALGORITHM
/// DIGEST-TYPE "DIGEST"; };`, `managed-keys` (keys, `initial-key`) and the
/// older `trusted-keys` (keys without a keyword).
fn bind_anchors(tokens: &[Token], file: &str) -> Result<Vec<TrustAnchor>, Diagnostic> {
    let mut out = Vec::new();
    let mut i = 0usize;
    let at = |i: usize| tokens.get(i);
    let err = |t: Option<&Token>, what: &str| match t {
        Some(t) => Diagnostic::new(
            file,
            t.line,
            t.column,
            format!("expected {what}, found `{}`", t.text),
        ),
        None => {
            let (line, column) = tokens.last().map_or((1, 1), |t| (t.line, t.column));
            Diagnostic::new(
                file,
                line,
                column,
                format!("expected {what} before the end of the file"),
            )
        }
    };
    while let Some(statement) = at(i) {
        let kind = statement.text.as_str();
        if !matches!(kind, "trust-anchors" | "managed-keys" | "trusted-keys") {
            return Err(err(
                Some(statement),
                "trust-anchors, managed-keys or trusted-keys",
            ));
        }
        i = i.saturating_add(1);
        if at(i).is_none_or(|t| t.text != "{" || t.quoted) {
            return Err(err(at(i), "`{`"));
        }
        i = i.saturating_add(1);
        loop {
            let Some(t) = at(i) else {
                return Err(err(None, "`}`"));
            };
            if t.text == "}" && !t.quoted {
                i = i.saturating_add(1);
                if at(i).is_none_or(|t| t.text != ";") {
                    return Err(err(at(i), "`;` after `}`"));
                }
                i = i.saturating_add(1);
                break;
            }
            let owner: Name = t.text.parse().map_err(|_| err(Some(t), "a domain name"))?;
            i = i.saturating_add(1);
            let keyword = match (kind, at(i).map(|t| t.text.as_str())) {
                ("trusted-keys", _) => "static-key",
                (_, Some(k @ ("static-key" | "initial-key" | "static-ds" | "initial-ds"))) => {
                    i = i.saturating_add(1);
                    k
                }
                _ => {
                    return Err(err(
                        at(i),
                        "static-key, initial-key, static-ds or initial-ds",
                    ))
                }
            };
            let mut number = |max: u32, what: &str| -> Result<u32, Diagnostic> {
                let t = at(i);
                let n = t
                    .filter(|t| !t.quoted)
                    .and_then(|t| t.text.parse::<u32>().ok())
                    .filter(|n| *n <= max)
                    .ok_or_else(|| err(t, what))?;
                i = i.saturating_add(1);
                Ok(n)
            };
            let (a, b, c) = (
                number(65535, "a number")?,
                number(255, "a number up to 255")?,
                number(255, "an algorithm number")?,
            );
            let blob = at(i).ok_or_else(|| err(None, "the key or digest"))?;
            let ds = keyword.ends_with("-ds");
            let bytes = if ds {
                hex(&blob.text)
            } else {
                base64_decode(&blob.text)
            }
            .filter(|b| !b.is_empty())
            .ok_or_else(|| {
                err(
                    Some(blob),
                    if ds {
                        "a digest in hex"
                    } else {
                        "a key in base64"
                    },
                )
            })?;
            i = i.saturating_add(1);
            if at(i).is_none_or(|t| t.text != ";" || t.quoted) {
                return Err(err(at(i), "`;`"));
            }
            i = i.saturating_add(1);
            let (Ok(a16), Ok(b8), Ok(c8)) = (u16::try_from(a), u8::try_from(b), u8::try_from(c))
            else {
                return Err(err(Some(blob), "numbers in range"));
            };
            let data = if ds {
                AnchorData::Ds(Ds {
                    key_tag: a16,
                    algorithm: b8,
                    digest_type: c8,
                    digest: bytes,
                })
            } else {
                AnchorData::Dnskey(Dnskey {
                    flags: a16,
                    protocol: b8,
                    algorithm: c8,
                    public_key: bytes,
                })
            };
            out.push(TrustAnchor {
                owner,
                data,
                managed: keyword.starts_with("initial"),
            });
        }
    }
    Ok(out)
}

/// The number of the first line with `word` among its fields (outside
/// comments), or 1: where a record the parser accepted is reported.
fn line_with(text: &str, word: &str) -> u32 {
    text.lines()
        .position(|l| {
            l.split(';')
                .next()
                .is_some_and(|l| l.split_whitespace().any(|f| f.eq_ignore_ascii_case(word)))
        })
        .and_then(|i| u32::try_from(i).ok())
        .map_or(1, |i| i.saturating_add(1))
}

/// Hexadecimal digits to octets; `None` for anything else or an odd count.
fn hex(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = text
        .bytes()
        .map(|b| {
            char::from(b)
                .to_digit(16)
                .and_then(|d| u8::try_from(d).ok())
        })
        .collect::<Option<_>>()?;
    if digits.len() % 2 != 0 {
        return None;
    }
    Some(
        digits
            .chunks_exact(2)
            .filter_map(|p| match p {
                [h, l] => Some(h.wrapping_mul(16).wrapping_add(*l)),
                _ => None,
            })
            .collect(),
    )
}
