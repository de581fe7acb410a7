//! The configuration as a whole: a file's text in, `Settings` or every
//! problem (each at its `FILE:LINE:COL`) out.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::net::SocketAddr;
use std::time::Duration;

use bulwark_guard::Access;
use bulwark_proto::Name;

use super::server::DEFAULT_RESPONSE_CACHE;
use super::source::line_col;
use super::*;
use crate::settings::Keystore;
use bulwark_dnssec::Algorithm;

fn settings(text: &str) -> Result<Settings, ConfigError> {
    let file = Path::new("/etc/bulwark/bulwark.toml");
    let parsed = parse_file(file, text)?;
    let src = Source { file, text };
    resolve(
        parsed,
        &ServeArgs::default(),
        &src,
        Some(file.to_path_buf()),
        Path::new("/etc/bulwark"),
    )
}

#[test]
fn line_col_counts_from_one_in_characters() {
    assert_eq!(line_col("ab\ncdé f", 0), (1, 1));
    assert_eq!(line_col("ab\ncdé f", 3), (2, 1));
    assert_eq!(line_col("ab\ncdé f", 8), (2, 5));
}

#[test]
fn unknown_key_names_file_line_and_column() {
    let err = settings("[server]\nthreads = 2\nlisten_on = []\n").unwrap_err();
    assert_eq!(err.problems.len(), 1);
    assert!(
        err.problems[0].starts_with("/etc/bulwark/bulwark.toml:3:1: "),
        "{err}"
    );
    assert!(err.problems[0].contains("listen_on"), "{err}");
}

#[test]
fn empty_file_gives_the_defaults() {
    let s = settings("").unwrap();
    assert_eq!(s.max_udp_payload, 1232);
    assert_eq!(s.tcp_idle_timeout, Duration::from_secs(10));
    assert_eq!(s.tcp_max_connections, 1000);
    assert_eq!(s.listen.len(), 2);
    assert!(!s.listen_given);
    assert!(s.control_socket.is_none());
    assert_eq!(s.chaos, ChaosIdentity::default());
}

#[test]
fn zone_paths_are_relative_to_the_config_file() {
    let s = settings("[[zone]]\norigin = \"Example.COM\"\nfile = \"zones/example.com.zone\"\n")
        .unwrap();
    assert_eq!(s.zones.len(), 1);
    assert_eq!(s.zones[0].origin.to_string(), "example.com.");
    assert_eq!(
        s.zones[0].path,
        Some(PathBuf::from("/etc/bulwark/zones/example.com.zone"))
    );
}

#[test]
fn duplicate_zone_names_both_places() {
    let text = "[[zone]]\norigin = \"a.test.\"\nfile = \"a\"\n[[zone]]\norigin = \"A.test\"\nfile = \"b\"\n";
    let err = settings(text).unwrap_err();
    assert_eq!(err.problems.len(), 1, "{err}");
    assert!(
        err.problems[0].starts_with("/etc/bulwark/bulwark.toml:5:10: "),
        "{err}"
    );
    assert!(err.problems[0].contains("bulwark.toml:2:10"), "{err}");
}

#[test]
fn bad_address_and_bad_origin_are_each_reported_where_they_are() {
    let text = "[server]\nlisten = [\"127.0.0.1\"]\n[[zone]]\norigin = \"a..b\"\nfile = \"x\"\n";
    let err = settings(text).unwrap_err();
    assert_eq!(err.problems.len(), 2, "{err}");
    assert!(
        err.problems[0].starts_with("/etc/bulwark/bulwark.toml:2:11: listen"),
        "{err}"
    );
    assert!(
        err.problems[1].starts_with("/etc/bulwark/bulwark.toml:4:10: origin"),
        "{err}"
    );
}

#[test]
fn response_cache_size_is_bounded_and_zero_turns_it_off() {
    assert_eq!(
        settings("[server]\n").unwrap().response_cache,
        DEFAULT_RESPONSE_CACHE
    );
    assert_eq!(
        settings("[server]\nresponse_cache = 0\n")
            .unwrap()
            .response_cache,
        0
    );
    let err = settings("[server]\nresponse_cache = 100000000\n").unwrap_err();
    assert!(err.problems[0].contains(":2:18: response_cache"), "{err}");
}

