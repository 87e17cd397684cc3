#!/usr/bin/env python3
"""A Shoal transform that re-encodes images with Pillow (Debian's
python3-pil): each object is decoded, shrunk to fit size=WxH (its aspect
kept; never enlarged) when asked, and encoded as format= (png, jpeg or
webp; the image's own format by default) at quality= (1..95, for jpeg and
webp). Not an image: 415 with a line that says why.

The contract (see the README's Transforms): listen on 127.0.0.1 at the
port in $PORT; each request is POST / with the object's bytes as the body
and X-Shoal-Bucket, X-Shoal-Name, X-Shoal-Size and X-Shoal-Args (the
caller's extra query arguments, URL-encoded) as headers; the answer's body
is the transformed object, a non-2xx status the transform's error.
Register it with

  PUT /v1/transforms/resize  {"command": ["/usr/bin/python3",
                              "/usr/local/share/shoal/transforms/resize.py"]}

and use it as GET /v1/objects/B/cat.jpg?transform=resize&size=224x224, or
in a transform job with "args": "size=224x224&format=webp".
"""
import http.server
import io
import os
import urllib.parse

from PIL import Image, UnidentifiedImageError

FORMATS = {"png": "PNG", "jpeg": "JPEG", "jpg": "JPEG", "webp": "WEBP"}


def parse_size(v):
    w, _, h = v.partition("x")
    w, h = int(w), int(h)
    if not (0 < w <= 16384 and 0 < h <= 16384):
        raise ValueError(v)
    return w, h


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        args = urllib.parse.parse_qs(self.headers.get("X-Shoal-Args", ""))
        try:
            size = parse_size(args["size"][0]) if "size" in args else None
            fmt = args.get("format", [""])[0].lower()
            if fmt and fmt not in FORMATS:
                raise ValueError("format")
            quality = int(args.get("quality", ["85"])[0])
            if not 1 <= quality <= 95:
                raise ValueError("quality")
        except (ValueError, KeyError) as e:
            return self.answer(400, "bad argument: %s (size=WxH, format=png|jpeg|webp, "
                                    "quality=1..95)\n" % e, "text/plain")
        try:
            img = Image.open(io.BytesIO(body))
            img.load()
        except (UnidentifiedImageError, OSError) as e:
            return self.answer(415, "not an image: %s\n" % e, "text/plain")
        out_fmt = FORMATS.get(fmt, img.format or "PNG")
        if size:
            img.thumbnail(size)
        if out_fmt == "JPEG" and img.mode not in ("RGB", "L"):
            img = img.convert("RGB")
        buf = io.BytesIO()
        img.save(buf, out_fmt, **({"quality": quality} if out_fmt in ("JPEG", "WEBP") else {}))
        self.answer(200, buf.getvalue(), "image/" + out_fmt.lower())

    def answer(self, status, body, ctype):
        if isinstance(body, str):
            body = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *a):
        pass


if __name__ == "__main__":
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), Handler)
    print("resize transform on port %s" % os.environ["PORT"], flush=True)
    srv.serve_forever()
