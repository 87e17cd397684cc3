"""S3 versioning: PutBucketVersioning Enabled/Suspended, GET/HEAD/DELETE with
versionId, delete markers, ListObjectVersions with real versions and its
markers, the null version of objects written before versioning, versions on
a mirrored bucket's copies and across a restart of every target."""
import os
import random
import signal

import pytest
import requests

from conftest import Cluster
from test_rebalance import wait_rebalanced
from test_s3 import AK, SK, client, err


def settled(c):
    """c started, once every target's first walk is over: versioned writes
    answer 503 while objects may still move."""
    wait_rebalanced(c)
    return c


@pytest.fixture(scope="module")
def vc():
    c = settled(Cluster(targets=3, mountpaths=2, extra="--s3_api_keys %s:%s" % (AK, SK)).start())
    yield c
    assert not c.cleanup()


@pytest.fixture
def s3(vc):
    return client(vc)


def new_bucket(s3, versioned=True):
    name = "ver%06d" % random.randrange(10**6)
    s3.create_bucket(Bucket=name)
    if versioned:
        s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    return name


def body(s3, b, k, **kw):
    return s3.get_object(Bucket=b, Key=k, **kw)["Body"].read()


def refused(call, **kw):
    with pytest.raises(Exception) as e:
        call(**kw)
    return e


def versions(s3, b, **kw):
    r = s3.list_object_versions(Bucket=b, **kw)
    return ([(v["Key"], v["VersionId"], v["IsLatest"], v["Size"]) for v in r.get("Versions", [])],
            [(m["Key"], m["VersionId"], m["IsLatest"]) for m in r.get("DeleteMarkers", [])])


