"""Backend profiles: one cluster fronting two S3 endpoints with different
keys at once (two s3rver instances, each accepting only its own key), a
profile standing for Google Cloud Storage's XML API (HMAC keys; s3rver
stands in for storage.googleapis.com) from the proxies' backends_file, the
environment as the default profile, and secrets never shown back.
s3rver refuses an access key it does not know but does not check SigV4
signatures (test_s3_backend.py has a Shoal cluster, which does, as the
backend), so a wrong credential here is a wrong key id."""
import json
import os
import stat
import subprocess
import tempfile

import pytest
import requests

from conftest import BUILD, ROOT, Cluster, S3rver, SigV4

KEYS = {"ops": "ops-secret-333", "alice": "alice-secret-1"}
ALPHA = ("ALPHAKEY", "alpha-secret-0123456789")
GCS = ("GOOG1EHMACKEYEXAMPLE", "gcs-hmac-secret-abcdefgh")   # a GCS HMAC key's shape
DEFAULT = ("DEFAULTKEY", "default-secret-98765")
SECRETS = (ALPHA[1], GCS[1], DEFAULT[1], "wrong-secret-zzz")


def session(key):
    s = requests.Session()
    if key:
        s.auth = SigV4(key, KEYS[key])
    return s


@pytest.fixture(scope="module")
def env():
    srv_default = S3rver(buckets=("remote",), key=DEFAULT).start()
    srv_alpha = S3rver(buckets=("remote",), key=ALPHA).start()
    srv_gcs = S3rver(buckets=("remote",), key=GCS).start()
    d = tempfile.mkdtemp(prefix="shoal-profiles-")
    path = os.path.join(d, "backends.json")
    with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        json.dump({"gcs": {"provider": "s3", "endpoint": srv_gcs.url, "region": "auto",
                           "access_key": GCS[0], "secret_key": GCS[1]}}, f)
    c = Cluster(proxies=2, targets=2, mountpaths=1, env=srv_default.env(),
                extra="--auth_keys %s --admin_keys ops --backends_file %s" %
                      (",".join("%s:%s" % kv for kv in KEYS.items()), path)).start()
    c.http.auth = SigV4("ops", KEYS["ops"])
    yield c, srv_default, srv_alpha, srv_gcs, path
    assert not c.cleanup()
    for s in (srv_default, srv_alpha, srv_gcs):
        s.cleanup()


def second_proxy(c):
    return c.node_url("p1")


def profile(srv, key, **kw):
    p = {"provider": "s3", "endpoint": srv.url, "region": "us-east-1",
         "access_key": key[0], "secret_key": key[1]}
    p.update(kw)
    return p


def test_two_endpoints_two_keys_at_once(env):
    c, srv_default, srv_alpha, srv_gcs, _ = env
    # set through the second proxy: forwarded to the primary, replicated
    r = c.http.put(second_proxy(c) + "/v1/backends/alpha", json=profile(srv_alpha, ALPHA))
    assert r.status_code == 201, r.text
    assert r.json()["secrets"] == ["secret_key"] and r.json()["access_key"] == ALPHA[0]
    r = c.http.put(c.url + "/v1/backends/alpha", json=profile(srv_alpha, ALPHA))
    assert r.status_code == 200, r.text           # the same again: replaced
    for srv, body in ((srv_default, b"default's"), (srv_alpha, b"alpha's"),
                      (srv_gcs, b"gcs's")):
        srv.client().put_object(Bucket="remote", Key="same/name", Body=body)
    for b, props in (("pa", {"backend": "s3://remote", "profile": "alpha"}),
                     ("pg", {"backend": "s3://remote", "profile": "gcs"}),
                     ("pd", {"backend": "s3://remote"})):
        r = c.http.put(c.url + "/v1/buckets/" + b, json=props)
        assert r.status_code == 201, r.text
    for b, want in (("pa", b"alpha's"), ("pg", b"gcs's"), ("pd", b"default's")):
        for _ in range(2):                        # cold, then warm
            r = c.http.get(c.url + "/v1/objects/%s/same/name" % b)
            assert r.status_code == 200, r.text
            assert r.content == want
    # writes go through to the profile's store, listings come from it
    r = c.http.put(c.url + "/v1/objects/pa/written", data=b"through alpha")
    assert r.status_code == 201, r.text
    got = srv_alpha.client().get_object(Bucket="remote", Key="written")["Body"].read()
    assert got == b"through alpha"
    with pytest.raises(Exception):
        srv_default.client().get_object(Bucket="remote", Key="written")
    names = [o["name"] for o in
             c.http.get(c.url + "/v1/buckets/pa/objects").json()["objects"]]
    assert names == ["same/name", "written"]
    assert any("GET /remote/same/name" in line for line in srv_gcs.requests())
    text = "".join(c.http.get(c.node_url(t) + "/metrics").text for t in c.target_names())
    for srv in (srv_alpha, srv_gcs, srv_default):     # each endpoint its own series
        assert 'backend="127.0.0.1:%d",provider="s3",op="get"' % srv.port in text


