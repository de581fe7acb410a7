//! The example responses of RFC 4035 Appendix B (NSEC) and RFC 5155
//! Appendix B (NSEC3), with the keys of the signed `example.` zones of
//! their Appendix A, checked with the validation primitives: every signed
//! RRset of each response verifies with the zone's keys at a time inside
//! the signatures' validity, and what the denial records prove is what the
//! RFCs built each response to prove. Each group also has a case that must
//! fail (a record left out, data changed, the wrong time), so that a
//! validator that accepted anything would not pass.
//!
//! The records are the RFCs' own test vectors: RSASHA1 with 1024-bit keys
//! for RFC 4035, RSASHA1-NSEC3-SHA1 with 512-bit keys for RFC 5155. They
//! were cross-checked between several independent copies, and the
//! signatures checking here is the proof that they were copied right.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use bulwark_proto::rdata::{Dnskey, Rrsig};
use bulwark_proto::{Name, Rdata, Record, Rtype};
use bulwark_resolver::ede;
use bulwark_resolver::validate::nsec::{self, NsecRecord};
use bulwark_resolver::validate::nsec3::{self, Nsec3Proof, Nsec3Record};
use bulwark_resolver::validate::{
    trust_by_anchors, verify_rrset, AnchorData, Bogus, Budget, DsDenial, TrustAnchor, Verified,
    WorkLimits, ZoneKeys,
};
use bulwark_resolver::RrSet;

fn name(s: &str) -> Name {
    s.parse().unwrap()
}

fn budget() -> Budget {
    Budget::new(WorkLimits::default())
}

// ---------------------------------------------------------------------------
// RFC 4035 Appendix A: the `example.` zone signed with NSEC, RSASHA1 (5),
// ZSK 38519 and KSK 9465; every signature runs from 20040409183619 to
// 20040509183619.

/// 2004-04-15, inside the RFC 4035 signatures' validity.
const NOW_4035: u32 = 1_082_000_000;
/// 2004-05-10, a day after they expired.
const AFTER_4035: u32 = 1_084_200_000;
/// 2004-04-01, before their inception.
const BEFORE_4035: u32 = 1_080_800_000;

/// The zone's DNSKEY RRset and both its signatures (by the KSK and the ZSK).
const KEYS_4035: &str = "
example. 3600 IN DNSKEY 256 3 5 ( AQOy1bZVvpPqhg4j7EJoM9rI3ZmyEx2OzDBV
    rZy/lvI5CQePxXHZS4i8dANH4DX3tbHol61e k8EFMcsGXxKciJFHyhl94C+NwILQdzsUlSFo
    vBZsyl/NX6yEbtw/xN9ZNcrbYvgjjZ/UVPZI ySFNsgEYvh0z2542lzMKR4Dh8uZffQ== )
example. 3600 IN DNSKEY 257 3 5 ( AQOeX7+baTmvpVHb2CcLnL1dMRWbuscRvHXl
    LnXwDzvqp4tZVKp1sZMepFb8MvxhhW3y/0QZ syCjczGJ1qk8vJe52iOhInKROVLRwxGpMfzP
    RLMlGybr51bOV/1se0ODacj3DomyB4QB5gKT Yot/K9alk5/j8vfd4jWCWD+E1Sze0Q== )
example. 3600 IN RRSIG DNSKEY 5 1 3600 20040509183619 20040409183619 9465 example. (
    ZxgauAuIj+k1YoVEOSlZfx41fcmKzTFHoweZ xYnz99JVQZJ33wFS0Q0jcP7VXKkaElXk9nYJ
    XevO/7nAbo88iWsMkSpSR6jWzYYKwfrBI/L9 hjYmyVO9m6FjQ7uwM4dCP/bIuV/DKqOAK9NY
    NC3AHfvCV1Tp4VKDqxqG7R5tTVM= )
example. 3600 IN RRSIG DNSKEY 5 1 3600 20040509183619 20040409183619 38519 example. (
    eGL0s90glUqcOmloo/2y+bSzyEfKVOQViD9Z DNhLz/Yn9CQZlDVRJffACQDAUhXpU/oP34ri
    bKBpysRXosczFrKqS5Oa0bzMOfXCXup9qHAp eFIku28Vqfr8Nt7cigZLxjK+u0Ws/4lIRjKk
    7z5OXogYVaFzHKillDt3HRxHIZM= )
";

// The RRsets of the Appendix B responses, each with its signature.

const SOA_4035: &str = "
example. 3600 IN SOA ns1.example. bugs.x.w.example. 1081539377 3600 300 3600000 3600
example. 3600 IN RRSIG SOA 5 1 3600 20040509183619 20040409183619 38519 example. (
    ONx0k36rcjaxYtcNgq6iQnpNV5+drqYAsC9h 7TSJaHCqbhE67Sr6aH2xDUGcqQWu/n0UVzrF
    vkgO9ebarZ0GWDKcuwlM6eNB5SiX2K74l5LW DA7S/Un/IbtDq4Ay8NMNLQI7Dw7n4p8/rjkB
    jV7j86HyQgM5e7+miRAz8V01b0I= )
";

const NS_4035: &str = "
example. 3600 IN NS ns1.example.
example. 3600 IN NS ns2.example.
example. 3600 IN RRSIG NS 5 1 3600 20040509183619 20040409183619 38519 example. (
    gl13F00f2U0R+SWiXXLHwsMY+qStYy5k6zfd EuivWc+wd1fmbNCyql0Tk7lHTX6UOxc8AgNf
    4ISFve8XqF4q+o9qlnqIzmppU3LiNeKT4FZ8 RO5urFOvoMRTbQxW3U0hXWuggE4g3ZpsHv48
    0HjMeRaZB/FRPGfJPajngcq6Kwg= )
";

const MX_X_W_4035: &str = "
x.w.example. 3600 IN MX 1 xx.example.
x.w.example. 3600 IN RRSIG MX 5 3 3600 20040509183619 20040409183619 38519 example. (
    Il2WTZ+Bkv+OytBx4LItNW5mjB4RCwhOO8y1 XzPHZmZUTVYL7LaA63f6T9ysVBzJRI3KRjAP
    H3U1qaYnDoN1DrWqmi9RJe4FoObkbcdm7P3I kx70ePCoFgRz1Yq+bVVXCvGuAU4xALv3W/Y1
    jNSlwZ2mSWKHfxFQxPtLj8s32+k= )
";

const ADDRESSES_XX_4035: &str = "
xx.example. 3600 IN A 192.0.2.10
xx.example. 3600 IN RRSIG A 5 2 3600 20040509183619 20040409183619 38519 example. (
    kBF4YxMGWF0D8r0cztL+2fWWOvN1U/GYSpYP 7SoKoNQ4fZKyk+weWGlKLIUM+uE1zjVTPXoa
    0Z6WG0oZp46rkl1EzMcdMgoaeUzzAJ2BMq+Y VdxG9IK1yZkYGY9AgbTOGPoAgbJyO9EPULsx
    kbIDV6GPPSZVusnZU6OMgdgzHV4= )
xx.example. 3600 IN AAAA 2001:db8::f00:baaa
xx.example. 3600 IN RRSIG AAAA 5 2 3600 20040509183619 20040409183619 38519 example. (
    Zzj0yodDxcBLnnOIwDsuKo5WqiaK24DlKg9C aGaxDFiKgKobUj2jilYQHpGFn2poFRetZd4z
    ulyQkssz2QHrVrPuTMS22knudCiwP4LWpVTr U4zfeA+rDz9stmSBP/4PekH/x2IoAYnwctd/
    xS9cL2QgW7FChw16mzlkH6/vsfs= )
