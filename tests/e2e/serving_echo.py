"""A trivial inference server for the serving tests and bench: answers the
KServe v2 paths on $GANTRY_PORT_HTTP (or argv[1]) with who it is.

  GET  /v2/health/ready, /v2/health/live  200 (503 when NOT_READY=1)
  GET  /v2/models/NAME                    {"name", "version", "variant", "revision"}
  POST /v2/models/NAME/infer              the same, plus "path"; 500 when FAIL=1

Environment: VERSION (what it says it is), NOT_READY, FAIL, DELAY_MS.

HTTP/1.1 with keep-alive (HTTP/1.0 and `Connection: close` close after the
answer), request bodies by Content-Length only, one request at a time per
connection, on one asyncio loop: a request costs ~0.1 ms of CPU where
Python's http.server spends ~1 ms, so a replica under the tests' CPU limit
(100m: 10 ms in each 100 ms) is not throttled at the few hundred requests
per second the tests send. A request with DELAY_MS waits on a timer, not a
thread, so many can wait at once."""
import asyncio
import json
import os
import sys

VERSION = os.environ.get("VERSION", "1")
NOT_READY = os.environ.get("NOT_READY") == "1"
FAIL = os.environ.get("FAIL") == "1"
DELAY_S = int(os.environ.get("DELAY_MS", "0")) / 1000.0
WHO = {"version": VERSION, "variant": os.environ.get("GANTRY_ISVC_VARIANT", ""),
       "revision": os.environ.get("GANTRY_ISVC_REVISION", "")}
MAX_HEAD_BYTES = 64 << 10
REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 500: "Internal Server Error",
           503: "Service Unavailable"}


def answer(method, path):
    """(status, body) for one request."""
    if method == "GET" and path.startswith("/v2/health/"):
        return (503 if NOT_READY else 200), {"ready": not NOT_READY}
    if method == "GET" and path.startswith("/v2/models/"):
        return 200, dict(WHO, name=path.split("/")[3], path=path)
    if method == "POST":
        return (500, {"error": "failing on purpose"}) if FAIL else (200, dict(WHO, path=path))
    return 404, {"error": "not found: " + path}


class Conn(asyncio.Protocol):
    def connection_made(self, transport):
        self.t = transport
        self.buf = b""
        self.waiting = False  # a delayed answer is pending: read no further request

    def data_received(self, data):
        self.buf += data
        self.serve()

    def serve(self):
        while not self.waiting and not self.t.is_closing():
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buf) > MAX_HEAD_BYTES:
                    self.reply(400, {"error": "request head too long"}, close=True)
                return
            lines = self.buf[:end].decode("latin-1").split("\r\n")
            try:
                method, path, proto = lines[0].split(" ")
                hdrs = {}
                for line in lines[1:]:
                    k, _, v = line.partition(":")
                    hdrs[k.strip().lower()] = v.strip()
                length = int(hdrs.get("content-length", "0"))
            except ValueError:
                self.reply(400, {"error": "bad request line or header"}, close=True)
                return
            if len(self.buf) < end + 4 + length:
                return  # the body is still coming
            self.buf = self.buf[end + 4 + length:]
            conn = hdrs.get("connection", "").lower()
            close = conn == "close" or (proto == "HTTP/1.0" and conn != "keep-alive")
            status, body = answer(method, path)
            if DELAY_S and method == "POST":
                self.waiting = True
                asyncio.get_running_loop().call_later(DELAY_S, self.delayed, status, body, close)
                return
            self.reply(status, body, close)

    def delayed(self, status, body, close):
        self.waiting = False
        if self.t.is_closing():
            return
        self.reply(status, body, close)
        self.serve()

    def reply(self, status, body, close):
        data = json.dumps(body).encode()
        head = ("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                "%s\r\n" % (status, REASONS[status], len(data),
                              "Connection: close\r\n" if close else ""))
        self.t.write(head.encode() + data)
        if close:
            self.t.close()


async def serve(port):
    server = await asyncio.get_running_loop().create_server(Conn, "0.0.0.0", port, backlog=256)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else int(os.environ["GANTRY_PORT_HTTP"])
    asyncio.run(serve(port))
