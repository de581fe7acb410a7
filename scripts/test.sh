#!/usr/bin/env bash
# The project's one test command: installs the peer DNS servers and tools the
# interop tests talk to (when missing), then runs formatting, lints and every
# test of the workspace. Exits non-zero on the first failure.
#
# Works unattended on a fresh Debian machine (CI=true, no stdin). One debug
# build of the workspace serves clippy and the tests alike.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Peers: knotd and kdig (differential and interop tests) with its dnstap
# module, nsd, BIND's named, dig and named-checkzone, ldns tools, unbound,
# the Frame Streams and dnstap readers (fstrm_capture, dnstap-ldns), dnspython,
# the Prometheus text parser (metrics tests), systemd-analyze (unit check),
# SoftHSM with opensc's pkcs11-tool (keys in a PKCS#11 token), and for the
# Debian package test (crates/bulwark/tests/it/package_deb.rs) dpkg-shlibdeps, lintian, man and
# adduser, and libfaketime (package faketime) for Unbound's clock in the
# Deckard resolver scenarios (crates/bulwark/tests/it/resolver_scenarios.rs),
# dnsperf and curl (DNS over TLS and HTTPS, crates/bulwark/tests/it/interop_encrypted.rs),
# clang, llvm and libbpf-dev, which rebuild the XDP program to check the
# committed object (crates/net/tests/xdp_filter_object.rs), iproute2 for the
# namespaces and veth links of the XDP tests,
# and dns-root-data, whose root anchors the built-in ones are checked against
# (crates/resolver/tests/validate.rs).
PACKAGES=(knot knot-dnsutils knot-module-dnstap nsd bind9 bind9-utils bind9-dnsutils
    ldnsutils unbound dns-root-data fstrm-bin dnstap-ldns python3-dnspython python3-cryptography
    python3-prometheus-client dnsperf curl
    systemd softhsm2 opensc
    dpkg-dev lintian man-db adduser
    faketime
    clang llvm libbpf-dev iproute2)

CURRENT_STEP="start"
step() {
    CURRENT_STEP="$*"
    printf '\n==> %s\n' "$*"
}
# The last line of the output always says how the run ended and where.
trap 'rc=$?; if [ "$rc" -ne 0 ]; then printf "\n==> FAILED during: %s (exit %s)\n" "$CURRENT_STEP" "$rc"; fi' EXIT

install_missing_packages() {
    local missing=()
    local pkg
    for pkg in "${PACKAGES[@]}"; do
        if ! dpkg -s "$pkg" 2>/dev/null | grep -q '^Status: install ok installed'; then
            missing+=("$pkg")
        fi
    done
    if [ "${#missing[@]}" -eq 0 ]; then
        echo "all peer packages present"
        return
    fi
    if ! command -v apt-get >/dev/null; then
        echo "missing packages ${missing[*]} and no apt-get to install them" >&2
        exit 1
    fi
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        sudo=(sudo -n)
    fi
    step "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -q </dev/null
    # The packages ship daemons; policy-rc.d is not ours to change, so the
    # services Debian may start are harmless: the tests use their own ports.
    "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
}

step "peer packages"
install_missing_packages

# DNS over QUIC and DoH over HTTP/3 clients, and ML-DSA-44 DNSSEC (algorithm
# 18) as an independent signer and verifier: Debian has no aioquic, and its
# dnspython and cryptography predate ML-DSA, so dnspython, cryptography and
# aioquic come from PyPI into a virtual environment inside the clone
# (target/pyquic), where the tests look for them
# (bulwark_testkit::require_python_module). Nothing is cached outside it.
PYQUIC="target/pyquic"
if ! "$PYQUIC/bin/python3" -c 'import aioquic, dns.quic, dns.query, dns.dnssecalgs.mldsa; dns.query.HTTPVersion.H3' >/dev/null 2>&1; then
    step "installing aioquic, dnspython and cryptography from PyPI into $PYQUIC"
    rm -rf "$PYQUIC"
    python3 -m venv "$PYQUIC"
    "$PYQUIC/bin/pip" install --quiet --no-cache-dir --disable-pip-version-check \
        'aioquic>=1.2' 'dnspython>=2.9.2' 'cryptography>=46'
fi

# The tests treat a missing peer as a failure when CI is set; this script is
# the CI entry point, so it is set here too unless the caller chose.
export CI="${CI:-true}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

# A toolchain from rustup may lack the two components used below.
if command -v rustup >/dev/null 2>&1; then
    if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
        step "adding rustfmt and clippy"
        rustup component add rustfmt clippy
    fi
fi

step "cargo fmt --check"
cargo fmt --all -- --check

# The rules of ARCHITECTURE.md, from the source: one-way dependencies,
# sockets only in net, no clock or thread in a pure crate, no import cycle of
# more than three files in the binary.
step "architecture rules (scripts/check-architecture.py)"
python3 scripts/check-architecture.py

step "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings

# Before the tests, so that the test runner's summary closes the output.
step "fuzz targets, ${FUZZ_SECONDS:-60}s each (scripts/fuzz.sh)"
bash scripts/fuzz.sh

step "tests"
if cargo nextest --version >/dev/null 2>&1; then
    # nextest does not run doctests: run them first, so that the summary
    # nextest prints (every failed test, by name) closes the output.
    doc_rc=0
    cargo test --workspace --doc || doc_rc=$?
    tests_rc=0
    cargo nextest run --workspace --no-fail-fast || tests_rc=$?
    if [ "$doc_rc" -ne 0 ]; then
        CURRENT_STEP="doctests (see above)"
        exit "$doc_rc"
    fi
    if [ "$tests_rc" -ne 0 ]; then
        CURRENT_STEP="tests (see the nextest summary above)"
        exit "$tests_rc"
    fi
else
    # --no-fail-fast so one failing test binary does not hide the others.
    cargo test --workspace --no-fail-fast
fi

step "all checks passed"
