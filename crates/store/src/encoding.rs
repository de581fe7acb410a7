//! The store's own binary format for records, and the fixed-width fields of
//! its small values.
//!
//! Every value begins with [`FORMAT_VERSION`], so a later build can read old
//! values or refuse new ones by name rather than misread them. A record is
//! its DNS wire form, uncompressed (RFC 1035 §4.1.3): owner, TYPE, CLASS, TTL,
//! RDLENGTH, RDATA. Record sets (a snapshot, the records of a diff) are cut
//! into chunks of at most [`CHUNK_MAX_BYTES`], each a value of its own: redb
//! keeps a value whole inside one B-tree leaf, allocated as a power-of-two run
//! of 4 KiB pages and copied whole when written, so a 40 MB snapshot as one
//! value would need one contiguous 64 MiB allocation and be held in memory
//! whole on every read. Chunks of about 255 KiB fit a 256 KiB leaf and let a
//! reader decode as it goes.

use bulwark_proto::wire::Reader;
use bulwark_proto::{Class, Name, Rdata, Record, Rtype};

use crate::error::{DecodeError, StoreError};

/// The version octet every value of this build begins with.
pub(crate) const FORMAT_VERSION: u8 = 1;

/// The largest chunk of records written, version octet included. 1 KiB under
/// 256 KiB leaves room in the leaf for redb's page header and the key. One
/// record is at most 255 (owner) + 10 + 65535 octets, so it always fits.
pub(crate) const CHUNK_MAX_BYTES: usize = 255 * 1024;

/// Appends `record` in the store's form, or says how long its data is when
/// RDLENGTH cannot hold it (nothing is appended then).
fn write_record(out: &mut Vec<u8>, record: &Record) -> Result<(), usize> {
    let start = out.len();
    out.extend_from_slice(record.owner.as_wire());
    out.extend_from_slice(&record.rtype().0.to_be_bytes());
    out.extend_from_slice(&record.class.0.to_be_bytes());
    out.extend_from_slice(&record.ttl.to_be_bytes());
    let len_at = out.len();
    out.extend_from_slice(&[0, 0]);
    let data_at = out.len();
    record.rdata.write_wire(out);
    let len = out.len().saturating_sub(data_at);
    let Ok(len16) = u16::try_from(len) else {
        out.truncate(start);
        return Err(len);
    };
    if let Some(slot) = out.get_mut(len_at..data_at) {
        slot.copy_from_slice(&len16.to_be_bytes());
    }
    Ok(())
}

/// Reads one record. Data that does not parse as its type is kept as opaque
/// `Rdata::Unknown` (RFC 3597 §5): a value written by an older build, whose
/// parser was more lenient, must still load.
fn read_record(r: &mut Reader<'_>, what: &'static str) -> Result<Record, DecodeError> {
    let owner = Name::read_uncompressed(r).map_err(DecodeError::BadOwner)?;
    let truncated = |_| DecodeError::Truncated { what };
    let rtype = Rtype(r.read_u16().map_err(truncated)?);
    let class = Class(r.read_u16().map_err(truncated)?);
    let ttl = r.read_u32().map_err(truncated)?;
    let len = usize::from(r.read_u16().map_err(truncated)?);
    let data = r.read_bytes(len).map_err(truncated)?;
    // A reader over the data alone: a compression pointer in damaged data can
    // then point nowhere but inside it.
    let rdata =
        Rdata::read(rtype, &mut Reader::new(data), len).unwrap_or_else(|_| Rdata::Unknown {
            rtype,
            data: data.to_vec(),
        });
    Ok(Record {
        owner,
        class,
        ttl,
        rdata,
    })
}

/// How much a chunked record set took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ChunkTotals {
    pub chunks: u32,
    pub records: u64,
    pub bytes: u64,
}

/// Writes records into chunks, handing each full chunk (with its number) to a sink.
pub(crate) struct ChunkWriter<'z> {
    zone: &'z Name,
    chunk: Vec<u8>,
    record: Vec<u8>,
    totals: ChunkTotals,
}

