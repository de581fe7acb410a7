#!/usr/bin/env python3
"""Checks the rules ARCHITECTURE.md states, from the source alone:

1. Dependencies point one way: each workspace crate depends only on the
   crates its row of ALLOWED lists, and the pure crates on none of the
   runtime crates in EDGE_ONLY (tokio, socket2, libc, ...).
2. Only `net` names a socket type (std/tokio sockets, Unix streams, socket2).
3. No pure crate reads the clock or starts a thread or task.
4. No cycle of `use crate::...` imports longer than MAX_CYCLE files inside
   the edge crate `bulwark`, whose features must stay readable top-down.

Test code (`#[cfg(test)] mod tests { ... }`, files named tests.rs, and the
crates' tests/ directories) is exempt: tests drive real sockets and clocks.

Usage: scripts/check-architecture.py [--cycles CRATE]   (exit 1 on a breach)
  --cycles CRATE  print CRATE's import graph: its cycle sets and longest cycle
"""
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
CRATES = os.path.join(ROOT, "crates")

# Crate directory -> the workspace crates it may depend on (normal deps).
ALLOWED = {
    "proto": set(),
    "zone": {"proto"},
    "crypto": set(),
    "dnssec": {"proto", "zone", "crypto"},
    "guard": {"proto", "crypto"},
    "auth": {"proto", "zone", "crypto", "guard", "dnssec"},
    "xfr": {"proto", "zone", "crypto", "dnssec", "guard"},
    "resolver": {"proto", "zone", "crypto", "dnssec", "guard"},
    "store": {"proto", "zone"},
    "dnstap": {"proto"},
    "net": {"proto"},
    "testkit": set(),
    "deckard": {"proto", "testkit"},  # test-only: replays resolver scenarios
    "bulwark": None,  # the edge knows everyone
}
# Crates that may do I/O with sockets, read the clock and start threads.
EDGE = {"net", "bulwark", "testkit", "deckard"}
# External crates only the edge may depend on.
EDGE_ONLY = {"tokio", "socket2", "libc", "nix", "mio", "hyper", "quinn", "rustls", "tokio-rustls"}
MAX_CYCLE = 3
CYCLES_CHECKED = {"bulwark"}

SOCKET = re.compile(
    r"\b(TcpStream|TcpListener|TcpSocket|UdpSocket|UnixStream|UnixListener|UnixDatagram)\b"
    r"|\bsocket2::|\btokio::net\b"
)
CLOCK_OR_THREAD = re.compile(
    r"\b(SystemTime|Instant)::now\b|\bthread::(spawn|scope|Builder)\b"
    r"|\btokio::(spawn|task::spawn|time::(sleep|interval|timeout))\b|\bspawn_blocking\b"
)


