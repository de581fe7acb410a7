//! The end-to-end tests: the real `bulwark` binary, and the peer servers and
//! tools it must work with, as processes on loopback. One test binary with a
//! module per area (`cargo test -p bulwark --test it diff_knot::`), so the
//! harness in `support` and the dependencies are compiled and linked once.
//!
//! Under `cargo test` every test here is a thread of one process (nextest
//! gives each its own): a test must not change the process's environment or
//! working directory, nor install signal handlers; `support`'s globals (the
//! query-ID counter) are shared by all. See docs/testing.md.

mod support;

mod conformance_genreport;
mod defences_acl;
mod defences_edns;
mod defences_log_flood;
mod defences_rrl;
mod defences_tcp;
mod diff_knot;
mod dnssec_hsm;
mod dnssec_online;
mod dnssec_pq;
mod dnssec_rollover;
mod dnssec_sign;
mod flood;
mod interop_clients;
mod interop_cookies;
mod interop_dnstap;
mod interop_encrypted;
mod interop_quic;
mod interop_validation;
mod interop_xdp;
mod ops_control;
mod ops_metrics;
mod ops_service;
mod package_deb;
mod reload_under_load;
mod repl_catalog;
mod repl_config;
mod repl_durability;
mod repl_pipeline;
mod repl_primary;
mod repl_secondary;
mod repl_update;
mod repl_xot;
mod resolver_bogus_matrix;
mod resolver_dot_upstream;
mod resolver_flush;
mod resolver_internet;
mod resolver_keytrap;
mod resolver_ops;
mod resolver_own_scenarios;
mod resolver_poisoning;
mod resolver_rfc5011;
mod resolver_scenarios;
mod resolver_validation;
mod server_config;
mod server_e2e;
