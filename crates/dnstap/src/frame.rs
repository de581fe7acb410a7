//! The Frame Streams protocol (farsightsec/fstrm, "Frame Streams Control
//! Frames"): a byte stream of frames, each a 32-bit big-endian length and that
//! many bytes. A length of zero is an escape: a control frame follows, as a
//! 32-bit length, a 32-bit control type and fields (32-bit field type, 32-bit
//! length, value). The only field type is CONTENT_TYPE.
//!
//! Pure: no I/O beyond the `Read`/`Write` it is given; every malformed input is
//! an error, never a panic.

use std::io::{self, Read, Write};

use crate::DnstapError;

/// Control frame types.
pub const CONTROL_ACCEPT: u32 = 0x01;
pub const CONTROL_START: u32 = 0x02;
pub const CONTROL_STOP: u32 = 0x03;
pub const CONTROL_READY: u32 = 0x04;
pub const CONTROL_FINISH: u32 = 0x05;

/// Control field types.
pub const FIELD_CONTENT_TYPE: u32 = 0x01;

/// The largest control frame accepted (fstrm's own limit): control frames
/// carry a few content type strings at most.
pub const MAX_CONTROL_LEN: u32 = 512;

/// The default largest data frame accepted. A dnstap message holds at most one
/// DNS message of 64 KiB plus small fields, so 1 MiB leaves ample room.
pub const DEFAULT_MAX_DATA_LEN: u32 = 1 << 20;

/// The kind of a control frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlType {
    Accept,
    Start,
    Stop,
    Ready,
    Finish,
}

impl ControlType {
    pub const fn code(self) -> u32 {
        match self {
            ControlType::Accept => CONTROL_ACCEPT,
            ControlType::Start => CONTROL_START,
            ControlType::Stop => CONTROL_STOP,
            ControlType::Ready => CONTROL_READY,
            ControlType::Finish => CONTROL_FINISH,
        }
    }

    pub const fn from_code(code: u32) -> Option<ControlType> {
        match code {
            CONTROL_ACCEPT => Some(ControlType::Accept),
            CONTROL_START => Some(ControlType::Start),
            CONTROL_STOP => Some(ControlType::Stop),
            CONTROL_READY => Some(ControlType::Ready),
            CONTROL_FINISH => Some(ControlType::Finish),
            _ => None,
        }
    }

    /// Which control frames may carry CONTENT_TYPE fields: READY and ACCEPT
    /// (any number), START (at most one). STOP and FINISH carry none.
    const fn max_content_types(self) -> Option<usize> {
        match self {
            ControlType::Accept | ControlType::Ready => None,
            ControlType::Start => Some(1),
            ControlType::Stop | ControlType::Finish => Some(0),
        }
    }
}

/// A decoded control frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Control {
    pub kind: ControlType,
    pub content_types: Vec<Vec<u8>>,
}

impl Control {
    /// True when the frame names `content_type`, or names none at all (the
    /// field is optional in START).
    pub fn allows(&self, content_type: &[u8]) -> bool {
        self.content_types.is_empty() || self.content_types.iter().any(|ct| ct == content_type)
    }

    /// The content types joined for error messages.
    pub fn describe_content_types(&self) -> String {
        let names: Vec<String> = self
            .content_types
            .iter()
            .map(|ct| String::from_utf8_lossy(ct).into_owned())
            .collect();
        names.join(", ")
    }
}

/// One frame of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Data(Vec<u8>),
    Control(Control),
}

fn u32_len(len: usize) -> io::Result<u32> {
    u32::try_from(len).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame too long"))
}

/// Writes a control frame with zero or one CONTENT_TYPE field.
pub fn write_control<W: Write + ?Sized>(
    out: &mut W,
    kind: ControlType,
    content_type: Option<&[u8]>,
) -> io::Result<()> {
    let field_len = match content_type {
        Some(ct) => u32_len(ct.len())?
            .checked_add(8)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "content type too long"))?,
        None => 0,
    };
    let control_len = field_len.saturating_add(4);
    if control_len > MAX_CONTROL_LEN {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "control frame too long",
        ));
    }
    // Assemble on the stack so the frame goes out in one write.
    let mut frame = [0u8; 12 + MAX_CONTROL_LEN as usize];
    let mut at = 0usize;
    let mut put = |bytes: &[u8]| -> io::Result<()> {
        let end = at.saturating_add(bytes.len());
        frame
            .get_mut(at..end)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "control frame too long"))?
            .copy_from_slice(bytes);
        at = end;
        Ok(())
    };
    put(&0u32.to_be_bytes())?;
    put(&control_len.to_be_bytes())?;
    put(&kind.code().to_be_bytes())?;
    if let Some(ct) = content_type {
        put(&FIELD_CONTENT_TYPE.to_be_bytes())?;
        put(&u32_len(ct.len())?.to_be_bytes())?;
        put(ct)?;
    }
    let bytes = frame.get(..at).unwrap_or_default();
    out.write_all(bytes)
}

