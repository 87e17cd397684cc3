"""Reading inside archive objects (shards): ?archpath, ?archlist, ?archregx on
.tar, .tar.gz, .tar.lz4 and .zip, on plain, mirrored, erasure-coded and
backed buckets, through the native and the S3 API, and the bad input."""
import io
import os
import random
import subprocess
import tarfile
import urllib.parse
import zipfile

import pytest
import requests

from conftest import SigV4, make_tar, mkbucket, running_cluster, running_s3rver

AK, SK = "ARCHTESTKEY", "arch-test-secret"


@pytest.fixture(scope="module")
def s3():
    yield from running_s3rver("remote")


@pytest.fixture(scope="module")
def c(s3):
    yield from running_cluster(targets=3, mountpaths=2, extra="--s3_api_keys %s:%s" % (AK, SK),
                               env=s3.env())




def url(c, b, name, query="", provider=None):
    u = "%s/v1/objects/%s/%s" % (c.url, b, urllib.parse.quote(name))
    q = [query] if query else []
    if provider:
        q.append("provider=" + provider)
    return u + ("?" + "&".join(q) if q else "")


def samples(n=30, seed=1):
    """WebDataset-like samples: NAME.jpg and NAME.cls, random sizes."""
    rnd = random.Random(seed)
    out = {}
    for i in range(n):
        key = "s/%05d" % i
        out[key + ".jpg"] = rnd.randbytes(rnd.randrange(0, 40000))
        out[key + ".cls"] = str(i % 7).encode()
    return out




def make_zip(files, method):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()


def make_lz4(data):
    return subprocess.run(["lz4", "-q", "-c"], input=data, capture_output=True,
                          check=True).stdout


def kinds(files):
    return {
        "shard.tar": make_tar(files),
        "shard-gnu.tar": make_tar(files, fmt=tarfile.GNU_FORMAT),
        "shard.tar.gz": make_tar(files, "w:gz"),
        "shard.tgz": make_tar(files, "w:gz"),
        "shard.tar.lz4": make_lz4(make_tar(files)),
        "shard.zip": make_zip(files, zipfile.ZIP_STORED),
        "shard-deflate.zip": make_zip(files, zipfile.ZIP_DEFLATED),
    }


def check_members(c, b, shard, files, provider=None):
    for name in list(files)[:12] + list(files)[-3:]:
        r = c.http.get(url(c, b, shard, "archpath=" + urllib.parse.quote(name, safe=""), provider))
        assert r.status_code == 200, (shard, name, r.text)
        assert r.content == files[name], (shard, name)
        assert int(r.headers["Content-Length"]) == len(files[name])
        assert r.headers["ETag"].startswith('"')


@pytest.mark.parametrize("shard", list(kinds({"x": b"y"})))
def test_member_reads_every_kind(c, shard):
    b = mkbucket(c)
    files = samples()
    data = kinds(files)[shard]
    assert c.http.put(url(c, b, shard), data).status_code == 201
    check_members(c, b, shard, files)
    check_members(c, b, shard, files)    # from the index kept
    # a Range inside a member
    name = max(files, key=lambda k: len(files[k]))
    r = c.http.get(url(c, b, shard, "archpath=" + urllib.parse.quote(name, safe="")), headers={"Range": "bytes=100-299"})
    assert r.status_code == 206 and r.content == files[name][100:300], r.text
    assert r.headers["Content-Range"] == "bytes 100-299/%d" % len(files[name])
    r = c.http.get(url(c, b, shard, "archpath=" + urllib.parse.quote(name, safe="")),
                   headers={"Range": "bytes=%d-" % (len(files[name]) + 5)})
    assert r.status_code == 416
    # the listing
    r = c.http.get(url(c, b, shard, "archlist"))
    assert r.status_code == 200, r.text
    lst = r.json()
    assert lst["count"] == len(files)
    assert {m["name"]: m["size"] for m in lst["members"]} == {k: len(v) for k, v in files.items()}
    # a missing member: 404 naming the archive and the member
    r = c.http.get(url(c, b, shard, "archpath=s%2Fnope.jpg"))
    assert r.status_code == 404 and shard in r.text and "s/nope.jpg" in r.text
    # the whole object is still the object
    assert c.http.get(url(c, b, shard)).content == data


def test_matching_members_as_a_tar(c):
    b = mkbucket(c)
    files = samples(40)
    for shard, data in (("m.tar", make_tar(files)), ("m.tar.gz", make_tar(files, "w:gz")),
                        ("m.zip", make_zip(files, zipfile.ZIP_DEFLATED))):
        assert c.http.put(url(c, b, shard), data).status_code == 201
        for q, want in (("archregx=" + urllib.parse.quote(r"\.cls$"),
                         [k for k in files if k.endswith(".cls")]),
                        ("archregx=s%2F0001&archmode=prefix", [k for k in files if k.startswith("s/0001")]),
                        ("archregx=.jpg&archmode=suffix", [k for k in files if k.endswith(".jpg")]),
                        ("archregx=s%2F00003&archmode=wdskey", ["s/00003.jpg", "s/00003.cls"])):
            r = c.http.get(url(c, b, shard, q), stream=True)
            assert r.status_code == 200, (shard, q, r.text)
            got = {}
            with tarfile.open(fileobj=r.raw, mode="r|") as t:
                for m in t:
                    got[m.name] = t.extractfile(m).read()
            assert sorted(got) == sorted(want), (shard, q)
            assert all(got[k] == files[k] for k in got)


