//! DNAME redirection (RFC 6672 §3.2): the DNAME RRset, then a CNAME synthesized
//! from it for the name asked, then the answer continues at the new name.

use bulwark_proto::{Name, Rtype};
use bulwark_zone::zone::RRset;

/// What substituting the DNAME target into a name gave.
#[derive(Debug)]
// `Name` is stored inline by design (no allocation per query); boxing it would allocate.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Substitution {
    /// The synthesized CNAME's target.
    Target(Name),
    /// RFC 6672 §2.2: the result is longer than 255 octets: YXDOMAIN.
    TooLong,
    /// The DNAME rdata is not a name: nothing can be synthesized.
    Unusable,
}

/// The new name for `name` under the DNAME at `owner`.
pub(crate) fn substitute(name: &Name, owner: &Name, dname: &RRset) -> Substitution {
    let Some(target) = dname.rdatas().next().and_then(|r| Name::from_wire(r).ok()) else {
        return Substitution::Unusable;
    };
    match name.replace_suffix(owner, &target) {
        Some(Ok(new)) => Substitution::Target(new),
        Some(Err(_)) => Substitution::TooLong,
        None => Substitution::Unusable,
    }
}

/// RFC 6672 §3.2: the synthesized CNAME takes the TTL of the DNAME.
pub(crate) fn synthesized_ttl(dname: &RRset) -> u32 {
    dname.ttl()
}

/// The synthesized record is a CNAME.
pub(crate) const SYNTHESIZED_TYPE: Rtype = Rtype::CNAME;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    fn n(s: &str) -> Name {
        Name::from_presentation(s.as_bytes(), None).unwrap()
    }

    fn dname(target: &str) -> RRset {
        RRset::new(
            Rtype::DNAME,
            77,
            vec![n(target).as_wire().to_vec().into_boxed_slice()],
        )
    }

    #[test]
    fn substitution_replaces_the_owner_suffix_keeping_the_query_case() {
        let d = dname("example.org.");
        match substitute(&n("A.b.dn.example.com."), &n("dn.example.com."), &d) {
            Substitution::Target(t) => assert!(t.eq_exact(&n("A.b.example.org."))),
            other => panic!("{other:?}"),
        }
        assert_eq!(synthesized_ttl(&d), 77);
    }

    #[test]
    fn substitution_past_255_octets_is_too_long() {
        let l63 = "a".repeat(63);
        let d = dname(&format!("{l63}.{l63}.{l63}."));
        let q = n(&format!("{l63}.d.example."));
        assert!(matches!(
            substitute(&q, &n("d.example."), &d),
            Substitution::TooLong
        ));
    }
}
