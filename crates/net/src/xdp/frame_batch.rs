//! A round of received frames as the handler's [`Batch`]: the queries, read
//! in place in the UMEM.

use super::frame::Datagram;
use super::xsk::{Desc, Xsk};
use crate::Batch;

pub(super) struct Frames<'a> {
    pub xsk: &'a Xsk,
    pub descs: &'a [Desc],
    /// `descs`' datagrams, read once by the worker.
    pub parsed: &'a [Option<Datagram>],
}

impl Batch for Frames<'_> {
    fn len(&self) -> usize {
        self.descs.len()
    }

    fn query(&self, i: usize) -> Option<&[u8]> {
        let datagram = self.parsed.get(i)?.as_ref()?;
        self.xsk
            .frame(*self.descs.get(i)?)?
            .get(datagram.payload.clone())
    }
}
