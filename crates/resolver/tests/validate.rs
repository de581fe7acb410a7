//! The validation primitives against signatures and DS records made by
//! bulwark's signer (whose output ldns-verify-zone, dnssec-verify and
//! Unbound accept in the signing tests): good data is secure, each kind of
//! bad data is bogus with its Extended DNS Error, and a KeyTrap-shaped
//! answer costs a bounded number of signature checks.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use bulwark_dnssec::rrsig::CanonicalRrset;
use bulwark_dnssec::{
    Algorithm, DigestType, KeyRole, KeyTiming, RrsetSigner, SignatureValidity, SigningKey, ZoneKey,
};
use bulwark_proto::rdata::{Dnskey, Rrsig};
use bulwark_proto::{Class, Name, Rdata, Rtype};
use bulwark_resolver::ede;
use bulwark_resolver::validate::{
    keys_vouched_for, verify_rrset, Bogus, Budget, DsVerdict, Verified, WorkLimits,
};
use bulwark_resolver::RrSet;

const NOW: u32 = 1_800_000_000;
const DAY: u32 = 86_400;

fn name(s: &str) -> Name {
    s.parse().unwrap()
}

fn key(algorithm: Algorithm, role: KeyRole) -> ZoneKey {
    ZoneKey::new(
        role,
        SigningKey::generate(algorithm, None).unwrap(),
        KeyTiming::starting_at(0),
    )
}

fn a_set(owner: &str, ttl: u32) -> RrSet {
    let mut set = RrSet::new(name(owner), Rtype::A, ttl);
    set.push(vec![192, 0, 2, 1], ttl);
    set.push(vec![192, 0, 2, 2], ttl);
    set
}

/// `key`'s signature over `set` (signed as owned by `signed_owner`, which
/// is `*.…` for a wildcard), valid from `inception` to `expiration`.
fn sign(
    set: &RrSet,
    signed_owner: &str,
    zone: &str,
    key: &ZoneKey,
    inception: u32,
    expiration: u32,
) -> Rrsig {
    let rdatas: Vec<Rdata> = set.typed().collect();
    let canonical = CanonicalRrset::new(
        &name(signed_owner),
        Class::IN,
        set.rtype,
        set.ttl,
        rdatas.iter(),
    );
    let mut signer = RrsetSigner::new(
        &name(zone),
        SignatureValidity {
            inception,
            expiration,
        },
    );
    let f = signer.sign(&canonical, key).unwrap();
    Rrsig {
        type_covered: set.rtype,
        algorithm: f.algorithm,
        labels: f.labels,
        original_ttl: set.ttl,
        expiration: f.expiration,
        inception: f.inception,
        key_tag: f.key_tag,
        signer: name(zone),
        signature: f.signature,
    }
}

fn budget() -> Budget {
    Budget::new(WorkLimits::default())
}

/// `sig` over `set`, checked with `key` as the one key of `example.`.
fn verify_in_example(set: &RrSet, sig: Rrsig, key: &ZoneKey) -> Result<Verified, Bogus> {
    verify_rrset(
        set,
        &[sig],
        &name("example."),
        &[key.dnskey().clone()],
        NOW,
        &mut budget(),
    )
}

#[test]
fn records_signed_with_each_algorithm_are_secure() {
    for algorithm in [
        Algorithm::RsaSha256,
        Algorithm::EcdsaP256Sha256,
        Algorithm::Ed25519,
    ] {
        let zsk = key(algorithm, KeyRole::Zsk);
        let set = a_set("www.example.", 3600);
        let sig = sign(&set, "www.example.", "example.", &zsk, NOW - DAY, NOW + DAY);
        let v =
            verify_in_example(&set, sig, &zsk).unwrap_or_else(|b| panic!("{algorithm:?}: {b:?}"));
        assert_eq!(v.key_tag, zsk.key_tag());
        assert!(!v.wildcard);
        assert_eq!(v.ttl, 3600);
    }
}

#[test]
fn a_secure_rrset_is_kept_no_longer_than_its_signature_lasts() {
    let zsk = key(Algorithm::Ed25519, KeyRole::Zsk);
    let set = a_set("www.example.", 3600);
    let sig = sign(&set, "www.example.", "example.", &zsk, NOW - DAY, NOW + 600);
    let v = verify_in_example(&set, sig, &zsk).unwrap();
    assert_eq!(v.ttl, 600);
}

