"""S3 behaviour a client can tell apart, pinned with boto3 against S3's
documented answers (issue: S3 fidelity)."""
import base64
import datetime
import os
import random
import time

import pytest
import requests

from test_s3 import AK, SK, bkt, client, err, s3, s3c, signed  # noqa: F401 (fixtures)
from test_s3_subresources import owner_root, trailer_body

KEPT = {"CacheControl": "max-age=3600, public", "ContentDisposition": 'attachment; filename="a b.bin"',
        "ContentEncoding": "gzip", "ContentLanguage": "de-CH"}
EXPIRES = datetime.datetime(2031, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)


def kept(h):
    """The standard headers of a head/get answer, as boto3 names them."""
    return {k: h.get(k) for k in list(KEPT) + ["Expires"]}


def want(**over):
    w = dict(KEPT, Expires=EXPIRES)
    w.update(over)
    return w


def test_standard_headers_are_kept_and_returned(s3, bkt):
    """Cache-Control, Content-Disposition, Content-Encoding, Content-Language
    and Expires: kept on PUT, copy (COPY keeps the source's, REPLACE takes
    the request's) and multipart create, returned by GET and HEAD; an empty
    x-amz-meta-* value is kept as an empty value."""
    s3.put_object(Bucket=bkt, Key="h", Body=b"x" * 1000, Expires=EXPIRES,
                  Metadata={"empty": "", "full": "v"}, **KEPT)
    for h in (s3.head_object(Bucket=bkt, Key="h"), s3.get_object(Bucket=bkt, Key="h")):
        assert kept(h) == want(), h
        assert h["Metadata"] == {"empty": "", "full": "v"}
    s3.copy_object(Bucket=bkt, Key="c", CopySource={"Bucket": bkt, "Key": "h"})
    assert kept(s3.head_object(Bucket=bkt, Key="c")) == want()
    s3.copy_object(Bucket=bkt, Key="r", CopySource={"Bucket": bkt, "Key": "h"},
                   MetadataDirective="REPLACE", CacheControl="no-store", Metadata={"n": "1"})
    h = s3.head_object(Bucket=bkt, Key="r")
    assert h.get("CacheControl") == "no-store" and h["Metadata"] == {"n": "1"}
    assert "ContentDisposition" not in h and "Expires" not in h
    u = s3.create_multipart_upload(Bucket=bkt, Key="m", Expires=EXPIRES, **KEPT)["UploadId"]
    p = s3.upload_part(Bucket=bkt, Key="m", UploadId=u, PartNumber=1, Body=b"y" * 100)
    s3.complete_multipart_upload(Bucket=bkt, Key="m", UploadId=u,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
    assert kept(s3.head_object(Bucket=bkt, Key="m")) == want()
    plain = s3.head_object(Bucket=bkt, Key="r")
    assert "ContentEncoding" not in plain and "ContentLanguage" not in plain


def test_aws_chunked_is_no_content_encoding(s3c, s3, bkt):
    """A body sent aws-chunked keeps the other codings of its
    Content-Encoding, as they were sent, and not aws-chunked itself; a
    plain body's Content-Encoding is kept as sent."""
    s3.put_object(Bucket=bkt, Key="two", Body=b"x", ContentEncoding="deflate, gzip")
    assert s3.head_object(Bucket=bkt, Key="two")["ContentEncoding"] == "deflate, gzip"
    data = os.urandom(100000)
    for key, ce, back in (("only", "aws-chunked", None), ("gz", "aws-chunked,gzip", "gzip"),
                          ("gz2", "gzip, aws-chunked", "gzip"),
                          ("gz3", "deflate, aws-chunked, gzip", "deflate, gzip")):
        url = owner_root(s3c, bkt, key)
        body = trailer_body(data)
        h = {"Content-Encoding": ce, "x-amz-decoded-content-length": str(len(data)),
             "x-amz-trailer": "x-amz-checksum-crc32", "Content-Length": str(len(body))}
        hdrs = signed("PUT", url, b"", h, payload="STREAMING-UNSIGNED-PAYLOAD-TRAILER")
        r = requests.put(url, data=body, headers=hdrs, allow_redirects=False)
        assert r.status_code == 200, r.text
        got = s3.head_object(Bucket=bkt, Key=key)
        assert got.get("ContentEncoding") == back, (key, got)
        assert s3.get_object(Bucket=bkt, Key=key)["Body"].read() == data


def test_copies_and_checks(s3c, s3, bkt):
    """CopyObject onto itself without REPLACE is 400 InvalidRequest (with
    REPLACE it rewrites the metadata); an empty Content-MD5 is 400
    InvalidDigest; a presigned URL that would outlive 7 days, or whose
    X-Amz-Expires is 0 or negative, is 403 AccessDenied (one whose
    X-Amz-Expires is no number, AuthorizationQueryParametersError); OPTIONS (a CORS preflight, never
    signed) on a bucket without CORS rules is 403 CORSResponse, on a
    missing bucket 404 NoSuchBucket, without Origin 400 BadRequest."""
    import botocore
    import pytest
    s3.put_object(Bucket=bkt, Key="self", Body=b"same", Metadata={"a": "1"})
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.copy_object(Bucket=bkt, Key="self", CopySource={"Bucket": bkt, "Key": "self"})
    assert err(e) == ("InvalidRequest", 400)
    s3.copy_object(Bucket=bkt, Key="self", CopySource={"Bucket": bkt, "Key": "self"},
                   MetadataDirective="REPLACE", Metadata={"a": "2"})
    h = s3.head_object(Bucket=bkt, Key="self")
    assert h["Metadata"] == {"a": "2"}
    assert s3.get_object(Bucket=bkt, Key="self")["Body"].read() == b"same"
    url = "%s/s3/%s/md5" % (s3c.url, bkt)
    r = requests.put(url, data=b"body", headers=signed("PUT", url, b"body", {"Content-MD5": ""}))
    assert r.status_code == 400 and "<Code>InvalidDigest</Code>" in r.text, r.text
    v4 = client(s3c, signature_version="s3v4")
    for secs in (7 * 24 * 3600 + 1, 0, -7):
        r = requests.get(presigned(s3c, bkt, "self", secs))
        assert r.status_code == 403 and "<Code>AccessDenied</Code>" in r.text, (secs, r.text)
    r = requests.get(presigned(s3c, bkt, "self", "soon"))
    assert r.status_code == 400 and "AuthorizationQueryParametersError" in r.text, r.text
    ok = v4.generate_presigned_url("get_object", Params={"Bucket": bkt, "Key": "self"},
                                   ExpiresIn=7 * 24 * 3600)
    assert requests.get(ok).content == b"same"
    r = requests.options("%s/s3/%s/self" % (s3c.url, bkt),
                         headers={"Origin": "https://example.org",
                                  "Access-Control-Request-Method": "GET"})
    assert r.status_code == 403 and "<Code>CORSResponse</Code>" in r.text, (r.status_code, r.text)
    r = requests.options("%s/s3/nosuchbucket%d/k" % (s3c.url, random.randrange(10**6)),
                         headers={"Origin": "https://example.org",
                                  "Access-Control-Request-Method": "GET"})
    assert r.status_code == 404 and "<Code>NoSuchBucket</Code>" in r.text, r.text
    r = requests.options("%s/s3/%s/self" % (s3c.url, bkt))
    assert r.status_code == 400 and "<Code>BadRequest</Code>" in r.text, r.text


def presigned(s3c, bkt, key, expires):
    """A SigV4 presigned GET valid for expires seconds, signed by botocore's
    own signer (the CRT one refuses what is out of range)."""
    from botocore.auth import S3SigV4QueryAuth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    req = AWSRequest(method="GET", url="%s/s3/%s/%s" % (s3c.url, bkt, key))
    S3SigV4QueryAuth(Credentials(AK, SK), "s3", "us-east-1", expires=expires).add_auth(req)
    return req.url


def precondition(call):
    import botocore
    import pytest
    with pytest.raises(botocore.exceptions.ClientError) as e:
        call()
    return err(e)


def test_conditional_writes(s3, bkt):
    """PutObject and CompleteMultipartUpload with If-None-Match: * (412 when
    the key exists) and If-Match (412 when the ETag differs, 404 with no
    object); CopyObject's x-amz-copy-source-if-* conditions (412 when one
    does not hold); a failed condition changes nothing."""
    add = lambda name, value: (lambda params, **kw: params["headers"].__setitem__(name, value))
    ev = s3.meta.events

    def with_header(name, value, call):
        h = add(name, value)
        ev.register_first("before-call.s3.*", h)
        try:
            return call()
        finally:
            ev.unregister("before-call.s3.*", h)

    put = lambda body: s3.put_object(Bucket=bkt, Key="c", Body=body)
    with_header("If-None-Match", "*", lambda: put(b"one"))
    assert precondition(lambda: with_header("If-None-Match", "*", lambda: put(b"two"))) == \
        ("PreconditionFailed", 412)
    etag = s3.head_object(Bucket=bkt, Key="c")["ETag"]
    assert precondition(lambda: with_header("If-Match", '"0123"', lambda: put(b"two"))) == \
        ("PreconditionFailed", 412)
    assert s3.get_object(Bucket=bkt, Key="c")["Body"].read() == b"one"
    with_header("If-Match", etag, lambda: put(b"three"))
    assert s3.get_object(Bucket=bkt, Key="c")["Body"].read() == b"three"
    missing = lambda: s3.put_object(Bucket=bkt, Key="nothing-here", Body=b"x")
    assert precondition(lambda: with_header("If-Match", etag, missing)) == ("NoSuchKey", 404)
    # ETags in If-None-Match: refused when the object there has one of
    # them; If-Match: * holds for any object there, none for no object
    pe = lambda body: s3.put_object(Bucket=bkt, Key="e", Body=body)
    e1 = pe(b"e1")["ETag"]
    assert precondition(lambda: with_header("If-None-Match", '"abc", ' + e1,
                                            lambda: pe(b"e2"))) == ("PreconditionFailed", 412)
    assert s3.get_object(Bucket=bkt, Key="e")["Body"].read() == b"e1"
    with_header("If-None-Match", '"abc"', lambda: pe(b"e2"))
    assert precondition(lambda: with_header("If-None-Match", "*", lambda: pe(b"e2"))) == \
        ("PreconditionFailed", 412)      # the same bytes again: refused, as S3 does
    with_header("If-Match", "*", lambda: pe(b"e3"))
    assert s3.get_object(Bucket=bkt, Key="e")["Body"].read() == b"e3"
    assert precondition(lambda: with_header("If-Match", "*", missing)) == ("NoSuchKey", 404)
    with_header("If-None-Match", e1, lambda: s3.put_object(Bucket=bkt, Key="e-new", Body=b"n"))
    s3.delete_object(Bucket=bkt, Key="e-new")
    assert precondition(lambda: with_header("If-Match", e1, lambda: s3.put_object(
        Bucket=bkt, Key="e-new", Body=b"n"))) == ("NoSuchKey", 404)

    def mpu(key, part=b"part"):
        u = s3.create_multipart_upload(Bucket=bkt, Key=key)["UploadId"]
        p = s3.upload_part(Bucket=bkt, Key=key, UploadId=u, PartNumber=1, Body=part)
        return lambda: s3.complete_multipart_upload(
            Bucket=bkt, Key=key, UploadId=u,
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
    assert precondition(lambda: with_header("If-None-Match", "*", mpu("c"))) == \
        ("PreconditionFailed", 412)
    assert s3.get_object(Bucket=bkt, Key="c")["Body"].read() == b"three"
    with_header("If-None-Match", "*", mpu("fresh"))
    assert s3.get_object(Bucket=bkt, Key="fresh")["Body"].read() == b"part"
    fresh = s3.head_object(Bucket=bkt, Key="fresh")["ETag"]
    assert precondition(lambda: with_header("If-Match", '"0123"', mpu("fresh", b"2"))) == \
        ("PreconditionFailed", 412)
    assert precondition(lambda: with_header("If-Match", fresh, mpu("absent", b"2"))) == \
        ("NoSuchKey", 404)
    with_header("If-Match", fresh, mpu("fresh", b"2"))     # the ETag held: completed
    assert s3.get_object(Bucket=bkt, Key="fresh")["Body"].read() == b"2"

    src = {"Bucket": bkt, "Key": "c"}
    etag = s3.head_object(Bucket=bkt, Key="c")["ETag"]
    old = datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)
    s3.copy_object(Bucket=bkt, Key="k1", CopySource=src, CopySourceIfMatch=etag)
    s3.copy_object(Bucket=bkt, Key="k2", CopySource=src, CopySourceIfModifiedSince=old)
    for kw in ({"CopySourceIfMatch": '"0123"'}, {"CopySourceIfNoneMatch": etag},
               {"CopySourceIfUnmodifiedSince": old}):
        assert precondition(lambda: s3.copy_object(Bucket=bkt, Key="k3", CopySource=src,
                                                   **kw)) == ("PreconditionFailed", 412), kw
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bkt)["Contents"]] == \
        ["c", "e", "fresh", "k1", "k2"]


