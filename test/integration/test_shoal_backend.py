"""Another Shoal cluster as a backend (two tiers: a near cluster caching a
far one), through the far cluster's native API with its own keys: a
profile of provider shoal names one of its proxies, whose redirects to the
owning targets the near cluster follows. Cold and warm GETs with one far
GET however many ask, ranges, HEAD, validate_warm_get, paged listings
merged with what is cached, write-through PUTs (a large one sent again
after the redirect), DELETE, write-back, prefetch and copy jobs, a far
bucket of another provider, metrics with provider="shoal", and the errors:
a wrong secret 403 naming the profile (never the secret), an unreachable
cluster 502, a bucket of the far cluster that does not exist 404."""
import concurrent.futures
import hashlib
import os
import re
import time

import pytest
import requests

from conftest import Cluster, SigV4

FAR_KEYS = {"farops": "far-ops-secret-1", "tier": "tier-secret-22"}
NEAR_KEYS = {"nearops": "near-ops-secret-3"}


def keys(d):
    return ",".join("%s:%s" % kv for kv in d.items())


@pytest.fixture(scope="module")
def tiers():
    far = Cluster(targets=2, mountpaths=1,
                  extra="--auth_keys %s --admin_keys farops" % keys(FAR_KEYS)).start()
    near = Cluster(targets=2, mountpaths=1,
                   extra="--auth_keys %s --admin_keys nearops --backend_retries 1"
                         % keys(NEAR_KEYS)).start()
    far.http.auth = SigV4("farops", FAR_KEYS["farops"])
    near.http.auth = SigV4("nearops", NEAR_KEYS["nearops"])
    # the near cluster's key on the far one owns the bucket it caches
    r = requests.put(far.url + "/v1/buckets/data", auth=SigV4("tier", FAR_KEYS["tier"]))
    assert r.status_code == 201, r.text
    r = near.http.put(near.url + "/v1/backends/far", json={
        "provider": "shoal", "endpoint": far.url, "access_key": "tier",
        "secret_key": FAR_KEYS["tier"]})
    assert r.status_code == 201, r.text
    r = near.http.put(near.url + "/v1/buckets/near",
                      json={"backend": "shoal://data", "profile": "far"})
    assert r.status_code == 201, r.text
    yield near, far
    bad = near.cleanup() + far.cleanup()
    assert not bad, bad


def url(c, b, name=""):
    return "%s/v1/objects/%s/%s" % (c.url, b, name)


def far_put(far, name, data):
    r = far.http.put(url(far, "data", name), data=data)
    assert r.status_code == 201, r.text


def far_gets(near):
    """GETs the near cluster's targets have sent to the far one."""
    n = 0
    for t in near.target_names():
        text = near.http.get(near.node_url(t) + "/metrics").text
        for m in re.finditer(r'shoal_backend_requests_total\{[^}]*provider="shoal",op="get"\} '
                             r'(\d+)', text):
            n += int(m.group(1))
    return n


def test_cold_warm_range_head(tiers):
    near, far = tiers
    body = os.urandom(300000)
    far_put(far, "dir/one.bin", body)
    before = far_gets(near)
    with concurrent.futures.ThreadPoolExecutor(6) as ex:
        got = list(ex.map(lambda _: near.http.get(url(near, "near", "dir/one.bin"), timeout=60),
                          range(6)))
    assert all(r.status_code == 200 and r.content == body for r in got), \
        [(r.status_code, r.text[:200]) for r in got if r.status_code != 200]
    assert far_gets(near) - before == 1
    r = near.http.get(url(near, "near", "dir/one.bin"))
    assert r.headers["X-Shoal-Cache"] == "hit" and r.content == body
    r = near.http.get(url(near, "near", "dir/one.bin"), headers={"Range": "bytes=10-19"})
    assert r.status_code == 206 and r.content == body[10:20]
    h = near.http.head(url(near, "near", "dir/one.bin"), allow_redirects=True)
    fh = far.http.head(url(far, "data", "dir/one.bin"), allow_redirects=True)
    assert h.status_code == 200 and int(h.headers["Content-Length"]) == len(body)
    assert h.headers["ETag"] == fh.headers["ETag"], (h.headers, fh.headers)
    r = near.http.get(url(near, "near", "dir/none"), timeout=60)
    assert r.status_code == 404, r.text


