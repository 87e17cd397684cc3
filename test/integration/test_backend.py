"""Remote buckets over a real S3 server (s3rver): cold, warm, write-through."""
import hashlib
import http.server
import os
import subprocess
import threading
import time
import urllib.parse

import pytest
import requests

from conftest import Cluster, free_port_block, running_cluster, running_s3rver


@pytest.fixture(scope="module")
def s3():
    yield from running_s3rver("remote", "remote2", "remote3")


@pytest.fixture(scope="module")
def cl(s3):
    yield from running_cluster(env=s3.env())


def url(c, bucket, key, provider="s3"):
    u = "%s/v1/objects/%s/%s" % (c.url, bucket, urllib.parse.quote(key))
    return u + ("?provider=" + provider if provider else "")


def gets_of(s3, bucket, key):
    path = "/%s/%s" % (bucket, urllib.parse.quote(key))
    return sum(1 for line in s3.requests() if line.split("?")[0] == "GET " + path)


@pytest.mark.parametrize("size", [0, 1, (1 << 20) + 3, 64 << 20])
def test_cold_then_warm(s3, cl, size):
    data = os.urandom(size)
    key = "cw/obj-%d" % size
    s3.client().put_object(Bucket="remote", Key=key, Body=data)
    r = requests.get(url(cl, "remote", key))
    assert r.status_code == 200, r.text
    assert r.headers["X-Shoal-Cache"] == "miss"
    assert hashlib.sha256(r.content).digest() == hashlib.sha256(data).digest()
    r = requests.get(url(cl, "remote", key))
    assert r.status_code == 200 and r.headers["X-Shoal-Cache"] == "hit"
    assert hashlib.sha256(r.content).digest() == hashlib.sha256(data).digest()
    assert gets_of(s3, "remote", key) == 1


def test_cold_get_to_a_slow_reader(s3, cl):
    """A cold GET read slowly: the backend transfer is paused and resumed
    as the client's output passes 8 MiB and drains, with its pieces
    gathered between curl's calls; every byte arrives in order."""
    data = os.urandom(40 << 20)
    key = "cw/slow-reader"
    s3.client().put_object(Bucket="remote", Key=key, Body=data)
    h = hashlib.sha256()
    with requests.get(url(cl, "remote", key), stream=True, timeout=60) as r:
        assert r.status_code == 200 and r.headers["X-Shoal-Cache"] == "miss"
        for i, chunk in enumerate(r.iter_content(1 << 20)):
            h.update(chunk)
            if i < 40:
                time.sleep(0.05)
    assert h.digest() == hashlib.sha256(data).digest()
    r = requests.get(url(cl, "remote", key))
    assert r.status_code == 200 and r.headers["X-Shoal-Cache"] == "hit"
    assert hashlib.sha256(r.content).digest() == hashlib.sha256(data).digest()
    assert gets_of(s3, "remote", key) == 1


def test_range_cold_and_warm(s3, cl):
    data = os.urandom(300000)
    s3.client().put_object(Bucket="remote", Key="rg/a", Body=data)
    r = requests.get(url(cl, "remote", "rg/a"), headers={"Range": "bytes=1000-1999"})
    assert r.status_code == 206 and r.content == data[1000:2000]
    assert r.headers["X-Shoal-Cache"] == "miss"
    assert r.headers["Content-Range"] == "bytes 1000-1999/300000"
    # the cold range read fetches (and caches) the whole object once; a GET
    # during that fetch waits for it rather than asking the backend again
    r = requests.get(url(cl, "remote", "rg/a"), headers={"Range": "bytes=-10"})
    assert r.status_code == 206 and r.content == data[-10:]
    assert requests.get(url(cl, "remote", "rg/a")).content == data
    assert gets_of(s3, "remote", "rg/a") == 1
    r = requests.get(url(cl, "remote", "rg/a"), headers={"Range": "bytes=299990-"})
    assert r.status_code == 206 and r.content == data[299990:]
    assert r.headers["X-Shoal-Cache"] == "hit"