#[test]
fn each_kind_of_bad_signature_is_bogus_with_its_extended_error() {
    let zsk = key(Algorithm::Ed25519, KeyRole::Zsk);
    let keys = [zsk.dnskey().clone()];
    let zone = name("example.");
    let set = a_set("www.example.", 3600);
    let verdict = |sigs: &[Rrsig], keys: &[Dnskey]| {
        verify_rrset(&set, sigs, &zone, keys, NOW, &mut budget())
            .unwrap_err()
            .ede
    };

    assert_eq!(verdict(&[], &keys), ede::RRSIGS_MISSING);
    let expired = sign(
        &set,
        "www.example.",
        "example.",
        &zsk,
        NOW - 2 * DAY,
        NOW - DAY,
    );
    assert_eq!(verdict(&[expired], &keys), ede::SIGNATURE_EXPIRED);
    let early = sign(
        &set,
        "www.example.",
        "example.",
        &zsk,
        NOW + DAY,
        NOW + 2 * DAY,
    );
    assert_eq!(verdict(&[early], &keys), ede::SIGNATURE_NOT_YET_VALID);
    let good = sign(&set, "www.example.", "example.", &zsk, NOW - DAY, NOW + DAY);
    let mut broken = good.clone();
    broken.signature[10] ^= 0x40;
    assert_eq!(verdict(&[broken], &keys), ede::DNSSEC_BOGUS);
    let other = key(Algorithm::Ed25519, KeyRole::Zsk);
    assert_eq!(
        verdict(std::slice::from_ref(&good), &[other.dnskey().clone()]),
        ede::DNSKEY_MISSING
    );
    let mut not_zone = zsk.dnskey().clone();
    not_zone.flags &= !0x0100;
    // Clearing the flag changes the tag: sign again under the flagless key.
    let flagless = ZoneKey::with_flags(
        KeyRole::Zsk,
        not_zone.flags,
        SigningKey::generate(Algorithm::Ed25519, None).unwrap(),
        KeyTiming::starting_at(0),
    );
    let by_flagless = sign(
        &set,
        "www.example.",
        "example.",
        &flagless,
        NOW - DAY,
        NOW + DAY,
    );
    assert_eq!(
        verdict(&[by_flagless], &[flagless.dnskey().clone()]),
        ede::NO_ZONE_KEY_BIT_SET
    );
    // Records changed after signing.
    let mut changed = set.clone();
    changed.rdata[0] = vec![203, 0, 113, 1];
    let e = verify_rrset(
        &changed,
        std::slice::from_ref(&good),
        &zone,
        &keys,
        NOW,
        &mut budget(),
    )
    .unwrap_err();
    assert_eq!(e.ede, ede::DNSSEC_BOGUS);
    // Signed by another zone than the one whose keys these are.
    let e = verify_rrset(&set, &[good], &name("com."), &keys, NOW, &mut budget()).unwrap_err();
    assert_eq!(e.ede, ede::DNSKEY_MISSING);
}

#[test]
fn an_answer_from_a_wildcard_is_secure_and_says_so() {
    let zsk = key(Algorithm::EcdsaP256Sha256, KeyRole::Zsk);
    let wild = a_set("*.example.", 300);
    let sig = sign(&wild, "*.example.", "example.", &zsk, NOW - DAY, NOW + DAY);
    assert_eq!(sig.labels, 1);
    let expanded = a_set("host.sub.example.", 300);
    let v = verify_in_example(&expanded, sig, &zsk).unwrap();
    assert!(v.wildcard);
}

/// KeyTrap (CVE-2023-50387): 100 keys sharing the signing key's tag, none
/// of them the key, and 40 signatures by that tag, none good. Trying every
/// key with every signature is 4,000 signature checks; the budget allows
/// 32 in all, and the answer is bogus.
#[test]
fn colliding_keys_and_signatures_cost_a_bounded_number_of_checks() {
    let zsk = key(Algorithm::EcdsaP256Sha256, KeyRole::Zsk);
    let real = zsk.dnskey().clone();
    let tag = zsk.key_tag();
    // The key tag is a ones'-complement sum of the RDATA's 16-bit words:
    // adding to one octet and taking as much from the octet two further
    // on keeps it, and gives another key.
    let mut keys = Vec::new();
    for i in 0..100usize {
        let mut k = real.clone();
        let at = 4 + (i % 28) * 2;
        let step = u8::try_from(1 + i / 28).unwrap();
        k.public_key[at] = k.public_key[at].wrapping_add(step);
        k.public_key[at + 2] = k.public_key[at + 2].wrapping_sub(step);
        if bulwark_dnssec::key_tag(&Rdata::Dnskey(k.clone()).to_wire()) == tag && k != real {
            keys.push(k);
        }
    }
    assert!(keys.len() >= 50, "only {} colliding keys", keys.len());
    let set = a_set("www.example.", 3600);
    let good = sign(&set, "www.example.", "example.", &zsk, NOW - DAY, NOW + DAY);
    let sigs: Vec<Rrsig> = (0..40u8)
        .map(|i| {
            let mut s = good.clone();
            s.signature[5] ^= i.wrapping_add(1);
            s
        })
        .collect();
    let mut b = budget();
    let e = verify_rrset(&set, &sigs, &name("example."), &keys, NOW, &mut b).unwrap_err();
    assert_eq!(e.ede, ede::DNSSEC_BOGUS);
    // The default budget: 32 checks for one validation, whatever it meets.
    assert!(b.used() <= 32, "{} checks", b.used());
    assert!(b.used() > 0);
}

#[test]
fn a_ds_vouches_for_the_key_it_digests() {
    let ksk = key(Algorithm::Ed25519, KeyRole::Ksk);
    let zsk = key(Algorithm::Ed25519, KeyRole::Zsk);
    let zone = name("example.");
    let keys = [zsk.dnskey().clone(), ksk.dnskey().clone()];
    let ds = ksk.ds(&zone, DigestType::Sha256);
    assert_eq!(
        keys_vouched_for(&zone, std::slice::from_ref(&ds), &keys, &budget()),
        DsVerdict::Vouched(vec![1])
    );
    // A DS naming another key: bogus.
    let stranger = key(Algorithm::Ed25519, KeyRole::Ksk).ds(&zone, DigestType::Sha256);
    assert_eq!(
        keys_vouched_for(&zone, std::slice::from_ref(&stranger), &keys, &budget()),
        DsVerdict::Bogus(Bogus::new(
            ede::DNSKEY_MISSING,
            "no key of the zone matches its DS set"
        ))
    );
    // RFC 4509 §3: beside a SHA-256 DS, a SHA-1 one is not used, even one
    // that would match.
    let sha1 = zsk.ds(&zone, DigestType::Sha1);
    assert_eq!(
        keys_vouched_for(&zone, &[sha1.clone(), ds], &keys, &budget()),
        DsVerdict::Vouched(vec![1])
    );
    assert_eq!(
        keys_vouched_for(&zone, &[sha1, stranger], &keys, &budget()),
        DsVerdict::Bogus(Bogus::new(
            ede::DNSKEY_MISSING,
            "no key of the zone matches its DS set"
        ))
    );
}

