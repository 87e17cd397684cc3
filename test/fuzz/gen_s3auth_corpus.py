#!/usr/bin/env python3
"""Writes corpus/s3auth/: requests signed for fuzz_s3auth.c's key and fixed
time, in its input format (a flags byte, "METHOD TARGET", then headers), so
the fuzzer starts from inputs that verify: SigV4 header and presigned,
SigV2 header and query, and plain requests for the harness to sign."""
import base64
import hashlib
import hmac
import os
from urllib.parse import quote, unquote

ACCESS, SECRET = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
AMZDATE, DATE, NOW = "20150830T123600Z", "20150830", 1440938160
HTTPDATE = "Sun, 30 Aug 2015 12:36:00 GMT"
SCOPE = DATE + "/us-east-1/s3/aws4_request"
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "s3auth")


def enc(s):
    return quote(s, safe="-_.~")


def canon_query(q):
    pairs = sorted((enc(unquote(k)), enc(unquote(v))) for k, _, v in (p.partition("=") for p in q.split("&") if p))
    return "&".join("%s=%s" % kv for kv in pairs)


def v4_sig(method, path, query, headers, payload):
    hs = sorted((k.lower(), " ".join(v.split())) for k, v in headers)
    signed = ";".join(k for k, _ in hs)
    canon = "\n".join([method, quote(path, safe="/-_.~"), canon_query(query),
                       "".join("%s:%s\n" % kv for kv in hs), signed, payload])
    sts = "\n".join(["AWS4-HMAC-SHA256", AMZDATE, SCOPE, hashlib.sha256(canon.encode()).hexdigest()])
    k = ("AWS4" + SECRET).encode()
    for part in (DATE, "us-east-1", "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    return signed, hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()


def v2_sig(method, resource, date, headers=()):
    amz = "".join("%s:%s\n" % (k.lower(), v) for k, v in sorted(headers) if k.lower().startswith("x-amz-"))
    sts = "%s\n\n\n%s\n%s%s" % (method, date, amz, resource)
    return base64.b64encode(hmac.new(SECRET.encode(), sts.encode(), hashlib.sha1).digest()).decode()


def write(name, flags, method, target, headers):
    body = "%s %s\n" % (method, target) + "".join("%s: %s\n" % h for h in headers)
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(bytes([flags]) + body.encode())


def main():
    os.makedirs(OUT, exist_ok=True)
    for flags, name in ((0, "v4-header-native"), (1, "v4-header-s3")):
        path, query = "/bucket/key.txt", "list-type=2&prefix=a%20b"
        hdrs = [("Host", "127.0.0.1:9000"), ("x-amz-date", AMZDATE),
                ("x-amz-content-sha256", "UNSIGNED-PAYLOAD")]
        signed, sig = v4_sig("GET", path, query, hdrs, "UNSIGNED-PAYLOAD")
        auth = "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s" % (
            ACCESS, SCOPE, signed, sig)
        write(name, flags, "GET", path + "?" + query, hdrs + [("Authorization", auth)])

    streaming = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
    hdrs = [("Host", "h"), ("x-amz-date", AMZDATE), ("x-amz-content-sha256", streaming),
            ("x-amz-decoded-content-length", "66560")]
    signed, sig = v4_sig("PUT", "/bucket/big", "", hdrs, streaming)
    write("v4-streaming", 1, "PUT", "/bucket/big",
          hdrs + [("Authorization", "AWS4-HMAC-SHA256 Credential=%s/%s,SignedHeaders=%s,Signature=%s"
                   % (ACCESS, SCOPE, signed, sig))])

    q = ("X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=%s&X-Amz-Date=%s&X-Amz-Expires=3600"
         "&X-Amz-SignedHeaders=host" % (enc(ACCESS + "/" + SCOPE), AMZDATE))
    _, sig = v4_sig("GET", "/bucket/key.txt", q, [("Host", "h")], "UNSIGNED-PAYLOAD")
    write("v4-presigned", 1, "GET", "/bucket/key.txt?" + q + "&X-Amz-Signature=" + sig, [("Host", "h")])

    sig = v2_sig("GET", "/bucket/key.txt", HTTPDATE)
    write("v2-header", 1, "GET", "/bucket/key.txt", [("Date", HTTPDATE),
                                                      ("Authorization", "AWS %s:%s" % (ACCESS, sig))])
    exp = str(NOW + 600)
    sig = v2_sig("GET", "/bucket/key.txt?versionId=3", exp)
    write("v2-query", 1, "GET", "/bucket/key.txt?versionId=3&AWSAccessKeyId=%s&Expires=%s&Signature=%s"
          % (ACCESS, exp, enc(sig)), [])

    write("to-sign", 3, "PUT", "/s3/bucket/a%2Fb?uploads", [("Host", "h"), ("Content-Type", "text/plain"),
                                                          ("X-Amz-Meta-A", "  x   y ")])


if __name__ == "__main__":
    main()
