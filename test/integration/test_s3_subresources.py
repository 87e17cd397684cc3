"""S3 subresources (?acl, ?tagging, ... ) never fall through to the plain
operation; tagging, ACLs and UploadPartCopy as S3 serves them; the aws
cli's multipart copy; aws-chunked bodies sent straight to a target's S3
root decoded by the one strict decoder."""
import base64
import hashlib
import os
import random
import re
import subprocess
import zlib

import botocore
import pytest
import requests

from test_s3 import AK, SK, chunked_put, err, s3, s3c, signed  # noqa: F401 (fixtures)

SUBRESOURCES = [
    "acl", "tagging", "cors", "policy", "policyStatus", "lifecycle", "website", "versioning",
    "logging", "notification", "replication", "encryption", "object-lock", "retention",
    "legal-hold", "ownershipControls", "publicAccessBlock", "accelerate", "requestPayment",
    "analytics", "metrics", "inventory", "intelligent-tiering", "restore", "select",
    "select-type", "torrent", "attributes", "uploads", "uploadId", "location", "versions",
    "delete", "renameObject",
]


def new_bucket(s3):
    name = "sub%06d" % random.randrange(10**6)
    s3.create_bucket(Bucket=name)
    return name


def send(method, url, body=b"", headers=None):
    hdrs = signed(method, url, body, headers)
    return requests.request(method, url, data=body, headers=hdrs, allow_redirects=False)


def test_subresources_never_fall_through(s3c, s3):
    """Every subresource S3 defines, with every method, on a bucket and on
    an object: whatever the answer, the object keeps its bytes and stays
    listed, and the (empty) bucket stays."""
    full, empty = new_bucket(s3), new_bucket(s3)
    data = os.urandom(3000)
    s3.put_object(Bucket=full, Key="k", Body=data)
    bodies = {"PUT": b"<Junk/>", "POST": b"<Junk/>"}
    unserved = 0
    for sub in SUBRESOURCES:
        for method in ("GET", "PUT", "POST", "DELETE"):
            for url in ("%s/s3/%s/k?%s" % (s3c.url, full, sub),
                        "%s/s3/%s?%s" % (s3c.url, empty, sub)):
                what = "%s %s" % (method, url)
                r = send(method, url, bodies.get(method, b""))
                assert r.status_code != 500, what + ": " + r.text
                if r.status_code == 501:
                    assert "<Code>NotImplemented</Code>" in r.text, what
                    unserved += 1
                if method == "GET" and r.status_code == 200:
                    assert r.content != data, what + " answered the object's bytes"
                if sub == "uploads" and method == "POST" and r.status_code == 200:
                    u = re.search(r"<UploadId>(\w+)</UploadId>", r.text).group(1)
                    s3.abort_multipart_upload(Bucket=full, Key="k", UploadId=u)
                got = s3.get_object(Bucket=full, Key="k")["Body"].read()
                assert got == data, what + " changed the object"
                assert [o["Key"] for o in s3.list_objects_v2(Bucket=full)["Contents"]] == ["k"]
                s3.head_bucket(Bucket=empty)
                s3.head_bucket(Bucket=full)
    assert unserved > 200  # most of the table is refused, not guessed at
    # a canned ACL on PUT ?acl does not replace the object either
    r = send("PUT", "%s/s3/%s/k?acl" % (s3c.url, full), headers={"x-amz-acl": "private"})
    assert r.status_code == 200, r.text
    r = send("PUT", "%s/s3/%s/k?acl" % (s3c.url, full), headers={"x-amz-acl": "aws-exec-read"})
    assert r.status_code == 200, r.text
    assert s3.get_object(Bucket=full, Key="k")["Body"].read() == data