#[test]
fn a_ds_set_of_unknown_algorithms_or_digests_makes_the_zone_insecure() {
    let ksk = key(Algorithm::Ed25519, KeyRole::Ksk);
    let zone = name("example.");
    let keys = [ksk.dnskey().clone()];
    let mut unknown_alg = ksk.ds(&zone, DigestType::Sha256);
    unknown_alg.algorithm = 200;
    assert_eq!(
        keys_vouched_for(&zone, &[unknown_alg], &keys, &budget()),
        DsVerdict::Insecure {
            ede: ede::UNSUPPORTED_DNSKEY_ALGORITHM
        }
    );
    let mut unknown_digest = ksk.ds(&zone, DigestType::Sha256);
    unknown_digest.digest_type = 3; // GOST, not implemented
    assert_eq!(
        keys_vouched_for(&zone, &[unknown_digest], &keys, &budget()),
        DsVerdict::Insecure {
            ede: ede::UNSUPPORTED_DS_DIGEST_TYPE
        }
    );
}

/// A file a Debian package installs: `None` outside CI when it is missing
/// (the test says it is skipped); under `CI=true` a missing file fails.
fn debian_file(path: &str, package: &str) -> Option<String> {
    let file = bulwark_testkit::require_file(path, package)?;
    Some(std::fs::read_to_string(file).unwrap())
}

/// The built-in root anchors are IANA's: the same DS records as Debian's
/// dns-root-data, and they vouch for the root keys BIND ships in its own
/// `trust-anchors` statement (read by the BIND-syntax reader).
#[test]
fn the_built_in_root_anchors_are_ianas_and_vouch_for_the_root_keys() {
    use bulwark_resolver::validate::{parse_anchors, root_anchors, AnchorData};
    let built_in = root_anchors();
    assert_eq!(built_in.len(), 2);
    let Some(root_ds) = debian_file("/usr/share/dns/root.ds", "dns-root-data") else {
        return;
    };
    let from_debian = parse_anchors(&root_ds, "/usr/share/dns/root.ds").unwrap();
    let ds = |a: &[bulwark_resolver::validate::TrustAnchor]| -> Vec<bulwark_proto::rdata::Ds> {
        a.iter()
            .filter_map(|a| match &a.data {
                AnchorData::Ds(ds) => Some(ds.clone()),
                AnchorData::Dnskey(_) => None,
            })
            .collect()
    };
    assert_eq!(ds(&built_in), ds(&from_debian));

    let Some(bind_keys) = debian_file("/etc/bind/bind.keys", "bind9") else {
        return;
    };
    let bind = parse_anchors(&bind_keys, "/etc/bind/bind.keys").unwrap();
    let keys: Vec<Dnskey> = bind
        .iter()
        .filter(|a| a.owner.is_root())
        .filter_map(|a| match &a.data {
            AnchorData::Dnskey(k) => Some(k.clone()),
            AnchorData::Ds(_) => None,
        })
        .collect();
    assert!(
        bind.iter().all(|a| a.managed),
        "bind.keys holds initial-key anchors"
    );
    // bind.keys holds KSK-2017 as a key and KSK-2024 as a DS record.
    let DsVerdict::Vouched(vouched) =
        keys_vouched_for(&Name::root(), &ds(&built_in), &keys, &budget())
    else {
        panic!("the root DS records vouch for none of BIND's root keys");
    };
    assert_eq!(vouched.len(), keys.len());
    assert!(!keys.is_empty());
    for d in ds(&bind) {
        assert!(ds(&built_in).contains(&d), "BIND's {d:?} is not built in");
    }

    // Debian's root.key holds the same keys as DNSKEY lines.
    if let Some(root_key) = debian_file("/usr/share/dns/root.key", "dns-root-data") {
        let from_key = parse_anchors(&root_key, "/usr/share/dns/root.key").unwrap();
        let keys: Vec<Dnskey> = from_key
            .iter()
            .filter_map(|a| match &a.data {
                AnchorData::Dnskey(k) => Some(k.clone()),
                AnchorData::Ds(_) => None,
            })
            .collect();
        assert_eq!(keys.len(), 2);
        assert_eq!(
            keys_vouched_for(&Name::root(), &ds(&built_in), &keys, &budget()),
            DsVerdict::Vouched(vec![0, 1])
        );
    }
}

