"""Membership changes without losing, hiding or resurrecting data:
rebalance when a target joins, versions and tombstones when a target
comes back with old copies, maintenance, decommission, and 503 (not 404)
for names whose only holder is down."""
import concurrent.futures
import hashlib
import os
import time
import urllib.parse

import pytest
import requests

from conftest import Cluster


def url(cl, bucket, name):
    return "%s/v1/objects/%s/%s" % (cl.url, bucket, urllib.parse.quote(name))


def put_all(cl, bucket, data, workers=8):
    def one(k):
        r = cl.http.put(url(cl, bucket, k), data[k])
        assert r.status_code == 201, r.text
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        list(ex.map(one, data))


def check_all(cl, bucket, data, workers=8):
    """Every name reads its bytes; returns the names that did not."""
    def one(k):
        r = cl.http.get(url(cl, bucket, k))
        ok = r.status_code == 200 and hashlib.sha256(r.content).digest() == \
            hashlib.sha256(data[k]).digest()
        return None if ok else (k, r.status_code)
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        return [x for x in ex.map(one, data) if x]


def listing(cl, bucket):
    names, token = [], ""
    while True:
        r = cl.http.get("%s/v1/buckets/%s/objects?limit=1000&token=%s" %
                        (cl.url, bucket, urllib.parse.quote(token)))
        assert r.status_code == 200, r.text
        page = r.json()
        names += [o["name"] for o in page["objects"]]
        token = page["next"]
        if not token:
            return names, page


def node_objects(cl, name):
    """Objects a target holds: its /metrics gauge, summed over mountpaths."""
    r = requests.get(cl.node_url(name) + "/v1/health", timeout=5)
    assert r.status_code == 200
    sp = requests.get(cl.url + "/v1/cluster/space", timeout=10).json()
    for t in sp["targets"]:
        if t["target"] == cl.ids[name]:
            return sum(m["objects"] for m in t["mountpaths"])
    raise AssertionError("no space report for %s" % name)


def target_ids(cl):
    """name (t0..) -> node id, by URL."""
    m = cl.cmap()
    by_url = {n["url"]: n["id"] for n in m["nodes"]}
    return {"t%d" % i: by_url.get(cl.node_url("t%d" % i)) for i in range(cl.targets + 1)}


def rebalance_jobs(cl):
    r = cl.http.get(cl.url + "/v1/jobs")
    assert r.status_code == 200, r.text
    return [j for j in r.json()["jobs"] if j["kind"] == "rebalance"]


def wait_rebalanced(cl, version=None, timeout=120):
    """Until every target up has ended its walk to map version (default:
    the current one): the job "ba1a" + version, on each of them."""
    version = version or cl.cmap()["version"]
    jid = "ba1a%028x" % version
    end = time.time() + timeout
    while time.time() < end:
        r = cl.http.get("%s/v1/jobs/%s" % (cl.url, jid))
        if r.status_code == 200:
            j = r.json()
            if j["state"] != "running" and all(a["status"] in (200, 404) for a in j["targets"]):
                return j
        time.sleep(0.3)
    raise AssertionError("the rebalance to map v%d never ended: %s" % (version, r.text))


@pytest.fixture
def cl():
    c = Cluster(targets=3, spare=1)
    c.start()
    c.http.put(c.url + "/v1/buckets/rb")
    c.ids = target_ids(c)
    yield c
    bad = c.cleanup()
    assert not bad, "sanitizer reports in %s" % bad
def test_join_moves_a_quarter_and_every_read_is_right(cl):
    """A fourth target joins a cluster of three holding 2,000 objects:
    about a quarter move to it, every object reads byte-identical during
    and after the rebalance, and listings show each name once."""
    data = {"j/%04d" % i: os.urandom(500 + i % 1500) for i in range(2000)}
    put_all(cl, "rb", data)
    v0 = cl.cmap()["version"]
    cl.sh("start-node", "t3")
    m = cl.wait_map(lambda m: sum(n["role"] == "target" and n["state"] == "active"
                                  for n in m["nodes"]) == 4)
    assert m["version"] > v0
    cl.ids = target_ids(cl)
    # reads while it moves
    assert check_all(cl, "rb", data) == []
    job = wait_rebalanced(cl, m["version"])
    assert job["kind"] == "rebalance" and job["errors"] == 0, job["error_names"]
    assert check_all(cl, "rb", data) == []
    names, page = listing(cl, "rb")
    assert sorted(names) == sorted(data) and "absent_targets" not in page
    on_new = node_objects(cl, "t3")
    assert 400 <= on_new <= 600, on_new
    assert 0 < job["moved"] <= on_new   # the rest came over by reads (get-from-neighbor)
    held = sum(node_objects(cl, "t%d" % i) for i in range(4))
    assert held == 2000          # moved, not copied
