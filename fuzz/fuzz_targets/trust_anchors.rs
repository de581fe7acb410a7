//! Trust-anchor files on arbitrary text (zone-file lines or BIND's
//! statements): a mistake is an error with a place in the file, never a
//! panic or a hang, and an anchor read is one a validator can use.
#![no_main]

use bulwark_proto::Name;
use bulwark_resolver::validate::{keys_vouched_for, parse_anchors, AnchorData, Budget, WorkLimits};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse_anchors(text, "fuzz") {
        Ok(anchors) => {
            assert!(!anchors.is_empty());
            let budget = Budget::new(WorkLimits::default());
            for a in &anchors {
                if let AnchorData::Ds(ds) = &a.data {
                    let _ = keys_vouched_for(&a.owner, std::slice::from_ref(ds), &[], &budget);
                }
            }
            let _ = anchors.iter().any(|a| a.owner == Name::root());
        }
        Err(problems) => {
            assert!(!problems.is_empty());
            for p in &problems {
                assert!(p.line >= 1 && p.column >= 1, "{p:?}");
            }
        }
    }
});
