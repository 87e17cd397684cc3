"""HTTP(S) origins as read-only buckets, against a real web server (Debian's
nginx): cold then warm reads with one origin GET however many ask,
ranges, HEAD, validate_warm_get by ETag and, where the server sends none,
by Last-Modified; an object gone from the origin; no listing (501, native
and S3) but the cached part and the summary; writes refused; the origin
down."""
import concurrent.futures
import os
import shutil
import subprocess
import tempfile
import time

import boto3
import botocore
import pytest
import requests

from conftest import free_port_block, running_cluster


class Nginx:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="shoal-nginx-")
        os.chmod(self.dir, 0o755)         # its workers run as nobody
        self.root = os.path.join(self.dir, "www")
        for d in ("data", "plain"):
            os.makedirs(os.path.join(self.root, d))
        self.port = free_port_block(1)
        self.log = os.path.join(self.dir, "access.log")
        self.conf = os.path.join(self.dir, "nginx.conf")
        with open(self.conf, "w") as f:
            f.write("""daemon off; worker_processes 1; pid %(d)s/nginx.pid;
error_log %(d)s/error.log warn;
events { worker_connections 256; }
http {
  access_log %(d)s/access.log;
  client_body_temp_path %(d)s/body; proxy_temp_path %(d)s/proxy;
  fastcgi_temp_path %(d)s/fcgi; uwsgi_temp_path %(d)s/uwsgi; scgi_temp_path %(d)s/scgi;
  server {
    listen 127.0.0.1:%(p)d;
    root %(r)s;
    location /plain/ { etag off; }
  }
}
""" % {"d": self.dir, "p": self.port, "r": self.root})
        self.proc = None
        self.url = "http://127.0.0.1:%d" % self.port

    def start(self):
        self.proc = subprocess.Popen(["nginx", "-c", self.conf, "-p", self.dir])
        for _ in range(100):
            try:
                requests.get(self.url + "/", timeout=1)
                return self
            except requests.RequestException:
                time.sleep(0.05)
        raise AssertionError(open(os.path.join(self.dir, "error.log")).read())

    def stop(self):
        if self.proc:
            self.proc.terminate()
            self.proc.wait(timeout=10)
            self.proc = None

    def write(self, path, data, mtime=None):
        p = os.path.join(self.root, path)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
        os.chmod(p, 0o644)
        if mtime:
            os.utime(p, (mtime, mtime))

    def gets(self, path):
        """The GETs nginx served for /path (its access log, which it writes
        once a response is sent: read until it stays the same for 300 ms)."""
        last, same = -1, 0
        for _ in range(100):
            with open(self.log) as f:
                n = sum(1 for line in f if '"GET /%s HTTP' % path in line)
            same = same + 1 if n == last else 0
            if same == 3:
                return n
            last = n
            time.sleep(0.1)
        return last


