//! A round of received frames as the handler's [`Batch`]: the queries, read
//! in place in the UMEM.

use super::frame;
use super::xsk::{Desc, Xsk};
use crate::Batch;

pub(super) struct Frames<'a> {
    pub xsk: &'a Xsk,
    pub descs: &'a [Desc],
}

impl Batch for Frames<'_> {
    fn len(&self) -> usize {
        self.descs.len()
    }

    fn query(&self, i: usize) -> Option<&[u8]> {
        let frame = self.xsk.frame(*self.descs.get(i)?)?;
        let datagram = frame::parse(frame).ok()?;
        frame.get(datagram.payload)
    }
}