def test_object_tagging(s3c, s3):
    b = new_bucket(s3)
    s3.put_object(Bucket=b, Key="t", Body=b"tagged")
    assert s3.get_object_tagging(Bucket=b, Key="t")["TagSet"] == []
    tags = [{"Key": "project", "Value": "shoal"}, {"Key": "ü ñ+=.:/@", "Value": ""},
            {"Key": "k" * 128, "Value": "v" * 256}]
    s3.put_object_tagging(Bucket=b, Key="t", Tagging={"TagSet": tags})
    # returned sorted by key, as S3 does, whatever the order given
    bykey = sorted(tags, key=lambda t: t["Key"].encode())
    assert bykey != tags and s3.get_object_tagging(Bucket=b, Key="t")["TagSet"] == bykey
    tags = bykey
    assert s3.get_object(Bucket=b, Key="t")["Body"].read() == b"tagged"
    # S3's limits: 10 tags, 128/256 characters, no key twice
    too_many = [{"Key": "k%d" % i, "Value": "v"} for i in range(11)]
    for bad in (too_many, [{"Key": "k" * 129, "Value": ""}], [{"Key": "k", "Value": "v" * 257}],
                [{"Key": "k", "Value": "1"}, {"Key": "k", "Value": "2"}],
                [{"Key": "aws:reserved", "Value": "v"}]):
        with pytest.raises(botocore.exceptions.ClientError) as e:
            s3.put_object_tagging(Bucket=b, Key="t", Tagging={"TagSet": bad})
        assert err(e) == ("InvalidTag", 400), bad
    s3.put_object_tagging(Bucket=b, Key="t", Tagging={"TagSet": too_many[:10]})
    assert len(s3.get_object_tagging(Bucket=b, Key="t")["TagSet"]) == 10
    # malformed bodies
    url = "%s/s3/%s/t?tagging" % (s3c.url, b)
    for body in (b"<Tagging><TagSet><Tag><Key>a</Key>", b"not xml",
                 b"<Other><TagSet/></Other>",
                 b"<Tagging><TagSet><Tag><Key>a</Key></Tag></TagSet></Tagging>"):
        r = send("PUT", url, body)
        assert r.status_code == 400 and "<Code>MalformedXML</Code>" in r.text, (body, r.text)
    assert len(s3.get_object_tagging(Bucket=b, Key="t")["TagSet"]) == 10
    s3.delete_object_tagging(Bucket=b, Key="t")
    assert s3.get_object_tagging(Bucket=b, Key="t")["TagSet"] == []
    assert s3.get_object(Bucket=b, Key="t")["Body"].read() == b"tagged"
    for call in (lambda: s3.get_object_tagging(Bucket=b, Key="missing"),
                 lambda: s3.put_object_tagging(Bucket=b, Key="missing",
                                               Tagging={"TagSet": tags[:1]}),
                 lambda: s3.delete_object_tagging(Bucket=b, Key="missing")):
        with pytest.raises(botocore.exceptions.ClientError) as e:
            call()
        assert err(e) == ("NoSuchKey", 404)

    # PutObject with x-amz-tagging; a new version has only its own tags
    s3.put_object(Bucket=b, Key="h", Body=b"x", Tagging="empty=&b%20c=d%26e&a=1")
    assert s3.get_object_tagging(Bucket=b, Key="h")["TagSet"] == [
        {"Key": "a", "Value": "1"}, {"Key": "b c", "Value": "d&e"}, {"Key": "empty", "Value": ""}]
    s3.put_object(Bucket=b, Key="h", Body=b"y")
    assert s3.get_object_tagging(Bucket=b, Key="h")["TagSet"] == []
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.put_object(Bucket=b, Key="h2", Body=b"x", Tagging="a=1&a=2")
    assert err(e) == ("InvalidTag", 400)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.head_object(Bucket=b, Key="h2")
    assert err(e)[1] == 404

    # multipart uploads take their tags at creation
    u = s3.create_multipart_upload(Bucket=b, Key="m", Tagging="part=yes")["UploadId"]
    p = s3.upload_part(Bucket=b, Key="m", UploadId=u, PartNumber=1, Body=b"body")
    s3.complete_multipart_upload(Bucket=b, Key="m", UploadId=u,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
    assert s3.get_object_tagging(Bucket=b, Key="m")["TagSet"] == [{"Key": "part", "Value": "yes"}]

    # CopyObject copies the tags, unless told to replace them
    s3.put_object_tagging(Bucket=b, Key="t", Tagging={"TagSet": tags})
    s3.copy_object(Bucket=b, Key="c1", CopySource={"Bucket": b, "Key": "t"})
    assert s3.get_object_tagging(Bucket=b, Key="c1")["TagSet"] == tags
    s3.copy_object(Bucket=b, Key="c2", CopySource={"Bucket": b, "Key": "t"},
                   TaggingDirective="REPLACE", Tagging="new=1")
    assert s3.get_object_tagging(Bucket=b, Key="c2")["TagSet"] == [{"Key": "new", "Value": "1"}]


def test_tagging_count_header(s3, s3c):
    b = new_bucket(s3)
    s3.put_object(Bucket=b, Key="n", Body=b"x", Tagging="a=1&b=2")
    g = s3.get_object(Bucket=b, Key="n")
    assert g["TagCount"] == 2 and g["Body"].read() == b"x"
    assert s3.head_object(Bucket=b, Key="n")["ResponseMetadata"]["HTTPHeaders"][
        "x-amz-tagging-count"] == "2"
    s3.put_object(Bucket=b, Key="none", Body=b"x")
    assert "TagCount" not in s3.get_object(Bucket=b, Key="none")


def test_bucket_tagging(s3c, s3):
    b = new_bucket(s3)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_bucket_tagging(Bucket=b)
    assert err(e) == ("NoSuchTagSet", 404)
    tags = [{"Key": "team", "Value": "ml"}, {"Key": "cost center", "Value": "42"}]
    s3.put_bucket_tagging(Bucket=b, Tagging={"TagSet": tags})
    assert s3.get_bucket_tagging(Bucket=b)["TagSet"] == tags[::-1]   # sorted by key
    # the same labels through the native API
    props = requests.get(s3c.url + "/v1/buckets/" + b,
                         headers=signed("GET", s3c.url + "/v1/buckets/" + b)).json()
    assert props.get("props", {}).get("labels") == {"team": "ml", "cost center": "42"}, props
    fifty = [{"Key": "k%d" % i, "Value": "v"} for i in range(50)]
    s3.put_bucket_tagging(Bucket=b, Tagging={"TagSet": fifty})
    assert len(s3.get_bucket_tagging(Bucket=b)["TagSet"]) == 50
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.put_bucket_tagging(Bucket=b, Tagging={"TagSet": fifty + [{"Key": "x", "Value": ""}]})
    assert err(e) == ("InvalidTag", 400)
    r = send("PUT", "%s/s3/%s?tagging" % (s3c.url, b), b"<Tagging><TagSet>")
    assert r.status_code == 400 and "<Code>MalformedXML</Code>" in r.text
    s3.delete_bucket_tagging(Bucket=b)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_bucket_tagging(Bucket=b)
    assert err(e) == ("NoSuchTagSet", 404)
    s3.head_bucket(Bucket=b)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.put_bucket_tagging(Bucket="nosuch000", Tagging={"TagSet": tags})
    assert err(e) == ("NoSuchBucket", 404)


EC2 = "6aa5a366c34c1cbe25dc49211496e913e0351eb0e8c37aa3477e40942ec6b97c"   # S3's EC2 user


def test_acls(s3c, s3):
    """Canned ACLs, as x-amz-acl or as the policy they stand for (owner: the
    creating key by its canonical ID), reflected by the GETs (aws-exec-read
    names EC2's user, and the ACL read back is accepted again); what S3
    does not define 400."""
    import hashlib
    me = hashlib.sha256(b"shoal user\n" + AK.encode()).hexdigest()
    b = new_bucket(s3)
    s3.put_object(Bucket=b, Key="a", Body=b"acl")
    for acl in (s3.get_object_acl(Bucket=b, Key="a"), s3.get_bucket_acl(Bucket=b)):
        assert acl["Owner"] == {"ID": me, "DisplayName": AK}
        assert [(g["Grantee"]["Type"], g["Grantee"]["ID"], g["Permission"])
                for g in acl["Grants"]] == [("CanonicalUser", me, "FULL_CONTROL")]
    owner_only = {"Owner": {"ID": me},
                  "Grants": [{"Grantee": {"Type": "CanonicalUser", "ID": me},
                              "Permission": "FULL_CONTROL"}]}
    all_users = {"Grantee": {"Type": "Group",
                             "URI": "http://acs.amazonaws.com/groups/global/AllUsers"},
                 "Permission": "READ"}
    public = {"Owner": {"ID": me}, "Grants": owner_only["Grants"] + [all_users]}
    grants = lambda acl: [(g["Grantee"]["Type"], g["Permission"])  # noqa: E731
                          for g in acl["Grants"]]
    for put, get in ((lambda **kw: s3.put_object_acl(Bucket=b, Key="a", **kw),
                      lambda: s3.get_object_acl(Bucket=b, Key="a")),
                     (lambda **kw: s3.put_bucket_acl(Bucket=b, **kw),
                      lambda: s3.get_bucket_acl(Bucket=b))):
        for kw, want in (({"ACL": "public-read"}, 2), ({"ACL": "private"}, 1),
                         ({"ACL": "public-read-write"}, 3), ({"ACL": "authenticated-read"}, 2),
                         ({"AccessControlPolicy": public}, 2),
                         ({"AccessControlPolicy": owner_only}, 1)):
            put(**kw)
            assert len(grants(get())) == want, kw
        assert grants(get()) == [("CanonicalUser", "FULL_CONTROL")]
    s3.put_bucket_acl(Bucket=b, ACL="log-delivery-write")
    assert sorted(g["Permission"] for g in s3.get_bucket_acl(Bucket=b)["Grants"]) == \
        ["FULL_CONTROL", "READ_ACP", "WRITE"]
    s3.put_object_acl(Bucket=b, Key="a", ACL="aws-exec-read")
    got = s3.get_object_acl(Bucket=b, Key="a")
    assert [(g["Grantee"].get("ID"), g["Grantee"].get("DisplayName"), g["Permission"])
            for g in got["Grants"]] == [(me, AK, "FULL_CONTROL"), (EC2, "za-team", "READ")]
    s3.put_object_acl(Bucket=b, Key="a", ACL="private")
    s3.put_object_acl(Bucket=b, Key="a", AccessControlPolicy={"Owner": got["Owner"],
                                                             "Grants": got["Grants"]})
    assert s3.get_object_acl(Bucket=b, Key="a")["Grants"] == got["Grants"]
    for call, want in ((lambda: s3.put_object_acl(Bucket=b, Key="a", GrantRead="id=someone"),
                        ("InvalidArgument", 400)),
                       (lambda: s3.put_bucket_acl(Bucket=b, AccessControlPolicy={
                           "Owner": {"ID": me}, "Grants": [dict(all_users, Permission="ALL")]}),
                        ("MalformedACLError", 400))):
        with pytest.raises(botocore.exceptions.ClientError) as e:
            call()
        assert err(e) == want
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object_acl(Bucket=b, Key="missing")
    assert err(e) == ("NoSuchKey", 404)
    assert s3.get_object(Bucket=b, Key="a")["Body"].read() == b"acl"


def test_upload_part_copy(s3c, s3):
    b, b2 = new_bucket(s3), new_bucket(s3)
    data = os.urandom(7 << 20)
    s3.put_object(Bucket=b, Key="src", Body=data)
    u = s3.create_multipart_upload(Bucket=b2, Key="dst")["UploadId"]
    p1 = s3.upload_part_copy(Bucket=b2, Key="dst", UploadId=u, PartNumber=1,
                             CopySource={"Bucket": b, "Key": "src"},
                             CopySourceRange="bytes=0-%d" % ((5 << 20) - 1))["CopyPartResult"]
    assert p1["ETag"] == '"%s"' % hashlib.md5(data[:5 << 20]).hexdigest()
    p3 = s3.upload_part_copy(Bucket=b2, Key="dst", UploadId=u, PartNumber=3,
                             CopySource="%s/src" % b,
                             CopySourceRange="bytes=%d-%d" % (5 << 20, len(data) - 1))
    p3 = p3["CopyPartResult"]
    p2 = s3.upload_part_copy(Bucket=b2, Key="dst", UploadId=u, PartNumber=2,
                             CopySource={"Bucket": b, "Key": "src"})["CopyPartResult"]
    # a malformed range is InvalidArgument, one past the source InvalidRange
    for rng, code in (("bytes=0-%d" % len(data), "InvalidRange"),
                      ("bytes=%d-%d" % (len(data), len(data) + 9), "InvalidRange"),
                      ("bytes=5-4", "InvalidArgument"), ("bytes=x-3", "InvalidArgument"),
                      ("0-4", "InvalidArgument")):
        with pytest.raises(botocore.exceptions.ClientError) as e:
            s3.upload_part_copy(Bucket=b2, Key="dst", UploadId=u, PartNumber=4,
                                CopySource={"Bucket": b, "Key": "src"}, CopySourceRange=rng)
        assert err(e) == (code, 400), rng
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.upload_part_copy(Bucket=b2, Key="dst", UploadId=u, PartNumber=4,
                            CopySource={"Bucket": b, "Key": "missing"})
    assert err(e) == ("NoSuchKey", 404)
    s3.complete_multipart_upload(Bucket=b2, Key="dst", UploadId=u, MultipartUpload={"Parts": [
        {"PartNumber": 1, "ETag": p1["ETag"]}, {"PartNumber": 2, "ETag": p2["ETag"]},
        {"PartNumber": 3, "ETag": p3["ETag"]}]})
    got = s3.get_object(Bucket=b2, Key="dst")["Body"].read()
    assert got == data[:5 << 20] + data + data[5 << 20:]


def test_aws_cli_copies_big_objects(s3c, s3, tmp_path):
    """aws s3 cp between S3 URLs uses a multipart copy over 8 MiB
    (UploadPartCopy with ranges, after GetObjectTagging)."""
    b, b2 = new_bucket(s3), new_bucket(s3)
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(20 << 20))
    want = hashlib.md5(big.read_bytes()).hexdigest()
    env = dict(os.environ, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK,
               AWS_DEFAULT_REGION="us-east-1", HOME=str(tmp_path),
               AWS_CONFIG_FILE=str(tmp_path / "none"),
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"))

    def aws(*args):
        r = subprocess.run(["/usr/bin/aws", "--endpoint-url", s3c.url + "/s3", *args], env=env,
                           capture_output=True, timeout=600)
        assert r.returncode == 0, (args, r.stdout.decode()[-2000:], r.stderr.decode()[-2000:])

    aws("s3", "cp", str(big), "s3://%s/big" % b)
    s3.put_object_tagging(Bucket=b, Key="big", Tagging={"TagSet": [{"Key": "t", "Value": "1"}]})
    aws("s3", "cp", "s3://%s/big" % b, "s3://%s/copy" % b)
    aws("s3", "cp", "s3://%s/big" % b, "s3://%s/other/copy" % b2)
    for bk, key in ((b, "copy"), (b2, "other/copy")):
        got = s3.get_object(Bucket=bk, Key=key)["Body"].read()
        assert len(got) == 20 << 20 and hashlib.md5(got).hexdigest() == want
        assert s3.head_object(Bucket=bk, Key=key)["ETag"].endswith('-3"')  # a multipart copy
        assert s3.get_object_tagging(Bucket=bk, Key=key)["TagSet"] == [{"Key": "t", "Value": "1"}]


# ---- aws-chunked bodies ------------------------------------------------------------------

def crc32_b64(data):
    """S3's x-amz-checksum-crc32 value of data."""
    return base64.b64encode(zlib.crc32(data).to_bytes(4, "big"))


def trailer_body(data, chunk=65536, eol=b"\r\n", ck=None):
    """STREAMING-UNSIGNED-PAYLOAD-TRAILER framing, with eol as line end, and
    data's CRC32 (or ck) as the trailing checksum."""
    out = b""
    for i in range(0, len(data), chunk):
        c = data[i:i + chunk]
        out += b"%x" % len(c) + eol + c + eol
    ck = crc32_b64(data) if ck is None else ck
    return out + b"0" + eol + b"x-amz-checksum-crc32:" + ck + eol + eol


def trailer_put(url, data, body=None):
    body = trailer_body(data) if body is None else body
    h = {"Content-Encoding": "aws-chunked", "x-amz-decoded-content-length": str(len(data)),
         "x-amz-trailer": "x-amz-checksum-crc32", "Content-Length": str(len(body))}
    hdrs = signed("PUT", url, b"", h, payload="STREAMING-UNSIGNED-PAYLOAD-TRAILER")
    return requests.put(url, data=body, headers=hdrs, allow_redirects=False)


def owner_root(s3c, bucket, key):
    """The S3 root URL of the target that owns bucket/key."""
    t = s3c.node_url(s3c.target_names()[0])
    url = "%s/%s/%s" % (t, bucket, key)
    r = requests.get(url, headers=signed("GET", url), allow_redirects=False)
    if r.status_code == 307:
        ep = re.search(r"<Endpoint>([^<]+)</Endpoint>", r.text).group(1)
        return "http://%s/%s/%s" % (ep, bucket, key)
    return url


def test_aws_chunked_to_target_root_unsigned_trailer(s3c, s3):
    b = new_bucket(s3)
    data = os.urandom(200000)
    url = owner_root(s3c, b, "unsigned")
    r = trailer_put(url, data)
    assert r.status_code == 200, r.text
    assert r.headers["ETag"] == '"%s"' % hashlib.md5(data).hexdigest()
    assert s3.get_object(Bucket=b, Key="unsigned")["Body"].read() == data
    # malformed framing: refused, nothing replaced
    for body in (trailer_body(b"y" * 1000, eol=b"\n"), trailer_body(b"y" * 1000)[:-2],
                 trailer_body(b"y" * 1000) + b"extra", trailer_body(b"y" * 1000).replace(
                     b"\r\n0\r\n", b"0\r\n", 1)):
        r = trailer_put(url, b"y" * 1000, body)
        assert r.status_code == 400 and "<Code>IncompleteBody</Code>" in r.text, (body, r.text)
    r = trailer_put(url, b"y" * 999, trailer_body(b"y" * 1000))
    assert r.status_code == 400 and "<Code>IncompleteBody</Code>" in r.text
    assert s3.get_object(Bucket=b, Key="unsigned")["Body"].read() == data


def test_aws_chunked_to_target_root_signed(s3c, s3):
    b = new_bucket(s3)
    data = os.urandom(200000)
    url = owner_root(s3c, b, "signed")
    r = chunked_put(url, AK, SK, data)
    assert r.status_code == 200, r.text
    assert s3.get_object(Bucket=b, Key="signed")["Body"].read() == data
    r = chunked_put(url, AK, SK, os.urandom(200000), tamper=1)
    assert r.status_code == 403 and "<Code>SignatureDoesNotMatch</Code>" in r.text
    assert s3.get_object(Bucket=b, Key="signed")["Body"].read() == data


def test_aws_chunked_framing_is_strict_through_the_proxy(s3c, s3):
    b = new_bucket(s3)
    url = "%s/s3/%s/strict" % (s3c.url, b)
    data = os.urandom(5000)
    assert trailer_put(url, data).status_code == 200
    for body in (trailer_body(b"z" * 100, eol=b"\n"),
                 trailer_body(b"z" * 100).replace(b"z\r\n0", b"z0", 1),
                 trailer_body(b"z" * 100) + b"\r\n"):
        r = trailer_put(url, b"z" * 100, body)
        assert r.status_code == 400 and "<Code>IncompleteBody</Code>" in r.text, (body, r.text)
    assert s3.get_object(Bucket=b, Key="strict")["Body"].read() == data


ALL_ATTRS = ["ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"]


def test_get_object_attributes(s3c, s3):
    """GetObjectAttributes: a plain object's ETag (unquoted), checksum,
    storage class and size, no ObjectParts; a multipart one's parts paged
    by max-parts and part-number-marker, each with its checksum; a
    version's by versionId, a delete marker's 404 / 405; only the
    attributes asked for; a bad name or none asked 400."""
    import base64 as b64
    b = new_bucket(s3)
    put = s3.put_object(Bucket=b, Key="plain", Body=b"foo", ChecksumAlgorithm="SHA256")
    got = s3.get_object_attributes(Bucket=b, Key="plain", ObjectAttributes=ALL_ATTRS)
    assert got["ETag"] == put["ETag"].strip('"') and got["ObjectSize"] == 3
    assert got["StorageClass"] == "STANDARD" and "ObjectParts" not in got
    assert got["Checksum"]["ChecksumSHA256"] == \
        b64.b64encode(hashlib.sha256(b"foo").digest()).decode()
    assert "VersionId" not in got and "DeleteMarker" not in got
    only = s3.get_object_attributes(Bucket=b, Key="plain", ObjectAttributes=["ObjectSize"])
    assert only["ObjectSize"] == 3 and "ETag" not in only and "Checksum" not in only

    sizes = [5 << 20, 5 << 20, 5 << 20, 1234]
    u = s3.create_multipart_upload(Bucket=b, Key="mp", ChecksumAlgorithm="SHA256")["UploadId"]
    parts = []
    for i, n in enumerate(sizes, 1):
        body = bytes([i]) * n
        p = s3.upload_part(Bucket=b, Key="mp", UploadId=u, PartNumber=i, Body=body,
                           ChecksumAlgorithm="SHA256")
        parts.append({"PartNumber": i, "ETag": p["ETag"], "ChecksumSHA256": p["ChecksumSHA256"]})
    done = s3.complete_multipart_upload(Bucket=b, Key="mp", UploadId=u,
                                        MultipartUpload={"Parts": parts})
    got = s3.get_object_attributes(Bucket=b, Key="mp", ObjectAttributes=ALL_ATTRS)
    op = got["ObjectParts"]
    assert got["ETag"] == done["ETag"].strip('"') and got["ObjectSize"] == sum(sizes)
    assert got["Checksum"]["ChecksumSHA256"] == done["ChecksumSHA256"]
    assert op["TotalPartsCount"] == 4 and op["IsTruncated"] is False
    assert [(p["PartNumber"], p["Size"], p["ChecksumSHA256"]) for p in op["Parts"]] == \
        [(q["PartNumber"], n, q["ChecksumSHA256"]) for q, n in zip(parts, sizes)]
    page = s3.get_object_attributes(Bucket=b, Key="mp", ObjectAttributes=["ObjectParts"],
                                    MaxParts=2, PartNumberMarker=1)["ObjectParts"]
    assert [p["PartNumber"] for p in page["Parts"]] == [2, 3]
    assert page["IsTruncated"] is True and page["NextPartNumberMarker"] == 3
    assert page["MaxParts"] == 2 and page["PartNumberMarker"] == 1
    last = s3.get_object_attributes(Bucket=b, Key="mp", ObjectAttributes=["ObjectParts"],
                                    MaxParts=10, PartNumberMarker=3)["ObjectParts"]
    assert [p["Size"] for p in last["Parts"]] == [1234] and last["IsTruncated"] is False
    # a multipart upload without checksums: parts without them
    u = s3.create_multipart_upload(Bucket=b, Key="mp2")["UploadId"]
    p = s3.upload_part(Bucket=b, Key="mp2", UploadId=u, PartNumber=1, Body=b"one")
    s3.complete_multipart_upload(Bucket=b, Key="mp2", UploadId=u, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
    one = s3.get_object_attributes(Bucket=b, Key="mp2", ObjectAttributes=ALL_ATTRS)
    assert one["ObjectParts"]["Parts"] == [{"PartNumber": 1, "Size": 3}] and "Checksum" not in one

    # versions
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket=b, Key="v", Body=b"one")["VersionId"]
    s3.put_object(Bucket=b, Key="v", Body=b"second")
    assert s3.get_object_attributes(Bucket=b, Key="v", ObjectAttributes=ALL_ATTRS)[
        "ObjectSize"] == 6
    old = s3.get_object_attributes(Bucket=b, Key="v", VersionId=v1, ObjectAttributes=ALL_ATTRS)
    assert old["ObjectSize"] == 3 and old["VersionId"] == v1
    dm = s3.delete_object(Bucket=b, Key="v")["VersionId"]
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object_attributes(Bucket=b, Key="v", ObjectAttributes=ALL_ATTRS)
    assert err(e) == ("NoSuchKey", 404)
    assert e.value.response["ResponseMetadata"]["HTTPHeaders"]["x-amz-delete-marker"] == "true"
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object_attributes(Bucket=b, Key="v", VersionId=dm, ObjectAttributes=ALL_ATTRS)
    assert err(e) == ("MethodNotAllowed", 405)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object_attributes(Bucket=b, Key="v", VersionId="0" * 16,
                                 ObjectAttributes=ALL_ATTRS)
    assert err(e)[1] in (400, 404)
    # bad requests
    url = "%s/s3/%s/plain?attributes" % (s3c.url, b)
    for hdrs, code in (({}, "InvalidRequest"), ({"x-amz-object-attributes": "Size"},
                                                "InvalidArgument"),
                       ({"x-amz-object-attributes": "ETag", "x-amz-max-parts": "x"},
                        "InvalidArgument")):
        r = send("GET", url, headers=hdrs)
        assert r.status_code == 400 and "<Code>%s</Code>" % code in r.text, (hdrs, r.text)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object_attributes(Bucket=b, Key="missing", ObjectAttributes=ALL_ATTRS)
    assert err(e) == ("NoSuchKey", 404)
    # read access, as GetObject: unsigned on a private object refused
    r = requests.get(url, headers={"x-amz-object-attributes": "ETag"})
    assert r.status_code == 403, r.text
