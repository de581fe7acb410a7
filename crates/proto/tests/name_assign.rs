//! `Name::assign_wire` and `Name::assign_lowercase` reuse a name's storage on
//! the query path (and `Name::from_wire` is `assign_wire` on a fresh name);
//! they must agree with reading the name through the stream reader, whatever
//! the storage held before.

#![allow(clippy::unwrap_used)]

use bulwark_proto::wire::{Reader, WireError};
use bulwark_proto::{Name, NameError};
use proptest::prelude::*;

/// What a whole-slice wire name reads as through the stream reader
/// (`Name::read_uncompressed`), then no octets left over: the reference
/// `Name::assign_wire` (and so `Name::from_wire`) must agree with.
fn reference(wire: &[u8]) -> Result<Name, NameError> {
    let mut r = Reader::new(wire);
    let name = Name::read_uncompressed(&mut r).map_err(|e| match e {
        WireError::BadName { reason, .. } => reason,
        _ => NameError::Truncated,
    })?;
    if r.is_empty() {
        Ok(name)
    } else {
        Err(NameError::TrailingData)
    }
}

/// Wire names as they come (labels of 0–70 octets, some over the limits),
/// then sometimes damaged: a byte changed, cut short or extended.
fn wireish() -> impl Strategy<Value = Vec<u8>> {
    let label = prop::collection::vec(any::<u8>(), 0..70);
    let labels = prop::collection::vec(label, 0..8);
    (labels, 0u8..4, any::<usize>(), any::<u8>()).prop_map(|(labels, damage, at, byte)| {
        let mut wire = Vec::new();
        for l in labels.iter().filter(|l| !l.is_empty()) {
            wire.push(u8::try_from(l.len()).unwrap());
            wire.extend_from_slice(l);
        }
        wire.push(0);
        let at = at % wire.len();
        match damage {
            1 => wire[at] = byte,
            2 => wire.truncate(at),
            3 => wire.push(byte),
            _ => {}
        }
        wire
    })
}

proptest! {
    #[test]
    fn assign_wire_agrees_with_the_stream_reader(previous in wireish(), wire in wireish()) {
        let mut name = Name::from_wire(&previous).unwrap_or_else(|_| {
            // Storage full of octets a shorter name must not pick up.
            Name::from_labels([&[b'x'; 63][..], &[b'y'; 63], &[b'z'; 63], &[b'w'; 61]]).unwrap()
        });
        let before = name.clone();
        let fresh = reference(&wire);
        prop_assert_eq!(Name::from_wire(&wire).map(|n| n.to_string()), fresh.clone().map(|n| n.to_string()));
        let assigned = name.assign_wire(&wire);
        match fresh {
            Ok(fresh) => {
                prop_assert_eq!(assigned, Ok(()));
                prop_assert!(name.eq_exact(&fresh));
                prop_assert_eq!(name.wire_len(), fresh.wire_len());
                prop_assert_eq!(name.to_string(), fresh.to_string());
            }
            Err(e) => {
                prop_assert_eq!(assigned, Err(e));
                // A rejected name leaves the old one as it was.
                prop_assert!(name.eq_exact(&before));
            }
        }
    }

    #[test]
    fn assign_lowercase_agrees_with_to_lowercase(previous in wireish(), wire in wireish()) {
        let Ok(source) = Name::from_wire(&wire) else { return Ok(()) };
        let mut name = Name::from_wire(&previous).unwrap_or_default();
        name.assign_lowercase(&source);
        prop_assert!(name.eq_exact(&source.to_lowercase()));
        prop_assert_eq!(name.has_uppercase(), false);
        prop_assert_eq!(source.has_uppercase(), !source.eq_exact(&name));
    }
}

#[test]
fn assign_wire_errors_name_the_fault() {
    let mut name = Name::root();
    assert_eq!(name.assign_wire(&[]), Err(NameError::Truncated));
    assert_eq!(name.assign_wire(&[1, b'a']), Err(NameError::Truncated));
    assert_eq!(name.assign_wire(&[0xc0, 12]), Err(NameError::BadPointer));
    assert_eq!(name.assign_wire(&[0x40, 0]), Err(NameError::BadLabelType));
    assert_eq!(name.assign_wire(&[0, 0]), Err(NameError::TrailingData));
    let mut long = Vec::new();
    for _ in 0..4 {
        long.push(63);
        long.extend_from_slice(&[b'a'; 63]);
    }
    long.push(0);
    assert_eq!(name.assign_wire(&long), Err(NameError::NameTooLong));
    assert!(name.is_root());
    name.assign_wire(&[3, b'W', b'w', b'W', 0]).unwrap();
    assert_eq!(name.to_string(), "WwW.");
}