def test_new_version_drops_the_index(c):
    b = mkbucket(c)
    one, two = {"a.txt": b"first version"}, {"a.txt": b"second, longer version", "b.txt": b"b"}
    assert c.http.put(url(c, b, "v.tar"), make_tar(one)).status_code == 201
    assert c.http.get(url(c, b, "v.tar", "archpath=a.txt")).content == b"first version"
    assert c.http.put(url(c, b, "v.tar"), make_tar(two)).status_code == 201
    assert c.http.get(url(c, b, "v.tar", "archpath=a.txt")).content == two["a.txt"]
    assert c.http.get(url(c, b, "v.tar", "archpath=b.txt")).content == b"b"
    assert c.http.delete(url(c, b, "v.tar")).status_code == 204
    assert c.http.get(url(c, b, "v.tar", "archpath=a.txt")).status_code == 404


@pytest.mark.parametrize("props", [{"mirror": {"copies": 2}}, {"ec": {"data": 2, "parity": 1}}])
def test_mirrored_and_erasure_coded(c, props):
    b = mkbucket(c, props)
    files = samples(20, seed=3)
    for shard in ("r.tar", "r.zip"):
        data = make_tar(files) if shard.endswith(".tar") else make_zip(files, zipfile.ZIP_STORED)
        assert c.http.put(url(c, b, shard), data).status_code == 201
        check_members(c, b, shard, files)


def test_cold_shard_of_a_backed_bucket(c, s3):
    files = samples(10, seed=5)
    s3.client().put_object(Bucket="remote", Key="cold/shard.tar", Body=make_tar(files))
    name = "s/00004.jpg"
    r = c.http.get(url(c, "remote", "cold/shard.tar", "archpath=" + urllib.parse.quote(name, safe=""), "s3"))
    assert r.status_code == 200, r.text
    assert r.content == files[name] and r.headers.get("X-Shoal-Cache") == "miss"
    check_members(c, "remote", "cold/shard.tar", files, "s3")
    r = c.http.get(url(c, "remote", "cold/shard.tar", None, "s3"))
    assert r.headers["X-Shoal-Cache"] == "hit" and len(r.content) > 0


def test_through_the_s3_api(c):
    b = mkbucket(c)
    files = samples(8, seed=7)
    assert c.http.put(url(c, b, "s3.tar"), make_tar(files)).status_code == 201
    name = "s/00002.jpg"
    u = "%s/s3/%s/s3.tar?archpath=%s" % (c.url, b, urllib.parse.quote(name, safe=""))
    r = requests.get(u, auth=SigV4(AK, SK))
    assert r.status_code == 200, r.text
    assert r.content == files[name]
    r = requests.get("%s/s3/%s/s3.tar?archpath=nope" % (c.url, b), auth=SigV4(AK, SK))
    assert r.status_code == 404 and b"<Code>NoSuchKey</Code>" in r.content


def test_bad_archives_and_queries(c):
    b = mkbucket(c)
    files = samples(5)
    good = make_tar(files)
    cases = {
        "garbage.tar": os.urandom(5000),
        "truncated.tar": good[:700],
        "gzip-named.tar": make_tar(files, "w:gz"),
        "tar-named.zip": good,
        "text.tar.gz": b"plain words, no gzip here" * 40,
    }
    # a size past the end: the first member's size field made huge
    big = bytearray(good)
    hdr = 512 * 2 if big[156:157] == b"x" else 0   # past a pax header, if any
    big[hdr + 124:hdr + 136] = b"77777777777\0"
    s = sum(big[hdr:hdr + 148]) + 8 * 32 + sum(big[hdr + 156:hdr + 512])
    big[hdr + 148:hdr + 156] = b"%06o\0 " % s
    cases["past-end.tar"] = bytes(big)
    cases["dotdot.tar"] = make_tar({"ok": b"1", "../../etc/passwd": b"x"})
    cases["longname.tar"] = make_tar({"n" * 65536: b"x"})
    cases["deep.tar"] = make_tar({"a/" * 10000 + "f": b"x"})
    for name, data in cases.items():
        assert c.http.put(url(c, b, name), data).status_code == 201
        for q in ("archpath=s%2F00000.jpg", "archlist"):
            r = c.http.get(url(c, b, name, q))
            assert r.status_code == 400, (name, q, r.status_code, r.text)
            assert name in r.text, (name, r.text)
    # a zip bomb: a member that claims far more than the file could give
    zeros = make_tar({"zeros": bytes(64 << 20)}, "w:gz")
    assert c.http.put(url(c, b, "bomb.tar.gz"), zeros).status_code == 201
    r = c.http.get(url(c, b, "bomb.tar.gz", "archlist"))
    assert r.status_code == 400 and "decompresses" in r.text
    # not an archive by its name, and queries that do not make sense
    assert c.http.put(url(c, b, "plain.bin"), good).status_code == 201
    r = c.http.get(url(c, b, "plain.bin", "archpath=x"))
    assert r.status_code == 400 and "not an archive" in r.text
    assert c.http.put(url(c, b, "q.tar"), good).status_code == 201
    for q in ("archpath=", "archpath=..%2Fx", "archpath=a&archlist", "archmode=prefix",
              "archregx=x&archmode=glob", "archregx=" + urllib.parse.quote("(unclosed"),
              "archregx=" + urllib.parse.quote("((a{1,999}){1,999}){1,999}"),
              "archregx=" + urllib.parse.quote(r"(a)\1"), "archregx=" + "a" * 300):
        r = c.http.get(url(c, b, "q.tar", q))
        assert r.status_code == 400, (q, r.text)
    # every daemon is still up and serving
    check_members(c, b, "q.tar", files)