#[test]
fn anchor_files_in_each_form_are_read_and_their_mistakes_located() {
    use bulwark_resolver::validate::{parse_anchors, AnchorData};
    // Unbound's auto-trust-anchor file: RFC 5011 state in comments.
    let unbound = "; autotrust trust anchor file\n;;id: . 1\n\
        . 172800 IN DS 20326 8 2 E06D44B80B8F1D39A95C0B0D7C65D08458E880409BBC683457104237C7F8EC8D ;;state=2 [  VALID  ] ;;count=0\n";
    let a = parse_anchors(unbound, "root.key").unwrap();
    assert_eq!(a.len(), 1);
    assert!(a[0].managed);
    assert!(matches!(&a[0].data, AnchorData::Ds(ds) if ds.key_tag == 20326));

    // BIND's statement, with comments of all three kinds and a key broken
    // over lines; static-ds is a fixed anchor.
    let bind = "# anchors\ntrust-anchors {\n  // the test zone\n  example. static-ds 12345 13 2 \"0123456789abcdef\n 0123456789ABCDEF\";\n  /* a key */ example. initial-key 257 3 13 \"AQID\";\n};\n";
    let a = parse_anchors(bind, "named.conf").unwrap();
    assert_eq!(a.len(), 2);
    assert!(!a[0].managed && a[1].managed);
    assert!(
        matches!(&a[0].data, AnchorData::Ds(ds) if ds.digest.len() == 16 && ds.algorithm == 13)
    );
    assert!(matches!(&a[1].data, AnchorData::Dnskey(k) if k.public_key == [1, 2, 3]));

    // Mistakes, each at its place.
    let at = |text: &str| {
        let e = parse_anchors(text, "anchors.conf").unwrap_err();
        (e[0].line, e[0].column, e[0].message.clone())
    };
    let (line, column, message) = at("trust-anchors {\n  . static-ds 20326 8 x \"E06D\";\n};\n");
    assert_eq!((line, column), (2, 23), "{message}");
    let (line, column, _) = at("trust-anchors {\n  . initial-key 257 3 8 \"not base64!\";\n};\n");
    assert_eq!((line, column), (2, 25));
    let (line, _, message) = at("trust-anchors {\n  . initial-key 257 3 8 \"AQID\";\n");
    assert_eq!(line, 2, "{message}");
    let (line, _, message) = at("; comment\n. IN DS 20326 8 2 E06D44B80B8F1D39A95C0B0D7C65D08458E880409BBC683457104237C7F8EC8D\n. IN A 192.0.2.1\n");
    assert_eq!(line, 3, "{message}");
    assert!(message.contains("only DS and DNSKEY"), "{message}");
    let (line, _, _) = at("; comment\n. IN DS 20326 8 two E06D\n");
    assert_eq!(line, 2);
    let (_, _, message) = at("; nothing here\n");
    assert!(message.contains("no trust anchor"), "{message}");
}

mod nsec {
    use super::name;
    use bulwark_proto::rdata::{Nsec, TypeBitmap};
    use bulwark_proto::Rtype;
    use bulwark_resolver::ede;
    use bulwark_resolver::validate::nsec::*;

    fn r(owner: &str, next: &str, types: &[Rtype]) -> NsecRecord {
        NsecRecord {
            owner: name(owner),
            nsec: Nsec {
                next: name(next),
                types: TypeBitmap::new(types.iter().copied()),
            },
        }
    }

    /// The NSEC chain of a zone in canonical order: the apex, a host, an
    /// unsigned delegation (c), a wildcard under an empty non-terminal
    /// (w), and a host under another (y).
    fn chain() -> Vec<NsecRecord> {
        use Rtype as T;
        vec![
            r(
                "example.",
                "a.example.",
                &[T::SOA, T::NS, T::NSEC, T::RRSIG, T::DNSKEY],
            ),
            r("a.example.", "c.example.", &[T::A, T::NSEC, T::RRSIG]),
            r("c.example.", "*.w.example.", &[T::NS, T::NSEC, T::RRSIG]),
            r("*.w.example.", "x.y.example.", &[T::TXT, T::NSEC, T::RRSIG]),
            r("x.y.example.", "example.", &[T::A, T::NSEC, T::RRSIG]),
        ]
    }

    #[test]
    fn nxdomain_needs_the_name_and_the_wildcard_denied() {
        let all = chain();
        assert_eq!(
            prove_nxdomain(&name("b.example."), &all),
            Ok(name("example."))
        );
        // Past the last name: the chain wraps to the apex.
        assert_eq!(
            prove_nxdomain(&name("z.example."), &all),
            Ok(name("example."))
        );
        // Without the NSEC that covers *.example., a wildcard might exist.
        let no_apex: Vec<_> = all[1..].to_vec();
        assert_eq!(
            prove_nxdomain(&name("b.example."), &no_apex)
                .unwrap_err()
                .ede,
            ede::NSEC_MISSING
        );
        // A name that exists is not denied.
        assert!(prove_nxdomain(&name("a.example."), &all).is_err());
    }

    #[test]
    fn an_nsec_from_above_a_cut_denies_nothing_below_it() {
        // foo.c.example. sorts between c.example. and *.w.example., but
        // c.example. is a delegation: the child zone decides what exists.
        assert!(prove_nxdomain(&name("foo.c.example."), &chain()).is_err());
        assert_eq!(
            prove_nodata(&name("c.example."), Rtype::A, &chain())
                .unwrap_err()
                .ede,
            ede::DNSSEC_BOGUS
        );
        assert_eq!(
            prove_nodata(&name("c.example."), Rtype::DS, &chain()),
            Ok(())
        );
    }

    #[test]
    fn nodata_for_a_name_and_for_an_empty_non_terminal() {
        let all = chain();
        assert_eq!(prove_nodata(&name("a.example."), Rtype::AAAA, &all), Ok(()));
        assert_eq!(prove_nodata(&name("A.Example."), Rtype::MX, &all), Ok(()));
        assert_eq!(
            prove_nodata(&name("a.example."), Rtype::A, &all)
                .unwrap_err()
                .ede,
            ede::DNSSEC_BOGUS
        );
        // y.example. exists only as the parent of x.y.example.
        assert_eq!(prove_nodata(&name("y.example."), Rtype::A, &all), Ok(()));
        assert_eq!(
            prove_nodata(&name("b.example."), Rtype::A, &all)
                .unwrap_err()
                .ede,
            ede::NSEC_MISSING
        );
    }