def test_listing_details(s3c, s3, bkt):
    """ListObjectsV2 gives each key's Owner only with fetch-owner=true; an
    empty continuation-token is no token, echoed empty as S3 does;
    ListObjects v1 echoes Prefix, Marker and Delimiter decoded, and with
    encoding-type=url the Marker and Delimiter URL-encoded, the Prefix as
    sent (what boto3 decodes, and shows a '\\n' prefix as '\\n')."""
    for k in ("a b/1", "a b/2", "a b/3", "z"):
        s3.put_object(Bucket=bkt, Key=k, Body=b"x")
    got = s3.list_objects_v2(Bucket=bkt)["Contents"]
    assert all("Owner" not in o for o in got), got
    got = s3.list_objects_v2(Bucket=bkt, FetchOwner=True)["Contents"]
    assert all(o.get("Owner", {}).get("ID") for o in got), got
    assert all(o.get("Owner", {}).get("ID") for o in s3.list_objects(Bucket=bkt)["Contents"])
    url = "%s/s3/%s?list-type=2&continuation-token=&max-keys=2" % (s3c.url, bkt)
    r = requests.get(url, headers=signed("GET", url))
    assert r.status_code == 200 and r.text.count("<Key>") == 2, r.text
    assert "<ContinuationToken></ContinuationToken>" in r.text, r.text
    assert "<NextContinuationToken>" in r.text
    empty = s3.list_objects_v2(Bucket=bkt, ContinuationToken="")
    assert empty["ContinuationToken"] == "" and not empty["IsTruncated"], empty
    assert len(empty["Contents"]) == 4
    v1 = s3.list_objects(Bucket=bkt, Prefix="a b/", Marker="a b/1", Delimiter="/x")
    assert [o["Key"] for o in v1["Contents"]] == ["a b/2", "a b/3"]
    base = "%s/s3/%s?prefix=a%%20b%%2F&marker=a%%20b%%2F1&delimiter=%%2Fx" % (s3c.url, bkt)
    for url, wants in ((base, ("<Prefix>a b/</Prefix>", "<Marker>a b/1</Marker>",
                               "<Delimiter>/x</Delimiter>", "<Key>a b/2</Key>")),
                       (base + "&encoding-type=url",
                        ("<Prefix>a b/</Prefix>", "<Marker>a%20b/1</Marker>",
                         "<Delimiter>/x</Delimiter>", "<Key>a%20b/2</Key>"))):
        r = requests.get(url, headers=signed("GET", url))
        for want in wants:
            assert want in r.text, (want, r.text)
    assert s3.list_objects(Bucket=bkt, Prefix="\n")["Prefix"] == "\n"


