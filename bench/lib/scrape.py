#!/usr/bin/env python3
"""Scrape a Prometheus endpoint once a second, as a monitoring system would.

Usage: scrape.py URL OUT

Until SIGTERM: GET URL every second. After each scrape OUT is rewritten with
the count of scrapes so far (ok and failed), the mean time per scrape in ms,
the size of the last body, and the last body itself after a blank line (so
the caller can read counters from it while the scraper runs).
"""
import os
import signal
import sys
import time
import urllib.request

url, out = sys.argv[1], sys.argv[2]
ok = failed = 0
spent = 0.0
last = b""
# OUT is current after every scrape, so SIGTERM just ends the process.
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))


def write():
    # Write beside, then rename: a reader never sees half a file.
    with open(out + ".new", "wb") as f:
        mean = spent * 1000 / ok if ok else 0
        f.write(f"scrapes_ok {ok}\nscrapes_failed {failed}\nscrape_ms_mean {mean:.2f}\n"
                f"body_bytes {len(last)}\n\n".encode())
        f.write(last)
    os.replace(out + ".new", out)


next_at = time.monotonic()
while True:
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            last = r.read()
        ok += 1
        spent += time.monotonic() - t0
    except Exception:  # noqa: BLE001 - a failed scrape is counted, not fatal
        failed += 1
    write()
    next_at += 1.0
    delay = next_at - time.monotonic()
    if delay > 0:
        time.sleep(delay)