    #[test]
    fn wildcard_answers_and_wildcard_nodata() {
        let all = chain();
        // host.w.example. A, answered from *.w.example. (RRSIG labels 2).
        assert_eq!(
            prove_wildcard_answer(&name("host.w.example."), 2, &all),
            Ok(())
        );
        // Labels saying the wildcard was higher up do not match the proof.
        assert!(prove_wildcard_answer(&name("host.w.example."), 1, &all).is_err());
        // A name that exists cannot have been a wildcard's.
        assert!(prove_wildcard_answer(&name("x.y.example."), 2, &all).is_err());
        assert_eq!(
            prove_wildcard_nodata(&name("host.w.example."), Rtype::AAAA, &all),
            Ok(())
        );
        assert!(prove_wildcard_nodata(&name("host.w.example."), Rtype::TXT, &all).is_err());
    }

    #[test]
    fn an_unsigned_delegation_is_proven_by_the_nsec_at_it() {
        let all = chain();
        assert_eq!(prove_insecure_delegation(&name("c.example."), &all), Ok(()));
        assert!(prove_insecure_delegation(&name("a.example."), &all).is_err());
        assert!(prove_insecure_delegation(&name("example."), &all).is_err());
        assert!(prove_insecure_delegation(&name("d.example."), &all).is_err());
    }
}

mod nsec3 {
    use super::name;
    use bulwark_crypto::nsec3_hash;
    use bulwark_proto::encoding::base32hex_encode;
    use bulwark_proto::rdata::{Nsec3, TypeBitmap};
    use bulwark_proto::{Name, Rtype};
    use bulwark_resolver::ede;
    use bulwark_resolver::validate::nsec3::*;
    use bulwark_resolver::validate::{Budget, WorkLimits};

    const SALT: [u8; 4] = [0xaa, 0xbb, 0xcc, 0xdd];

    /// The NSEC3 chain of `example.` over `names` (with their types), made
    /// as a signer makes it: hashed, sorted, each pointing to the next;
    /// `opt_out` flags every record.
    fn chain(names: &[(&str, &[Rtype])], iterations: u16, opt_out: bool) -> Vec<Nsec3Record> {
        let mut hashed: Vec<(Vec<u8>, Vec<Rtype>)> = names
            .iter()
            .map(|(n, t)| {
                let wire = name(n).to_lowercase();
                (
                    nsec3_hash(wire.as_wire(), &SALT, iterations).to_vec(),
                    t.to_vec(),
                )
            })
            .collect();
        hashed.sort();
        (0..hashed.len())
            .map(|i| {
                let (h, types) = &hashed[i];
                let next = hashed[(i + 1) % hashed.len()].0.clone();
                let owner: Name = format!("{}.example.", base32hex_encode(h)).parse().unwrap();
                Nsec3Record::new(
                    &owner,
                    Nsec3 {
                        hash_algorithm: 1,
                        flags: u8::from(opt_out),
                        iterations,
                        salt: SALT.to_vec(),
                        next_hashed: next,
                        types: TypeBitmap::new(types.iter().copied()),
                    },
                )
                .unwrap()
            })
            .collect()
    }

    fn zone(iterations: u16, opt_out: bool) -> Vec<Nsec3Record> {
        use Rtype as T;
        chain(
            &[
                (
                    "example.",
                    &[T::SOA, T::NS, T::DNSKEY, T::NSEC3PARAM, T::RRSIG],
                ),
                ("a.example.", &[T::A, T::RRSIG]),
                ("w.example.", &[]),
                ("*.w.example.", &[T::TXT, T::RRSIG]),
                ("c.example.", &[T::NS]),
            ],
            iterations,
            opt_out,
        )
    }

    fn budget() -> Budget {
        Budget::new(WorkLimits::default())
    }

    const P: Result<Nsec3Proof, u16> = Ok(Nsec3Proof::Proven);

    fn ede_of(r: Result<Nsec3Proof, bulwark_resolver::validate::Bogus>) -> Result<Nsec3Proof, u16> {
        r.map_err(|b| b.ede)
    }

