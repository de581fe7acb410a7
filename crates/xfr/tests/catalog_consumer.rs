//! Reading catalog zones (RFC 9432) as a consumer: which member zones a
//! catalog lists, with which properties, and when a catalog is broken and must
//! not be processed at all.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use bulwark_proto::Name;
use bulwark_xfr::catalog::{read_catalog, Catalog, CatalogError};
use bulwark_zone::Zone;

fn name(text: &str) -> Name {
    text.parse().unwrap()
}

const HEAD: &str = "$ORIGIN catz.invalid.
$TTL 0
@        SOA invalid. invalid. 1 3600 600 2419200 3600
@        NS  invalid.
";

fn read(body: &str) -> Result<Catalog, CatalogError> {
    let apex = name("catz.invalid.");
    let text = format!("{HEAD}{body}");
    let records = bulwark_zone::parse_str(&text, &apex, "catalog").unwrap();
    let (zone, _) = Zone::build(apex, records).unwrap();
    read_catalog(&zone)
}

/// The examples of RFC 9432 §4.2 (member zones), §4.4.1 (coo), §4.4.2
/// (group) and §4.5 (custom properties) in one catalog, plus records a
/// consumer must ignore.
const RFC_EXAMPLE: &str = r#"
version                     TXT "2"
unique-1.zones              PTR example.com.
unique-2.zones              PTR example.net.
unique-3.zones              PTR example.org.
group.unique-1.zones        TXT nodnssec
group.unique-2.zones        TXT operator-x-sign-with-nsec3
group.unique-2.zones        TXT operator-y-nsec3
coo.unique-3.zones          PTR newcatz.invalid.
; RFC 9432 §4.5: custom properties, global and per member
bulwark.ext                 TXT "global custom property"
serial.bulwark.ext.unique-1.zones TXT "member custom property"
; an unknown property, a known property with an unknown type, a deeper name
epoch.unique-2.zones        TXT "123"
group.unique-3.zones        A   192.0.2.1
a.b.group.unique-3.zones    TXT "not a property"
; a property whose member node has no PTR, and a PTR outside zones
group.unique-4.zones        TXT lonely
stray                       PTR example.info.
"#;

#[test]
fn rfc_example_catalog_lists_three_members_with_their_properties() {
    let catalog = read(RFC_EXAMPLE).unwrap();
    let summary: Vec<(String, String, Vec<String>, Option<String>)> = catalog
        .members
        .iter()
        .map(|m| {
            (
                m.zone.to_string(),
                String::from_utf8(m.unique_id.clone()).unwrap(),
                m.groups.clone(),
                m.coo.as_ref().map(Name::to_string),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                "example.com.".into(),
                "unique-1".into(),
                vec!["nodnssec".into()],
                None
            ),
            (
                "example.net.".into(),
                "unique-2".into(),
                vec![
                    "operator-x-sign-with-nsec3".into(),
                    "operator-y-nsec3".into()
                ],
                None
            ),
            (
                "example.org.".into(),
                "unique-3".into(),
                vec![],
                Some("newcatz.invalid.".into())
            ),
        ]
    );
    assert_eq!(
        catalog.member(&name("EXAMPLE.net.")).unwrap().unique_id,
        b"unique-2"
    );
    assert!(catalog.member(&name("example.info.")).is_none());
}

#[test]
fn catalog_without_version_is_not_processed() {
    assert_eq!(
        read("m.zones PTR example.com.\n"),
        Err(CatalogError::MissingVersion)
    );
}

#[test]
fn catalog_with_version_1_is_not_processed() {
    assert_eq!(
        read("version TXT \"1\"\nm.zones PTR example.com.\n"),
        Err(CatalogError::UnsupportedVersion {
            version: "1".into()
        })
    );
}

#[test]
fn catalog_with_two_version_records_is_not_processed() {
    assert_eq!(
        read("version TXT \"2\"\nversion TXT \"3\"\n"),
        Err(CatalogError::MultipleVersions { count: 2 })
    );
}

#[test]
fn version_of_another_type_does_not_count() {
    assert_eq!(
        read("version PTR example.com.\n"),
        Err(CatalogError::MissingVersion)
    );
}

#[test]
fn empty_catalog_with_version_has_no_members() {
    assert_eq!(read("version TXT \"2\"\n"), Ok(Catalog::default()));
}

#[test]
fn member_node_with_two_ptrs_breaks_the_catalog() {
    let got = read("version TXT \"2\"\nm.zones PTR example.com.\nm.zones PTR example.net.\nok.zones PTR example.org.\n");
    assert_eq!(
        got,
        Err(CatalogError::MultipleMemberPtrs {
            owner: Box::new(name("m.zones.catz.invalid.")),
            count: 2
        })
    );
}

#[test]
fn member_node_without_ptr_is_no_member() {
    let catalog =
        read("version TXT \"2\"\ngroup.m.zones TXT g\nm.zones TXT \"not a ptr\"\n").unwrap();
    assert!(catalog.members.is_empty());
}

#[test]
fn one_zone_under_two_member_labels_breaks_the_catalog() {
    let got = read("version TXT \"2\"\na.zones PTR example.com.\nb.zones PTR Example.COM.\n");
    assert_eq!(
        got,
        Err(CatalogError::DuplicateMember {
            zone: Box::new(name("example.com.")),
            first: Box::new(name("a.zones.catz.invalid.")),
            second: Box::new(name("b.zones.catz.invalid.")),
        })
    );
}

#[test]
fn two_coo_records_break_the_catalog() {
    let got = read(
        "version TXT \"2\"\nm.zones PTR example.com.\ncoo.m.zones PTR a.invalid.\ncoo.m.zones PTR b.invalid.\n",
    );
    assert_eq!(
        got,
        Err(CatalogError::MultipleCoo {
            owner: Box::new(name("coo.m.zones.catz.invalid.")),
            count: 2
        })
    );
}

#[test]
fn group_split_over_character_strings_is_one_value() {
    let catalog =
        read("version TXT \"2\"\nm.zones PTR example.com.\ngroup.m.zones TXT \"ab\" \"cd\"\n")
            .unwrap();
    assert_eq!(catalog.members[0].groups, vec!["abcd".to_string()]);
}

#[test]
fn member_labels_are_matched_without_case() {
    let catalog =
        read("version TXT \"2\"\nMixed.zones PTR example.com.\ngroup.MIXED.zones TXT g\n").unwrap();
    assert_eq!(catalog.members[0].unique_id, b"mixed");
    assert_eq!(catalog.members[0].groups, vec!["g".to_string()]);
}

#[test]
fn members_come_sorted_by_zone_name_whatever_their_labels() {
    let catalog = read(
        "version TXT \"2\"\na.zones PTR z.example.\nb.zones PTR a.example.\nc.zones PTR example.\n",
    )
    .unwrap();
    let zones: Vec<String> = catalog.members.iter().map(|m| m.zone.to_string()).collect();
    assert_eq!(zones, vec!["example.", "a.example.", "z.example."]);
}

#[test]
fn errors_say_which_rfc_rule_was_broken() {
    let err = read("version TXT \"2\"\na.zones PTR example.com.\nb.zones PTR example.com.\n")
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("example.com."), "{text}");
    assert!(text.contains("RFC 9432 §4.2"), "{text}");
}
