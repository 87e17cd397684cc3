"""Batch jobs beyond prefetch: copy (Shoal -> Shoal, backed -> Shoal,
Shoal -> backed), download from an HTTP origin, prefetch with latest,
the per-target cap on running jobs, and how long ended jobs are kept."""
import hashlib
import http.server
import os
import threading
import time
import urllib.parse

import pytest
import requests

from conftest import Cluster, running_cluster, running_s3rver


def body_for(path):
    """The origin's bytes for a path: sized and filled by the path."""
    h = hashlib.sha256(path.encode()).digest()
    return h * (1 + h[0] * 40)


class Origin(http.server.BaseHTTPRequestHandler):
    delay = 0.0
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        path = urllib.parse.unquote(self.path.split("?")[0])
        if "missing" in path:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        time.sleep(self.delay)
        b = body_for(path)
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.send_header("ETag", '"%s"' % hashlib.md5(b).hexdigest())
        self.end_headers()
        self.wfile.write(b)


@pytest.fixture(scope="module")
def origin():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Origin)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield "http://127.0.0.1:%d" % srv.server_address[1]
    srv.shutdown()


@pytest.fixture(scope="module")
def s3():
    yield from running_s3rver("jsrc", "jdst", "jlat")


@pytest.fixture(scope="module")
def cl(s3):
    yield from running_cluster(env=s3.env())


def start_job(c, spec, want=201):
    r = requests.post(c.url + "/v1/jobs", json=spec, timeout=30)
    assert r.status_code == want, r.text
    return r.json().get("id")


def wait_job(c, jid, secs=120):
    r = requests.get("%s/v1/jobs/%s?wait=%d" % (c.url, jid, secs), timeout=secs + 30)
    assert r.status_code == 200, r.text
    # shown only when the test fails: every target's share and the map
    print("job %s: %s\nmap: %s" % (jid, r.text, requests.get(c.url + "/v1/cluster",
                                                              timeout=30).text))
    return r.json()


def obj(c, bucket, name, provider=None):
    u = "%s/v1/objects/%s/%s" % (c.url, bucket, urllib.parse.quote(name))
    return u + ("?provider=" + provider if provider else "")


def mkbucket(c, name, props=None):
    r = requests.put("%s/v1/buckets/%s" % (c.url, name), json=props or {}, timeout=30)
    assert r.status_code == 201, r.text


def gets_of(s3, bucket, key):
    path = "/%s/%s" % (bucket, urllib.parse.quote(key))
    return sum(1 for line in s3.requests() if line.split("?")[0] == "GET " + path)


def test_copy_shoal_to_shoal(cl):
    """A prefix of a Shoal bucket (each target lists its own drives) copied
    into another under a prepended name: every byte the same; dry_run
    counts without copying; bad destinations are refused."""
    mkbucket(cl, "csrc")
    mkbucket(cl, "cdst")
    data = {"d/%03d" % i: os.urandom(i * 997) for i in range(40)}
    data["d/big"] = os.urandom((16 << 20) + 3)   # more than a pipe's worth: the splice waits
    for k, v in data.items():
        assert requests.put(obj(cl, "csrc", k), data=v, timeout=30).status_code == 201
    assert requests.put(obj(cl, "csrc", "other/x"), data=b"x", timeout=30).status_code == 201
    dry = wait_job(cl, start_job(cl, {"kind": "copy", "bucket": "csrc", "to": "cdst",
                                      "prefix": "d/", "dry_run": True}))
    assert dry["state"] == "finished" and dry["copied"] == 41, dry
    assert dry["bytes"] == sum(len(v) for v in data.values())
    assert requests.get(obj(cl, "cdst", "d/big"), timeout=30).status_code == 404
    j = wait_job(cl, start_job(cl, {"kind": "copy", "bucket": "csrc", "to": "cdst",
                                    "prefix": "d/", "prepend": "v2/"}))
    assert j["state"] == "finished" and j["copied"] == 41 and j["errors"] == 0, j
    assert j["done"] == j["owned"] == 41
    assert j["bytes"] == sum(len(v) for v in data.values())
    for k, v in data.items():
        g = requests.get(obj(cl, "cdst", "v2/" + k), timeout=30)
        assert g.status_code == 200 and g.content == v, k
    assert requests.get(obj(cl, "cdst", "v2/other/x"), timeout=30).status_code == 404
    lst = requests.get("%s/v1/buckets/cdst/objects" % cl.url, timeout=30).json()
    assert len(lst["objects"]) == 41
    # the whole bucket by names, into the same bucket under another prefix
    j = wait_job(cl, start_job(cl, {"kind": "copy", "bucket": "csrc", "to": "csrc",
                                    "names": ["other/x", "nope"], "prepend": "cp-"}))
    assert j["state"] == "failed" and j["copied"] == 1 and j["errors"] == 1, j
    assert j["error_names"][0]["name"] == "nope"
    assert requests.get(obj(cl, "csrc", "cp-other/x"), timeout=30).content == b"x"
    start_job(cl, {"kind": "copy", "bucket": "csrc", "to": "csrc", "prefix": "d/"}, 400)
    start_job(cl, {"kind": "copy", "bucket": "csrc", "to": "no-such", "prefix": "d/"}, 404)
    start_job(cl, {"kind": "copy", "bucket": "csrc"}, 400)
    start_job(cl, {"kind": "copy", "bucket": "csrc", "to": "cdst", "dry_run": "yes"}, 400)