";

const ADDRESSES_NS_4035: &str = "
ns1.example. 3600 IN A 192.0.2.1
ns1.example. 3600 IN RRSIG A 5 2 3600 20040509183619 20040409183619 38519 example. (
    F1C9HVhIcs10cZU09G5yIVfKJy5yRQQ3qVet 5pGhp82pzhAOMZ3K22JnmK4c+IjUeFp/to06
    im5FVpHtbFisdjyPq84bhTv8vrXt5AB1wNB+ +iAqvIfdgW4sFNC6oADb1hK8QNauw9VePJhK
    v/iVXSYC0b7mPSU+EOlknFpVECs= )
ns2.example. 3600 IN A 192.0.2.2
ns2.example. 3600 IN RRSIG A 5 2 3600 20040509183619 20040409183619 38519 example. (
    V7cQRw1TR+knlaL1z/psxlS1PcD37JJDaCMq Qo6/u1qFQu6x+wuDHRH22Ap9ulJPQjFwMKOu
    yfPGQPC8KzGdE3vt5snFEAoE1Vn3mQqtu7SO 6amIjk13Kj/jyJ4nGmdRIc/3cM3ipXFhNTKq
    rdhx8SZ0yy4ObIRzIzvBFLiSS8o= )
";

const NSEC_APEX_4035: &str = "
example. 3600 IN NSEC a.example. NS SOA MX RRSIG NSEC DNSKEY
example. 3600 IN RRSIG NSEC 5 1 3600 20040509183619 20040409183619 38519 example. (
    O0k558jHhyrC97ISHnislm4kLMW48C7U7cBm FTfhke5iVqNRVTB1STLMpgpbDIC9hcryoO0V
    Z9ME5xPzUEhbvGnHd5sfzgFVeGxr5Nyyq4tW SDBgIBiLQUv1ivy29vhXy7WgR62dPrZ0PWvm
    jfFJ5arXf4nPxp/kEowGgBRzY/U= )
";

const NSEC_B_4035: &str = "
b.example. 3600 IN NSEC ns1.example. NS RRSIG NSEC
b.example. 3600 IN RRSIG NSEC 5 2 3600 20040509183619 20040409183619 38519 example. (
    GNuxHn844wfmUhPzGWKJCPY5ttEX/RfjDoOx 9ueK1PtYkOWKOOdiJ/PJKCYB3hYX+858dDWS
    xb2qnV/LSTCNVBnkm6owOpysY97MVj5VQEWs 0lm9tFoqjcptQkmQKYPrwUnCSNwvvclSF1xZ
    vhRXgWT7OuFXldoCG6TfVFMs9xE= )
";

const NSEC_NS1_4035: &str = "
ns1.example. 3600 IN NSEC ns2.example. A RRSIG NSEC
ns1.example. 3600 IN RRSIG NSEC 5 2 3600 20040509183619 20040409183619 38519 example. (
    I4hj+Kt6+8rCcHcUdolks2S+Wzri9h3fHas8 1rGN/eILdJHN7JpV6lLGPIh/8fIBkfvdyWnB
    jjf1q3O7JgYO1UdI7FvBNWqaaEPJK3UkddBq ZIaLi8Qr2XHkjq38BeQsbp8X0+6h4ETWSGT8
    IZaIGBLryQWGLw6Y6X8dqhlnxJM= )
";

/// The delegation to the signed `a.example.`: its NS set and glue (not
/// signed: the parent is not authoritative for them) and its DS set.
const REFERRAL_A_4035: &str = "
a.example. 3600 IN NS ns1.a.example.
a.example. 3600 IN NS ns2.a.example.
a.example. 3600 IN DS 57855 5 1 B6DCD485719ADCA18E5F3D48A2331627FDD3636B
a.example. 3600 IN RRSIG DS 5 2 3600 20040509183619 20040409183619 38519 example. (
    oXIKit/QtdG64J/CB+Gi8dOvnwRvqrto1AdQ oRkAN15FP3iZ7suB7gvTBmXzCjL7XUgQVcoH
    kdhyCuzp8W9qJHgRUSwKKkczSyuL64nhgjuD EML8l9wlWVsl7PR2VnZduM9bLyBhaaPmRKX/
    Fm+v6ccF2EGNLRiY08kdkz+XHHo= )
ns1.a.example. 3600 IN A 192.0.2.5
ns2.a.example. 3600 IN A 192.0.2.6
";

/// The delegation to the unsigned `b.example.`: NS set and glue.
const REFERRAL_B_4035: &str = "
b.example. 3600 IN NS ns1.b.example.
b.example. 3600 IN NS ns2.b.example.
ns1.b.example. 3600 IN A 192.0.2.7
ns2.b.example. 3600 IN A 192.0.2.8
";

/// The MX of `*.w.example.` expanded for `a.z.w.example.`: the signature
/// counts 2 labels, the owner has 4.
const MX_A_Z_W_4035: &str = "
a.z.w.example. 3600 IN MX 1 ai.example.
a.z.w.example. 3600 IN RRSIG MX 5 2 3600 20040509183619 20040409183619 38519 example. (
    OMK8rAZlepfzLWW75Dxd63jy2wswESzxDKG2 f9AMN1CytCd10cYISAxfAdvXSZ7xujKAtPbc
    tvOQ2ofO7AZJ+d01EeeQTVBPq4/6KCWhqe2X TjnkVLNvvhnc0u28aoSsG0+4InvkkOHknKxw
    4kX18MMR34i8lC36SR5xBni8vHI= )
";

const NSEC_X_Y_W_4035: &str = "
x.y.w.example. 3600 IN NSEC xx.example. MX RRSIG NSEC
x.y.w.example. 3600 IN RRSIG NSEC 5 4 3600 20040509183619 20040409183619 38519 example. (
    OvE6WUzN2ziieJcvKPWbCAyXyP6ef8cr6Csp ArVSTzKSquNwbezZmkU7E34o5lmb6CWSSSpg
    xw098kNUFnHcQf/LzY2zqRomubrNQhJTiDTX a0ArunJQCzPjOYq5t0SLjm6qp6McJI1AP5Vr
    QoKqJDCLnoAlcPOPKAm/jJkn3jk= )
";

const NSEC_WILDCARD_W_4035: &str = "
*.w.example. 3600 IN NSEC x.w.example. MX RRSIG NSEC
*.w.example. 3600 IN RRSIG NSEC 5 2 3600 20040509183619 20040409183619 38519 example. (
    r/mZnRC3I/VIcrelgIcteSxDhtsdlTDt8ng9 HSBlABOlzLxQtfgTnn8f+aOwJIAFe1Ee5RvU
    5cVhQJNP5XpXMJHfyps8tVvfxSAXfahpYqtx 91gsmcV/1V9/bZAG55CefP9cM4Z9Y9NT9XQ8
    s1InQ2UoIv6tJEaaKkP701j8OLA= )
";

const ADDRESSES_AI_4035: &str = "
ai.example. 3600 IN A 192.0.2.9
ai.example. 3600 IN RRSIG A 5 2 3600 20040509183619 20040409183619 38519 example. (
    pAOtzLP2MU0tDJUwHOKE5FPIIHmdYsCgTb5B ERGgpnJluA9ixOyf6xxVCgrEJW0WNZSsJicd
    hBHXfDmAGKUajUUlYSAH8tS4ZnrhyymIvk3u ArDu2wfT130e9UHnumaHHMpUTosKe22PblOy
    6zrTpg9FkS0XGVmYRvOTNYx2HvQ= )
