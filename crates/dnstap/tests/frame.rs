//! The Frame Streams codec against byte literals: what it writes, what it
//! reads back, and what it refuses.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use bulwark_dnstap::frame::{
    decode_control, write_control, write_data, Control, ControlType, Frame, FrameReader,
    MAX_CONTROL_LEN,
};
use bulwark_dnstap::{DnstapError, CONTENT_TYPE};

/// START with the dnstap content type, byte for byte as fstrm writes it.
const START: &[u8] = b"\x00\x00\x00\x00\x00\x00\x00\x22\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x16protobuf:dnstap.Dnstap";
const STOP: &[u8] = b"\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x03";

fn frames(bytes: &[u8]) -> Vec<Result<Frame, DnstapError>> {
    FrameReader::new(bytes).collect()
}

#[test]
fn control_frames_are_written_as_fstrm_writes_them() {
    let mut out = Vec::new();
    write_control(&mut out, ControlType::Start, Some(CONTENT_TYPE)).unwrap();
    assert_eq!(out, START);
    out.clear();
    write_control(&mut out, ControlType::Stop, None).unwrap();
    assert_eq!(out, STOP);
    out.clear();
    write_control(&mut out, ControlType::Finish, None).unwrap();
    assert_eq!(out, b"\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x05");
    out.clear();
    write_control(&mut out, ControlType::Ready, Some(b"a")).unwrap();
    assert_eq!(
        out,
        b"\x00\x00\x00\x00\x00\x00\x00\x0d\x00\x00\x00\x04\x00\x00\x00\x01\x00\x00\x00\x01a"
    );
}

#[test]
fn data_frames_are_length_prefixed() {
    let mut out = Vec::new();
    write_data(&mut out, b"hello").unwrap();
    assert_eq!(out, b"\x00\x00\x00\x05hello");
    assert!(
        write_data(&mut out, b"").is_err(),
        "a zero length is the control escape"
    );
}

#[test]
fn a_stream_reads_back_frame_by_frame() {
    let mut stream = START.to_vec();
    write_data(&mut stream, b"one").unwrap();
    write_data(&mut stream, &[7u8; 300]).unwrap();
    stream.extend_from_slice(STOP);
    let frames: Vec<Frame> = frames(&stream).into_iter().map(Result::unwrap).collect();
    assert_eq!(
        frames,
        vec![
            Frame::Control(Control {
                kind: ControlType::Start,
                content_types: vec![CONTENT_TYPE.to_vec()]
            }),
            Frame::Data(b"one".to_vec()),
            Frame::Data(vec![7u8; 300]),
            Frame::Control(Control {
                kind: ControlType::Stop,
                content_types: vec![]
            }),
        ]
    );
}

#[test]
fn ready_may_offer_several_content_types() {
    let body = b"\x00\x00\x00\x04\x00\x00\x00\x01\x00\x00\x00\x01a\x00\x00\x00\x01\x00\x00\x00\x16protobuf:dnstap.Dnstap";
    let control = decode_control(body).unwrap();
    assert_eq!(control.kind, ControlType::Ready);
    assert_eq!(control.content_types.len(), 2);
    assert!(control.allows(CONTENT_TYPE));
    assert!(
        !decode_control(b"\x00\x00\x00\x04\x00\x00\x00\x01\x00\x00\x00\x01a")
            .unwrap()
            .allows(CONTENT_TYPE)
    );
}