def test_listing_merged_and_paged(tiers):
    near, far = tiers
    for i in range(7):
        far_put(far, "ls/%d" % i, b"x" * (i + 1))
    assert near.http.get(url(near, "near", "ls/3")).status_code == 200
    names, token = [], ""
    for _ in range(10):
        r = near.http.get(near.url + "/v1/buckets/near/objects",
                          params={"prefix": "ls/", "limit": 3, "token": token})
        assert r.status_code == 200, r.text
        j = r.json()
        names += [(o["name"], o["size"], o["cached"]) for o in j["objects"]]
        token = j["next"]
        if not token:
            break
    assert names == [("ls/%d" % i, i + 1, i == 3) for i in range(7)]
    r = near.http.get(near.url + "/v1/buckets/near/objects",
                      params={"prefix": "ls/", "cached": "true"})
    assert [o["name"] for o in r.json()["objects"]] == ["ls/3"]
    r = near.http.get(near.url + "/v1/buckets/near/summary", params={"prefix": "ls/"})
    assert r.json()["objects"]["total"] == 7, r.text


def test_write_through_delete(tiers):
    near, far = tiers
    r = near.http.put(url(near, "near", "up/small"), data=b"small one")
    assert r.status_code == 201, r.text
    assert far.http.get(url(far, "data", "up/small")).content == b"small one"
    # sent to the far proxy, redirected, and sent again to the owner
    big = os.urandom(24 << 20)
    r = near.http.put(url(near, "near", "up/big"), data=big, timeout=120)
    assert r.status_code == 201, r.text
    got = far.http.get(url(far, "data", "up/big"), timeout=60).content
    assert hashlib.sha256(got).digest() == hashlib.sha256(big).digest()
    assert near.http.get(url(near, "near", "up/big"), timeout=60).content == big
    r = near.http.delete(url(near, "near", "up/small"))
    assert r.status_code == 204, r.text
    assert far.http.get(url(far, "data", "up/small")).status_code == 404


def test_validate_warm_get(tiers):
    near, far = tiers
    r = near.http.put(near.url + "/v1/buckets/val", json={
        "backend": "shoal://data", "profile": "far", "validate_warm_get": True})
    assert r.status_code == 201, r.text
    far_put(far, "v/x", b"first")
    assert near.http.get(url(near, "val", "v/x")).content == b"first"
    far_put(far, "v/x", b"second")
    assert near.http.get(url(near, "val", "v/x")).content == b"second"
    assert far.http.delete(url(far, "data", "v/x")).status_code == 204
    assert near.http.get(url(near, "val", "v/x"), timeout=60).status_code == 404


def test_write_back(tiers):
    near, far = tiers
    r = near.http.put(near.url + "/v1/buckets/wb", json={
        "backend": "shoal://data", "profile": "far", "write_policy": "write-back"})
    assert r.status_code == 201, r.text
    r = near.http.put(url(near, "wb", "later/one"), data=b"written back")
    assert r.status_code == 201, r.text
    end = time.time() + 60
    while time.time() < end:
        if far.http.get(url(far, "data", "later/one")).status_code == 200:
            break
        time.sleep(0.3)
    assert far.http.get(url(far, "data", "later/one")).content == b"written back"