def test_bad_credentials_are_403_naming_the_profile(env):
    c, _, srv_alpha, _, _ = env
    r = c.http.put(c.url + "/v1/backends/wrong",
                   json=profile(srv_alpha, ("NOSUCHKEY", "wrong-secret-zzz")))
    assert r.status_code == 201, r.text
    r = c.http.put(c.url + "/v1/buckets/pw", json={"backend": "s3://remote",
                                                   "profile": "wrong"})
    assert r.status_code == 201, r.text
    srv_alpha.client().put_object(Bucket="remote", Key="k", Body=b"x")
    r = c.http.get(c.url + "/v1/objects/pw/k")
    assert r.status_code == 403, r.text
    assert "profile wrong" in r.text and "InvalidAccessKeyId" in r.text
    assert "wrong-secret-zzz" not in r.text
    r = c.http.get(c.url + "/v1/buckets/pw/objects")
    assert r.status_code in (403, 502, 503), r.text
    assert "wrong-secret-zzz" not in r.text


def test_secrets_are_never_shown_back(env):
    c, *_ = env
    r = c.http.put(c.url + "/v1/backends/shown", json={"provider": "s3", "endpoint":
                   "http://127.0.0.1:9", "access_key": "SHOWNKEY",
                   "secret_key": "shown-secret-777", "session_token": "shown-token-888"})
    assert r.status_code == 201, r.text
    secrets = SECRETS + ("shown-secret-777", "shown-token-888")
    one = c.http.get(second_proxy(c) + "/v1/backends/shown").json()
    assert one["secrets"] == ["secret_key", "session_token"]
    assert "secret_key" not in one and "session_token" not in one
    lst = c.http.get(c.url + "/v1/backends").json()["backends"]
    assert {"gcs", "shown"} <= {p["name"] for p in lst}
    pages = [c.http.get(u).text for u in
             (c.url + "/v1/backends", second_proxy(c) + "/v1/backends", c.url + "/v1/buckets",
              c.url + "/v1/cluster", c.url + "/v1/buckets/pg", c.url + "/metrics",
              c.node_url("t0") + "/metrics", c.url + "/v1/cluster/quorum")]
    logs = os.path.join(c.data, "logs")
    pages += [open(os.path.join(logs, f), errors="replace").read() for f in os.listdir(logs)]
    for text in pages:
        for s in secrets:
            assert s not in text
    # kept by every node, in files only the daemon's user reads
    for n in ("p0", "p1", "t0", "t1"):
        path = os.path.join(c.data, n, "state", "bmd.json")
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, n
        assert "shown-secret-777" in open(path).read()


