//! Properties: parsing never panics; whatever the builder writes reads back the same.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use bulwark_proto::message::{
    write_error_response, BuildError, EdnsOption, MessageBuilder, MessageView, OptRecord, Section,
};
use bulwark_proto::wire::Reader;
use bulwark_proto::{Class, Name, Rcode, Rtype};
use proptest::prelude::*;

fn arb_name() -> impl Strategy<Value = Name> {
    let label = prop::sample::select(vec!["a", "B", "www", "Example", "com", "org", "x-y"]);
    prop::collection::vec(label, 0..4)
        .prop_map(|ls| Name::from_labels(ls.iter().map(|l| l.as_bytes())).unwrap())
}

/// An rdata in uncompressed wire form for a type the builder compresses or not.
fn arb_rdata(rtype: Rtype) -> BoxedStrategy<Vec<u8>> {
    let name = || arb_name().prop_map(|n| n.as_wire().to_vec());
    match rtype {
        Rtype::NS | Rtype::CNAME | Rtype::PTR => name().boxed(),
        Rtype::MX | Rtype::SRV => (any::<[u8; 6]>(), name())
            .prop_map(move |(pre, n)| {
                let keep = if rtype == Rtype::MX { 2 } else { 6 };
                [&pre[..keep], &n[..]].concat()
            })
            .boxed(),
        Rtype::SOA => (name(), name(), any::<[u8; 20]>())
            .prop_map(|(m, r, f)| [&m[..], &r[..], &f[..]].concat())
            .boxed(),
        _ => prop::collection::vec(any::<u8>(), 0..40).boxed(),
    }
}

#[derive(Debug, Clone)]
struct RrsetSpec {
    section: usize,
    owner: Name,
    rtype: Rtype,
    ttl: u32,
    rdatas: Vec<Vec<u8>>,
}

fn arb_rrset() -> impl Strategy<Value = RrsetSpec> {
    let types = prop::sample::select(vec![
        Rtype::A,
        Rtype::NS,
        Rtype::CNAME,
        Rtype::PTR,
        Rtype::MX,
        Rtype::SOA,
        Rtype::SRV,
        Rtype::TXT,
    ]);
    (0..3usize, arb_name(), types, any::<u32>()).prop_flat_map(|(section, owner, rtype, ttl)| {
        prop::collection::vec(arb_rdata(rtype), 1..4).prop_map(move |rdatas| RrsetSpec {
            section,
            owner: owner.clone(),
            rtype,
            ttl,
            rdatas,
        })
    })
}

/// A record the builder accepted: owner, type, TTL, rdata.
type Kept = (Name, Rtype, u32, Vec<u8>);

const SECTIONS: [Section; 3] = [Section::Answer, Section::Authority, Section::Additional];

/// The rdata of a received record with its names decompressed and lowercased.
fn expand_rdata(msg: &[u8], rtype: Rtype, rdata_offset: usize, rdata: &[u8]) -> Vec<u8> {
    let mut r = Reader::at(msg, rdata_offset);
    let name = |r: &mut Reader<'_>| Name::read(r).unwrap().to_lowercase().as_wire().to_vec();
    match rtype {
        Rtype::NS | Rtype::CNAME | Rtype::PTR => name(&mut r),
        Rtype::MX => {
            let pre = r.read_bytes(2).unwrap().to_vec();
            [pre, name(&mut r)].concat()
        }
        Rtype::SOA => {
            let m = name(&mut r);
            let rn = name(&mut r);
            [m, rn, r.read_bytes(20).unwrap().to_vec()].concat()
        }
        _ => rdata.to_vec(),
    }
}

fn lower_names(rtype: Rtype, rdata: &[u8]) -> Vec<u8> {
    match rtype {
        // Names only, or names after fixed bytes that have no letters to lower:
        // lowercasing the fixed bytes too would be wrong, so do it by parts.
        Rtype::NS | Rtype::CNAME | Rtype::PTR => rdata.to_ascii_lowercase(),
        Rtype::MX => [&rdata[..2], &rdata[2..].to_ascii_lowercase()].concat(),
        Rtype::SOA => {
            let cut = rdata.len() - 20;
            [&rdata[..cut].to_ascii_lowercase(), &rdata[cut..]].concat()
        }
        _ => rdata.to_vec(),
    }
}