#[test]
fn small_udp_payload_is_rejected() {
    let err = settings("[server]\nmax_udp_payload = 100\n").unwrap_err();
    assert!(err.problems[0].contains(":2:19: max_udp_payload"), "{err}");
}

#[test]
fn flags_replace_listen_and_add_zones() {
    let file = Path::new("b.toml");
    let text =
        "[server]\nlisten = [\"127.0.0.1:53\"]\n[[zone]]\norigin = \"a.test.\"\nfile = \"a\"\n";
    let args = ServeArgs {
        listen: vec!["[::1]:5353".parse().unwrap()],
        zone: vec!["b.test=/z/b".to_string()],
        threads: Some(3),
        ..ServeArgs::default()
    };
    let s = resolve(
        parse_file(file, text).unwrap(),
        &args,
        &Source { file, text },
        None,
        Path::new(""),
    )
    .unwrap();
    assert_eq!(s.listen, vec!["[::1]:5353".parse::<SocketAddr>().unwrap()]);
    assert_eq!(s.zones.len(), 2);
    assert_eq!(s.zones[1].path, Some(PathBuf::from("/z/b")));
    assert_eq!(s.threads, 3);
}

#[test]
fn chaos_identity_is_off_unless_set() {
    let s = settings("[server]\nidentity = \"ns1\"\n").unwrap();
    assert_eq!(s.chaos.id_server.as_deref(), Some("ns1"));
    assert_eq!(s.chaos.version, None);
}

#[test]
fn defences_default_to_rrl_on_with_loopback_exempt_and_cookies_on() {
    let s = settings("").unwrap();
    assert_eq!(s.rrl.responses_per_second, 20);
    assert_eq!(s.rrl.slip, 2);
    assert!(s
        .rrl
        .exempt
        .iter()
        .any(|n| n.contains("127.0.0.1".parse().unwrap())));
    assert!(s.cookies.enabled);
    assert_eq!(s.cookies.require_for_udp_above, None);
    assert!(s.listener_acl.is_none());
    assert!(s.zone_acls.is_empty());
    assert_eq!(s.nsid, None);
}

#[test]
fn named_acl_denies_first_then_allows_only_its_list() {
    let text = "[server]\nacl = \"inside\"\n[acl.inside]\nallow = [\"192.0.2.0/24\"]\ndeny = [\"192.0.2.7\"]\naction = \"drop\"\n";
    let s = settings(text).unwrap();
    let acl = s.listener_acl.unwrap();
    assert_eq!(acl.check("192.0.2.1".parse().unwrap()), Access::Allow);
    assert_eq!(acl.check("192.0.2.7".parse().unwrap()), Access::Drop);
    assert_eq!(acl.check("198.51.100.1".parse().unwrap()), Access::Drop);
}

#[test]
fn acl_with_only_deny_allows_everyone_else_and_refuses_by_default() {
    let text = "[acl.block]\ndeny = [\"2001:db8::/32\"]\n[[zone]]\norigin = \"a.test\"\nfile = \"a\"\nacl = \"block\"\n";
    let s = settings(text).unwrap();
    let apex: Name = "a.test.".parse().unwrap();
    use bulwark_auth::ZoneAccess;
    assert_eq!(
        s.zone_acls.access(&apex, "2001:db8::1".parse().unwrap()),
        Access::Refuse
    );
    assert_eq!(
        s.zone_acls.access(&apex, "2001:db9::1".parse().unwrap()),
        Access::Allow
    );
}

#[test]
fn bad_network_and_unknown_acl_name_say_where() {
    let text = "[server]\nacl = \"nope\"\n[acl.a]\nallow = [\"10.0.0.0/33\"]\n";
    let err = settings(text).unwrap_err();
    assert_eq!(err.problems.len(), 2, "{err}");
    assert!(
        err.problems[0].starts_with("/etc/bulwark/bulwark.toml:4:10: allow"),
        "{err}"
    );
    assert!(
        err.problems[1].starts_with("/etc/bulwark/bulwark.toml:2:7: acl: no [acl.nope]"),
        "{err}"
    );
    assert!(err.problems[1].contains("defined: a"), "{err}");
}

