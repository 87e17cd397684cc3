"""Objects through the proxy: PUT/GET/HEAD/DELETE/list, ranges, placement, bad input."""
import hashlib
import os
import re
import socket
import subprocess
import tempfile
import urllib.parse

import pytest
import requests

SIZES = [0, 1, 4095, 4096, 1 << 20 | 7, 64 << 20]


def obj_url(c, bucket, name):
    return "%s/v1/objects/%s/%s" % (c.url, bucket, urllib.parse.quote(name))


@pytest.mark.parametrize("size", SIZES)
def test_put_get_head_delete(cluster, bucket, size):
    data = os.urandom(size)
    u = obj_url(cluster, bucket, "dir/obj-%d.bin" % size)
    r = cluster.http.put(u, data)
    assert r.status_code == 201, r.text
    info = r.json()
    assert info["size"] == size and info["version"] > 0
    r = cluster.http.get(u)
    assert r.status_code == 200
    assert hashlib.sha256(r.content).digest() == hashlib.sha256(data).digest()
    assert r.headers["X-Shoal-Checksum"] == "xxh3-64:" + info["checksum"]
    h = cluster.http.head(u, allow_redirects=True)
    assert h.status_code == 200 and int(h.headers["Content-Length"]) == size
    # overwrite moves the version on
    r = cluster.http.put(u, b"x")
    assert r.status_code == 201 and r.json()["version"] > info["version"]
    assert cluster.http.get(u).content == b"x"
    assert cluster.http.delete(u).status_code == 204
    assert cluster.http.get(u).status_code == 404
    assert cluster.http.delete(u).status_code == 404


def test_curl_roundtrip(cluster, bucket):
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "src"), os.path.join(d, "dst")
        with open(src, "wb") as f:
            f.write(os.urandom(3 << 20))
        u = obj_url(cluster, bucket, "curl/file")
        subprocess.run(["curl", "-sfL", "-T", src, u], check=True, capture_output=True)
        subprocess.run(["curl", "-sfL", "-o", dst, u], check=True)
        assert open(src, "rb").read() == open(dst, "rb").read()


def test_redirect_is_signed_and_checked(cluster, bucket):
    u = obj_url(cluster, bucket, "sig")
    assert cluster.http.put(u, b"abc").status_code == 201
    r = cluster.http.get(u, allow_redirects=False)
    assert r.status_code == 307
    loc = r.headers["Location"]
    assert "shoal_sig=" in loc
    assert requests.get(loc).content == b"abc"
    forged = re.sub(r"shoal_sig=[0-9a-f]+", "shoal_sig=" + "0" * 64, loc)
    assert requests.get(forged).status_code == 403
    # a GET signature does not authorise a DELETE
    assert requests.delete(loc).status_code == 403
    assert cluster.http.get(u).content == b"abc"


def test_redirect_signature_is_hmac_sha256(cluster, bucket):
    # recomputed here with Python's hmac: the daemons' signer is not only
    # consistent with itself
    import hmac, time
    u = obj_url(cluster, bucket, "hm ac")
    assert cluster.http.put(u, b"h").status_code == 201
    r = cluster.http.get(u, allow_redirects=False)
    q = urllib.parse.urlsplit(r.headers["Location"])
    args = dict(urllib.parse.parse_qsl(q.query))
    secret = open(os.path.join(cluster.data, "cluster.secret")).read().strip().encode()
    # the signature covers the target up to it: path, query and expiry
    loc = r.headers["Location"]
    signed = loc[loc.index(q.path):loc.rindex("&shoal_sig=")]
    assert signed.endswith("?shoal_bmd=%s&shoal_exp=%s" % (args["shoal_bmd"], args["shoal_exp"]))
    msg = "GET\n%s" % signed
    assert args["shoal_sig"] == hmac.new(secret, msg.encode(), "sha256").hexdigest()
    assert r.json()["location"] == r.headers["Location"]

    # a join signed the same way is accepted up to its validation
    exp = str(int(time.time()) + 60)
    sig = hmac.new(secret, ("POST\n/v1/cluster/join?shoal_exp=" + exp).encode(),
                   "sha256").hexdigest()
    join = "%s/v1/cluster/join?shoal_exp=%s&shoal_sig=%s" % (cluster.url, exp, sig)
    bad = {"id": 't"x', "role": "target", "url": "http://127.0.0.1:1"}
    r = requests.post(join, json=bad)
    assert r.status_code == 400 and "quotes" in r.json()["error"]
    r = requests.post(cluster.url + "/v1/cluster/join", json=bad)
    assert r.status_code == 403