def test_copy_backed_to_shoal_and_back(s3, cl):
    """From an s3rver-backed bucket (objects not cached: each fetched once,
    then sent) into a Shoal bucket; and from Shoal into a backed bucket,
    which writes through to the backend."""
    data = {"s/%02d" % i: os.urandom(5000 + i) for i in range(20)}
    for k, v in data.items():
        s3.client().put_object(Bucket="jsrc", Key=k, Body=v)
    mkbucket(cl, "cfroms3")
    j = wait_job(cl, start_job(cl, {"kind": "copy", "bucket": "jsrc", "provider": "s3",
                                    "to": "cfroms3", "prefix": "s/"}))
    assert j["state"] == "finished" and j["copied"] == 20 and j["errors"] == 0, j
    for k, v in data.items():
        assert requests.get(obj(cl, "cfroms3", k), timeout=30).content == v
        g = requests.get(obj(cl, "jsrc", k, "s3"), timeout=30)
        assert g.headers["X-Shoal-Cache"] == "hit" and g.content == v
        assert gets_of(s3, "jsrc", k) == 1
    j = wait_job(cl, start_job(cl, {"kind": "copy", "bucket": "cfroms3", "to": "jdst",
                                    "to_provider": "s3", "template": "s/{00..19}"}))
    assert j["state"] == "finished" and j["copied"] == 20, j
    for k, v in data.items():
        assert s3.client().get_object(Bucket="jdst", Key=k)["Body"].read() == v


def test_download_from_an_http_origin(cl, origin):
    """URLs (names from their paths, or given) and a URL template, into a
    Shoal bucket: every byte as the origin serves it; a missing URL fails
    the job naming it; the summary goes from 0% to 100%."""
    mkbucket(cl, "dl")
    urls = ["%s/set/a/%d.bin" % (origin, i) for i in range(12)]
    j = wait_job(cl, start_job(cl, {"kind": "download", "bucket": "dl", "urls": urls}))
    assert j["state"] == "finished" and j["downloaded"] == 12 and j["errors"] == 0, j
    for i in range(12):
        g = requests.get(obj(cl, "dl", "set/a/%d.bin" % i), timeout=30)
        assert g.status_code == 200 and g.content == body_for("/set/a/%d.bin" % i)
    j = wait_job(cl, start_job(cl, {"kind": "download", "bucket": "dl",
                                    "template": origin + "/shards/s-{00..29}.tar"}))
    assert j["state"] == "finished" and j["downloaded"] == 30, j
    assert j["bytes"] == sum(len(body_for("/shards/s-%02d.tar" % i)) for i in range(30))
    s = requests.get("%s/v1/buckets/dl/summary?template=shards/s-{00..29}.tar" % cl.url,
                     timeout=30).json()
    assert s["objects"] == {"present": 30, "total": 30}, s
    # given names, a missing URL, and the same again (held: nothing to do)
    spec = {"kind": "download", "bucket": "dl", "urls": [origin + "/x/one", origin + "/missing"],
            "names": ["named/one", "named/two"]}
    j = wait_job(cl, start_job(cl, spec))
    assert j["state"] == "failed" and j["downloaded"] == 1 and j["errors"] == 1, j
    assert j["done"] == 2
    assert j["error_names"][0]["name"] == "named/two"
    assert requests.get(obj(cl, "dl", "named/one"), timeout=30).content == body_for("/x/one")
    assert requests.get(obj(cl, "dl", "named/two"), timeout=30).status_code == 404
    j = wait_job(cl, start_job(cl, {"kind": "download", "bucket": "dl", "urls": urls[:3]}))
    assert j["state"] == "finished" and j["present"] == 3 and j["downloaded"] == 0, j
    start_job(cl, {"kind": "download", "bucket": "dl", "urls": ["ftp://x/y"]}, 400)
    start_job(cl, {"kind": "download", "bucket": "dl"}, 400)
    start_job(cl, {"kind": "download", "bucket": "dl", "urls": urls[:2], "names": ["a"]}, 400)


