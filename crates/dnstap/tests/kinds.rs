//! Message kinds, kind sets and the small value types.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use bulwark_dnstap::schema::message::Type as SchemaType;
use std::time::Duration;

use bulwark_dnstap::{Drain, KindSet, MessageKind, Protocol, Sink, Tap, Timestamp};

#[test]
fn kinds_match_the_schema_numbers_and_names() {
    for kind in MessageKind::ALL {
        let schema = SchemaType::try_from(i32::from(kind.code())).unwrap();
        assert_eq!(schema.as_str_name(), kind.name());
        assert_eq!(MessageKind::from_code(i32::from(kind.code())), Some(kind));
        assert_eq!(kind.query(), kind.name().ends_with("_QUERY"));
    }
    assert_eq!(MessageKind::from_code(0), None);
    assert_eq!(MessageKind::from_code(15), None);
    assert_eq!(MessageKind::AuthQuery.mnemonic(), "AQ");
    assert_eq!(MessageKind::ForwarderResponse.mnemonic(), "FR");
}

#[test]
fn kinds_parse_in_either_case() {
    assert_eq!(
        "auth_query".parse::<MessageKind>().unwrap(),
        MessageKind::AuthQuery
    );
    assert_eq!(
        "AUTH_RESPONSE".parse::<MessageKind>().unwrap(),
        MessageKind::AuthResponse
    );
    assert_eq!(
        "update-query".parse::<MessageKind>().unwrap(),
        MessageKind::UpdateQuery
    );
    assert!("auth".parse::<MessageKind>().is_err());
    assert!("auth_queryx".parse::<MessageKind>().is_err());
    assert!("".parse::<MessageKind>().is_err());
}

#[test]
fn kind_sets_hold_what_was_put_in() {
    let auth = KindSet::auth();
    assert!(auth.contains(MessageKind::AuthQuery));
    assert!(auth.contains(MessageKind::AuthResponse));
    assert!(!auth.contains(MessageKind::ClientQuery));
    assert_eq!(
        auth.iter().collect::<Vec<_>>(),
        vec![MessageKind::AuthQuery, MessageKind::AuthResponse]
    );
    assert!(KindSet::empty().is_empty());
    let all = KindSet::all();
    assert!(MessageKind::ALL.iter().all(|&k| all.contains(k)));
    let one = KindSet::empty().with(MessageKind::UpdateResponse);
    assert_eq!(one.iter().count(), 1);
    let collected: KindSet = [MessageKind::AuthQuery, MessageKind::AuthResponse]
        .into_iter()
        .collect();
    assert_eq!(collected, auth);
}

#[test]
fn protocols_use_the_schema_numbers() {
    use bulwark_dnstap::schema::SocketProtocol as P;
    assert_eq!(Protocol::Udp.code(), P::Udp as i32);
    assert_eq!(Protocol::Tcp.code(), P::Tcp as i32);
    assert_eq!(Protocol::Dot.code(), P::Dot as i32);
    assert_eq!(Protocol::Doh.code(), P::Doh as i32);
    assert_eq!(Protocol::Doq.code(), P::Doq as i32);
}

#[test]
fn timestamps_split_a_duration_since_the_epoch() {
    let t = Timestamp::from_unix(Duration::new(1_795_000_000, 123_456_789));
    assert_eq!(
        t,
        Timestamp {
            secs: 1_795_000_000,
            nanos: 123_456_789
        }
    );
    assert_eq!(Timestamp::from_unix(Duration::ZERO), Timestamp::default());
}

#[test]
fn taps_move_between_threads_and_sinks_are_shared() {
    fn send<T: Send>() {}
    fn sync<T: Sync>() {}
    send::<Tap>();
    send::<Sink>();
    sync::<Sink>();
    send::<Drain>();
}
