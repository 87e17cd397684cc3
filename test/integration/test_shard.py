"""Sharding jobs: shard packs loose objects into WebDataset shards (samples
kept whole, in order or shuffled by a seed), reshard re-makes shards at
another size from their members; the shards are read back the way
WebDataset's pipe:curl URLs read them, byte for byte; bad specs are 400."""
import io
import json
import os
import random
import subprocess
import tarfile
import urllib.parse
import zipfile

import pytest

from conftest import mkbucket, put_object as put, running_cluster, running_s3rver


@pytest.fixture(scope="module")
def s3():
    yield from running_s3rver("shsrc")


@pytest.fixture(scope="module")
def c(s3):
    yield from running_cluster(targets=3, mountpaths=1, env=s3.env())




def obj(c, b, name, provider=None):
    u = "%s/v1/objects/%s/%s" % (c.url, b, urllib.parse.quote(name))
    return u + ("?provider=" + provider if provider else "")




def start_job(c, spec, want=201):
    r = c.http.post(c.url + "/v1/jobs", json=spec)
    assert r.status_code == want, r.text
    return r.json().get("id") if want < 300 else r.json().get("message", r.text)


def wait_job(c, jid, secs=180):
    r = c.http.get("%s/v1/jobs/%s?wait=%d" % (c.url, jid, secs), timeout=secs + 30)
    assert r.status_code == 200, r.text
    print("job %s: %s" % (jid, r.text))
    return r.json()


def listing(c, b, prefix=""):
    r = c.http.get("%s/v1/buckets/%s/objects?prefix=%s" % (c.url, b, prefix))
    assert r.status_code == 200, r.text
    return sorted(o["name"] for o in r.json()["objects"])


def samples(n, prefix="train/"):
    """n WebDataset samples: an image, a class and (every third) a JSON."""
    out = {}
    for i in range(n):
        key = "%s%05d" % (prefix, i)
        out[key + ".jpg"] = os.urandom(random.randrange(1000, 30000))
        out[key + ".cls"] = str(i % 10).encode()
        if i % 3 == 0:
            out[key + ".json"] = json.dumps({"i": i}).encode()
    return out


def key_of(name):
    base = name.rsplit("/", 1)
    return name[:len(name) - len(base[-1])] + base[-1].split(".", 1)[0]


def read_pipe_curl(c, b, name):
    """A shard read the way WebDataset's "pipe:curl -s -L URL" does: curl
    streams it, tarfile reads the stream (no seeking)."""
    p = subprocess.Popen(["curl", "-s", "-f", "-L", obj(c, b, name)], stdout=subprocess.PIPE)
    out = []
    with tarfile.open(fileobj=p.stdout, mode="r|") as t:
        for m in t:
            out.append((m.name, t.extractfile(m).read()))
    assert p.wait() == 0
    return out


def check_shards(got, data):
    """Every object once, byte for byte; every sample in one shard."""
    seen, where = {}, {}
    for shard, members in got.items():
        for n, d in members:
            assert n not in seen, "%s twice" % n
            assert d == data[n], n
            seen[n] = d
            k = key_of(n)
            assert where.setdefault(k, shard) == shard, "sample %s split" % k
    assert set(seen) == set(data)


def test_shard_webdataset_read_by_pipe_curl(c):
    src, dst = mkbucket(c), mkbucket(c)
    data = samples(240)
    for k, v in data.items():
        put(c, src, k, v)
    put(c, src, "other/x.jpg", b"not selected")
    total = sum(len(v) for v in data.values())
    spec = {"kind": "shard", "bucket": src, "to": dst, "prefix": "train/",
            "shard_size": 256 << 10, "output_template": "train-{000000..999999}.tar",
            "key": "shard-" + src}
    jid = start_job(c, spec)
    j = wait_job(c, jid)
    assert j["state"] == "finished" and j["errors"] == 0, j
    names = listing(c, dst)
    assert names == ["train-%06d.tar" % i for i in range(len(names))]
    assert j["shards"] == len(names) and j["done"] == j["selected"] == len(data), j
    assert len(names) >= total // (256 << 10)
    got = {n: read_pipe_curl(c, dst, n) for n in names}
    check_shards(got, data)
    order = [m for n in names for m, _ in got[n]]
    assert [key_of(m) for m in order] == sorted(key_of(m) for m in order)
    for n in names[:-1]:   # about shard_size: a shard stops once it reaches it
        size = int(c.http.head(obj(c, dst, n), allow_redirects=True).headers["Content-Length"])
        assert (256 << 10) <= size < (256 << 10) + 80000, (n, size)
    # the same key: the same job
    assert start_job(c, spec, 200) == jid
    # the shards' members by name, as any archive object
    m = got[names[0]][0]
    r = c.http.get(obj(c, dst, names[0]) + "?archpath=" + urllib.parse.quote(m[0], safe=""))
    assert r.status_code == 200 and r.content == m[1]