#[test]
fn rrl_and_cookies_sections_are_read() {
    let text = "[rrl]\nresponses_per_second = 0\nslip = 1\nexempt = []\n[cookies]\nsecret = \"000102030405060708090a0b0c0d0e0f\"\nrequire_for_udp_above = 512\n";
    let s = settings(text).unwrap();
    assert_eq!(s.rrl.responses_per_second, 0);
    assert_eq!(s.rrl.slip, 1);
    assert!(s.rrl.exempt.is_empty());
    assert_eq!(s.cookies.secret.unwrap()[15], 15);
    assert_eq!(s.cookies.require_for_udp_above, Some(512));
}

#[test]
fn short_cookie_secret_and_both_nsid_forms_are_errors() {
    let text = "[server]\nnsid = \"a\"\nnsid_hex = \"61\"\n[cookies]\nsecret = \"abcd\"\n";
    let err = settings(text).unwrap_err();
    assert_eq!(err.problems.len(), 2, "{err}");
    assert!(
        err.problems.iter().any(|p| p.contains(":3:12: nsid_hex")),
        "{err}"
    );
    assert!(
        err.problems.iter().any(|p| p.contains(":5:10: secret")),
        "{err}"
    );
}

#[test]
fn nsid_hex_gives_raw_octets() {
    let s = settings("[server]\nnsid_hex = \"00ff\"\n").unwrap();
    assert_eq!(s.nsid, Some(vec![0, 255]));
}

#[test]
fn listener_tables_add_addresses_with_their_own_acl() {
    let text = "[server]\nlisten = [\"127.0.0.1:53\"]\nacl = \"all\"\n[acl.all]\ndeny = []\n[acl.lan]\nallow = [\"10.0.0.0/8\"]\n[[listener]]\naddress = \"10.0.0.1:53\"\nacl = \"lan\"\n[[listener]]\naddress = \"10.0.0.2:53\"\n";
    let s = settings(text).unwrap();
    assert_eq!(s.listen.len(), 3);
    assert_eq!(s.listener_acls.len(), 1);
    assert_eq!(
        s.listener_acls[0].0,
        "10.0.0.1:53".parse::<SocketAddr>().unwrap()
    );
    assert_eq!(
        s.listener_acls[0].1.check("192.0.2.1".parse().unwrap()),
        Access::Refuse
    );
    assert!(s.listener_acl.is_some());
}

#[test]
fn listener_tables_alone_replace_the_default_addresses() {
    let s = settings("[[listener]]\naddress = \"[::1]:5353\"\n").unwrap();
    assert_eq!(s.listen, vec!["[::1]:5353".parse::<SocketAddr>().unwrap()]);
    assert!(s.listen_given);
}

#[test]
fn a_tls_listener_serves_dot_with_its_files_beside_the_configuration() {
    let text = "[server]\nlisten = [\"127.0.0.1:53\"]\ntls_idle_timeout = 30\ntls_max_queries_per_connection = 0\n[[listener]]\naddress = \"127.0.0.1:853\"\ntransport = \"tls\"\ncertificate = \"tls/cert.pem\"\nkey = \"/keys/key.pem\"\n";
    let s = settings(text).unwrap();
    // Not a UDP and TCP address as well.
    assert_eq!(
        s.listen,
        vec!["127.0.0.1:53".parse::<SocketAddr>().unwrap()]
    );
    assert_eq!(s.tls_listeners.len(), 1);
    let l = &s.tls_listeners[0];
    assert_eq!(l.address, "127.0.0.1:853".parse::<SocketAddr>().unwrap());
    assert_eq!(l.kind, crate::settings::Encrypted::Dot);
    assert_eq!(l.certificate, Path::new("/etc/bulwark/tls/cert.pem"));
    assert_eq!(l.key, Path::new("/keys/key.pem"));
    assert_eq!(s.tls_limits.idle_timeout, Duration::from_secs(30));
    assert_eq!(s.tls_limits.max_queries_per_connection, 0);
    assert_eq!(s.tls_limits.handshake_timeout, Duration::from_secs(5));
    let defaults = settings("").unwrap();
    assert!(defaults.tls_listeners.is_empty());
    assert_eq!(defaults.tls_limits.idle_timeout, Duration::from_secs(20));
    assert_eq!(defaults.tls_limits.max_queries_per_connection, 10_000);
}