def test_fidelity_edges(s3c, s3, bkt):
    """A response-* override replaces the kept header (one value, not two);
    a PUT's answer carries no kept header; a long kept value round-trips
    whole; the copy-source conditions' precedence (if-match true wins over
    if-unmodified-since false; if-none-match false fails even with
    if-modified-since true); a copy onto itself that changes its storage
    class is taken; a conditional PUT retried with the same bytes succeeds;
    the native API checks If-Match and If-None-Match too."""
    long_cd = "attachment; filename*=UTF-8''" + "%E2%82%AC" * 160   # 1,469 bytes
    put = s3.put_object(Bucket=bkt, Key="o", Body=b"body", ContentEncoding="gzip",
                        CacheControl="no-cache", ContentDisposition=long_cd)
    hdrs = put["ResponseMetadata"]["HTTPHeaders"]
    assert "content-encoding" not in hdrs and "cache-control" not in hdrs, hdrs
    assert s3.head_object(Bucket=bkt, Key="o")["ContentDisposition"] == long_cd
    got = s3.get_object(Bucket=bkt, Key="o", ResponseCacheControl="max-age=5",
                        ResponseContentDisposition="inline")
    assert got["CacheControl"] == "max-age=5" and got["ContentDisposition"] == "inline", got
    src = {"Bucket": bkt, "Key": "o"}
    etag = s3.head_object(Bucket=bkt, Key="o")["ETag"]
    past = datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)
    s3.copy_object(Bucket=bkt, Key="p1", CopySource=src, CopySourceIfMatch=etag,
                   CopySourceIfUnmodifiedSince=past)
    assert precondition(lambda: s3.copy_object(
        Bucket=bkt, Key="p2", CopySource=src, CopySourceIfNoneMatch=etag,
        CopySourceIfModifiedSince=past)) == ("PreconditionFailed", 412)
    s3.copy_object(Bucket=bkt, Key="o", CopySource=src, StorageClass="STANDARD")
    assert s3.get_object(Bucket=bkt, Key="o")["Body"].read() == b"body"
    h = lambda params, **kw: params["headers"].__setitem__("If-None-Match", "*")
    s3.meta.events.register_first("before-call.s3.PutObject", h)
    try:
        s3.put_object(Bucket=bkt, Key="once", Body=b"same bytes")
        assert precondition(lambda: s3.put_object(Bucket=bkt, Key="once",
                                                  Body=b"same bytes")) == \
            ("PreconditionFailed", 412)  # the same bytes again: refused, as S3 does
    finally:
        s3.meta.events.unregister("before-call.s3.PutObject", h)
    # the native API checks them too, with its own errors
    from conftest import SigV4
    nat = "%s/v1/objects/%s/native" % (s3c.url, bkt)
    r = requests.put(nat, data=b"n", headers={"If-None-Match": '"abc"'}, auth=SigV4(AK, SK))
    assert r.status_code == 201, r.text
    etag = requests.head(nat, auth=SigV4(AK, SK), allow_redirects=True).headers["ETag"]
    for hdrs, want in (({"If-None-Match": "*"}, 412), ({"If-None-Match": etag}, 412),
                       ({"If-Match": '"0123"'}, 412), ({"If-Match": etag}, 201)):
        r = requests.put(nat, data=b"m", headers=hdrs, auth=SigV4(AK, SK))
        assert r.status_code == want and "<Error>" not in r.text, (hdrs, r.status_code, r.text)
    r = requests.put(nat + "-none", data=b"m", headers={"If-Match": etag}, auth=SigV4(AK, SK))
    assert r.status_code == 404, r.text
    assert requests.get(nat, auth=SigV4(AK, SK)).content == b"m"