    #[test]
    fn each_denial_is_proven_over_hashed_names() {
        let z = zone(0, false);
        let apex = name("example.");
        let b = &mut budget();
        assert_eq!(ede_of(prove_nxdomain(&name("b.example."), &apex, &z, b)), P);
        assert_eq!(
            ede_of(prove_nxdomain(
                &name("deep.b.example."),
                &apex,
                &z,
                &mut budget()
            )),
            P
        );
        assert_eq!(
            ede_of(prove_nxdomain(
                &name("a.example."),
                &apex,
                &z,
                &mut budget()
            )),
            Err(ede::DNSSEC_BOGUS)
        );
        assert_eq!(
            ede_of(prove_nodata(
                &name("a.example."),
                Rtype::AAAA,
                &apex,
                &z,
                &mut budget()
            )),
            P
        );
        assert_eq!(
            ede_of(prove_nodata(
                &name("a.example."),
                Rtype::A,
                &apex,
                &z,
                &mut budget()
            )),
            Err(ede::DNSSEC_BOGUS)
        );
        // An empty non-terminal has its own NSEC3.
        assert_eq!(
            ede_of(prove_nodata(
                &name("w.example."),
                Rtype::A,
                &apex,
                &z,
                &mut budget()
            )),
            P
        );
        assert_eq!(
            ede_of(prove_wildcard_answer(
                &name("host.w.example."),
                2,
                &apex,
                &z,
                &mut budget()
            )),
            P
        );
        assert_eq!(
            ede_of(prove_wildcard_nodata(
                &name("host.w.example."),
                Rtype::AAAA,
                &apex,
                &z,
                &mut budget()
            )),
            P
        );
        assert_eq!(
            ede_of(prove_wildcard_nodata(
                &name("host.w.example."),
                Rtype::TXT,
                &apex,
                &z,
                &mut budget()
            )),
            Err(ede::DNSSEC_BOGUS)
        );
        assert_eq!(
            ede_of(prove_insecure_delegation(
                &name("c.example."),
                &apex,
                &z,
                &mut budget()
            )),
            P
        );
        assert_eq!(
            ede_of(prove_nodata(
                &name("c.example."),
                Rtype::DS,
                &apex,
                &z,
                &mut budget()
            )),
            P
        );
        assert_eq!(
            ede_of(prove_nodata(
                &name("c.example."),
                Rtype::A,
                &apex,
                &z,
                &mut budget()
            )),
            Err(ede::DNSSEC_BOGUS)
        );
        // Records of another zone prove nothing here.
        assert_eq!(
            ede_of(prove_nxdomain(
                &name("b.example."),
                &name("other."),
                &z,
                &mut budget()
            )),
            Err(ede::NSEC_MISSING)
        );
    }

    #[test]
    fn opt_out_spans_and_costly_zones_are_insecure_not_secure() {
        let apex = name("example.");
        let z = zone(0, true);
        assert_eq!(
            ede_of(prove_nxdomain(
                &name("b.example."),
                &apex,
                &z,
                &mut budget()
            )),
            Ok(Nsec3Proof::Insecure)
        );
        // An unsigned delegation hidden in an opt-out span.
        assert_eq!(
            ede_of(prove_nodata(
                &name("d.example."),
                Rtype::DS,
                &apex,
                &z,
                &mut budget()
            )),
            Ok(Nsec3Proof::Insecure)
        );
        assert_eq!(
            ede_of(prove_insecure_delegation(
                &name("d.example."),
                &apex,
                &z,
                &mut budget()
            )),
            P
        );
        // RFC 9276: past the iteration limit, nothing is hashed; insecure.
        let costly = zone(MAX_ITERATIONS + 1, false);
        assert_eq!(
            ede_of(prove_nxdomain(
                &name("b.example."),
                &apex,
                &costly,
                &mut budget()
            )),
            Ok(Nsec3Proof::Insecure)
        );
        assert_eq!(
            ede_of(prove_nxdomain(
                &name("b.example."),
                &apex,
                &zone(MAX_ITERATIONS, false),
                &mut budget()
            )),
            P
        );
    }

    /// CVE-2023-50868: a name 40 labels below the zone makes a validator
    /// hash every ancestor to find the closest encloser. The budget stops
    /// it at 16 hashes and the answer is bogus; with no bound, the same
    /// proof holds after 41.
    #[test]
    fn a_long_name_costs_a_bounded_number_of_hashes() {
        let apex = name("example.");
        let z = zone(10, false);
        let long: Name = format!("{}b.example.", "x.".repeat(40)).parse().unwrap();
        assert_eq!(
            ede_of(prove_nxdomain(&long, &apex, &z, &mut budget())),
            Err(ede::DNSSEC_BOGUS)
        );
        let mut unbounded = Budget::new(WorkLimits {
            nsec3_hashes: 1000,
            ..WorkLimits::default()
        });
        assert_eq!(ede_of(prove_nxdomain(&long, &apex, &z, &mut unbounded)), P);
    }
}

/// The DNSKEY RRset of `zone` holding `keys`, and `signer`'s signature over it.
fn dnskey_set(zone: &str, keys: &[&ZoneKey], signer: &ZoneKey) -> (RrSet, Rrsig) {
    let mut set = RrSet::new(name(zone), Rtype::DNSKEY, 3600);
    for k in keys {
        set.push(Rdata::Dnskey(k.dnskey().clone()).to_wire(), 3600);
    }
    let sig = sign(&set, zone, zone, signer, NOW - DAY, NOW + DAY);
    (set, sig)
}