ai.example. 3600 IN AAAA 2001:db8::f00:baa9
ai.example. 3600 IN RRSIG AAAA 5 2 3600 20040509183619 20040409183619 38519 example. (
    nLcpFuXdT35AcE+EoafOUkl69KB+/e56XmFK kewXG2IadYLKAOBIoR5+VoQV3XgTcofTJNsh
    1rnF6Eav2zpZB3byI6yo2bwY8MNkr4A7cL9T cMmDwV/hWFKsbGBsj8xSCN/caEL2CWY/5XP2
    sZM6QjBBLmukH30+w1z3h8PUP2o= )
";

// ---------------------------------------------------------------------------
// RFC 5155 Appendix A: the `example.` zone signed with NSEC3 (SHA-1, 12
// iterations, salt aabbccdd, every record opt-out), RSASHA1-NSEC3-SHA1
// (7), ZSK 40430 and KSK 12708; every signature runs from 20051021000000
// to 20150420235959.

/// 2008-01-10, inside the RFC 5155 signatures' validity.
const NOW_5155: u32 = 1_200_000_000;
/// 2015-06-01, after they expired.
const AFTER_5155: u32 = 1_433_116_800;

/// The zone's DNSKEY RRset and the KSK's signature over it.
const KEYS_5155: &str = "
example. 3600 IN DNSKEY 256 3 7 ( AwEAAaetidLzsKWUt4swWR8yu0wPHPiUi8LU
    sAD0QPWU+wzt89epO6tHzkMBVDkC7qphQO2h TY4hHn9npWFRw5BYubE= )
example. 3600 IN DNSKEY 257 3 7 ( AwEAAcUlFV1vhmqx6NSOUOq2R/dsR7Xm3upJ
    j7IommWSpJABVfW8Q0rOvXdM6kzt+TAu92L9 AbsUdblMFin8CVF3n4s= )
example. 3600 IN RRSIG DNSKEY 7 1 3600 20150420235959 20051021000000 12708 example. (
    AuU4juU9RaxescSmStrQks3Gh9FblGBlVU31 uzMZ/U/FpsUb8aC6QZS+sTsJXnLnz7flGOsm
    MGQZf3bH+QsCtg== )
";

const SOA_5155: &str = "
example. 3600 IN SOA ns1.example. bugs.x.w.example. 1 3600 300 3600000 3600
example. 3600 IN RRSIG SOA 7 1 3600 20150420235959 20051021000000 40430 example. (
    Hu25UIyNPmvPIVBrldN+9Mlp9Zql39qaUd8i q4ZLlYWfUUbbAS41pG+68z81q1xhkYAcEyHd
    VI2LmKusbZsT0Q== )
";

const NS_5155: &str = "
example. 3600 IN NS ns1.example.
example. 3600 IN NS ns2.example.
example. 3600 IN RRSIG NS 7 1 3600 20150420235959 20051021000000 40430 example. (
    PVOgtMK1HHeSTau+HwDWC8Ts+6C8qtqd4pQJ qOtdEVgg+MA+ai4fWDEhu3qHJyLcQ9tbD2vv
    CnMXjtz6SyObxA== )
";

/// H(example.): the apex.
const NSEC3_APEX_5155: &str = "
0p9mhaveqvm6t7vbl5lop2u3t2rp3tom.example. 3600 IN NSEC3 1 1 12 aabbccdd (
    2t7b4g4vsa5smi47k61mv5bv1a22bojr MX DNSKEY NS SOA NSEC3PARAM RRSIG )
0p9mhaveqvm6t7vbl5lop2u3t2rp3tom.example. 3600 IN RRSIG NSEC3 7 2 3600 20150420235959 20051021000000 40430 example. (
    OSgWSm26B+cS+dDL8b5QrWr/dEWhtCsKlwKL IBHYH6blRxK9rC0bMJPwQ4mLIuw85H2EY762
    BOCXJZMnpuwhpA== )
";

/// H(ns1.example.).
const NSEC3_NS1_5155: &str = "
2t7b4g4vsa5smi47k61mv5bv1a22bojr.example. 3600 IN NSEC3 1 1 12 aabbccdd (
    2vptu5timamqttgl4luu9kg21e0aor3s A RRSIG )
2t7b4g4vsa5smi47k61mv5bv1a22bojr.example. 3600 IN RRSIG NSEC3 7 2 3600 20150420235959 20051021000000 40430 example. (
    OmBvJ1Vgg1hCKMXHFiNeIYHK9XVW0iLDLwJN 4TFoNxZuP03gAXEI634YwOc4YBNITrj413iq
    NI6mRk/r1dOSUw== )
";

/// H(a.example.), a signed delegation (NS and DS).
const NSEC3_A_5155: &str = "
35mthgpgcu1qg68fab165klnsnk3dpvl.example. 3600 IN NSEC3 1 1 12 aabbccdd (
    b4um86eghhds6nea196smvmlo4ors995 NS DS RRSIG )
35mthgpgcu1qg68fab165klnsnk3dpvl.example. 3600 IN RRSIG NSEC3 7 2 3600 20150420235959 20051021000000 40430 example. (
    g6jPUUpduAJKRljUsN8gB4UagAX0NxY9shwQ Aynzo8EUWH+z6hEIBlUTPGj15eZll6VhQqgZ
    XtAIR3chwgW+SA== )
";

/// H(x.w.example.).
const NSEC3_X_W_5155: &str = "
b4um86eghhds6nea196smvmlo4ors995.example. 3600 IN NSEC3 1 1 12 aabbccdd (
    gjeqe526plbf1g8mklp59enfd789njgi MX RRSIG )
b4um86eghhds6nea196smvmlo4ors995.example. 3600 IN RRSIG NSEC3 7 2 3600 20150420235959 20051021000000 40430 example. (
    ZkPG3M32lmoHM6pa3D6gZFGB/rhL//Bs3Omh 5u4m/CUiwtblEVOaAKKZd7S959OeiX43aLX3
    pOv0TSTyiTxIZg== )
";

/// H(y.w.example.), an empty non-terminal: no types at all.
const NSEC3_Y_W_5155: &str = "
ji6neoaepv8b5o6k4ev33abha8ht9fgc.example. 3600 IN NSEC3 1 1 12 aabbccdd (
    k8udemvp1j2f7eg6jebps17vp3n8i58h )
ji6neoaepv8b5o6k4ev33abha8ht9fgc.example. 3600 IN RRSIG NSEC3 7 2 3600 20150420235959 20051021000000 40430 example. (
    gPkFp1s2QDQ6wQzcg1uSebZ61W33rUBDcTj7 2F3kQ490fEdp7k1BUIfbcZtPbX3YCpE+sIt0
    MpzVSKfTwx4uYA== )
";

/// H(w.example.), an empty non-terminal too.
const NSEC3_W_5155: &str = "
k8udemvp1j2f7eg6jebps17vp3n8i58h.example. 3600 IN NSEC3 1 1 12 aabbccdd (
    kohar7mbb8dc2ce8a9qvl8hon4k53uhi )
k8udemvp1j2f7eg6jebps17vp3n8i58h.example. 3600 IN RRSIG NSEC3 7 2 3600 20150420235959 20051021000000 40430 example. (
    FtXGbvF0+wf8iWkyo73enAuVx03klN+pILBK S6qCcftVtfH4yVzsEZquJ27NHR7ruxJWDNMt
    Otx7w9WfcIg62A== )
";

/// H(ns2.example.).
const NSEC3_NS2_5155: &str = "
q04jkcevqvmu85r014c7dkba38o0ji5r.example. 3600 IN NSEC3 1 1 12 aabbccdd (
    r53bq7cc2uvmubfu5ocmm6pers9tk9en A RRSIG )