def test_profile_rules(env):
    c, _, srv_alpha, _, _ = env
    u = c.url + "/v1/backends/"
    for bad, why in (({"provider": "s3", "secret_kye": "x"}, "unknown backend profile field"),
                     ({"provider": "ftp"}, "provider"),
                     ({"provider": "s3", "endpoint": "ftp://x"}, "endpoint"),
                     ({"provider": "s3", "secret_key": "x"}, "access_key"),
                     ({"provider": "s3", "addressing": "sideways"}, "addressing"),
                     ([1, 2], "JSON object")):
        r = c.http.put(u + "bad", json=bad)
        assert r.status_code == 400 and why in r.text, (bad, r.text)
    assert c.http.put(u + "bad..name/x", json={"provider": "s3"}).status_code in (400, 404)
    assert c.http.get(u + "missing").status_code == 404
    assert c.http.delete(u + "missing").status_code == 404
    assert c.http.post(u + "x", json={}).status_code == 405
    r = c.http.put(c.url + "/v1/buckets/pm", json={"backend": "s3://remote",
                                                   "profile": "missing"})
    assert r.status_code == 400 and "no backend profile 'missing'" in r.text
    r = c.http.put(c.url + "/v1/buckets/ph", json={"backend": "http://127.0.0.1:9/x",
                                                   "profile": "gcs"})
    assert r.status_code == 400 and "HTTP origin" in r.text
    r = c.http.put(c.url + "/v1/buckets/pn", json={"profile": "gcs"})
    assert r.status_code == 400 and "no backend" in r.text
    # a profile in use stays; an unused one goes
    assert c.http.put(u + "inuse", json=profile(srv_alpha, ALPHA)).status_code == 201
    assert c.http.put(c.url + "/v1/buckets/pu", json={"backend": "s3://remote",
                                                      "profile": "inuse"}).status_code == 201
    r = c.http.delete(u + "inuse")
    assert r.status_code == 409 and "pu" in r.text
    assert c.http.patch(c.url + "/v1/buckets/pu", json={"profile": "alpha"}).status_code == 200
    assert c.http.delete(u + "inuse").status_code == 204
    assert c.http.get(u + "inuse").status_code == 404
    # profiles hand out credentials: an admin key's, not another key's
    alice = session("alice")
    r = alice.put(u + "mine", json=profile(srv_alpha, ALPHA))
    assert r.status_code == 403, r.text
    assert alice.get(c.url + "/v1/backends").status_code == 403
    assert session(None).get(c.url + "/v1/backends").status_code == 403
    assert alice.put(c.url + "/v1/buckets/alices").status_code == 201
    r = alice.patch(c.url + "/v1/buckets/alices", json={"profile": "gcs"})
    assert r.status_code == 403 and "admin" in r.text
    # once an admin gives alice's bucket a profile, where it points is theirs too
    r = c.http.patch(c.url + "/v1/buckets/alices", json={"backend": "s3://remote",
                                                          "profile": "gcs"})
    assert r.status_code == 200, r.text
    for change in ({"backend": "s3://elsewhere"}, {"endpoint": "http://127.0.0.1:9"}):
        r = alice.patch(c.url + "/v1/buckets/alices", json=change)
        assert r.status_code == 403 and "admin" in r.text, r.text
    assert alice.patch(c.url + "/v1/buckets/alices", json={"labels": {"a": "b"}}).status_code == 200


def test_backends_file_is_checked(env):
    *_, path = env
    proxy = os.path.join(ROOT, BUILD, "bin", "shoal-proxy")
    args = [proxy, "--check-config", "--state_dir", tempfile.mkdtemp(),
            "--backends_file"]
    os.chmod(path, 0o644)
    try:
        r = subprocess.run(args + [path], capture_output=True, text=True, timeout=30)
    finally:
        os.chmod(path, 0o600)
    assert r.returncode != 0 and "chmod 600" in r.stdout + r.stderr
    bad = os.path.join(os.path.dirname(path), "bad.json")
    with open(os.open(bad, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        json.dump({"p": {"provider": "s3", "secret_key": GCS[1]}}, f)
    r = subprocess.run(args + [bad], capture_output=True, text=True, timeout=30)
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "profile 'p'" in out and GCS[1] not in out
