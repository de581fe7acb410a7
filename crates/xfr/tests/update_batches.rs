//! Several messages on one edit, all-or-nothing per message, the diff that
//! `finish` gives (serials, net changes, agreement with
//! `bulwark_zone::diff_zones`), and the rules for zones the server signs.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod update_support;

use std::collections::BTreeMap;

use bulwark_proto::{Rcode, Record};
use bulwark_xfr::serial::SerialPolicy;
use bulwark_xfr::update::{UpdateOptions, ZoneEdit};
use bulwark_zone::{apply_diff, diff_zones, Zone, ZoneDiff};
use proptest::prelude::*;
use update_support::{after, expect, lines, origin, run, soa, zone, Msg, ZONE};

fn sorted(records: &[Record]) -> Vec<String> {
    let mut v: Vec<String> = records.iter().map(ToString::to_string).collect();
    v.sort();
    v
}

/// The diff must be the one `diff_zones` finds between the zone and the
/// zone it leads to.
fn assert_agrees_with_diff_zones(base: &Zone, diff: &ZoneDiff) {
    let records = apply_diff(base.records().collect(), diff).unwrap();
    let new = Zone::build(origin(), records).unwrap().0;
    let reference = diff_zones(base, &new).unwrap();
    assert_eq!(sorted(&diff.removed), sorted(&reference.removed), "removed");
    assert_eq!(sorted(&diff.added), sorted(&reference.added), "added");
    assert_eq!(diff.new_soa, reference.new_soa);
    assert_eq!(diff.old_soa, reference.old_soa);
}

#[test]
fn a_refused_message_leaves_the_edit_exactly_as_it_was() {
    let base = zone(ZONE);
    let options = UpdateOptions::default();
    let mut edit = ZoneEdit::new(&base);
    edit.apply(
        &Msg::new().update("first 300 IN A 192.0.2.1").request(),
        &options,
    )
    .unwrap();
    let refused = [
        // Changes first, then a record the prescan refuses.
        Msg::new()
            .update("www 0 ANY ANY")
            .update("second 300 IN A 192.0.2.2")
            .update("first 0 NONE A 192.0.2.1")
            .update("x 300 NONE A 192.0.2.3"),
        // A prerequisite on the first message's work that does not hold.
        Msg::new()
            .prereq("first 0 NONE ANY")
            .update("www 0 ANY ANY"),
        Msg::new()
            .update("www 0 ANY ANY")
            .update("elsewhere.example.net. 300 IN A 192.0.2.1"),
    ];
    let before = edit.clone();
    for msg in refused {
        assert!(edit.apply(&msg.request(), &options).is_err());
    }
    assert_eq!(
        edit.finish(SerialPolicy::Increment, 0),
        before.finish(SerialPolicy::Increment, 0)
    );
}

#[test]
fn two_messages_make_one_new_version() {
    let base = zone(ZONE);
    let msgs = [
        Msg::new()
            .update("host 300 IN A 192.0.2.60")
            .update("www 0 NONE A 192.0.2.10"),
        Msg::new()
            .prereq("host 0 ANY A")
            .prereq("www 0 IN A 192.0.2.11")
            .update("host 300 IN AAAA 2001:db8::60")
            .update("www 0 ANY TXT"),
    ];
    let (results, diff) = run(&base, &msgs, &UpdateOptions::default());
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let diff = diff.unwrap();
    assert_eq!(
        (diff.old_serial(), diff.new_serial()),
        (1, 2),
        "one serial step per batch"
    );
    assert_eq!(
        after(&base, Some(&diff)),
        expect(
            ZONE,
            &[
                &format!("-{}", soa(1)),
                &format!("+{}", soa(2)),
                "-www A 192.0.2.10",
                "-www TXT \"hello\"",
                "+host A 192.0.2.60",
                "+host AAAA 2001:db8::60",
            ]
        )
    );
    assert_agrees_with_diff_zones(&base, &diff);
}

#[test]
fn changes_undone_within_the_batch_are_in_neither_list() {
    let base = zone(ZONE);
    let msgs = [
        Msg::new()
            .update("temp 300 IN A 192.0.2.70")
            .update("www 0 ANY A"),
        Msg::new()
            .update("temp 0 ANY ANY")
            .update("www 300 IN A 192.0.2.10")
            .update("www 300 IN A 192.0.2.11")
            .update("kept 300 IN TXT \"k\""),
    ];
    let (_, diff) = run(&base, &msgs, &UpdateOptions::default());
    let diff = diff.unwrap();
    assert!(diff.removed.is_empty(), "{:?}", diff.removed);
    assert_eq!(sorted(&diff.added), ["kept.example.\t300\tIN\tTXT\t\"k\""]);
    // And a batch that undoes all it did makes no new version.
    let msgs = [
        Msg::new().update("temp 300 IN A 192.0.2.70"),
        Msg::new().update("temp 0 NONE A 192.0.2.70"),
    ];
    assert_eq!(run(&base, &msgs, &UpdateOptions::default()).1, None);
}