q04jkcevqvmu85r014c7dkba38o0ji5r.example. 3600 IN RRSIG NSEC3 7 2 3600 20150420235959 20051021000000 40430 example. (
    hV5I89b+4FHJDATp09g4bbN0R1F845CaXpL3 ZxlMKimoPAyqletMlEWwLfFia7sdpSzn+ZlN
    NlkxWcLsIlMmUg== )
";

/// H(*.w.example.).
const NSEC3_WILDCARD_W_5155: &str = "
r53bq7cc2uvmubfu5ocmm6pers9tk9en.example. 3600 IN NSEC3 1 1 12 aabbccdd (
    t644ebqk9bibcna874givr6joj62mlhv MX RRSIG )
r53bq7cc2uvmubfu5ocmm6pers9tk9en.example. 3600 IN RRSIG NSEC3 7 2 3600 20150420235959 20051021000000 40430 example. (
    aupviViruXs4bDg9rCbezzBMf9h1ZlDvbW/C ZFKulIGXXLj8B/fsDJarXVDA9bnUoRhEbKp+
    HF1FWKW7RIJdtQ== )
";

/// The delegation to the unsigned `c.example.`, inside an opt-out span:
/// NS set and glue, no NSEC3 of its own.
const REFERRAL_C_5155: &str = "
c.example. 3600 IN NS ns1.c.example.
c.example. 3600 IN NS ns2.c.example.
ns1.c.example. 3600 IN A 192.0.2.7
ns2.c.example. 3600 IN A 192.0.2.8
";

const MX_A_Z_W_5155: &str = "
a.z.w.example. 3600 IN MX 1 ai.example.
a.z.w.example. 3600 IN RRSIG MX 7 2 3600 20150420235959 20051021000000 40430 example. (
    CikebjQwGQPwijVcxgcZcSJKtfynugtlBiKb 9FcBTrmOoyQ4InoWVudhCWsh/URX3lc4WRUM
    ivEBP6+4KS3ldA== )
";

const ADDRESSES_AI_5155: &str = "
ai.example. 3600 IN A 192.0.2.9
ai.example. 3600 IN RRSIG A 7 2 3600 20150420235959 20051021000000 40430 example. (
    hVe+wKYMlObTRPhX0NL67GxeZfdxqr/QeR6F tfdAj5+FgYxyzPEjIzvKWy00hWIl6wD3Vws+
    rznEn8sQ64UdqA== )
ai.example. 3600 IN AAAA 2001:db8::f00:baa9
ai.example. 3600 IN RRSIG AAAA 7 2 3600 20150420235959 20051021000000 40430 example. (
    LcdxKaCB5bGZwPDg+3JJ4O02zoMBrjxqlf6W uaHQZZfTUpb9Nf2nxFGe2XRPfR5tpJT6GdRG
    cHueLuXkMjBArQ== )
";

// ---------------------------------------------------------------------------
// Reading a response and checking its signatures.

/// The records of some RRsets in zone-file text, each relative to `example.`.
fn records(parts: &[&str]) -> Vec<Record> {
    let text = parts.concat();
    bulwark_zone::parse_str(&text, &name("example."), "rfc-example")
        .unwrap_or_else(|e| panic!("the example does not parse: {e:?}"))
}

/// The RRsets of `records` as the resolver holds them: the data of each
/// owner and type together, with the RRSIGs that cover it.
fn rrsets(records: &[Record]) -> Vec<RrSet> {
    let mut sets: Vec<RrSet> = Vec::new();
    for r in records.iter().filter(|r| r.rtype() != Rtype::RRSIG) {
        match sets
            .iter_mut()
            .find(|s| s.owner == r.owner && s.rtype == r.rtype())
        {
            Some(set) => set.push(r.rdata.to_wire(), r.ttl),
            None => {
                let mut set = RrSet::new(r.owner.clone(), r.rtype(), r.ttl);
                set.push(r.rdata.to_wire(), r.ttl);
                sets.push(set);
            }
        }
    }
    for r in records {
        if let Rdata::Rrsig(sig) = &r.rdata {
            let set = sets
                .iter_mut()
                .find(|s| s.owner == r.owner && s.rtype == sig.type_covered)
                .unwrap_or_else(|| panic!("an RRSIG at {} covers nothing", r.owner));
            set.push_sig(r.rdata.to_wire());
        }
    }
    sets
}

/// One RFC's signed `example.` zone: its keys, trusted from its KSK as the
/// anchor (as a validator configured with that key would), and a time
/// inside its signatures' validity.
#[derive(Debug)]
struct Zone {
    apex: Name,
    keys: Vec<Dnskey>,
    now: u32,
}

impl Zone {
    fn rfc4035() -> Zone {
        Zone::trusted(KEYS_4035, NOW_4035)
    }

    fn rfc5155() -> Zone {
        Zone::trusted(KEYS_5155, NOW_5155)
    }

    fn trusted(keys_text: &str, now: u32) -> Zone {
        let apex = name("example.");
        let sets = rrsets(&records(&[keys_text]));
        let dnskeys = &sets[0];
        let ksk = dnskeys
            .typed()
            .find_map(|d| match d {
                Rdata::Dnskey(k) if k.flags & 1 == 1 => Some(k),
                _ => None,
            })
            .unwrap();
        let anchor = TrustAnchor {
            owner: apex.clone(),
            data: AnchorData::Dnskey(ksk),
            managed: false,
        };
        match trust_by_anchors(
            &apex,
            dnskeys,
            &dnskeys.rrsigs(),
            &[anchor],
            now,
            &mut budget(),
        ) {
            Ok(ZoneKeys::Secure { keys, .. }) => Zone { apex, keys, now },
            other => panic!("the example zone's keys are not secure: {other:?}"),
        }
    }

    /// Checks one RRset's signatures at `now`.
    fn verify_at(&self, set: &RrSet, now: u32) -> Result<Verified, Bogus> {
        verify_rrset(
            set,
            &set.rrsigs(),
            &self.apex,
            &self.keys,
            now,
            &mut budget(),
        )
    }

    /// Reads a response and checks every signed RRset in it; those that
    /// carry no signature are listed for the test to judge.
    fn check(&self, parts: &[&str]) -> Response {
        let records = records(parts);
        let mut signed = Vec::new();
        let mut unsigned = Vec::new();
        for set in rrsets(&records) {
            if set.sigs.is_empty() {
                unsigned.push((set.owner.clone(), set.rtype));
                continue;
            }
            let v = self
                .verify_at(&set, self.now)
                .unwrap_or_else(|b| panic!("{} {} does not verify: {b:?}", set.owner, set.rtype));
            signed.push((set, v));
        }
        Response {
            records,
            signed,
            unsigned,
        }
    }
}

/// A response whose signed RRsets all verified.
#[derive(Debug)]
struct Response {
    records: Vec<Record>,
    signed: Vec<(RrSet, Verified)>,
    unsigned: Vec<(Name, Rtype)>,
}

impl Response {
    fn set(&self, owner: &str, rtype: Rtype) -> (&RrSet, Verified) {
        self.signed
            .iter()
            .find(|(s, _)| s.owner == name(owner) && s.rtype == rtype)
            .map(|(s, v)| (s, *v))
            .unwrap_or_else(|| panic!("no signed {owner} {rtype}"))
    }

    fn nsecs(&self) -> Vec<NsecRecord> {
        self.records
            .iter()
            .filter_map(|r| match &r.rdata {
                Rdata::Nsec(n) => Some(NsecRecord {
                    owner: r.owner.clone(),
                    nsec: n.clone(),
                }),
                _ => None,
            })
            .collect()
    }