def test_one_backend_get_for_16_concurrent_cold_gets(s3, cl):
    data = os.urandom(8 << 20)
    s3.client().put_object(Bucket="remote", Key="sf/one", Body=data)
    results = []

    def get():
        r = requests.get(url(cl, "remote", "sf/one"), timeout=60)
        results.append((r.status_code, hashlib.sha256(r.content).digest()))

    ts = [threading.Thread(target=get) for _ in range(16)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    want = hashlib.sha256(data).digest()
    assert results == [(200, want)] * 16
    assert gets_of(s3, "remote", "sf/one") == 1


def test_head_uncached_asks_the_backend(s3, cl):
    s3.client().put_object(Bucket="remote", Key="hd/x", Body=b"12345")
    r = requests.head(url(cl, "remote", "hd/x"), allow_redirects=True)
    assert r.status_code == 200
    assert r.headers["X-Shoal-Cached"] == "false" and r.headers["Content-Length"] == "5"
    assert gets_of(s3, "remote", "hd/x") == 0
    assert requests.head(url(cl, "remote", "hd/none"), allow_redirects=True).status_code == 404


def test_write_through_and_delete(s3, cl):
    r = requests.put(url(cl, "remote", "wt/new"), b"written through")
    assert r.status_code == 201, r.text
    got = s3.client().get_object(Bucket="remote", Key="wt/new")["Body"].read()
    assert got == b"written through"
    r = requests.get(url(cl, "remote", "wt/new"))
    assert r.content == b"written through" and r.headers["X-Shoal-Cache"] == "hit"
    assert requests.delete(url(cl, "remote", "wt/new")).status_code == 204
    with pytest.raises(Exception):
        s3.client().head_object(Bucket="remote", Key="wt/new")
    assert requests.get(url(cl, "remote", "wt/new")).status_code == 404


def test_evict_drops_only_the_local_copy(s3, cl):
    s3.client().put_object(Bucket="remote", Key="ev/x", Body=b"evict me")
    assert requests.get(url(cl, "remote", "ev/x")).headers["X-Shoal-Cache"] == "miss"
    assert requests.delete(url(cl, "remote", "ev/x") + "&evict").status_code == 204
    assert s3.client().get_object(Bucket="remote", Key="ev/x")["Body"].read() == b"evict me"
    r = requests.get(url(cl, "remote", "ev/x"))
    assert r.content == b"evict me" and r.headers["X-Shoal-Cache"] == "miss"


def test_bucket_with_backend_property_and_validation(s3, cl):
    # validate_warm_get on: a changed object is fetched again, a deleted one is 404
    assert requests.put(cl.url + "/v1/buckets/mirror",
                        json={"backend": "s3://remote2", "validate_warm_get": True}).status_code == 201
    s3.client().put_object(Bucket="remote2", Key="v/x", Body=b"one")
    assert requests.get(url(cl, "mirror", "v/x", None)).content == b"one"
    time.sleep(1.1)  # a new Last-Modified second, as S3 servers keep it
    s3.client().put_object(Bucket="remote2", Key="v/x", Body=b"two!")
    r = requests.get(url(cl, "mirror", "v/x", None))
    assert r.content == b"two!" and r.headers["X-Shoal-Cache"] == "miss"
    assert requests.get(url(cl, "mirror", "v/x", None)).headers["X-Shoal-Cache"] == "hit"
    s3.client().delete_object(Bucket="remote2", Key="v/x")
    assert requests.get(url(cl, "mirror", "v/x", None)).status_code == 404
    # validation off (the bucket addressed by its provider): the cached bytes
    s3.client().put_object(Bucket="remote2", Key="v/y", Body=b"cached")
    assert requests.get(url(cl, "remote2", "v/y")).content == b"cached"
    s3.client().put_object(Bucket="remote2", Key="v/y", Body=b"changed")
    assert requests.get(url(cl, "remote2", "v/y")).content == b"cached"
    # both names of the bucket behave the same for new objects
    s3.client().put_object(Bucket="remote2", Key="v/z", Body=b"zed")
    assert requests.get(url(cl, "mirror", "v/z", None)).content == b"zed"
    assert requests.get(url(cl, "remote2", "v/z")).content == b"zed"


def test_bad_backend_properties(cl):
    for props in ({"backend": "ftp://x"}, {"backend": "s3://bad name"},
                  {"validate_warm_get": "yes"}, {"addressing": "sideways"}):
        assert requests.put(cl.url + "/v1/buckets/badprops", json=props).status_code == 400


class Origin(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def test_http_origin_is_read_only(cl, tmp_path):
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "f.txt").write_bytes(b"from the origin")
    port = free_port_block(1)
    srv = http.server.ThreadingHTTPServer(
        ("127.0.0.1", port), lambda *a: Origin(*a, directory=str(tmp_path)))
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        assert requests.put(cl.url + "/v1/buckets/web",
                            json={"backend": "http://127.0.0.1:%d/dir" % port}).status_code == 201
        r = requests.get(url(cl, "web", "f.txt", None))
        assert r.content == b"from the origin" and r.headers["X-Shoal-Cache"] == "miss"
        srv.shutdown()
        srv.server_close()
        r = requests.get(url(cl, "web", "f.txt", None))
        assert r.content == b"from the origin" and r.headers["X-Shoal-Cache"] == "hit"
        assert requests.put(url(cl, "web", "g.txt", None), b"x").status_code == 405
        r = requests.get(url(cl, "web", "missing", None), timeout=60)
        assert r.status_code == 502 and "unreachable" in r.json()["error"]
    finally:
        srv.server_close()


def test_backend_down_warm_still_served(s3, cl):
    s3.client().put_object(Bucket="remote3", Key="down/warm", Body=b"warm bytes")
    s3.client().put_object(Bucket="remote3", Key="down/cold", Body=b"cold bytes")
    assert requests.get(url(cl, "remote3", "down/warm")).content == b"warm bytes"
    s3.stop()
    try:
        r = requests.get(url(cl, "remote3", "down/warm"))
        assert r.status_code == 200 and r.content == b"warm bytes"
        r = requests.get(url(cl, "remote3", "down/cold"), timeout=60)
        assert r.status_code in (502, 503), r.text
        assert "s3://remote3" in r.json()["error"]
        for t in cl.target_names():
            assert requests.get(cl.node_url(t) + "/v1/health").status_code == 200
    finally:
        s3.start()


def test_auth_failure_names_the_backend(s3):
    env = dict(s3.env(), AWS_ACCESS_KEY_ID="NOT-A-KEY")
    c = Cluster(targets=1, env=env).start()
    try:
        s3.client().put_object(Bucket="remote", Key="auth/x", Body=b"x")
        r = requests.get(url(c, "remote", "auth/x"))
        assert r.status_code == 403, r.text
        assert "s3://remote" in r.json()["error"]
    finally:
        assert not c.cleanup()


def test_remote_listing_pages_and_marks_cached(s3, cl):
    c3 = s3.client()
    names = ["ls/%02d" % i for i in range(25)]
    for n in names:
        c3.put_object(Bucket="remote", Key=n, Body=n.encode())
    cached = set(names[3:8]) | {names[24]}
    for n in cached:
        assert requests.get(url(cl, "remote", n)).status_code == 200
    # a cold GET's copy is committed just after its response: wait for all
    for _ in range(50):
        r = requests.get(cl.url + "/v1/buckets/remote/objects",
                         params={"provider": "s3", "prefix": "ls/", "cached": "true"})
        if {o["name"] for o in r.json()["objects"]} == cached:
            break
        time.sleep(0.1)
    got, token, pages = [], "", 0
    while True:
        r = requests.get(cl.url + "/v1/buckets/remote/objects",
                         params={"provider": "s3", "prefix": "ls/", "limit": 10, "token": token})
        assert r.status_code == 200, r.text
        page = r.json()
        assert len(page["objects"]) <= 10
        got += page["objects"]
        pages += 1
        token = page["next"]
        if not token:
            break
    assert pages == 3
    assert [o["name"] for o in got] == names
    assert {o["name"] for o in got if o["cached"]} == cached
    assert all(o["size"] == 5 for o in got)
    # only what Shoal holds
    r = requests.get(cl.url + "/v1/buckets/remote/objects",
                     params={"provider": "s3", "prefix": "ls/", "cached": "true"})
    assert {o["name"] for o in r.json()["objects"]} == cached
    # a remote bucket is known on its first listing too
    r = requests.get(cl.url + "/v1/buckets/remote3/objects", params={"provider": "s3"})
    assert r.status_code == 200, r.text


class Flaky(http.server.BaseHTTPRequestHandler):
    """An origin that fails on purpose: `mode` picks how."""
    mode = {}
    hits = {}
    body = os.urandom(4 << 20)

    def log_message(self, *args):
        pass

    def do_GET(self):
        path = self.path
        Flaky.hits[path] = Flaky.hits.get(path, 0) + 1
        mode = Flaky.mode.get(path, "ok")
        if mode.startswith("503x") and Flaky.hits[path] <= int(mode[4:]):
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(Flaky.body)))
        self.send_header("ETag", '"flaky"')
        self.end_headers()
        if mode == "cut":
            self.wfile.write(Flaky.body[: len(Flaky.body) // 2])
            self.wfile.flush()
            self.connection.shutdown(2)
            return
        self.wfile.write(Flaky.body)


@pytest.fixture
def flaky(cl):
    port = free_port_block(1)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), Flaky)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    name = "flaky%d" % port
    assert requests.put(cl.url + "/v1/buckets/" + name,
                        json={"backend": "http://127.0.0.1:%d" % port}).status_code == 201
    yield name
    srv.shutdown()
    srv.server_close()


