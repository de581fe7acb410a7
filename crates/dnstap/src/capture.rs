//! The receiving end of bidirectional Frame Streams, for `bulwark dnstap
//! capture`: the handshake a sender (knotd, unbound, bulwark) expects, and a
//! copy of its data frames to a unidirectional stream.
//!
//! Over any `Read + Write` stream: the caller accepts the connection (bulwark
//! gets it from `bulwark-net`) and owns the output.

use std::io::{self, BufReader, Read, Write};

use crate::frame::{write_control, write_data, ControlType, Frame, FrameReader};
use crate::{DnstapError, CONTENT_TYPE};

/// How a sender's stream of data frames ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The sender sent STOP; answer it with [`Receiver::finish`].
    Stop,
    /// The sender closed the connection without STOP.
    Closed,
    /// The limit of frames was reached.
    Limit,
}

/// One sender, past the handshake.
#[derive(Debug)]
pub struct Receiver<S> {
    frames: FrameReader<BufReader<S>>,
}

impl<S: Read + Write> Receiver<S> {
    /// The receiver's side of the handshake: reads READY (which must offer
    /// the dnstap content type), answers ACCEPT naming it, and reads START.
    pub fn handshake(stream: S) -> Result<Receiver<S>, DnstapError> {
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
        Ok(Receiver { frames })
    }

    /// Copies data frames to `out` until the sender's STOP, the end of the
    /// stream, or `copied` (counted up by one per frame) reaching `limit`.
    /// `out` is flushed whenever the sender has paused, so the output can be
    /// followed live without a write per frame under load, and before
    /// returning. A control frame other than STOP is an error.
    pub fn copy_frames<W: Write + ?Sized>(
        &mut self,
        out: &mut W,
        limit: Option<u64>,
        copied: &mut u64,
    ) -> Result<Ended, DnstapError> {
        loop {
            if limit.is_some_and(|n| *copied >= n) {
                out.flush()?;
                return Ok(Ended::Limit);
            }
            match self.frames.read_frame()? {
                Some(Frame::Data(payload)) => {
                    write_data(out, &payload)?;
                    *copied = copied.saturating_add(1);
                    if self.frames.get_ref().buffer().is_empty() {
                        out.flush()?;
                    }
                }
                Some(Frame::Control(control)) if control.kind == ControlType::Stop => {
                    out.flush()?;
                    return Ok(Ended::Stop);
                }
                Some(Frame::Control(_)) => {
                    return Err(DnstapError::UnexpectedFrame(
                        "control frame other than STOP after START",
                    ))
                }
                None => {
                    out.flush()?;
                    return Ok(Ended::Closed);
                }
            }
        }
    }

    /// Answers the sender's STOP with FINISH.
    pub fn finish(&mut self) -> io::Result<()> {
        let stream = self.frames.get_mut().get_mut();
        write_control(stream, ControlType::Finish, None)?;
        stream.flush()
    }
}

/// Serves one sender on `stream`: the handshake, then every data frame copied
/// to `out` as a unidirectional stream (START first, STOP last). On the
/// sender's STOP it answers FINISH. Returns the number of data frames copied;
/// a sender that disconnects without STOP ends the copy normally.
pub fn accept<S: Read + Write>(stream: S, out: &mut impl Write) -> Result<u64, DnstapError> {
    let mut receiver = Receiver::handshake(stream)?;
    write_control(out, ControlType::Start, Some(CONTENT_TYPE))?;
    let mut copied = 0u64;
    let ended = receiver.copy_frames(out, None, &mut copied)?;
    write_control(out, ControlType::Stop, None)?;
    out.flush()?;
    if ended == Ended::Stop {
        receiver.finish()?;
    }
    Ok(copied)
}
