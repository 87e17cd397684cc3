"""The S3 API through a proxy, with boto3 in its default configuration (only
the endpoint changed) and raw HTTP for what SDKs never send."""
import datetime
import hashlib
import os
import random
import re
import time

import boto3
import botocore
import pytest
import requests
from botocore.config import Config

from conftest import Cluster

AK, SK = "SHOALTESTKEY", "shoal-test-secret"


@pytest.fixture(scope="module")
def s3c():
    c = Cluster(targets=3, mountpaths=1, extra="--s3_api_keys %s:%s" % (AK, SK)).start()
    yield c
    bad = c.cleanup()
    assert not bad, "sanitizer reports in %s (kept in %s)" % (bad, c.data)


def client(c, key=AK, secret=SK, **cfg):
    return boto3.client("s3", endpoint_url=c.url + "/s3", aws_access_key_id=key,
                        aws_secret_access_key=secret, region_name="us-east-1",
                        config=Config(**cfg) if cfg else None)


def err(e):
    return e.value.response["Error"]["Code"], e.value.response["ResponseMetadata"]["HTTPStatusCode"]


@pytest.fixture
def s3(s3c):
    return client(s3c)


@pytest.fixture
def bkt(s3):
    name = "s3b%06d" % random.randrange(10**6)
    s3.create_bucket(Bucket=name)
    yield name
    for o in s3.list_objects_v2(Bucket=name).get("Contents", []):
        s3.delete_object(Bucket=name, Key=o["Key"])
    s3.delete_bucket(Bucket=name)


