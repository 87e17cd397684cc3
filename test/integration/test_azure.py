"""Azure Blob Storage as a backend, against Azurite (a real Azure Storage
emulator that checks SharedKey signatures) with Azure's own client
(@azure/storage-blob, test/azblob.mjs) on the other side: containers as
`?provider=azure` buckets (the environment's default profile) and as
`azure://` backends of Shoal buckets through profiles (a second account,
SharedKey or a SAS token); cold and warm GETs with one Azure GET however
many ask, ranges, HEAD, validate_warm_get, paged listings, write-through
PUTs (a block blob of several blocks past 16 MiB), DELETE, prefetch and
copy jobs, and the errors: a wrong key 403 naming the profile, an
unreachable account 502."""
import concurrent.futures
import hashlib
import os
import re

import pytest

from conftest import Azurite, Cluster

SECOND = ("shoalacct2", "c2hvYWwtc2Vjb25kLWFjY291bnQta2V5LTAxMjM0NTY3ODk=")


@pytest.fixture(scope="module")
def az():
    srv = Azurite({"devstoreaccount1": Azurite.DEV_KEY, SECOND[0]: SECOND[1]}).start()
    for acct in (None, SECOND[0]):
        srv.client("mk", "data", account=acct)
    yield srv
    srv.cleanup()


@pytest.fixture(scope="module")
def ac(az):
    c = Cluster(targets=2, mountpaths=1, env=az.env()).start()
    yield c
    assert not c.cleanup()


def gets(az, account, container, name):
    path = "/%s/%s/%s" % (account, container, name)
    return sum(1 for m, p in az.requests() if m == "GET" and p.split("?")[0] == path)


def obj(c, b, name, provider="azure"):
    return "%s/v1/objects/%s/%s%s" % (c.url, b, name, "?provider=" + provider if provider else "")


def test_cold_warm_range_head(ac, az):
    body = os.urandom(200000)
    az.client("put", "data", "dir/one.bin", body)
    with concurrent.futures.ThreadPoolExecutor(6) as ex:
        got = list(ex.map(lambda _: ac.http.get(obj(ac, "data", "dir/one.bin"), timeout=60),
                          range(6)))
    assert all(r.status_code == 200 and r.content == body for r in got), got[0].text
    assert gets(az, "devstoreaccount1", "data", "dir/one.bin") == 1
    r = ac.http.get(obj(ac, "data", "dir/one.bin"))
    assert r.headers["X-Shoal-Cache"] == "hit" and r.content == body
    r = ac.http.get(obj(ac, "data", "dir/one.bin"), headers={"Range": "bytes=10-19"})
    assert r.status_code == 206 and r.content == body[10:20]
    az.client("put", "data", "dir/head me", b"12345")
    r = ac.http.head(obj(ac, "data", "dir/head%20me"), allow_redirects=True)
    assert r.status_code == 200 and r.headers["Content-Length"] == "5"
    assert r.headers["ETag"].startswith('"0x') and r.headers.get("Last-Modified")
    r = ac.http.get(obj(ac, "data", "dir/none"), timeout=60)
    assert r.status_code == 404 and "azure://data" in r.text


def test_listing_pages_and_summary(ac, az):
    for i in range(5):
        az.client("put", "data", "pages/%d" % i, b"x" * (i + 1))
    names, token = [], ""
    for _ in range(10):
        r = ac.http.get("%s/v1/buckets/data/objects?provider=azure&prefix=pages/&limit=2"
                        "&token=%s" % (ac.url, token))
        assert r.status_code == 200, r.text
        page = r.json()
        names += [(o["name"], o["size"]) for o in page["objects"]]
        token = page["next"]
        if not token:
            break
    assert names == [("pages/%d" % i, i + 1) for i in range(5)]
    r = ac.http.get(ac.url + "/v1/buckets/data/summary?provider=azure&prefix=pages/")
    assert r.json()["objects"]["total"] == 5, r.text


def test_write_through_small_and_in_blocks(ac, az):
    r = ac.http.put(obj(ac, "data", "up/small"), data=b"small one")
    assert r.status_code == 201, r.text
    assert az.client("get", "data", "up/small") == b"small one"
    big = os.urandom(20 << 20)          # three blocks of 8 MiB
    r = ac.http.put(obj(ac, "data", "up/big"), data=big, timeout=120)
    assert r.status_code == 201, r.text
    got = az.client("get", "data", "up/big")
    assert hashlib.sha256(got).digest() == hashlib.sha256(big).digest()
    blocks = [p for m, p in az.requests() if m == "PUT" and "comp=block&" in p and "up/big" in p]
    assert len(blocks) == 3
    assert ac.http.get(obj(ac, "data", "up/big")).content == big
    r = ac.http.delete(obj(ac, "data", "up/small"))
    assert r.status_code == 204
    assert b"up/small" not in az.client("ls", "data")


def test_validate_warm_get(ac, az):
    r = ac.http.put(ac.url + "/v1/buckets/val", json={"backend": "azure://data",
                                                      "validate_warm_get": True})
    assert r.status_code == 201, r.text
    az.client("put", "data", "v/x", b"first")
    assert ac.http.get(obj(ac, "val", "v/x", None)).content == b"first"
    az.client("put", "data", "v/x", b"second")
    assert ac.http.get(obj(ac, "val", "v/x", None)).content == b"second"
    az.client("rm", "data", "v/x")
    assert ac.http.get(obj(ac, "val", "v/x", None), timeout=60).status_code == 404


