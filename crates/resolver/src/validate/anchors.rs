//! Trust anchors: the keys the chain of trust starts from (RFC 4033 §2,
//! RFC 4035 §4.4). Built in, IANA's root anchors; read from a file, the
//! forms operators have: zone-file lines of DS or DNSKEY records (Unbound's
//! `trust-anchor-file` and `auto-trust-anchor-file`, Debian's
//! `/usr/share/dns/root.ds` and `root.key`), and BIND's `trust-anchors`,
//! `managed-keys` and `trusted-keys` statements. Mistakes are reported with
//! the file, line and column.

use std::borrow::Cow;

use bulwark_proto::encoding::base64_decode;
use bulwark_proto::rdata::{Dnskey, Ds};
use bulwark_proto::{Name, Rdata};
use bulwark_zone::bind_conf::{self, without_white_space, Token, TokenKind};
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
        let tokens = bind_conf::tokens(text).map_err(|e| vec![e.diagnostic(file)])?;
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

/// A token's text as the anchor reader takes it: a quoted string with its
/// white space dropped (base64 and hex may be broken over lines), anything
/// else as written (`{`, `}` and `;` included).
fn text<'a>(t: &Token<'a>) -> Cow<'a, str> {
    match t.kind {
        TokenKind::Quoted(raw) => without_white_space(raw),
        kind => Cow::Borrowed(kind.text()),
    }
}

/// BIND's statements: `trust-anchors { NAME static-key|initial-key FLAGS
/// PROTOCOL ALGORITHM "KEY"; NAME static-ds|initial-ds TAG ALGORITHM
/// DIGEST-TYPE "DIGEST"; };`, `managed-keys` (keys, `initial-key`) and the
/// older `trusted-keys` (keys without a keyword).
fn bind_anchors(tokens: &[Token<'_>], file: &str) -> Result<Vec<TrustAnchor>, Diagnostic> {
    let mut out = Vec::new();
    let mut i = 0usize;
    let at = |i: usize| tokens.get(i);
    let err = |t: Option<&Token<'_>>, what: &str| match t {
        Some(t) => Diagnostic::new(
            file,
            t.pos.line,
            t.pos.column,
            format!("expected {what}, found `{}`", text(t)),
        ),
        None => {
            let (line, column) = tokens.last().map_or((1, 1), |t| (t.pos.line, t.pos.column));
            Diagnostic::new(
                file,
                line,
                column,
                format!("expected {what} before the end of the file"),
            )
        }
    };
    while let Some(statement) = at(i) {
        let statement_text = text(statement);
        let kind = statement_text.as_ref();
        if !matches!(kind, "trust-anchors" | "managed-keys" | "trusted-keys") {
            return Err(err(
                Some(statement),
                "trust-anchors, managed-keys or trusted-keys",
            ));
        }
        i = i.saturating_add(1);
        if at(i).is_none_or(|t| t.kind != TokenKind::Open) {
            return Err(err(at(i), "`{`"));
        }
        i = i.saturating_add(1);
        loop {
            let Some(t) = at(i) else {
                return Err(err(None, "`}`"));
            };
            if t.kind == TokenKind::Close {
                i = i.saturating_add(1);
                if at(i).is_none_or(|t| text(t) != ";") {
                    return Err(err(at(i), "`;` after `}`"));
                }
                i = i.saturating_add(1);
                break;
            }
            let owner: Name = text(t).parse().map_err(|_| err(Some(t), "a domain name"))?;
            i = i.saturating_add(1);
            let keyword_text = at(i).map(text);
            let keyword = match (kind, keyword_text.as_deref()) {
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
                    .filter(|t| !t.kind.is_quoted())
                    .and_then(|t| text(t).parse::<u32>().ok())
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
            let blob_text = text(blob);
            let bytes = if ds {
                hex(&blob_text)
            } else {
                base64_decode(&blob_text)
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
            if at(i).is_none_or(|t| t.kind != TokenKind::Semicolon) {
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
