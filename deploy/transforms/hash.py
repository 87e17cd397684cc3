#!/usr/bin/env python3
"""A Shoal transform: answers an object's digest instead of its bytes.

The contract (see the README's Transforms): listen on 127.0.0.1 at the
port in $PORT; each request is POST / with the object's bytes as the body
and X-Shoal-Bucket, X-Shoal-Name, X-Shoal-Size and X-Shoal-Args (the
caller's extra query arguments, URL-encoded) as headers; the answer's body
is the transformed object, a non-2xx status the transform's error.

Here the argument algo (sha256 by default, any of hashlib's) names the
digest; the answer is its hex form and a newline. Register it with

  PUT /v1/transforms/hash  {"command": ["/usr/bin/python3",
                            "/usr/local/share/shoal/transforms/hash.py"]}

(where make install put it)

and use it as GET /v1/objects/B/O?transform=hash&algo=md5.
"""
import hashlib
import http.server
import os
import urllib.parse


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        args = urllib.parse.parse_qs(self.headers.get("X-Shoal-Args", ""))
        algo = args.get("algo", ["sha256"])[0]
        if algo not in hashlib.algorithms_available:
            return self.answer(400, b"unknown algo %s\n" % algo.encode())
        h = hashlib.new(algo)
        left = int(self.headers.get("Content-Length", "0"))
        while left > 0:
            chunk = self.rfile.read(min(left, 1 << 20))
            if not chunk:
                return self.answer(400, b"body cut short\n")
            h.update(chunk)
            left -= len(chunk)
        self.answer(200, (h.hexdigest() + "\n").encode())

    def answer(self, status, body):
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *a):
        pass


if __name__ == "__main__":
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), Handler)
    print("hash transform on port %s" % os.environ["PORT"], flush=True)
    srv.serve_forever()
