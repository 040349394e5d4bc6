"""Checks every response `hintq serve` gives to a set of requests with h11, an HTTP/1.1
parser no one here wrote. Usage: h11_check.py PORT. Prints one line per case; exits non-zero
on the first response h11 refuses or whose status is not the expected one."""
import socket
import sys

import h11

PORT = int(sys.argv[1])


def conn_for(method):
    c = h11.Connection(our_role=h11.CLIENT)
    # h11 frames a response by the request it answers: tell it the method (bytes on the wire
    # are ours, raw, so that invalid requests can be sent too).
    c.send(h11.Request(method=method, target="/", headers=[("Host", "t")]))
    c.send(h11.EndOfMessage())
    return c


def responses(raw, methods, close_expected):
    """Sends `raw` in one write; reads one final response per entry of `methods` with h11."""
    s = socket.create_connection(("127.0.0.1", PORT), timeout=5)
    s.sendall(raw)
    out = []
    c = conn_for(methods[0])
    i = 0
    while True:
        ev = c.next_event()
        if ev is h11.NEED_DATA:
            data = s.recv(65536)
            c.receive_data(data)
            continue
        if isinstance(ev, h11.InformationalResponse):
            out.append(ev.status_code)
            continue
        if isinstance(ev, h11.Response):
            out.append(ev.status_code)
            continue
        if isinstance(ev, h11.Data):
            continue
        if isinstance(ev, h11.EndOfMessage):
            i += 1
            if i == len(methods):
                break
            c.start_next_cycle()
            c.send(h11.Request(method=methods[i], target="/", headers=[("Host", "t")]))
            c.send(h11.EndOfMessage())
            continue
        if isinstance(ev, h11.ConnectionClosed):
            raise SystemExit(f"closed early after {out}")
    if close_expected:
        assert c.their_state is h11.MUST_CLOSE, c.their_state
        s.settimeout(3)
        assert s.recv(1) == b"", "server closes after Connection: close"
    s.close()
    return out


