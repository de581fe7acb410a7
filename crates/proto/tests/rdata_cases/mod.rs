//! Presentation cases shared by the round-trip and peer tests, origin `example.com.`.

use bulwark_proto::Rtype;

/// (type, input text, expected printed text; `None` when it prints as given).
pub const CASES: &[(Rtype, &str, Option<&str>)] = &[
    (Rtype::A, "192.0.2.1", None),
    (Rtype::AAAA, "2001:db8::1", None),
    (Rtype::AAAA, "2001:0DB8:0:0:0:0:0:1", Some("2001:db8::1")),
    (Rtype::AAAA, "::ffff:192.0.2.1", None),
    (Rtype::NS, "ns1", Some("ns1.example.com.")),
    (Rtype::NS, "@", Some("example.com.")),
    (Rtype::NS, "NS1.Example.NET.", None),
    (Rtype::CNAME, "www.example.net.", None),
    (Rtype::DNAME, "example.net.", None),
    (Rtype::PTR, "host\\.name.example.", None),
    (
        Rtype::SOA,
        "ns1 hostmaster 2024010101 7200 3600 1209600 300",
        Some("ns1.example.com. hostmaster.example.com. 2024010101 7200 3600 1209600 300"),
    ),
    (
        Rtype::SOA,
        "@ host\\.master 1 2h 1H30m 2w 5M",
        Some("example.com. host\\.master.example.com. 1 7200 5400 1209600 300"),
    ),
    (Rtype::MX, "10 mail", Some("10 mail.example.com.")),
    (Rtype::MX, "0 .", None),
    (Rtype::TXT, r#""hello world" "second""#, None),
    (Rtype::TXT, "unquoted", Some(r#""unquoted""#)),
    (Rtype::TXT, r#""a\"b\\c\009""#, None),
    (Rtype::TXT, r#""\065BC" """#, Some(r#""ABC" """#)),
    (Rtype::TXT, "\"caf\\195\\169\"", None),
    (Rtype::HINFO, r#""PC" "Linux 6""#, None),
    (Rtype::RP, "admin.example.com. txt", Some("admin.example.com. txt.example.com.")),
    (Rtype::AFSDB, "1 afs", Some("1 afs.example.com.")),
    (Rtype::RT, "10 relay", Some("10 relay.example.com.")),
    (Rtype::KX, "10 kx.example.net.", None),
    (Rtype::PX, "10 net2.it. PRMD-net2.ADMD-p400.C-it.", None),
    (Rtype::SRV, "0 5 5060 sip", Some("0 5 5060 sip.example.com.")),
    // RFC 1876 §3 example and defaults.
    (
        Rtype::LOC,
        "42 21 54 N 71 06 18 W -24m 30m",
        Some("42 21 54.000 N 71 6 18.000 W -24.00m 30.00m 10000.00m 10.00m"),
    ),
    (
        Rtype::LOC,
        "42 21 43.952 N 71 5 6.344 W -24m 1m 200m 10m",
        Some("42 21 43.952 N 71 5 6.344 W -24.00m 1.00m 200.00m 10.00m"),
    ),
    (
        Rtype::LOC,
        "52 N 4 E 0",
        Some("52 0 0.000 N 4 0 0.000 E 0.00m 1.00m 10000.00m 10.00m"),
    ),
    (
        Rtype::LOC,
        "90 0 0.000 S 180 0 0.000 W 42849672.95m 90000000.00m 0.00m 0.00m",
        None,
    ),
    (
        Rtype::NAPTR,
        r#"100 10 "U" "E2U+sip" "!^.*$!sip:info@example.com!" ."#,
        None,
    ),
    // RFC 4034 §5.4, digest split across fields.
    (
        Rtype::DS,
        "60485 5 1 2BB183AF5F22588179A53B0A 98631FAD1A292118",
        Some("60485 5 1 2BB183AF5F22588179A53B0A98631FAD1A292118"),
    ),
    (
        Rtype::CDS,
        "60485 RSASHA1 1 2bb183af5f22588179a53b0a98631fad1a292118",
        Some("60485 5 1 2BB183AF5F22588179A53B0A98631FAD1A292118"),
    ),
    // RFC 4034 §2.3, key split across fields.
    (
        Rtype::DNSKEY,
        "256 3 5 AQPSKmynfzW4kyBv015MUG2DeIQ3Cbl+BBZH4b/0PY1kxkmvHjcZc8no kfzj31GajIQKY+5CptLr3buXA10hWqTkF7H6RfoRqXQeogmMHfpftf6zMv1LyBUgia7za6ZEzOJBOztyvhjL742iU/TpPSEDhm2SNKLijfUppn1UaNvv4w==",
        Some("256 3 5 AQPSKmynfzW4kyBv015MUG2DeIQ3Cbl+BBZH4b/0PY1kxkmvHjcZc8nokfzj31GajIQKY+5CptLr3buXA10hWqTkF7H6RfoRqXQeogmMHfpftf6zMv1LyBUgia7za6ZEzOJBOztyvhjL742iU/TpPSEDhm2SNKLijfUppn1UaNvv4w=="),
    ),
    // RFC 8078 §4: the "delete" CDS and CDNSKEY.
    (Rtype::CDS, "0 0 0 00", None),
    (Rtype::CDNSKEY, "0 3 0 AA==", None),
    // RFC 4034 §3.3.
    (
        Rtype::RRSIG,
        "A 5 3 86400 20030322173103 20030220173103 2642 example.com. oJB1W6WNGv+ldvQ3WDG0MQkg5IEhjRip8WTrPYGv07h108dUKGMeDPKijVCHX3DDKdfb+v6oB9wfuh3DTJXUAfI/M0zmO/zz8bW0Rznl8O3tGNazPwQKkRN20XPXV6nwwfoXmJQbsLNrLfkGJ5D6fwFm8nN+6pBzeDQfsS3Ap3o=",
        None,
    ),
    (
        Rtype::RRSIG,
        "TYPE65534 ECDSAP256SHA256 2 3600 1700000000 1690000000 1 @ AAEC AwQ=",
        Some("TYPE65534 13 2 3600 20231114221320 20230722042640 1 example.com. AAECAwQ="),
    ),
    // RFC 4034 §4.3.
    (
        Rtype::NSEC,
        "host.example.com. A MX RRSIG NSEC TYPE1234",
        Some("host.example.com. A MX RRSIG NSEC TYPE1234"),
    ),
    (Rtype::NSEC, "Next.example.com. NSEC", None),
    (Rtype::NSEC, "a.example.com. NSEC A", Some("a.example.com. A NSEC")),
    // RFC 5155 Appendix A.
    (
        Rtype::NSEC3,
        "1 1 12 aabbccdd 2t7b4g4vsa5smi47k61mv5bv1a22bojr MX DNSKEY NS SOA NSEC3PARAM RRSIG",
        Some("1 1 12 AABBCCDD 2t7b4g4vsa5smi47k61mv5bv1a22bojr NS SOA MX RRSIG DNSKEY NSEC3PARAM"),
    ),
    (
        Rtype::NSEC3,
        "1 0 0 - 2T7B4G4VSA5SMI47K61MV5BV1A22BOJR",
        Some("1 0 0 - 2t7b4g4vsa5smi47k61mv5bv1a22bojr"),
    ),
    (Rtype::NSEC3PARAM, "1 0 0 -", None),
    (Rtype::NSEC3PARAM, "1 0 12 aabbccdd", Some("1 0 12 AABBCCDD")),
    (
        Rtype::TLSA,
        "3 1 1 0C72AC70B745AC19998811B131D662C9AC69DBDBE7CB23E5B514B56664C5D3D6",
        None,
    ),
    (Rtype::SSHFP, "2 1 123456789abcdef67890123456789abcdef67890", Some("2 1 123456789ABCDEF67890123456789ABCDEF67890")),
    (Rtype::CAA, r#"0 issue "letsencrypt.org""#, None),
    (Rtype::CAA, "128 tbs Unknown", Some(r#"128 tbs "Unknown""#)),
    (Rtype::CAA, r#"0 iodef "mailto:security@example.com""#, None),
    (Rtype::CAA, r#"0 issue """#, None),
    // RFC 8976 Appendix A.1.
    (
        Rtype::ZONEMD,
        "2018031900 1 1 c68090d90a7aed716bc459f9340e3d7c1370d4d24b7e2fc3a1ddc0b9a87153b9a9713b3c9ae5cc27777f98b8e730044c",
        Some("2018031900 1 1 C68090D90A7AED716BC459F9340E3D7C1370D4D24B7E2FC3A1DDC0B9A87153B9A9713B3C9AE5CC27777F98B8E730044C"),
    ),
    (Rtype::SMIMEA, "3 0 1 AABBCCDDEEFF00112233445566778899AABBCCDDEEFF00112233445566778899", None),
    // The example of RFC 7477.
    (Rtype::CSYNC, "66 3 A NS AAAA", None),
    (Rtype::CSYNC, "1 0", None),
    (Rtype::OPENPGPKEY, "mQINBFit2jsBEADrbl5vjVxYeAE0g0IDYCBpHirv1Sjlqxx5gjtPhb2YhvyDMXjq", None),
    // An example of RFC 4701.
    (Rtype::DHCID, "AAIBY2/AuCccgoJbsaxcQc9TUapptP69lOjxfNuVAA2kjEA=", None),
    // RFC 7553.
    (Rtype::URI, r#"10 1 "ftp://ftp1.example.com/public""#, None),
    (Rtype::URI, r#"10 1 "https://example.com/a\"b""#, None),
    (Rtype::CERT, "PGP 0 0 AAEC", Some("3 0 0 AAEC")),
    (Rtype::CERT, "1 12345 RSASHA256 AAECAw==", Some("1 12345 8 AAECAw==")),
    // RFC 7043 §3.2 and §4.2.
    (Rtype::EUI48, "00-00-5E-00-53-2A", Some("00-00-5e-00-53-2a")),
    (Rtype::EUI64, "00-00-5e-ef-10-00-00-2a", None),
    // RFC 9460 Appendix D.
    (Rtype::HTTPS, "0 foo.example.com.", None),
    (Rtype::SVCB, "1 .", None),
    (Rtype::SVCB, "16 foo.example.com. port=53", None),
    (Rtype::SVCB, "1 foo.example.com. key667=hello", Some(r#"1 foo.example.com. key667="hello""#)),
    (Rtype::SVCB, r#"1 foo.example.com. key667="hello\210qoo""#, None),
    (
        Rtype::SVCB,
        r#"1 foo.example.com. ipv6hint="2001:db8::1,2001:db8::53:1""#,
        Some("1 foo.example.com. ipv6hint=2001:db8::1,2001:db8::53:1"),
    ),
    (
        Rtype::SVCB,
        "16 foo.example.org. alpn=h2,h3-19 mandatory=ipv4hint,alpn ipv4hint=192.0.2.1",
        Some(r#"16 foo.example.org. mandatory=alpn,ipv4hint alpn="h2,h3-19" ipv4hint=192.0.2.1"#),
    ),
    (Rtype::SVCB, r#"16 foo.example.org. alpn="f\\\\oo\\,bar,h2""#, None),
    (
        Rtype::SVCB,
        r"16 foo.example.org. alpn=f\\\092oo\092,bar,h2",
        Some(r#"16 foo.example.org. alpn="f\\\\oo\\,bar,h2""#),
    ),
    (Rtype::HTTPS, r#"1 . alpn="h2" no-default-alpn"#, Some(r#"1 . alpn="h2" no-default-alpn"#)),
    (
        Rtype::HTTPS,
        "1 . ech=AEn+DQBFKwAgACABWIHUGj4u+PIggYXcR5JF0gYk3dCRioBW8uJq9H4mKAAIAAEAAQABAANAEnB1YmxpYy50bHMtZWNoLmRldgAA",
        None,
    ),
    (
        Rtype::SVCB,
        "1 doh.example. alpn=h2 dohpath=/dns-query{?dns} ohttp",
        Some(r#"1 doh.example. alpn="h2" key7="/dns-query{?dns}" key8"#),
    ),
    (
        Rtype::SVCB,
        "1 svc key65000 key2 alpn=h3",
        Some(r#"1 svc.example.com. alpn="h3" no-default-alpn key65000"#),
    ),
    // Types without a presentation format of their own stay generic.
    (Rtype::NULL, r"\# 3 010203", None),
    (Rtype(65280), r"\# 0", None),
    (Rtype::OPT, r"\# 4 000A0000", None),
];