#[test]
fn oversized_frames_are_errors() {
    // A data frame announcing 1 MiB + 1.
    let result = FrameReader::new(&b"\x00\x10\x00\x01rest"[..]).read_frame();
    assert!(
        matches!(
            result,
            Err(DnstapError::FrameTooLarge {
                len: 0x0010_0001,
                ..
            })
        ),
        "{result:?}"
    );
    // A smaller limit applies when asked for.
    let result = FrameReader::new(&b"\x00\x00\x00\x05hello"[..])
        .with_max_data_len(4)
        .read_frame();
    assert!(
        matches!(result, Err(DnstapError::FrameTooLarge { len: 5, limit: 4 })),
        "{result:?}"
    );
    // A control frame of 513 bytes.
    let len = MAX_CONTROL_LEN + 1;
    let mut bytes = vec![0, 0, 0, 0];
    bytes.extend_from_slice(&len.to_be_bytes());
    bytes.extend_from_slice(&[0u8; 600]);
    let result = FrameReader::new(bytes.as_slice()).read_frame();
    assert!(
        matches!(
            result,
            Err(DnstapError::FrameTooLarge {
                len: 513,
                limit: 512
            })
        ),
        "{result:?}"
    );
}

#[test]
fn garbage_control_frames_are_errors() {
    let cases: &[&[u8]] = &[
        // Control length 0: no type.
        b"\x00\x00\x00\x00\x00\x00\x00\x00",
        // Unknown control type 9.
        b"\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x09",
        // A field that runs past the frame.
        b"\x00\x00\x00\x00\x00\x00\x00\x0c\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x10",
        // A truncated field header.
        b"\x00\x00\x00\x00\x00\x00\x00\x06\x00\x00\x00\x02\x00\x00",
        // An unknown field type.
        b"\x00\x00\x00\x00\x00\x00\x00\x0d\x00\x00\x00\x02\x00\x00\x00\x02\x00\x00\x00\x01a",
        // STOP with a content type.
        b"\x00\x00\x00\x00\x00\x00\x00\x0d\x00\x00\x00\x03\x00\x00\x00\x01\x00\x00\x00\x01a",
    ];
    for case in cases {
        let result = FrameReader::new(*case).read_frame();
        assert!(
            matches!(result, Err(DnstapError::BadControl(_))),
            "{case:?}: {result:?}"
        );
    }
}

#[test]
fn truncated_streams_are_errors_and_a_clean_end_is_not() {
    assert!(FrameReader::new(&b""[..]).read_frame().unwrap().is_none());
    for case in [
        &b"\x00\x00"[..],
        b"\x00\x00\x00\x05hel",
        b"\x00\x00\x00\x00\x00\x00",
        &START[..20],
    ] {
        let result = FrameReader::new(case).read_frame();
        match result {
            Err(DnstapError::Io(e)) => {
                assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof, "{case:?}")
            }
            other => panic!("{case:?}: {other:?}"),
        }
    }
}

#[test]
fn random_bytes_never_panic() {
    // A cheap deterministic generator; the point is that no input panics.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..2000 {
        let mut bytes = Vec::new();
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let len = (state % 64) as usize;
        for _ in 0..len {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Bias towards zeros so control frames are exercised.
            bytes.push(if state % 3 == 0 {
                (state >> 8) as u8
            } else {
                0
            });
        }
        for frame in FrameReader::new(bytes.as_slice()).take(100) {
            if frame.is_err() {
                break;
            }
        }
    }
}

#[test]
fn the_reader_wants_start_and_the_dnstap_content_type() {
    let mut other = Vec::new();
    write_control(&mut other, ControlType::Start, Some(b"protobuf:other")).unwrap();
    assert!(matches!(
        bulwark_dnstap::Reader::new(other.as_slice()),
        Err(DnstapError::ContentType(_))
    ));
    let mut data_first = Vec::new();
    write_data(&mut data_first, b"x").unwrap();
    assert!(matches!(
        bulwark_dnstap::Reader::new(data_first.as_slice()),
        Err(DnstapError::UnexpectedFrame(_))
    ));
    // A payload that is not a dnstap protobuf is an error for that item.
    let mut stream = START.to_vec();
    write_data(&mut stream, b"\xff\xff\xff").unwrap();
    stream.extend_from_slice(STOP);
    let items: Vec<_> = bulwark_dnstap::Reader::new(stream.as_slice())
        .unwrap()
        .collect();
    assert_eq!(items.len(), 1);
    assert!(matches!(items[0], Err(DnstapError::Decode(_))));
}
