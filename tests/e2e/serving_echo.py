"""A trivial inference server for the serving tests and bench: answers the
KServe v2 paths on $GANTRY_PORT_HTTP (or argv[1]) with who it is.

  GET  /v2/health/ready, /v2/health/live  200 (503 when NOT_READY=1)
  GET  /v2/models/NAME                    {"name", "version", "variant", "revision"}
  POST /v2/models/NAME/infer              the same, plus "path"; 500 when FAIL=1

Environment: VERSION (what it says it is), NOT_READY, FAIL, DELAY_MS."""
import http.server
import json
import os
import socket
import sys
import time

VERSION = os.environ.get("VERSION", "1")
NOT_READY = os.environ.get("NOT_READY") == "1"
FAIL = os.environ.get("FAIL") == "1"
DELAY_S = int(os.environ.get("DELAY_MS", "0")) / 1000.0
WHO = {"version": VERSION, "variant": os.environ.get("GANTRY_ISVC_VARIANT", ""),
       "revision": os.environ.get("GANTRY_ISVC_REVISION", "")}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        # head and body are two writes: without this the body waits for the
        # client's delayed ACK of the head (40 ms)
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.startswith("/v2/health/"):
            self.answer(503 if NOT_READY else 200, {"ready": not NOT_READY})
        elif self.path.startswith("/v2/models/"):
            self.answer(200, dict(WHO, name=self.path.split("/")[3], path=self.path))
        else:
            self.answer(404, {"error": "not found: " + self.path})

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(n)
        if DELAY_S:
            time.sleep(DELAY_S)
        if FAIL:
            self.answer(500, {"error": "failing on purpose"})
        else:
            self.answer(200, dict(WHO, path=self.path))

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else int(os.environ["GANTRY_PORT_HTTP"])
    Server(("0.0.0.0", port), Handler).serve_forever()