def test_profiles_shared_key_and_sas(ac, az):
    p = {"provider": "azure", "endpoint": az.endpoint(SECOND[0]), "account": SECOND[0],
         "account_key": SECOND[1]}
    assert ac.http.put(ac.url + "/v1/backends/second", json=p).status_code == 201
    shown = ac.http.get(ac.url + "/v1/backends/second").json()
    assert shown["secrets"] == ["account_key"] and SECOND[1] not in str(shown)
    assert ac.http.put(ac.url + "/v1/buckets/two", json={"backend": "azure://data",
                                                         "profile": "second"}).status_code == 201
    az.client("put", "data", "same", b"second account", account=SECOND[0])
    az.client("put", "data", "same", b"first account")
    assert ac.http.get(obj(ac, "two", "same", None)).content == b"second account"
    assert ac.http.get(obj(ac, "data", "same")).content == b"first account"
    assert ac.http.put(obj(ac, "two", "w", None), data=b"w2").status_code == 201
    assert az.client("get", "data", "w", account=SECOND[0]) == b"w2"
    # a SAS token instead of the key
    sas = az.client("sas", "data", "rwdlc", account=SECOND[0]).decode()
    assert ac.http.put(ac.url + "/v1/backends/bysas", json={
        "provider": "azure", "endpoint": az.endpoint(SECOND[0]), "account": SECOND[0],
        "sas": sas}).status_code == 201
    assert ac.http.put(ac.url + "/v1/buckets/sas", json={"backend": "azure://data",
                                                         "profile": "bysas"}).status_code == 201
    assert ac.http.get(obj(ac, "sas", "same", None)).content == b"second account"
    names = [o["name"] for o in ac.http.get(ac.url + "/v1/buckets/sas/objects").json()["objects"]]
    assert "same" in names and "w" in names
    # a wrong key: 403 naming the profile, never the secret
    bad = dict(p, account_key="d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy0wMTIzNDU2Nzg5")
    assert ac.http.put(ac.url + "/v1/backends/badkey", json=bad).status_code == 201
    assert ac.http.put(ac.url + "/v1/buckets/bad", json={"backend": "azure://data",
                                                         "profile": "badkey"}).status_code == 201
    r = ac.http.get(obj(ac, "bad", "same", None), timeout=60)
    assert r.status_code == 403 and "profile badkey" in r.text and bad["account_key"] not in r.text
    # the wrong provider's fields, and a key that is not base64
    r = ac.http.put(ac.url + "/v1/backends/x", json=dict(p, region="r"))
    assert r.status_code == 400 and "region" in r.text
    r = ac.http.put(ac.url + "/v1/backends/x", json=dict(p, account_key="not base64!"))
    assert r.status_code == 400 and "base64" in r.text
    r = ac.http.put(ac.url + "/v1/buckets/mix", json={"backend": "s3://data", "profile": "second"})
    assert r.status_code == 400 and "azure" in r.text


def test_metrics_name_the_provider(ac, az):
    az.client("put", "data", "m/x", b"metered")
    assert ac.http.get(obj(ac, "data", "m/x")).content == b"metered"
    text = "".join(ac.http.get(ac.node_url(t) + "/metrics").text for t in ac.target_names())
    host = "127.0.0.1:%d" % az.port
    assert re.search(r'shoal_backend_requests_total\{[^}]*backend="%s",provider="azure",'
                     r'op="get"\} [1-9]' % re.escape(host), text)
    assert re.search(r'shoal_backend_bytes_total\{[^}]*backend="%s",provider="azure",'
                     r'direction="in"\} [1-9]' % re.escape(host), text)


def test_jobs_prefetch_and_copy(ac, az):
    for i in range(4):
        az.client("put", "data", "job/%d" % i, b"job %d" % i)
    r = ac.http.post(ac.url + "/v1/jobs", json={"kind": "prefetch", "bucket": "data",
                                                "provider": "azure", "prefix": "job/"})
    assert r.status_code == 201, r.text
    j = ac.http.get(ac.url + "/v1/jobs/%s?wait=60" % r.json()["id"]).json()
    assert j["state"] == "finished" and j["fetched"] == 4, j
    assert ac.http.put(ac.url + "/v1/buckets/copies").status_code == 201
    r = ac.http.post(ac.url + "/v1/jobs", json={"kind": "copy", "bucket": "data",
                                                "provider": "azure", "prefix": "job/",
                                                "to": "copies"})
    j = ac.http.get(ac.url + "/v1/jobs/%s?wait=60" % r.json()["id"]).json()
    assert j["state"] == "finished" and j["copied"] == 4, j
    assert ac.http.get(obj(ac, "copies", "job/2", None)).content == b"job 2"


def test_unreachable_account_is_502(az):
    env = dict(az.env(), AZURE_STORAGE_ENDPOINT="http://127.0.0.1:9/devstoreaccount1")
    c = Cluster(targets=1, mountpaths=1, env=env,
                extra="--backend_retries 0 --backend_timeout_s 5").start()
    try:
        r = c.http.get(obj(c, "data", "x"), timeout=60)
        assert r.status_code == 502 and "azure://data" in r.text
    finally:
        assert not c.cleanup()