#[test]
fn a_quic_listener_may_share_its_address_with_a_tls_one_but_not_with_dns() {
    let text = "[[listener]]\naddress = \"127.0.0.1:853\"\ntransport = \"tls\"\ncertificate = \"c.pem\"\nkey = \"k.pem\"\n[[listener]]\naddress = \"127.0.0.1:853\"\ntransport = \"quic\"\ncertificate = \"c.pem\"\nkey = \"k.pem\"\n";
    let s = settings(text).unwrap();
    let kinds: Vec<_> = s.tls_listeners.iter().map(|l| l.kind.clone()).collect();
    assert_eq!(
        kinds,
        vec![
            crate::settings::Encrypted::Dot,
            crate::settings::Encrypted::Doq
        ]
    );
    let clash = "[[listener]]\naddress = \"127.0.0.1:53\"\n[[listener]]\naddress = \"127.0.0.1:53\"\ntransport = \"quic\"\ncertificate = \"c.pem\"\nkey = \"k.pem\"\nhttp3 = true\n";
    let err = settings(clash).unwrap_err();
    let all = err.problems.join("\n");
    assert!(
        all.contains("bulwark.toml:4:11: address: 127.0.0.1:53 is given twice"),
        "{all}"
    );
    assert!(
        all.contains("http3: only for transport = \"https\""),
        "{all}"
    );
}

#[test]
fn an_https_listener_serves_doh_at_its_path() {
    let text = "[[listener]]\naddress = \"127.0.0.1:443\"\ntransport = \"https\"\ncertificate = \"c.pem\"\nkey = \"k.pem\"\n[[listener]]\naddress = \"127.0.0.1:8443\"\ntransport = \"https\"\npath = \"/q\"\nhttp3 = true\ncertificate = \"c.pem\"\nkey = \"k.pem\"\n";
    let s = settings(text).unwrap();
    let paths: Vec<_> = s.tls_listeners.iter().map(|l| l.kind.clone()).collect();
    assert_eq!(
        paths,
        vec![
            crate::settings::Encrypted::Doh {
                path: "/dns-query".to_string(),
                http3: false,
            },
            crate::settings::Encrypted::Doh {
                path: "/q".to_string(),
                http3: true,
            },
        ]
    );
    let bad = "[[listener]]\naddress = \"127.0.0.1:443\"\ntransport = \"https\"\npath = \"dns?x\"\ncertificate = \"c.pem\"\nkey = \"k.pem\"\n[[listener]]\naddress = \"127.0.0.1:53\"\npath = \"/q\"\n";
    let err = settings(bad).unwrap_err();
    let all = err.problems.join("\n");
    assert!(
        all.contains("bulwark.toml:4:8: path: `dns?x` is not an absolute path"),
        "{all}"
    );
    assert!(
        all.contains("bulwark.toml:9:8: path: only for transport = \"https\""),
        "{all}"
    );
}

#[test]
fn tls_listener_mistakes_say_where() {
    let text = "[[listener]]\naddress = \"127.0.0.1:853\"\ntransport = \"tls\"\n[[listener]]\naddress = \"127.0.0.1:854\"\ntransport = \"doq\"\n[[listener]]\naddress = \"127.0.0.1:853\"\n[server]\ntls_handshake_timeout = 0\n";
    let err = settings(text).unwrap_err();
    let all = err.problems.join("\n");
    assert_eq!(err.problems.len(), 4, "{all}");
    assert!(
        all.contains("bulwark.toml:2:11: listener 127.0.0.1:853: an encrypted transport needs `certificate` and `key`"),
        "{all}"
    );
    assert!(
        all.contains("bulwark.toml:6:13: transport: `doq` is not one of"),
        "{all}"
    );
    assert!(
        all.contains("bulwark.toml:8:11: address: 127.0.0.1:853 is given twice"),
        "{all}"
    );
    assert!(
        all.contains("tls_handshake_timeout: must be at least 1 second"),
        "{all}"
    );
}

