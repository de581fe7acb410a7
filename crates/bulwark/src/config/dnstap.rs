//! `[dnstap]` as written, and its validation (with the `--dnstap` flag laid
//! over it): where the frames go, which messages, and the queues' size.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use bulwark_dnstap::{KindSet, MessageKind};
use serde::Deserialize;
use toml::Spanned;

use super::source::Locate;
use crate::settings::{Destination, DnstapSettings};

/// Messages per worker queue when `queue_size` is not given: a sixth of a
/// second of a worker answering 50k queries a second (two messages each),
/// under 2 MB of queued frames.
pub const DEFAULT_QUEUE_SIZE: usize = 16384;
/// A queue larger than this is a typo, not a plan (memory is taken up front).
const MAX_QUEUE_SIZE: usize = 1 << 20;
/// Rotating files smaller than this would rotate on every few messages.
const MIN_FILE_MAX_BYTES: u64 = 4096;

/// `[dnstap]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DnstapSection {
    /// `file:PATH`, `unix:PATH` or `tcp:ADDR:PORT`; dnstap is on when given.
    pub destination: Option<Spanned<String>>,
    /// Message types to log, e.g. `["auth_query", "auth_response"]`.
    pub messages: Option<Vec<Spanned<String>>>,
    /// Sent in each message; defaults to the host name, `""` sends none.
    pub identity: Option<Spanned<String>>,
    /// Sent in each message; defaults to `bulwark VERSION`, `""` sends none.
    pub version: Option<Spanned<String>>,
    /// Entries per queue (one queue per UDP worker, one for all of TCP).
    pub queue_size: Option<Spanned<usize>>,
    /// A file destination is rotated once it reaches this size.
    pub file_max_bytes: Option<Spanned<u64>>,
}

impl DnstapSection {
    fn is_empty(&self) -> bool {
        self.destination.is_none()
            && self.messages.is_none()
            && self.identity.is_none()
            && self.version.is_none()
            && self.queue_size.is_none()
            && self.file_max_bytes.is_none()
    }
}

