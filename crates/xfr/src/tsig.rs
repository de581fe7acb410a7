//! TSIG, secret key transaction authentication (RFC 8945), for zone
//! transfers, NOTIFY, UPDATE and signed queries, as server and as client.
//!
//! - A client signs its request with [`sign_request`] and checks each message
//!   of the response with a [`ResponseVerifier`].
//! - A server checks a request with [`verify_request`], answers a failed check
//!   with [`write_tsig_error_response`], answers the request itself from the
//!   message without its TSIG ([`strip_tsig`]) and signs every response
//!   message with a [`ResponseSigner`].
//!
//! Time is an argument (Unix seconds); nothing here reads a clock. Signing a
//! message allocates nothing but, for a request, the returned MAC.

mod client;
mod key;
mod rdata;
mod server;

use core::fmt;

use bulwark_proto::message::ParseError;
use bulwark_proto::{Class, Name, Rcode};

pub use client::{sign_request, ResponseVerifier, MAX_UNSIGNED_RUN};
pub use key::{KeyRing, TsigAlgorithm, TsigKey, UnsupportedAlgorithm};
pub use rdata::{TsigRdata, MAX_TIME};
pub use server::{
    strip_tsig, verify_request, verify_request_view, write_tsig_error_response, ResponseSigner,
    VerifiedRequest,
};

/// The fudge bulwark puts in requests it signs: RFC 8945 §10 recommends 300 s.
pub const DEFAULT_FUDGE: u16 = 300;

/// Why a message could not be signed. Nothing was appended when this is returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TsigError {
    #[error("message is shorter than its 12-octet header")]
    ShortMessage,
    #[error("the additional section already counts 65535 records")]
    TooManyRecords,
    #[error("time {0} does not fit the 48-bit Time Signed field")]
    TimeOutOfRange(u64),
    #[error("a MAC of {len} octets is outside what RFC 8945 §5.2.2.1 allows for {algorithm}")]
    BadTruncation {
        len: usize,
        algorithm: TsigAlgorithm,
    },
}

/// Why a TSIG record cannot be interpreted: the message gets FORMERR
/// (RFC 8945 §5.2, §5.2.2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MalformedTsig {
    #[error("message does not parse: {0}")]
    Message(ParseError),
    #[error("TSIG rdata: expected {what} at rdata offset {at}")]
    Rdata { at: usize, what: &'static str },
    #[error("TSIG class is {0:?}, not ANY")]
    Class(Class),
    #[error("TSIG TTL is {0}, not 0")]
    Ttl(u32),
    #[error("MAC of {len} octets is longer than the {max} the algorithm makes")]
    MacTooLong { len: usize, max: usize },
    #[error("MAC of {len} octets is shorter than the {min} RFC 8945 §5.2.2.1 allows")]
    MacTooShort { len: usize, min: usize },
}

/// Why a signed message was not accepted. The server answers the first five
/// kinds ([`write_tsig_error_response`]); the others arise only on the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TsigFailure {
    /// FORMERR.
    #[error("malformed TSIG: {0}")]
    Malformed(MalformedTsig),
    /// BADKEY: the key name and algorithm are not a key we hold (an
    /// unsupported algorithm, such as hmac-md5, is reported this way too).
    #[error("no key {key} with algorithm {algorithm}")]
    BadKey {
        key: Box<Name>,
        algorithm: Box<Name>,
    },
    /// BADSIG: the MAC does not verify.
    #[error("the MAC does not verify")]
    BadSig,
    /// BADTIME: the MAC verified but the time is outside Time Signed ± Fudge.
    #[error("time signed {time_signed} is more than {fudge} s from now ({now})")]
    BadTime {
        time_signed: u64,
        fudge: u16,
        now: u64,
    },
    /// BADTRUNC: the MAC verified but is shorter than the key's policy allows
    /// (RFC 8945 §5.2.4).
    #[error("MAC truncated to {len} octets, the key requires {min}")]
    BadTrunc { len: usize, min: usize },
    /// The response (or its first message) carries no TSIG (RFC 8945 §5.4).
    #[error("the response is not signed")]
    Unsigned,
    /// More than [`MAX_UNSIGNED_RUN`] messages in a row without a TSIG (RFC 8945 §5.3.1).
    #[error("more than {MAX_UNSIGNED_RUN} unsigned messages in a row")]
    TooManyUnsigned,
    /// The response ended on an unsigned message (RFC 8945 §5.3.1).
    #[error("the last message of the response is not signed")]
    LastUnsigned,
    /// The server answered with a TSIG error. `server_time` is the server's
    /// clock from a BADTIME answer's Other Data.
    #[error("the server answered TSIG error {error}")]
    ServerError {
        error: TsigRcode,
        server_time: Option<u64>,
    },
}

impl TsigFailure {
    /// The header rcode a server answers with: FORMERR for a malformed TSIG,
    /// NOTAUTH for the TSIG errors (RFC 8945 §5.2); `None` for client-side kinds.
    pub fn rcode(&self) -> Option<Rcode> {
        match self {
            TsigFailure::Malformed(_) => Some(Rcode::FORMERR),
            TsigFailure::BadKey { .. }
            | TsigFailure::BadSig
            | TsigFailure::BadTime { .. }
            | TsigFailure::BadTrunc { .. } => Some(Rcode::NOTAUTH),
            _ => None,
        }
    }

    /// The value for the TSIG record's Error field, for the TSIG errors.
    pub fn tsig_error(&self) -> Option<TsigRcode> {
        match self {
            TsigFailure::BadKey { .. } => Some(TsigRcode::BADKEY),
            TsigFailure::BadSig => Some(TsigRcode::BADSIG),
            TsigFailure::BadTime { .. } => Some(TsigRcode::BADTIME),
            TsigFailure::BadTrunc { .. } => Some(TsigRcode::BADTRUNC),
            _ => None,
        }
    }
}

impl From<MalformedTsig> for TsigFailure {
    fn from(m: MalformedTsig) -> TsigFailure {
        TsigFailure::Malformed(m)
    }
}

/// The Error field of a TSIG record (RFC 8945 §3, §4.2): 16 bits, so not an
/// [`Rcode`] (whose 16 is BADVERS outside TSIG). Unknown values round-trip.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TsigRcode(pub u16);

impl TsigRcode {
    pub const NOERROR: TsigRcode = TsigRcode(0);
    pub const BADSIG: TsigRcode = TsigRcode(16);
    pub const BADKEY: TsigRcode = TsigRcode(17);
    pub const BADTIME: TsigRcode = TsigRcode(18);
    pub const BADMODE: TsigRcode = TsigRcode(19);
    pub const BADNAME: TsigRcode = TsigRcode(20);
    pub const BADALG: TsigRcode = TsigRcode(21);
    pub const BADTRUNC: TsigRcode = TsigRcode(22);
}

impl fmt::Display for TsigRcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match *self {
            TsigRcode::NOERROR => "NOERROR",
            TsigRcode::BADSIG => "BADSIG",
            TsigRcode::BADKEY => "BADKEY",
            TsigRcode::BADTIME => "BADTIME",
            TsigRcode::BADMODE => "BADMODE",
            TsigRcode::BADNAME => "BADNAME",
            TsigRcode::BADALG => "BADALG",
            TsigRcode::BADTRUNC => "BADTRUNC",
            TsigRcode(n) => return write!(f, "TSIG error {n}"),
        };
        f.write_str(name)
    }
}

impl fmt::Debug for TsigRcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
