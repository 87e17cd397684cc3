"""Space: every target's mountpaths measured (GET /v1/cluster/space, the
CLI, the gauges), the store's own count between two samples, and 507
naming the target and mountpath for a bucket with no backend once a
mountpath reaches space_oos, with nothing partial left behind."""
import os
import subprocess

import pytest

from conftest import BUILD, ROOT, Cluster, running_cluster, tmpfs_cluster

SHOAL = os.path.join(ROOT, BUILD, "bin", "shoal")


@pytest.fixture(scope="module")
def cl():
    yield from running_cluster(targets=2, mountpaths=2, extra="--space_sample_ms 600000")


def test_space_report(cl):
    r = cl.http.get(cl.url + "/v1/cluster/space")
    assert r.status_code == 200, r.text
    sp = r.json()
    assert len(sp["targets"]) == 2 and sp["unreached"] == 0
    assert 0 < sp["used"] < sp["total"]
    assert sp["used"] == sum(t["used"] for t in sp["targets"])
    for t in sp["targets"]:
        assert len(t["mountpaths"]) == 2
        assert (t["low_wm"], t["high_wm"], t["oos"]) == (75, 90, 95)
        for m in t["mountpaths"]:
            assert m["state"] in ("ok", "high", "oos") and 0 < m["used"] <= m["total"]
            assert abs(m["used_pct"] - 100.0 * m["used"] / m["total"]) < 0.01
    # the store counts what it commits between two samples (none for 10 minutes here)
    assert cl.http.put(cl.url + "/v1/buckets/sp").status_code == 201
    before = sp["used"]
    for i in range(4):
        r = cl.http.put(cl.url + "/v1/objects/sp/o%d" % i, os.urandom(3 << 20))
        assert r.status_code == 201
    after = cl.http.get(cl.url + "/v1/cluster/space").json()["used"]
    assert after - before >= 4 * (3 << 20), (before, after)
    assert cl.http.delete(cl.url + "/v1/objects/sp/o0").status_code == 204
    sp = cl.http.get(cl.url + "/v1/cluster/space").json()
    assert sp["used"] <= after - (3 << 20)
    mps = [m for t in sp["targets"] for m in t["mountpaths"]]
    assert sum(m["objects"] for m in mps) == 3       # a Shoal-only bucket's: kept
    assert sum(m["evictable_bytes"] + m["pinned_bytes"] + m["dirty_bytes"] for m in mps) == 0
    # the same through the CLI, and as gauges on every target
    out = subprocess.run([SHOAL, "cluster", "space"], env=dict(os.environ, SHOAL_ENDPOINT=cl.url),
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    for t in sp["targets"]:
        assert out.stdout.count(t["target"]) == 2
    assert "cluster: " in out.stdout
    metrics = cl.http.get(cl.node_url("t0") + "/metrics").text
    for g in ("shoal_space_used_bytes", "shoal_space_total_bytes", "shoal_space_objects",
              "shoal_space_evictable_bytes", "shoal_space_pinned_bytes",
              "shoal_space_dirty_bytes"):
        assert metrics.count(g + '{node="') == 2 and 'mountpath="%s/t0/mp1"' % cl.data in metrics


def test_bad_watermarks_refuse_to_start():
    c = Cluster(targets=1, extra="--space_low_wm 90 --space_high_wm 80")
    try:
        r = c.sh("start", check=False)
        assert r.returncode != 0
        assert "space_low_wm" in r.stderr + r.stdout + open(
            os.path.join(c.data, "logs", "p0.log")).read()
    finally:
        c.cleanup()


def test_oos_is_507_for_shoal_only_buckets():
    with tmpfs_cluster("64m", extra="--space_oos 60 --space_high_wm 55 --space_low_wm 50 "
                                    "--space_sample_ms 200") as c:
        mp = c.mountpath
        assert c.http.put(c.url + "/v1/buckets/full").status_code == 201
        tid = c.http.get(c.node_url("t0") + "/v1/cluster").json()["nodes"]
        data, refused = os.urandom(4 << 20), None
        for i in range(20):
            r = c.http.put(c.url + "/v1/objects/full/o%02d" % i, data)
            if r.status_code == 507:
                refused = (i, r.json()["error"])
                break
            assert r.status_code == 201, r.text
        assert refused, "never refused"
        i, msg = refused
        assert 4 <= i <= 9, refused     # about 60% of 64 MiB, metadata included
        assert mp in msg and "space_oos 60%" in msg and any(n["id"] in msg for n in tid)
        assert c.http.get(c.url + "/v1/objects/full/o%02d" % i).status_code == 404
        for k in range(i):
            assert c.http.get(c.url + "/v1/objects/full/o%02d" % k).content == data
        sp = c.http.get(c.url + "/v1/cluster/space").json()
        m = sp["targets"][0]["mountpaths"][0]
        # (the refusal saw the drive as the store counted it since the last
        # sample, a statvfs every 200 ms: allow one object of difference)
        assert 100.0 * (m["used"] + 2 * len(data)) / m["total"] >= 60, m
        # room again after deletes
        for k in range(3):
            assert c.http.delete(c.url + "/v1/objects/full/o%02d" % k).status_code == 204
        assert c.http.put(c.url + "/v1/objects/full/again", data).status_code == 201
