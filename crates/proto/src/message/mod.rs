//! DNS messages: reading a received message in place, building a response into
//! a reused buffer, and the EDNS(0) pseudo-record (RFC 1035 §4, RFC 6891).

mod builder;
mod compress;
mod edns;
mod error_response;
pub mod freshness;
mod header;
pub mod padding;
#[cfg(feature = "parse-counter")]
pub mod parse_count;
mod peek;
mod truncate;
mod view;

pub use builder::{append_additional, append_opt, BuildError, Checkpoint, MessageBuilder};
pub use edns::{
    udp_response_limit, Edns, EdnsOption, EdnsOptions, OptRecord, DEFAULT_UDP_PAYLOAD,
    MIN_UDP_PAYLOAD, OPTION_COOKIE, OPTION_EDE, OPTION_NSID, OPTION_PADDING, OPTION_SUBNET,
    OPTION_TCP_KEEPALIVE,
};
pub use error_response::{first_question, write_error_response, write_not_implemented};
pub use header::{bits, Flags, Header, HEADER_LEN};
pub use peek::first_qtype;
pub use truncate::truncate_to_question;
pub use view::{MessageView, Question, QuestionWire, Questions, RecordView, Records};

use crate::name::NameError;
use crate::wire::WireError;

/// The three record sections of a message (the question section is separate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Section {
    Answer,
    Authority,
    Additional,
}

impl Section {
    pub(crate) fn index(self) -> usize {
        match self {
            Section::Answer => 0,
            Section::Authority => 1,
            Section::Additional => 2,
        }
    }
}

/// A message that could not be read: where, and what was wrong. Every kind is a
/// FORMERR for the sender (RFC 1035 §4.1.1), except that the server may choose to
/// drop rather than answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{kind} at offset {at}")]
pub struct ParseError {
    pub at: usize,
    pub kind: ParseErrorKind,
}

/// What was wrong with a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseErrorKind {
    #[error("message shorter than its 12-octet header")]
    ShortHeader,
    #[error("message ends before the records its header counts")]
    Truncated,
    #[error("bad name: {0}")]
    BadName(NameError),
    #[error("bytes after the last counted record")]
    TrailingData,
    #[error("OPT record outside the additional section")]
    OptNotInAdditional,
    #[error("OPT record owner is not the root")]
    OptOwnerNotRoot,
    #[error("more than one OPT record")]
    MultipleOpt,
    #[error("TSIG record is not the last record")]
    TsigNotLast,
    #[error("EDNS option runs past the end of the OPT data")]
    OptionTruncated,
    #[error("malformed EDNS option {code}")]
    BadOption { code: u16 },
}

impl ParseError {
    pub(crate) fn new(at: usize, kind: ParseErrorKind) -> ParseError {
        ParseError { at, kind }
    }
}

impl From<WireError> for ParseError {
    fn from(e: WireError) -> ParseError {
        match e {
            WireError::BadName { at, reason } => {
                ParseError::new(at, ParseErrorKind::BadName(reason))
            }
            WireError::ShortInput { at, .. }
            | WireError::RdataLength { at }
            | WireError::BadRdata { at, .. }
            | WireError::Malformed { at, .. } => ParseError::new(at, ParseErrorKind::Truncated),
        }
    }
}