/// The chain of trust with the primitives alone: the root's keys by the
/// anchor, a TLD's DS set by the root's ZSK, the TLD's keys by that DS, and
/// a host's address by the TLD's ZSK.
#[test]
fn a_chain_of_trust_from_an_anchor_down_to_an_address() {
    use bulwark_resolver::validate::{
        trust_by_anchors, trust_by_ds, AnchorData, TrustAnchor, ZoneKeys,
    };
    let (root_ksk, root_zsk) = (
        key(Algorithm::Ed25519, KeyRole::Ksk),
        key(Algorithm::Ed25519, KeyRole::Zsk),
    );
    let (tld_ksk, tld_zsk) = (
        key(Algorithm::EcdsaP256Sha256, KeyRole::Ksk),
        key(Algorithm::EcdsaP256Sha256, KeyRole::Zsk),
    );
    let anchor = TrustAnchor {
        owner: Name::root(),
        data: AnchorData::Ds(root_ksk.ds(&Name::root(), DigestType::Sha256)),
        managed: false,
    };
    let (root_keys, root_sig) = dnskey_set(".", &[&root_ksk, &root_zsk], &root_ksk);
    let b = &mut budget();
    let ZoneKeys::Secure {
        keys: root_trusted, ..
    } = trust_by_anchors(
        &Name::root(),
        &root_keys,
        std::slice::from_ref(&root_sig),
        std::slice::from_ref(&anchor),
        NOW,
        b,
    )
    .unwrap()
    else {
        panic!("the root's keys are not secure");
    };
    // The TLD's DS set, published and signed in the root zone.
    let ds = tld_ksk.ds(&name("example."), DigestType::Sha256);
    let mut ds_set = RrSet::new(name("example."), Rtype::DS, 86400);
    ds_set.push(Rdata::Ds(ds.clone()).to_wire(), 86400);
    let ds_sig = sign(&ds_set, "example.", ".", &root_zsk, NOW - DAY, NOW + DAY);
    verify_rrset(&ds_set, &[ds_sig], &Name::root(), &root_trusted, NOW, b).unwrap();
    let (tld_keys, tld_sig) = dnskey_set("example.", &[&tld_ksk, &tld_zsk], &tld_ksk);
    let ZoneKeys::Secure {
        keys: tld_trusted, ..
    } = trust_by_ds(
        &name("example."),
        &tld_keys,
        std::slice::from_ref(&tld_sig),
        std::slice::from_ref(&ds),
        NOW,
        b,
    )
    .unwrap()
    else {
        panic!("the TLD's keys are not secure");
    };
    let host = a_set("www.example.", 300);
    let host_sig = sign(
        &host,
        "www.example.",
        "example.",
        &tld_zsk,
        NOW - DAY,
        NOW + DAY,
    );
    verify_rrset(&host, &[host_sig], &name("example."), &tld_trusted, NOW, b).unwrap();
    assert!(b.used() <= 4, "{} checks for four RRsets", b.used());

    // A DNSKEY set signed only by a key the DS does not name is bogus.
    let (zsk_signed, zsk_sig) = dnskey_set("example.", &[&tld_ksk, &tld_zsk], &tld_zsk);
    let e = trust_by_ds(
        &name("example."),
        &zsk_signed,
        &[zsk_sig],
        std::slice::from_ref(&ds),
        NOW,
        &mut budget(),
    )
    .unwrap_err();
    assert_eq!(e.ede, ede::DNSKEY_MISSING);
    // A DS of an algorithm not implemented: insecure, not bogus.
    let mut unknown = ds;
    unknown.algorithm = 253;
    assert_eq!(
        trust_by_ds(
            &name("example."),
            &tld_keys,
            &[tld_sig],
            &[unknown],
            NOW,
            &mut budget()
        ),
        Ok(ZoneKeys::Insecure {
            ede: ede::UNSUPPORTED_DNSKEY_ALGORITHM
        })
    );
    // A key as the anchor instead of a DS.
    let key_anchor = TrustAnchor {
        owner: Name::root(),
        data: AnchorData::Dnskey(root_ksk.dnskey().clone()),
        managed: false,
    };
    assert!(matches!(
        trust_by_anchors(
            &Name::root(),
            &root_keys,
            std::slice::from_ref(&root_sig),
            &[key_anchor],
            NOW,
            &mut budget()
        ),
        Ok(ZoneKeys::Secure { .. })
    ));
    // An anchor for another key: bogus.
    let stranger = TrustAnchor {
        owner: Name::root(),
        data: AnchorData::Dnskey(key(Algorithm::Ed25519, KeyRole::Ksk).dnskey().clone()),
        managed: false,
    };
    assert_eq!(
        trust_by_anchors(
            &Name::root(),
            &root_keys,
            &[root_sig],
            &[stranger],
            NOW,
            &mut budget()
        )
        .unwrap_err()
        .ede,
        ede::DNSKEY_MISSING
    );
}

