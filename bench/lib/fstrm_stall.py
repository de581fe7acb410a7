#!/usr/bin/env python3
"""A Frame Streams receiver that stops reading: the stalled dnstap collector.

Usage: fstrm_stall.py SOCKET

Listens on the Unix socket SOCKET, accepts one connection, completes the
bidirectional handshake (the sender's READY, our ACCEPT, the sender's START;
Frame Streams control frames: a zero "escape" length, the control frame's
length, its type, then fields of type, length, value), writes "started" to
SOCKET.state and then never reads again, so the kernel's socket buffer fills
and the sender must drop or block. Runs until killed.
"""
import os
import signal
import socket
import struct
import sys
import time

CONTENT_TYPE = b"protobuf:dnstap.Dnstap"
ACCEPT, START, READY = 1, 2, 4
FIELD_CONTENT_TYPE = 1

path = sys.argv[1]
state = path + ".state"


def read_exact(conn, n):
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise EOFError("the sender closed the connection")
        buf += chunk
    return buf


def read_control(conn):
    escape, length = struct.unpack(">II", read_exact(conn, 8))
    if escape != 0:
        raise ValueError(f"expected a control frame, got a data frame of {escape} octets")
    body = read_exact(conn, length)
    return struct.unpack(">I", body[:4])[0]


def control(ftype, fields):
    body = struct.pack(">I", ftype)
    for fid, value in fields:
        body += struct.pack(">II", fid, len(value)) + value
    return struct.pack(">II", 0, len(body)) + body


def note(text):
    with open(state, "a") as f:
        f.write(text + "\n")


signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
if os.path.exists(path):
    os.unlink(path)
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(4)
conn, _ = srv.accept()
kind = read_control(conn)
if kind != READY:
    note(f"error: first control frame has type {kind}, not READY")
    sys.exit(1)
conn.sendall(control(ACCEPT, [(FIELD_CONTENT_TYPE, CONTENT_TYPE)]))
kind = read_control(conn)
if kind != START:
    note(f"error: control frame type {kind} after ACCEPT, not START")
    sys.exit(1)
note("started")
# Never read again; further connections (a sender reconnecting after a
# timeout) are left in the accept queue, unread too.
while True:
    time.sleep(3600)
