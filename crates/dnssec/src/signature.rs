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
            original_ttl: covered.ttl,
            signer: signer.clone(),
            ..self.clone().into_rrsig_parts()
        }
    }

    /// An RRSIG with these fields; type covered, original TTL and signer
    /// left empty for the caller to fill.
    pub fn into_rrsig_parts(self) -> Rrsig {
        Rrsig {
            type_covered: Rtype(0),
            algorithm: self.algorithm,
            labels: self.labels,
            original_ttl: 0,
            expiration: self.expiration,
            inception: self.inception,
            key_tag: self.key_tag,
            signer: Name::root(),
            signature: self.signature,
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
