"""Inline transforms: GET ?transform=NAME[&args] answers what the
transform makes of the object, on the target that holds it, streamed.
Four transforms on two targets with keys on: the C example
(shoal-transform-identity), the Python hash and Pillow examples and a
test transform of many modes (xform_modes.py). Covered: plain buckets, objects from 0
bytes to a few MiB (the in-memory and the file paths), an archive's
member, a cold object of a backed bucket (fetched whole, then cached),
the S3 API (boto3), the contract's headers, an answer 50 times its input,
and every failure a transform can have: unknown 404, error status 502
quoting it, too slow 504, a body cut short never whole, a crashed child
502 then 503 until it is back; HEAD and Range 501, bad use 400; read
access to the object needed."""
import hashlib
import io
import os
import time

import boto3
import pytest
import requests
from botocore.config import Config

from conftest import BUILD, ROOT, Cluster, S3rver, SigV4, make_tar

KEYS = {"ops": "ops-secret-555", "alice": "alice-secret-3"}
HERE = os.path.dirname(os.path.abspath(__file__))
SPECS = {
    "ident": {"command": [os.path.join(ROOT, BUILD, "bin", "shoal-transform-identity")]},
    "hash": {"command": ["/usr/bin/python3", os.path.join(ROOT, "deploy", "transforms",
                                                          "hash.py")]},
    "modes": {"command": ["/usr/bin/python3", os.path.join(HERE, "xform_modes.py")]},
    "resize": {"command": ["/usr/bin/python3", os.path.join(ROOT, "deploy", "transforms",
                                                            "resize.py")]},
}


def running(c, name):
    r = c.http.get(c.url + "/v1/transforms")
    got = [t for t in r.json()["transforms"] if t["name"] == name]
    return got and len(got[0]["targets"]) == 2 and \
        all(v["state"] == "running" for v in got[0]["targets"].values())


def wait_running(c, names, timeout=30):
    end = time.time() + timeout
    while time.time() < end and not all(running(c, n) for n in names):
        time.sleep(0.2)
    assert all(running(c, n) for n in names), c.http.get(c.url + "/v1/transforms").text


@pytest.fixture(scope="module")
def s3():
    srv = S3rver(buckets=("remote",)).start()
    yield srv
    srv.cleanup()


@pytest.fixture(scope="module")
def c(s3):
    c = Cluster(proxies=1, targets=2, mountpaths=1, env=s3.env(),
                extra="--auth_keys %s --admin_keys ops --transform_timeout_s 2" %
                      ",".join("%s:%s" % kv for kv in KEYS.items())).start()
    c.http.auth = SigV4("ops", KEYS["ops"])
    try:
        for name, spec in SPECS.items():
            assert c.http.put(c.url + "/v1/transforms/" + name, json=spec).status_code == 201
        assert c.http.put(c.url + "/v1/buckets/tg").status_code == 201
        wait_running(c, SPECS)
    except BaseException:
        c.cleanup()              # no daemons left behind by a setup that failed
        raise
    yield c
    assert not c.cleanup()


def get(c, name, query, **kw):
    return c.http.get(c.url + "/v1/objects/tg/" + name, params=query, **kw)


def test_objects_of_every_size_through_each_transform(c):
    for i, n in enumerate((0, 1, 10 << 10, 40 << 10, (3 << 20) + 5)):
        data = os.urandom(n)
        name = "sz/%d" % i
        assert c.http.put(c.url + "/v1/objects/tg/" + name, data=data).status_code == 201
        r = get(c, name, {"transform": "modes"})
        assert r.status_code == 200, r.text
        assert r.content == data[::-1], (n, len(r.content))
        assert r.headers["Content-Type"] == "text/x-reversed"
        assert r.headers["X-Shoal-Transform"] == "modes"
        assert "ETag" not in r.headers        # not the object's bytes
        r = get(c, name, {"transform": "ident"})
        assert r.status_code == 200 and r.content == data, (n, r.status_code)
        r = get(c, name, {"transform": "hash", "algo": "md5"})
        assert r.text == hashlib.md5(data).hexdigest() + "\n", r.text
    # the object itself is untouched
    assert get(c, "sz/2", {}).content != get(c, "sz/2", {"transform": "modes"}).content


