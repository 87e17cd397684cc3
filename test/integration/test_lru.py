"""Eviction: a target whose only mountpath is a 64 MiB tmpfs reads a
200 MiB data set of an s3rver bucket twice through the loader. The LRU job
keeps it under its high watermark with no errors, the least recently read
objects go first, and objects of a bucket with no backend (or with
"lru": false) never go."""
import json
import os
import subprocess
import time

import pytest
import requests

from conftest import running_s3rver, tmpfs_cluster
from test_loader import LOADER

N, SIZE = 200, 1 << 20


@pytest.fixture(scope="module")
def s3():
    yield from running_s3rver("lrusrc")


def loader(args, env=None, timeout=300):
    p = subprocess.run([LOADER, "--json", "--stats-interval", "0", *args], env=env,
                       capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, p.stdout + p.stderr
    return json.loads(p.stdout)


def space(c):
    return c.http.get(c.url + "/v1/cluster/space").json()["targets"][0]["mountpaths"][0]


def lru_jobs(c):
    return [j for j in c.http.get(c.url + "/v1/jobs?kind=lru").json()["jobs"]]


def settle(c):
    """Until no eviction job runs (bounded)."""
    for _ in range(100):
        if all(j["state"] != "running" for j in lru_jobs(c)):
            return
        time.sleep(0.1)
    raise AssertionError("an eviction job never ended")


@pytest.fixture(scope="module")
def dataset(s3):
    """N objects of SIZE under ds/ in s3rver's lrusrc."""
    env = dict(os.environ, **s3.env())
    loader(["--endpoint", s3.url, "--bucket", "lrusrc", "--mode", "s3", "--pct-put", "100",
            "--epochs", "1", "--num-objects", str(N), "--prefix", "ds/", "--min-size",
            str(SIZE), "--max-size", str(SIZE), "--workers", "8"], env=env)


def test_eviction_keeps_a_small_drive_under_its_high_watermark(s3, dataset):
    # each round frees a little (70% -> 62%), so the order is what decides
    extra = ("--space_high_wm 70 --space_low_wm 62 --space_oos 95 --space_sample_ms 100 "
             "--lru_dont_evict_s 0")
    with tmpfs_cluster("64m", env=s3.env(), extra=extra) as c:
        for b, props in (("lb", {"backend": "s3://lrusrc"}), ("kept", {}),
                         ("nolru", {"backend": "s3://lrusrc", "lru": False})):
            assert c.http.put(c.url + "/v1/buckets/" + b, json=props).status_code == 201
        own = {"own/%d" % i: os.urandom(SIZE) for i in range(4)}
        for k, v in own.items():
            assert c.http.put(c.url + "/v1/objects/kept/" + k, v).status_code == 201
        held = "ds/%08d" % 7
        assert c.http.get(c.url + "/v1/objects/nolru/" + held).status_code == 200
        # pinned by a prefetch job, across a restart of the target
        r = c.http.post(c.url + "/v1/jobs", json={"kind": "prefetch", "bucket": "lb", "pin": True,
                                                  "template": "ds/{00000190..00000197}"})
        assert r.status_code == 201, r.text
        pin_id = r.json()["id"]
        assert c.http.get("%s/v1/jobs/%s?wait=60" % (c.url, pin_id)).json()["fetched"] == 8
        c.sh("stop-node", "t0")
        c.sh("start-node", "t0")
        c.wait_healthy("t0")
        pinned = ["ds/%08d" % i for i in range(190, 198)]
        m = space(c)
        assert m["pinned_bytes"] == 8 * SIZE and m["objects"] >= 8 + 4 + 1, m
        for epoch in range(2):
            out = loader(["--endpoint", c.url, "--bucket", "lb", "--num-objects", str(N),
                          "--prefix", "ds/", "--epochs", "1", "--workers", "4"])
            g = out["ops"]["GET"]
            assert g["count"] == N and g["errors"] == {}, out
            settle(c)
            m = space(c)
            assert m["used_pct"] < 70 and m["evictable_bytes"] > 0, (epoch, m)
        jobs = lru_jobs(c)
        assert jobs and all(j["state"] in ("finished", "failed") for j in jobs), jobs
        one = c.http.get(c.url + "/v1/jobs/" + jobs[0]["id"]).json()
        assert one["kind"] == "lru"
        evicted = sum(c.http.get(c.url + "/v1/jobs/" + j["id"]).json()["evicted"] for j in jobs)
        assert evicted > 0 and len(jobs) <= 8, (evicted, len(jobs))   # the last 8 rounds kept
        # the least recently read go first: objects read just now stay
        time.sleep(1.1)
        hot = ["ds/%08d" % i for i in range(150, 153)]
        for k in hot:
            assert c.http.get(c.url + "/v1/objects/lb/" + k).status_code == 200
        time.sleep(1.1)
        # six cold reads push the drive over its high watermark once more; a
        # round frees from the oldest, far from these three (more reads would
        # let the drive's own metadata growth decide how deep it goes)
        for i in range(6):
            r = c.http.get(c.url + "/v1/objects/lb/ds/%08d" % i)
            assert r.status_code == 200 and len(r.content) == SIZE
        settle(c)
        for k in hot:
            r = c.http.get(c.url + "/v1/objects/lb/" + k)
            assert r.headers["X-Shoal-Cache"] == "hit", k
        # never evicted: Shoal's only copy, and a bucket that says so
        for k, v in own.items():
            assert c.http.get(c.url + "/v1/objects/kept/" + k).content == v
        r = c.http.get(c.url + "/v1/objects/nolru/" + held)
        assert r.headers["X-Shoal-Cache"] == "hit"
        for k in pinned:
            r = c.http.get(c.url + "/v1/objects/lb/" + k)
            assert r.headers["X-Shoal-Cache"] == "hit", k
        # unpinned: they may go like any other
        r = c.http.patch("%s/v1/jobs/%s" % (c.url, pin_id), json={"pin": False})
        assert r.status_code == 200 and r.json()["pinned"] is False, r.text
        assert c.http.patch("%s/v1/jobs/%s" % (c.url, pin_id), json={"pin": False}).status_code == 404
        assert c.http.patch("%s/v1/jobs/%s" % (c.url, pin_id), json={"pin": 1}).status_code == 400
        time.sleep(1.1)
        loader(["--endpoint", c.url, "--bucket", "lb", "--num-objects", "150", "--prefix", "ds/",
                "--epochs", "1", "--workers", "4"])
        settle(c)
        heads = [c.http.head(c.url + "/v1/objects/lb/" + k, allow_redirects=True)
                 for k in pinned]
        misses = sum(h.headers.get("X-Shoal-Cached") == "false" for h in heads)
        assert misses == len(pinned), misses
        assert c.http.patch(c.url + "/v1/buckets/lb", json={"lru": "no"}).status_code == 400
        r = c.http.post(c.url + "/v1/jobs", json={"kind": "evict", "bucket": "lb", "pin": True,
                                                  "names": ["x"]})
        assert r.status_code == 400


def test_out_of_space_cold_gets_pass_through(s3, dataset):
    """Nothing can be evicted (everything was read lately) and the drive is
    at space_oos: cold GETs still answer, from the backend, keeping nothing;
    a Shoal-only PUT gets 507."""
    extra = ("--space_high_wm 55 --space_low_wm 50 --space_oos 60 --space_sample_ms 100 "
             "--lru_dont_evict_s 3600")
    with tmpfs_cluster("64m", env=s3.env(), extra=extra) as c:
        assert c.http.put(c.url + "/v1/buckets/lb", json={"backend": "s3://lrusrc"}).status_code == 201
        assert c.http.put(c.url + "/v1/buckets/own").status_code == 201
        caches = []
        for i in range(60):
            r = c.http.get(c.url + "/v1/objects/lb/ds/%08d" % i)
            assert r.status_code == 200 and len(r.content) == SIZE, (i, r.status_code)
            caches.append(r.headers["X-Shoal-Cache"])
        assert caches[0] == "miss" and caches[-1] == "pass", caches
        first_pass = caches.index("pass")
        k = "ds/%08d" % first_pass
        r = c.http.get(c.url + "/v1/objects/lb/" + k)
        assert r.headers["X-Shoal-Cache"] == "pass"      # still not kept
        r = c.http.get(c.url + "/v1/objects/lb/" + k, headers={"Range": "bytes=10-19"})
        assert r.status_code == 206 and len(r.content) == 10
        assert s3.client().get_object(Bucket="lrusrc", Key=k, Range="bytes=10-19")["Body"].read() \
            == r.content
        r = c.http.get(c.url + "/v1/objects/lb/" + k, headers={"Range": "bytes=%d-" % (2 * SIZE)})
        assert r.status_code == 416, r.text
        m = space(c)
        assert m["used_pct"] < 62, m     # about space_oos, no more
        metrics = c.http.get(c.node_url("t0") + "/metrics").text
        line = [x for x in metrics.splitlines() if x.startswith("shoal_cold_passthrough_total")]
        assert line and float(line[0].split()[-1]) >= 60 - first_pass, line
        r = c.http.put(c.url + "/v1/objects/own/x", os.urandom(1 << 20))
        assert r.status_code == 507, r.text


def cold_gets(c, s3, names, workers=12):
    """GET each name through c with workers at once; every answer must be
    200 with the backend's bytes, whole (never a body cut short)."""
    import concurrent.futures
    import hashlib
    want = {}
    for n in names:
        want[n] = hashlib.sha256(
            s3.client().get_object(Bucket="lrusrc", Key=n)["Body"].read()).hexdigest()

    def one(n):
        s = requests.Session()
        r = s.get(c.url + "/v1/objects/lb/" + n, timeout=60)
        return n, r.status_code, len(r.content), hashlib.sha256(r.content).hexdigest(), \
            r.headers.get("X-Shoal-Cache")
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        got = list(ex.map(one, names))
    bad = [(n, st, ln) for n, st, ln, h, _ in got if st != 200 or ln != SIZE or h != want[n]]
    assert not bad, bad
    return [g[4] for g in got]


def work_files(c):
    return os.listdir(os.path.join(c.mountpath, "work"))


def target_log(c):
    logs = os.path.join(c.data, "logs")
    return "".join(open(os.path.join(logs, f), errors="replace").read()
                   for f in os.listdir(logs) if f.startswith("t"))


def test_a_full_drive_never_cuts_a_cold_get(s3, dataset):
    """12 cold GETs at once of 1 MiB objects onto a 64 MiB drive that
    eviction may not empty: each admission reserves its object's size, and
    one that would pass space_oos keeps no copy; every client gets every
    byte, whether the copy was kept or not."""
    extra = "--space_oos 95 --space_high_wm 90 --space_low_wm 85 --lru_dont_evict_s 3600"
    with tmpfs_cluster("64m", env=s3.env(), extra=extra) as c:
        assert c.http.put(c.url + "/v1/buckets/lb",
                          json={"backend": "s3://lrusrc"}).status_code == 201
        caches = cold_gets(c, s3, ["ds/%08d" % i for i in range(120)])
        assert caches.count("miss") >= 30, caches    # kept while there was room
        st = os.statvfs(c.mountpath)
        assert st.f_bfree > 0                    # never filled to the last block
        assert not work_files(c)                 # nothing partial left behind
        # what was kept reads back whole from the drive
        cold_gets(c, s3, ["ds/%08d" % i for i in range(12)])


def test_a_drive_filled_by_something_else_never_cuts_a_cold_get(s3, dataset):
    """The drive fills behind the target's back (its sampler sees nothing
    for a minute): writes fail with ENOSPC in the middle of cold GETs,
    whose clients still get every byte from the backend; no partial object
    is kept or shown."""
    extra = "--space_sample_ms 600000 --lru_dont_evict_s 3600"
    with tmpfs_cluster("64m", env=s3.env(), extra=extra) as c:
        assert c.http.put(c.url + "/v1/buckets/lb",
                          json={"backend": "s3://lrusrc"}).status_code == 201
        filler = os.path.join(c.mountpath, "filler")
        with open(filler, "wb") as f:          # all but ~300 KiB
            free = os.statvfs(c.mountpath).f_bavail * os.statvfs(c.mountpath).f_frsize
            left = free - 300 * 1024
            while left > 0:
                f.write(b"\0" * min(left, 1 << 20))
                left -= 1 << 20
        names = ["ds/%08d" % i for i in range(130, 154)]
        cold_gets(c, s3, names)
        assert not work_files(c)
        assert "not cached, the bytes go to the client only" in target_log(c)
        os.unlink(filler)
        # once there is room, they are cached as usual
        cold_gets(c, s3, names[:4])
        for n in names[:4]:
            r = c.http.get(c.url + "/v1/objects/lb/" + n)
            assert r.headers["X-Shoal-Cache"] == "hit", r.headers


def test_a_full_drive_never_crashes_a_target(s3, dataset):
    """The drive filled to its last byte behind the target's back, with
    cold misses, Shoal-only PUTs and the access-time flush all wanting to
    write: the target stays up, serves what it holds, answers writes 507,
    and takes writes again by itself once space is freed."""
    extra = "--space_sample_ms 200 --atime_flush_s 1 --lru_dont_evict_s 3600"
    with tmpfs_cluster("64m", env=s3.env(), extra=extra) as c:
        assert c.http.put(c.url + "/v1/buckets/lb",
                          json={"backend": "s3://lrusrc"}).status_code == 201
        assert c.http.put(c.url + "/v1/buckets/own").status_code == 201
        held = ["ds/%08d" % i for i in range(170, 174)]
        cold_gets(c, s3, held)
        assert c.http.put(c.url + "/v1/objects/own/a", data=b"a" * 1000).status_code == 201
        pid = c.pid("t0")
        filler = os.path.join(c.mountpath, "filler")
        with open(filler, "wb") as f:
            try:
                while True:
                    f.write(b"\0" * (1 << 20))
                    f.flush()
            except OSError:
                pass
        for round_ in range(3):
            cold_gets(c, s3, ["ds/%08d" % i for i in range(180 + 4 * round_, 184 + 4 * round_)])
            r = c.http.put(c.url + "/v1/objects/own/b%d" % round_, data=os.urandom(50000))
            assert r.status_code == 507, r.text
            for n in held:
                r = c.http.get(c.url + "/v1/objects/lb/" + n)
                assert r.status_code == 200 and len(r.content) == SIZE
            assert c.http.get(c.url + "/v1/objects/own/a").content == b"a" * 1000
            time.sleep(1.2)               # an access-time flush on a full drive
        os.kill(pid, 0)                   # still up
        os.unlink(filler)
        deadline = time.time() + 20
        while True:
            r = c.http.put(c.url + "/v1/objects/own/after", data=b"x" * 5000)
            if r.status_code == 201 or time.time() > deadline:
                break
            time.sleep(0.5)
        assert r.status_code == 201, r.text
        assert c.http.get(c.url + "/v1/objects/own/after").content == b"x" * 5000
        assert c.pid("t0") == pid
