//! Reading unidirectional dnstap files (as written by bulwark's file output or
//! by fstrm_capture): a START frame with the dnstap content type, data frames,
//! then STOP or the end of the file. The caller opens the file (or standard
//! input) and hands over any `Read`, buffered.

use std::io::Read;

use prost::Message as _;

use crate::frame::{ControlType, Frame, FrameReader};
use crate::schema::Dnstap;
use crate::{DnstapError, CONTENT_TYPE};

/// An iterator over the dnstap messages of a unidirectional Frame Streams
/// stream.
#[derive(Debug)]
pub struct Reader<R> {
    frames: FrameReader<R>,
    done: bool,
}

impl<R: Read> Reader<R> {
    /// Reads the START frame, which must name the dnstap content type (or
    /// none: the field is optional in Frame Streams).
    pub fn new(inner: R) -> Result<Reader<R>, DnstapError> {
        let mut frames = FrameReader::new(inner);
        let start = frames.expect_control(ControlType::Start)?;
        if !start.allows(CONTENT_TYPE) {
            return Err(DnstapError::ContentType(start.describe_content_types()));
        }
        Ok(Reader {
            frames,
            done: false,
        })
    }

    /// The next message's raw protobuf bytes, `Ok(None)` after STOP or at the
    /// end of the file.
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>, DnstapError> {
        if self.done {
            return Ok(None);
        }
        match self.frames.read_frame() {
            Ok(Some(Frame::Data(payload))) => Ok(Some(payload)),
            Ok(Some(Frame::Control(control))) if control.kind == ControlType::Stop => {
                self.done = true;
                Ok(None)
            }
            Ok(Some(Frame::Control(_))) => {
                self.done = true;
                Err(DnstapError::UnexpectedFrame(
                    "control frame other than STOP in a data stream",
                ))
            }
            Ok(None) => {
                self.done = true;
                Ok(None)
            }
            Err(e) => {
                // A framing error leaves the stream position unknown: stop.
                self.done = true;
                Err(e)
            }
        }
    }
}

impl<R: Read> Iterator for Reader<R> {
    type Item = Result<Dnstap, DnstapError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_frame() {
            Ok(Some(payload)) => {
                Some(Dnstap::decode(payload.as_slice()).map_err(DnstapError::from))
            }
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        }
    }
}