    fn nsec3s(&self) -> Vec<Nsec3Record> {
        self.records
            .iter()
            .filter_map(|r| match &r.rdata {
                Rdata::Nsec3(n) => Some(Nsec3Record::new(&r.owner, n.clone()).unwrap()),
                _ => None,
            })
            .collect()
    }
}

/// The NSEC records but the one at `owner`.
fn without_nsec(records: &[NsecRecord], owner: &str) -> Vec<NsecRecord> {
    let owner = name(owner);
    let kept: Vec<NsecRecord> = records
        .iter()
        .filter(|r| r.owner != owner)
        .cloned()
        .collect();
    assert_eq!(kept.len() + 1, records.len(), "no NSEC at {owner}");
    kept
}

/// The NSEC3 records but the one whose owner's hash label is `hash`.
fn without_nsec3(records: &[Nsec3Record], hash: &str) -> Vec<Nsec3Record> {
    let hash = bulwark_proto::encoding::base32hex_decode(hash).unwrap();
    let kept: Vec<Nsec3Record> = records.iter().filter(|r| r.hash != hash).cloned().collect();
    assert_eq!(kept.len() + 1, records.len(), "no such NSEC3");
    kept
}

/// The same RRset with other data, signatures kept: what a forger or a
/// corrupting path would hand over.
fn with_data(set: &RrSet, text: &str) -> RrSet {
    let mut changed = RrSet::new(set.owner.clone(), set.rtype, set.ttl);
    for r in records(&[text]) {
        changed.push(r.rdata.to_wire(), r.ttl);
    }
    for sig in &set.sigs {
        changed.push_sig(sig.clone());
    }
    changed
}

fn ede_of<T>(r: Result<T, Bogus>) -> Result<T, u16> {
    r.map_err(|b| b.ede)
}

// ---------------------------------------------------------------------------
// RFC 4035 Appendix B.

/// RFC 4035 Appendix A: the DNSKEY RRset is signed by both the KSK (9465)
/// and the ZSK (38519), and with the KSK as the trust anchor the set is
/// secure. Each signature holds on its own; outside their validity window
/// (RFC 4035 §5.3.1) they do not.
#[test]
fn rfc4035_a_the_zone_keys_are_signed_by_both_keys() {
    let zone = Zone::rfc4035();
    assert_eq!(zone.keys.len(), 2);
    let sets = rrsets(&records(&[KEYS_4035]));
    let dnskeys = &sets[0];
    let sigs: Vec<Rrsig> = dnskeys.rrsigs();
    let mut tags: Vec<u16> = sigs.iter().map(|s| s.key_tag).collect();
    tags.sort_unstable();
    assert_eq!(tags, [9465, 38519]);
    for sig in sigs {
        let v = verify_rrset(
            dnskeys,
            std::slice::from_ref(&sig),
            &zone.apex,
            &zone.keys,
            NOW_4035,
            &mut budget(),
        )
        .unwrap();
        assert_eq!(v.key_tag, sig.key_tag);
    }
    assert_eq!(
        ede_of(zone.verify_at(dnskeys, AFTER_4035)),
        Err(ede::SIGNATURE_EXPIRED)
    );
    assert_eq!(
        ede_of(zone.verify_at(dnskeys, BEFORE_4035)),
        Err(ede::SIGNATURE_NOT_YET_VALID)
    );
}

/// RFC 4035 Appendix B.1, an answer: `x.w.example. MX`, with the apex NS
/// set in authority and the addresses in additional. Every RRset is
/// signed by the ZSK and verifies; the MX signature's label count (3) is
/// the owner's, so it is no wildcard expansion and needs no denial: the
/// answer is secure. Changed data, or the right data after the
/// signatures expired, is bogus.
#[test]
fn rfc4035_b1_answer_is_secure() {
    let zone = Zone::rfc4035();
    let response = zone.check(&[MX_X_W_4035, NS_4035, ADDRESSES_XX_4035, ADDRESSES_NS_4035]);
    assert!(response.unsigned.is_empty());
    assert_eq!(response.signed.len(), 6);
    let (mx, v) = response.set("x.w.example.", Rtype::MX);
    assert_eq!(v.key_tag, 38519);
    assert!(!v.wildcard);
    assert_eq!(v.ttl, 3600);

    let forged = with_data(mx, "x.w.example. 3600 IN MX 1 evil.example.");
    assert_eq!(
        ede_of(zone.verify_at(&forged, NOW_4035)),
        Err(ede::DNSSEC_BOGUS)
    );
    assert_eq!(
        ede_of(zone.verify_at(mx, AFTER_4035)),
        Err(ede::SIGNATURE_EXPIRED)
    );
}

/// RFC 4035 Appendix B.2, a name error for `ml.example.`: the NSEC at
/// `b.example.` covers the name (b.example < ml.example < ns1.example),
/// and the apex NSEC covers `*.example.`, the wildcard at the closest
/// encloser, so no wildcard could have answered (RFC 4035 §5.4). The
/// closest encloser is the apex. Without either NSEC the proof fails.
#[test]
fn rfc4035_b2_name_error_is_proven() {
    let zone = Zone::rfc4035();
    let response = zone.check(&[SOA_4035, NSEC_B_4035, NSEC_APEX_4035]);
    assert!(response.unsigned.is_empty());
    let nsecs = response.nsecs();
    let qname = name("ml.example.");
    assert_eq!(nsec::prove_nxdomain(&qname, &nsecs), Ok(name("example.")));

    // No proof that a wildcard could not have answered.
    let no_wildcard_proof = without_nsec(&nsecs, "example.");
    assert_eq!(
        ede_of(nsec::prove_nxdomain(&qname, &no_wildcard_proof)),
        Err(ede::NSEC_MISSING)
    );
    // No proof that the name itself does not exist.
    let no_cover = without_nsec(&nsecs, "b.example.");
    assert_eq!(
        ede_of(nsec::prove_nxdomain(&qname, &no_cover)),
        Err(ede::NSEC_MISSING)
    );
    // The NSEC that covers ml.example says nothing of a name it does not
    // cover: a name that exists is not denied.
    assert!(nsec::prove_nxdomain(&name("ns1.example."), &nsecs).is_err());
}

/// RFC 4035 Appendix B.3, no data: `ns1.example. MX`. The NSEC at
/// `ns1.example.` lists A, RRSIG and NSEC, neither MX nor CNAME, so the
/// name exists without the type (RFC 4035 §5.4). The same NSEC cannot
/// deny the A record it lists, and without it nothing is proven.
#[test]
fn rfc4035_b3_no_data_is_proven() {
    let zone = Zone::rfc4035();
    let response = zone.check(&[SOA_4035, NSEC_NS1_4035]);
    assert!(response.unsigned.is_empty());
    let nsecs = response.nsecs();
    let qname = name("ns1.example.");
    assert_eq!(nsec::prove_nodata(&qname, Rtype::MX, &nsecs), Ok(()));
    assert_eq!(
        ede_of(nsec::prove_nodata(&qname, Rtype::A, &nsecs)),
        Err(ede::DNSSEC_BOGUS)
    );
    assert_eq!(
        ede_of(nsec::prove_nodata(&qname, Rtype::MX, &[])),
        Err(ede::NSEC_MISSING)
    );
}