def test_images_reencoded_by_the_pillow_example(c):
    from PIL import Image
    buf = io.BytesIO()
    Image.new("RGB", (120, 80), (200, 30, 60)).save(buf, "PNG")
    assert c.http.put(c.url + "/v1/objects/tg/cat.png", data=buf.getvalue()).status_code == 201
    r = get(c, "cat.png", {"transform": "resize", "size": "30x30", "format": "jpeg"})
    assert r.status_code == 200 and r.headers["Content-Type"] == "image/jpeg", r.text
    img = Image.open(io.BytesIO(r.content))
    assert img.format == "JPEG" and img.size == (30, 20)
    r = get(c, "sz/2", {"transform": "resize"})    # random bytes: not an image
    assert r.status_code == 502 and "not an image" in r.json()["error"], r.text
    r = get(c, "cat.png", {"transform": "resize", "size": "big"})
    assert r.status_code == 502 and "bad argument" in r.json()["error"], r.text


def test_the_contract_headers(c):
    assert c.http.put(c.url + "/v1/objects/tg/dir/a%20b%2Bc.bin",
                      data=b"x" * 1234).status_code == 201
    r = c.http.get(c.url + "/v1/objects/tg/dir/a%20b%2Bc.bin",
                   params={"transform": "modes", "mode": "echo", "size": "224x224"})
    assert r.status_code == 200, r.text
    got = {k.lower(): v for k, v in r.json().items()}
    assert got["x-shoal-bucket"] == "tg"
    assert got["x-shoal-name"] == "dir/a%20b%2Bc.bin", got
    assert got["x-shoal-size"] == "1234" and got["body"] == 1234
    assert got["x-shoal-args"] == "mode=echo&size=224x224", got


def test_answers_larger_than_the_object_stream(c):
    data = os.urandom(1 << 20)
    assert c.http.put(c.url + "/v1/objects/tg/big", data=data).status_code == 201
    r = get(c, "big", {"transform": "modes", "mode": "big"}, stream=True)
    assert r.status_code == 200 and "Content-Length" not in r.headers
    h, n = hashlib.sha256(), 0
    for chunk in r.iter_content(1 << 20):
        h.update(chunk)
        n += len(chunk)
    assert n == 50 << 20 and h.hexdigest() == hashlib.sha256(data * 50).hexdigest()
    r = get(c, "big", {"transform": "ident", "repeat": "3"})
    assert r.content == data * 3
    for bad in ("", "0", "1001"):  # the identity's own 400, relayed as the transform's error
        r = get(c, "big", {"transform": "ident", "repeat": bad})
        assert r.status_code == 502 and "repeat takes 1..1000" in r.text, (bad, r.text)
    # past what the C identity holds before it answers (16 MiB): its answer
    # starts while the object is still going in, and is whole all the same
    huge = os.urandom((24 << 20) + 3)
    assert c.http.put(c.url + "/v1/objects/tg/huge", data=huge).status_code == 201
    r = get(c, "huge", {"transform": "ident"}, stream=True)
    assert r.status_code == 200 and r.headers["Content-Length"] == str(len(huge))
    h = hashlib.sha256()
    for chunk in r.iter_content(1 << 20):
        h.update(chunk)
    assert h.hexdigest() == hashlib.sha256(huge).hexdigest()


def test_a_member_of_an_archive(c):
    tar = make_tar({"a.txt": b"hello member", "b.bin": os.urandom(5000)})
    assert c.http.put(c.url + "/v1/objects/tg/shard.tar", data=tar).status_code == 201
    r = get(c, "shard.tar", {"archpath": "a.txt", "transform": "modes"})
    assert r.status_code == 200 and r.content == b"rebmem olleh", r.text


def test_a_cold_object_is_fetched_whole_first(c, s3):
    assert c.http.put(c.url + "/v1/buckets/tcold",
                      json={"backend": "s3://remote"}).status_code == 201
    data = os.urandom((2 << 20) + 3)
    s3.client().put_object(Bucket="remote", Key="far/obj", Body=data)
    r = c.http.get(c.url + "/v1/objects/tcold/far/obj", params={"transform": "modes"})
    assert r.status_code == 200 and r.content == data[::-1], r.text[:200]
    assert r.headers["X-Shoal-Cache"] == "miss"
    r = c.http.get(c.url + "/v1/objects/tcold/far/obj")
    assert r.headers["X-Shoal-Cache"] == "hit" and r.content == data