@pytest.fixture(scope="module")
def web():
    srv = Nginx()
    if not shutil.which("nginx"):
        pytest.skip("nginx is not installed (deploy/install-deps.sh installs it)")
    srv.start()
    yield srv
    srv.stop()
    shutil.rmtree(srv.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def oc(web):
    for c in running_cluster(targets=2, mountpaths=1):
        for b, sub in (("web", "data"), ("plain", "plain")):
            r = c.http.put(c.url + "/v1/buckets/" + b,
                           json={"backend": "%s/%s" % (web.url, sub), "validate_warm_get": True})
            assert r.status_code == 201, r.text
        yield c


def get(c, b, name, **kw):
    return c.http.get("%s/v1/objects/%s/%s" % (c.url, b, name), timeout=60, **kw)


def test_cold_then_warm_one_origin_get(oc, web):
    body = os.urandom(300000)
    web.write("data/dir/x.bin", body)
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        got = list(ex.map(lambda _: get(oc, "web", "dir/x.bin"), range(8)))
    assert all(r.status_code == 200 and r.content == body for r in got)
    assert web.gets("data/dir/x.bin") == 1
    text = "".join(oc.http.get(oc.node_url(t) + "/metrics").text for t in oc.target_names())
    assert 'backend="127.0.0.1:%d",provider="http",op="get"' % web.port in text
    r = get(oc, "web", "dir/x.bin")
    assert r.content == body and r.headers["X-Shoal-Cache"] == "hit"
    assert web.gets("data/dir/x.bin") == 1          # validated by HEAD, not fetched
    r = get(oc, "web", "dir/x.bin", headers={"Range": "bytes=1000-1009"})
    assert r.status_code == 206 and r.content == body[1000:1010]
    web.write("data/dir/h.txt", b"head me")
    r = oc.http.head(oc.url + "/v1/objects/web/dir/h.txt", allow_redirects=True)
    assert r.status_code == 200 and r.headers["Content-Length"] == "7"
    assert r.headers.get("X-Shoal-Cached") == "false"
    assert get(oc, "web", "nothing/here").status_code == 404


def test_validated_by_etag(oc, web):
    web.write("data/v.txt", b"first version")
    assert get(oc, "web", "v.txt").content == b"first version"
    etag = get(oc, "web", "v.txt").headers["ETag"]
    web.write("data/v.txt", b"second, longer version", mtime=time.time() + 5)
    r = get(oc, "web", "v.txt")
    assert r.content == b"second, longer version" and r.headers["ETag"] != etag
    os.remove(os.path.join(web.root, "data", "v.txt"))
    assert get(oc, "web", "v.txt").status_code == 404
    for _ in range(50):                   # the copy is dropped just after the answer
        r = oc.http.get(oc.url + "/v1/buckets/web/objects?cached=true")
        if "v.txt" not in [o["name"] for o in r.json()["objects"]]:
            break
        time.sleep(0.1)
    assert "v.txt" not in [o["name"] for o in r.json()["objects"]]


def test_validated_by_last_modified_without_etags(oc, web):
    t0 = time.time() - 100
    web.write("plain/p.txt", b"AAAA", mtime=t0)
    assert "ETag" not in requests.get(web.url + "/plain/p.txt").headers
    before = web.gets("plain/p.txt")
    assert get(oc, "plain", "p.txt").content == b"AAAA"
    r = get(oc, "plain", "p.txt")
    assert r.content == b"AAAA" and r.headers["X-Shoal-Cache"] == "hit"
    assert r.headers["ETag"].startswith('W/"')
    web.write("plain/p.txt", b"BBBB", mtime=t0 + 10)   # same size, newer
    assert get(oc, "plain", "p.txt").content == b"BBBB"
    assert web.gets("plain/p.txt") == before + 2      # the cold read and the new version


def test_no_listing_but_what_is_cached(oc, web):
    web.write("data/l/one", b"1")
    assert get(oc, "web", "l/one").status_code == 200
    r = oc.http.get(oc.url + "/v1/buckets/web/objects")
    assert r.status_code == 501 and "HTTP origin" in r.json()["error"]
    r = oc.http.get(oc.url + "/v1/buckets/web/objects?cached=true&prefix=l/")
    assert r.status_code == 200 and [o["name"] for o in r.json()["objects"]] == ["l/one"]
    r = oc.http.get(oc.url + "/v1/buckets/web/summary?prefix=l/")
    assert r.status_code == 200 and r.json()["objects"]["present"] == 1, r.text
    s3 = boto3.client("s3", endpoint_url=oc.url + "/s3", region_name="us-east-1",
                      aws_access_key_id="x", aws_secret_access_key="y")
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.list_objects_v2(Bucket="web")
    assert e.value.response["Error"]["Code"] == "NotImplemented"
    assert s3.get_object(Bucket="web", Key="l/one")["Body"].read() == b"1"


def test_read_only_and_origin_down(oc, web):
    assert oc.http.put(oc.url + "/v1/objects/web/new", data=b"x").status_code == 405
    web.write("data/d/warm", b"warm bytes")
    web.write("data/d/cold", b"cold bytes")
    assert get(oc, "web", "d/warm").status_code == 200
    web.stop()
    try:
        r = get(oc, "web", "d/cold")
        assert r.status_code == 502 and web.url in r.json()["error"]
        r = get(oc, "web", "d/warm")          # validation fails: the copy is served
        assert r.status_code == 200 and r.content == b"warm bytes"
    finally:
        web.start()
