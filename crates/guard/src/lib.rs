//! Defences as pure policy: who may ask (ACLs), how much a network may be sent
//! (response rate limiting), proof that a client owns its address (DNS
//! cookies), and how many log lines a kind of event may write. No sockets, no
//! clock: time comes in as an argument.
#![forbid(unsafe_code)]
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::unreachable,
    clippy::todo,
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation
)]

pub mod acl;
pub mod cookies;
pub mod report_limit;
pub mod rrl;

pub use acl::{Access, AccessError, Acl, AclError, Network, NetworkError};
pub use cookies::{CookieCheck, CookieSecret, SecretError, ServerCookies};
pub use report_limit::{ReportLimit, DEFAULT_LINES_PER_SECOND};
pub use rrl::{ResponseClass, Rrl, RrlConfig, RrlStats, RrlVerdict};