def test_shuffle_is_seeded_and_formats(c):
    src, dst = mkbucket(c), mkbucket(c)
    data = samples(60, "s/")
    for k, v in data.items():
        put(c, src, k, v)
    base = {"kind": "shard", "bucket": src, "to": dst, "shard_size": 1 << 30}
    orders = []
    for out, seed in (("a-{0..9}.tar", 7), ("b-{0..9}.tar", 7), ("c-{0..9}.tar", 8)):
        j = wait_job(c, start_job(c, dict(base, output_template=out, shuffle=True, seed=seed)))
        assert j["state"] == "finished" and j["shards"] == 1, j
        got = read_pipe_curl(c, dst, out.replace("{0..9}", "0"))
        check_shards({out: got}, data)
        orders.append([n for n, _ in got])
    assert orders[0] == orders[1] and orders[0] != orders[2]
    assert [key_of(n) for n in orders[0]] != sorted(key_of(n) for n in orders[0])
    # zip and tar.gz by the template's extension
    j = wait_job(c, start_job(c, dict(base, output_template="z-{0..9}.zip", shard_size=100000)))
    assert j["state"] == "finished" and j["shards"] >= 3, j
    got = {}
    for i in range(j["shards"]):
        r = c.http.get(obj(c, dst, "z-%d.zip" % i))
        assert r.headers["Content-Type"] == "application/zip"
        with zipfile.ZipFile(io.BytesIO(r.content)) as z:
            got[i] = [(n, z.read(n)) for n in z.namelist()]
    check_shards(got, data)
    j = wait_job(c, start_job(c, dict(base, output_template="g.tar.gz")))
    assert j["state"] == "finished" and j["shards"] == 1, j
    r = c.http.get(obj(c, dst, "g.tar.gz"), stream=True)
    with tarfile.open(fileobj=r.raw, mode="r|gz") as t:
        got = [(m.name, t.extractfile(m).read()) for m in t]
    check_shards({0: got}, data)


def test_reshard_to_larger_shards(c):
    src, mid, dst = mkbucket(c), mkbucket(c), mkbucket(c)
    data = samples(150, "r/")
    for k, v in data.items():
        put(c, src, k, v)
    j = wait_job(c, start_job(c, {"kind": "shard", "bucket": src, "to": mid,
                                  "shard_size": 100000, "output_template": "p-{000..999}.tar"}))
    assert j["state"] == "finished" and j["shards"] > 10, j
    small = j["shards"]
    j = wait_job(c, start_job(c, {"kind": "reshard", "bucket": mid, "to": dst,
                                  "template": "p-{000..999}.tar", "shard_size": 1 << 20,
                                  "output_template": "q-{00..99}.tar", "shuffle": True}))
    assert j["state"] == "finished" and j["errors"] == 0, j
    assert 1 <= j["shards"] < small and j["done"] == len(data), j
    names = listing(c, dst)
    assert len(names) == j["shards"]
    check_shards({n: read_pipe_curl(c, dst, n) for n in names}, data)


def test_shard_a_backed_bucket(s3, c):
    """Objects only in the backend: listed there, fetched cold, packed."""
    data = samples(30, "b/")
    for k, v in data.items():
        s3.client().put_object(Bucket="shsrc", Key=k, Body=v)
    dst = mkbucket(c)
    j = wait_job(c, start_job(c, {"kind": "shard", "bucket": "shsrc", "provider": "s3",
                                  "to": dst, "prefix": "b/", "shard_size": 150000,
                                  "output_template": "s3-{00..99}.tar"}))
    assert j["state"] == "finished" and j["errors"] == 0, j
    names = listing(c, dst)
    check_shards({n: read_pipe_curl(c, dst, n) for n in names}, data)
    # a template selection (filtered from the listing), names too
    j = wait_job(c, start_job(c, {"kind": "shard", "bucket": "shsrc", "provider": "s3",
                                  "to": dst, "template": "b/{00000..00009}.jpg",
                                  "output_template": "t.tar"}))
    assert j["state"] == "finished" and j["done"] == 10, j
    got = read_pipe_curl(c, dst, "t.tar")
    assert [n for n, _ in got] == ["b/%05d.jpg" % i for i in range(10)]