def test_backend_failure_mid_stream_never_looks_complete(cl, flaky):
    Flaky.mode["/cut"] = "cut"
    # curl checks the body against Content-Length (requests' urllib3 1.26
    # does not): the transfer must fail as partial, not end as if complete
    p = subprocess.run(["curl", "-sL", "-o", "/dev/null", "-w", "%{size_download}",
                        url(cl, flaky, "cut", None)], capture_output=True, text=True, timeout=60)
    assert p.returncode in (18, 56), (p.returncode, p.stdout)
    assert int(p.stdout) < len(Flaky.body)
    # nothing was committed: once the origin behaves, the GET is cold again
    Flaky.mode["/cut"] = "ok"
    r = requests.get(url(cl, flaky, "cut", None), timeout=60)
    assert r.status_code == 200 and r.content == Flaky.body
    assert r.headers["X-Shoal-Cache"] == "miss"


def test_backend_503_is_retried(cl, flaky):
    Flaky.mode["/busy"] = "503x2"
    r = requests.get(url(cl, flaky, "busy", None), timeout=60)
    assert r.status_code == 200 and r.content == Flaky.body
    assert Flaky.hits["/busy"] == 3
    Flaky.mode["/down"] = "503x99"
    r = requests.get(url(cl, flaky, "down", None), timeout=60)
    assert r.status_code == 503 and "throttling or unavailable" in r.json()["error"]
    assert Flaky.hits["/down"] == 4  # the first try and 3 retries


