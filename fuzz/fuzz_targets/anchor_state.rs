//! RFC 5011 trust anchor state as the store gives it back, on arbitrary
//! bytes (a damaged file, a downgrade): it is read or refused, never a
//! panic, and what is read writes back the same.
#![no_main]

use bulwark_resolver::validate::rfc5011::AutoTrust;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(state) = AutoTrust::decode(data) {
        let again = state.encode();
        assert_eq!(AutoTrust::decode(&again).as_ref(), Some(&state));
        let _ = state.anchors();
        let _ = state.next_refresh();
        let _ = state.retry_at(0);
    }
});