def test_buckets(s3):
    name = "s3bk%06d" % random.randrange(10**6)
    assert s3.create_bucket(Bucket=name)["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert name in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    s3.head_bucket(Bucket=name)
    assert s3.get_bucket_location(Bucket=name).get("LocationConstraint") in (None, "")
    v = s3.get_bucket_versioning(Bucket=name)
    assert "Status" not in v
    # created again in the default region: 200, as us-east-1 answers
    assert s3.create_bucket(Bucket=name)["ResponseMetadata"]["HTTPStatusCode"] == 200
    s3.put_object(Bucket=name, Key="k", Body=b"x")
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.delete_bucket(Bucket=name)
    assert err(e) == ("BucketNotEmpty", 409)
    s3.delete_object(Bucket=name, Key="k")
    s3.delete_bucket(Bucket=name)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.head_bucket(Bucket=name)
    assert err(e)[1] == 404
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.list_objects_v2(Bucket=name)
    assert err(e) == ("NoSuchBucket", 404)


@pytest.mark.parametrize("size", [0, 1, 100000, 9 << 20])
def test_put_get_head_delete(s3, bkt, size):
    data = os.urandom(size)
    key = "dir/obj %d+ü.bin" % size
    r = s3.put_object(Bucket=bkt, Key=key, Body=data, Metadata={"color": "blue", "n": "1"},
                      ContentType="text/plain")
    assert r["ETag"] == '"%s"' % hashlib.md5(data).hexdigest()
    g = s3.get_object(Bucket=bkt, Key=key)
    assert g["Body"].read() == data
    assert g["ETag"] == r["ETag"] and g["ContentLength"] == size
    assert g["Metadata"] == {"color": "blue", "n": "1"}
    assert g["ContentType"] == "text/plain"
    h = s3.head_object(Bucket=bkt, Key=key)
    assert h["ContentLength"] == size and h["ETag"] == r["ETag"]
    assert h["Metadata"]["color"] == "blue"
    assert s3.delete_object(Bucket=bkt, Key=key)["ResponseMetadata"]["HTTPStatusCode"] == 204
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object(Bucket=bkt, Key=key)
    assert err(e) == ("NoSuchKey", 404)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.head_object(Bucket=bkt, Key=key)
    assert err(e)[1] == 404
    # deleting what is not there is not an error in S3
    assert s3.delete_object(Bucket=bkt, Key=key)["ResponseMetadata"]["HTTPStatusCode"] == 204


def test_ranges_and_conditions(s3, bkt):
    data = os.urandom(5000)
    etag = s3.put_object(Bucket=bkt, Key="r", Body=data)["ETag"]
    g = s3.get_object(Bucket=bkt, Key="r", Range="bytes=100-199")
    assert g["Body"].read() == data[100:200] and g["ContentRange"] == "bytes 100-199/5000"
    assert s3.get_object(Bucket=bkt, Key="r", Range="bytes=-10")["Body"].read() == data[-10:]
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object(Bucket=bkt, Key="r", Range="bytes=6000-7000")
    assert err(e) == ("InvalidRange", 416)
    assert s3.get_object(Bucket=bkt, Key="r", IfMatch=etag)["Body"].read() == data
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object(Bucket=bkt, Key="r", IfMatch='"0000"')
    assert err(e) == ("PreconditionFailed", 412)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object(Bucket=bkt, Key="r", IfNoneMatch=etag)
    assert err(e)[1] == 304
    future = datetime.datetime.utcnow() + datetime.timedelta(days=1)
    past = datetime.datetime.utcnow() - datetime.timedelta(days=1)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object(Bucket=bkt, Key="r", IfModifiedSince=future)
    assert err(e)[1] == 304
    assert s3.get_object(Bucket=bkt, Key="r", IfModifiedSince=past)["ContentLength"] == 5000
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object(Bucket=bkt, Key="r", IfUnmodifiedSince=past)
    assert err(e) == ("PreconditionFailed", 412)
    g = s3.get_object(Bucket=bkt, Key="r", ResponseContentType="image/png",
                      ResponseContentDisposition="attachment; filename=x.png",
                      ResponseCacheControl="no-cache")
    assert g["ContentType"] == "image/png" and g["CacheControl"] == "no-cache"
    assert g["ContentDisposition"] == "attachment; filename=x.png"


def test_content_md5_and_payload_hash(s3c, s3, bkt):
    import base64
    good = base64.b64encode(hashlib.md5(b"hello").digest()).decode()
    s3.put_object(Bucket=bkt, Key="m", Body=b"hello", ContentMD5=good)
    bad = base64.b64encode(hashlib.md5(b"other").digest()).decode()
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.put_object(Bucket=bkt, Key="m2", Body=b"hello", ContentMD5=bad)
    assert err(e) == ("BadDigest", 400)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.head_object(Bucket=bkt, Key="m2")
    assert err(e)[1] == 404  # nothing committed


def test_list_v2_v1_versions(s3, bkt):
    keys = ["a/1", "a/2", "a/b/3", "b/4", "c", "d e", "z/%"]
    for k in keys:
        s3.put_object(Bucket=bkt, Key=k, Body=k.encode())
    l = s3.list_objects_v2(Bucket=bkt)
    assert [o["Key"] for o in l["Contents"]] == sorted(keys) and l["KeyCount"] == len(keys)
    o = l["Contents"][0]
    assert o["Size"] == 3 and o["ETag"] == '"%s"' % hashlib.md5(b"a/1").hexdigest()
    assert abs((o["LastModified"].replace(tzinfo=None) - datetime.datetime.utcnow()).total_seconds()) < 300
    l = s3.list_objects_v2(Bucket=bkt, Delimiter="/")
    assert [o["Key"] for o in l["Contents"]] == ["c", "d e"]
    assert [p["Prefix"] for p in l["CommonPrefixes"]] == ["a/", "b/", "z/"]
    l = s3.list_objects_v2(Bucket=bkt, Prefix="a/", Delimiter="/")
    assert [o["Key"] for o in l["Contents"]] == ["a/1", "a/2"]
    assert [p["Prefix"] for p in l["CommonPrefixes"]] == ["a/b/"]
    # pages of 2 through the paginator, with and without a delimiter
    p = s3.get_paginator("list_objects_v2")
    got = [o["Key"] for pg in p.paginate(Bucket=bkt, PaginationConfig={"PageSize": 2})
           for o in pg.get("Contents", [])]
    assert got == sorted(keys)
    pages = list(p.paginate(Bucket=bkt, Delimiter="/", PaginationConfig={"PageSize": 2}))
    assert all(pg["KeyCount"] <= 2 for pg in pages)
    assert [x["Prefix"] for pg in pages for x in pg.get("CommonPrefixes", [])] == ["a/", "b/", "z/"]
    assert [x["Key"] for pg in pages for x in pg.get("Contents", [])] == ["c", "d e"]
    l = s3.list_objects_v2(Bucket=bkt, StartAfter="b/4")
    assert [o["Key"] for o in l["Contents"]] == ["c", "d e", "z/%"]
    l = s3.list_objects_v2(Bucket=bkt, MaxKeys=0)
    assert l["KeyCount"] == 0 and not l["IsTruncated"]
    l = s3.list_objects_v2(Bucket=bkt, Prefix="z/", EncodingType="url")
    assert [o["Key"] for o in l["Contents"]] == ["z/%25"]  # asked for: left encoded
    # v1 with markers
    p1 = s3.get_paginator("list_objects")
    got = [o["Key"] for pg in p1.paginate(Bucket=bkt, PaginationConfig={"PageSize": 3})
           for o in pg.get("Contents", [])]
    assert got == sorted(keys)
    l = s3.list_objects(Bucket=bkt, Delimiter="/", MaxKeys=2)
    assert l["IsTruncated"] and l["NextMarker"] == "b/"
    l = s3.list_objects(Bucket=bkt, Delimiter="/", Marker="b/")
    assert [o["Key"] for o in l.get("Contents", [])] == ["c", "d e"]
    assert [x["Prefix"] for x in l["CommonPrefixes"]] == ["z/"]
    v = s3.list_object_versions(Bucket=bkt)
    assert sorted(x["Key"] for x in v["Versions"]) == sorted(keys)
    assert all(x["VersionId"] == "null" and x["IsLatest"] for x in v["Versions"])


def test_bad_signatures(s3c, bkt):
    with pytest.raises(botocore.exceptions.ClientError) as e:
        client(s3c, secret="wrong").list_objects_v2(Bucket=bkt)
    assert err(e) == ("SignatureDoesNotMatch", 403)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        client(s3c, key="NOSUCHKEY").list_buckets()
    assert err(e) == ("InvalidAccessKeyId", 403)
    r = requests.get(s3c.url + "/s3/" + bkt)
    assert r.status_code == 403 and "<Code>AccessDenied</Code>" in r.text
    assert "<RequestId>" in r.text and r.headers["Content-Type"] == "application/xml"


def test_clock_skew(s3c, bkt, monkeypatch):
    import botocore.auth
    real = datetime.datetime

    class Skewed(real):
        @classmethod
        def utcnow(cls):
            return real.utcnow() - datetime.timedelta(hours=1)

    monkeypatch.setattr(botocore.auth.datetime, "datetime", Skewed)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        client(s3c, retries={"max_attempts": 1}).list_objects_v2(Bucket=bkt)
    assert err(e) == ("RequestTimeTooSkewed", 403)


def test_malformed_requests(s3c, s3, bkt):
    # bad bucket names, bad keys, bad list arguments: XML errors, daemon fine
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.create_bucket(Bucket="x")
    assert err(e) == ("InvalidBucketName", 400)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.put_object(Bucket=bkt, Key="a/../b", Body=b"")
    assert err(e)[1] == 400
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.list_objects_v2(Bucket=bkt, ContinuationToken="zz")
    assert err(e) == ("InvalidArgument", 400)
    assert requests.get(s3c.url + "/v1/health").status_code == 200


def test_multipart(s3, bkt, tmp_path):
    from boto3.s3.transfer import TransferConfig
    data = os.urandom(21 << 20)
    src = tmp_path / "big.bin"
    src.write_bytes(data)
    s3.upload_file(str(src), bkt, "big/obj", ExtraArgs={"Metadata": {"k": "v"}},
                   Config=TransferConfig(multipart_threshold=8 << 20, multipart_chunksize=8 << 20))
    h = s3.head_object(Bucket=bkt, Key="big/obj")
    md5s = b"".join(hashlib.md5(data[i:i + (8 << 20)]).digest()
                    for i in range(0, len(data), 8 << 20))
    assert h["ETag"] == '"%s-3"' % hashlib.md5(md5s).hexdigest()
    assert h["ContentLength"] == len(data) and h["Metadata"] == {"k": "v"}
    assert s3.get_object(Bucket=bkt, Key="big/obj")["Body"].read() == data

    u = s3.create_multipart_upload(Bucket=bkt, Key="x", ContentType="text/csv")["UploadId"]
    p1 = s3.upload_part(Bucket=bkt, Key="x", UploadId=u, PartNumber=1, Body=b"a" * (5 << 20))
    p2 = s3.upload_part(Bucket=bkt, Key="x", UploadId=u, PartNumber=2, Body=b"tail")
    parts = s3.list_parts(Bucket=bkt, Key="x", UploadId=u)["Parts"]
    assert [(p["PartNumber"], p["Size"], p["ETag"]) for p in parts] == \
        [(1, 5 << 20, p1["ETag"]), (2, 4, p2["ETag"])]
    assert [x["Key"] for x in s3.list_multipart_uploads(Bucket=bkt)["Uploads"]] == ["x"]
    bad = [({"Parts": [{"PartNumber": 1, "ETag": '"00"'}]}, "InvalidPart"),
           ({"Parts": [{"PartNumber": 2, "ETag": p2["ETag"]},
                       {"PartNumber": 1, "ETag": p1["ETag"]}]}, "InvalidPartOrder"),
           ({"Parts": [{"PartNumber": 2, "ETag": p2["ETag"]},
                       {"PartNumber": 3, "ETag": p2["ETag"]}]}, "EntityTooSmall")]
    for mpu, code in bad:
        with pytest.raises(botocore.exceptions.ClientError) as e:
            s3.complete_multipart_upload(Bucket=bkt, Key="x", UploadId=u, MultipartUpload=mpu)
        assert err(e)[0] in (code, "InvalidPart"), (code, err(e))
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.head_object(Bucket=bkt, Key="x")
    assert err(e)[1] == 404  # nothing visible before completion
    # part 1 re-sent: named twice, its last entry (the later upload's ETag)
    # is the one that counts
    old1 = p1
    p1 = s3.upload_part(Bucket=bkt, Key="x", UploadId=u, PartNumber=1, Body=b"a" * (5 << 20))
    assert p1["ETag"] == old1["ETag"]
    stale = s3.upload_part(Bucket=bkt, Key="x", UploadId=u, PartNumber=2, Body=b"old tail")
    p2 = s3.upload_part(Bucket=bkt, Key="x", UploadId=u, PartNumber=2, Body=b"tail")
    r = s3.complete_multipart_upload(
        Bucket=bkt, Key="x", UploadId=u,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p1["ETag"]},
                                   {"PartNumber": 2, "ETag": stale["ETag"]},
                                   {"PartNumber": 2, "ETag": p2["ETag"]}]})
    want = hashlib.md5(hashlib.md5(b"a" * (5 << 20)).digest() + hashlib.md5(b"tail").digest())
    assert r["ETag"] == '"%s-2"' % want.hexdigest()
    g = s3.get_object(Bucket=bkt, Key="x")
    assert g["ContentType"] == "text/csv" and g["Body"].read() == b"a" * (5 << 20) + b"tail"
    assert s3.list_multipart_uploads(Bucket=bkt).get("Uploads", []) == []
    # abort drops the parts; the id is then unknown
    u = s3.create_multipart_upload(Bucket=bkt, Key="y")["UploadId"]
    s3.upload_part(Bucket=bkt, Key="y", UploadId=u, PartNumber=1, Body=b"zz")
    s3.abort_multipart_upload(Bucket=bkt, Key="y", UploadId=u)
    for call in (lambda: s3.list_parts(Bucket=bkt, Key="y", UploadId=u),
                 lambda: s3.upload_part(Bucket=bkt, Key="y", UploadId=u, PartNumber=1, Body=b"")):
        with pytest.raises(botocore.exceptions.ClientError) as e:
            call()
        assert err(e) == ("NoSuchUpload", 404)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.upload_part(Bucket=bkt, Key="y", UploadId="f" * 32, PartNumber=0, Body=b"")
    assert err(e)[1] in (400, 404)


