"""One authorization on every path (authz.h): the same rule of owner,
admin keys and public-read decides whichever door a request comes through:
the native API on a proxy (followed to the target it redirects to), the
native API straight to a target's own port, the S3 API on a proxy, S3 at a
target's root, bearer tokens on both APIs, presigned URLs, and jobs. The
matrix: every operation x every door x the owner / another key / an admin
key / an unsigned request."""
import time
import urllib.parse

import pytest
import requests

from conftest import Cluster, SigV4

KEYS = {"alice": "alice-secret-1", "bob": "bob-secret-22", "ops": "ops-secret-333"}
CALLERS = ("alice", "bob", "ops", None)      # owner, another key, admin, unsigned
DOORS = ("native", "native-target", "s3", "s3-target")


@pytest.fixture(scope="module")
def zc():
    c = Cluster(targets=2, mountpaths=1,
                extra="--auth_keys %s --admin_keys ops" %
                      ",".join("%s:%s" % kv for kv in KEYS.items())).start()
    s = session("alice")
    assert s.put(c.url + "/v1/buckets/one").status_code == 201
    for name, body in (("x", b"alice's x"), ("pub", b"public bytes")):
        assert s.put(c.url + "/s3/one/" + name, data=body,
                     headers={"x-amz-acl": "public-read"} if name == "pub" else {}
                     ).status_code == 200
    assert session("bob").put(c.url + "/v1/buckets/bobs").status_code == 201
    yield c
    assert not c.cleanup()


def session(key):
    s = requests.Session()
    if key:
        s.auth = SigV4(key, KEYS[key])
    return s


def owner_url(c, name):
    """The base URL of the target that owns one/name."""
    r = session("alice").get(c.url + "/v1/objects/one/" + name, allow_redirects=False)
    assert r.status_code == 307, r.text
    u = urllib.parse.urlsplit(r.headers["Location"])
    return "%s://%s" % (u.scheme, u.netloc)


def url(c, door, name, query=""):
    base = {"native": c.url + "/v1/objects/one/",
            "native-target": owner_url(c, name) + "/v1/objects/one/",
            "s3": c.url + "/s3/one/",
            "s3-target": owner_url(c, name) + "/one/"}[door]
    if door.startswith("native") and query:
        query += "&shoal_s3=1"       # the native door to S3's subresources
    return base + name + ("?" + query if query else "")


def call(c, door, who, method, name, query="", **kw):
    return session(who).request(method, url(c, door, name, query), **kw)


def allowed(who, public=False):
    return who in ("alice", "ops") or public


def refused(r, door):
    ok = r.status_code == 403
    if door.startswith("s3") and r.request.method != "HEAD":
        ok = ok and "<Code>AccessDenied</Code>" in r.text
    return ok


def exists(c, name):
    return session("ops").head(c.url + "/v1/objects/one/" + name,
                               allow_redirects=True).status_code == 200


def still(c, name, body):
    assert session("alice").get(c.url + "/v1/objects/one/" + name).content == body


@pytest.mark.parametrize("door", DOORS)
def test_reads(zc, door):
    for who in CALLERS:
        for method in ("GET", "HEAD"):
            r = call(zc, door, who, method, "x")
            if allowed(who):
                assert r.status_code == 200, (door, who, method, r.status_code, r.text)
                assert method == "HEAD" or r.content == b"alice's x"
            else:
                assert refused(r, door), (door, who, method, r.status_code, r.text)
                assert b"alice's" not in r.content
            # a public-read object: anyone, unsigned too
            r = call(zc, door, who, method, "pub")
            assert r.status_code == 200, (door, who, method, r.status_code, r.text)
            assert method == "HEAD" or r.content == b"public bytes"


def test_a_missing_object_is_404_to_who_may_list_the_bucket(zc):
    """A read of an object that is not there (deleted, or never put) by
    someone who may not read it is 404 NoSuchKey where they may list the
    bucket (a public-read one: the listing would tell them), 403 where
    they may not, as S3 answers; a private object in a public bucket
    stays 403."""
    s = session("alice")
    assert s.put(zc.url + "/s3/openb", headers={"x-amz-acl": "public-read"}).status_code == 200
    assert s.put(zc.url + "/s3/openb/gone", data=b"x",
                 headers={"x-amz-acl": "public-read"}).status_code == 200
    assert s.put(zc.url + "/s3/openb/priv", data=b"secret").status_code == 200
    assert s.delete(zc.url + "/s3/openb/gone").status_code == 204
    for who in ("bob", None):
        for method in ("GET", "HEAD"):
            for base in (zc.url + "/s3/", zc.url + "/v1/objects/"):
                for name, want in (("openb/gone", 404), ("openb/never", 404),
                                   ("openb/priv", 403), ("one/never", 403)):
                    r = session(who).request(method, base + name)
                    assert r.status_code == want, (who, method, base, name, r.text)
                    if method == "GET" and base.endswith("/s3/"):
                        code = "NoSuchKey" if want == 404 else "AccessDenied"
                        assert "<Code>%s</Code>" % code in r.text, r.text
                    assert b"secret" not in r.content


