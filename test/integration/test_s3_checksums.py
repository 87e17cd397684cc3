"""S3's additional checksums (x-amz-checksum-crc32, crc32c, crc64nvme,
sha1, sha256): verified on PUT and UploadPart, in a header or trailing an
aws-chunked body, kept with the object and returned with
x-amz-checksum-mode: ENABLED; multipart objects get S3's COMPOSITE or
FULL_OBJECT value. A current SDK (the AWS SDK for JavaScript v3) runs
unchanged, as the fifth client."""
import base64
import hashlib
import json
import os
import subprocess
import zlib

import pytest
import requests

from conftest import NODE_DIR
from test_s3 import AK, SK, bkt, err, s3, s3c, signed  # noqa: F401 (fixtures)
from test_s3_subresources import crc32_b64, owner_root, trailer_body, trailer_put

HERE = os.path.dirname(os.path.abspath(__file__))


def b64(raw):
    return base64.b64encode(raw).decode()


def crc_reflected(data, poly, bits):
    """A reflected CRC with all-ones init and final inversion, bit by bit
    (CRC32C: poly 0x82f63b78, 32; CRC64NVME: 0x9a6c9329ac4bc9b5, 64)."""
    mask = (1 << bits) - 1
    c = mask
    for byte in data:
        c ^= byte
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
    return (c ^ mask).to_bytes(bits // 8, "big")


def value(alg, data):
    """S3's value of data under alg."""
    return b64({"CRC32": zlib.crc32(data).to_bytes(4, "big"),
                "CRC32C": crc_reflected(data, 0x82F63B78, 32),
                "CRC64NVME": crc_reflected(data, 0x9A6C9329AC4BC9B5, 64),
                "SHA1": hashlib.sha1(data).digest(),
                "SHA256": hashlib.sha256(data).digest()}[alg])


def raw_put(url, data, headers):
    h = dict(headers, **{"Content-Length": str(len(data))})
    return requests.put(url, data=data, headers=signed("PUT", url, data, h))


def test_every_algorithm_is_verified_kept_and_returned(s3c, s3, bkt):
    """A PUT's x-amz-checksum-<alg> is checked (a wrong one: 400 BadDigest,
    nothing stored), kept, returned by the PUT and by a whole GET or HEAD
    that asks for it; not by a ranged GET or one that does not ask."""
    data = os.urandom(70001)
    url = "%s/s3/%s/" % (s3c.url, bkt)
    assert value("CRC32C", b"123456789") == b64(bytes.fromhex("e3069283"))   # the check values
    assert value("CRC64NVME", b"123456789") == b64(bytes.fromhex("ae8b14860a799888"))
    for alg in ("CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"):
        hdr = "x-amz-checksum-" + alg.lower()
        r = raw_put(url + alg, data, {hdr: value(alg, data)})
        assert r.status_code == 200, r.text
        assert r.headers[hdr] == value(alg, data) and r.headers["x-amz-checksum-type"] == \
            "FULL_OBJECT"
        mode = {"x-amz-checksum-mode": "ENABLED"}
        for m in ("HEAD", "GET"):
            got = requests.request(m, url + alg, headers=signed(m, url + alg, b"", mode))
            assert got.headers.get(hdr) == value(alg, data), got.headers
        got = requests.head(url + alg, headers=signed("HEAD", url + alg))
        assert hdr not in got.headers and got.status_code == 200
        rng = dict(mode, Range="bytes=0-9")
        got = requests.get(url + alg, headers=signed("GET", url + alg, b"", rng))
        assert hdr not in got.headers and got.content == data[:10]
        bad = raw_put(url + alg + "-bad", data, {hdr: value(alg, data[1:])})
        assert bad.status_code == 400 and "<Code>BadDigest</Code>" in bad.text, bad.text
        assert requests.head(url + alg + "-bad",
                             headers=signed("HEAD", url + alg + "-bad")).status_code == 404
    # boto3 sending its own SHA256 and reading it back
    s3.put_object(Bucket=bkt, Key="b", Body=data, ChecksumAlgorithm="SHA256")
    assert s3.head_object(Bucket=bkt, Key="b", ChecksumMode="ENABLED")["ChecksumSHA256"] == \
        value("SHA256", data)


def test_bad_checksum_requests_are_refused(s3c, bkt):
    url = "%s/s3/%s/k" % (s3c.url, bkt)
    for h in ({"x-amz-checksum-crc32": "AAAA"},                     # not 4 bytes
              {"x-amz-checksum-sha256": "bad"}):                    # no base64 at all
        r = raw_put(url, b"x", h)                  # no value matches it: BadDigest, as S3
        assert r.status_code == 400 and "<Code>BadDigest</Code>" in r.text, (h, r.text)
    for h in ({"x-amz-checksum-crc32": "AAAAAA==", "x-amz-checksum-sha1": value("SHA1", b"x")},
              {"x-amz-sdk-checksum-algorithm": "MD5"},
              {"x-amz-sdk-checksum-algorithm": "SHA1", "x-amz-checksum-crc32": "AAAAAA=="}):
        r = raw_put(url, b"x", h)
        assert r.status_code == 400 and "<Code>InvalidRequest</Code>" in r.text, (h, r.text)
    assert requests.head(url, headers=signed("HEAD", url)).status_code == 404
    # only x-amz-sdk-checksum-algorithm: computed and kept
    r = raw_put(url, b"x", {"x-amz-sdk-checksum-algorithm": "crc32c"})
    assert r.status_code == 200 and r.headers["x-amz-checksum-crc32c"] == value("CRC32C", b"x")


@pytest.mark.parametrize("via", ["proxy", "target"])
def test_a_trailing_checksum_is_verified(s3c, s3, bkt, via):
    """STREAMING-UNSIGNED-PAYLOAD-TRAILER (what current SDKs send): the
    trailer's CRC32 is checked through the proxy and at a target's S3 root;
    a wrong one is 400 BadDigest and leaves nothing."""
    data = os.urandom(150000)
    for key, ck, want in (("good", None, 200), ("bad", b"AAAAAA==", 400)):
        url = "%s/s3/%s/%s" % (s3c.url, bkt, key) if via == "proxy" else owner_root(s3c, bkt, key)
        r = trailer_put(url, data, trailer_body(data, ck=ck))
        assert r.status_code == want, r.text
        if want == 400:
            assert "<Code>BadDigest</Code>" in r.text, r.text
    # an empty body (no last byte to hold back): a wrong trailer changes nothing
    url = "%s/s3/%s/good" % (s3c.url, bkt) if via == "proxy" else owner_root(s3c, bkt, "good")
    r = trailer_put(url, b"", trailer_body(b"", ck=b"AAAAAQ=="))
    assert r.status_code == 400 and "<Code>BadDigest</Code>" in r.text, r.text
    got = s3.get_object(Bucket=bkt, Key="good", ChecksumMode="ENABLED")
    assert got["ChecksumCRC32"] == crc32_b64(data).decode() and got["Body"].read() == data
    url = "%s/s3/%s/empty" % (s3c.url, bkt) if via == "proxy" else owner_root(s3c, bkt, "empty")
    r = trailer_put(url, b"", trailer_body(b""))
    assert r.status_code == 200 and r.headers["x-amz-checksum-crc32"] == "AAAAAA==", r.text
    assert s3.get_object(Bucket=bkt, Key="empty")["Body"].read() == b""
    with pytest.raises(Exception) as e:
        s3.head_object(Bucket=bkt, Key="bad")
    assert err(e)[1] == 404
    # a trailer that never comes
    url = "%s/s3/%s/none" % (s3c.url, bkt)
    body = trailer_body(data).replace(b"x-amz-checksum-crc32:", b"x-amz-other:")
    r = trailer_put(url, data, body)
    assert r.status_code == 400 and "<Code>InvalidRequest</Code>" in r.text, r.text


def with_type(s3, typ, **kw):
    """CreateMultipartUpload with x-amz-checksum-type (newer than this
    boto3's model)."""
    def add(request, **_):
        request.headers["x-amz-checksum-type"] = typ
    s3.meta.events.register("before-sign.s3.CreateMultipartUpload", add)
    try:
        return s3.create_multipart_upload(**kw)
    finally:
        s3.meta.events.unregister("before-sign.s3.CreateMultipartUpload", add)


def test_multipart_checksums(s3, bkt):
    """COMPOSITE (the default for SHA256): each part checked, the object's
    value the checksum of the parts' checksums with -N; FULL_OBJECT CRC32:
    the CRC of every byte; a listed part checksum that differs is
    InvalidPart; combinations S3 refuses are refused."""
    parts = [os.urandom(5 << 20), os.urandom(123)]
    u = s3.create_multipart_upload(Bucket=bkt, Key="comp", ChecksumAlgorithm="SHA256")
    assert u["ChecksumAlgorithm"] == "SHA256"
    listed = []
    for i, p in enumerate(parts, 1):
        r = s3.upload_part(Bucket=bkt, Key="comp", UploadId=u["UploadId"], PartNumber=i, Body=p,
                           ChecksumAlgorithm="SHA256")
        assert r["ChecksumSHA256"] == value("SHA256", p)
        listed.append({"PartNumber": i, "ETag": r["ETag"], "ChecksumSHA256": r["ChecksumSHA256"]})
    with pytest.raises(Exception) as e:      # a part whose checksum is wrong: not kept
        s3.upload_part(Bucket=bkt, Key="comp", UploadId=u["UploadId"], PartNumber=3,
                       Body=b"part three", ChecksumSHA256=value("SHA256", b"part 3"))
    assert err(e) == ("BadDigest", 400)
    lp = s3.list_parts(Bucket=bkt, Key="comp", UploadId=u["UploadId"])
    assert [p["ChecksumSHA256"] for p in lp["Parts"]] == [value("SHA256", p) for p in parts]
    assert lp["ChecksumAlgorithm"] == "SHA256"
    bad = [dict(listed[0]), listed[1]]
    bad[0]["ChecksumSHA256"] = value("SHA256", b"other")
    with pytest.raises(Exception) as e:
        s3.complete_multipart_upload(Bucket=bkt, Key="comp", UploadId=u["UploadId"],
                                     MultipartUpload={"Parts": bad})
    assert err(e) == ("InvalidPart", 400)
    for whole in ("bad", b64(hashlib.sha256(b"other").digest()) + "-2"):
        with pytest.raises(Exception) as e:  # the whole object's value: BadDigest, as S3
            s3.complete_multipart_upload(Bucket=bkt, Key="comp", UploadId=u["UploadId"],
                                         ChecksumSHA256=whole, MultipartUpload={"Parts": listed})
        assert err(e) == ("BadDigest", 400), whole
    done = s3.complete_multipart_upload(Bucket=bkt, Key="comp", UploadId=u["UploadId"],
                                        MultipartUpload={"Parts": listed})
    comp = b64(hashlib.sha256(b"".join(hashlib.sha256(p).digest() for p in parts)).digest())
    assert done["ChecksumSHA256"] == comp + "-2", done
    h = s3.head_object(Bucket=bkt, Key="comp", ChecksumMode="ENABLED")
    assert h["ChecksumSHA256"] == comp + "-2" and h.get("ChecksumType", "COMPOSITE") == "COMPOSITE"

    u = with_type(s3, "FULL_OBJECT", Bucket=bkt, Key="full", ChecksumAlgorithm="CRC32")
    listed = []
    for i, p in enumerate(parts, 1):     # parts without a checksum: computed with the upload's
        r = s3.upload_part(Bucket=bkt, Key="full", UploadId=u["UploadId"], PartNumber=i, Body=p)
        listed.append({"PartNumber": i, "ETag": r["ETag"]})
    done = s3.complete_multipart_upload(Bucket=bkt, Key="full", UploadId=u["UploadId"],
                                        MultipartUpload={"Parts": listed})
    assert done["ChecksumCRC32"] == value("CRC32", b"".join(parts)), done
    got = s3.get_object(Bucket=bkt, Key="full", ChecksumMode="ENABLED")
    assert got["ChecksumCRC32"] == value("CRC32", b"".join(parts))

    for alg, typ in (("SHA256", "FULL_OBJECT"), ("CRC64NVME", "COMPOSITE")):
        with pytest.raises(Exception) as e:
            with_type(s3, typ, Bucket=bkt, Key="no", ChecksumAlgorithm=alg)
        assert err(e) == ("InvalidRequest", 400)
    u = s3.create_multipart_upload(Bucket=bkt, Key="mix", ChecksumAlgorithm="CRC32")
    with pytest.raises(Exception) as e:        # a part checksummed with another algorithm
        s3.upload_part(Bucket=bkt, Key="mix", UploadId=u["UploadId"], PartNumber=1, Body=b"x",
                       ChecksumAlgorithm="SHA1")
    assert err(e) == ("InvalidRequest", 400)
    s3.abort_multipart_upload(Bucket=bkt, Key="mix", UploadId=u["UploadId"])


def test_aws_sdk_for_javascript_v3(s3c, bkt):
    """The current AWS SDK for JavaScript, unchanged: uploads (a header's
    CRC32, a stream's trailing CRC32), lib-storage multipart uploads from a
    buffer and a stream, reads it checks against the checksums, a wrong
    checksum refused, copy, list, delete."""
    r = subprocess.run(["node", os.path.join(HERE, "sdkjs.mjs"), s3c.url + "/s3", AK, SK, bkt],
                       capture_output=True, text=True, timeout=300, cwd=NODE_DIR)
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    small = b"hello world"
    streamed = bytes((i * 31 + 7) & 255 for i in range(300000))
    big = bytes((i * 31 + 7) & 255 for i in range(12 * 1024 * 1024 + 5))
    assert out["small_put"] == out["small_get"] == value("CRC32", small)
    assert out["streamed_put"] == out["streamed_get"] == value("CRC32", streamed)
    assert out["sha_put"] == value("SHA256", small) and out["sha_head"] == [value("SHA256", small),
                                                                             "FULL_OBJECT"]
    part_values = [zlib.crc32(big[o:o + (5 << 20)]).to_bytes(4, "big")
                   for o in range(0, len(big), 5 << 20)]
    comp = b64(zlib.crc32(b"".join(part_values)).to_bytes(4, "big")) + "-3"
    for k in ("mpu", "mpu-stream"):
        assert out[k][1] == comp and out[k][0].endswith('-3"'), out
        assert out[k + "_get"] == [comp, "COMPOSITE", len(big)], out
    assert out["bad"] == ["BadDigest", 400] and out["bad_head"] == 404
    assert out["copy_get"] == value("CRC32", small)
    assert out["listed"] == ["copy", "mpu", "mpu-stream", "sha", "small", "streamed"]