def test_delete_objects(s3, bkt):
    for k in ("a", "b", "c/d"):
        s3.put_object(Bucket=bkt, Key=k, Body=b"1")
    r = s3.delete_objects(Bucket=bkt, Delete={"Objects": [{"Key": "a"}, {"Key": "c/d"},
                                                          {"Key": "missing"}]})
    assert sorted(d["Key"] for d in r["Deleted"]) == ["a", "c/d", "missing"]
    assert not r.get("Errors")
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bkt)["Contents"]] == ["b"]
    r = s3.delete_objects(Bucket=bkt, Delete={"Objects": [{"Key": "b"}], "Quiet": True})
    assert not r.get("Deleted") and s3.list_objects_v2(Bucket=bkt)["KeyCount"] == 0


def test_malformed_xml_bodies(s3c, s3, bkt):
    # signed raw requests with broken bodies: S3 errors, never a crash
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    creds = Credentials(AK, SK)
    for body in (b"<Delete><Object><Key>a</Key>", b"not xml at all", b"<Other/>",
                 b"<Delete>" + b"<Object><Key>k</Key></Object>" * 1001 + b"</Delete>",
                 b"<!DOCTYPE x [<!ENTITY a '" + b"x" * 1000 + b"'>]><Delete><Object><Key>&a;</Key></Object></Delete>"):
        req = AWSRequest(method="POST", url="%s/s3/%s?delete" % (s3c.url, bkt), data=body)
        req.headers["x-amz-content-sha256"] = hashlib.sha256(body).hexdigest()
        S3SigV4Auth(creds, "s3", "us-east-1").add_auth(req)
        r = requests.post(req.url, data=body, headers=dict(req.headers))
        assert r.status_code == 400 and "<Code>MalformedXML</Code>" in r.text, r.text
    assert requests.get(s3c.url + "/v1/health").status_code == 200