/// `[dnstap]`, on when a destination is given. The `--dnstap
/// file:PATH|unix:PATH|tcp:ADDR` flag overrides the section's destination (a
/// relative path in the flag is relative to the working directory; in the
/// file, to the file's directory).
pub fn build_dnstap(
    s: &DnstapSection,
    flag: Option<&str>,
    base_dir: &Path,
    recursion: bool,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> Option<DnstapSettings> {
    let before = problems.len();
    let max_bytes = file_max_bytes(s, loc, problems);
    let destination = match (flag, &s.destination) {
        (Some(f), _) => match parse_destination(f, Path::new(""), max_bytes) {
            Ok(d) => Some(d),
            Err(e) => {
                problems.push(format!("--dnstap: {e}"));
                None
            }
        },
        (None, Some(d)) => match parse_destination(d.get_ref(), base_dir, max_bytes) {
            Ok(dest) => {
                if max_bytes.is_some() && !matches!(dest, Destination::File { .. }) {
                    if let Some(m) = &s.file_max_bytes {
                        problems.push(
                            loc.at(
                                m.span(),
                                "file_max_bytes: only a file: destination is rotated by size"
                                    .to_string(),
                            ),
                        );
                    }
                }
                Some(dest)
            }
            Err(e) => {
                problems.push(loc.at(d.span(), format!("destination: {e}")));
                None
            }
        },
        (None, None) => {
            if !s.is_empty() {
                problems.push(loc.at(
                    first_span(s),
                    "[dnstap]: `destination` is missing (file:PATH, unix:PATH or tcp:ADDR:PORT)"
                        .to_string(),
                ));
            }
            None
        }
    };
    let kinds = match s.messages.as_deref() {
        Some(items) => message_kinds(items, loc, problems),
        None if recursion => KindSet::auth()
            .with(MessageKind::ClientQuery)
            .with(MessageKind::ClientResponse),
        None => KindSet::auth(),
    };
    let queue_size = match &s.queue_size {
        None => DEFAULT_QUEUE_SIZE,
        Some(q) if (1..=MAX_QUEUE_SIZE).contains(q.get_ref()) => *q.get_ref(),
        Some(q) => {
            problems.push(loc.at(
                q.span(),
                format!("queue_size: must be between 1 and {MAX_QUEUE_SIZE}"),
            ));
            DEFAULT_QUEUE_SIZE
        }
    };
    let identity = match &s.identity {
        Some(i) => non_empty(i.get_ref()),
        None => host_name(),
    };
    let version = match &s.version {
        Some(v) => non_empty(v.get_ref()),
        None => Some(default_version().into_bytes()),
    };
    if problems.len() != before {
        return None;
    }
    Some(DnstapSettings {
        destination: destination?,
        kinds,
        identity,
        version,
        queue_size,
    })
}

fn file_max_bytes(s: &DnstapSection, loc: &dyn Locate, problems: &mut Vec<String>) -> Option<u64> {
    let m = s.file_max_bytes.as_ref()?;
    if *m.get_ref() < MIN_FILE_MAX_BYTES {
        problems.push(loc.at(
            m.span(),
            format!("file_max_bytes: must be at least {MIN_FILE_MAX_BYTES}"),
        ));
        return None;
    }
    Some(*m.get_ref())
}

/// Where the first key of a section without `destination` is, for the message.
fn first_span(s: &DnstapSection) -> std::ops::Range<usize> {
    let spans = [
        s.messages
            .as_ref()
            .and_then(|m| m.first())
            .map(Spanned::span),
        s.identity.as_ref().map(Spanned::span),
        s.version.as_ref().map(Spanned::span),
        s.queue_size.as_ref().map(Spanned::span),
        s.file_max_bytes.as_ref().map(Spanned::span),
    ];
    spans
        .into_iter()
        .flatten()
        .min_by_key(|r| r.start)
        .unwrap_or(0..0)
}

/// `file:PATH`, `unix:PATH` or `tcp:ADDR:PORT`.
pub fn parse_destination(
    text: &str,
    base_dir: &Path,
    max_bytes: Option<u64>,
) -> Result<Destination, String> {
    let path = |p: &str| -> Result<PathBuf, String> {
        if p.is_empty() {
            Err(format!("`{text}`: the path is empty"))
        } else {
            Ok(base_dir.join(p))
        }
    };
    match text.split_once(':') {
        Some(("file", p)) => Ok(Destination::File {
            path: path(p)?,
            max_bytes,
        }),
        Some(("unix", p)) => Ok(Destination::Unix(path(p)?)),
        Some(("tcp", a)) => a
            .parse::<SocketAddr>()
            .map(Destination::Tcp)
            .map_err(|_| format!("`{text}`: expected tcp:ADDRESS:PORT, e.g. tcp:127.0.0.1:6000")),
        _ => Err(format!(
            "`{text}`: expected file:PATH, unix:PATH or tcp:ADDRESS:PORT"
        )),
    }
}

/// `messages`, when given. Absent, it means AUTH_QUERY and AUTH_RESPONSE,
/// the two an authoritative server produces, and with `[resolver]` also
/// CLIENT_QUERY and CLIENT_RESPONSE, what a resolver's clients see.
fn message_kinds(
    items: &[Spanned<String>],
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> KindSet {
    let mut kinds = KindSet::empty();
    for item in items {
        match MessageKind::from_str(item.get_ref()) {
            Ok(k) => kinds = kinds.with(k),
            Err(_) => {
                let valid: Vec<String> = MessageKind::ALL
                    .iter()
                    .map(|k| k.name().to_ascii_lowercase())
                    .collect();
                problems.push(loc.at(
                    item.span(),
                    format!(
                        "messages: unknown message type `{}`; expected one of: {}",
                        item.get_ref(),
                        valid.join(", ")
                    ),
                ));
            }
        }
    }
    kinds
}

fn non_empty(s: &str) -> Option<Vec<u8>> {
    (!s.is_empty()).then(|| s.as_bytes().to_vec())
}

/// The kernel's host name (what `hostname` prints), without spending `unsafe`
/// on gethostname(2).
fn host_name() -> Option<Vec<u8>> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    non_empty(name.trim())
}

pub fn default_version() -> String {
    format!("bulwark {}", env!("CARGO_PKG_VERSION"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;

    struct Plain;
    impl Locate for Plain {
        fn at(&self, span: std::ops::Range<usize>, message: String) -> String {
            format!("at {}: {message}", span.start)
        }
    }

    fn section(toml_text: &str) -> DnstapSection {
        toml::from_str(toml_text).unwrap()
    }

    fn resolve(s: &DnstapSection, flag: Option<&str>) -> (Option<DnstapSettings>, Vec<String>) {
        let mut problems = Vec::new();
        let r = build_dnstap(
            s,
            flag,
            Path::new("/etc/bulwark"),
            false,
            &Plain,
            &mut problems,
        );
        (r, problems)
    }

    #[test]
    fn absent_section_and_no_flag_is_off() {
        let (r, p) = resolve(&DnstapSection::default(), None);
        assert!(r.is_none());
        assert!(p.is_empty());
    }

    #[test]
    fn relative_file_resolves_against_the_config_directory() {
        let s = section("destination = \"file:tap/dnstap.fstrm\"\nfile_max_bytes = 1000000");
        let (r, p) = resolve(&s, None);
        assert!(p.is_empty(), "{p:?}");
        let r = r.unwrap();
        assert_eq!(
            r.destination,
            Destination::File {
                path: PathBuf::from("/etc/bulwark/tap/dnstap.fstrm"),
                max_bytes: Some(1_000_000)
            }
        );
        assert!(r.kinds.contains(MessageKind::AuthQuery));
        assert!(r.kinds.contains(MessageKind::AuthResponse));
        assert!(!r.kinds.contains(MessageKind::ClientQuery));
        assert_eq!(r.queue_size, DEFAULT_QUEUE_SIZE);
        assert_eq!(r.version, Some(default_version().into_bytes()));
    }

    #[test]
    fn flag_overrides_the_destination_and_keeps_the_rest() {
        let s = section("destination = \"file:/x\"\nidentity = \"ns1\"\nqueue_size = 10");
        let (r, p) = resolve(&s, Some("tcp:127.0.0.1:6000"));
        assert!(p.is_empty(), "{p:?}");
        let r = r.unwrap();
        assert_eq!(
            r.destination,
            Destination::Tcp("127.0.0.1:6000".parse().unwrap())
        );
        assert_eq!(r.identity, Some(b"ns1".to_vec()));
        assert_eq!(r.queue_size, 10);
    }

    #[test]
    fn flag_alone_turns_dnstap_on_for_auth_messages() {
        let (r, p) = resolve(&DnstapSection::default(), Some("unix:/run/tap.sock"));
        assert!(p.is_empty(), "{p:?}");
        let r = r.unwrap();
        assert_eq!(
            r.destination,
            Destination::Unix(PathBuf::from("/run/tap.sock"))
        );
        assert_eq!(r.kinds, KindSet::auth());
    }

    #[test]
    fn messages_are_chosen_one_by_one() {
        let s = section(
            "destination = \"unix:/s\"\nmessages = [\"auth_response\", \"RESOLVER_QUERY\"]",
        );
        let (r, p) = resolve(&s, None);
        assert!(p.is_empty(), "{p:?}");
        let k = r.unwrap().kinds;
        assert!(k.contains(MessageKind::AuthResponse));
        assert!(k.contains(MessageKind::ResolverQuery));
        assert!(!k.contains(MessageKind::AuthQuery));
    }

    #[test]
    fn unknown_message_type_lists_the_valid_ones() {
        let s = section("destination = \"unix:/s\"\nmessages = [\"auth_query\", \"auth_answer\"]");
        let (r, p) = resolve(&s, None);
        assert!(r.is_none());
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].contains("`auth_answer`"), "{}", p[0]);
        assert!(
            p[0].contains("auth_query, auth_response, resolver_query"),
            "{}",
            p[0]
        );
        assert!(p[0].contains("update_response"), "{}", p[0]);
    }

    #[test]
    fn bad_destinations_are_explained() {
        for (text, expect) in [
            (
                "ftp:/x",
                "expected file:PATH, unix:PATH or tcp:ADDRESS:PORT",
            ),
            ("/var/log/x", "expected file:PATH"),
            ("file:", "the path is empty"),
            ("tcp:localhost", "expected tcp:ADDRESS:PORT"),
        ] {
            let s = section(&format!("destination = \"{text}\""));
            let (r, p) = resolve(&s, None);
            assert!(r.is_none(), "{text}");
            assert!(p.iter().any(|m| m.contains(expect)), "{text}: {p:?}");
            let (_, p) = resolve(&DnstapSection::default(), Some(text));
            assert!(
                p.iter().any(|m| m.starts_with("--dnstap: ")),
                "{text}: {p:?}"
            );
        }
    }

    #[test]
    fn section_without_destination_is_an_error() {
        let s = section("identity = \"ns1\"");
        let (r, p) = resolve(&s, None);
        assert!(r.is_none());
        assert!(
            p.iter().any(|m| m.contains("`destination` is missing")),
            "{p:?}"
        );
    }

    #[test]
    fn out_of_range_sizes_are_errors() {
        let s = section("destination = \"unix:/s\"\nqueue_size = 0");
        assert!(resolve(&s, None).1.iter().any(|m| m.contains("queue_size")));
        let s = section("destination = \"file:/s\"\nfile_max_bytes = 10");
        assert!(resolve(&s, None)
            .1
            .iter()
            .any(|m| m.contains("file_max_bytes")));
        let s = section("destination = \"unix:/s\"\nfile_max_bytes = 100000");
        assert!(resolve(&s, None)
            .1
            .iter()
            .any(|m| m.contains("only a file")));
    }

    #[test]
    fn empty_identity_and_version_send_none() {
        let s = section("destination = \"unix:/s\"\nidentity = \"\"\nversion = \"\"");
        let r = resolve(&s, None).0.unwrap();
        assert_eq!(r.identity, None);
        assert_eq!(r.version, None);
    }
}