def test_bad_specs_and_failures(c):
    src, dst = mkbucket(c), mkbucket(c)
    for k, v in samples(20, "x/").items():
        put(c, src, k, v)
    base = {"kind": "shard", "bucket": src, "to": dst, "output_template": "o-{0..9}.tar"}
    assert "output_template" in start_job(c, dict(base, output_template=None), 400)
    start_job(c, dict(base, output_template="o-{0..9}.rar"), 400)
    start_job(c, dict(base, output_template="o-{9..0"), 400)
    start_job(c, dict(base, shard_size=0), 400)
    start_job(c, dict(base, shard_size="1G"), 400)
    start_job(c, dict(base, seed=-1, shuffle=True), 400)
    start_job(c, dict(base, shuffle="yes"), 400)
    start_job(c, {k: v for k, v in base.items() if k != "to"}, 400)
    start_job(c, dict(base, to="no-such-bucket"), 404)
    # more shards than the template names: failed, nothing written
    j = wait_job(c, start_job(c, dict(base, shard_size=1, output_template="few-{0..2}.tar")))
    assert j["state"] == "failed" and j["shards"] == 0, j
    assert "template names 3" in json.dumps(j["error_names"]), j
    assert listing(c, dst, "few-") == []
    # an empty selection, and names of which one is missing
    j = wait_job(c, start_job(c, dict(base, prefix="nothing/")))
    assert j["state"] == "failed" and "nothing selected" in json.dumps(j["error_names"]), j
    j = wait_job(c, start_job(c, dict(base, names=["x/00001.jpg", "x/nope.jpg"],
                                      output_template="n.tar")))
    assert j["state"] == "failed" and j["shards"] == 1, j
    assert j["error_names"][0]["name"] == "x/nope.jpg"
    assert [n for n, _ in read_pipe_curl(c, dst, "n.tar")] == ["x/00001.jpg"]
    # into its own bucket (a copy there would need a prepend; shards are new names)
    j = wait_job(c, start_job(c, dict(base, to=src, prefix="x/", output_template="self.tar")))
    assert j["state"] == "finished" and j["shards"] == 1, j
    assert len(read_pipe_curl(c, src, "self.tar")) == j["done"] > 0
    # a reshard of something that is not a shard names it
    put(c, src, "notashard.tar", b"this is not a tar file" * 100)
    j = wait_job(c, start_job(c, {"kind": "reshard", "bucket": src, "to": dst,
                                  "names": ["notashard.tar"], "output_template": "rr.tar"}))
    assert j["state"] == "failed" and "notashard.tar" in json.dumps(j["error_names"]), j


def test_cli_shard_and_abort(c):
    """`shoal job start shard ... --wait`; an aborted job stops with what
    it wrote whole, never a partial shard."""
    from conftest import BUILD, ROOT
    shoal = os.path.join(ROOT, BUILD, "bin", "shoal")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SHOAL_", "AWS_"))}
    env["SHOAL_ENDPOINT"] = c.url
    src, dst = mkbucket(c), mkbucket(c)
    data = samples(40, "c/")
    for k, v in data.items():
        put(c, src, k, v)
    p = subprocess.run([shoal, "job", "start", "shard", src, dst, "--prefix", "c/",
                        "--output-template", "cli-{00..99}.tar", "--shard-size", "64K",
                        "--shuffle", "--seed", "3", "--wait"], env=env, capture_output=True)
    assert p.returncode == 0, p.stderr
    names = listing(c, dst, "cli-")
    assert len(names) >= 5
    check_shards({n: read_pipe_curl(c, dst, n) for n in names}, data)
    p = subprocess.run([shoal, "job", "start", "shard", src, dst, "--shard-size", "1X",
                        "--output-template", "x.tar"], env=env, capture_output=True)
    assert p.returncode == 2 and b"shard-size" in p.stderr
    p = subprocess.run([shoal, "job", "start", "shard", src, dst], env=env, capture_output=True)
    assert p.returncode == 2 and b"output-template" in p.stderr
    # abort: many small shards, stopped soon after the start
    jid = start_job(c, {"kind": "shard", "bucket": src, "to": dst, "shard_size": 1,
                        "output_template": "ab-{0000..9999}.tar"})
    r = c.http.delete("%s/v1/jobs/%s" % (c.url, jid))
    assert r.status_code == 204, r.text
    j = wait_job(c, jid)
    assert j["state"] in ("aborted", "finished"), j
    for n in listing(c, dst, "ab-"):   # whatever was written is a whole shard
        got = read_pipe_curl(c, dst, n)
        assert got and all(d == data[m] for m, d in got)