H = b"Host: t\r\n"
CASES = [
    # (name, raw bytes, methods, expected statuses, connection closed)
    ("get", b"GET /a.txt HTTP/1.1\r\n" + H + b"\r\n", ["GET"], [200], False),
    ("head", b"HEAD /1k.bin HTTP/1.1\r\n" + H + b"\r\n", ["HEAD"], [200], False),
    ("dir index", b"GET /sub/ HTTP/1.1\r\n" + H + b"\r\n", ["GET"], [200], False),
    ("404", b"GET /nothing HTTP/1.1\r\n" + H + b"\r\n", ["GET"], [404], False),
    ("403 symlink out", b"GET /out HTTP/1.1\r\n" + H + b"\r\n", ["GET"], [403], False),
    ("400 climb", b"GET /../x HTTP/1.1\r\n" + H + b"\r\n", ["GET"], [400], False),
    ("405", b"DELETE /a.txt HTTP/1.1\r\n" + H + b"\r\n", ["DELETE"], [405], False),
    ("501 method", b"BREW /pot HTTP/1.1\r\n" + H + b"\r\n", ["BREW"], [501], False),
    ("304", b"GET /a.txt HTTP/1.1\r\n" + H + b"If-Modified-Since: Fri, 01 Jan 2100 00:00:00 GMT\r\n\r\n", ["GET"], [304], False),
    ("pipelined", (b"GET /a.txt HTTP/1.1\r\n" + H + b"\r\n") + (b"HEAD / HTTP/1.1\r\n" + H + b"\r\n")
        + (b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 3\r\n\r\nabc") + (b"GET /big.bin HTTP/1.1\r\n" + H + b"\r\n"),
        ["GET", "HEAD", "POST", "GET"], [200, 200, 405, 200], False),
    ("post chunked", b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", ["POST"], [405], False),
    # The body arrives with the head: no interim 100 (RFC 9110 §10.1.1); row S17 checks the 100
    # for a head sent alone.
    ("100-continue", b"PUT /x HTTP/1.1\r\n" + H + b"Content-Length: 2\r\nExpect: 100-continue\r\n\r\nhi", ["PUT"], [405], False),
    ("http/1.0", b"GET /a.txt HTTP/1.0\r\n\r\n", ["GET"], [200], True),
    ("connection close", b"GET /a.txt HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n", ["GET"], [200], True),
    ("400 CL+TE", b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", ["POST"], [400], True),
    ("400 garbage", b"GARBAGE\r\n\r\n", ["GET"], [400], True),
    ("400 no host", b"GET / HTTP/1.1\r\n\r\n", ["GET"], [400], True),
    ("413", b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 99999999\r\n\r\n", ["POST"], [413], True),
    ("414", b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n" + H + b"\r\n", ["GET"], [414], True),
    ("417", b"GET / HTTP/1.1\r\n" + H + b"Expect: foo\r\n\r\n", ["GET"], [417], True),
    ("431", b"GET / HTTP/1.1\r\n" + H + b"".join(b"X%d: 1\r\n" % i for i in range(101)) + b"\r\n", ["GET"], [431], True),
    ("501 TE", b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: gzip\r\n\r\n", ["POST"], [501], True),
    ("505", b"GET / HTTP/2.0\r\n" + H + b"\r\n", ["GET"], [505], True),
    ("206 range", b"GET /big.bin HTTP/1.1\r\n" + H + b"Range: bytes=10-99\r\n\r\n", ["GET"], [206], False),
    ("206 suffix", b"GET /a.txt HTTP/1.1\r\n" + H + b"Range: bytes=-3\r\n\r\n", ["GET"], [206], False),
    ("HEAD ignores Range", b"HEAD /big.bin HTTP/1.1\r\n" + H + b"Range: bytes=0-\r\n\r\n", ["HEAD"], [200], False),
    ("416", b"GET /a.txt HTTP/1.1\r\n" + H + b"Range: bytes=100-\r\n\r\n", ["GET"], [416], False),
    ("multi-range 200", b"GET /a.txt HTTP/1.1\r\n" + H + b"Range: bytes=0-1,3-4\r\n\r\n", ["GET"], [200], False),
    ("304 etag", b"GET /a.txt HTTP/1.1\r\n" + H + b"If-None-Match: *\r\n\r\n", ["GET"], [304], False),
    ("304 HEAD", b"HEAD /a.txt HTTP/1.1\r\n" + H + b"If-None-Match: *\r\n\r\n", ["HEAD"], [304], False),
    ("301 dir", b"GET /sub?x=1 HTTP/1.1\r\n" + H + b"\r\n", ["GET"], [301], False),
    ("301 HEAD", b"HEAD /sub HTTP/1.1\r\n" + H + b"\r\n", ["HEAD"], [301], False),
    ("403 no index", b"GET /noindex/ HTTP/1.1\r\n" + H + b"\r\n", ["GET"], [403], False),
    ("pipelined new statuses", (b"GET /big.bin HTTP/1.1\r\n" + H + b"Range: bytes=1000-1999999\r\n\r\n")
        + (b"GET /a.txt HTTP/1.1\r\n" + H + b"If-None-Match: *\r\n\r\n") + (b"GET /sub HTTP/1.1\r\n" + H + b"\r\n")
        + (b"GET /a.txt HTTP/1.1\r\n" + H + b"Range: bytes=9-\r\n\r\n") + (b"GET /a.txt HTTP/1.1\r\n" + H + b"\r\n"),
        ["GET", "GET", "GET", "GET", "GET"], [206, 304, 301, 416, 200], False),
    ("valid then invalid", (b"GET /a.txt HTTP/1.1\r\n" + H + b"\r\n") + b"GET / HTTP/1.1\r\nHost t\r\n\r\n",
        ["GET", "GET"], [200, 400], True),
]

for name, raw, methods, want, closed in CASES:
    got = responses(raw, methods, closed)
    if got != want:
        raise SystemExit(f"{name}: statuses {got}, expected {want}")
    print(f"ok {name}: {got}")