#[test]
fn pkcs11_table_and_keystore_mistakes_say_where() {
    let text = "[pkcs11]\nmodule = \"/usr/lib/softhsm/libsofthsm2.so\"\ntoken_label = \"bulwark\"\npin = \"1234\"\n[dnssec_policy.hsm]\nkeystore = \"pkcs11\"\n[[zone]]\norigin = \"a.test\"\nfile = \"a\"\ndnssec_policy = \"hsm\"\n";
    let s = settings(text).unwrap();
    let signing = s.zones[0].signing.as_ref().unwrap();
    let token = signing.pkcs11.as_ref().unwrap();
    assert_eq!(token.token_label, "bulwark");
    assert_eq!(signing.policy.keystore, Keystore::Pkcs11);

    let text = "[pkcs11]\nmodule = \"/m.so\"\npin = \"1\"\npin_file = \"pin\"\n";
    let err = settings(text).unwrap_err();
    assert!(
        err.problems
            .iter()
            .any(|p| p.contains("bulwark.toml:4:12: pin_file: give `pin` or `pin_file`")),
        "{err}"
    );
    assert!(
        err.problems
            .iter()
            .any(|p| p.contains("`token_label` is required")),
        "{err}"
    );

    let text = "[dnssec_policy.hsm]\nkeystore = \"pkcs12\"\n[dnssec_policy.h2]\nkeystore = \"pkcs11\"\n[[zone]]\norigin = \"a.test\"\nfile = \"a\"\ndnssec_policy = \"h2\"\n";
    let err = settings(text).unwrap_err();
    assert!(
        err.problems
            .iter()
            .any(|p| p.contains("bulwark.toml:2:12: keystore: `pkcs12`")),
        "{err}"
    );
    assert!(
        err.problems.iter().any(|p| p
            .contains("bulwark.toml:8:17: dnssec_policy: [dnssec_policy.h2] keeps keys in pkcs11")),
        "{err}"
    );
}

#[test]
fn ml_dsa_policies_are_accepted_by_name_and_number_but_not_in_a_token() {
    for name in ["MLDSA44", "mldsa44", "18"] {
        let text = format!("[dnssec_policy.pq]\nalgorithm = \"{name}\"\n[[zone]]\norigin = \"a.test\"\nfile = \"a\"\ndnssec_policy = \"pq\"\n");
        let s = settings(&text).unwrap();
        let signing = s.zones[0].signing.as_ref().unwrap();
        assert_eq!(signing.policy.algorithm, Algorithm::MlDsa44, "{name}");
    }
    let text = "[pkcs11]\nmodule = \"/m.so\"\ntoken_label = \"t\"\npin = \"1\"\n[dnssec_policy.pq]\nalgorithm = \"MLDSA44\"\nkeystore = \"pkcs11\"\n";
    let err = settings(text).unwrap_err();
    assert!(
        err.problems.iter().any(|p| p.contains(
            "bulwark.toml:7:12: keystore: MLDSA44 keys cannot be kept in a PKCS#11 token"
        )),
        "{err}"
    );
    let err = settings("[dnssec_policy.pq]\nalgorithm = \"MLDSA65\"\n").unwrap_err();
    assert!(
        err.problems.iter().any(|p| p.contains(
            "bulwark.toml:2:13: algorithm: `MLDSA65` is not one of RSASHA256, RSASHA512, ECDSAP256SHA256, ECDSAP384SHA384, ED25519, MLDSA44"
        )),
        "{err}"
    );
}

#[test]
fn tcp_limits_map_from_the_server_table() {
    let s = settings("[server]\ntcp_max_connections_per_client = 3\ntcp_max_queries_per_connection = 9\ntcp_message_timeout = 0\n").unwrap();
    assert_eq!(s.tcp_limits.max_connections_per_client, 3);
    assert_eq!(s.tcp_limits.max_queries_per_connection, 9);
    assert_eq!(s.tcp_limits.message_timeout, Duration::ZERO);
}

#[test]
fn tls_forwarders_default_to_port_853_and_carry_their_name_or_pins() {
    let pin = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="; // SHA-256 of ""
    let text = format!(
        "[resolver]\n[[resolver.forward]]\nzone = \".\"\naddresses = [\"192.0.2.1\", \"192.0.2.2:8853\"]\n\
         tls = true\ntls_name = \"dns.example\"\ntls_ca_file = \"ca.pem\"\n\
         [[resolver.forward]]\nzone = \"corp.\"\naddresses = [\"192.0.2.3\"]\ntls = true\ntls_pin_sha256 = [\"{pin}\"]\n"
    );
    let r = settings(&text).unwrap().resolver.unwrap();
    let ports: Vec<u16> = r.tls_upstreams.iter().map(|u| u.address.port()).collect();
    assert_eq!(ports, vec![853, 8853, 853]);
    assert_eq!(r.tls_upstreams[0].name.as_deref(), Some("dns.example"));
    assert_eq!(
        r.tls_upstreams[0].ca_file.as_deref(),
        Some(Path::new("/etc/bulwark/ca.pem"))
    );
    assert_eq!(r.tls_upstreams[2].pins.len(), 1);
    assert_eq!(r.tls_upstreams[2].pins[0][..2], [0xe3, 0xb0]);
    // The engine is told the same addresses.
    assert_eq!(r.engine.forwards[0].addresses[0].port(), 853);

    let bad = "[resolver]\n[[resolver.forward]]\nzone = \".\"\naddresses = [\"192.0.2.1\"]\ntls_name = \"x\"\n\
               [[resolver.forward]]\nzone = \"a.\"\naddresses = [\"192.0.2.1\"]\ntls = true\ntls_pin_sha256 = [\"AAAA\"]\n";
    let err = settings(bad).unwrap_err().problems.join("\n");
    assert!(err.contains("tls_* settings need `tls = true`"), "{err}");
    assert!(
        err.contains("bulwark.toml:10:19: tls_pin_sha256: `AAAA` is not the base64"),
        "{err}"
    );
}