def test_download_into_a_backed_bucket_writes_through(s3, cl, origin):
    u = origin + "/wt/file.bin"
    j = wait_job(cl, start_job(cl, {"kind": "download", "bucket": "jdst", "provider": "s3",
                                    "urls": [u]}))
    assert j["state"] == "finished" and j["downloaded"] == 1, j
    got = s3.client().get_object(Bucket="jdst", Key="wt/file.bin")["Body"].read()
    assert got == body_for("/wt/file.bin")


def test_prefetch_latest_refetches_what_changed(s3, cl):
    """latest: a held object changed in the backend is fetched again, one
    deleted there is dropped and named; unchanged ones cost a HEAD only."""
    c = s3.client()
    for i in range(6):
        c.put_object(Bucket="jlat", Key="l/%d" % i, Body=b"old-%d" % i)
    spec = {"kind": "prefetch", "bucket": "jlat", "provider": "s3", "prefix": "l/"}
    assert wait_job(cl, start_job(cl, spec))["fetched"] == 6
    c.put_object(Bucket="jlat", Key="l/1", Body=b"new-1, longer")
    c.delete_object(Bucket="jlat", Key="l/2")
    again = {"kind": "prefetch", "bucket": "jlat", "provider": "s3",
             "names": ["l/%d" % i for i in range(6)]}
    j = wait_job(cl, start_job(cl, again))
    assert j["state"] == "finished" and j["fetched"] == 0 and j["present"] == 6, j
    assert requests.get(obj(cl, "jlat", "l/1", "s3"), timeout=30).content == b"old-1"
    j = wait_job(cl, start_job(cl, dict(again, latest=True)))
    assert j["state"] == "failed" and j["fetched"] == 1 and j["errors"] == 1, j
    assert j["error_names"][0]["name"] == "l/2"
    g = requests.get(obj(cl, "jlat", "l/1", "s3"), timeout=30)
    assert g.headers["X-Shoal-Cache"] == "hit" and g.content == b"new-1, longer"
    assert requests.get(obj(cl, "jlat", "l/2", "s3"), timeout=30).status_code == 404
    assert gets_of(s3, "jlat", "l/0") == 1


def test_job_cap_and_ttl(origin):
    """job_max 1: a second job waits on every target until the first ends;
    job_ttl_s: an ended job is gone from the list and from GET after it."""
    Origin.delay = 0.15
    c = Cluster(extra="--job_max 1 --job_workers 1 --job_ttl_s 4").start()
    try:
        mkbucket(c, "cap")
        slow = start_job(c, {"kind": "download", "bucket": "cap",
                             "template": origin + "/slow/{00..29}"})
        quick = start_job(c, {"kind": "download", "bucket": "cap",
                              "template": origin + "/quick/{0..5}"})
        q = requests.get("%s/v1/jobs/%s" % (c.url, quick), timeout=30).json()
        assert q["state"] == "running" and q["waiting_targets"] >= 1, q
        s = wait_job(c, slow)
        q = wait_job(c, quick)
        assert s["state"] == "finished" and q["state"] == "finished", (s, q)
        assert s["downloaded"] == 30 and q["downloaded"] == 6
        assert q["start_ns"] < s["end_ns"] <= q["end_ns"] + 1000000000
        ids = [e["id"] for e in requests.get(c.url + "/v1/jobs", timeout=30).json()["jobs"]]
        assert slow in ids and quick in ids
        time.sleep(5)
        ids = [e["id"] for e in requests.get(c.url + "/v1/jobs", timeout=30).json()["jobs"]]
        assert slow not in ids and quick not in ids
        assert requests.get("%s/v1/jobs/%s" % (c.url, slow), timeout=30).status_code == 404
    finally:
        Origin.delay = 0.0
        assert not c.cleanup()
