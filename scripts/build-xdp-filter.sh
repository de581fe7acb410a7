#!/usr/bin/env bash
# Rebuilds crates/net/src/xdp/filter.bpf.o from filter.bpf.c. Needs Debian's
# clang and libbpf-dev. The object is committed, so only a change to the C
# source needs this; crates/net/tests/xdp_filter_object.rs checks they agree.
set -euo pipefail
dir="$(cd "$(dirname "$0")/.." && pwd)/crates/net/src/xdp"
out="${1:-$dir/filter.bpf.o}"
# -g: BTF for the maps (aya reads `.maps` through it). The source path is
# given relative, so the object does not depend on where the clone lives.
cd "$dir"
clang -O2 -g -target bpf -I/usr/include/"$(uname -m)"-linux-gnu \
  -fdebug-prefix-map="$dir"=. -c filter.bpf.c -o "$out"
llvm-strip -g --keep-section=.BTF --keep-section=.BTF.ext "$out"