#[test]
fn a_remote_with_a_tls_name_is_asked_over_tls() {
    let text =
        "[remote.p]\naddress = [\"192.0.2.1:853\", \"192.0.2.2:853\"]\ntls_name = \"p.example\"\n\
                [remote.q]\naddress = \"192.0.2.3:53\"\n";
    let s = settings(text).unwrap();
    let addrs: Vec<String> = s
        .tls_remotes
        .iter()
        .map(|t| t.address.to_string())
        .collect();
    assert_eq!(addrs, vec!["192.0.2.1:853", "192.0.2.2:853"]);
    assert!(s
        .tls_remotes
        .iter()
        .all(|t| t.name.as_deref() == Some("p.example")));
}

#[test]
fn no_resolver_section_means_no_recursion() {
    assert!(settings("").unwrap().resolver.is_none());
}

#[test]
fn a_bare_resolver_section_recurses_for_loopback_from_the_iana_root() {
    let s = settings("[resolver]\n").unwrap();
    let r = s.resolver.expect("recursion on");
    assert_eq!(
        r.engine.root_hints.len(),
        crate::settings::IANA_ROOT_HINTS.len()
    );
    assert!(r.engine.qname_minimisation);
    assert!(!r.engine.query_localhost);
    // Validating, from IANA's root anchors.
    let v = r
        .engine
        .validation
        .as_ref()
        .expect("validation on by default");
    assert_eq!(v.anchors.len(), 2);
    assert!(v.anchors.iter().all(|a| a.owner.is_root()));
    assert_eq!(
        r.allow_recursion.check("127.0.0.1".parse().unwrap()),
        Access::Allow
    );
    assert_eq!(
        r.allow_recursion.check("::1".parse().unwrap()),
        Access::Allow
    );
    assert_eq!(
        r.allow_recursion.check("192.0.2.1".parse().unwrap()),
        Access::Refuse
    );
    // With a resolver, dnstap's default adds the client's messages.
    let s = settings("[resolver]\n[dnstap]\ndestination = \"file:/tmp/x.tap\"\n").unwrap();
    let kinds = s.dnstap.unwrap().kinds;
    assert!(kinds.contains(bulwark_dnstap::MessageKind::ClientQuery));
    assert!(kinds.contains(bulwark_dnstap::MessageKind::AuthQuery));
}

#[test]
fn resolver_settings_are_read_with_ports_and_forward_zones() {
    let s = settings(
        "[resolver]\nroot_hints = [\"192.0.2.1\", \"192.0.2.2:5353\", \"[2001:db8::1]:53\"]\n\
         qname_minimisation = false\nallow_recursion = [\"10.0.0.0/8\"]\ncache_size = 2097152\n\
         serve_stale = \"1d\"\nquery_timeout_ms = 300\n\n\
         [[resolver.forward]]\nzone = \"corp.example.\"\naddresses = [\"10.1.1.1\", \"10.1.1.2:5300\"]\nfirst = true\n",
    )
    .unwrap();
    let r = s.resolver.unwrap();
    let hints: Vec<String> = r.engine.root_hints.iter().map(|a| a.to_string()).collect();
    assert_eq!(
        hints,
        ["192.0.2.1:53", "192.0.2.2:5353", "[2001:db8::1]:53"]
    );
    assert!(!r.engine.qname_minimisation);
    assert_eq!(r.engine.cache_bytes, 2_097_152);
    assert_eq!(r.engine.stale.unwrap().max_stale_secs, 86_400);
    assert_eq!(r.engine.limits.query_timeout_ms, 300);
    assert_eq!(
        r.allow_recursion.check("127.0.0.1".parse().unwrap()),
        Access::Refuse
    );
    let f = &r.engine.forwards[0];
    assert_eq!(
        f.zone,
        Name::from_presentation(b"corp.example.", None).unwrap()
    );
    assert_eq!(f.addresses[1].to_string(), "10.1.1.2:5300");
    assert!(f.fallback_to_iteration);
}

