#!/usr/bin/env python3
"""A transform for the tests, speaking the contract (README: Transforms),
whose argument mode picks how it answers:

  (none)   the bytes reversed, Content-Type text/x-reversed
  echo     its request's X-Shoal-* headers and body size, as JSON
  big      the bytes 50 times over, chunked (no Content-Length)
  error    422 with a line that says why
  cut      half of what its Content-Length promises, then the connection closed
  exit     the process exits at once (the supervisor restarts it)
  slow     answers after 5 s
  picky    error for a name with "bad" in it, cut for one with "cut", else reversed
"""
import http.server
import json
import os
import sys
import time
import urllib.parse


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        args = urllib.parse.parse_qs(self.headers.get("X-Shoal-Args", ""))
        mode = args.get("mode", [""])[0]
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        name = self.headers.get("X-Shoal-Name", "")
        if mode == "picky":
            mode = "error" if "bad" in name else "cut" if "cut" in name else ""
        if mode == "exit":
            os._exit(7)
        if mode == "slow":
            time.sleep(5)
        if mode == "error":
            return self.answer(422, b"cannot transform this: mode error\n", "text/plain")
        if mode == "echo":
            got = {k: v for k, v in self.headers.items() if k.lower().startswith("x-shoal-")}
            got["body"] = len(body)
            return self.answer(200, json.dumps(got).encode(), "application/json")
        if mode == "cut":
            self.send_response(200)
            self.send_header("Content-Length", str(2 * len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            self.close_connection = True
            return
        if mode == "big":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for _ in range(50):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(body), body))
            self.wfile.write(b"0\r\n\r\n")
            return
        self.answer(200, body[::-1], "text/x-reversed")

    def answer(self, status, body, ctype):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *a):
        pass


if __name__ == "__main__":
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), Handler)
    print("modes transform on port %s" % os.environ["PORT"], flush=True)
    sys.stdout.flush()
    srv.serve_forever()