@pytest.mark.parametrize("door", DOORS)
def test_writes_and_deletes(zc, door):
    for who in CALLERS:
        name = "w-%s-%s" % (door, who)
        r = call(zc, door, who, "PUT", name, data=b"new")
        if not allowed(who):
            assert refused(r, door), (door, who, r.status_code, r.text)
            assert not exists(zc, name)
            # nor overwritten, nor deleted
            assert refused(call(zc, door, who, "PUT", "x", data=b"evil"), door)
            assert refused(call(zc, door, who, "DELETE", "x"), door)
            still(zc, "x", b"alice's x")
            continue
        assert r.status_code in (200, 201), (door, who, r.status_code, r.text)
        assert session("alice").get(zc.url + "/v1/objects/one/" + name).content == b"new"
        r = call(zc, door, who, "DELETE", name)
        assert r.status_code in (200, 204), (door, who, r.status_code, r.text)
        assert not exists(zc, name)


@pytest.mark.parametrize("door", DOORS)
def test_acls(zc, door):
    """Reading or changing an object's ACL is its bucket owner's (or an
    admin key's): no other key makes alice's object world-readable."""
    for who in CALLERS:
        r = call(zc, door, who, "PUT", "x", "acl", headers={"x-amz-acl": "public-read"})
        if allowed(who):
            assert r.status_code == 200, (door, who, r.status_code, r.text)
            assert requests.get(zc.url + "/s3/one/x").content == b"alice's x"
            r = call(zc, door, who, "PUT", "x", "acl", headers={"x-amz-acl": "private"})
            assert r.status_code == 200, (door, who, r.status_code, r.text)
        else:
            assert refused(r, door), (door, who, r.status_code, r.text)
        assert requests.get(zc.url + "/s3/one/x").status_code == 403
        r = call(zc, door, who, "GET", "x", "acl")
        assert (r.status_code == 200) == allowed(who), (door, who, r.status_code, r.text)
        # a public-read object's ACL and tags are still the owner's to read
        r = call(zc, door, who, "GET", "pub", "acl")
        assert (r.status_code == 200) == allowed(who), (door, who, r.status_code, r.text)
        r = call(zc, door, who, "GET", "pub", "tagging")
        assert (r.status_code == 200) == allowed(who), (door, who, r.status_code, r.text)


def test_buckets_native_and_s3(zc):
    for who in CALLERS:
        s = session(who)
        mine = allowed(who)
        # listing its objects: the native API and S3's ListObjectsV2
        r = s.get(zc.url + "/v1/buckets/one/objects")
        assert (r.status_code == 200) == mine, (who, r.status_code, r.text)
        assert mine or b'"x"' not in r.content
        r = s.get(zc.url + "/s3/one", params={"list-type": "2"})
        assert (r.status_code == 200) == mine, (who, r.status_code, r.text)
        assert (r.status_code == 200) == mine, (who, r.status_code)
        for path in ("/v1/buckets/one", "/v1/buckets/one/summary"):
            assert (s.get(zc.url + path).status_code == 200) == mine, (who, path)
        # the list of buckets shows a key what it may list
        r = s.get(zc.url + "/v1/buckets")
        if who:
            names = [b["name"] for b in r.json()["buckets"]]
            assert ("one" in names) == mine and ("bobs" in names) == (who != "alice"), names
        else:
            assert r.status_code == 403
        if mine:
            continue
        # nobody else changes or destroys it, through either API
        assert s.patch(zc.url + "/v1/buckets/one", json={"lru": {"enabled": False}}
                       ).status_code == 403
        assert s.patch(zc.url + "/v1/buckets/one", json={"acl": "public-read"}
                       ).status_code == 403
        assert s.delete(zc.url + "/v1/buckets/one").status_code == 403
        assert s.delete(zc.url + "/s3/one").status_code == 403
        assert s.put(zc.url + "/s3/one", params={"acl": ""},
                     headers={"x-amz-acl": "public-read"}).status_code == 403
    assert session("ops").get(zc.url + "/v1/buckets/one").status_code == 200
    assert requests.get(zc.url + "/s3/one?list-type=2").status_code == 403
    # an owner is set by an admin key only
    assert session("alice").patch(zc.url + "/v1/buckets/one",
                                  json={"owner": "bob"}).status_code == 403