impl<'z> ChunkWriter<'z> {
    pub fn new(zone: &'z Name) -> Self {
        let mut chunk = Vec::with_capacity(CHUNK_MAX_BYTES);
        chunk.push(FORMAT_VERSION);
        ChunkWriter {
            zone,
            chunk,
            record: Vec::with_capacity(512),
            totals: ChunkTotals::default(),
        }
    }

    pub fn push<F>(&mut self, record: &Record, sink: &mut F) -> Result<(), StoreError>
    where
        F: FnMut(u32, &[u8]) -> Result<(), StoreError>,
    {
        self.record.clear();
        write_record(&mut self.record, record).map_err(|len| StoreError::RdataTooLong {
            zone: self.zone.to_string(),
            owner: record.owner.to_string(),
            len,
        })?;
        if self.chunk.len().saturating_add(self.record.len()) > CHUNK_MAX_BYTES {
            self.flush(sink)?;
        }
        self.chunk.extend_from_slice(&self.record);
        self.totals.records = self.totals.records.saturating_add(1);
        Ok(())
    }

    fn flush<F>(&mut self, sink: &mut F) -> Result<(), StoreError>
    where
        F: FnMut(u32, &[u8]) -> Result<(), StoreError>,
    {
        if self.chunk.len() <= 1 {
            return Ok(());
        }
        sink(self.totals.chunks, &self.chunk)?;
        self.totals.chunks = self.totals.chunks.saturating_add(1);
        self.totals.bytes = self.totals.bytes.saturating_add(len_u64(self.chunk.len()));
        self.chunk.truncate(1);
        Ok(())
    }

    pub fn finish<F>(mut self, sink: &mut F) -> Result<ChunkTotals, StoreError>
    where
        F: FnMut(u32, &[u8]) -> Result<(), StoreError>,
    {
        self.flush(sink)?;
        Ok(self.totals)
    }
}

/// Decodes every record of one chunk, in order, into `out`.
pub(crate) fn read_chunk(
    value: &[u8],
    what: &'static str,
    out: &mut impl FnMut(Record),
) -> Result<u64, DecodeError> {
    let mut r = Reader::new(value);
    read_version(&mut r, what)?;
    let mut count = 0u64;
    while !r.is_empty() {
        out(read_record(&mut r, what)?);
        count = count.saturating_add(1);
    }
    Ok(count)
}

/// Reads and checks the version octet that begins every value.
pub(crate) fn read_version(r: &mut Reader<'_>, what: &'static str) -> Result<(), DecodeError> {
    let version = r.read_u8().map_err(|_| DecodeError::Empty { what })?;
    if version != FORMAT_VERSION {
        return Err(DecodeError::UnsupportedVersion {
            what,
            version,
            supported: FORMAT_VERSION,
        });
    }
    Ok(())
}

pub(crate) fn len_u64(len: usize) -> u64 {
    u64::try_from(len).unwrap_or(u64::MAX)
}

/// A value's fixed-width fields, big-endian, after its version octet.
pub(crate) struct FieldWriter(Vec<u8>);

impl FieldWriter {
    pub fn new() -> Self {
        FieldWriter(vec![FORMAT_VERSION])
    }
    pub fn u8(mut self, v: u8) -> Self {
        self.0.push(v);
        self
    }
    pub fn u16(mut self, v: u16) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn u32(mut self, v: u32) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn u64(mut self, v: u64) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn bytes(mut self, v: &[u8]) -> Self {
        self.0.extend_from_slice(v);
        self
    }
    pub fn finish(self) -> Vec<u8> {
        self.0
    }
}

/// Reads what [`FieldWriter`] wrote; running out is `Truncated`, and
/// [`FieldReader::end`] insists nothing is left over.
pub(crate) struct FieldReader<'a> {
    r: Reader<'a>,
    what: &'static str,
}

