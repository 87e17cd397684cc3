"""Authentication everywhere data is read or changed.

A cluster with auth_keys: every native endpoint of the proxy and every
object and internal endpoint of a target is walked unsigned, stripped of
its signature, tampered with and replayed after expiry (403 each time,
nothing changed), then with valid credentials (SigV4 header, presigned
query, bearer token) for the normal answer. Also: the cluster secret is
required and read from a 0600 file, and a daemon on a non-loopback
address with no keys refuses to start unless allow_anonymous is set.
"""
import json
import os
import subprocess
import tempfile
import time
import urllib.parse

import boto3
import pytest
import requests
from botocore.exceptions import ClientError

from conftest import BUILD, ROOT, Cluster, SigV4, free_port_block
from test_loader import loader

AK, SK = "AUTHKEY0", "auth-secret-0123"


@pytest.fixture(scope="module")
def kc():
    c = Cluster(targets=2, mountpaths=1,
                extra="--auth_keys %s:%s,OTHER:other-secret-99 --redirect_ttl_s 3" % (AK, SK))
    c.start()
    signed = c.http
    assert signed.put(c.url + "/v1/buckets/sec").status_code == 201
    assert signed.put(c.url + "/v1/objects/sec/k", data=b"original").status_code == 201
    yield c
    assert not c.cleanup()


def unchanged(c):
    """The bucket and its object are as they were."""
    r = c.http.get(c.url + "/v1/objects/sec/k")
    assert r.status_code == 200 and r.content == b"original", r.text
    names = [o["name"] for o in c.http.get(c.url + "/v1/buckets/sec/objects").json()["objects"]]
    assert "k" in names and "new" not in names, names


def owner_of(c, name):
    r = c.http.get(c.url + "/v1/objects/sec/" + name, allow_redirects=False)
    assert r.status_code == 307
    return r.json()["target"], r.headers["Location"]


def target_url(c, tid):
    for n in c.cmap()["nodes"]:
        if n["id"] == tid:
            return n["url"]
    raise AssertionError(tid)


def presign(url, method="GET", expires=300, key=(AK, SK)):
    from botocore.auth import S3SigV4QueryAuth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    req = AWSRequest(method=method, url=url)
    S3SigV4QueryAuth(Credentials(*key), "s3", "us-east-1", expires=expires).add_auth(req)
    return req.url


# (method, path, body, the normal status with valid credentials)
PROXY_ENDPOINTS = [
    ("GET", "/v1/buckets", None, 200),
    ("PUT", "/v1/buckets/made", None, 201),
    ("HEAD", "/v1/buckets/sec", None, 200),
    ("GET", "/v1/buckets/sec?props", None, 200),
    ("PATCH", "/v1/buckets/sec", b"{}", 200),
    ("GET", "/v1/buckets/sec/objects", None, 200),
    ("PUT", "/v1/objects/sec/new", b"new bytes", 307),
    ("GET", "/v1/objects/sec/k", None, 307),
    ("HEAD", "/v1/objects/sec/k", None, 307),
    ("DELETE", "/v1/objects/sec/k", None, 307),
    ("DELETE", "/v1/buckets/sec", None, None),  # refused before the body matters
    ("POST", "/v1/tokens", None, 200),
    ("GET", "/v1/jobs", None, 200),
    ("GET", "/v1/buckets/sec/summary", None, 200),
    ("POST", "/v1/jobs", b'{"kind": "prefetch", "bucket": "sec", "names": ["k"]}', 400),
    ("GET", "/v1/jobs/nosuchjob", None, 404),
    ("GET", "/v1/cluster/space", None, 200),
    ("PUT", "/v1/internal/push", b"{}", None),
    ("POST", "/v1/cluster/join", b"{}", None),
    ("POST", "/v1/cluster/keepalive", b"{}", None),
]


def refused_in_the_end(r, method):
    """403, or a read sent on to the object's target (which serves an
    unsigned read only of a public-read object) that ends in 403 there."""
    if r.status_code == 307 and method in ("GET", "HEAD"):
        r = requests.request(method, r.headers["Location"], allow_redirects=False)
    return r.status_code == 403