/// RFC 4035 Appendix B.4, a referral to the signed zone `a.example.`: the
/// DS set is signed by the parent and verifies, so the chain of trust goes
/// on into the child (whose keys the RFC does not give); the NS set and
/// the glue carry no signature (RFC 4035 §2.2: the parent is not
/// authoritative for them). With no NSEC in the referral, nothing proves
/// the delegation unsigned. A DS with another digest is bogus.
#[test]
fn rfc4035_b4_referral_to_a_signed_zone_carries_a_verified_ds() {
    let zone = Zone::rfc4035();
    let response = zone.check(&[REFERRAL_A_4035]);
    assert_eq!(
        response.unsigned,
        [
            (name("a.example."), Rtype::NS),
            (name("ns1.a.example."), Rtype::A),
            (name("ns2.a.example."), Rtype::A),
        ]
    );
    let (ds, v) = response.set("a.example.", Rtype::DS);
    assert_eq!(v.key_tag, 38519);
    let child = name("a.example.");
    assert!(nsec::prove_insecure_delegation(&child, &response.nsecs()).is_err());
    assert!(nsec::ds_denial(&child, &response.nsecs()).is_err());

    let other_digest = with_data(
        ds,
        "a.example. 3600 IN DS 57855 5 1 B6DCD485719ADCA18E5F3D48A2331627FDD3636C",
    );
    assert_eq!(
        ede_of(zone.verify_at(&other_digest, NOW_4035)),
        Err(ede::DNSSEC_BOGUS)
    );
}

/// RFC 4035 Appendix B.5, a referral to the unsigned zone `b.example.`:
/// the NSEC at `b.example.` lists NS but neither DS nor SOA, which proves
/// the delegation insecure (RFC 4035 §5.2, RFC 6840 §4.4), and so a DS
/// denial that makes the child unsigned. The same NSEC proves nothing of
/// `a.example.`, and the apex NSEC alone does not prove `b.example.`
/// unsigned.
#[test]
fn rfc4035_b5_referral_to_an_unsigned_zone_is_proven_insecure() {
    let zone = Zone::rfc4035();
    let response = zone.check(&[REFERRAL_B_4035, NSEC_B_4035]);
    assert_eq!(
        response.unsigned,
        [
            (name("b.example."), Rtype::NS),
            (name("ns1.b.example."), Rtype::A),
            (name("ns2.b.example."), Rtype::A),
        ]
    );
    let nsecs = response.nsecs();
    let child = name("b.example.");
    assert_eq!(nsec::prove_insecure_delegation(&child, &nsecs), Ok(()));
    assert_eq!(nsec::ds_denial(&child, &nsecs), Ok(DsDenial::Unsigned));

    assert_eq!(
        ede_of(nsec::prove_insecure_delegation(&name("a.example."), &nsecs)),
        Err(ede::NSEC_MISSING)
    );
    let apex_only = zone.check(&[NSEC_APEX_4035]).nsecs();
    assert!(nsec::prove_insecure_delegation(&child, &apex_only).is_err());
}

/// RFC 4035 Appendix B.6, a wildcard expansion: `a.z.w.example. MX`
/// answered from `*.w.example.`. The MX signature counts 2 labels for a
/// 4-label owner, so the validator rebuilds `*.w.example.` as the signed
/// owner (RFC 4035 §5.3.2) and marks the answer a wildcard one; the NSEC
/// at `x.y.w.example.` covers `a.z.w.example.` and shows `w.example.` as
/// the closest encloser, the source of synthesis the label count names
/// (RFC 4035 §5.3.4). Without that NSEC, or with a signature claiming a
/// closer source (3 labels: `*.z.w.example.`), the answer is bogus.
#[test]
fn rfc4035_b6_wildcard_expansion_is_proven() {
    let zone = Zone::rfc4035();
    let response = zone.check(&[MX_A_Z_W_4035, NS_4035, NSEC_X_Y_W_4035, ADDRESSES_AI_4035]);
    assert!(response.unsigned.is_empty());
    let (mx, v) = response.set("a.z.w.example.", Rtype::MX);
    assert!(v.wildcard);
    let labels = mx.rrsigs()[0].labels;
    assert_eq!(labels, 2);
    let qname = name("a.z.w.example.");
    let nsecs = response.nsecs();
    assert_eq!(nsec::prove_wildcard_answer(&qname, labels, &nsecs), Ok(()));

    assert_eq!(
        ede_of(nsec::prove_wildcard_answer(&qname, labels, &[])),
        Err(ede::NSEC_MISSING)
    );
    assert!(nsec::prove_wildcard_answer(&qname, 3, &nsecs).is_err());
    // The NSEC of the wildcard itself does not prove the name absent.
    let other = zone.check(&[NSEC_WILDCARD_W_4035]).nsecs();
    assert!(nsec::prove_wildcard_answer(&qname, labels, &other).is_err());
}

/// RFC 4035 Appendix B.7, wildcard no data: `a.z.w.example. AAAA`. The
/// NSEC at `x.y.w.example.` covers the name and shows `w.example.` as the
/// closest encloser; the NSEC at `*.w.example.` lists MX but not AAAA, so
/// the wildcard that would have answered has no AAAA (RFC 4035 §3.1.3.4,
/// §5.4). Without the wildcard's NSEC, or asked for the MX it has, the
/// proof fails.
#[test]
fn rfc4035_b7_wildcard_no_data_is_proven() {
    let zone = Zone::rfc4035();
    let response = zone.check(&[SOA_4035, NSEC_X_Y_W_4035, NSEC_WILDCARD_W_4035]);
    assert!(response.unsigned.is_empty());
    // The NSEC owned by the wildcard name is no expansion of it: its
    // signature counts the labels after the `*` (RFC 4034 §3.1.3).
    let (_, v) = response.set("*.w.example.", Rtype::NSEC);
    assert!(!v.wildcard);
    let nsecs = response.nsecs();
    let qname = name("a.z.w.example.");
    assert_eq!(
        nsec::prove_wildcard_nodata(&qname, Rtype::AAAA, &nsecs),
        Ok(())
    );

    assert!(nsec::prove_wildcard_nodata(&qname, Rtype::MX, &nsecs).is_err());
    let no_wildcard = without_nsec(&nsecs, "*.w.example.");
    assert_eq!(
        ede_of(nsec::prove_wildcard_nodata(
            &qname,
            Rtype::AAAA,
            &no_wildcard
        )),
        Err(ede::NSEC_MISSING)
    );
    let no_cover = without_nsec(&nsecs, "x.y.w.example.");
    assert!(nsec::prove_wildcard_nodata(&qname, Rtype::AAAA, &no_cover).is_err());
}

/// RFC 4035 Appendix B.8, a DS query answered by the child zone itself:
/// `example. DS` from `example.`'s own server. The apex NSEC lists no DS,
/// so as `example.`'s own no-data answer it holds (RFC 4035 §3.1.4.1). But
/// it is the child's NSEC (SOA set), and a DS lives on the parent's side
/// of the cut: it cannot prove the delegation to `example.` unsigned (RFC
/// 4035 §5.2, RFC 6840 §4.4), so as a DS denial it is bogus. Asked for the
/// MX the apex has, the same NSEC denies nothing.
#[test]
fn rfc4035_b8_ds_no_data_from_the_child_proves_no_unsigned_delegation() {
    let zone = Zone::rfc4035();
    let response = zone.check(&[SOA_4035, NSEC_APEX_4035]);
    assert!(response.unsigned.is_empty());
    let nsecs = response.nsecs();
    let apex = name("example.");
    assert_eq!(nsec::prove_nodata(&apex, Rtype::DS, &nsecs), Ok(()));
    assert_eq!(
        ede_of(nsec::ds_denial(&apex, &nsecs)),
        Err(ede::DNSSEC_BOGUS)
    );
    assert!(nsec::prove_insecure_delegation(&apex, &nsecs).is_err());
    assert!(nsec::prove_nodata(&apex, Rtype::MX, &nsecs).is_err());
}