#[test]
fn the_serial_comes_from_the_policy_unless_the_client_set_a_newer_one() {
    let base = zone(ZONE);
    let options = UpdateOptions::default();
    let change = || Msg::new().update("x 300 IN A 192.0.2.1");
    // 2026-11-24 12:00 UTC.
    let now = 1_795_521_600;
    for (policy, want) in [
        (SerialPolicy::Increment, 2),
        (SerialPolicy::UnixTime, 1_795_521_600),
        (SerialPolicy::DateSerial, 2_026_112_400),
    ] {
        let mut edit = ZoneEdit::new(&base);
        edit.apply(&change().request(), &options).unwrap();
        assert_eq!(
            edit.finish(policy, now).unwrap().new_serial(),
            want,
            "{policy:?}"
        );
    }
    // A client serial newer than the zone's stays, whatever comes after.
    let mut edit = ZoneEdit::new(&base);
    let set = Msg::new().update("example. 300 IN SOA ns hostmaster 5 3600 600 86400 300");
    let older = Msg::new().update("example. 300 IN SOA ns hostmaster 3 3600 600 86400 300");
    for msg in [set, change(), older] {
        edit.apply(&msg.request(), &options).unwrap();
    }
    let diff = edit.finish(SerialPolicy::UnixTime, now).unwrap();
    assert_eq!(diff.new_serial(), 5);
    assert_eq!(sorted(&diff.added), ["x.example.\t300\tIN\tA\t192.0.2.1"]);
    assert!(!diff
        .added
        .iter()
        .chain(&diff.removed)
        .any(|r| r.rtype() == bulwark_proto::Rtype::SOA));
}

/// A zone signed elsewhere (the keys and signatures are placeholders: only
/// their types matter here).
const SIGNED: &str = "$TTL 300
@ SOA ns hostmaster 1 3600 600 86400 300
@ NS ns
@ DNSKEY 256 3 13 AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+Pw==
@ RRSIG SOA 13 1 300 20300101000000 20200101000000 1234 example. ZGVmZ2hpamtsbW5vcHFy
@ RRSIG NS 13 1 300 20300101000000 20200101000000 1234 example. ZGVmZ2hpamtsbW5vcHFy
@ RRSIG DNSKEY 13 1 300 20300101000000 20200101000000 1234 example. ZGVmZ2hpamtsbW5vcHFy
@ RRSIG NSEC 13 1 300 20300101000000 20200101000000 1234 example. ZGVmZ2hpamtsbW5vcHFy
@ NSEC ns.example. NS SOA RRSIG NSEC DNSKEY
ns A 192.0.2.1
ns RRSIG A 13 2 300 20300101000000 20200101000000 1234 example. ZGVmZ2hpamtsbW5vcHFy
ns RRSIG NSEC 13 2 300 20300101000000 20200101000000 1234 example. ZGVmZ2hpamtsbW5vcHFy
ns NSEC www.example. A RRSIG NSEC
www A 192.0.2.10
www RRSIG A 13 2 300 20300101000000 20200101000000 1234 example. ZGVmZ2hpamtsbW5vcHFy
www RRSIG NSEC 13 2 300 20300101000000 20200101000000 1234 example. ZGVmZ2hpamtsbW5vcHFy
www NSEC example. A RRSIG NSEC
";

const SIGNS: UpdateOptions = UpdateOptions {
    signed_by_server: true,
    client_soa: bulwark_xfr::update::ClientSoa::WhenNewer,
};

#[test]
fn a_zone_the_server_signs_refuses_updates_to_its_dnssec_records() {
    let base = zone(SIGNED);
    let refused = [
        "www 300 IN RRSIG A 13 2 300 20300101000000 20200101000000 1234 example. AAAA",
        "www 0 ANY RRSIG",
        "www 0 NONE NSEC example. A RRSIG NSEC",
        "x 300 IN NSEC3 1 0 0 - 3MSEV9USMD4BR9S97V51R2TDVMR9IQO1 A",
        "example. 0 ANY NSEC3PARAM",
        "example. 0 NONE DNSKEY 256 3 13 AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+Pw==",
        "example. 300 IN DNSKEY 257 3 13 AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+Pw==",
        "example. 300 IN CDS 1234 13 2 AABBCCDDEEFF00112233445566778899AABBCCDDEEFF00112233445566778899",
        "example. 300 IN CDNSKEY 0 3 0 AA==",
    ];
    for update in refused {
        let msg = Msg::new().update("x 300 IN A 192.0.2.1").update(update);
        let (rcode, after_it) = update_support::outcome(&base, msg.clone(), &SIGNS);
        assert_eq!(rcode, Rcode::REFUSED, "{update}");
        assert_eq!(after_it, lines(&base), "{update}: nothing applied");
        // A zone signed elsewhere takes them as data.
        let (rcode, _) = update_support::outcome(&base, msg, &UpdateOptions::default());
        assert_eq!(rcode, Rcode::NOERROR, "{update}");
    }
    // Prerequisites may look at them.
    let msg = Msg::new()
        .prereq("www 0 ANY RRSIG")
        .prereq("example. 0 ANY DNSKEY");
    assert_eq!(
        update_support::outcome(&base, msg, &SIGNS).0,
        Rcode::NOERROR
    );
}

