#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Malformed HTTP, then 1000 requests 100 at a time, at a strata view server.

usage: hammer.py URL   (the URL strata view printed)

Exits 0 when every well-formed request got 200 and the server answered
after the malformed ones; the loops are bounded in count and time.
"""
import concurrent.futures
import socket
import sys
import urllib.parse
import urllib.request

url = sys.argv[1]
host, port = urllib.parse.urlsplit(url).hostname, urllib.parse.urlsplit(url).port

JUNK = [b"\x00\xff garbage\r\n\r\n",
        b"GET / HTTP/1.1\r\nX: " + b"a" * 100000 + b"\r\n\r\n",
        b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET / HTTP/9.9\r\n\r\n", b"GE",
        b"GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
        b"GET " + url.encode() + b"api/window?t0=0&t1=%ff%00&w=1 HTTP/1.1\r\n\r\n"]
for junk in JUNK:
    s = socket.create_connection((host, port), timeout=3)
    try:
        s.sendall(junk)
        s.shutdown(socket.SHUT_WR)
        s.recv(256)
    except OSError:
        pass  # a server that hangs up or waits is fine; one that dies is not
    s.close()


def one(i):
    q = f"{url}api/window?t0=0&t1={i * 1000}&w=100"
    with urllib.request.urlopen(q, timeout=60) as r:
        r.read()
        return r.status


with concurrent.futures.ThreadPoolExecutor(max_workers=100) as ex:
    codes = list(ex.map(one, range(1, 1001)))
ok = sum(c == 200 for c in codes)
with urllib.request.urlopen(url + "api/summary", timeout=10) as r:
    alive = r.status == 200
print(f"hammer: {ok} of 1000 answered 200; server {'up' if alive else 'down'}")
sys.exit(0 if ok == 1000 and alive else 1)
