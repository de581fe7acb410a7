//! Defences as pure policy: who may ask (ACLs), how much a network may be sent
//! (response rate limiting), and proof that a client owns its address (DNS
//! cookies). No sockets, no clock: time comes in as an argument.
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
pub mod rrl;

pub use acl::{Access, AccessError, Acl, AclError, Network, NetworkError};
pub use cookies::{CookieCheck, CookieSecret, SecretError, ServerCookies};
pub use rrl::{ResponseClass, Rrl, RrlConfig, RrlStats, RrlVerdict};