def test_through_the_s3_api(c):
    data = b"through boto3 " * 1000
    assert c.http.put(c.url + "/v1/objects/tg/s3obj", data=data).status_code == 201
    cli = boto3.client("s3", endpoint_url=c.url + "/s3", aws_access_key_id="ops",
                       aws_secret_access_key=KEYS["ops"], region_name="us-east-1",
                       config=Config(s3={"addressing_style": "path"}))

    def add_transform(request, **kw):
        request.url += ("&" if "?" in request.url else "?") + "transform=modes"
    cli.meta.events.register("before-sign.s3.GetObject", add_transform)
    got = cli.get_object(Bucket="tg", Key="s3obj")
    assert got["Body"].read() == data[::-1]
    assert got["ContentType"] == "text/x-reversed"


def test_failures_are_named_and_never_look_whole(c):
    assert c.http.put(c.url + "/v1/objects/tg/f", data=os.urandom(300000)).status_code == 201
    r = get(c, "f", {"transform": "nosuch"})
    assert r.status_code == 404 and "nosuch" in r.json()["error"], r.text
    r = get(c, "f", {"transform": "modes", "mode": "error"})
    assert r.status_code == 502, r.text
    assert "modes" in r.json()["error"] and "cannot transform this" in r.json()["error"]
    t0 = time.time()
    r = get(c, "f", {"transform": "modes", "mode": "slow"})
    assert r.status_code == 504 and "modes" in r.json()["error"], r.text
    assert time.time() - t0 < 4.5               # transform_timeout_s 2, not the 5 s it takes
    try:                         # never a body that looks whole: cut short of its length
        r = get(c, "f", {"transform": "modes", "mode": "cut"})
        assert r.status_code == 200 and len(r.content) < int(r.headers["Content-Length"])
    except requests.exceptions.RequestException:
        pass
    # a child that crashes mid-object: 502, then 503 until it is back
    r = get(c, "f", {"transform": "modes", "mode": "exit"})   # 503 when curl tried again
    assert r.status_code in (502, 503) and "modes" in r.json()["error"], r.text
    seen = set()
    end = time.time() + 30
    while time.time() < end:
        r = get(c, "f", {"transform": "modes"})
        seen.add(r.status_code)
        if r.status_code == 200:
            break
        assert r.status_code == 503 and r.headers.get("Retry-After"), r.text
        time.sleep(0.1)
    assert r.status_code == 200 and 503 in seen, seen


def test_bad_use(c):
    assert c.http.put(c.url + "/v1/objects/tg/u", data=b"use").status_code == 201
    u = c.url + "/v1/objects/tg/u"
    r = c.http.head(u, params={"transform": "modes"}, allow_redirects=True)
    assert r.status_code == 501
    r = c.http.get(u, params={"transform": "modes"}, headers={"Range": "bytes=0-1"})
    assert r.status_code == 501 and "Range" in r.text
    r = c.http.put(u, params={"transform": "modes"}, data=b"x")
    assert r.status_code == 400 and "GET" in r.text
    assert c.http.get(u).content == b"use"      # the PUT stored nothing
    r = c.http.get(u, params={"transform": "x" * 64})
    assert r.status_code == 400


def test_reading_needs_read_access(c):
    assert c.http.put(c.url + "/v1/objects/tg/secret", data=b"ops only").status_code == 201
    alice = SigV4("alice", KEYS["alice"])
    r = requests.get(c.url + "/v1/objects/tg/secret", params={"transform": "modes"}, auth=alice)
    assert r.status_code == 403 and b"ylno" not in r.content
    r = requests.get(c.url + "/v1/objects/tg/secret", params={"transform": "modes"})
    assert r.status_code == 403
    # in her own bucket, she may
    assert requests.put(c.url + "/v1/buckets/alices", auth=alice).status_code == 201
    assert requests.put(c.url + "/v1/objects/alices/o", data=b"hers", auth=alice).status_code == 201
    r = requests.get(c.url + "/v1/objects/alices/o", params={"transform": "modes"}, auth=alice)
    assert r.status_code == 200 and r.content == b"sreh", r.text


# ---- the transform job ------------------------------------------------------------------------

def run_job(c, spec, want=201):
    r = c.http.post(c.url + "/v1/jobs", json=spec)
    assert r.status_code == want, r.text
    if want != 201:
        return r
    r = c.http.get(c.url + "/v1/jobs/%s?wait=120" % r.json()["id"], timeout=150)
    assert r.status_code == 200, r.text
    return r.json()


