"""Remote buckets through the S3 API: a Shoal bucket backed by s3rver read
with boto3 (cold, then warm), and a second Shoal cluster as the S3 backend
of the first, with signatures verified there: Shoal's SigV4 signer (the
backend client) and its verifier (the S3 API) must agree."""
import hashlib
import os
import random

import boto3
import botocore
import pytest
import requests
from botocore.config import Config

from conftest import Cluster, running_cluster, running_s3rver

AK, SK = "BACKENDKEY", "backend-secret-xyz"


@pytest.fixture(scope="module")
def s3rver():
    yield from running_s3rver("remote")


@pytest.fixture(scope="module")
def front(s3rver):
    yield from running_cluster(targets=2, mountpaths=1, env=s3rver.env(),
                               extra="--s3_api_keys %s:%s" % (AK, SK))


def client(c, key=AK, secret=SK):
    return boto3.client("s3", endpoint_url=c.url + "/s3", aws_access_key_id=key,
                        aws_secret_access_key=secret, region_name="us-east-1")


def backend_gets(srv, bucket, key):
    return sum(1 for line in srv.requests() if line.split("?")[0] == "GET /%s/%s" % (bucket, key))


def test_backed_bucket_through_s3(s3rver, front):
    name = "mirror%04d" % random.randrange(10**4)
    r = front.http.put(front.url + "/v1/buckets/" + name,
                     json={"backend": "s3://remote", "endpoint": s3rver.url,
                           "addressing": "path"})
    assert r.status_code == 201, r.text
    data = os.urandom(3 << 20)
    s3rver.client().put_object(Bucket="remote", Key="ds/shard-1", Body=data)
    s3 = client(front)
    g = s3.get_object(Bucket=name, Key="ds/shard-1")
    assert g["Body"].read() == data
    assert g["ResponseMetadata"]["HTTPHeaders"]["x-shoal-cache"] == "miss"
    g = s3.get_object(Bucket=name, Key="ds/shard-1")
    assert g["Body"].read() == data
    assert g["ResponseMetadata"]["HTTPHeaders"]["x-shoal-cache"] == "hit"
    assert backend_gets(s3rver, "remote", "ds/shard-1") == 1
    assert s3.get_object(Bucket=name, Key="ds/shard-1", Range="bytes=5-9")["Body"].read() == data[5:10]
    # the listing is the backend's
    s3rver.client().put_object(Bucket="remote", Key="ds/shard-2", Body=b"2")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=name, Prefix="ds/")["Contents"]]
    assert keys == ["ds/shard-1", "ds/shard-2"]
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object(Bucket=name, Key="ds/none")
    assert e.value.response["Error"]["Code"] == "NoSuchKey"


@pytest.fixture(scope="module")
def pair():
    """Cluster B serves S3 with verification on; cluster A uses it as the
    backend of a bucket, signing with A's configured key."""
    b = Cluster(targets=2, mountpaths=1, extra="--s3_api_keys %s:%s" % (AK, SK)).start()
    a = Cluster(targets=2, mountpaths=1,
                extra="--s3_access_key %s --s3_secret_key %s" % (AK, SK)).start()
    yield a, b
    bad = a.cleanup() + b.cleanup()
    assert not bad, bad


def test_shoal_as_the_backend_of_shoal(pair):
    a, b = pair
    sb = client(b)
    sb.create_bucket(Bucket="origin")
    data = os.urandom((1 << 20) + 5)
    sb.put_object(Bucket="origin", Key="x/y z", Body=data)
    r = a.http.put(a.url + "/v1/buckets/fromb",
                     json={"backend": "s3://origin", "endpoint": b.url + "/s3",
                           "addressing": "path"})
    assert r.status_code == 201, r.text
    obj = a.url + "/v1/objects/fromb/x/y%20z"
    g = a.http.get(obj)
    assert g.status_code == 200 and g.content == data, g.text
    assert g.headers["X-Shoal-Cache"] == "miss"
    assert g.headers["ETag"] == '"%s"' % hashlib.md5(data).hexdigest()
    assert a.http.get(obj).headers["X-Shoal-Cache"] == "hit"
    # write-through: A signs the PUT, B verifies and stores it
    p = a.http.put(a.url + "/v1/objects/fromb/written", data=b"through A")
    assert p.status_code == 201, p.text
    assert sb.get_object(Bucket="origin", Key="written")["Body"].read() == b"through A"
    # A lists B's bucket (a signed ListObjectsV2)
    names = [o["name"] for o in a.http.get(a.url + "/v1/buckets/fromb/objects").json()["objects"]]
    assert names == ["written", "x/y z"]
    # the delete goes through too
    assert a.http.delete(a.url + "/v1/objects/fromb/written").status_code == 204
    with pytest.raises(botocore.exceptions.ClientError):
        sb.head_object(Bucket="origin", Key="written")