/// Writes a data frame. An empty payload cannot be sent: its length would be
/// the control frame escape.
pub fn write_data<W: Write + ?Sized>(out: &mut W, payload: &[u8]) -> io::Result<()> {
    if payload.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "empty data frame",
        ));
    }
    out.write_all(&u32_len(payload.len())?.to_be_bytes())?;
    out.write_all(payload)
}

/// Decodes the body of a control frame (after the escape and the length).
pub fn decode_control(body: &[u8]) -> Result<Control, DnstapError> {
    let (code, mut rest) = split_u32(body).ok_or(DnstapError::BadControl("no control type"))?;
    let kind =
        ControlType::from_code(code).ok_or(DnstapError::BadControl("unknown control type"))?;
    let mut content_types = Vec::new();
    while !rest.is_empty() {
        let (field, after) = split_u32(rest).ok_or(DnstapError::BadControl("truncated field"))?;
        let (len, after) = split_u32(after).ok_or(DnstapError::BadControl("truncated field"))?;
        let len = usize::try_from(len).map_err(|_| DnstapError::BadControl("field too long"))?;
        let value = after
            .get(..len)
            .ok_or(DnstapError::BadControl("field overruns frame"))?;
        rest = after.get(len..).unwrap_or_default();
        if field != FIELD_CONTENT_TYPE {
            return Err(DnstapError::BadControl("unknown field type"));
        }
        content_types.push(value.to_vec());
    }
    if let Some(max) = kind.max_content_types() {
        if content_types.len() > max {
            return Err(DnstapError::BadControl("too many content types"));
        }
    }
    Ok(Control {
        kind,
        content_types,
    })
}

fn split_u32(bytes: &[u8]) -> Option<(u32, &[u8])> {
    let head: [u8; 4] = bytes.get(..4)?.try_into().ok()?;
    Some((u32::from_be_bytes(head), bytes.get(4..)?))
}

/// Reads frames from a byte stream, refusing oversized frames.
#[derive(Debug)]
pub struct FrameReader<R> {
    inner: R,
    max_data_len: u32,
}

impl<R: Read> FrameReader<R> {
    pub fn new(inner: R) -> FrameReader<R> {
        FrameReader {
            inner,
            max_data_len: DEFAULT_MAX_DATA_LEN,
        }
    }

    /// Sets the largest data frame accepted.
    #[must_use]
    pub fn with_max_data_len(mut self, max: u32) -> FrameReader<R> {
        self.max_data_len = max;
        self
    }

    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The underlying stream, e.g. to write the answers of the bidirectional
    /// handshake.
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    pub fn into_inner(self) -> R {
        self.inner
    }

    /// The next frame; `Ok(None)` on a clean end of stream between frames. An
    /// end of stream inside a frame is an `UnexpectedEof` error.
    pub fn read_frame(&mut self) -> Result<Option<Frame>, DnstapError> {
        let Some(len) = self.read_u32_or_eof()? else {
            return Ok(None);
        };
        if len != 0 {
            if len > self.max_data_len {
                return Err(DnstapError::FrameTooLarge {
                    len: u64::from(len),
                    limit: u64::from(self.max_data_len),
                });
            }
            let mut payload = vec![0u8; len as usize];
            self.inner.read_exact(&mut payload)?;
            return Ok(Some(Frame::Data(payload)));
        }
        let control_len = self.read_u32()?;
        if control_len > MAX_CONTROL_LEN {
            return Err(DnstapError::FrameTooLarge {
                len: u64::from(control_len),
                limit: u64::from(MAX_CONTROL_LEN),
            });
        }
        let mut body = [0u8; MAX_CONTROL_LEN as usize];
        let body = body.get_mut(..control_len as usize).unwrap_or_default();
        self.inner.read_exact(body)?;
        decode_control(body).map(|control| Some(Frame::Control(control)))
    }

    /// The next frame, which must be a control frame of this kind.
    pub fn expect_control(&mut self, kind: ControlType) -> Result<Control, DnstapError> {
        match self.read_frame()? {
            Some(Frame::Control(control)) if control.kind == kind => Ok(control),
            Some(Frame::Control(_)) => Err(DnstapError::UnexpectedFrame("wrong control frame")),
            Some(Frame::Data(_)) => Err(DnstapError::UnexpectedFrame("data frame before START")),
            None => Err(DnstapError::Io(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "end of stream before the expected control frame",
            ))),
        }
    }

    fn read_u32(&mut self) -> io::Result<u32> {
        let mut bytes = [0u8; 4];
        self.inner.read_exact(&mut bytes)?;
        Ok(u32::from_be_bytes(bytes))
    }

    fn read_u32_or_eof(&mut self) -> io::Result<Option<u32>> {
        let mut bytes = [0u8; 4];
        let mut filled = 0usize;
        while filled < 4 {
            let slot = bytes.get_mut(filled..).unwrap_or_default();
            match self.inner.read(slot) {
                Ok(0) if filled == 0 => return Ok(None),
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "truncated frame length",
                    ))
                }
                Ok(n) => filled = filled.saturating_add(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Some(u32::from_be_bytes(bytes)))
    }
}

impl<R: Read> Iterator for FrameReader<R> {
    type Item = Result<Frame, DnstapError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.read_frame().transpose()
    }
}