def test_proxy_endpoints_refuse_unsigned_and_tampered(kc):
    for method, path, body, _ in PROXY_ENDPOINTS:
        url = kc.url + path
        # unsigned
        r = requests.request(method, url, data=body, allow_redirects=False)
        assert refused_in_the_end(r, method), (method, path, r.status_code, r.text)
        # signed with a wrong secret
        r = requests.request(method, url, data=body, allow_redirects=False,
                             auth=SigV4(AK, "wrong-secret-0000"))
        assert r.status_code == 403, (method, path, r.status_code)
        # signed for another path, sent to this one (tampered)
        p = requests.Request(method, kc.url + "/v1/buckets/other", data=body,
                             auth=SigV4(AK, SK)).prepare()
        p.url = url
        r = requests.Session().send(p, allow_redirects=False)
        assert r.status_code == 403, (method, path, r.status_code)
        # the Authorization header stripped, the rest of the signature kept
        p = requests.Request(method, url, data=body, auth=SigV4(AK, SK)).prepare()
        del p.headers["Authorization"]
        r = requests.Session().send(p, allow_redirects=False)
        assert refused_in_the_end(r, method), (method, path, r.status_code)
    unchanged(kc)


def test_proxy_endpoints_serve_valid_credentials(kc):
    for method, path, body, want in PROXY_ENDPOINTS:
        if want is None:
            continue
        r = kc.http.request(method, kc.url + path, data=body, allow_redirects=False)
        assert r.status_code == want, (method, path, r.status_code, r.text)
        if method == "DELETE":  # only the redirect was asked for: the object stays
            continue
    unchanged(kc)
    # cluster messages take only the cluster's signature, never a client's
    for path in ("/v1/internal/push", "/v1/cluster/join", "/v1/cluster/keepalive"):
        r = kc.http.request("PUT" if "push" in path else "POST", kc.url + path, data=b"{}")
        assert r.status_code == 403, path


def test_curl_aws_sigv4_and_presigned(kc):
    base = kc.url + "/v1/objects/sec/curl%20obj"
    with tempfile.NamedTemporaryFile() as f:
        f.write(b"from curl")
        f.flush()
        auth = ["--aws-sigv4", "aws:amz:us-east-1:s3", "--user", "%s:%s" % (AK, SK)]
        out = subprocess.run(["curl", "-sf", "-L", *auth, "-T", f.name, base],
                             capture_output=True)
        assert out.returncode == 0, out
    out = subprocess.run(["curl", "-sf", "-L", *auth, base], capture_output=True)
    assert out.returncode == 0 and out.stdout == b"from curl"
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-L", base],
                         capture_output=True, text=True)
    assert out.stdout == "403"
    # a presigned URL works once, for its own method and path, until it expires
    url = presign(base)
    r = requests.get(url)
    assert r.status_code == 200 and r.content == b"from curl"
    assert requests.get(url.replace("curl%20obj", "k")).status_code == 403
    assert requests.put(url, data=b"x").status_code == 403
    short = presign(base, expires=1)
    time.sleep(2.1)
    r = requests.get(short)
    assert r.status_code == 403 and "expired" in r.text, r.text
    # the other configured key is verified too, and held to the bucket's owner
    r = requests.get(presign(base, key=("OTHER", "other-secret-99")))
    assert r.status_code == 403 and "access denied" in r.text.lower(), r.text


def test_bearer_tokens(kc):
    r = kc.http.post(kc.url + "/v1/tokens", params={"ttl_s": "600"})
    assert r.status_code == 200, r.text
    tok = r.json()["token"]
    assert r.json()["access_key"] == AK and r.json()["expires"] > time.time() + 500
    h = {"Authorization": "Bearer " + tok}
    g = requests.get(kc.url + "/v1/objects/sec/k", headers=h)
    assert g.status_code == 200 and g.content == b"original"
    assert requests.get(kc.url + "/v1/buckets", headers=h).status_code == 200
    # straight to a target, checked there without asking anyone
    tid, _ = owner_of(kc, "k")
    g = requests.get(target_url(kc, tid) + "/v1/objects/sec/k", headers=h)
    assert g.status_code == 200 and g.content == b"original"
    # tampered, or used to mint another token, or expired: refused
    bad = {"Authorization": "Bearer " + tok[:-1] + ("0" if tok[-1] != "0" else "1")}
    assert requests.get(kc.url + "/v1/objects/sec/k", headers=bad).status_code == 403
    assert requests.post(kc.url + "/v1/tokens", headers=h).status_code == 403
    assert kc.http.post(kc.url + "/v1/tokens", params={"ttl_s": "0"}).status_code == 400
    assert kc.http.post(kc.url + "/v1/tokens",
                        params={"ttl_s": str(8 * 86400)}).status_code == 400
    short = kc.http.post(kc.url + "/v1/tokens", params={"ttl_s": "1"}).json()["token"]
    time.sleep(2.1)
    r = requests.get(kc.url + "/v1/buckets", headers={"Authorization": "Bearer " + short})
    assert r.status_code == 403 and "expired" in r.text