def test_copy_object(s3, bkt):
    data = os.urandom(3 << 20)
    s3.put_object(Bucket=bkt, Key="src", Body=data, Metadata={"a": "1"}, ContentType="x/y")
    r = s3.copy_object(Bucket=bkt, Key="dst/copy", CopySource={"Bucket": bkt, "Key": "src"})
    assert r["CopyObjectResult"]["ETag"] == '"%s"' % hashlib.md5(data).hexdigest()
    g = s3.get_object(Bucket=bkt, Key="dst/copy")
    assert g["Body"].read() == data and g["Metadata"] == {"a": "1"} and g["ContentType"] == "x/y"
    s3.copy_object(Bucket=bkt, Key="dst/replaced", CopySource="%s/src" % bkt,
                   MetadataDirective="REPLACE", Metadata={"b": "2"}, ContentType="t/u")
    h = s3.head_object(Bucket=bkt, Key="dst/replaced")
    assert h["Metadata"] == {"b": "2"} and h["ContentType"] == "t/u"
    # the managed copy (boto3's transfer manager) too
    s3.copy({"Bucket": bkt, "Key": "src"}, bkt, "dst/managed")
    assert s3.get_object(Bucket=bkt, Key="dst/managed")["Body"].read() == data
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.copy_object(Bucket=bkt, Key="x", CopySource={"Bucket": bkt, "Key": "missing"})
    assert err(e) == ("NoSuchKey", 404)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.copy_object(Bucket=bkt, Key="x", CopySource={"Bucket": "nobucket00", "Key": "k"})
    assert err(e) == ("NoSuchBucket", 404)


def test_copy_header_needs_a_proxy(s3c, s3, bkt):
    # a client cannot make a target fetch a URL of its choosing
    s3.put_object(Bucket=bkt, Key="k", Body=b"v")
    t = s3c.node_url(s3c.target_names()[0])
    r = requests.put(t + "/v1/objects/%s/x" % bkt, data=b"",
                     headers={"X-Shoal-S3": "1", "X-Shoal-Copy-From": "http://127.0.0.1:1/"})
    assert r.status_code in (403, 307), r.text