#[test]
fn resolver_mistakes_name_their_line_and_column() {
    let err = settings(
        "[resolver]\nroot_hints = [\"192.0.2.1\", \"not an address\"]\n\
         allow_recursion = [\"10.0.0.0/33\"]\ncache_size = 10\nserve_stale = \"forever\"\n\n\
         [[resolver.forward]]\nzone = \"bad..name\"\naddresses = [\"10.0.0.1\"]\n",
    )
    .unwrap_err();
    let at = |line: usize| {
        err.problems
            .iter()
            .any(|p| p.starts_with(&format!("/etc/bulwark/bulwark.toml:{line}:")))
    };
    assert!(at(2) && at(3) && at(4) && at(5) && at(8), "{err}");
    assert_eq!(err.problems.len(), 5, "{err}");
    let err = settings("[resolver]\nrecursion = true\n").unwrap_err();
    assert!(
        err.problems[0].starts_with("/etc/bulwark/bulwark.toml:2:1: "),
        "{err}"
    );
}

#[test]
fn validation_takes_anchors_inline_and_from_files_or_is_turned_off() {
    let off = settings("[resolver]\ndnssec_validation = false\n").unwrap();
    assert!(off.resolver.unwrap().engine.validation.is_none());

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("anchors.key");
    std::fs::write(
        &file,
        "example. 3600 IN DNSKEY 257 3 13 mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpVXckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ==\n",
    )
    .unwrap();
    let text = format!(
        "[resolver]\ntrust_anchors = [\"test. DS 12345 13 2 {}\"]\n\
         trust_anchor_files = [\"{}\"]\nnegative_trust_anchors = [\"broken.example.\"]\nbogus_ttl = 30\n",
        "AB".repeat(32),
        file.display()
    );
    let s = settings(&text).unwrap();
    let v = s.resolver.unwrap().engine.validation.unwrap();
    let owners: Vec<String> = v.anchors.iter().map(|a| a.owner.to_string()).collect();
    // Given anchors replace the built-in root's.
    assert_eq!(owners, ["test.", "example."]);
    assert_eq!(v.negative_anchors.len(), 1);
    assert_eq!(v.bogus_ttl, 30);
}

#[test]
fn experimental_algorithms_are_off_by_default_and_named_to_turn_on() {
    let s = settings("[resolver]\n").unwrap();
    let v = s.resolver.unwrap().engine.validation.unwrap();
    assert!(!v.experimental_algorithms);
    let s = settings("[resolver]\nexperimental_algorithms = [\"falcon512\"]\n").unwrap();
    assert!(
        s.resolver
            .unwrap()
            .engine
            .validation
            .unwrap()
            .experimental_algorithms
    );
    let err = settings("[resolver]\nexperimental_algorithms = [\"FALCON512\", \"SPHINCS\"]\n")
        .unwrap_err();
    assert!(
        err.problems.iter().any(|p| p.contains(
            "bulwark.toml:2:41: [resolver] experimental_algorithms: `SPHINCS` is not one (FALCON512)"
        )),
        "{err}"
    );
}

#[test]
fn a_payload_offered_with_a_cookie_is_read_and_may_not_be_below_the_plain_one() {
    let s = settings("[resolver]\n").unwrap();
    assert_eq!(s.resolver.unwrap().engine.udp_payload_with_cookie, 1232);
    let s = settings("[resolver]\nudp_payload_with_cookie = 4096\n").unwrap();
    assert_eq!(s.resolver.unwrap().engine.udp_payload_with_cookie, 4096);
    let err = settings("[resolver]\nudp_payload_with_cookie = 600\n").unwrap_err();
    assert!(
        err.problems.iter().any(|p| p.contains(
            "bulwark.toml:2:27: [resolver] udp_payload_with_cookie: must be at least 1232"
        )),
        "{err}"
    );
}

