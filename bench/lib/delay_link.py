#!/usr/bin/env python3
"""A wire with latency, for bench/pq.sh, where the kernel has no netem.

Forwards Ethernet frames between pairs of interfaces (AF_PACKET), each one
held DELAY milliseconds first, in both directions: two interfaces joined so
behave like a cable with that one-way delay. Rate limiting is left to tbf on
the veth ends. It also counts, per direction, what round trips a DNS exchange
costs on the wire:

  udp     UDP datagrams to port 53 (each a question: one round trip)
  syn     TCP SYNs without data to port 53 (a handshake: one round trip)
  syn_data  TCP SYNs to port 53 carrying data (TCP Fast Open: the question
          rides in the handshake's round trip)
  tcp     other TCP segments with data to port 53 (a question on an open
          connection: one round trip)

On SIGUSR1 the counters are written, as JSON, to COUNTS (atomically), so
the caller can read them before and after each lookup.

Usage: delay_link.py DELAY_MS COUNTS A1:B1 [A2:B2 ...]
"""

import heapq
import json
import os
import signal
import socket
import struct
import sys
import threading
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
ETH_P_IP = 0x0800
DNS_PORT = 53


def classify(frame):
    """The counter a frame adds to, or None."""
    if len(frame) < 34 or struct.unpack_from("!H", frame, 12)[0] != ETH_P_IP:
        return None
    ihl = (frame[14] & 0x0F) * 4
    proto = frame[23]
    frag = struct.unpack_from("!H", frame, 20)[0]
    if frag & 0x1FFF:
        return None  # a later fragment: its datagram was counted
    total = struct.unpack_from("!H", frame, 16)[0]
    l4 = 14 + ihl
    if proto == 17 and len(frame) >= l4 + 8:
        if struct.unpack_from("!H", frame, l4 + 2)[0] == DNS_PORT:
            return "udp"
    elif proto == 6 and len(frame) >= l4 + 20:
        if struct.unpack_from("!H", frame, l4 + 2)[0] != DNS_PORT:
            return None
        offset = (frame[l4 + 12] >> 4) * 4
        flags = frame[l4 + 13]
        payload = total - ihl - offset
        syn, ack = flags & 0x02, flags & 0x10
        if syn and not ack:
            return "syn_data" if payload > 0 else "syn"
        if payload > 0:
            return "tcp"
    return None


class Link:
    def __init__(self, delay):
        self.delay = delay
        self.queue = []
        self.seq = 0
        self.cond = threading.Condition()
        self.counts = {}
        self.sockets = {}
        self.dumps = 0

    def open(self, name):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
        s.bind((name, 0))
        self.sockets[name] = s

    def receive(self, src, dst):
        sock = self.sockets[src]
        key = f"{src}>{dst}"
        while True:
            frame, addr = sock.recvfrom(65535)
            if addr[2] == PACKET_OUTGOING:
                continue
            kind = classify(frame)
            due = time.monotonic() + self.delay
            with self.cond:
                if kind:
                    c = self.counts.setdefault(key, {})
                    c[kind] = c.get(kind, 0) + 1
                self.seq += 1
                heapq.heappush(self.queue, (due, self.seq, dst, frame))
                self.cond.notify()

    def send(self):
        while True:
            with self.cond:
                while not self.queue:
                    self.cond.wait()
                due, _, dst, frame = self.queue[0]
                wait = due - time.monotonic()
                if wait > 0:
                    self.cond.wait(wait)
                    continue
                heapq.heappop(self.queue)
            try:
                self.sockets[dst].send(frame)
            except OSError as e:
                print(f"delay_link: {dst}: {e} ({len(frame)} octets)", file=sys.stderr)

    def dump(self, path):
        with self.cond:
            self.dumps += 1
            text = json.dumps({"dumps": self.dumps, "counts": self.counts})
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    link = Link(float(argv[0]) / 1000.0)
    counts = argv[1]
    pairs = [p.split(":") for p in argv[2:]]
    for a, b in pairs:
        link.open(a)
        link.open(b)
    for a, b in pairs:
        for src, dst in ((a, b), (b, a)):
            threading.Thread(target=link.receive, args=(src, dst), daemon=True).start()
    threading.Thread(target=link.send, daemon=True).start()
    signal.signal(signal.SIGUSR1, lambda *_: link.dump(counts))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    link.dump(counts)
    print("ready", flush=True)
    while True:
        signal.pause()


if __name__ == "__main__":
    main(sys.argv[1:])