def test_versioning_configuration(s3):
    b = new_bucket(s3, versioned=False)
    assert "Status" not in s3.get_bucket_versioning(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Suspended"
    e = refused(s3.put_bucket_versioning, Bucket=b, VersioningConfiguration={"Status": "On"})
    assert err(e) == ("MalformedXML", 400)
    e = refused(s3.put_bucket_versioning, Bucket=b,
                VersioningConfiguration={"Status": "Enabled", "MFADelete": "Enabled"},
                MFA="123456 654321")
    assert err(e) == ("NotImplemented", 501)


def test_versions_of_a_name(s3):
    b = new_bucket(s3)
    ids = [s3.put_object(Bucket=b, Key="k", Body=b"v%d" % i)["VersionId"] for i in range(3)]
    assert len(set(ids)) == 3 and "null" not in ids
    got = s3.get_object(Bucket=b, Key="k")
    assert got["Body"].read() == b"v2" and got["VersionId"] == ids[2]
    for i, v in enumerate(ids):
        assert body(s3, b, "k", VersionId=v) == b"v%d" % i
        assert s3.head_object(Bucket=b, Key="k", VersionId=v)["VersionId"] == v
    vs, dms = versions(s3, b)
    assert vs == [("k", ids[2], True, 2), ("k", ids[1], False, 2), ("k", ids[0], False, 2)]
    assert dms == []
    # a delete makes a delete marker the latest version
    d = s3.delete_object(Bucket=b, Key="k")
    assert d["DeleteMarker"] is True and d["VersionId"] not in ids
    e = refused(s3.get_object, Bucket=b, Key="k")
    assert err(e) == ("NoSuchKey", 404)
    assert e.value.response["ResponseMetadata"]["HTTPHeaders"]["x-amz-delete-marker"] == "true"
    # a name no marker stands for says so, in a versioned bucket or not
    plain = new_bucket(s3, versioned=False)
    s3.put_object(Bucket=plain, Key="gone", Body=b"x")
    s3.delete_object(Bucket=plain, Key="gone")
    for bb, key in ((b, "never"), (plain, "gone")):
        e = refused(s3.head_object, Bucket=bb, Key=key)
        assert e.value.response["ResponseMetadata"]["HTTPHeaders"]["x-amz-delete-marker"] == \
            "false", bb
    e = refused(s3.get_object, Bucket=b, Key="k", VersionId=d["VersionId"])
    assert err(e) == ("MethodNotAllowed", 405)
    hdrs = e.value.response["ResponseMetadata"]["HTTPHeaders"]
    assert hdrs["x-amz-delete-marker"] == "true" and hdrs["last-modified"].endswith(" GMT")
    assert s3.list_objects_v2(Bucket=b)["KeyCount"] == 0
    vs, dms = versions(s3, b)
    assert dms == [("k", d["VersionId"], True)] and [v[2] for v in vs] == [False] * 3
    assert body(s3, b, "k", VersionId=ids[1]) == b"v1"
    # removing the marker brings the object back
    r = s3.delete_object(Bucket=b, Key="k", VersionId=d["VersionId"])
    assert r["DeleteMarker"] is True and r["VersionId"] == d["VersionId"]
    assert body(s3, b, "k") == b"v2"
    # deleting the latest version for good: the one before is the latest
    s3.delete_object(Bucket=b, Key="k", VersionId=ids[2])
    assert body(s3, b, "k") == b"v1"
    assert s3.head_object(Bucket=b, Key="k")["VersionId"] == ids[1]
    lst = s3.list_objects_v2(Bucket=b)["Contents"]
    assert [(o["Key"], o["Size"]) for o in lst] == [("k", 2)]
    assert versions(s3, b)[0] == [("k", ids[1], True, 2), ("k", ids[0], False, 2)]
    e = refused(s3.get_object, Bucket=b, Key="k", VersionId=ids[2])
    assert err(e) == ("NoSuchVersion", 404)
    e = refused(s3.get_object, Bucket=b, Key="k", VersionId="not-a-version")
    assert err(e) == ("InvalidArgument", 400)
    # a new PUT after that is the latest again, the rest kept
    v3 = s3.put_object(Bucket=b, Key="k", Body=b"v3")["VersionId"]
    assert [v[1] for v in versions(s3, b)[0]] == [v3, ids[1], ids[0]]
    # a bucket holding versions is not empty
    for v in (v3, ids[1]):
        s3.delete_object(Bucket=b, Key="k", VersionId=v)
    assert err(refused(s3.delete_bucket, Bucket=b)) == ("BucketNotEmpty", 409)
    s3.delete_object(Bucket=b, Key="k", VersionId=ids[0])
    assert versions(s3, b) == ([], [])
    s3.delete_bucket(Bucket=b)


def test_null_version_and_suspended(s3):
    b = new_bucket(s3, versioned=False)
    s3.put_object(Bucket=b, Key="k", Body=b"before")
    assert versions(s3, b)[0] == [("k", "null", True, 6)]
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    assert s3.head_object(Bucket=b, Key="k")["VersionId"] == "null"   # S3 names it
    assert s3.get_object(Bucket=b, Key="k")["VersionId"] == "null"
    v1 = s3.put_object(Bucket=b, Key="k", Body=b"enabled")["VersionId"]
    assert versions(s3, b)[0] == [("k", v1, True, 7), ("k", "null", False, 6)]
    assert body(s3, b, "k", VersionId="null") == b"before"
    # suspended: a PUT writes the null version, replacing the one kept
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})
    r = s3.put_object(Bucket=b, Key="k", Body=b"suspended")
    assert "VersionId" not in r      # S3 answers the null version without one
    assert versions(s3, b)[0] == [("k", "null", True, 9), ("k", v1, False, 7)]
    assert body(s3, b, "k", VersionId="null") == b"suspended"
    # and a delete there makes a null delete marker, the null object gone
    d = s3.delete_object(Bucket=b, Key="k")
    assert d["DeleteMarker"] is True and d["VersionId"] == "null"
    vs, dms = versions(s3, b)
    assert vs == [("k", v1, False, 7)] and dms == [("k", "null", True)]
    assert body(s3, b, "k", VersionId=v1) == b"enabled"


def test_listing_versions_in_pages(s3):
    b = new_bucket(s3)
    want = []
    for k in ("a", "a/b", "b", "c"):
        for i in range(3 if k != "b" else 1):
            want.append((k, s3.put_object(Bucket=b, Key=k, Body=b"x" * i)["VersionId"]))
    s3.delete_object(Bucket=b, Key="c")
    full = s3.list_object_versions(Bucket=b)
    everything = sorted([(v["Key"], v["VersionId"]) for v in full["Versions"]] +
                        [(m["Key"], m["VersionId"]) for m in full["DeleteMarkers"]])
    assert len(everything) == len(want) + 1
    for size in (1, 2, 3):
        seen, kw = [], {}
        for _ in range(20):
            r = s3.list_object_versions(Bucket=b, MaxKeys=size, **kw)
            page = r.get("Versions", []) + r.get("DeleteMarkers", [])
            assert len(page) <= size
            seen += [(v["Key"], v["VersionId"]) for v in page]
            if not r["IsTruncated"]:
                break
            kw = {"KeyMarker": r["NextKeyMarker"], "VersionIdMarker": r["NextVersionIdMarker"]}
        assert sorted(seen) == everything and len(seen) == len(everything), size
    # a prefix and a delimiter work on keys, not on version ids
    r = s3.list_object_versions(Bucket=b, Delimiter="/")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a/"]
    assert {v["Key"] for v in r["Versions"]} == {"a", "b", "c"}
    r = s3.list_object_versions(Bucket=b, Prefix="a/")
    assert [v["Key"] for v in r["Versions"]] == ["a/b"] * 3
    # a key marker alone resumes after every version of that key
    r = s3.list_object_versions(Bucket=b, KeyMarker="a")
    assert [v["Key"] for v in r["Versions"]][:1] == ["a/b"]
    e = refused(s3.list_object_versions, Bucket=b, VersionIdMarker="null")
    assert err(e) == ("InvalidArgument", 400)