def test_a_job_reads_and_writes_as_its_starter(zc):
    spec = {"kind": "copy", "bucket": "one", "to": "bobs"}
    r = session("bob").post(zc.url + "/v1/jobs", json=spec)
    assert r.status_code == 403 and "read" in r.text, r.text
    # nor into a bucket its starter may not write
    assert session("alice").post(zc.url + "/v1/jobs", json=spec).status_code == 403
    r = session("bob").post(zc.url + "/v1/jobs",
                            json={"kind": "copy", "bucket": "bobs", "to": "one"})
    assert r.status_code == 403 and "destination" in r.text, r.text
    r = session("bob").post(zc.url + "/v1/jobs", json={"kind": "scrub"})
    assert r.status_code == 403 and "admin" in r.text, r.text
    # an admin key copies anything; alice copies her own
    r = session("ops").post(zc.url + "/v1/jobs", json=spec)
    assert r.status_code == 201, r.text
    jid = r.json()["id"]
    r = session("ops").get(zc.url + "/v1/jobs/" + jid, params={"wait": "30"})
    assert r.json()["state"] == "finished", r.text
    assert session("bob").get(zc.url + "/v1/objects/bobs/x").content == b"alice's x"
    r = requests.post(zc.url + "/v1/jobs", json={"kind": "scrub", "bucket": "one"})
    assert r.status_code == 403
    # a job is seen, aborted and unpinned by who may change its bucket only
    r = session("alice").post(zc.url + "/v1/jobs", json={"kind": "scrub", "bucket": "one"})
    assert r.status_code == 201, r.text
    mine = r.json()["id"]
    for who, seen in (("alice", True), ("ops", True), ("bob", False)):
        s = session(who)
        assert (s.get(zc.url + "/v1/jobs/" + mine).status_code == 200) == seen, who
        ids = [j["id"] for j in s.get(zc.url + "/v1/jobs").json()["jobs"]]
        assert (mine in ids) == seen, (who, ids)
    assert session("bob").delete(zc.url + "/v1/jobs/" + mine).status_code == 404
    assert session("bob").patch(zc.url + "/v1/jobs/" + mine,
                                json={"pin": False}).status_code == 404
    assert session("alice").delete(zc.url + "/v1/jobs/" + mine).status_code in (204, 404)


def test_the_example_of_the_issue(zc):
    """AKTWO, through the native API on a proxy and on a target, can neither
    read alice's object nor make it world-readable."""
    for door in ("native", "native-target"):
        base = url(zc, door, "x").split("?")[0]
        r = session("bob").put(base + "?acl&shoal_s3=1", headers={"x-amz-acl": "public-read"})
        assert r.status_code == 403, (door, r.status_code, r.text)
        assert requests.get(zc.url + "/s3/one/x").status_code == 403
        assert session("bob").get(base).status_code == 403


def test_tokens_on_both_apis(zc):
    def token(who):
        r = session(who).post(zc.url + "/v1/tokens", params={"ttl_s": "300"})
        assert r.status_code == 200, r.text
        return {"Authorization": "Bearer " + r.json()["token"]}
    a, b = token("alice"), token("bob")
    for door in DOORS:
        r = requests.get(url(zc, door, "x"), headers=a)
        assert r.status_code == 200 and r.content == b"alice's x", (door, r.status_code, r.text)
        r = requests.get(url(zc, door, "x"), headers=b)
        assert refused(r, door), (door, r.status_code, r.text)
    r = requests.put(zc.url + "/s3/one/tok", data=b"by token", headers=a)
    assert r.status_code == 200, r.text
    assert requests.get(zc.url + "/s3/one?list-type=2", headers=a).status_code == 200
    assert requests.get(zc.url + "/s3/one?list-type=2", headers=b).status_code == 403
    tok = a["Authorization"]
    bad = {"Authorization": tok[:-1] + ("0" if tok[-1] != "0" else "1")}
    r = requests.get(zc.url + "/s3/one/x", headers=bad)
    assert r.status_code == 403 and "<Error>" in r.text


