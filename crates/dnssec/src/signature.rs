//! Signatures as a signing pass keeps them: an RRSIG's own fields and the
//! position of the RRset it covers. A `Record` is about 800 octets (owner
//! and signer names held inline); a million signatures kept as records would
//! move gigabytes, where these take about forty octets plus the signature.

use core::fmt;

use bulwark_proto::rdata::Rrsig;
use bulwark_proto::{Name, Rdata, Record, Rtype};
use bulwark_zone::printer::{write_record, PrintableRecords};

/// What an RRSIG says that neither its RRset (owner, class, type, TTL) nor
/// its zone (the signer's name) already does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignatureFields {
    pub key_tag: u16,
    pub algorithm: u8,
    pub labels: u8,
    pub expiration: u32,
    pub inception: u32,
    pub signature: Vec<u8>,
}

impl SignatureFields {
    /// The RRSIG RDATA over the RRset whose first record is `covered`.
    pub fn rrsig(&self, covered: &Record, signer: &Name) -> Rrsig {
        Rrsig {
            type_covered: covered.rtype(),
            algorithm: self.algorithm,
            labels: self.labels,
            original_ttl: covered.ttl,
            expiration: self.expiration,
            inception: self.inception,
            key_tag: self.key_tag,
            signer: signer.clone(),
            signature: self.signature.clone(),
        }
    }

    /// The RRSIG record (RFC 4034 §3: owner, class and TTL of the RRset).
    pub fn record(&self, covered: &Record, signer: &Name) -> Record {
        Record {
            owner: covered.owner.clone(),
            class: covered.class,
            ttl: covered.ttl,
            rdata: Rdata::Rrsig(self.rrsig(covered, signer)),
        }
    }
}

/// One signature of a pass over a plan's records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    /// Index in the plan's records of the first record of the covered RRset.
    pub covers: usize,
    pub fields: SignatureFields,
}

/// A signed zone as records plus compact signatures, readable as one list
/// of records (by the printer, or turned into records for serving).
#[derive(Clone, Copy, Debug)]
pub struct SignedRecords<'a> {
    pub records: &'a [Record],
    pub signatures: &'a [Signature],
    pub signer: &'a Name,
}

impl SignedRecords<'_> {
    /// Signature `i` as a record; None when it points outside the records.
    pub fn signature_record(&self, i: usize) -> Option<Record> {
        let signature = self.signatures.get(i)?;
        let covered = self.records.get(signature.covers)?;
        Some(signature.fields.record(covered, self.signer))
    }

    fn covered(&self, i: usize) -> Option<(&Signature, &Record)> {
        let signature = self.signatures.get(i)?;
        Some((signature, self.records.get(signature.covers)?))
    }
}

/// Positions past the records are the signatures, in order.
impl PrintableRecords for SignedRecords<'_> {
    fn count(&self) -> usize {
        self.records.len().saturating_add(self.signatures.len())
    }

    fn owner(&self, i: usize) -> Option<&Name> {
        match i.checked_sub(self.records.len()) {
            None => self.records.get(i).map(|r| &r.owner),
            Some(s) => self.covered(s).map(|(_, covered)| &covered.owner),
        }
    }

    fn rtype(&self, i: usize) -> Rtype {
        match i.checked_sub(self.records.len()) {
            None => self.records.get(i).map_or(Rtype(0), Record::rtype),
            Some(_) => Rtype::RRSIG,
        }
    }

    fn write_rdata_wire(&self, i: usize, out: &mut Vec<u8>) {
        match i.checked_sub(self.records.len()) {
            None => {
                if let Some(r) = self.records.get(i) {
                    r.rdata.write_wire(out);
                }
            }
            Some(s) => {
                if let Some((signature, covered)) = self.covered(s) {
                    Rdata::Rrsig(signature.fields.rrsig(covered, self.signer)).write_wire(out);
                }
            }
        }
    }

    fn write_line(&self, i: usize, out: &mut dyn fmt::Write) -> fmt::Result {
        match i.checked_sub(self.records.len()) {
            None => match self.records.get(i) {
                Some(r) => write_record(out, r),
                None => Ok(()),
            },
            Some(s) => match self.signature_record(s) {
                Some(r) => write_record(out, &r),
                None => Ok(()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::{
        Algorithm, Denial, KeyRole, KeyTiming, SignatureValidity, SignerSettings, SigningKey,
        ZoneKey, ZonePlan,
    };
    use bulwark_zone::printer::{print_order, write_lines};
    use bulwark_zone::{parse_str, print_zone};

    /// The printer reading compact signatures writes exactly what it writes
    /// for the same signatures made into records: owner, type, RDATA order
    /// (several RRSIGs per name) and text all come from the right place.
    #[test]
    fn compact_signatures_print_as_their_records_do() {
        let apex: Name = "example.".parse().unwrap();
        let zone = "@ 300 SOA ns h 1 2 3 4 5\n@ 300 NS ns\n@ 300 MX 10 mail\n\
                    ns 300 A 192.0.2.1\nmail 300 A 192.0.2.2\nmail 300 AAAA 2001:db8::2\n\
                    *.w 60 TXT \"x\"\nsub 300 NS ns.sub\nns.sub 300 A 192.0.2.9\n";
        let records = parse_str(zone, &apex, "test").unwrap();
        let keys: Vec<ZoneKey> = [KeyRole::Ksk, KeyRole::Zsk]
            .into_iter()
            .map(|role| {
                let key = SigningKey::generate(Algorithm::Ed25519, None).unwrap();
                ZoneKey::new(role, key, KeyTiming::starting_at(1_000))
            })
            .collect();
        let settings = SignerSettings {
            denial: Denial::Nsec,
            dnskey_ttl: None,
            publish_cds: true,
            cds_key_tags: None,
            now: 2_000,
        };
        let plan = ZonePlan::new(&apex, records, &keys, &settings).unwrap();
        let validity = SignatureValidity {
            inception: 1_000,
            expiration: 9_000,
        };
        let mut signatures = Vec::new();
        plan.sign_into(plan.jobs(), &keys, 2_000, validity, None, &mut signatures)
            .unwrap();
        // Against the signing order, so the printer must order each name's
        // RRSIGs by their data itself.
        signatures.reverse();
        let signed = SignedRecords {
            records: plan.records(),
            signatures: &signatures,
            signer: plan.apex(),
        };
        let mut compact = String::new();
        write_lines(&mut compact, &signed, &print_order(&signed)).unwrap();

        let mut whole = plan.records().to_vec();
        whole.extend((0..signatures.len()).map(|i| signed.signature_record(i).unwrap()));
        assert_eq!(compact, print_zone(&whole));
        // Every job signed once per key of its role, and a name with several
        // RRsets carries several RRSIGs in one run.
        assert_eq!(signatures.len(), plan.jobs().len());
        assert!(compact.contains("mail.example. 300 IN RRSIG A 15 2 300"));
        assert!(compact.contains("mail.example. 300 IN RRSIG AAAA 15 2 300"));
        assert!(compact.contains("*.w.example. 60 IN RRSIG TXT 15 2 60"));
    }
}