#[test]
fn in_a_signed_zone_a_deleted_name_keeps_its_signer_records_but_is_not_in_use() {
    let base = zone(SIGNED);
    let mut edit = ZoneEdit::new(&base);
    edit.apply(&Msg::new().update("www 0 ANY ANY").request(), &SIGNS)
        .unwrap();
    // As if the signer had passed: the name is gone for the next message.
    edit.apply(&Msg::new().prereq("www 0 NONE ANY").request(), &SIGNS)
        .unwrap();
    let err = edit
        .apply(&Msg::new().prereq("www 0 ANY ANY").request(), &SIGNS)
        .unwrap_err();
    assert_eq!(err.rcode(), Rcode::NXDOMAIN);
    let diff = edit.finish(SerialPolicy::Increment, 0).unwrap();
    // Only the data went; RRSIG and NSEC are the signer's to remove.
    assert_eq!(
        sorted(&diff.removed),
        ["www.example.\t300\tIN\tA\t192.0.2.10"]
    );
    // At the apex, the keys and chain stay too.
    let mut edit = ZoneEdit::new(&base);
    edit.apply(&Msg::new().update("example. 0 ANY ANY").request(), &SIGNS)
        .unwrap();
    assert_eq!(edit.finish(SerialPolicy::Increment, 0), None);
    // A zone signed elsewhere loses them with the name.
    let mut edit = ZoneEdit::new(&base);
    edit.apply(
        &Msg::new().update("www 0 ANY ANY").request(),
        &UpdateOptions::default(),
    )
    .unwrap();
    assert_eq!(
        edit.finish(SerialPolicy::Increment, 0)
            .unwrap()
            .removed
            .len(),
        4
    );
}

#[test]
fn rrsigs_follow_the_ttl_of_the_rrset_they_cover_in_the_diff() {
    let base = zone(SIGNED);
    let mut edit = ZoneEdit::new(&base);
    edit.apply(
        &Msg::new().update("www 60 IN A 192.0.2.11").request(),
        &SIGNS,
    )
    .unwrap();
    let diff = edit.finish(SerialPolicy::Increment, 0).unwrap();
    // The A RRset at TTL 60, and its RRSIG with it (RFC 4034 §3).
    let rrsig_ttls: Vec<u32> = diff
        .added
        .iter()
        .filter(|r| r.rtype() == bulwark_proto::Rtype::RRSIG)
        .map(|r| r.ttl)
        .collect();
    assert_eq!(rrsig_ttls, [60]);
    assert_agrees_with_diff_zones(&base, &diff);
}

#[test]
fn nsec3_records_kept_apart_by_the_zone_are_found_by_owner() {
    // The zone keeps NSEC3 RRsets in a chain out of its namespace; an edit
    // of a zone signed elsewhere still sees them at their owner.
    let text = format!(
        "{ZONE}3msev9usmd4br9s97v51r2tdvmr9iqo1 NSEC3 1 0 0 - 9KQNRPNEKPLBCT2M3K9JH3CLJVIOK2B5 NS SOA\n"
    );
    let base = zone(&text);
    let owner = "3msev9usmd4br9s97v51r2tdvmr9iqo1";
    let msg = Msg::new()
        .prereq(&format!("{owner} 0 ANY NSEC3"))
        .prereq(&format!("{} 0 ANY ANY", owner.to_uppercase()))
        .update(&format!(
            "{owner} 0 NONE NSEC3 1 0 0 - 9KQNRPNEKPLBCT2M3K9JH3CLJVIOK2B5 NS SOA"
        ));
    let (results, diff) = run(&base, &[msg], &UpdateOptions::default());
    assert!(results[0].is_ok(), "{results:?}");
    let diff = diff.unwrap();
    assert_eq!(diff.removed.len(), 1);
    let bumped = [format!("-{}", soa(1)), format!("+{}", soa(2))];
    assert_eq!(
        after(&base, Some(&diff)),
        expect(ZONE, &[&bumped[0], &bumped[1]])
    );
}

