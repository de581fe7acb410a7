//! The receiving end of bidirectional Frame Streams, for `bulwark dnstap
//! capture`: the handshake a sender (knotd, unbound, bulwark) expects, and a
//! copy of its data frames to a unidirectional stream.

use std::io::{BufReader, Read, Write};

use crate::frame::{write_control, write_data, ControlType, Frame, FrameReader};
use crate::{DnstapError, CONTENT_TYPE};

/// Serves one sender on `stream`: reads READY (which must offer the dnstap
/// content type), answers ACCEPT, reads START, then copies every data frame to
/// `out` as a unidirectional stream (START first, STOP last). On the sender's
/// STOP it answers FINISH. Returns the number of data frames copied; a sender
/// that disconnects without STOP ends the copy normally.
pub fn accept<S: Read + Write>(stream: S, out: &mut impl Write) -> Result<u64, DnstapError> {
    let mut frames = FrameReader::new(BufReader::new(stream));
    let ready = frames.expect_control(ControlType::Ready)?;
    if !ready.allows(CONTENT_TYPE) {
        return Err(DnstapError::ContentType(ready.describe_content_types()));
    }
    {
        let stream = frames.get_mut().get_mut();
        write_control(stream, ControlType::Accept, Some(CONTENT_TYPE))?;
        stream.flush()?;
    }
    let start = frames.expect_control(ControlType::Start)?;
    if !start.allows(CONTENT_TYPE) {
        return Err(DnstapError::ContentType(start.describe_content_types()));
    }
    write_control(out, ControlType::Start, Some(CONTENT_TYPE))?;
    let mut copied = 0u64;
    loop {
        match frames.read_frame()? {
            Some(Frame::Data(payload)) => {
                write_data(out, &payload)?;
                copied = copied.saturating_add(1);
                // Flush whenever the sender has paused, so the output can be
                // followed live without a write per frame under load.
                if frames.get_ref().buffer().is_empty() {
                    out.flush()?;
                }
            }
            Some(Frame::Control(control)) if control.kind == ControlType::Stop => {
                write_control(out, ControlType::Stop, None)?;
                out.flush()?;
                let stream = frames.get_mut().get_mut();
                write_control(stream, ControlType::Finish, None)?;
                stream.flush()?;
                return Ok(copied);
            }
            Some(Frame::Control(_)) => {
                return Err(DnstapError::UnexpectedFrame(
                    "control frame other than STOP after START",
                ))
            }
            None => {
                write_control(out, ControlType::Stop, None)?;
                out.flush()?;
                return Ok(copied);
            }
        }
    }
}
