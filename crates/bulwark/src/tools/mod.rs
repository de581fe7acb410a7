//! The subcommands other than `serve`: checks, the dnstap tools, offline
//! signing and keys, and what packages generate. Each takes its arguments
//! from `cli` and runs to an exit code.

pub mod check;
pub mod ctl;
pub mod dnstap;
pub mod generate_docs;
pub mod keys;
pub mod sign;