/// One operation of the property test: on names `a`, `b`, `c.d` and `www`,
/// types A and TXT, four values each, TTL 60 or 300.
#[derive(Debug, Clone)]
enum Op {
    Add(usize, usize, usize, bool),
    DeleteRrset(usize, usize),
    DeleteName(usize),
    DeleteRr(usize, usize, usize),
}

const NAMES: [&str; 4] = ["a", "b", "c.d", "www"];
const TYPES: [&str; 2] = ["A", "TXT"];

fn value(rtype: usize, v: usize) -> String {
    if rtype == 0 {
        format!("192.0.2.{}", v + 1)
    } else {
        format!("\"t{}\"", v + 1)
    }
}

const SMALL: &str = "$TTL 300
@ SOA ns hostmaster 1 3600 600 86400 300
@ NS ns
ns A 192.0.2.1
www A 192.0.2.1
www A 192.0.2.2
www TXT \"t1\"
c.d 60 TXT \"t2\"
";

/// The model: (name, type) -> (TTL, values), as RFC 2136 §3.4.2 and the
/// RRset-wide TTL rule say for plain data.
type Model = BTreeMap<(usize, usize), (u32, std::collections::BTreeSet<usize>)>;

fn model_base() -> Model {
    let mut m = Model::new();
    m.insert((3, 0), (300, [0, 1].into()));
    m.insert((3, 1), (300, [0].into()));
    m.insert((2, 1), (60, [1].into()));
    m
}

fn model_apply(m: &mut Model, op: &Op) {
    match *op {
        Op::Add(name, t, v, long) => {
            let ttl = if long { 300 } else { 60 };
            let entry = m.entry((name, t)).or_insert((ttl, Default::default()));
            entry.0 = ttl;
            entry.1.insert(v);
        }
        Op::DeleteRrset(name, t) => {
            m.remove(&(name, t));
        }
        Op::DeleteName(name) => m.retain(|k, _| k.0 != name),
        Op::DeleteRr(name, t, v) => {
            if let Some(e) = m.get_mut(&(name, t)) {
                e.1.remove(&v);
                if e.1.is_empty() {
                    m.remove(&(name, t));
                }
            }
        }
    }
}

fn model_zone(m: &Model, serial: u32) -> Vec<String> {
    let mut text = format!("$TTL 300\n{}\n@ NS ns\nns A 192.0.2.1\n", soa(serial));
    for (&(name, t), (ttl, values)) in m {
        for &v in values {
            text.push_str(&format!(
                "{} {ttl} {} {}\n",
                NAMES[name],
                TYPES[t],
                value(t, v)
            ));
        }
    }
    lines(&zone(&text))
}

fn op_text(op: &Op) -> String {
    match *op {
        Op::Add(name, t, v, long) => {
            format!(
                "{} {} IN {} {}",
                NAMES[name],
                if long { 300 } else { 60 },
                TYPES[t],
                value(t, v)
            )
        }
        Op::DeleteRrset(name, t) => format!("{} 0 ANY {}", NAMES[name], TYPES[t]),
        Op::DeleteName(name) => format!("{} 0 ANY ANY", NAMES[name]),
        Op::DeleteRr(name, t, v) => format!("{} 0 NONE {} {}", NAMES[name], TYPES[t], value(t, v)),
    }
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..4usize, 0..2usize, 0..4usize, any::<bool>()).prop_map(|(n, t, v, l)| Op::Add(n, t, v, l)),
        1 => (0..4usize, 0..2usize).prop_map(|(n, t)| Op::DeleteRrset(n, t)),
        1 => (0..4usize).prop_map(Op::DeleteName),
        2 => (0..4usize, 0..2usize, 0..4usize).prop_map(|(n, t, v)| Op::DeleteRr(n, t, v)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any batch of plain adds and deletes: the edited zone is the model's,
    /// and the diff is the one `diff_zones` finds.
    #[test]
    fn batches_of_adds_and_deletes_match_the_model_and_diff_zones(
        msgs in prop::collection::vec(prop::collection::vec(op(), 1..6), 1..4)
    ) {
        let base = zone(SMALL);
        let mut model = model_base();
        let mut edit = ZoneEdit::new(&base);
        for ops in &msgs {
            let mut msg = Msg::new();
            for o in ops {
                msg = msg.update(&op_text(o));
                model_apply(&mut model, o);
            }
            edit.apply(&msg.request(), &UpdateOptions::default()).unwrap();
        }
        let diff = edit.finish(SerialPolicy::Increment, 0);
        let changed = model != model_base();
        prop_assert_eq!(diff.is_some(), changed);
        prop_assert_eq!(after(&base, diff.as_ref()), model_zone(&model, if changed { 2 } else { 1 }));
        if let Some(diff) = diff {
            assert_agrees_with_diff_zones(&base, &diff);
        }
    }
}