def test_loader_s3_mode_against_s3rver(s3):
    """The loader's S3 mode (SigV4) reads and writes a real S3 server."""
    from test_loader import LOADER
    env = dict(os.environ, **s3.env())
    base = [LOADER, "--endpoint", s3.url, "--bucket", "remote3", "--mode", "s3", "--json",
            "--stats-interval", "0", "--num-objects", "20", "--prefix", "ld3/"]
    p = subprocess.run(base + ["--pct-put", "100", "--epochs", "1", "--min-size", "2KiB",
                               "--max-size", "64KiB"], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    p = subprocess.run(base + ["--epochs", "1"], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    import json
    assert json.loads(p.stdout)["ops"]["GET"]["count"] == 20
    keys = [o["Key"] for o in s3.client().list_objects_v2(Bucket="remote3", Prefix="ld3/")["Contents"]]
    assert len(keys) == 20


def test_summary_counts_what_is_cached(s3, cl):
    """The dataset-presence gate: objects and bytes held against the
    backend's, for a prefix, moving from 0% to 100% as objects are read."""
    sizes = {"summ/a": 1000, "summ/b": 2000, "summ/c": 3000, "summ/d": 4000}
    for k, n in sizes.items():
        s3.client().put_object(Bucket="remote3", Key=k, Body=os.urandom(n))
    s3.client().put_object(Bucket="remote3", Key="other/x", Body=b"x" * 500)
    surl = "%s/v1/buckets/remote3/summary?provider=s3&prefix=summ/" % cl.url

    def summary():
        r = requests.get(surl)
        assert r.status_code == 200, r.text
        return r.json()

    j = summary()
    assert j["backed"] and j["objects"] == {"present": 0, "total": 4}
    assert j["bytes"] == {"present": 0, "total": 10000} and j["cached_pct"] == 0
    for k in ("summ/a", "summ/d"):
        assert requests.get(url(cl, "remote3", k)).status_code == 200
    j = summary()
    assert j["objects"] == {"present": 2, "total": 4} and j["bytes"]["present"] == 5000
    assert j["cached_pct"] == 50 and j["objects_cached_pct"] == 50
    for k in ("summ/b", "summ/c"):
        assert requests.get(url(cl, "remote3", k)).status_code == 200
    j = summary()
    assert j["cached_pct"] == 100 and j["objects"] == {"present": 4, "total": 4}
    # a template selects names: here 3 of which the backend has 2 (b, c)
    r = requests.get("%s/v1/buckets/remote3/summary?provider=s3&template=summ/{b..c}"
                     % cl.url)
    assert r.status_code == 400  # letters are not a range
    s3.client().put_object(Bucket="remote3", Key="summ/t07", Body=b"z" * 70)
    s3.client().put_object(Bucket="remote3", Key="summ/t7", Body=b"z" * 7)  # not padded
    r = requests.get("%s/v1/buckets/remote3/summary?provider=s3&template=summ/t{05..09}"
                     % cl.url)
    assert r.status_code == 200, r.text
    j = r.json()
    assert j["selected"] == 5 and j["objects"] == {"present": 0, "total": 1}
    assert j["bytes"]["total"] == 70
    assert requests.get(url(cl, "remote3", "summ/t07")).status_code == 200
    r = requests.get("%s/v1/buckets/remote3/summary?provider=s3&template=summ/t{05..09}"
                     % cl.url)
    assert r.json()["cached_pct"] == 100
    assert requests.get(surl + "&template=x{1..2}").status_code == 400  # not both
    # a Shoal-only bucket holds all it lists; unknown buckets and methods
    assert requests.put(cl.url + "/v1/buckets/summ-local").status_code == 201
    for i in range(3):
        requests.put(cl.url + "/v1/objects/summ-local/o%d" % i, data=b"y" * 100)
    r = requests.get(cl.url + "/v1/buckets/summ-local/summary")
    assert r.status_code == 200 and r.json()["objects"] == {"present": 3, "total": 3}
    assert r.json()["bytes"]["total"] == 300 and not r.json()["backed"]
    assert requests.get(cl.url + "/v1/buckets/summ-none/summary").status_code == 404
    assert requests.delete(cl.url + "/v1/buckets/summ-local/summary").status_code == 404


def start_job(c, spec, want=201):
    r = requests.post(c.url + "/v1/jobs", json=spec)
    assert r.status_code == want, r.text
    return r.json().get("id")


def test_prefetch_jobs(s3, cl):
    """Prefetch by names and by template: every target fetches the names it
    owns, once each, and every object then reads warm; missing names are
    counted errors; a key makes the start idempotent; abort; list."""
    data = {"pf/o-%03d" % i: os.urandom(1000 + i) for i in range(30)}
    for k, v in data.items():
        s3.client().put_object(Bucket="remote2", Key=k, Body=v)
    first = sorted(data)[:10]
    jid = start_job(cl, {"kind": "prefetch", "bucket": "remote2", "provider": "s3",
                         "names": first})
    r = requests.get("%s/v1/jobs/%s?wait=60" % (cl.url, jid))
    j = r.json()
    assert r.status_code == 200 and j["state"] == "finished", j
    assert j["fetched"] == 10 and j["owned"] == 10 and j["errors"] == 0 and j["selected"] == 10
    assert j["bytes"] == sum(len(data[k]) for k in first) and len(j["targets"]) == 3
    for k in first:
        g = requests.get(url(cl, "remote2", k))
        assert g.headers["X-Shoal-Cache"] == "hit" and g.content == data[k]
        assert gets_of(s3, "remote2", k) == 1
    # a template: the rest is fetched, what is held is counted as present
    jid = keyed = start_job(cl, {"kind": "prefetch", "bucket": "remote2", "provider": "s3",
                                 "template": "pf/o-{000..029}", "key": "epoch-1"})
    assert start_job(cl, {"kind": "prefetch", "bucket": "remote2", "provider": "s3",
                          "template": "pf/o-{000..029}", "key": "epoch-1"}, 200) == jid
    j = requests.get("%s/v1/jobs/%s?wait=60" % (cl.url, jid)).json()
    assert j["state"] == "finished" and j["fetched"] == 20 and j["present"] == 10, j
    for k, v in data.items():
        g = requests.get(url(cl, "remote2", k))
        assert g.headers["X-Shoal-Cache"] == "hit" and g.content == v
        assert gets_of(s3, "remote2", k) == 1
    # evict a third of them: dropped from Shoal, read cold (and once more
    # from the backend) after; evicting again finds nothing to drop
    some = sorted(data)[:10]
    jid = start_job(cl, {"kind": "evict", "bucket": "remote2", "provider": "s3", "names": some})
    j = requests.get("%s/v1/jobs/%s?wait=60" % (cl.url, jid)).json()
    assert j["state"] == "finished" and j["evicted"] == 10, j
    assert j["bytes"] == sum(len(data[k]) for k in some)
    s = requests.get("%s/v1/buckets/remote2/summary?provider=s3&prefix=pf/" % cl.url).json()
    assert s["objects"] == {"present": 20, "total": 30}, s
    jid = start_job(cl, {"kind": "evict", "bucket": "remote2", "provider": "s3", "names": some})
    j = requests.get("%s/v1/jobs/%s?wait=60" % (cl.url, jid)).json()
    assert j["state"] == "finished" and j["evicted"] == 0 and j["present"] == 0, j
    g = requests.get(url(cl, "remote2", some[0]))
    assert g.headers["X-Shoal-Cache"] == "miss" and g.content == data[some[0]]
    assert gets_of(s3, "remote2", some[0]) == 2
    jid = start_job(cl, {"kind": "prefetch", "bucket": "remote2", "provider": "s3",
                         "names": some[1:]})
    assert requests.get("%s/v1/jobs/%s?wait=60" % (cl.url, jid)).json()["fetched"] == 9
    # by prefix: every target pages through the backend's listing (pages of
    # 1,000 here: 1,200 names) and takes the names it owns
    for i in range(1200):
        s3.client().put_object(Bucket="remote2", Key="px/%04d" % i, Body=b"p%d" % i)
    jid = start_job(cl, {"kind": "prefetch", "bucket": "remote2", "provider": "s3",
                         "prefix": "px/"})
    j = requests.get("%s/v1/jobs/%s?wait=120" % (cl.url, jid)).json()
    assert j["state"] == "finished" and j["fetched"] == 1200 and j["errors"] == 0, j
    assert all(t["body"]["selected"] == 1200 for t in j["targets"])
    s = requests.get("%s/v1/buckets/remote2/summary?provider=s3&prefix=px/" % cl.url).json()
    assert s["cached_pct"] == 100 and s["objects"]["total"] == 1200
    # the whole bucket: what is left (the other prefixes here) is fetched once
    jid = start_job(cl, {"kind": "prefetch", "bucket": "remote2", "provider": "s3"})
    j = requests.get("%s/v1/jobs/%s?wait=120" % (cl.url, jid)).json()
    assert j["state"] == "finished" and j["errors"] == 0, j
    s = requests.get("%s/v1/buckets/remote2/summary?provider=s3" % cl.url).json()
    assert s["cached_pct"] == 100, s
    assert gets_of(s3, "remote2", "px/0007") == 1
    # names the backend does not have: counted, named, not fatal
    jid = start_job(cl, {"kind": "prefetch", "bucket": "remote2", "provider": "s3",
                         "template": "pf/o-{000..039}"})
    j = requests.get("%s/v1/jobs/%s?wait=60" % (cl.url, jid)).json()
    assert j["state"] == "failed" and j["present"] == 30 and j["errors"] == 10, j
    assert all(e["name"].startswith("pf/o-03") for e in j["error_names"])
    # abort a long job
    jid = start_job(cl, {"kind": "prefetch", "bucket": "remote2", "provider": "s3",
                         "template": "gone/{0..99999}"})
    time.sleep(0.3)
    assert requests.delete("%s/v1/jobs/%s" % (cl.url, jid)).status_code == 204
    j = requests.get("%s/v1/jobs/%s?wait=30" % (cl.url, jid)).json()
    assert j["state"] == "aborted" and j["errors"] < 100000, j
    # the list, its filters, and what is refused
    ids = [x["id"] for x in requests.get(cl.url + "/v1/jobs?kind=prefetch&bucket=remote2")
           .json()["jobs"]]
    assert jid in ids and len(ids) >= 4
    assert requests.get(cl.url + "/v1/jobs?bucket=nothing").json()["jobs"] == []
    aborted = [x["id"] for x in requests.get(cl.url + "/v1/jobs?state=aborted").json()["jobs"]]
    assert aborted == [jid]
    assert requests.get(cl.url + "/v1/jobs?state=running").json()["jobs"] == []
    assert requests.get(cl.url + "/v1/jobs/nosuchjob").status_code == 404
    assert requests.get(cl.url + "/v1/jobs/0123456789abcdef").status_code == 404
    assert requests.delete(cl.url + "/v1/jobs/0123456789abcdef").status_code == 404
    # the proxy restarts: its list is rebuilt from the targets, and a key
    # still names its job
    cl.sh("stop-node", "p0")
    cl.sh("start-node", "p0")
    cl.wait_healthy("p0")
    after = [x["id"] for x in requests.get(cl.url + "/v1/jobs?kind=prefetch").json()["jobs"]]
    assert jid in after and len(after) >= 4
    assert requests.get("%s/v1/jobs/%s" % (cl.url, jid)).json()["state"] == "aborted"
    assert start_job(cl, {"kind": "prefetch", "bucket": "remote2", "provider": "s3",
                          "template": "pf/o-{000..029}", "key": "epoch-1"}, 200) == keyed
    start_job(cl, {"kind": "copy", "bucket": "remote2", "provider": "s3", "names": ["a"]}, 400)
    start_job(cl, {"kind": "prefetch", "bucket": "remote2", "provider": "s3", "prefix": "a",
                   "template": "b{1..2}"}, 400)
    start_job(cl, {"kind": "dance", "bucket": "remote2", "names": ["a"]}, 400)
    start_job(cl, {"kind": "prefetch", "bucket": "remote2", "provider": "s3",
                   "template": "x{9..}"}, 400)
    start_job(cl, {"kind": "prefetch", "bucket": "remote2", "provider": "s3",
                   "names": ["a", "../b"]}, 400)
    # a bucket with no backend has nothing to prefetch from
    assert requests.put(cl.url + "/v1/buckets/pf-local").status_code == 201
    start_job(cl, {"kind": "prefetch", "bucket": "pf-local", "names": ["a"]}, 400)
    start_job(cl, {"kind": "evict", "bucket": "pf-local", "names": ["a"]}, 400)  # the only copy
    # a key is 1..255 bytes; a refused start does not take its key
    for bad in ("", "k" * 300, 7):
        start_job(cl, {"kind": "prefetch", "bucket": "remote2", "provider": "s3",
                       "names": ["pf/o-000"], "key": bad}, 400)
    start_job(cl, {"kind": "prefetch", "bucket": "pf-local", "names": ["a"], "key": "k2"}, 400)
    start_job(cl, {"kind": "prefetch", "bucket": "remote2", "provider": "s3",
                   "names": ["pf/o-000"], "key": "k2"}, 201)
    start_job(cl, {"kind": "prefetch", "bucket": "pf-none", "names": ["a"]}, 404)


def test_prefetch_survives_a_target_restart(s3, cl):
    """kill -9 a target mid-prefetch and start it again: its share runs
    again from its record, the job ends finished with every object
    cached, and an ended job is still answered for after a restart."""
    data = {"kr/%03d" % i: os.urandom(2000) for i in range(300)}
    for k, v in data.items():
        s3.client().put_object(Bucket="remote3", Key=k, Body=v)
    jid = start_job(cl, {"kind": "prefetch", "bucket": "remote3", "provider": "s3",
                         "template": "kr/{000..299}"})
    cl.sh("kill-node", "t1")
    time.sleep(0.3)
    cl.sh("start-node", "t1")
    cl.wait_healthy("t1")
    j = requests.get("%s/v1/jobs/%s?wait=120" % (cl.url, jid)).json()
    assert j["state"] == "finished" and j["errors"] == 0, j
    s = requests.get("%s/v1/buckets/remote3/summary?provider=s3&prefix=kr/" % cl.url).json()
    assert s["cached_pct"] == 100 and s["objects"] == {"present": 300, "total": 300}, s
    for k in ("kr/000", "kr/150", "kr/299"):
        g = requests.get(url(cl, "remote3", k))
        assert g.headers["X-Shoal-Cache"] == "hit" and g.content == data[k]
    # restarted after the end: the job is remembered, not run again
    cl.sh("stop-node", "t2")
    cl.sh("start-node", "t2")
    cl.wait_healthy("t2")
    again = requests.get("%s/v1/jobs/%s" % (cl.url, jid)).json()
    assert again["state"] == "finished" and again["owned"] == j["owned"], again


def test_prefetch_sparse_template_and_concurrent_gets(s3, cl):
    """A template of 10,000 names of which 300 exist: 9,700 errors counted,
    the job still finishes, the 300 are cached. Client GETs of objects
    while they are being prefetched still cost one backend GET each."""
    import concurrent.futures
    data = {"sp/%05d" % (i * 33): os.urandom(3000) for i in range(300)}
    for k, v in data.items():
        s3.client().put_object(Bucket="remote3", Key=k, Body=v)
    jid = start_job(cl, {"kind": "prefetch", "bucket": "remote3", "provider": "s3",
                         "template": "sp/{00000..09999}"})
    keys = sorted(data)[:60]
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        got = list(ex.map(lambda k: requests.get(url(cl, "remote3", k)).content, keys))
    assert got == [data[k] for k in keys]
    j = requests.get("%s/v1/jobs/%s?wait=300" % (cl.url, jid)).json()
    assert j["state"] == "failed" and j["selected"] == 10000, j
    assert j["errors"] == 9700 and j["fetched"] + j["present"] == 300, j
    assert len(j["error_names"]) <= 10
    for k in keys:
        assert gets_of(s3, "remote3", k) == 1, k
    s = requests.get("%s/v1/buckets/remote3/summary?provider=s3&template=sp/{00000..09999}"
                     % cl.url).json()
    assert s["objects"] == {"present": 300, "total": 300} and s["selected"] == 10000
