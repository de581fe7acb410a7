//! Finding the zone for a query name: the longest apex that is a suffix.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::sync::Arc;

use bulwark_proto::Name;
use bulwark_zone::{Zone, ZoneSet};

fn n(s: &str) -> Name {
    s.parse().unwrap()
}

fn set(apexes: &[&str]) -> ZoneSet {
    ZoneSet::new(apexes.iter().map(|a| Arc::new(Zone::empty(n(a)))).collect())
}

fn found(zs: &ZoneSet, q: &str) -> Option<Name> {
    zs.find(&n(q)).map(|z| z.apex().clone())
}

#[test]
fn the_longest_matching_apex_wins() {
    let zs = set(&["example.", "sub.example.", "deep.sub.example."]);
    assert_eq!(found(&zs, "www.example."), Some(n("example.")));
    assert_eq!(found(&zs, "www.sub.example."), Some(n("sub.example.")));
    assert_eq!(
        found(&zs, "a.b.deep.sub.example."),
        Some(n("deep.sub.example."))
    );
    assert_eq!(found(&zs, "sub.example."), Some(n("sub.example.")));
}

#[test]
fn matching_is_by_whole_labels() {
    let zs = set(&["example."]);
    assert_eq!(found(&zs, "notexample."), None);
    assert_eq!(found(&zs, "com."), None);
}

#[test]
fn matching_ignores_case() {
    let zs = set(&["Example.COM."]);
    assert_eq!(found(&zs, "WWW.example.com."), Some(n("example.com.")));
    assert!(zs.get(&n("EXAMPLE.com.")).is_some());
}

#[test]
fn the_root_zone_catches_every_name() {
    let zs = set(&[".", "example."]);
    assert_eq!(found(&zs, "www.example."), Some(n("example.")));
    assert_eq!(found(&zs, "org."), Some(Name::root()));
}

#[test]
fn names_longer_than_every_apex_still_match() {
    let zs = set(&["example."]);
    let long = format!("{}.example.", ["a"; 100].join("."));
    assert_eq!(found(&zs, &long), Some(n("example.")));
}

#[test]
fn an_empty_set_finds_nothing() {
    let zs = ZoneSet::default();
    assert!(zs.is_empty());
    assert_eq!(found(&zs, "example."), None);
}

#[test]
fn of_two_zones_with_one_apex_the_first_is_served() {
    let first = Arc::new(Zone::empty(n("example.")));
    let second = Arc::new(Zone::empty(n("example.")));
    let zs = ZoneSet::new(vec![first.clone(), second]);
    assert!(Arc::ptr_eq(zs.find(&n("www.example.")).unwrap(), &first));
    assert_eq!(zs.len(), 2);
}

#[test]
fn replacing_a_zone_shares_the_others() {
    let a = Arc::new(Zone::empty(n("a.example.")));
    let b = Arc::new(Zone::empty(n("b.example.")));
    let zs = ZoneSet::new(vec![a.clone(), b.clone()]);
    let b2 = Arc::new(Zone::empty(n("B.example.")));
    let next = zs.with_zone(b2.clone());
    assert_eq!(next.len(), 2);
    assert!(Arc::ptr_eq(next.find(&n("x.b.example.")).unwrap(), &b2));
    assert!(Arc::ptr_eq(next.find(&n("x.a.example.")).unwrap(), &a));
    // The old set is untouched.
    assert!(Arc::ptr_eq(zs.find(&n("x.b.example.")).unwrap(), &b));
    let fewer = next.without_zone(&n("a.example."));
    assert_eq!(fewer.len(), 1);
    assert!(fewer.find(&n("x.a.example.")).is_none());
}