def test_presigned_urls(s3c, s3, bkt):
    import subprocess
    s3.put_object(Bucket=bkt, Key="p/q r", Body=b"presigned")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bkt, "Key": "p/q r"},
                                    ExpiresIn=300)
    out = subprocess.run(["curl", "-sf", url], capture_output=True)
    assert out.returncode == 0 and out.stdout == b"presigned"
    # tampering with the URL, or a lapsed expiry, is refused
    r = requests.get(url.replace("p/q%20r", "p/q%20s"))
    assert r.status_code == 403 and "<Code>SignatureDoesNotMatch</Code>" in r.text
    put = s3.generate_presigned_url("put_object", Params={"Bucket": bkt, "Key": "up"},
                                    ExpiresIn=300)
    out = subprocess.run(["curl", "-sf", "-X", "PUT", "-H", "Content-Type:", "--data-binary",
                          "via curl", put],
                         capture_output=True)
    assert out.returncode == 0
    assert s3.get_object(Bucket=bkt, Key="up")["Body"].read() == b"via curl"
    # a URL past its expiry is refused
    import time
    old = s3.generate_presigned_url("get_object", Params={"Bucket": bkt, "Key": "up"},
                                    ExpiresIn=1)
    time.sleep(2.1)
    r = requests.get(old)
    assert r.status_code == 403 and "<Code>AccessDenied</Code>" in r.text and "expired" in r.text


def chunked_put(url, key_id, secret, body, chunk=64 << 10, tamper=None):
    """A PUT with STREAMING-AWS4-HMAC-SHA256-PAYLOAD, built as the S3
    documentation lays it out (each chunk signed, chained from the seed)."""
    import hmac
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    chunks = [body[i:i + chunk] for i in range(0, len(body), chunk)] + [b""]
    enc_len = sum(len("%x;chunk-signature=%s\r\n" % (len(c), "0" * 64)) + len(c) + 2
                  for c in chunks)
    req = AWSRequest(method="PUT", url=url, data=b"")
    req.headers["x-amz-content-sha256"] = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
    req.headers["Content-Encoding"] = "aws-chunked"
    req.headers["x-amz-decoded-content-length"] = str(len(body))
    req.headers["Content-Length"] = str(enc_len)
    class Streaming(S3SigV4Auth):
        def payload(self, request):
            return "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"

    Streaming(Credentials(key_id, secret), "s3", "us-east-1").add_auth(req)
    seed = req.headers["Authorization"].split("Signature=")[1]
    amzdate = req.headers["X-Amz-Date"]
    scope = "%s/us-east-1/s3/aws4_request" % amzdate[:8]

    def h(k, m):
        return hmac.new(k, m.encode(), "sha256").digest()

    key = h(h(h(h(("AWS4" + secret).encode(), amzdate[:8]), "us-east-1"), "s3"), "aws4_request")
    prev, out = seed, b""
    for i, c in enumerate(chunks):
        sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amzdate, scope, prev,
                         hashlib.sha256(b"").hexdigest(), hashlib.sha256(c).hexdigest()])
        sig = hmac.new(key, sts.encode(), "sha256").hexdigest()
        prev = sig
        data = c if tamper != i else bytes([c[0] ^ 1]) + c[1:]
        out += b"%x;chunk-signature=%s\r\n" % (len(c), sig.encode()) + data + b"\r\n"
    hdrs = dict(req.headers)
    return requests.put(url, data=out, headers=hdrs)


def test_streaming_signed_upload(s3c, s3, bkt):
    body = os.urandom(200000)
    url = "%s/s3/%s/chunked" % (s3c.url, bkt)
    r = chunked_put(url, AK, SK, body)
    assert r.status_code == 200, r.text
    assert r.headers["ETag"] == '"%s"' % hashlib.md5(body).hexdigest()
    assert s3.get_object(Bucket=bkt, Key="chunked")["Body"].read() == body
    # one flipped byte in the second chunk: refused, and nothing replaced
    r = chunked_put(url, AK, SK, os.urandom(200000), tamper=1)
    assert r.status_code == 403 and "<Code>SignatureDoesNotMatch</Code>" in r.text
    assert s3.get_object(Bucket=bkt, Key="chunked")["Body"].read() == body
    # a signed payload hash that does not match the body
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    class Claimed(S3SigV4Auth):
        def payload(self, request):
            return hashlib.sha256(b"claimed").hexdigest()

    req = AWSRequest(method="PUT", url="%s/s3/%s/hashed" % (s3c.url, bkt), data=b"actual")
    Claimed(Credentials(AK, SK), "s3", "us-east-1").add_auth(req)
    r = requests.put(req.url, data=b"actual", headers=dict(req.headers))
    assert r.status_code == 400 and "XAmzContentSHA256Mismatch" in r.text
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.head_object(Bucket=bkt, Key="hashed")
    assert err(e)[1] == 404