def test_copies_deletes_and_names(vc, s3):
    b = new_bucket(s3)
    v1 = s3.put_object(Bucket=b, Key="src", Body=b"first")["VersionId"]
    s3.put_object(Bucket=b, Key="src", Body=b"second")
    c = s3.copy_object(Bucket=b, Key="dst", CopySource={"Bucket": b, "Key": "src",
                                                         "VersionId": v1})
    assert c["VersionId"] and body(s3, b, "dst") == b"first"
    ids = [s3.put_object(Bucket=b, Key="m", Body=b"%d" % i)["VersionId"] for i in range(3)]
    r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "m", "VersionId": ids[0]},
                                                        {"Key": "m", "VersionId": ids[2]}]})
    assert sorted(d["VersionId"] for d in r["Deleted"]) == sorted([ids[0], ids[2]])
    assert body(s3, b, "m") == b"1"
    assert [v[1] for v in versions(s3, b, Prefix="m")[0]] == [ids[1]]
    # DeleteObjects says which deletes made or removed a delete marker
    r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "m"}]})
    made = r["Deleted"][0]
    assert made["DeleteMarker"] is True and made["DeleteMarkerVersionId"] != ids[1]
    assert "VersionId" not in made
    r = s3.delete_objects(Bucket=b, Delete={"Objects": [
        {"Key": "m", "VersionId": made["DeleteMarkerVersionId"]}]})
    gone = r["Deleted"][0]
    assert gone["VersionId"] == gone["DeleteMarkerVersionId"] == made["DeleteMarkerVersionId"]
    assert gone["DeleteMarker"] is True and body(s3, b, "m") == b"1"
    pv = s3.put_object(Bucket=b, Key="plain", Body=b"p")["VersionId"]
    r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "plain", "VersionId": pv}]})
    assert "DeleteMarker" not in r["Deleted"][0] and r["Deleted"][0]["VersionId"] == pv
    # S3's way to restore an old version: copy it onto its own key
    s3.copy_object(Bucket=b, Key="src", CopySource={"Bucket": b, "Key": "src", "VersionId": v1})
    assert body(s3, b, "src") == b"first" and len(versions(s3, b, Prefix="src")[0]) == 3
    # a deleted name has no tags (not its marker's)
    s3.delete_object(Bucket=b, Key="dst")
    assert err(refused(s3.get_object_tagging, Bucket=b, Key="dst")) == ("NoSuchKey", 404)
    # a key of S3's longest: its versions kept, read and listed
    long = "L" * 1024
    lv = [s3.put_object(Bucket=b, Key=long, Body=b"%d" % i)["VersionId"] for i in range(2)]
    assert body(s3, b, long, VersionId=lv[0]) == b"0"
    assert [v[1] for v in versions(s3, b, Prefix="L")[0]] == lv[::-1]
    s3.delete_object(Bucket=b, Key=long, VersionId=lv[0])
    assert [v[1] for v in versions(s3, b, Prefix="L")[0]] == [lv[1]]
    # the byte that names versions is no client's
    assert vc.http.put(vc.url + "/v1/objects/%s/a%%01b" % b, data=b"x").status_code == 400
    e = refused(s3.put_object, Bucket=b, Key="a\x01b", Body=b"x")
    assert err(e)[1] == 400
    # a version's own tags: read, changed and removed by its versionId
    tv = [s3.put_object(Bucket=b, Key="t", Body=b"%d" % i, Tagging="n=%d" % i)["VersionId"]
          for i in range(2)]
    tags = lambda **kw: s3.get_object_tagging(Bucket=b, Key="t", **kw)["TagSet"]  # noqa: E731
    assert tags(VersionId=tv[0]) == [{"Key": "n", "Value": "0"}]
    assert tags() == tags(VersionId=tv[1]) == [{"Key": "n", "Value": "1"}]
    s3.put_object_tagging(Bucket=b, Key="t", VersionId=tv[0],
                          Tagging={"TagSet": [{"Key": "old", "Value": "yes"}]})
    assert tags(VersionId=tv[0]) == [{"Key": "old", "Value": "yes"}]
    assert tags() == [{"Key": "n", "Value": "1"}] and body(s3, b, "t") == b"1"
    s3.delete_object_tagging(Bucket=b, Key="t", VersionId=tv[0])
    assert tags(VersionId=tv[0]) == [] and tags() == [{"Key": "n", "Value": "1"}]
    assert body(s3, b, "t", VersionId=tv[0]) == b"0"
    assert err(refused(s3.get_object_tagging, Bucket=b, Key="t", VersionId=ids[0])) == \
        ("NoSuchVersion", 404)
    dm = s3.delete_object(Bucket=b, Key="t")["VersionId"]
    assert err(refused(s3.put_object_tagging, Bucket=b, Key="t", VersionId=dm,
                       Tagging={"TagSet": []}))[1] == 405
    assert tags(VersionId=tv[1]) == [{"Key": "n", "Value": "1"}]