def test_routed_read_ahead_of_the_targets_buckets_is_503(cluster, bucket):
    # a redirect names the bucket metadata it was routed by: a target
    # without that bucket whose metadata is older (one that joined a moment
    # ago) answers 503 with Retry-After, not "no such bucket"
    import hmac, time
    u = obj_url(cluster, bucket, "bmdv")
    assert cluster.http.put(u, b"v").status_code == 201
    loc = cluster.http.get(u, allow_redirects=False).headers["Location"]
    args = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(loc).query))
    v = int(args["shoal_bmd"])
    assert v > 0 and requests.get(loc).content == b"v"
    base = loc.split("/v1/")[0]
    secret = open(os.path.join(cluster.data, "cluster.secret")).read().strip().encode()

    def routed(bucket_name, version, extra=""):
        target = "/v1/objects/%s/x?%sshoal_bmd=%d&shoal_exp=%d" % (bucket_name, extra, version,
                                                             int(time.time()) + 60)
        sig = hmac.new(secret, ("GET\n" + target).encode(), "sha256").hexdigest()
        return requests.get("%s%s&shoal_sig=%s" % (base, target, sig))

    r = routed("no-such-bucket-yet", v + 1000)
    assert r.status_code == 503 and r.headers.get("Retry-After") == "1", r.text
    assert "not here yet" in r.json()["error"]
    r = routed("no-such-bucket-yet", v + 1000, "shoal_s3=1&")
    assert r.status_code == 503 and b"<Code>ServiceUnavailable</Code>" in r.content
    # as new as what the target holds: the bucket is not there
    r = routed("no-such-bucket-yet", v)
    assert r.status_code == 404
    r = routed("no-such-bucket-yet", v, "shoal_s3=1&")
    assert r.status_code == 404 and b"<Code>NoSuchBucket</Code>" in r.content
    # unsigned, the version counts for nothing
    r = requests.get("%s/v1/objects/no-such-bucket-yet/x?shoal_bmd=%d" % (base, v + 1000))
    assert r.status_code in (404, 403)


def test_unsigned_request_to_wrong_target_is_redirected(cluster, bucket):
    u = obj_url(cluster, bucket, "direct")
    assert cluster.http.put(u, b"direct-bytes").status_code == 201
    owner = cluster.http.get(u, allow_redirects=False).headers["Location"].split("/v1/")[0]
    for t in cluster.target_names():
        tu = cluster.node_url(t) + "/v1/objects/%s/direct" % bucket
        r = requests.get(tu, allow_redirects=False)
        if cluster.node_url(t) == owner:
            assert r.status_code == 200 and r.content == b"direct-bytes"
        else:
            assert r.status_code == 307 and r.headers["Location"].startswith(owner)
            assert requests.get(tu).content == b"direct-bytes"


def test_ranges(cluster, bucket):
    data = os.urandom(100000)
    u = obj_url(cluster, bucket, "ranged")
    assert cluster.http.put(u, data).status_code == 201
    cases = {"bytes=0-0": data[0:1], "bytes=10-19": data[10:20], "bytes=99990-": data[99990:],
             "bytes=-5": data[-5:], "bytes=99999-200000": data[99999:]}
    for rng, want in cases.items():
        r = cluster.http.get(u, headers={"Range": rng})
        assert r.status_code == 206, rng
        assert r.content == want, rng
        assert r.headers["Content-Range"].endswith("/100000")
    r = cluster.http.get(u, headers={"Range": "bytes=100000-"})
    assert r.status_code == 416 and r.headers["Content-Range"] == "bytes */100000"
    # syntax we do not serve as a range gives the whole object
    r = cluster.http.get(u, headers={"Range": "bytes=5-1"})
    assert r.status_code == 200 and r.content == data