def signed(method, url, body=b"", headers=None, payload=None):
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    class Auth(S3SigV4Auth):
        def payload(self, request):
            return payload or super().payload(request)

    req = AWSRequest(method=method, url=url, data=body, headers=headers or {})
    Auth(Credentials(AK, SK), "s3", "us-east-1").add_auth(req)
    return dict(req.headers)


def test_virtual_host_style(s3c, s3, bkt):
    import http.client
    s3.put_object(Bucket=bkt, Key="v/h", Body=b"vhost")
    host = "%s.shoal.test:%d" % (bkt, s3c.port)
    for path, want in (("/s3/v/h", b"vhost"), ("/s3/?list-type=2", b"<Key>v/h</Key>")):
        hdrs = signed("GET", "http://%s%s" % (host, path))
        hdrs["Host"] = host  # signed as such; the connection goes to 127.0.0.1
        conn = http.client.HTTPConnection("127.0.0.1", s3c.port, timeout=10)
        conn.request("GET", path, headers=hdrs)
        resp = conn.getresponse()
        body = resp.read()
        conn.close()
        assert resp.status == 200 and want in body, body


@pytest.fixture(scope="module")
def redir():
    c = Cluster(targets=2, mountpaths=1,
                extra="--s3_api_keys %s:%s --s3_redirect true" % (AK, SK)).start()
    yield c
    bad = c.cleanup()
    assert not bad, "sanitizer reports in %s (kept in %s)" % (bad, c.data)


def test_redirect_mode(redir):
    s3 = client(redir)
    s3.create_bucket(Bucket="rdr")
    url = redir.url + "/s3/rdr/obj"
    r = requests.put(url, data=b"put via redirect", headers=signed("PUT", url, b"put via redirect"),
                     allow_redirects=False)
    assert r.status_code == 307
    assert "<Code>TemporaryRedirect</Code>" in r.text and "<Endpoint>127.0.0.1:" in r.text
    loc = r.headers["Location"]
    assert "shoal_sig=" in loc and "shoal_s3=1" in loc
    r2 = requests.put(loc, data=b"put via redirect")
    assert r2.status_code == 200 and r2.headers["ETag"] == '"%s"' % hashlib.md5(b"put via redirect").hexdigest()
    g = requests.get(url, headers=signed("GET", url))  # requests follows the 307
    assert g.status_code == 200 and g.content == b"put via redirect"
    assert g.history and g.history[0].status_code == 307
    # HEAD is answered by the proxy, never redirected
    h = s3.head_object(Bucket="rdr", Key="obj")
    assert h["ContentLength"] == 16
    # errors from the target are S3 XML too
    m = requests.get(redir.url + "/s3/rdr/missing", headers=signed("GET", redir.url + "/s3/rdr/missing"))
    assert m.status_code == 404 and "<Code>NoSuchKey</Code>" in m.text