// ---------------------------------------------------------------------------
// RFC 5155 Appendix B.

/// RFC 5155 Appendix A: the DNSKEY RRset is signed by the KSK (12708) and,
/// with it as the trust anchor, secure; the keys are 512-bit RSA, which a
/// validator still checks (RFC 8624 sets no floor). The NSEC3 owners are
/// the hashes Appendix A lists (SHA-1, 12 iterations, salt aabbccdd).
#[test]
fn rfc5155_a_the_zone_keys_and_hashes() {
    let zone = Zone::rfc5155();
    assert_eq!(zone.keys.len(), 2);
    let sets = rrsets(&records(&[KEYS_5155]));
    assert_eq!(
        ede_of(zone.verify_at(&sets[0], AFTER_5155)),
        Err(ede::SIGNATURE_EXPIRED)
    );
    for (owner, hash) in [
        ("example.", "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom"),
        ("a.example.", "35mthgpgcu1qg68fab165klnsnk3dpvl"),
        ("ai.example.", "gjeqe526plbf1g8mklp59enfd789njgi"),
        ("ns1.example.", "2t7b4g4vsa5smi47k61mv5bv1a22bojr"),
        ("ns2.example.", "q04jkcevqvmu85r014c7dkba38o0ji5r"),
        ("w.example.", "k8udemvp1j2f7eg6jebps17vp3n8i58h"),
        ("*.w.example.", "r53bq7cc2uvmubfu5ocmm6pers9tk9en"),
        ("x.w.example.", "b4um86eghhds6nea196smvmlo4ors995"),
        ("y.w.example.", "ji6neoaepv8b5o6k4ev33abha8ht9fgc"),
        ("c.x.w.example.", "0va5bpr2ou0vk0lbqeeljri88laipsfh"),
        ("*.x.w.example.", "92pqneegtaue7pjatc3l3qnk738c6v5m"),
    ] {
        let h = bulwark_crypto::nsec3_hash(name(owner).as_wire(), &[0xaa, 0xbb, 0xcc, 0xdd], 12);
        assert_eq!(
            bulwark_proto::encoding::base32hex_encode(h.as_ref()).to_ascii_lowercase(),
            hash,
            "H({owner})"
        );
    }
}

/// RFC 5155 Appendix B.1, a name error for `a.c.x.w.example.`: the NSEC3
/// matching `x.w.example.` is the closest encloser, the one at the apex's
/// hash covers the next closer name `c.x.w.example.`, and the one at
/// `a.example.`'s hash covers `*.x.w.example.` (RFC 5155 §8.4). The proof
/// holds, but the NSEC3 covering the next closer name has the opt-out
/// flag, so by RFC 5155 §9.2 the answer must not be called secure:
/// `Insecure`, as Unbound answers it (without the AD bit). Were the span
/// not opt-out the same records would prove it; without the closest
/// encloser's or the wildcard's NSEC3 the proof fails.
#[test]
fn rfc5155_b1_name_error_under_opt_out_is_insecure() {
    let zone = Zone::rfc5155();
    let response = zone.check(&[SOA_5155, NSEC3_APEX_5155, NSEC3_X_W_5155, NSEC3_A_5155]);
    assert!(response.unsigned.is_empty());
    let records = response.nsec3s();
    let qname = name("a.c.x.w.example.");
    assert_eq!(
        nsec3::prove_nxdomain(&qname, &zone.apex, &records, &mut budget()),
        Ok(Nsec3Proof::Insecure)
    );

    // The records' logic without opt-out (their signatures aside).
    let strict: Vec<Nsec3Record> = records
        .iter()
        .cloned()
        .map(|mut r| {
            r.nsec3.flags = 0;
            r
        })
        .collect();
    assert_eq!(
        nsec3::prove_nxdomain(&qname, &zone.apex, &strict, &mut budget()),
        Ok(Nsec3Proof::Proven)
    );

    let no_wildcard_proof = without_nsec3(&records, "35mthgpgcu1qg68fab165klnsnk3dpvl");
    assert_eq!(
        ede_of(nsec3::prove_nxdomain(
            &qname,
            &zone.apex,
            &no_wildcard_proof,
            &mut budget()
        )),
        Err(ede::NSEC_MISSING)
    );
    let no_encloser = without_nsec3(&records, "b4um86eghhds6nea196smvmlo4ors995");
    assert!(nsec3::prove_nxdomain(&qname, &zone.apex, &no_encloser, &mut budget()).is_err());
    let no_next_closer = without_nsec3(&records, "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom");
    assert!(nsec3::prove_nxdomain(&qname, &zone.apex, &no_next_closer, &mut budget()).is_err());
}

/// RFC 5155 Appendix B.2, no data: `ns1.example. MX`. The NSEC3 matching
/// `ns1.example.` lists A and RRSIG, not MX nor CNAME (RFC 5155 §8.5). It
/// matches the name rather than covering it, so opt-out does not enter:
/// the denial is secure (`Proven`, as Unbound sets AD). It cannot deny the
/// A it lists, and another name's NSEC3 proves nothing here.
#[test]
fn rfc5155_b2_no_data_is_proven() {
    let zone = Zone::rfc5155();
    let response = zone.check(&[SOA_5155, NSEC3_NS1_5155]);
    assert!(response.unsigned.is_empty());
    let records = response.nsec3s();
    let qname = name("ns1.example.");
    assert_eq!(
        nsec3::prove_nodata(&qname, Rtype::MX, &zone.apex, &records, &mut budget()),
        Ok(Nsec3Proof::Proven)
    );
    assert_eq!(
        ede_of(nsec3::prove_nodata(
            &qname,
            Rtype::A,
            &zone.apex,
            &records,
            &mut budget()
        )),
        Err(ede::DNSSEC_BOGUS)
    );
    let other = zone.check(&[NSEC3_Y_W_5155]).nsec3s();
    assert!(nsec3::prove_nodata(&qname, Rtype::MX, &zone.apex, &other, &mut budget()).is_err());
}

/// RFC 5155 Appendix B.2.1, no data at an empty non-terminal: `y.w.example.
/// A`. The NSEC3 matching `y.w.example.` has no types at all (RFC 5155
/// §7.1: empty non-terminals get NSEC3 records), so the name exists with
/// no data (RFC 5155 §8.5): secure. Without it, another NSEC3 of the zone
/// proves nothing.
#[test]
fn rfc5155_b21_no_data_at_an_empty_non_terminal_is_proven() {
    let zone = Zone::rfc5155();
    let response = zone.check(&[SOA_5155, NSEC3_Y_W_5155]);
    assert!(response.unsigned.is_empty());
    let records = response.nsec3s();
    assert!(records[0].nsec3.types.is_empty());
    let qname = name("y.w.example.");
    assert_eq!(
        nsec3::prove_nodata(&qname, Rtype::A, &zone.apex, &records, &mut budget()),
        Ok(Nsec3Proof::Proven)
    );
    let other = zone.check(&[NSEC3_NS1_5155]).nsec3s();
    assert_eq!(
        ede_of(nsec3::prove_nodata(
            &qname,
            Rtype::A,
            &zone.apex,
            &other,
            &mut budget()
        )),
        Err(ede::NSEC_MISSING)
    );
}