def test_objects_spread_over_targets(cluster, bucket):
    counts = {}
    for i in range(1000):
        name = "spread/%04d" % i
        r = cluster.http.put(obj_url(cluster, bucket, name), b"%d" % i, allow_redirects=False)
        assert r.status_code == 307
        loc = r.headers["Location"].split("/v1/")[0]
        counts[loc] = counts.get(loc, 0) + 1
        assert cluster.http.put(r.headers["Location"], b"%d" % i).status_code == 201
    assert len(counts) == 3
    assert all(n > 250 for n in counts.values()), counts
    # and they list back complete and in order, page by page
    names, token = [], ""
    while True:
        r = cluster.http.get(cluster.url + "/v1/buckets/%s/objects" % bucket,
                             params={"prefix": "spread/", "limit": 128, "token": token})
        assert r.status_code == 200
        page = r.json()
        assert len(page["objects"]) <= 128
        names += [o["name"] for o in page["objects"]]
        token = page["next"]
        if not token:
            break
    assert names == ["spread/%04d" % i for i in range(1000)]


def test_list_prefix_and_props(cluster, bucket):
    for n in ["a/1", "a/2", "b/1", "a0"]:
        assert cluster.http.put(obj_url(cluster, bucket, n), n.encode()).status_code == 201
    r = cluster.http.get(cluster.url + "/v1/buckets/%s/objects?prefix=a/" % bucket).json()
    assert [o["name"] for o in r["objects"]] == ["a/1", "a/2"] and r["next"] == ""
    o = r["objects"][0]
    assert o["size"] == 3 and o["cached"] is True and len(o["checksum"]) == 16
    assert cluster.http.get(cluster.url + "/v1/buckets/%s/objects?limit=0" % bucket).status_code == 400


def test_bucket_api(cluster):
    u = cluster.url + "/v1/buckets/api-bucket"
    assert cluster.http.put(u, json={"labels": {"team": "nlp"}}).status_code == 201
    assert cluster.http.put(u).status_code == 409
    assert cluster.http.head(u).status_code == 200
    props = cluster.http.get(u + "?props").json()
    assert props["props"]["labels"] == {"team": "nlp"}
    r = cluster.http.patch(u, json={"labels": {"team": "vision"}})
    assert r.status_code == 200 and r.json()["props"]["labels"]["team"] == "vision"
    assert cluster.http.patch(u, json={"colour": 1}).status_code == 400
    assert cluster.http.patch(u, data=b"{not json").status_code == 400
    names = [b["name"] for b in cluster.http.get(cluster.url + "/v1/buckets").json()["buckets"]]
    assert "api-bucket" in names
    # every node got the BMD: a target accepts a PUT to the new bucket at once
    assert cluster.http.put(u.replace("buckets", "objects") + "/x", b"1").status_code == 201
    assert cluster.http.delete(u).status_code == 204
    assert cluster.http.head(u).status_code == 404
    assert cluster.http.delete(u).status_code == 404
    assert cluster.http.get(u.replace("buckets", "objects") + "/x").status_code == 404
    # recreated, it is empty: the destroyed bucket's objects are gone
    assert cluster.http.put(u).status_code == 201
    import time
    for _ in range(50):
        if cluster.http.get(u + "/objects").json()["objects"] == []:
            break
        time.sleep(0.1)
    assert cluster.http.get(u + "/objects").json()["objects"] == []
    cluster.http.delete(u)


def raw(cluster, data, port=None):
    s = socket.create_connection(("127.0.0.1", port or cluster.port), timeout=5)
    s.sendall(data)
    out = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    except socket.timeout:
        pass
    s.close()
    return out