def mirrored_versioned(c, bucket, copies):
    """A bucket of copies mirrored copies with versioning on; its client."""
    s3 = client(c)
    assert c.http.put(c.url + "/v1/buckets/" + bucket, json={"mirror": {"copies": copies}}
                      ).status_code == 201
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    return s3


def kill_owner(c, bucket, key):
    """kill -9 of the target that owns key, until the map has it down."""
    r = requests.get("%s/v1/objects/%s/%s" % (c.url, bucket, key), allow_redirects=False,
                     auth=c.http.auth)
    assert r.status_code == 307, r.text
    port = int(r.headers["Location"].split(":")[2].split("/")[0])
    owner = next(t for t in c.target_names() if c.node_url(t).endswith(":%d" % port))
    os.kill(c.pid(owner), signal.SIGKILL)
    c.wait_map(lambda m: any(n["url"] == c.node_url(owner) and n["state"] == "down"
                             for n in m["nodes"]))


def test_versions_on_copies_and_across_restarts():
    """A mirrored bucket: its copy holders keep the same versions, so with
    the owner killed every version still reads; the versions outlive a
    restart of every target."""
    c = settled(Cluster(targets=3, mountpaths=2, extra="--s3_api_keys %s:%s" % (AK, SK)).start())
    try:
        s3 = mirrored_versioned(c, "mv", 2)
        data = {("k%d" % n, i): os.urandom(1000 + n * 10 + i) for n in range(10) for i in range(3)}
        ids = {}
        for (k, i), d in sorted(data.items()):
            ids[(k, i)] = s3.put_object(Bucket="mv", Key=k, Body=d)["VersionId"]
        s3.delete_object(Bucket="mv", Key="k0")
        kill_owner(c, "mv", "k1")
        for (k, i), d in data.items():
            assert body(s3, "mv", k, VersionId=ids[(k, i)]) == d, (k, i)
        assert err(refused(s3.get_object, Bucket="mv", Key="k0"))[0] == "NoSuchKey"
        c.stop()
        c.start()
        for (k, i), d in data.items():
            assert body(s3, "mv", k, VersionId=ids[(k, i)]) == d, (k, i)
        assert body(s3, "mv", "k1") == data[("k1", 2)]
        vs, dms = versions(s3, "mv")
        assert len(vs) == 30 and len(dms) == 1
    finally:
        assert not c.cleanup()


