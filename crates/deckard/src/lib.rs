//! Replays Deckard's resolver scenarios against a resolver under test.
//!
//! [Deckard](https://gitlab.nic.cz/knot/deckard) (CZ.NIC) describes a small
//! internet and a conversation with a resolver in a `.rpl` file: the answers
//! each authoritative server gives (`RANGE` blocks), the queries sent to the
//! resolver and the answers it must give (`STEP`s), and time passing. This
//! crate reads those files ([`parse`]), builds that internet in a private
//! network namespace ([`network`], [`bulwark_testkit::netns`]), starts the
//! resolver through the [`Resolver`] trait ([`unbound::Unbound`],
//! [`bulwark::Bulwark`]) and plays the steps ([`runner`]), matching answers
//! and answering the resolver's queries as Deckard does ([`matching`],
//! [`answer`]). [`report`] finds the scenarios, runs a selection and prints
//! the results by prefix. docs/testing.md says how to run it.
//!
//! The scenarios themselves stay outside the project (their licences are
//! Deckard's); see [`report::scenario_root`]. The project's own scenarios,
//! for what Deckard's set lacks, are in `scenarios/` here, and use a few
//! additions to the format (the configuration keys `forward-zone`,
//! `stub-zone`, `serve-stale` and `check-max-queries`, the `MATCH` elements
//! `tcp`, `udp` and `ttl`, an entry's `NO_EDNS`): docs/testing.md lists them.
//!
//! Test-only and never published: it is used by
//! `crates/bulwark/tests/it/resolver_scenarios.rs`. It does not take the
//! panic-free lints of the library crates, though it reports failures as
//! values rather than panicking, so that one broken scenario does not hide
//! the others.
#![deny(unsafe_code)]

pub mod answer;
pub mod bulwark;
pub mod config;
pub mod matching;
pub mod message;
pub mod network;
pub mod parse;
pub mod record;
pub mod report;
pub mod resolver;
pub mod runner;
pub mod scenario;
pub mod unbound;

pub use parse::{parse_file, parse_str, ParseError};
pub use report::{run_all, QminModes, Report, ScenarioResult};
pub use resolver::{Resolver, ResolverSettings, RunningResolver};
pub use runner::{run_once, RunOptions, Verdict};
pub use scenario::Scenario;