def test_a_transform_job_renames_and_writes_every_object(c):
    assert c.http.put(c.url + "/v1/buckets/jsrc").status_code == 201
    assert c.http.put(c.url + "/v1/buckets/jdst").status_code == 201
    data = {"img/%02d.jpg" % i: os.urandom(i * 37000) for i in range(30)}
    data["img/notes.txt"] = b"kept its name"
    data["other/x.jpg"] = b"not selected"
    for k, v in data.items():
        assert c.http.put(c.url + "/v1/objects/jsrc/" + k, data=v).status_code == 201
    spec = {"kind": "transform", "transform": "modes", "bucket": "jsrc", "to": "jdst",
            "prefix": "img/", "ext": {".jpg": ".rev"}, "concurrency": 4}
    dry = run_job(c, dict(spec, dry_run=True))
    assert dry["state"] == "finished" and dry["transformed"] == 31, dry
    assert c.http.get(c.url + "/v1/objects/jdst/img/01.rev").status_code == 404
    j = run_job(c, spec)
    assert j["state"] == "finished" and j["transformed"] == 31 and j["errors"] == 0, \
        j.get("error_names")
    for k, v in data.items():
        if not k.startswith("img/"):
            continue
        r = c.http.get(c.url + "/v1/objects/jdst/" + k.replace(".jpg", ".rev"))
        assert r.status_code == 200 and r.content == v[::-1], (k, r.status_code)
        assert r.headers["Content-Type"] == "text/x-reversed"
    assert c.http.get(c.url + "/v1/objects/jdst/other/x.jpg").status_code == 404
    # the C example with an argument, onto the same bucket under a prefix
    j = run_job(c, {"kind": "transform", "transform": "ident", "bucket": "jsrc",
                    "to": "jsrc", "names": ["img/03.jpg"], "prepend": "x3/",
                    "args": "repeat=2"})
    assert j["state"] == "finished" and j["transformed"] == 1, j
    assert c.http.get(c.url + "/v1/objects/jsrc/x3/img/03.jpg").content == data["img/03.jpg"] * 2


def test_failed_objects_are_named_and_nothing_partial_is_stored(c):
    assert c.http.put(c.url + "/v1/buckets/jf").status_code == 201
    names = ["good/%d" % i for i in range(6)] + ["bad/1", "bad/2", "cut/1", "cut/2"]
    for n in names:
        assert c.http.put(c.url + "/v1/objects/jf/" + n,
                          data=os.urandom(200000)).status_code == 201
    j = run_job(c, {"kind": "transform", "transform": "modes", "args": "mode=picky",
                    "bucket": "jf", "to": "jdst", "prepend": "f/"})
    assert j["transformed"] == 6 and j["errors"] == 4 and j["state"] == "failed", j
    failed = {e["name"]: e["reason"] for e in j["error_names"]}
    assert set(failed) == {"bad/1", "bad/2", "cut/1", "cut/2"}, failed
    assert "cannot transform this" in failed["bad/1"] and "modes" in failed["cut/1"], failed
    for n in names:
        r = c.http.get(c.url + "/v1/objects/jdst/f/" + n)
        assert r.status_code == (200 if n.startswith("good") else 404), (n, r.status_code)


def test_a_job_reads_a_backed_bucket(c, s3):
    s3.client().put_object(Bucket="remote", Key="far/job1", Body=b"from the backend")
    j = run_job(c, {"kind": "transform", "transform": "modes", "bucket": "tcold",
                    "to": "jdst", "names": ["far/job1"]})
    assert j["state"] == "finished" and j["transformed"] == 1, j
    assert c.http.get(c.url + "/v1/objects/jdst/far/job1").content == b"dnekcab eht morf"


@pytest.mark.parametrize("spec,status,why", [
    ({"transform": "nosuch"}, 404, "nosuch"),
    ({}, 400, "names its transform"),
    ({"transform": "modes", "ext": {"jpg": ".png"}}, 400, "ext"),
    ({"transform": "modes", "ext": [".jpg"]}, 400, "ext"),
    ({"transform": "modes", "concurrency": 0}, 400, "concurrency"),
    ({"transform": "modes", "args": 3}, 400, "args"),
    ({"transform": "modes", "args": "a=\"x\""}, 400, "URL-encoded"),
    ({"transform": "modes", "to": "jsrc"}, 400, "onto itself"),
    ({"transform": "modes", "kind": "copy"}, 400, "only a transform job"),
])
def test_bad_job_specs(c, spec, status, why):
    full = dict({"kind": "transform", "bucket": "jsrc", "to": "jdst"}, **spec)
    r = run_job(c, full, want=status)
    assert why in r.json()["error"], r.text