def test_presigned_urls_are_held_to_the_owner(zc):
    import boto3
    from botocore.config import Config
    for who in ("alice", "bob"):
        s3 = boto3.client("s3", endpoint_url=zc.url + "/s3", aws_access_key_id=who,
                          aws_secret_access_key=KEYS[who], region_name="us-east-1",
                          config=Config(signature_version="s3v4"))
        u = s3.generate_presigned_url("get_object", Params={"Bucket": "one", "Key": "x"})
        r = requests.get(u)
        assert (r.status_code == 200) == (who == "alice"), (who, r.status_code, r.text)


def sigv2_presign(c, method, path, query, key="alice"):
    """A SigV2 presigned URL (botocore's HmacV1QueryAuth)."""
    from botocore.auth import HmacV1QueryAuth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    req = AWSRequest(method=method, url=c.url + path + ("?" + query if query else ""))
    HmacV1QueryAuth(Credentials(key, KEYS[key]), expires=120).add_auth(req)
    return req.url


def test_sigv2_is_refused_on_the_native_api(zc):
    """SigV2 signs only a few of a request's query parameters: a token's
    ttl_s or a listing's prefix could be changed under it."""
    u = sigv2_presign(zc, "POST", "/v1/tokens", "ttl_s=60")
    for attempt in (u, u.replace("ttl_s=60", "ttl_s=604800")):
        r = requests.post(attempt)
        assert r.status_code == 403 and "SigV2" in r.text, r.text
    u = sigv2_presign(zc, "GET", "/v1/buckets/one/objects", "prefix=x")
    r = requests.get(u.replace("prefix=x", "prefix=p"))
    assert r.status_code == 403 and "SigV2" in r.text, r.text
    # the S3 API, which its older clients use, keeps it
    u = sigv2_presign(zc, "GET", "/s3/one/x", "")
    r = requests.get(u)
    assert r.status_code == 200 and r.content == b"alice's x", r.text


ENCODED = {
    "intelligent-tiering": "%69%6E%74%65%6C%6C%69%67%65%6E%74%2D%74%69%65%72%69%6E%67",
    "ownershipControls": "%6f%77%6e%65%72%73%68%69%70%43%6f%6e%74%72%6f%6c%73",
    "metadataConfiguration":
        "%6D%65%74%61%64%61%74%61%43%6F%6E%66%69%67%75%72%61%74%69%6F%6E",
}


def test_an_encoded_or_unknown_subresource_is_never_the_plain_operation(zc):
    s = session("alice")
    assert s.put(zc.url + "/s3/one/sub", data=b"kept").status_code == 200
    for name, enc in ENCODED.items():
        for q in (enc, enc + "=", name):
            r = s.put(zc.url + "/s3/one/sub?" + q, data=b"overwritten?")
            assert r.status_code == 501 and "NotImplemented" in r.text, (q, r.text)
            r = s.delete(zc.url + "/s3/one/sub?" + q)
            assert r.status_code == 501, (q, r.status_code, r.text)
    # a value-less key Shoal does not know: S3 adds subresources
    for method in ("DELETE", "PUT", "GET"):
        r = s.request(method, zc.url + "/s3/one/sub?abac", data=b"x" if method == "PUT" else None)
        assert r.status_code == 501 and "NotImplemented" in r.text, (method, r.text)
    r = s.delete(zc.url + "/s3/one?abac")
    assert r.status_code == 501, r.text
    # the native API has no subresources: the same refusal, never a write
    for q in ("abac", "tagging", ENCODED["intelligent-tiering"], "%61cl"):
        r = s.delete(zc.url + "/v1/objects/one/sub?" + q)
        assert r.status_code == 501, (q, r.status_code, r.text)
        r = s.put(zc.url + "/v1/objects/one/sub?" + q, data=b"<Tagging/>")
        assert r.status_code == 501, (q, r.status_code, r.text)
    # a malformed escape in a key is a bad request (sent as is: no client
    # library sends one)
    import http.client
    h = http.client.HTTPConnection(urllib.parse.urlsplit(zc.url).netloc, timeout=10)
    h.request("GET", "/s3/one/sub?ac%4")
    assert h.getresponse().status == 400
    h.close()
    assert s.get(zc.url + "/s3/one/sub").content == b"kept"
    # the native flag and parameters with values still work
    assert s.get(zc.url + "/v1/objects/one/sub", params={"provider": "shoal"}).content == b"kept"
