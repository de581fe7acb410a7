//! The sending end of bidirectional Frame Streams (what bulwark's writer
//! speaks to a receiver over a Unix or TCP socket), and the start and end of a
//! unidirectional stream (a file).
//!
//! Over any `Read + Write` stream: the edge connects the socket or opens the
//! file, runs these over it and copies the chunks of a [`crate::Drain`] in
//! between.

use std::io::{Read, Write};

use crate::frame::{write_control, ControlType, FrameReader};
use crate::{DnstapError, CONTENT_TYPE};

/// The sender's side of the handshake: READY with our content type, the
/// receiver's ACCEPT naming it, then START. Reads exactly the ACCEPT frame and
/// nothing more (the stream should not be buffered for reading). Data frames
/// may follow at once.
pub fn open<S: Read + Write + ?Sized>(stream: &mut S) -> Result<(), DnstapError> {
    write_control(stream, ControlType::Ready, Some(CONTENT_TYPE))?;
    stream.flush()?;
    let accept = FrameReader::new(&mut *stream).expect_control(ControlType::Accept)?;
    if !accept.allows(CONTENT_TYPE) {
        return Err(DnstapError::ContentType(accept.describe_content_types()));
    }
    start(stream)?;
    stream.flush()?;
    Ok(())
}

/// Ends the stream: STOP, then the receiver's FINISH.
pub fn close<S: Read + Write + ?Sized>(stream: &mut S) -> Result<(), DnstapError> {
    stop(stream)?;
    stream.flush()?;
    FrameReader::new(&mut *stream).expect_control(ControlType::Finish)?;
    Ok(())
}

/// The START frame that opens a unidirectional stream (a file): readers of a
/// file that holds only this see a valid, empty stream.
pub fn start<W: Write + ?Sized>(out: &mut W) -> std::io::Result<()> {
    write_control(out, ControlType::Start, Some(CONTENT_TYPE))
}

/// The STOP frame that ends a stream, so readers know it is complete.
pub fn stop<W: Write + ?Sized>(out: &mut W) -> std::io::Result<()> {
    write_control(out, ControlType::Stop, None)
}