/// Zones signed by BIND's dnssec-signzone, with RSASHA1 and NSEC,
/// RSASHA1-NSEC3-SHA1 and NSEC3 (the algorithms a validator must still
/// check, RFC 8624 §3.1), and Ed448 (RFC 8080, which bulwark checks with
/// another library than it signs with): the DS dnssec-dsfromkey makes vouches for the
/// keys, the keys for the data, and the zone's own NSEC or NSEC3 chain
/// proves what does not exist.
#[test]
fn zones_signed_by_bind_validate_with_their_ds_and_denials() {
    use bulwark_resolver::validate::nsec::NsecRecord;
    use bulwark_resolver::validate::nsec3::{Nsec3Proof, Nsec3Record};
    use bulwark_resolver::validate::{
        nsec, nsec3, parse_anchors, trust_by_ds, AnchorData, ZoneKeys,
    };
    let (Some(keygen), Some(signzone), Some(dsfromkey)) = (
        bulwark_testkit::require_tool("dnssec-keygen"),
        bulwark_testkit::require_tool("dnssec-signzone"),
        bulwark_testkit::require_tool("dnssec-dsfromkey"),
    ) else {
        return;
    };
    let now = u32::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
    .unwrap();
    for (algorithm, nsec3_args) in [
        ("RSASHA1", None),
        ("NSEC3RSASHA1", Some(["-3", "aabbccdd", "-H", "5"])),
        ("ED448", None),
    ] {
        // RSA keys of 1024 bits keep the test quick; the curves have one size.
        let bits: &[&str] = if algorithm.contains("RSA") {
            &["-b", "1024"]
        } else {
            &[]
        };
        let dir = std::env::temp_dir().join(format!(
            "bulwark-validate-{}-{algorithm}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("example.zone"),
            "$TTL 3600\n@ SOA ns admin 1 3600 600 86400 300\n@ NS ns\nns A 192.0.2.53\nwww A 192.0.2.80\n*.w TXT \"wild\"\n",
        )
        .unwrap();
        let run = |program: &std::path::Path, args: &[&str]| -> String {
            let out = std::process::Command::new(program)
                .args(args)
                .current_dir(&dir)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{program:?} {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).unwrap()
        };
        let keygen_args = |ksk: bool| -> Vec<&str> {
            let mut a = vec!["-q", "-a", algorithm];
            a.extend_from_slice(bits);
            if ksk {
                a.extend_from_slice(&["-f", "KSK"]);
            }
            a.extend_from_slice(&["-n", "ZONE", "example."]);
            a
        };
        run(&keygen, &keygen_args(false));
        let ksk = run(&keygen, &keygen_args(true));
        let mut args = vec!["-q", "-o", "example.", "-S", "-K", ".", "-f", "signed.zone"];
        if let Some(extra) = &nsec3_args {
            args.extend_from_slice(extra);
        }
        args.push("example.zone");
        run(&signzone, &args);
        let ds_text = run(&dsfromkey, &["-2", &format!("{}.key", ksk.trim())]);
        let ds: Vec<_> = parse_anchors(&ds_text, "dsfromkey")
            .unwrap()
            .into_iter()
            .filter_map(|a| match a.data {
                AnchorData::Ds(ds) => Some(ds),
                AnchorData::Dnskey(_) => None,
            })
            .collect();
        let signed = std::fs::read_to_string(dir.join("signed.zone")).unwrap();
        let records = bulwark_zone::parse_str(&signed, &name("example."), "signed.zone").unwrap();
        let set_of = |owner: &str, rtype: Rtype| -> (RrSet, Vec<Rrsig>) {
            let mut set = RrSet::new(name(owner), rtype, u32::MAX);
            let mut sigs = Vec::new();
            for r in records.iter().filter(|r| r.owner == name(owner)) {
                match &r.rdata {
                    Rdata::Rrsig(sig) if sig.type_covered == rtype => sigs.push(sig.clone()),
                    d if d.rtype() == rtype => set.push(d.to_wire(), r.ttl),
                    _ => {}
                }
            }
            (set, sigs)
        };
        let zone = name("example.");
        let b = &mut budget();
        let (keys, key_sigs) = set_of("example.", Rtype::DNSKEY);
        let ZoneKeys::Secure { keys, .. } = trust_by_ds(&zone, &keys, &key_sigs, &ds, now, b)
            .unwrap_or_else(|e| panic!("{algorithm}: {e:?}"))
        else {
            panic!("{algorithm}: the keys are not secure");
        };
        let (www, www_sigs) = set_of("www.example.", Rtype::A);
        verify_rrset(&www, &www_sigs, &zone, &keys, now, b)
            .unwrap_or_else(|e| panic!("{algorithm}: {e:?}"));
        // A wildcard's signature, checked for a name it answers.
        let (wild, wild_sigs) = set_of("*.w.example.", Rtype::TXT);
        let mut expanded = wild.clone();
        expanded.owner = name("host.w.example.");
        assert!(
            verify_rrset(&expanded, &wild_sigs, &zone, &keys, now, b)
                .unwrap()
                .wildcard
        );

        match nsec3_args {
            None => {
                let chain: Vec<NsecRecord> = records
                    .iter()
                    .filter_map(|r| match &r.rdata {
                        Rdata::Nsec(n) => Some(NsecRecord {
                            owner: r.owner.clone(),
                            nsec: n.clone(),
                        }),
                        _ => None,
                    })
                    .collect();
                assert_eq!(
                    nsec::prove_nxdomain(&name("nope.example."), &chain),
                    Ok(zone.clone())
                );
                assert_eq!(
                    nsec::prove_nodata(&name("www.example."), Rtype::AAAA, &chain),
                    Ok(())
                );
                assert_eq!(
                    nsec::prove_wildcard_answer(&name("host.w.example."), 2, &chain),
                    Ok(())
                );
                assert!(nsec::prove_nxdomain(&name("www.example."), &chain).is_err());
            }
            Some(_) => {
                let chain: Vec<Nsec3Record> = records
                    .iter()
                    .filter_map(|r| match &r.rdata {
                        Rdata::Nsec3(n) => Nsec3Record::new(&r.owner, n.clone()),
                        _ => None,
                    })
                    .collect();
                assert!(!chain.is_empty());
                let p =
                    |r: Result<Nsec3Proof, bulwark_resolver::validate::Bogus>| r.map_err(|b| b.ede);
                assert_eq!(
                    p(nsec3::prove_nxdomain(
                        &name("nope.example."),
                        &zone,
                        &chain,
                        &mut budget()
                    )),
                    Ok(Nsec3Proof::Proven)
                );
                assert_eq!(
                    p(nsec3::prove_nodata(
                        &name("www.example."),
                        Rtype::AAAA,
                        &zone,
                        &chain,
                        &mut budget()
                    )),
                    Ok(Nsec3Proof::Proven)
                );
                assert_eq!(
                    p(nsec3::prove_wildcard_answer(
                        &name("host.w.example."),
                        2,
                        &zone,
                        &chain,
                        &mut budget()
                    )),
                    Ok(Nsec3Proof::Proven)
                );
                assert!(
                    nsec3::prove_nxdomain(&name("www.example."), &zone, &chain, &mut budget())
                        .is_err()
                );
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