def test_the_cli_starts_a_transform_job(c):
    import subprocess
    base = [os.path.join(ROOT, BUILD, "bin", "shoal"), "--endpoint", c.url, "--access-key",
            "ops", "--secret-key", KEYS["ops"]]
    p = subprocess.run(base + ["--json", "job", "start", "transform", "jsrc", "jdst",
                               "--transform", "modes", "--names", "img/05.jpg",
                               "--ext", ".jpg=.cli,.png=.x", "--concurrency", "2", "--wait"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    r = c.http.get(c.url + "/v1/objects/jdst/img/05.cli")
    assert r.status_code == 200
    assert r.content == c.http.get(c.url + "/v1/objects/jsrc/img/05.jpg").content[::-1]
    p = subprocess.run(base + ["job", "start", "transform", "jsrc", "jdst"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "--transform NAME" in p.stderr, p.stderr
    p = subprocess.run(base + ["job", "start", "transform", "jsrc", "jdst", "--transform",
                               "modes", "--ext", ".jpg"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and "--ext" in p.stderr, p.stderr


def test_getbatch_entries_with_their_own_transforms(c):
    import json
    import tarfile
    from PIL import Image
    buf = io.BytesIO()
    Image.new("RGB", (60, 40)).save(buf, "PNG")
    objs = {"gb/2": os.urandom(50000), "gb/3": os.urandom(70000), "gb/1": b"x",
            "gb/cat.png": buf.getvalue(), "gb/shard.tar": make_tar({"a.txt": b"hello member"})}
    for n, v in objs.items():
        assert c.http.put(c.url + "/v1/objects/tg/" + n, data=v).status_code == 201
    entries = [{"bucket": "tg", "name": "gb/2", "transform": "modes"},
               {"bucket": "tg", "name": "gb/3"},
               {"bucket": "tg", "name": "gb/cat.png", "transform": "resize",
                "args": "size=12x12&format=png"},
               {"bucket": "tg", "name": "gb/shard.tar", "archpath": "a.txt",
                "transform": "modes"},
               {"bucket": "tg", "name": "gb/1", "transform": "hash", "args": "algo=md5"}]
    r = c.http.post(c.url + "/v1/batch", data=json.dumps({"entries": entries}))
    assert r.status_code == 200, r.text
    with tarfile.open(fileobj=io.BytesIO(r.content)) as t:
        got = [(m.name, t.extractfile(m).read()) for m in t]
    assert [n for n, _ in got] == ["tg/gb/2", "tg/gb/3", "tg/gb/cat.png",
                                   "tg/gb/shard.tar/a.txt", "tg/gb/1"]
    assert got[0][1] == objs["gb/2"][::-1] and got[1][1] == objs["gb/3"]
    assert Image.open(io.BytesIO(got[2][1])).size == (12, 8)
    assert got[3][1] == b"rebmem olleh"
    assert got[4][1] == (hashlib.md5(b"x").hexdigest() + "\n").encode()
    # a failing transform fails its entry (or, continuing, names it)
    bad = [{"bucket": "tg", "name": "gb/3", "transform": "modes", "args": "mode=error"},
           {"bucket": "tg", "name": "gb/2"}]
    r = c.http.post(c.url + "/v1/batch", data=json.dumps({"entries": bad,
                                                          "continue_on_error": True}))
    assert r.status_code == 200, r.text
    with tarfile.open(fileobj=io.BytesIO(r.content)) as t:
        names = [m.name for m in t]
    assert names == ["__404__/tg/gb/3", "tg/gb/2"], names
    r = c.http.post(c.url + "/v1/batch", data=json.dumps({"entries": bad}))
    assert r.status_code == 502 and "modes" in r.text, r.text
    for e, why in (({"transform": "modes", "start": 1}, "not implemented"),
                   ({"args": "a=1"}, "args go with a transform"),
                   ({"transform": "modes", "args": "a b"}, "malformed"),
                   ({"transform": "no such"}, "malformed")):
        r = c.http.post(c.url + "/v1/batch", data=json.dumps(
            {"entries": [dict({"bucket": "tg", "name": "gb/3"}, **e)]}))
        assert r.status_code == 400 and why in r.text, (e, r.text)