def test_wrong_key_is_refused_by_the_backend_cluster(pair):
    a, b = pair
    client(b).create_bucket(Bucket="locked")
    client(b).put_object(Bucket="locked", Key="k", Body=b"v")
    # a third cluster with the right key id but a wrong secret
    c = Cluster(targets=1, mountpaths=1,
                extra="--s3_access_key %s --s3_secret_key wrong-secret" % AK).start()
    try:
        r = requests.put(c.url + "/v1/buckets/bad",
                         json={"backend": "s3://locked", "endpoint": b.url + "/s3",
                               "addressing": "path"})
        assert r.status_code == 201
        g = requests.get(c.url + "/v1/objects/bad/k")
        assert g.status_code == 403 and "s3://locked" in g.text, g.text
    finally:
        assert not c.cleanup()


def conditional(s3, header, value, call):
    """call() with one more header on its request: a condition."""
    h = lambda params, **kw: params["headers"].__setitem__(header, value)
    s3.meta.events.register_first("before-call.s3.*", h)
    try:
        return call()
    finally:
        s3.meta.events.unregister("before-call.s3.*", h)


def refused(call):
    with pytest.raises(botocore.exceptions.ClientError) as e:
        call()
    return e.value.response["Error"]["Code"], e.value.response["ResponseMetadata"]["HTTPStatusCode"]


def test_conditional_writes_ask_the_backend(s3rver, front):
    """If-Match and If-None-Match on a bucket with a backend: an object
    only the backend has is judged by the backend's ETag (a HEAD there),
    a cached one by its copy here; a refused write reaches neither."""
    name = "cond%04d" % random.randrange(10**4)
    r = front.http.put(front.url + "/v1/buckets/" + name,
                       json={"backend": "s3://remote", "endpoint": s3rver.url,
                             "addressing": "path"})
    assert r.status_code == 201, r.text
    remote = s3rver.client()
    key = "cond/only-there-%d" % random.randrange(10**6)
    etag = remote.put_object(Bucket="remote", Key=key, Body=b"backend's")["ETag"]
    s3 = client(front)
    put = lambda body, k=key: (lambda: s3.put_object(Bucket=name, Key=k, Body=body))
    assert refused(lambda: conditional(s3, "If-None-Match", "*", put(b"x"))) == \
        ("PreconditionFailed", 412)
    assert refused(lambda: conditional(s3, "If-Match", '"0123"', put(b"x"))) == \
        ("PreconditionFailed", 412)
    assert refused(lambda: conditional(s3, "If-Match", etag, put(b"x", key + "-none"))) == \
        ("NoSuchKey", 404)
    assert remote.get_object(Bucket="remote", Key=key)["Body"].read() == b"backend's"
    conditional(s3, "If-Match", etag, put(b"new"))              # the backend's ETag: taken
    assert remote.get_object(Bucket="remote", Key=key)["Body"].read() == b"new"
    # now cached here: its copy's ETag decides
    now = s3.head_object(Bucket=name, Key=key)["ETag"]
    assert refused(lambda: conditional(s3, "If-None-Match", now, put(b"y"))) == \
        ("PreconditionFailed", 412)
    conditional(s3, "If-None-Match", etag, put(b"newer"))
    assert s3.get_object(Bucket=name, Key=key)["Body"].read() == b"newer"
    conditional(s3, "If-None-Match", "*", put(b"fresh", key + "-fresh"))
    assert remote.get_object(Bucket="remote", Key=key + "-fresh")["Body"].read() == b"fresh"
    # CompleteMultipartUpload too
    u = s3.create_multipart_upload(Bucket=name, Key=key)["UploadId"]
    p = s3.upload_part(Bucket=name, Key=key, UploadId=u, PartNumber=1, Body=b"part")
    done = lambda: s3.complete_multipart_upload(
        Bucket=name, Key=key, UploadId=u,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
    assert refused(lambda: conditional(s3, "If-None-Match", "*", done)) == \
        ("PreconditionFailed", 412)
    assert s3.get_object(Bucket=name, Key=key)["Body"].read() == b"newer"
