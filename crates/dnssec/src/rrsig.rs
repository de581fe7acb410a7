//! Signing and checking one RRset (RFC 4034 §3.1.8.1): the RRSIG RDATA without
//! its signature, then each RR in canonical form (§6.2) in canonical order
//! (§6.3), duplicates removed.

use bulwark_crypto::verify;
use bulwark_proto::rdata::{Dnskey, Rrsig};
use bulwark_proto::{Class, Name, Rdata, Rtype};

use crate::key::ZoneKey;
use crate::signature::SignatureFields;
use crate::SignError;

/// When signatures are valid, in RRSIG time (RFC 4034 §3.1.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignatureValidity {
    pub inception: u32,
    pub expiration: u32,
}

/// One RRset ready to be signed: the owner, and each RDATA in canonical wire
/// form, sorted and without duplicates.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CanonicalRrset {
    pub owner: Name,
    pub class: Class,
    pub rtype: Rtype,
    pub ttl: u32,
    rdatas: Vec<Vec<u8>>,
}

impl CanonicalRrset {
    pub fn new<'a>(
        owner: &Name,
        class: Class,
        rtype: Rtype,
        ttl: u32,
        rdatas: impl IntoIterator<Item = &'a Rdata>,
    ) -> CanonicalRrset {
        let mut canonical: Vec<Vec<u8>> = rdatas
            .into_iter()
            .map(|rdata| {
                let mut out = Vec::new();
                rdata.write_canonical(&mut out);
                out
            })
            .collect();
        canonical.sort_unstable();
        canonical.dedup();
        CanonicalRrset {
            owner: owner.to_lowercase(),
            class,
            rtype,
            ttl,
            rdatas: canonical,
        }
    }

    /// RFC 4034 §3.1.3: labels of the owner, not counting the root or a
    /// leading wildcard label.
    pub fn rrsig_labels(&self) -> u8 {
        let count = self.owner.label_count();
        let count = if self.owner.is_wildcard() {
            count.saturating_sub(1)
        } else {
            count
        };
        u8::try_from(count).unwrap_or(u8::MAX)
    }

    /// Appends the signed data's RR part: owner | type | class | TTL | RDLENGTH | RDATA.
    fn write_records(&self, original_ttl: u32, out: &mut Vec<u8>) {
        for rdata in &self.rdatas {
            out.extend_from_slice(self.owner.as_wire());
            out.extend_from_slice(&self.rtype.0.to_be_bytes());
            out.extend_from_slice(&self.class.0.to_be_bytes());
            out.extend_from_slice(&original_ttl.to_be_bytes());
            let len = u16::try_from(rdata.len()).unwrap_or(u16::MAX);
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(rdata);
        }
    }
}

fn signed_data(rrsig: &Rrsig, rrset: &CanonicalRrset) -> Vec<u8> {
    let mut data = Vec::with_capacity(512);
    write_signed_data(rrsig, rrset, &mut data);
    data
}

fn write_signed_data(rrsig: &Rrsig, rrset: &CanonicalRrset, data: &mut Vec<u8>) {
    data.clear();
    rrsig.write_without_signature(data, true);
    rrset.write_records(rrsig.original_ttl, data);
}

/// Signs RRsets of one zone with one validity, reusing its RRSIG header and
/// signed-data buffer from one signature to the next (a pass makes millions).
#[derive(Debug)]
pub struct RrsetSigner {
    header: Rrsig,
    scratch: Vec<u8>,
}

impl RrsetSigner {
    pub fn new(apex: &Name, validity: SignatureValidity) -> RrsetSigner {
        RrsetSigner {
            header: Rrsig {
                type_covered: Rtype(0),
                algorithm: 0,
                labels: 0,
                original_ttl: 0,
                expiration: validity.expiration,
                inception: validity.inception,
                key_tag: 0,
                signer: apex.to_lowercase(),
                signature: Vec::new(),
            },
            scratch: Vec::with_capacity(1024),
        }
    }

    /// The signature `key` makes over `rrset`.
    pub fn sign(
        &mut self,
        rrset: &CanonicalRrset,
        key: &ZoneKey,
    ) -> Result<SignatureFields, SignError> {
        let header = &mut self.header;
        header.type_covered = rrset.rtype;
        header.algorithm = key.algorithm_number();
        header.labels = rrset.rrsig_labels();
        header.original_ttl = rrset.ttl;
        header.key_tag = key.key_tag();
        write_signed_data(header, rrset, &mut self.scratch);
        Ok(SignatureFields {
            key_tag: header.key_tag,
            algorithm: header.algorithm,
            labels: header.labels,
            expiration: header.expiration,
            inception: header.inception,
            signature: key.signing_key().sign(&self.scratch)?,
        })
    }
}

/// Checks `rrsig` over `rrset` with `dnskey` (the cryptography only; the
/// caller checks times and the signer's name).
pub fn verify_rrsig(
    rrset: &CanonicalRrset,
    rrsig: &Rrsig,
    dnskey: &Dnskey,
) -> Result<(), SignError> {
    verify(
        dnskey.algorithm,
        &dnskey.public_key,
        &signed_data(rrsig, rrset),
        &rrsig.signature,
    )
    .map_err(SignError::from)
}