def test_target_endpoints(kc):
    tid, loc = owner_of(kc, "k")
    t = target_url(kc, tid)
    other = [n["url"] for n in kc.cmap()["nodes"] if n["role"] == "target" and n["id"] != tid][0]
    # the redirect's signed URL is served as it is
    assert requests.get(loc).content == b"original"
    # stripped of its signature, of its expiry, or tampered: refused
    stripped = loc[:loc.rindex("&shoal_sig=")]
    assert requests.get(stripped).status_code == 403
    u = urllib.parse.urlsplit(loc)
    assert requests.get(t + u.path).status_code == 403
    assert requests.get(loc + "&extra=1").status_code == 403
    assert requests.get(loc.replace("/sec/k?", "/sec/kk?")).status_code == 403
    assert requests.delete(loc).status_code == 403  # signed for GET
    sig = loc[loc.rindex("=") + 1:]
    flipped = loc[:-len(sig)] + ("0" if sig[0] != "0" else "1") + sig[1:]
    assert requests.get(flipped).status_code == 403
    # unsigned object requests of every method, on the owner and another target
    # (which sends a read on to the owner, where it is refused)
    for base in (t, other):
        for m, body in (("GET", None), ("HEAD", None), ("PUT", b"evil"), ("DELETE", None)):
            r = requests.request(m, base + "/v1/objects/sec/k", data=body, allow_redirects=False)
            assert refused_in_the_end(r, m), (base, m, r.status_code, r.text)
        # S3 at the target's root
        for m, body in (("GET", None), ("PUT", b"evil"), ("DELETE", None)):
            r = requests.request(m, base + "/sec/k", data=body, allow_redirects=False)
            assert refused_in_the_end(r, m), (base, m, r.status_code)
        # internal endpoints: not even a client's valid signature opens them
        for path in ("/v1/internal/list?provider=shoal&bucket=sec",
                     "/v1/internal/uploads?bucket=sec",
                     "/v1/internal/list-remote?provider=shoal&bucket=sec",
                     "/v1/internal/jobs", "/v1/internal/space"):
            assert requests.get(base + path).status_code == 403, path
            assert kc.http.get(base + path).status_code == 403, path
        assert requests.put(base + "/v1/internal/push", data=b"{}").status_code == 403
    # a client's own signature, straight to the owner
    g = kc.http.get(t + "/v1/objects/sec/k", allow_redirects=False)
    assert g.status_code == 200 and g.content == b"original"
    unchanged(kc)
    # a redirect replayed after its expiry (redirect_ttl_s 3)
    time.sleep(4.1)
    assert requests.get(loc).status_code == 403
    unchanged(kc)


def test_loader_signs_in_every_mode(kc):
    keys = ["--access-key", AK, "--secret-key", SK]
    common = ["--endpoint", kc.url, "--bucket", "sec", "--num-objects", "10", "--prefix",
              "ld/", "--min-size", "1KiB", "--max-size", "1KiB", "--stats-interval", "0",
              "--json"]
    out = json.loads(loader(*common, *keys, "--pct-put", "100", "--epochs", "1").stdout)
    assert out["ops"]["PUT"]["count"] == 10 and out["ops"]["PUT"]["errors"] == {}
    for mode in ("shoal", "direct"):
        out = json.loads(loader(*common, *keys, "--mode", mode, "--epochs", "1",
                                "--verify").stdout)
        assert out["ops"]["GET"]["count"] == 10 and out["ops"]["GET"]["errors"] == {}, out
    s3 = ["--endpoint", kc.url + "/s3", "--bucket", "sec", "--mode", "s3", "--num-objects",
          "10", "--prefix", "ld/", "--epochs", "1", "--stats-interval", "0", "--json"]
    out = json.loads(loader(*s3, *keys).stdout)
    assert out["ops"]["GET"]["count"] == 10 and out["ops"]["GET"]["errors"] == {}, out
    # without keys the loader is told no, clearly
    p = loader(*common, "--epochs", "1", check=False)
    assert p.returncode != 0 and "403" in p.stderr


def daemon(*args, timeout=5):
    binary = os.path.join(ROOT, BUILD, "bin", "shoal-proxy")
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=timeout,
                          env=env)