def test_bad_input(cluster, bucket):
    base = cluster.url + "/v1/objects/"
    cases = [
        (base + "bad%20bucket/x", 400),
        (base + "-x/obj", 400),
        (base + bucket + "/", 400),
        (base + bucket + "/" + "n" * 1025, 400),
        (base + bucket + "/a%00b", 400),
        (base + bucket + "/a/%2e%2e/b", 400),
        (base + "nosuchbucket/x", 404),
        (base + bucket + "/no-such-object", 404),
        (cluster.url + "/v1/nothing", 404),
        (cluster.url + "/v1/buckets/nosuchbucket/objects", 404),
    ]
    for url, want in cases:
        r = cluster.http.get(url)
        assert r.status_code == want, (url, r.status_code, r.text)
        assert "error" in r.json()
    # dot segments as sent on the wire (clients would normalise them away)
    for path in [b"/..", b"/a/../../etc/passwd", b"/./x"]:
        r = raw(cluster, b"GET /v1/objects/" + bucket.encode() + path +
                b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert r.startswith(b"HTTP/1.1 400"), r[:200]
    # a 1024-byte name is fine
    assert cluster.http.put(base + bucket + "/" + "n" * 1024, b"ok").status_code == 201
    # unknown provider
    assert cluster.http.get(base + bucket + "/x?provider=gcp").status_code == 400
    # header block over the limit: 431
    r = raw(cluster, b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n")
    assert r.startswith(b"HTTP/1.1 431")
    # malformed HTTP: 400 and the connection is closed (raw() returns at EOF)
    r = raw(cluster, b"NOT HTTP AT ALL\r\n\r\n")
    assert r.startswith(b"HTTP/1.1 400") and b"Connection: close" in r
    # nothing of this reached any file outside the mountpaths
    assert not os.path.exists("/etc/passwd.shoal")
    assert cluster.http.get(cluster.url + "/v1/health").status_code == 200


def test_metrics_and_health(cluster):
    r = cluster.http.get(cluster.url + "/metrics")
    assert r.status_code == 200 and "shoal_requests_total" in r.text
    for t in cluster.target_names():
        assert requests.get(cluster.node_url(t) + "/v1/health").json()["status"] == "ok"


def test_names_that_are_not_utf8_are_refused_before_anything_is_stored(cluster, bucket):
    bad = "/v1/objects/%s/x%%FFy" % bucket
    r = cluster.http.put(cluster.url + bad, data=b"never stored")
    assert r.status_code == 400 and "UTF-8" in r.json()["error"], r.text
    for t in cluster.target_names():
        r = requests.put(cluster.node_url(t) + bad, data=b"never stored")
        assert r.status_code == 400 and "UTF-8" in r.json()["error"], r.text
    # overlong and surrogate forms too, and through the S3 API
    for name in ("%C0%AF", "a%ED%A0%80b", "%F4%90%80%80"):
        r = cluster.http.put(cluster.url + "/v1/objects/%s/%s" % (bucket, name), data=b"x")
        assert r.status_code == 400, name
    r = requests.put(cluster.url + "/s3/%s/x%%FFy" % bucket, data=b"never stored")
    assert r.status_code == 400 and "<Code>InvalidObjectName</Code>" in r.text, r.text
    listed = cluster.http.get(cluster.url + "/v1/buckets/%s/objects" % bucket).json()
    assert listed["objects"] == []
    # an error about a bad bucket name can still show it
    r = cluster.http.get(cluster.url + "/v1/objects/b%FFad/k")
    assert r.status_code == 400 and "\\xFF" in r.json()["error"], r.text
    # valid UTF-8 names are stored and listed as they are
    r = cluster.http.put(cluster.url + "/v1/objects/%s/caf%%C3%%A9" % bucket, data=b"ok")
    assert r.status_code == 201, r.text
    listed = cluster.http.get(cluster.url + "/v1/buckets/%s/objects" % bucket).json()
    assert [o["name"] for o in listed["objects"]] == ["caf\u00e9"]


def test_list_names_that_need_escaping(cluster, bucket):
    """Names with JSON's special bytes, control bytes and multi-byte UTF-8,
    spread over the targets, come back exactly, in byte order, page by page
    at every page size."""
    names = ['q"uote', "back\\slash", "tab\there", "nl\nname", "ctl\x02\x1fx", "\u00fc-\u00f1/\u65e5\u672c",
             "sp ace", "pct%41", "z" * 1000, "a/\x7f"]
    for n in names:
        r = cluster.http.put(obj_url(cluster, bucket, n), n.encode())
        assert r.status_code == 201, (n, r.text)
    want = sorted(names, key=lambda s: s.encode())
    for limit in (1, 3, 10000):
        got, token = [], ""
        for _ in range(len(names) + 2):
            r = cluster.http.get(cluster.url + "/v1/buckets/%s/objects" % bucket,
                                 params={"limit": limit, "token": token})
            assert r.status_code == 200, r.text
            page = r.json()
            assert len(page["objects"]) <= limit
            got += page["objects"]
            token = page["next"]
            if not token:
                break
        assert [o["name"] for o in got] == want
        for o in got:
            assert o["size"] == len(o["name"].encode()) and o["cached"] is True
            assert re.fullmatch("[0-9a-f]{16}", o["checksum"]) and o["version"] > 0
            assert o["mtime"] > 0 and o["etag"].startswith('"')
