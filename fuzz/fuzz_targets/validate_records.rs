//! The validator's judgements over whatever a server sends: the input is a
//! DNS message, and every RRset in it is checked against the DNSKEY, RRSIG,
//! DS, NSEC and NSEC3 records it carries, as a validator would with a
//! forged or broken response. Nothing may panic, and no judgement may pass
//! its work budget (KeyTrap, CVE-2023-50387; CVE-2023-50868).
#![no_main]

use bulwark_proto::rdata::{Dnskey, Ds, Rrsig};
use bulwark_proto::{MessageView, Name, Rdata, Rtype};
use bulwark_resolver::validate::nsec::{self, NsecRecord};
use bulwark_resolver::validate::nsec3::{self, Nsec3Record};
use bulwark_resolver::validate::{keys_vouched_for, verify_rrset, Budget, WorkLimits};
use bulwark_resolver::RrSet;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(view) = MessageView::parse(data) else {
        return;
    };
    let mut sets: Vec<RrSet> = Vec::new();
    let (mut keys, mut sigs, mut ds, mut nsecs, mut nsec3s) = (
        Vec::<Dnskey>::new(),
        Vec::<Rrsig>::new(),
        Vec::<Ds>::new(),
        Vec::new(),
        Vec::new(),
    );
    for section in [view.answers(), view.authority(), view.additional()] {
        for r in section {
            let Ok(rdata) = Rdata::read(
                r.rtype,
                &mut bulwark_proto::wire::Reader::at(data, r.rdata_offset),
                r.rdata.len(),
            ) else {
                continue;
            };
            match rdata {
                Rdata::Dnskey(k) => keys.push(k),
                Rdata::Rrsig(s) => {
                    sigs.push(s);
                    continue;
                }
                Rdata::Ds(d) => ds.push(d),
                Rdata::Nsec(n) => nsecs.push(NsecRecord {
                    owner: r.owner.clone(),
                    nsec: n,
                }),
                Rdata::Nsec3(n) => {
                    if let Some(rec) = Nsec3Record::new(&r.owner, n) {
                        nsec3s.push(rec);
                    }
                }
                _ => {}
            }
            match sets
                .iter_mut()
                .find(|s| s.owner == r.owner && s.rtype == r.rtype)
            {
                Some(s) => s.push(r.rdata.to_vec(), r.ttl),
                None => {
                    let mut s = RrSet::new(r.owner.clone(), r.rtype, r.ttl);
                    s.push(r.rdata.to_vec(), r.ttl);
                    sets.push(s);
                }
            }
        }
    }
    let limits = WorkLimits::default();
    let mut budget = Budget::new(limits);
    let now = u32::from_be_bytes([0x68, 0, 0, 0]);
    for set in &sets {
        let zone = sigs
            .iter()
            .find(|s| s.type_covered == set.rtype)
            .map_or_else(Name::root, |s| s.signer.clone());
        let _ = verify_rrset(set, &sigs, &zone, &keys, now, &mut budget);
        assert!(budget.used() <= limits.verifications);
        let _ = keys_vouched_for(&set.owner, &ds, &keys, &budget);
    }
    let Some(q) = view.question() else {
        return;
    };
    let _ = nsec::prove_nxdomain(&q.qname, &nsecs);
    let _ = nsec::prove_nodata(&q.qname, q.qtype, &nsecs);
    let _ = nsec::prove_wildcard_nodata(&q.qname, q.qtype, &nsecs);
    let _ = nsec::prove_wildcard_answer(&q.qname, 1, &nsecs);
    let _ = nsec::prove_insecure_delegation(&q.qname, &nsecs);
    if let Some(zone) = nsec3s.first().map(|r| r.zone.clone()) {
        let mut b = Budget::new(limits);
        let _ = nsec3::prove_nxdomain(&q.qname, &zone, &nsec3s, &mut b);
        let _ = nsec3::prove_nodata(&q.qname, q.qtype, &zone, &nsec3s, &mut b);
        let _ = nsec3::prove_wildcard_nodata(&q.qname, Rtype::A, &zone, &nsec3s, &mut b);
        let _ = nsec3::prove_wildcard_answer(&q.qname, 1, &zone, &nsec3s, &mut b);
        let _ = nsec3::prove_insecure_delegation(&q.qname, &zone, &nsec3s, &mut b);
    }
});
