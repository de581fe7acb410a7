//! DNS wire and presentation formats: names, codes, record data, messages and EDNS.
//!
//! Pure: no I/O, no clock, no threads. Every function that reads bytes from the
//! network returns an error on bad input and never panics.
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

mod ascii_case;
pub mod class;
pub mod encoding;
pub mod message;
pub mod name;
pub mod opcode;
pub mod presentation;
pub mod rcode;
pub mod rdata;
pub mod record;
pub mod rtype;
pub mod wire;

pub use class::Class;
pub use message::{MessageBuilder, MessageView};
pub use name::{Name, NameError};
pub use opcode::Opcode;
pub use rcode::Rcode;
pub use rdata::Rdata;
pub use record::Record;
pub use rtype::Rtype;