def test_list_buckets_pages(s3c, s3):
    """ListBuckets in name order with max-buckets, continuation-token and
    prefix; a bad max-buckets is 400 InvalidArgument; creating a bucket one
    has again answers 200, as us-east-1 does."""
    tag = "lb%05d" % random.randrange(10**5)
    names = ["%s-%d" % (tag, i) for i in range(5)]
    for n in names:
        s3.create_bucket(Bucket=n)
    assert s3.create_bucket(Bucket=names[0])["ResponseMetadata"]["HTTPStatusCode"] == 200
    seen, token = [], None
    for _ in range(10):
        url = "%s/s3/?max-buckets=2&prefix=%s%s" % (
            s3c.url, tag, "&continuation-token=" + token if token else "")
        r = requests.get(url, headers=signed("GET", url))
        assert r.status_code == 200, r.text
        import re
        page = re.findall(r"<Name>([^<]+)</Name>", r.text)
        assert len(page) <= 2 and "<Prefix>%s</Prefix>" % tag in r.text
        seen += page
        m = re.search(r"<ContinuationToken>([^<]+)</ContinuationToken>", r.text)
        if not m:
            break
        token = m.group(1)
    assert seen == sorted(names)
    url = "%s/s3/?max-buckets=0" % s3c.url
    r = requests.get(url, headers=signed("GET", url))
    assert r.status_code == 400 and "<Code>InvalidArgument</Code>" in r.text
    everything = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert everything == sorted(everything) and set(names) <= set(everything)


