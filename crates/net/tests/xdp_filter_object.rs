//! The committed XDP object (crates/net/src/xdp/filter.bpf.o, embedded in
//! the binary) is what its C source builds to: a change to filter.bpf.c
//! without rerunning scripts/build-xdp-filter.sh fails here.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

#[test]
fn the_committed_xdp_object_is_built_from_its_source() {
    if bulwark_testkit::require_tool("clang").is_none()
        || bulwark_testkit::require_tool("llvm-strip").is_none()
        || bulwark_testkit::require_file("/usr/include/bpf/bpf_helpers.h", "libbpf-dev").is_none()
    {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::env::temp_dir().join(format!("bulwark-xdp-filter-{}.o", std::process::id()));
    let status = Command::new("bash")
        .arg(root.join("scripts/build-xdp-filter.sh"))
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success(), "scripts/build-xdp-filter.sh failed");
    let built = std::fs::read(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    let committed =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/xdp/filter.bpf.o")).unwrap();
    assert!(
        built == committed,
        "filter.bpf.o differs from what filter.bpf.c builds to: run scripts/build-xdp-filter.sh"
    );
}