def test_deleting_the_latest_makes_the_next_current(vc, s3):
    """S3 makes the next newest version current when the current one is
    deleted: it is then the object in every respect (tags, ACL, conditional
    writes, copies), not only for GET; the same when a delete marker is
    removed, and on a mirrored bucket's copy holders with the owner down."""
    b = new_bucket(s3)
    v0 = s3.put_object(Bucket=b, Key="k", Body=b"zero", Tagging="n=0")["VersionId"]
    v1 = s3.put_object(Bucket=b, Key="k", Body=b"one", Tagging="n=1")["VersionId"]
    v2 = s3.put_object(Bucket=b, Key="k", Body=b"two", Tagging="n=2")["VersionId"]
    mtime1 = s3.head_object(Bucket=b, Key="k", VersionId=v1)["LastModified"]
    s3.delete_object(Bucket=b, Key="k", VersionId=v2)
    h = s3.head_object(Bucket=b, Key="k")
    assert h["VersionId"] == v1 and h["LastModified"] == mtime1 and h["ContentLength"] == 3
    t = s3.get_object_tagging(Bucket=b, Key="k")
    assert t["TagSet"] == [{"Key": "n", "Value": "1"}] and t.get("VersionId", v1) == v1
    assert s3.get_object_acl(Bucket=b, Key="k")["Grants"]
    def if_none_match(params, **kw):
        params["headers"]["If-None-Match"] = "*"
    s3.meta.events.register_first("before-call.s3.PutObject", if_none_match)
    try:
        e = refused(s3.put_object, Bucket=b, Key="k", Body=b"x")
    finally:
        s3.meta.events.unregister("before-call.s3.PutObject", if_none_match)
    assert err(e) == ("PreconditionFailed", 412)
    s3.copy_object(Bucket=b, Key="c", CopySource={"Bucket": b, "Key": "k"})
    assert body(s3, b, "c") == b"one"
    vs, dms = versions(s3, b, Prefix="k")
    assert vs == [("k", v1, True, 3), ("k", v0, False, 4)] and dms == []
    e = refused(s3.get_object, Bucket=b, Key="k", VersionId=v2)
    assert err(e) == ("NoSuchVersion", 404)
    # a delete marker removed: the version under it is current again
    d = s3.delete_object(Bucket=b, Key="k")["VersionId"]
    e = refused(s3.get_object_tagging, Bucket=b, Key="k")
    assert err(e) == ("NoSuchKey", 404)
    s3.delete_object(Bucket=b, Key="k", VersionId=d)
    assert s3.get_object_tagging(Bucket=b, Key="k")["TagSet"] == [{"Key": "n", "Value": "1"}]
    assert versions(s3, b, Prefix="k") == ([("k", v1, True, 3), ("k", v0, False, 4)], [])
    # the last two go: nothing is left of the name
    s3.delete_object(Bucket=b, Key="k", VersionId=v1)
    assert body(s3, b, "k") == b"zero"
    assert s3.get_object_tagging(Bucket=b, Key="k")["TagSet"] == [{"Key": "n", "Value": "0"}]
    s3.delete_object(Bucket=b, Key="k", VersionId=v0)
    assert err(refused(s3.head_object, Bucket=b, Key="k"))[1] == 404
    assert versions(s3, b, Prefix="k") == ([], [])
    # the null version of an object from before versioning, made current again
    nb = new_bucket(s3, versioned=False)
    s3.put_object(Bucket=nb, Key="k", Body=b"before")
    s3.put_bucket_versioning(Bucket=nb, VersioningConfiguration={"Status": "Enabled"})
    va = s3.put_object(Bucket=nb, Key="k", Body=b"after")["VersionId"]
    s3.delete_object(Bucket=nb, Key="k", VersionId=va)
    got = s3.get_object(Bucket=nb, Key="k")
    assert got["Body"].read() == b"before" and got["VersionId"] == "null"
    assert versions(s3, nb) == ([("k", "null", True, 6)], [])


def test_the_next_current_on_copy_holders():
    """The version made current by a delete of the latest is current on
    the copy holders too: with the owner down they serve it, tags and all,
    and the deleted version is gone from them."""
    c = settled(Cluster(targets=3, mountpaths=1, extra="--s3_api_keys %s:%s" % (AK, SK)).start())
    try:
        s3 = mirrored_versioned(c, "mh", 3)
        ids = [s3.put_object(Bucket="mh", Key="k", Body=b"v%d" % i, Tagging="n=%d" % i)
               ["VersionId"] for i in range(3)]
        s3.delete_object(Bucket="mh", Key="k", VersionId=ids[2])
        kill_owner(c, "mh", "k")
        got = s3.get_object(Bucket="mh", Key="k")
        assert got["Body"].read() == b"v1" and got["VersionId"] == ids[1]
        assert s3.get_object_tagging(Bucket="mh", Key="k")["TagSet"] == \
            [{"Key": "n", "Value": "1"}]
        assert body(s3, "mh", "k", VersionId=ids[0]) == b"v0"
        e = refused(s3.get_object, Bucket="mh", Key="k", VersionId=ids[2])
        assert err(e) == ("NoSuchVersion", 404)
    finally:
        assert not c.cleanup()
