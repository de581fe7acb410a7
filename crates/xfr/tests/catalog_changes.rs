//! What a catalog consumer must do when a new version of a catalog zone
//! arrives (RFC 9432 §5.3 removal, §5.4 member node name change, §4.4
//! properties), from two versions read out of zone files.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use bulwark_proto::rdata::Soa;
use bulwark_proto::Name;
use bulwark_xfr::catalog::{
    catalog_changes, catalog_records, read_catalog, read_catalog_records, Catalog, CatalogChanges,
    MemberSpec,
};
use bulwark_zone::Zone;

fn name(text: &str) -> Name {
    text.parse().unwrap()
}

fn read(serial: u32, body: &str) -> Catalog {
    let apex = name("catz.invalid.");
    let text = format!(
        "$ORIGIN catz.invalid.\n$TTL 0\n@ SOA invalid. invalid. {serial} 3600 600 2419200 3600\n@ NS invalid.\nversion TXT \"2\"\n{body}"
    );
    let records = bulwark_zone::parse_str(&text, &apex, "catalog").unwrap();
    read_catalog(&Zone::build(apex, records).unwrap().0).unwrap()
}

fn zones(list: &[bulwark_xfr::catalog::CatalogMember]) -> Vec<String> {
    list.iter().map(|m| m.zone.to_string()).collect()
}

const OLD: &str = "
a.zones        PTR stays.example.
b.zones        PTR leaves.example.
c.zones        PTR relabelled.example.
d.zones        PTR regrouped.example.
group.d.zones  TXT old-group
e.zones        PTR migrating.example.
";

#[test]
fn new_removed_relabelled_regrouped_and_migrating_members_are_told_apart() {
    let old = read(1, OLD);
    let new = read(
        2,
        "
a.zones        PTR stays.example.
c2.zones       PTR relabelled.example.
d.zones        PTR regrouped.example.
group.d.zones  TXT new-group
e.zones        PTR migrating.example.
coo.e.zones    PTR other-catz.invalid.
f.zones        PTR arrives.example.
",
    );
    let changes = catalog_changes(&old, &new);
    assert_eq!(zones(&changes.added), vec!["arrives.example."]);
    assert_eq!(zones(&changes.removed), vec!["leaves.example."]);
    assert_eq!(zones(&changes.reset), vec!["relabelled.example."]);
    assert_eq!(changes.reset[0].unique_id, b"c2");
    assert_eq!(zones(&changes.regrouped), vec!["regrouped.example."]);
    assert_eq!(changes.regrouped[0].groups, vec!["new-group".to_string()]);
    assert_eq!(zones(&changes.coo_changed), vec!["migrating.example."]);
    assert_eq!(
        changes.coo_changed[0].coo,
        Some(name("other-catz.invalid."))
    );
}

#[test]
fn relabelled_member_with_new_groups_is_only_a_reset() {
    let old = read(1, "a.zones PTR z.example.\ngroup.a.zones TXT one\n");
    let new = read(2, "b.zones PTR z.example.\ngroup.b.zones TXT two\n");
    let changes = catalog_changes(&old, &new);
    assert_eq!(zones(&changes.reset), vec!["z.example."]);
    assert!(changes.regrouped.is_empty());
    assert!(changes.added.is_empty() && changes.removed.is_empty());
}

#[test]
fn same_catalog_under_a_new_serial_changes_nothing() {
    let changes = catalog_changes(&read(1, OLD), &read(2, OLD));
    assert!(changes.is_empty());
    assert_eq!(changes, CatalogChanges::default());
}

#[test]
fn emptied_catalog_removes_every_member() {
    let changes = catalog_changes(&read(1, OLD), &read(2, ""));
    assert_eq!(changes.removed.len(), 5);
    assert!(changes.added.is_empty());
}

#[test]
fn first_catalog_adds_every_member() {
    let changes = catalog_changes(&Catalog::default(), &read(1, OLD));
    assert_eq!(
        zones(&changes.added),
        vec![
            "leaves.example.",
            "migrating.example.",
            "regrouped.example.",
            "relabelled.example.",
            "stays.example.",
        ]
    );
}

#[test]
fn reordering_the_producer_list_gives_no_change_on_the_consumer() {
    let apex = name("catz.invalid.");
    let soa = |serial| Soa {
        mname: name("invalid."),
        rname: name("invalid."),
        serial,
        refresh: 3600,
        retry: 600,
        expire: 2_419_200,
        minimum: 3600,
    };
    let mut members: Vec<MemberSpec> = (0..50)
        .map(|i| MemberSpec::new(name(&format!("z{i}.example."))))
        .collect();
    let one = read_catalog_records(
        &apex,
        &catalog_records(&apex, &members, &soa(1), 0).unwrap(),
    )
    .unwrap();
    members.reverse();
    members[0].groups.push("g".into());
    let regrouped_zone = members[0].zone.clone();
    let two = read_catalog_records(
        &apex,
        &catalog_records(&apex, &members, &soa(2), 0).unwrap(),
    )
    .unwrap();
    let changes = catalog_changes(&one, &two);
    assert!(changes.added.is_empty() && changes.removed.is_empty() && changes.reset.is_empty());
    assert_eq!(changes.regrouped.len(), 1);
    assert_eq!(changes.regrouped[0].zone, regrouped_zone);
}