/// RFC 5155 Appendix B.3, a referral to the unsigned `c.example.` inside
/// an opt-out span: no NSEC3 matches `c.example.`; the apex's NSEC3 is the
/// closest provable encloser and the opt-out NSEC3 at `a.example.`'s hash
/// covers `c.example.` (RFC 5155 §8.9, §6). That proves the delegation
/// insecure, and a DS denial that makes the child unsigned (§8.6); the
/// referral itself is not secure (§9.2). Without the opt-out flag the
/// same span would prove nothing (the delegation would need its own
/// NSEC3), and without the covering NSEC3 neither.
#[test]
fn rfc5155_b3_referral_to_an_opt_out_unsigned_zone_is_insecure() {
    let zone = Zone::rfc5155();
    let response = zone.check(&[REFERRAL_C_5155, NSEC3_A_5155, NSEC3_APEX_5155]);
    assert_eq!(
        response.unsigned,
        [
            (name("c.example."), Rtype::NS),
            (name("ns1.c.example."), Rtype::A),
            (name("ns2.c.example."), Rtype::A),
        ]
    );
    let records = response.nsec3s();
    let child = name("c.example.");
    assert_eq!(
        nsec3::prove_insecure_delegation(&child, &zone.apex, &records, &mut budget()),
        Ok(Nsec3Proof::Proven)
    );
    assert_eq!(
        nsec3::ds_denial(&child, &zone.apex, &records, &mut budget()),
        Ok(DsDenial::Unsigned)
    );
    assert_eq!(
        nsec3::prove_nodata(&child, Rtype::DS, &zone.apex, &records, &mut budget()),
        Ok(Nsec3Proof::Insecure)
    );

    let strict: Vec<Nsec3Record> = records
        .iter()
        .cloned()
        .map(|mut r| {
            r.nsec3.flags = 0;
            r
        })
        .collect();
    assert_eq!(
        ede_of(nsec3::prove_insecure_delegation(
            &child,
            &zone.apex,
            &strict,
            &mut budget()
        )),
        Err(ede::NSEC_MISSING)
    );
    let no_cover = without_nsec3(&records, "35mthgpgcu1qg68fab165klnsnk3dpvl");
    assert!(
        nsec3::prove_insecure_delegation(&child, &zone.apex, &no_cover, &mut budget()).is_err()
    );
}

/// RFC 5155 Appendix B.4, a wildcard expansion: `a.z.w.example. MX` from
/// `*.w.example.`. The MX signature counts 2 labels, so the validator
/// verifies it as `*.w.example.`'s and the next closer name is
/// `z.w.example.`, which the NSEC3 at `ns2.example.`'s hash covers (RFC
/// 5155 §8.8). That NSEC3 is opt-out, so an unsigned delegation at
/// `z.w.example.` could be hiding: not secure (§9.2; Unbound sets no AD).
/// Without it the wildcard answer is bogus.
#[test]
fn rfc5155_b4_wildcard_expansion_under_opt_out_is_insecure() {
    let zone = Zone::rfc5155();
    let response = zone.check(&[MX_A_Z_W_5155, NS_5155, NSEC3_NS2_5155, ADDRESSES_AI_5155]);
    assert!(response.unsigned.is_empty());
    let (mx, v) = response.set("a.z.w.example.", Rtype::MX);
    assert!(v.wildcard);
    let labels = mx.rrsigs()[0].labels;
    assert_eq!(labels, 2);
    let records = response.nsec3s();
    let qname = name("a.z.w.example.");
    assert_eq!(
        nsec3::prove_wildcard_answer(&qname, labels, &zone.apex, &records, &mut budget()),
        Ok(Nsec3Proof::Insecure)
    );

    let other = zone.check(&[NSEC3_NS1_5155]).nsec3s();
    assert_eq!(
        ede_of(nsec3::prove_wildcard_answer(
            &qname,
            labels,
            &zone.apex,
            &other,
            &mut budget()
        )),
        Err(ede::NSEC_MISSING)
    );
    let forged = with_data(mx, "a.z.w.example. 3600 IN MX 1 evil.example.");
    assert_eq!(
        ede_of(zone.verify_at(&forged, NOW_5155)),
        Err(ede::DNSSEC_BOGUS)
    );
}

/// RFC 5155 Appendix B.5, wildcard no data: `a.z.w.example. AAAA`. The
/// NSEC3 matching `w.example.` is the closest encloser, the one at
/// `ns2.example.`'s hash covers the next closer `z.w.example.`, and the
/// one matching `*.w.example.` lists MX, not AAAA (RFC 5155 §8.7). The
/// covering NSEC3 is opt-out, so the answer is not secure (§9.2):
/// `Insecure`. Without the wildcard's NSEC3, or asked for the MX the
/// wildcard has, the proof fails.
#[test]
fn rfc5155_b5_wildcard_no_data_under_opt_out_is_insecure() {
    let zone = Zone::rfc5155();
    let response = zone.check(&[
        SOA_5155,
        NSEC3_W_5155,
        NSEC3_NS2_5155,
        NSEC3_WILDCARD_W_5155,
    ]);
    assert!(response.unsigned.is_empty());
    let records = response.nsec3s();
    let qname = name("a.z.w.example.");
    assert_eq!(
        nsec3::prove_wildcard_nodata(&qname, Rtype::AAAA, &zone.apex, &records, &mut budget()),
        Ok(Nsec3Proof::Insecure)
    );

    assert_eq!(
        ede_of(nsec3::prove_wildcard_nodata(
            &qname,
            Rtype::MX,
            &zone.apex,
            &records,
            &mut budget()
        )),
        Err(ede::DNSSEC_BOGUS)
    );
    let no_wildcard = without_nsec3(&records, "r53bq7cc2uvmubfu5ocmm6pers9tk9en");
    assert_eq!(
        ede_of(nsec3::prove_wildcard_nodata(
            &qname,
            Rtype::AAAA,
            &zone.apex,
            &no_wildcard,
            &mut budget()
        )),
        Err(ede::NSEC_MISSING)
    );
    let no_encloser = without_nsec3(&records, "k8udemvp1j2f7eg6jebps17vp3n8i58h");
    assert!(nsec3::prove_wildcard_nodata(
        &qname,
        Rtype::AAAA,
        &zone.apex,
        &no_encloser,
        &mut budget()
    )
    .is_err());
}

/// RFC 5155 Appendix B.6, a DS query answered by the child zone itself:
/// `example. DS` from `example.`'s server. The NSEC3 matching the apex
/// lists no DS, so as `example.`'s own no-data answer it holds, and it
/// matches rather than covers, so opt-out does not enter (§8.6): `Proven`.
/// But it is the child's apex (SOA set): it cannot prove the delegation to
/// `example.` unsigned (RFC 5155 §8.6, RFC 6840 §4.4), so as a DS denial
/// it is bogus. Asked for the MX the apex has, it denies nothing.
#[test]
fn rfc5155_b6_ds_no_data_from_the_child_proves_no_unsigned_delegation() {
    let zone = Zone::rfc5155();
    let response = zone.check(&[SOA_5155, NSEC3_APEX_5155]);
    assert!(response.unsigned.is_empty());
    let records = response.nsec3s();
    let apex = &zone.apex;
    assert_eq!(
        nsec3::prove_nodata(apex, Rtype::DS, apex, &records, &mut budget()),
        Ok(Nsec3Proof::Proven)
    );
    assert_eq!(
        ede_of(nsec3::ds_denial(apex, apex, &records, &mut budget())),
        Err(ede::DNSSEC_BOGUS)
    );
    assert!(nsec3::prove_insecure_delegation(apex, apex, &records, &mut budget()).is_err());
    assert!(nsec3::prove_nodata(apex, Rtype::MX, apex, &records, &mut budget()).is_err());
}