def strip_tests(text):
    """The source without `#[cfg(test)]` items (a test module, or one item)."""
    out = []
    i = 0
    while True:
        j = text.find("#[cfg(test)]", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        # Skip to the end of the item that follows: a `;` before any `{`, or
        # the matching brace.
        k = j + len("#[cfg(test)]")
        semi = text.find(";", k)
        brace = text.find("{", k)
        if brace < 0 or (0 <= semi < brace):
            i = semi + 1 if semi >= 0 else len(text)
            continue
        depth = 0
        p = brace
        while p < len(text):
            c = text[p]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    break
            p += 1
        i = p + 1


def strip_comments(text):
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def source_files(crate):
    src = os.path.join(CRATES, crate, "src")
    for dirpath, _, files in os.walk(src):
        for f in sorted(files):
            if f.endswith(".rs") and f != "tests.rs":
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8") as fh:
                    yield path, strip_comments(strip_tests(fh.read()))


def dependencies(crate):
    """Normal dependencies named in the crate's Cargo.toml."""
    deps = set()
    section = None
    with open(os.path.join(CRATES, crate, "Cargo.toml"), encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if line.startswith("["):
                section = line
                continue
            if section == "[dependencies]" and line and not line.startswith("#"):
                deps.add(re.split(r"[\s.=]", line, maxsplit=1)[0])
    return deps


def import_graph(crate):
    """Module -> modules it imports with `crate::` or `super::` paths."""
    src = os.path.join(CRATES, crate, "src")
    mods = {}
    for dirpath, _, files in os.walk(src):
        for f in files:
            if f.endswith(".rs") and f != "tests.rs":
                parts = os.path.relpath(os.path.join(dirpath, f), src)[:-3].split("/")
                if parts[-1] in ("mod", "main", "lib"):
                    parts = parts[:-1]
                mods["::".join(parts)] = os.path.join(dirpath, f)

    def resolve(path):
        segs = path.split("::")
        for n in range(len(segs), 0, -1):
            m = "::".join(segs[:n])
            if m in mods:
                return m
        return None

    edges = {m: set() for m in mods}
    for m, p in mods.items():
        with open(p, encoding="utf-8") as fh:
            text = strip_comments(strip_tests(fh.read()))
        targets = []
        for mt in re.finditer(r"crate::([A-Za-z0-9_:]+)(::\{([^}]*)\})?", text):
            base = mt.group(1).rstrip(":")
            if mt.group(3):
                targets += [base + "::" + t.strip().split(" ")[0] for t in mt.group(3).split(",") if t.strip()]
            else:
                targets.append(base)
        parent = m.rsplit("::", 1)[0] if "::" in m else ""
        for mt in re.finditer(r"super::([A-Za-z0-9_]+)", text):
            targets.append((parent + "::" if parent else "") + mt.group(1))
        for t in targets:
            r = resolve(t)
            if r and r != m:
                edges[m].add(r)
    return edges


def cycle_sets(edges):
    """Strongly connected sets of more than one module (Tarjan)."""
    index, low, stack, on, sets, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sets.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(sets, key=len, reverse=True)


def longest_cycle(edges, members):
    """The longest simple cycle through `members` (exhaustive; sets are small)."""
    best = []
    members = set(members)

    def dfs(start, v, path, seen):
        nonlocal best
        for w in sorted(edges[v] & members):
            if w == start and len(path) > len(best):
                best = list(path)
            elif w not in seen and w > start:
                seen.add(w)
                path.append(w)
                dfs(start, w, path, seen)
                path.pop()
                seen.discard(w)

    for v in sorted(members):
        dfs(v, v, [v], {v})
    return best


def report_cycles(crate):
    edges = import_graph(crate)
    sets = cycle_sets(edges)
    print(f"{crate}: {len(edges)} modules, {sum(len(e) for e in edges.values())} imports")
    longest = []
    for s in sets:
        print(f"  cycle set of {len(s)}: {' '.join(s)}")
        c = longest_cycle(edges, s)
        if len(c) > len(longest):
            longest = c
    if longest:
        print(f"  longest cycle: {len(longest)} files: {' -> '.join(longest + longest[:1])}")
    else:
        print("  no cycle")
    return longest


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--cycles":
        report_cycles(sys.argv[2])
        return 0
    crates = sorted(d for d in os.listdir(CRATES) if os.path.isfile(os.path.join(CRATES, d, "Cargo.toml")))
    breaches = []
    for crate in crates:
        if crate not in ALLOWED:
            breaches.append(f"crates/{crate}: not in ALLOWED of scripts/check-architecture.py (say what it may depend on)")
            continue
        deps = dependencies(crate)
        internal = {d[len("bulwark-"):] for d in deps if d.startswith("bulwark-")}
        allowed = ALLOWED[crate]
        if allowed is not None:
            for d in sorted(internal - allowed):
                breaches.append(f"crates/{crate}: depends on bulwark-{d}, which it may not (dependencies point one way)")
        if crate not in EDGE:
            for d in sorted(deps & EDGE_ONLY):
                breaches.append(f"crates/{crate}: depends on {d}, a runtime crate only the edge uses")
        for path, text in source_files(crate):
            rel = os.path.relpath(path, ROOT)
            if crate not in ("net", "testkit", "deckard"):
                for m in SOCKET.finditer(text):
                    line = text.count("\n", 0, m.start()) + 1
                    breaches.append(f"{rel}:{line}: `{m.group(0)}`: only crates/net may name a socket type")
            if crate not in EDGE:
                for m in CLOCK_OR_THREAD.finditer(text):
                    line = text.count("\n", 0, m.start()) + 1
                    breaches.append(f"{rel}:{line}: `{m.group(0)}`: a pure crate takes time and threads from its caller")
        if crate not in CYCLES_CHECKED:
            continue
        edges = import_graph(crate)
        longest = []
        for members in cycle_sets(edges):
            c = longest_cycle(edges, members)
            if len(c) > len(longest):
                longest = c
        if len(longest) > MAX_CYCLE:
            breaches.append(
                f"crates/{crate}: an import cycle of {len(longest)} files (at most {MAX_CYCLE}): "
                + " -> ".join(longest + longest[:1])
            )
    for b in breaches:
        print(b)
    if breaches:
        print(f"{len(breaches)} breach(es) of the rules in ARCHITECTURE.md")
        return 1
    print("architecture rules hold: one-way dependencies, sockets only in net, "
          f"no clock or thread in a pure crate, no import cycle over {MAX_CYCLE} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