/// If `bytes` parse, validation and iteration agree: every counted entry is there.
fn check_consistent(bytes: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(v) = MessageView::parse(bytes) {
        let h = *v.header();
        prop_assert_eq!(v.questions().count(), usize::from(h.qdcount));
        prop_assert_eq!(v.answers().count(), usize::from(h.ancount));
        prop_assert_eq!(v.authority().count(), usize::from(h.nscount));
        prop_assert_eq!(v.additional().count(), usize::from(h.arcount));
        let _ = v.edns().map(|e| e.options().count());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn parse_never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        check_consistent(&bytes)?;
        let mut out = Vec::new();
        let _ = write_error_response(&bytes, Rcode::FORMERR, &mut out);
    }

    #[test]
    fn built_messages_reparse_to_what_was_written(
        rrsets in prop::collection::vec(arb_rrset(), 0..12),
        limit in 120usize..1500,
        rcode in 0u16..4096,
        nsid in prop::collection::vec(any::<u8>(), 0..10),
        cookie in any::<[u8; 24]>(),
        with_opt in any::<bool>(),
        mutate in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
    ) {
        let opts = [
            EdnsOption::Nsid(&nsid),
            EdnsOption::Cookie { client: cookie[..8].try_into().unwrap(), server: Some(&cookie[8..]) },
            EdnsOption::Ede { code: 3, text: b"stale" },
            EdnsOption::Unknown { code: 65001, data: &nsid },
        ];
        let opt = OptRecord { options: &opts, ..OptRecord::default() };
        let mut buf = Vec::new();
        let mut b = MessageBuilder::new(&mut buf, limit);
        if with_opt {
            b.reserve(opt.wire_len());
        }
        b.set_rcode(Rcode::new(rcode));
        b.push_question(&"Example.com.".parse().unwrap(), Rtype::A, Class::IN).unwrap();
        let mut sorted = rrsets;
        sorted.sort_by_key(|s| s.section);
        let mut kept: [Vec<Kept>; 3] = Default::default();
        for s in &sorted {
            let r = b.push_rrset(SECTIONS[s.section], &s.owner, s.rtype, Class::IN, s.ttl, s.rdatas.iter().map(Vec::as_slice));
            match r {
                Ok(()) => kept[s.section].extend(s.rdatas.iter().map(|d| (s.owner.clone(), s.rtype, s.ttl, d.clone()))),
                Err(BuildError::DoesNotFit { section }) => prop_assert_eq!(section, SECTIONS[s.section]),
                Err(e) => prop_assert!(false, "unexpected {e:?}"),
            }
        }
        let fin = b.finish(with_opt.then_some(&opt));
        prop_assert!(buf.len() <= limit);
        let v = MessageView::parse(&buf).unwrap();
        match fin {
            Ok(n) => prop_assert_eq!(n, buf.len()),
            Err(e) => prop_assert!(!with_opt && e == BuildError::ExtendedRcodeWithoutOpt),
        }
        prop_assert!(v.question().unwrap().qname.eq_exact(&"Example.com.".parse().unwrap()));
        for (i, section) in SECTIONS.iter().enumerate() {
            let got: Vec<_> = v.records(*section).filter(|r| r.rtype != Rtype::OPT).map(|r| {
                (r.owner.clone(), r.rtype, r.ttl, expand_rdata(&buf, r.rtype, r.rdata_offset, r.rdata))
            }).collect();
            let want: Vec<_> = kept[i].iter().map(|(o, t, ttl, d)| (o.clone(), *t, *ttl, lower_names(*t, d))).collect();
            prop_assert_eq!(got, want);
        }
        if with_opt {
            let e = v.edns().unwrap();
            prop_assert_eq!(e.options().collect::<Vec<_>>(), opts.to_vec());
            prop_assert_eq!(v.rcode(), Rcode::new(rcode));
        } else {
            prop_assert!(v.edns().is_none());
        }
        // Corrupting a valid message must not make parsing panic either.
        let mut bad = buf.clone();
        for (at, byte) in mutate {
            let i = at.index(bad.len());
            bad[i] = byte;
        }
        check_consistent(&bad)?;
    }
}
