"""Transforms (the registry): PUT/GET/DELETE /v1/transforms/NAME on a
cluster of two proxies with keys on: set through the second proxy
(forwarded to the primary, committed, pushed), listed by both, replaced,
deleted; admin keys only for changes, signed requests for reads; bad
specs and names 400; kept across a restart of the whole cluster (the
bucket metadata on every node's drive)."""
import pytest
import requests

from conftest import Cluster, SigV4

KEYS = {"ops": "ops-secret-444", "alice": "alice-secret-2"}


@pytest.fixture(scope="module")
def c():
    c = Cluster(proxies=2, targets=1, mountpaths=1,
                extra="--auth_keys %s --admin_keys ops" %
                      ",".join("%s:%s" % kv for kv in KEYS.items())).start()
    c.http.auth = SigV4("ops", KEYS["ops"])
    yield c
    assert not c.cleanup()


def test_set_list_replace_delete(c):
    p1 = c.node_url("p1")
    r = c.http.put(p1 + "/v1/transforms/ident", json={"command": ["/bin/cat"]})
    assert r.status_code == 201, r.text
    assert r.json() == {"name": "ident", "command": ["/bin/cat"]}
    r = c.http.put(c.url + "/v1/transforms/ident", json={"url": "http://127.0.0.1:9/"})
    assert r.status_code == 200, r.text
    for base in (c.url, p1):
        r = c.http.get(base + "/v1/transforms")
        assert r.status_code == 200, r.text
        assert r.json()["transforms"] == [{"name": "ident", "url": "http://127.0.0.1:9/"}]
        assert c.http.get(base + "/v1/transforms/ident").json()["url"] == "http://127.0.0.1:9/"
    alice = SigV4("alice", KEYS["alice"])
    assert requests.get(c.url + "/v1/transforms", auth=alice).status_code == 200
    assert requests.get(c.url + "/v1/transforms").status_code == 403
    r = requests.put(c.url + "/v1/transforms/mine", json={"command": ["/bin/cat"]}, auth=alice)
    assert r.status_code == 403 and "admin" in r.text
    assert requests.delete(c.url + "/v1/transforms/ident", auth=alice).status_code == 403
    assert c.http.delete(p1 + "/v1/transforms/ident").status_code == 204
    assert c.http.get(c.url + "/v1/transforms/ident").status_code == 404
    assert c.http.delete(c.url + "/v1/transforms/ident").status_code == 404


@pytest.mark.parametrize("spec,why", [
    ({}, "command or a url"),
    ({"command": "/bin/cat"}, "array"),
    ({"command": []}, "array"),
    ({"command": ["/bin/cat"], "url": "http://h/"}, "one of them"),
    ({"url": "ftp://h/"}, "http"),
    ({"url": "http://u:p@h/"}, "user information"),
    ({"comand": ["/bin/cat"]}, "unknown transform field"),
])
def test_bad_specs(c, spec, why):
    r = c.http.put(c.url + "/v1/transforms/bad", json=spec)
    assert r.status_code == 400 and why in r.text, r.text


def test_bad_name_and_method(c):
    r = c.http.put(c.url + "/v1/transforms/a%20b", json={"command": ["/bin/cat"]})
    assert r.status_code == 400 and "invalid transform name" in r.text
    r = c.http.post(c.url + "/v1/transforms/x", json={"command": ["/bin/cat"]})
    assert r.status_code == 405 and "PUT" in r.headers["Allow"]
    r = c.http.put(c.url + "/v1/transforms/x", data=b"{not json")
    assert r.status_code == 400


def test_inline_use_is_not_implemented_yet(c):
    assert c.http.put(c.url + "/v1/buckets/tb").status_code == 201
    assert c.http.put(c.url + "/v1/objects/tb/x", data=b"plain").status_code == 201
    r = c.http.get(c.url + "/v1/objects/tb/x?transform=ident")
    assert r.status_code == 501 and b"plain" not in r.content, r.text
    s3 = c.http.get(c.url + "/s3/tb/x?transform=ident")
    assert s3.status_code == 501 and b"plain" not in s3.content, s3.text
    assert c.http.get(c.url + "/v1/objects/tb/x").content == b"plain"


def test_kept_across_restart(c):
    r = c.http.put(c.url + "/v1/transforms/kept", json={"command": ["/bin/cat", "-u"]})
    assert r.status_code == 201, r.text
    c.stop()
    c.start()
    r = c.http.get(c.url + "/v1/transforms/kept")
    assert r.status_code == 200 and r.json()["command"] == ["/bin/cat", "-u"], r.text