def test_forwarded_get_survives_clients_and_targets(s3c, s3, bkt):
    """The GET relay (a pooled raw connection per target, the body spliced):
    a client leaving mid-body, and targets restarted under pooled
    connections, leave every later GET whole."""
    import socket
    data = os.urandom(24 << 20)
    s3.put_object(Bucket=bkt, Key="big", Body=data)
    url = "%s/s3/%s/big" % (s3c.url, bkt)
    for _ in range(3):
        hdrs = signed("GET", url)
        s = socket.create_connection(("127.0.0.1", s3c.port))
        s.sendall(("GET /s3/%s/big HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % (bkt, s3c.port)).encode() +
                  "".join("%s: %s\r\n" % kv for kv in hdrs.items()).encode() + b"\r\n")
        got = s.recv(65536)
        assert got.startswith(b"HTTP/1.1 200")
        s.close()  # gone mid-body
    assert s3.get_object(Bucket=bkt, Key="big")["Body"].read() == data
    for t in s3c.target_names():
        s3c.sh("stop-node", t)
        s3c.sh("start-node", t)
    for t in s3c.target_names():
        s3c.wait_healthy(t)
    for _ in range(3):
        assert s3.get_object(Bucket=bkt, Key="big")["Body"].read() == data
    g = s3.get_object(Bucket=bkt, Key="big", Range="bytes=100-199")
    assert g["Body"].read() == data[100:200]
    assert requests.get(s3c.url + "/v1/health").status_code == 200


def test_oversized_put_is_refused_before_its_body(s3c, bkt):
    import socket
    import time
    url = "%s/s3/%s/huge" % (s3c.url, bkt)
    hdrs = signed("PUT", url, payload="UNSIGNED-PAYLOAD")
    hdrs["Host"] = "127.0.0.1:%d" % s3c.port
    hdrs["Content-Length"] = str(6 << 30)
    hdrs["Expect"] = "100-continue"
    s = socket.create_connection(("127.0.0.1", s3c.port), timeout=10)
    s.sendall(("PUT /s3/%s/huge HTTP/1.1\r\n" % bkt).encode() +
              "".join("%s: %s\r\n" % kv for kv in hdrs.items()).encode() + b"\r\n")
    t = time.time()
    got = s.recv(65536)
    s.close()
    assert got.startswith(b"HTTP/1.1 400") and b"<Code>EntityTooLarge</Code>" in got, got
    assert time.time() - t < 5
    assert requests.get(s3c.url + "/v1/health").status_code == 200


def put_head(s3c, bkt, key, length, extra=None):
    """A SigV4-signed PUT head with an UNSIGNED-PAYLOAD body of length bytes."""
    url = "%s/s3/%s/%s" % (s3c.url, bkt, key)
    hdrs = signed("PUT", url, payload="UNSIGNED-PAYLOAD")
    hdrs["Host"] = "127.0.0.1:%d" % s3c.port
    hdrs["Content-Length"] = str(length)
    hdrs.update(extra or {})
    return (("PUT /s3/%s/%s HTTP/1.1\r\n" % (bkt, key)) +
            "".join("%s: %s\r\n" % kv for kv in hdrs.items()) + "\r\n").encode()


def read_answer(s):
    got = b""
    while b"\r\n\r\n" not in got:
        b = s.recv(65536)
        if not b:
            break
        got += b
    return got


def test_large_plain_put_is_spliced_whole(s3c, s3, bkt):
    """Bodies of 1 MiB and more that need no check go client -> target
    without a copy in the proxy: every byte arrives, the connection carries
    the next request, a 100 Continue is honoured, and a body cut short
    leaves no object."""
    import hashlib
    import socket
    a, b = os.urandom(3 << 20), os.urandom((2 << 20) + 7)
    s = socket.create_connection(("127.0.0.1", s3c.port), timeout=20)
    s.sendall(put_head(s3c, bkt, "sp/a", len(a)) + a)
    got = read_answer(s)
    assert got.startswith(b"HTTP/1.1 200"), got
    assert hashlib.md5(a).hexdigest().encode() in got
    # the same connection: head and body together in one send
    s.sendall(put_head(s3c, bkt, "sp/b", len(b), {"Expect": "100-continue"}))
    assert read_answer(s).startswith(b"HTTP/1.1 100")
    s.sendall(b)
    assert read_answer(s).startswith(b"HTTP/1.1 200")
    s.close()
    assert s3.get_object(Bucket=bkt, Key="sp/a")["Body"].read() == a
    assert s3.get_object(Bucket=bkt, Key="sp/b")["Body"].read() == b
    # a body cut short: refused, and nothing is visible under its name
    s = socket.create_connection(("127.0.0.1", s3c.port), timeout=20)
    s.sendall(put_head(s3c, bkt, "sp/cut", 4 << 20) + a[:1 << 20])
    s.shutdown(socket.SHUT_WR)
    got = read_answer(s)
    s.close()
    assert got == b"" or got.startswith(b"HTTP/1.1 400"), got
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.head_object(Bucket=bkt, Key="sp/cut")
    assert err(e)[1] == 404
    assert requests.get(s3c.url + "/v1/health").status_code == 200


def test_large_bodies_etags_are_their_md5(s3c, s3, bkt):
    """A body of 8 MiB and more is MD5'd from its work file on the I/O pool
    while it comes, or on the loop when no core is free (several at once
    here, on a machine of few cores): every ETag is the body's MD5, a
    wrong Content-MD5 is BadDigest with nothing committed, and a body cut
    in the middle of a turn leaves no object and a live target."""
    import base64
    import concurrent.futures
    import socket
    bodies = [os.urandom((12 << 20) + i * 4099) for i in range(4)]

    def put(i):
        md5 = hashlib.md5(bodies[i])
        r = client(s3c).put_object(Bucket=bkt, Key="lane/%d" % i, Body=bodies[i],
                                   ContentMD5=base64.b64encode(md5.digest()).decode())
        return r["ETag"].strip('"') == md5.hexdigest()
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        assert all(ex.map(put, range(4)))
    for i in (0, 3):
        o = s3.get_object(Bucket=bkt, Key="lane/%d" % i)
        assert o["ETag"].strip('"') == hashlib.md5(bodies[i]).hexdigest()
        assert o["Body"].read() == bodies[i]
    r = s3.copy_object(Bucket=bkt, Key="lane/copy", CopySource={"Bucket": bkt, "Key": "lane/1"})
    assert r["CopyObjectResult"]["ETag"].strip('"') == hashlib.md5(bodies[1]).hexdigest()
    bad = base64.b64encode(hashlib.md5(b"other").digest()).decode()
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.put_object(Bucket=bkt, Key="lane/bad", Body=bodies[1], ContentMD5=bad)
    assert err(e) == ("BadDigest", 400)
    s = socket.create_connection(("127.0.0.1", s3c.port), timeout=20)
    s.sendall(put_head(s3c, bkt, "lane/cut", len(bodies[2])) + bodies[2][:9 << 20])
    s.shutdown(socket.SHUT_WR)
    got = read_answer(s)
    s.close()
    assert got == b"" or got.startswith(b"HTTP/1.1 400"), got
    for k in ("lane/bad", "lane/cut"):
        with pytest.raises(botocore.exceptions.ClientError) as e:
            s3.head_object(Bucket=bkt, Key=k)
        assert err(e)[1] == 404     # nothing committed
    assert requests.get(s3c.url + "/v1/health").status_code == 200


def test_metadata_limit(s3, bkt):
    big = {"k%d" % i: "v" * 200 for i in range(12)}  # over S3's 2 KiB
    for call in (lambda: s3.put_object(Bucket=bkt, Key="m", Body=b"x", Metadata=big),
                 lambda: s3.create_multipart_upload(Bucket=bkt, Key="m", Metadata=big)):
        with pytest.raises(botocore.exceptions.ClientError) as e:
            call()
        assert err(e) == ("MetadataTooLarge", 400)
    u = s3.create_multipart_upload(Bucket=bkt, Key="m", Metadata={"Mixed-Case": "v"})["UploadId"]
    p = s3.upload_part(Bucket=bkt, Key="m", UploadId=u, PartNumber=1, Body=b"body")
    s3.complete_multipart_upload(Bucket=bkt, Key="m", UploadId=u,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
    assert s3.head_object(Bucket=bkt, Key="m")["Metadata"] == {"mixed-case": "v"}


def proxy_metrics(c):
    """The proxy's counters from /metrics: {(family, api, op or class): value}."""
    out = {}
    for line in requests.get(c.url + "/metrics").text.splitlines():
        m = re.match(r'(\w+)\{([^}]*)\} (\S+)$', line)
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
            key = (m.group(1), labels.get("api", ""), labels.get("op") or labels.get("class") or "")
            out[key] = float(m.group(3))
    return out


def test_s3_requests_are_counted(s3c, s3, bkt):
    before = proxy_metrics(s3c)
    body = os.urandom(100000)
    s3.put_object(Bucket=bkt, Key="m1", Body=body)
    assert s3.get_object(Bucket=bkt, Key="m1")["Body"].read() == body
    s3.head_object(Bucket=bkt, Key="m1")
    s3.list_objects_v2(Bucket=bkt)
    s3.list_objects(Bucket=bkt)
    s3.get_bucket_location(Bucket=bkt)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object(Bucket=bkt, Key="never-stored")
    assert err(e) == ("NoSuchKey", 404)
    s3.delete_object(Bucket=bkt, Key="m1")
    want = {("shoal_requests_total", "s3", "put"): 1, ("shoal_requests_total", "s3", "get"): 2,
            ("shoal_requests_total", "s3", "head"): 1, ("shoal_requests_total", "s3", "list"): 2,
            ("shoal_requests_total", "s3", "delete"): 1,
            ("shoal_requests_total", "s3", "other"): 1,
            ("shoal_errors_total", "s3", "4xx"): 1, ("shoal_errors_total", "s3", "5xx"): 0,
            ("shoal_requests_total", "native", "get"): 0}
    deadline = time.time() + 5  # a relayed answer is counted as its last byte leaves
    while True:
        after = proxy_metrics(s3c)
        got = {k: after.get(k, 0) - before.get(k, 0) for k in want}
        if got == want or time.time() > deadline:
            break
        time.sleep(0.1)
    assert got == want
    moved = {k: after.get(k, 0) - before.get(k, 0)
             for k in (("shoal_bytes_in_total", "", ""), ("shoal_bytes_out_total", "", ""))}
    assert moved[("shoal_bytes_in_total", "", "")] >= len(body), moved
    assert moved[("shoal_bytes_out_total", "", "")] >= len(body), moved


def test_list_names_that_need_escaping(s3, bkt):
    """XML's special characters, control bytes (returned URL-encoded) and
    multi-byte UTF-8 through ListObjectsV2 and v1, page by page."""
    keys = ["a<b>&c", "q\"'", "ctl\x02x", "\u00fc-\u00f1/\u65e5\u672c", "sp ace", "x/y/z", "x/\u00e9"]
    for k in keys:
        s3.put_object(Bucket=bkt, Key=k, Body=k.encode())
    want = sorted(keys, key=lambda s: s.encode())
    for size in (1, 2, 1000):
        p = s3.get_paginator("list_objects_v2")
        got = [o for pg in p.paginate(Bucket=bkt, PaginationConfig={"PageSize": size})
               for o in pg.get("Contents", [])]
        assert [o["Key"] for o in got] == want
        assert [o["Size"] for o in got] == [len(k.encode()) for k in want]
        p1 = s3.get_paginator("list_objects")
        assert [o["Key"] for pg in p1.paginate(Bucket=bkt, PaginationConfig={"PageSize": size})
                for o in pg.get("Contents", [])] == want
    l = s3.list_objects_v2(Bucket=bkt, Prefix="x/", Delimiter="/")
    assert [o["Key"] for o in l["Contents"]] == ["x/\u00e9"]
    assert [c["Prefix"] for c in l["CommonPrefixes"]] == ["x/y/"]


def test_list_missing_bucket(s3):
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.list_objects_v2(Bucket="nosuchbucket%06d" % random.randrange(10**6))
    assert err(e) == ("NoSuchBucket", 404)