def test_cluster_secret_is_required_from_a_private_file():
    d = tempfile.mkdtemp(prefix="shoal-secret-")
    port = free_port_block(1)
    base = ["--port", str(port), "--state_dir", os.path.join(d, "state")]
    p = daemon(*base)
    assert p.returncode != 0 and "openssl rand" in p.stderr, p.stderr
    secret = os.path.join(d, "cluster.secret")
    with open(secret, "w") as f:
        f.write("0123456789abcdef0123456789abcdef\n")
    os.chmod(secret, 0o644)
    p = daemon(*base, "--cluster_secret_file", secret)
    assert p.returncode != 0 and "chmod 600" in p.stderr, p.stderr
    # the value itself is not accepted on the command line
    p = daemon(*base, "--cluster_secret", "0123456789abcdef0123456789abcdef")
    assert p.returncode != 0 and "unknown option" in p.stderr
    os.chmod(secret, 0o600)
    # no keys on a non-loopback address: refused, unless allowed
    p = daemon(*base, "--cluster_secret_file", secret, "--host", "0.0.0.0")
    assert p.returncode != 0 and "allow_anonymous" in p.stderr, p.stderr
    binary = os.path.join(ROOT, BUILD, "bin", "shoal-proxy")
    proc = subprocess.Popen([binary, *base, "--cluster_secret_file", secret, "--host",
                             "0.0.0.0", "--allow_anonymous", "true"],
                            stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0"))
    try:
        ok = False
        for _ in range(100):
            try:
                if requests.get("http://127.0.0.1:%d/v1/health" % port, timeout=1).ok:
                    ok = True
                    break
            except requests.RequestException:
                pass
            time.sleep(0.1)
        assert ok
    finally:
        proc.terminate()
        err = proc.communicate(timeout=10)[1]
    assert "ANY client" in err
    # the cluster map and metrics are readable without keys, and reveal no secret
    # (checked on the keyed cluster in test_open_endpoints)


def test_open_endpoints(kc):
    secret = open(os.path.join(kc.data, "cluster.secret")).read().strip()
    for path in ("/v1/health", "/v1/cluster", "/metrics"):
        r = requests.get(kc.url + path)
        assert r.status_code == 200, path
        assert secret not in r.text and SK not in r.text and "other-secret" not in r.text


def test_second_proxy_forwards_signed_changes():
    c = Cluster(proxies=2, targets=1, mountpaths=1, extra="--auth_keys %s:%s" % (AK, SK))
    c.start()
    try:
        p1 = c.node_url("p1")
        c.wait_healthy("p1")
        assert requests.put(p1 + "/v1/buckets/via1").status_code == 403
        r = c.http.put(p1 + "/v1/buckets/via1")  # forwarded to the primary, as p1
        assert r.status_code == 201, r.text
        assert c.http.head(c.url + "/v1/buckets/via1").status_code == 200
        assert c.http.put(p1 + "/v1/objects/via1/o", data=b"o").status_code == 201
        assert c.http.get(c.url + "/v1/objects/via1/o").content == b"o"
        r = c.http.put(p1 + "/v1/buckets/via1")  # the primary's refusal, passed on
        assert r.status_code == 409 and "already exists" in r.json()["error"], r.text
        r = c.http.patch(p1 + "/v1/buckets/via1", data=b'{"labels": {"team": "a"}}')
        assert r.status_code == 200 and r.json()["props"]["labels"] == {"team": "a"}, r.text
        # S3 bucket changes through the second proxy reach the primary too
        s3 = boto3.client("s3", endpoint_url=p1 + "/s3", aws_access_key_id=AK,
                          aws_secret_access_key=SK, region_name="us-east-1")
        s3.create_bucket(Bucket="via-s3")
        assert c.http.head(c.url + "/v1/buckets/via-s3").status_code == 200
        # again: us-east-1's 200 for a bucket one owns
        assert s3.create_bucket(Bucket="via-s3")["ResponseMetadata"]["HTTPStatusCode"] == 200
        s3.put_bucket_tagging(Bucket="via-s3", Tagging={"TagSet": [{"Key": "k", "Value": "v"}]})
        assert s3.get_bucket_tagging(Bucket="via-s3")["TagSet"] == [{"Key": "k", "Value": "v"}]
        s3.delete_bucket(Bucket="via-s3")
        assert c.http.head(c.url + "/v1/buckets/via-s3").status_code == 404
        with pytest.raises(ClientError) as e:
            s3.delete_bucket(Bucket="via-s3")
        assert e.value.response["Error"]["Code"] == "NoSuchBucket"
    finally:
        assert not c.cleanup()