#[test]
fn a_bad_trust_anchor_is_an_error_naming_where_it_is() {
    let err = settings("[resolver]\ntrust_anchors = [\"test. DS 12345 13 2 XYZ\"]\n").unwrap_err();
    assert!(
        err.problems[0].starts_with("/etc/bulwark/bulwark.toml:2:")
            && err.problems[0].contains("trust_anchors"),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.key");
    std::fs::write(&file, "; a comment\nexample. IN DS 1 13 2 nothex\n").unwrap();
    let err = settings(&format!(
        "[resolver]\ntrust_anchor_files = [\"{}\"]\n",
        file.display()
    ))
    .unwrap_err();
    assert!(
        err.problems[0].starts_with(&format!("{}:2:", file.display())),
        "the anchor file's own line: {err}"
    );
    let err =
        settings("[resolver]\ntrust_anchor_files = [\"/nonexistent/root.key\"]\n").unwrap_err();
    assert!(err.problems[0].contains("/nonexistent/root.key"), "{err}");
}

#[test]
fn udp_workers_are_threads_unless_the_runtime_is_asked_for() {
    use crate::settings::UdpWorkerMode;
    assert_eq!(settings("").unwrap().udp_workers, UdpWorkerMode::Threads);
    let s = settings("[server]\nudp_workers = \"runtime\"\n").unwrap();
    assert_eq!(s.udp_workers, UdpWorkerMode::Runtime);
    let s = settings("[server]\nudp_workers = \"threads\"\n").unwrap();
    assert_eq!(s.udp_workers, UdpWorkerMode::Threads);
    let err = settings("[server]\nthreads = 1\nudp_workers = \"tokio\"\n").unwrap_err();
    assert_eq!(err.problems.len(), 1, "{err}");
    assert!(
        err.problems[0].starts_with("/etc/bulwark/bulwark.toml:3:15: "),
        "{err}"
    );
    assert!(
        err.problems[0].contains("\"threads\" or \"runtime\""),
        "{err}"
    );
}

#[test]
fn xdp_tables_take_an_interface_with_defaults_for_the_rest() {
    use bulwark_net::xdp::{AttachMode, CopyMode};
    assert!(settings("").unwrap().xdp.is_empty());
    let s = settings("[[xdp]]\ninterface = \"eth0\"\n").unwrap();
    assert_eq!(s.xdp.len(), 1);
    let x = &s.xdp[0];
    assert_eq!(
        (x.interface.as_str(), &x.queues, x.port, x.attach, x.copy),
        ("eth0", &None, 53, AttachMode::Auto, CopyMode::Auto)
    );
    let s = settings(
        "[[xdp]]\ninterface = \"eth1\"\nqueues = [0, 3]\nport = 5300\nmode = \"generic\"\nzero_copy = \"off\"\n",
    )
    .unwrap();
    let x = &s.xdp[0];
    assert_eq!(
        (&x.queues, x.port, x.attach, x.copy),
        (&Some(vec![0, 3]), 5300, AttachMode::Generic, CopyMode::Copy)
    );
}

#[test]
fn xdp_mistakes_are_named_where_they_are_written() {
    let err = settings(
        "[[xdp]]\ninterface = \"a/b\"\n\n\
         [[xdp]]\ninterface = \"eth0\"\nqueues = [1, 1]\nmode = \"fast\"\n\n\
         [[xdp]]\ninterface = \"eth0\"\n\n\
         [[xdp]]\ninterface = \"eth2\"\nqueues = [300]\nport = 0\nzero_copy = \"yes\"\n",
    )
    .unwrap_err();
    let want = [
        ("2:13", "is not an interface name"),
        ("6:10", "queue 1 is given twice"),
        ("7:8", "expected \"auto\", \"native\" or \"generic\""),
        ("10:13", "`eth0` is given twice"),
        ("14:10", "queue 300 is above 255"),
        ("15:8", "port: must not be 0"),
        ("16:13", "expected \"auto\", \"on\" or \"off\""),
    ];
    assert_eq!(err.problems.len(), want.len(), "{err}");
    for (at, what) in want {
        assert!(
            err.problems.iter().any(|p| p
                .starts_with(&format!("/etc/bulwark/bulwark.toml:{at}: "))
                && p.contains(what)),
            "no `{what}` at {at}:\n{err}"
        );
    }
}