def test_location_constraint(s3c):
    """CreateBucket with a LocationConstraint keeps it and GetBucketLocation
    returns it; creating it again there is 409 BucketAlreadyOwnedByYou (as
    outside us-east-1); a malformed configuration is 400 MalformedXML."""
    import botocore
    import pytest
    import boto3
    west = boto3.client("s3", endpoint_url=s3c.url + "/s3", aws_access_key_id=AK,
                        aws_secret_access_key=SK, region_name="eu-west-1")
    name = "loc%06d" % random.randrange(10**6)
    west.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    assert west.get_bucket_location(Bucket=name)["LocationConstraint"] == "eu-west-1"
    with pytest.raises(botocore.exceptions.ClientError) as e:
        west.create_bucket(Bucket=name,
                           CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    assert err(e) == ("BucketAlreadyOwnedByYou", 409)
    url = "%s/s3/loc-bad%d" % (s3c.url, random.randrange(10**6))
    body = b"<CreateBucketConfiguration><LocationConstraint>x"
    r = requests.put(url, data=body, headers=signed("PUT", url, body))
    assert r.status_code == 400 and "<Code>MalformedXML</Code>" in r.text, r.text


def test_multipart_parts_read_back_retried_and_paged(s3, bkt):
    """GET/HEAD with partNumber serve that part (206, x-amz-mp-parts-count),
    400 InvalidPartNumber past the last (as S3 answers it), part 1 of a
    plain object is the object and part 2 past it; a part sent twice keeps the last; CompleteMultipartUpload
    retried after success answers the same; ListParts and
    ListMultipartUploads page with their markers."""
    parts = [os.urandom(5 << 20), os.urandom(5 << 20), os.urandom(777)]
    u = s3.create_multipart_upload(Bucket=bkt, Key="mp")["UploadId"]
    s3.upload_part(Bucket=bkt, Key="mp", UploadId=u, PartNumber=2, Body=b"first, replaced")
    listed = [{"PartNumber": i, "ETag": s3.upload_part(Bucket=bkt, Key="mp", UploadId=u,
                                                         PartNumber=i, Body=p)["ETag"]}
              for i, p in enumerate(parts, 1)]
    page = s3.list_parts(Bucket=bkt, Key="mp", UploadId=u, MaxParts=2)
    assert [p["PartNumber"] for p in page["Parts"]] == [1, 2] and page["IsTruncated"]
    assert page["Parts"][1]["Size"] == 5 << 20
    rest = s3.list_parts(Bucket=bkt, Key="mp", UploadId=u, MaxParts=2,
                         PartNumberMarker=page["NextPartNumberMarker"])
    assert [p["PartNumber"] for p in rest["Parts"]] == [3] and not rest["IsTruncated"]
    done = s3.complete_multipart_upload(Bucket=bkt, Key="mp", UploadId=u,
                                        MultipartUpload={"Parts": listed})
    again = s3.complete_multipart_upload(Bucket=bkt, Key="mp", UploadId=u,
                                         MultipartUpload={"Parts": listed})
    assert again["ETag"] == done["ETag"] and done["ETag"].endswith('-3"')
    with pytest.raises(Exception) as e:     # the upload itself is gone
        s3.upload_part(Bucket=bkt, Key="mp", UploadId=u, PartNumber=1, Body=b"x")
    assert err(e) == ("NoSuchUpload", 404)
    assert s3.get_object(Bucket=bkt, Key="mp")["Body"].read() == b"".join(parts)
    for n, p in enumerate(parts, 1):
        g = s3.get_object(Bucket=bkt, Key="mp", PartNumber=n)
        assert g["ResponseMetadata"]["HTTPStatusCode"] == 206 and g["PartsCount"] == 3
        assert g["Body"].read() == p and g["ContentLength"] == len(p)
        h = s3.head_object(Bucket=bkt, Key="mp", PartNumber=n)
        assert h["ContentLength"] == len(p) and h["PartsCount"] == 3
    for call in (s3.get_object, s3.head_object):
        with pytest.raises(Exception) as e:
            call(Bucket=bkt, Key="mp", PartNumber=4)
        assert err(e)[1] == 400
    with pytest.raises(Exception) as e:
        s3.get_object(Bucket=bkt, Key="mp", PartNumber=4)
    assert err(e) == ("InvalidPartNumber", 400)
    with pytest.raises(Exception) as e:
        s3.get_object(Bucket=bkt, Key="mp", PartNumber=1, Range="bytes=0-1")
    assert err(e) == ("InvalidRequest", 400)
    s3.put_object(Bucket=bkt, Key="plain", Body=b"whole")
    g = s3.get_object(Bucket=bkt, Key="plain", PartNumber=1)
    assert g["Body"].read() == b"whole" and "PartsCount" not in g
    with pytest.raises(Exception) as e:
        s3.get_object(Bucket=bkt, Key="plain", PartNumber=2)
    assert err(e) == ("InvalidPartNumber", 400)

    ups = sorted((k, s3.create_multipart_upload(Bucket=bkt, Key=k)["UploadId"])
                 for k in ("u/a", "u/b", "u/b", "u/c", "v"))
    seen, km, um = [], None, None
    for _ in range(10):
        kw = {"KeyMarker": km, "UploadIdMarker": um} if km else {}
        page = s3.list_multipart_uploads(Bucket=bkt, MaxUploads=2, **kw)
        seen += [(x["Key"], x["UploadId"]) for x in page.get("Uploads", [])]
        assert len(page.get("Uploads", [])) <= 2
        if not page["IsTruncated"]:
            break
        km, um = page["NextKeyMarker"], page["NextUploadIdMarker"]
    assert seen == ups
    only_after = s3.list_multipart_uploads(Bucket=bkt, KeyMarker="u/b")
    assert [x["Key"] for x in only_after["Uploads"]] == ["u/c", "v"]
    for k, i in ups:
        s3.abort_multipart_upload(Bucket=bkt, Key=k, UploadId=i)


def test_abandoned_uploads_expire():
    """An upload neither completed nor aborted within mpu_expire_h is
    dropped with its parts (0.001 h here: 3.6 s); one within it stays."""
    import glob
    import time
    from conftest import Cluster
    c = Cluster(targets=1, mountpaths=1,
                extra="--s3_api_keys %s:%s --mpu_expire_h 0.001" % (AK, SK)).start()
    try:
        s3 = client(c)
        s3.create_bucket(Bucket="exp")
        u = s3.create_multipart_upload(Bucket="exp", Key="old")["UploadId"]
        s3.upload_part(Bucket="exp", Key="old", UploadId=u, PartNumber=1, Body=b"p" * 1000)
        assert glob.glob(os.path.join(c.data, "t0", "*", "mpu", u))
        for _ in range(100):
            if not s3.list_multipart_uploads(Bucket="exp").get("Uploads"):
                break
            time.sleep(0.2)
        assert not s3.list_multipart_uploads(Bucket="exp").get("Uploads")
        with pytest.raises(Exception) as e:
            s3.upload_part(Bucket="exp", Key="old", UploadId=u, PartNumber=2, Body=b"x")
        assert err(e) == ("NoSuchUpload", 404)
        assert not glob.glob(os.path.join(c.data, "t0", "*", "mpu", u))
        fresh = s3.create_multipart_upload(Bucket="exp", Key="new")["UploadId"]
        assert [x["UploadId"] for x in s3.list_multipart_uploads(Bucket="exp")["Uploads"]] == \
            [fresh]
    finally:
        assert not c.cleanup()


def test_chunked_put_without_length(s3c, s3, bkt):
    """A PUT with Transfer-Encoding: chunked and no Content-Length is taken
    through the proxy (its body relayed chunked to the target), its
    Content-MD5 and signed payload hash checked; a body that fails them,
    or ends before its last chunk, leaves nothing."""
    import hashlib as hl
    import socket
    data = os.urandom(3 << 20)

    def pieces(d, n=100000):
        for i in range(0, len(d), n):
            yield d[i:i + n]
    url = "%s/s3/%s/" % (s3c.url, bkt)
    md5 = base64.b64encode(hl.md5(data).digest()).decode()
    for key, payload, extra in (("unsigned", "UNSIGNED-PAYLOAD", {"Content-MD5": md5}),
                                ("signed", hl.sha256(data).hexdigest(), {})):
        h = signed("PUT", url + key, b"", dict(extra), payload=payload)
        r = requests.put(url + key, data=pieces(data), headers=h)
        assert r.status_code == 200, r.text
        assert r.headers["ETag"] == '"%s"' % hl.md5(data).hexdigest()
        assert s3.get_object(Bucket=bkt, Key=key)["Body"].read() == data
    for key, payload, extra, code in (
            ("badmd5", "UNSIGNED-PAYLOAD", {"Content-MD5": base64.b64encode(b"x" * 16).decode()},
             "BadDigest"),
            ("badsha", hl.sha256(b"other").hexdigest(), {}, "XAmzContentSHA256Mismatch")):
        h = signed("PUT", url + key, b"", dict(extra), payload=payload)
        r = requests.put(url + key, data=pieces(data), headers=h)
        assert r.status_code == 400 and "<Code>%s</Code>" % code in r.text, r.text
        with pytest.raises(Exception) as e:
            s3.head_object(Bucket=bkt, Key=key)
        assert err(e)[1] == 404
    # a body cut before its last chunk
    h = signed("PUT", url + "cut", b"", {"Transfer-Encoding": "chunked"},
               payload="UNSIGNED-PAYLOAD")
    s = socket.create_connection(("127.0.0.1", s3c.port))
    head = "PUT /s3/%s/cut HTTP/1.1\r\n" % bkt + "".join(
        "%s: %s\r\n" % (k, v) for k, v in h.items()) + "\r\n"
    s.sendall(head.encode() + b"10000\r\n" + b"z" * 0x10000 + b"\r\n")
    time.sleep(0.3)
    s.close()
    time.sleep(0.3)
    with pytest.raises(Exception) as e:
        s3.head_object(Bucket=bkt, Key="cut")
    assert err(e)[1] == 404