def test_jobs_prefetch_and_copy(tiers):
    near, far = tiers
    for i in range(5):
        far_put(far, "job/%d" % i, b"job %d" % i)
    r = near.http.post(near.url + "/v1/jobs", json={"kind": "prefetch", "bucket": "near",
                                                    "prefix": "job/"})
    assert r.status_code == 201, r.text
    j = near.http.get(near.url + "/v1/jobs/%s?wait=60" % r.json()["id"]).json()
    assert j["state"] == "finished" and j["fetched"] == 5, j
    r = near.http.get(near.url + "/v1/buckets/near/objects",
                      params={"prefix": "job/", "cached": "true"})
    assert len(r.json()["objects"]) == 5
    assert near.http.put(near.url + "/v1/buckets/copies").status_code == 201
    r = near.http.post(near.url + "/v1/jobs", json={"kind": "copy", "bucket": "near",
                                                    "prefix": "job/", "to": "copies"})
    j = near.http.get(near.url + "/v1/jobs/%s?wait=60" % r.json()["id"]).json()
    assert j["state"] == "finished" and j["copied"] == 5, j
    assert near.http.get(url(near, "copies", "job/4")).content == b"job 4"


def test_far_bucket_named_with_its_provider(tiers):
    near, far = tiers
    far_put(far, "prov/x", b"by provider")
    r = near.http.put(near.url + "/v1/buckets/byprov",
                      json={"backend": "shoal://shoal/data", "profile": "far"})
    assert r.status_code == 201, r.text
    assert near.http.get(url(near, "byprov", "prov/x")).content == b"by provider"
    r = near.http.put(near.url + "/v1/buckets/nofar",
                      json={"backend": "shoal://missing", "profile": "far"})
    assert r.status_code == 201, r.text
    r = near.http.get(url(near, "nofar", "x"), timeout=60)
    assert r.status_code == 404 and "shoal://missing" in r.text, r.text


def test_metrics_name_the_provider(tiers):
    near, far = tiers
    far_put(far, "m/x", b"metered")
    assert near.http.get(url(near, "near", "m/x")).content == b"metered"
    text = "".join(near.http.get(near.node_url(t) + "/metrics").text
                   for t in near.target_names())
    host = "127.0.0.1:%d" % far.port
    assert re.search(r'shoal_backend_bytes_total\{[^}]*backend="%s",provider="shoal",'
                     r'direction="in"\} [1-9]' % re.escape(host), text)


def test_profile_validation_and_errors(tiers):
    near, far = tiers
    base = {"provider": "shoal", "endpoint": far.url, "access_key": "tier"}
    r = near.http.put(near.url + "/v1/backends/x", json={"provider": "shoal"})
    assert r.status_code == 400 and "endpoint" in r.text
    r = near.http.put(near.url + "/v1/backends/x", json=dict(base, region="r",
                                                            secret_key="s"))
    assert r.status_code == 400 and "region" in r.text
    r = near.http.put(near.url + "/v1/buckets/noprof", json={"backend": "shoal://data"})
    assert r.status_code == 400 and "profile" in r.text
    r = near.http.put(near.url + "/v1/buckets/badname", json={"backend": "shoal://a/b/c",
                                                              "profile": "far"})
    assert r.status_code == 400, r.text
    # a wrong secret: 403 naming the profile, never the secret
    assert near.http.put(near.url + "/v1/backends/wrong", json=dict(
        base, secret_key="wrong-secret-zz")).status_code == 201
    assert near.http.put(near.url + "/v1/buckets/deny", json={
        "backend": "shoal://data", "profile": "wrong"}).status_code == 201
    far_put(far, "deny/x", b"x")
    r = near.http.get(url(near, "deny", "deny/x"), timeout=60)
    assert r.status_code == 403 and "profile wrong" in r.text and "wrong-secret" not in r.text
    shown = near.http.get(near.url + "/v1/backends/wrong").json()
    assert shown["secrets"] == ["secret_key"] and "wrong-secret" not in str(shown)
    # an unreachable cluster
    assert near.http.put(near.url + "/v1/backends/gone", json=dict(
        base, endpoint="http://127.0.0.1:9", secret_key="s")).status_code == 201
    assert near.http.put(near.url + "/v1/buckets/gone", json={
        "backend": "shoal://data", "profile": "gone"}).status_code == 201
    r = near.http.get(url(near, "gone", "x"), timeout=60)
    assert r.status_code == 502 and "shoal://data" in r.text, r.text
    # unsigned requests to the near cluster are refused before any backend
    r = requests.get(url(near, "near", "dir/one.bin"))
    assert r.status_code in (401, 403)
