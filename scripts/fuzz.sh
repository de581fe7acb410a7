#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for a bounded time and fails if any
# finds a crash (a panic, a failed assertion, a sanitizer report, a leak or
# running out of the memory limit).
#
#   FUZZ_SECONDS   seconds per target (default 60)
#   FUZZ_TARGETS   space-separated targets to run (default: all of them)
#   FUZZ_SANITIZER address (default) or none
#
# cargo-fuzz needs nightly compiler flags; RUSTC_BOOTSTRAP=1 lets the stable
# toolchain accept them. All targets are built once, up front, so the timed runs
# measure fuzzing and not compiling. Each run starts from the committed seed
# corpus (fuzz/corpus/NAME, read only) and writes the inputs it discovers to a
# scratch directory, so the repository is not touched; a crashing input is left
# in fuzz/artifacts/NAME/ (see fuzz/README.md for what to do with it).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

SECONDS_EACH="${FUZZ_SECONDS:-60}"
SANITIZER="${FUZZ_SANITIZER:-address}"
ALL_TARGETS=(message_parse message_roundtrip answer_query zone_parse tcp_framing doh_request doq_stream xdp_frame
    xfr_update transfer_reader tsig_verify resolver_responses validate_records trust_anchors
    anchor_state)
read -r -a TARGETS <<<"${FUZZ_TARGETS:-${ALL_TARGETS[*]}}"

export RUSTC_BOOTSTRAP=1
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "==> installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

# Debug assertions on (-a): overflow checks and debug_assert! are findings too.
BUILD_FLAGS=(--sanitizer "$SANITIZER" --debug-assertions)

echo "==> building fuzz targets (sanitizer: $SANITIZER)"
cargo fuzz build "${BUILD_FLAGS[@]}"

scratch="$(mktemp -d "${TMPDIR:-/tmp}/bulwark-fuzz.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT

failed=()
summary=()
for target in "${TARGETS[@]}"; do
    echo "==> fuzzing $target for ${SECONDS_EACH}s"
    mkdir -p "$scratch/$target" "fuzz/corpus/$target"
    log="$scratch/$target.log"
    rc=0
    # The first corpus directory receives new inputs: the scratch one. The
    # committed seeds are only read.
    cargo fuzz run "${BUILD_FLAGS[@]}" "$target" "$scratch/$target" "fuzz/corpus/$target" -- \
        -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -print_final_stats=1 \
        >"$log" 2>&1 || rc=$?
    # libFuzzer's final statistics: executions run and inputs added.
    execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
    if [ -z "$execs" ]; then
        # No final stats (a crash ends the run early): take the last status line.
        execs="$(grep -oE '^#[0-9]+' "$log" | tail -n 1 | tr -d '#')"
    fi
    rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)"
    if [ "$rc" -ne 0 ] || grep -qE '^==[0-9]+==ERROR|panicked at|Test unit written to' "$log"; then
        tail -n 60 "$log"
        failed+=("$target")
        summary+=("$(printf '%-18s FAILED after %s executions (exit %s)' "$target" "${execs:-?}" "$rc")")
    else
        summary+=("$(printf '%-18s %12s executions, %s/s, no finding' "$target" "${execs:-?}" "${rate:-?}")")
    fi
done

echo
echo "==> fuzz summary (${SECONDS_EACH}s per target)"
printf '    %s\n' "${summary[@]}"
if [ "${#failed[@]}" -ne 0 ]; then
    echo "==> fuzz findings in: ${failed[*]} (inputs in fuzz/artifacts/)" >&2
    exit 1
fi
