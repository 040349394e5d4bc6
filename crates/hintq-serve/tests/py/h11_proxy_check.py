"""Checks every response `hintq proxy` gives to a set of requests with h11, an HTTP/1.1 parser
no one here wrote, in front of the fake upstream of tests/proxy_h11.rs (which answers by
target: see CASES). Usage: h11_proxy_check.py PORT DOWN_PORT, where PORT is a proxy in front
of that upstream and DOWN_PORT one whose upstream refuses connections. Prints one line per
case; exits non-zero on the first response h11 refuses, or whose status or body is not the
expected one, or on bytes after the last response. (tests/py/h11_check.py does the same for
`hintq serve`, whose files it names.)"""
import socket
import sys

import h11

PORT = int(sys.argv[1])
DOWN_PORT = int(sys.argv[2])


def request(c, method):
    # h11 frames a response by the request it answers: tell it the method (bytes on the wire
    # are ours, raw, so that 100-continue, HTTP/1.0 and invalid requests can be sent too).
    c.send(h11.Request(method=method, target="/", headers=[("Host", "t")]))
    c.send(h11.EndOfMessage())


def responses(port, raw, methods, close_expected):
    """Sends `raw` in one write; reads one final response per entry of `methods` with h11.
    Returns [(status, body)], interim responses included with an empty body."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(raw)
    out = []
    c = h11.Connection(our_role=h11.CLIENT)
    request(c, methods[0])
    i = 0
    body = b""
    while True:
        ev = c.next_event()
        if ev is h11.NEED_DATA:
            c.receive_data(s.recv(65536))
            continue
        if isinstance(ev, h11.InformationalResponse):
            out.append((ev.status_code, b""))
            continue
        if isinstance(ev, h11.Response):
            status = ev.status_code
            body = b""
            continue
        if isinstance(ev, h11.Data):
            body += ev.data
            continue
        if isinstance(ev, h11.EndOfMessage):
            out.append((status, body))
            i += 1
            if i == len(methods):
                break
            c.start_next_cycle()
            request(c, methods[i])
            continue
        if isinstance(ev, h11.ConnectionClosed):
            raise SystemExit(f"closed early after {out}")
    if close_expected:
        assert c.their_state is h11.MUST_CLOSE, c.their_state
        s.settimeout(5)
        rest = s.recv(1)
        assert rest == b"", f"proxy closes after Connection: close, sent {rest!r}"
    else:
        assert c.their_state is h11.DONE, c.their_state
        # Nothing after the last response (h11 keeps what it has not parsed).
        extra, _closed = c.trailing_data
        assert extra == b"", f"bytes after the last response: {extra!r}"
    s.close()
    return out


H = b"Host: t\r\n"
CASES = [
    # (name, port, raw bytes, methods, expected [(status, body or None)], connection closed)
    ("get", PORT, b"GET /ok HTTP/1.1\r\n" + H + b"\r\n", ["GET"], [(200, b"ok")], False),
    ("head", PORT, b"HEAD /head HTTP/1.1\r\n" + H + b"\r\n", ["HEAD"], [(200, b"")], False),
    ("chunked upstream body, trailer", PORT, b"GET /chunked HTTP/1.1\r\n" + H + b"\r\n", ["GET"],
        [(200, b"hello world")], False),
    ("close-delimited upstream body", PORT, b"GET /close HTTP/1.1\r\n" + H + b"\r\n", ["GET"],
        [(200, b"until close")], False),
    ("404 from upstream", PORT, b"GET /missing HTTP/1.1\r\n" + H + b"\r\n", ["GET"],
        [(404, b"not found")], False),
    ("204", PORT, b"GET /204 HTTP/1.1\r\n" + H + b"\r\n", ["GET"], [(204, b"")], False),
    ("304 with Content-Length", PORT, b"GET /304 HTTP/1.1\r\n" + H + b"\r\n", ["GET"], [(304, b"")], False),
    ("100-continue", PORT,
        b"PUT /upload HTTP/1.1\r\n" + H + b"Content-Length: 5\r\nExpect: 100-continue\r\n\r\nhello",
        ["PUT"], [(100, b""), (201, b"got 5")], False),
    ("chunked request body", PORT,
        b"POST /upload HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        ["POST"], [(201, b"got 3")], False),
    ("pipelined", PORT, (b"GET /ok HTTP/1.1\r\n" + H + b"\r\n") + (b"HEAD /head HTTP/1.1\r\n" + H + b"\r\n")
        + (b"GET /chunked HTTP/1.1\r\n" + H + b"\r\n") + (b"GET /missing HTTP/1.1\r\n" + H + b"\r\n"),
        ["GET", "HEAD", "GET", "GET"], [(200, b"ok"), (200, b""), (200, b"hello world"), (404, b"not found")],
        False),
    ("http/1.0, chunked upstream body de-chunked", PORT, b"GET /chunked HTTP/1.0\r\n\r\n", ["GET"],
        [(200, b"hello world")], True),
    ("connection close", PORT, b"GET /ok HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n", ["GET"],
        [(200, b"ok")], True),
    ("504 upstream silent", PORT, b"GET /silent HTTP/1.1\r\n" + H + b"\r\n", ["GET"], [(504, None)], True),
    ("400 CL+TE from the proxy", PORT,
        b"POST /upload HTTP/1.1\r\n" + H + b"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        ["POST"], [(400, None)], True),
    ("502 upstream down", DOWN_PORT, b"GET /ok HTTP/1.1\r\n" + H + b"\r\n", ["GET"], [(502, None)], True),
    ("502 upstream down, HEAD", DOWN_PORT, b"HEAD /ok HTTP/1.1\r\n" + H + b"\r\n", ["HEAD"], [(502, b"")], True),
]

for name, port, raw, methods, want, closed in CASES:
    got = responses(port, raw, methods, closed)
    ok = len(got) == len(want) and all(
        gs == ws and (wb is None or gb == wb) for (gs, gb), (ws, wb) in zip(got, want)
    )
    if not ok:
        raise SystemExit(f"{name}: got {got}, expected {want}")
    print(f"ok {name}: {[s for s, _ in got]}")