impl<'a> FieldReader<'a> {
    pub fn new(value: &'a [u8], what: &'static str) -> Result<Self, DecodeError> {
        let mut r = Reader::new(value);
        read_version(&mut r, what)?;
        Ok(FieldReader { r, what })
    }
    fn truncated(&self) -> DecodeError {
        DecodeError::Truncated { what: self.what }
    }
    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        self.r.read_u8().map_err(|_| self.truncated())
    }
    pub fn u16(&mut self) -> Result<u16, DecodeError> {
        self.r.read_u16().map_err(|_| self.truncated())
    }
    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        self.r.read_u32().map_err(|_| self.truncated())
    }
    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        let hi = self.u32()?;
        let lo = self.u32()?;
        Ok((u64::from(hi) << 32) | u64::from(lo))
    }
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        self.r.read_bytes(n).map_err(|_| self.truncated())
    }
    pub fn end(self) -> Result<(), DecodeError> {
        match self.r.remaining() {
            0 => Ok(()),
            extra => Err(DecodeError::TrailingData {
                what: self.what,
                extra,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]
    use super::*;

    fn record(text: &str) -> Record {
        let origin: Name = "example.".parse().unwrap();
        let zone = bulwark_zone::parse_str(text, &origin, "test").unwrap();
        zone.into_iter().next().unwrap()
    }

    #[test]
    fn record_form_is_uncompressed_wire_form() {
        let r = record("a.example. 300 IN A 192.0.2.1\n");
        let mut out = Vec::new();
        write_record(&mut out, &r).unwrap();
        assert_eq!(
            out,
            [
                1, b'a', 7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 0, // owner
                0, 1, 0, 1, 0, 0, 1, 44, 0, 4, 192, 0, 2, 1,
            ]
        );
    }

    #[test]
    fn unparseable_rdata_reads_back_as_unknown() {
        // An A record whose data is 3 octets long.
        let value = [FORMAT_VERSION, 0, 0, 1, 0, 1, 0, 0, 0, 5, 0, 3, 1, 2, 3];
        let mut got = Vec::new();
        read_chunk(&value, "test", &mut |r| got.push(r)).unwrap();
        assert_eq!(
            got[0].rdata,
            Rdata::Unknown {
                rtype: Rtype::A,
                data: vec![1, 2, 3]
            }
        );
    }

    #[test]
    fn damaged_chunks_are_errors() {
        let cases: &[(&[u8], DecodeError)] = &[
            (&[], DecodeError::Empty { what: "test" }),
            (
                &[9, 0],
                DecodeError::UnsupportedVersion {
                    what: "test",
                    version: 9,
                    supported: FORMAT_VERSION,
                },
            ),
            (
                &[FORMAT_VERSION, 0, 0, 1],
                DecodeError::Truncated { what: "test" },
            ),
            (
                &[FORMAT_VERSION, 0, 0, 1, 0, 1, 0, 0, 0, 5, 0, 9, 1],
                DecodeError::Truncated { what: "test" },
            ),
        ];
        for (value, want) in cases {
            let got = read_chunk(value, "test", &mut |_| {});
            assert_eq!(got.as_ref().err(), Some(want), "{value:?}");
        }
        // A compression pointer in an owner name is refused.
        let got = read_chunk(&[FORMAT_VERSION, 0xc0, 0x00], "test", &mut |_| {});
        assert!(matches!(got, Err(DecodeError::BadOwner(_))));
    }

    #[test]
    fn chunks_stay_under_the_limit_and_keep_every_record() {
        let zone: Name = "example.".parse().unwrap();
        let big = record(&format!("t.example. 60 IN TXT {}\n", "\"x\" ".repeat(3000)));
        let mut chunks: Vec<Vec<u8>> = Vec::new();
        let mut sink = |n: u32, v: &[u8]| {
            assert_eq!(n as usize, chunks.len());
            chunks.push(v.to_vec());
            Ok(())
        };
        let mut w = ChunkWriter::new(&zone);
        for _ in 0..200 {
            w.push(&big, &mut sink).unwrap();
        }
        let totals = w.finish(&mut sink).unwrap();
        assert!(chunks.len() > 1);
        assert_eq!(totals.chunks as usize, chunks.len());
        assert_eq!(totals.records, 200);
        let mut n = 0;
        for c in &chunks {
            assert!(c.len() <= CHUNK_MAX_BYTES);
            read_chunk(c, "test", &mut |r| {
                assert_eq!(r, big);
                n += 1;
            })
            .unwrap();
        }
        assert_eq!(n, 200);
    }
}
