"""Membership changes without losing, hiding or resurrecting data:
rebalance when a target joins, versions and tombstones when a target
comes back with old copies, maintenance, decommission, and 503 (not 404)
for names whose only holder is down."""
import concurrent.futures
import hashlib
import hmac
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
    (the first 1,500: reads bring what they ask for over themselves, so
    the last 500 are left for the rebalance to move) and after the
    rebalance, and listings show each name once."""
    data = {"j/%04d" % i: os.urandom(500 + i % 1500) for i in range(2000)}
    put_all(cl, "rb", data)
    v0 = cl.cmap()["version"]
    cl.sh("start-node", "t3")
    m = cl.wait_map(lambda m: sum(n["role"] == "target" and n["state"] == "active"
                                  for n in m["nodes"]) == 4)
    assert m["version"] > v0
    cl.ids = target_ids(cl)
    # reads while it moves
    assert check_all(cl, "rb", dict(list(data.items())[:1500])) == []
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


def cluster_signed(cl, method, base, path_query):
    """base + path_query signed with the cluster secret, as a node signs."""
    secret = open(os.path.join(cl.data, "cluster.secret")).read().strip()
    target = "%s&shoal_exp=%d" % (path_query, int(time.time()) + 60)
    sig = hmac.new(secret.encode(), (method + "\n" + target).encode(), hashlib.sha256)
    return "%s%s&shoal_sig=%s" % (base, target, sig.hexdigest())


def test_a_target_behind_on_buckets_asks_senders_again(cl):
    """A target that has just joined may get a rebalance send before the
    bucket metadata that names its bucket: it answers 503 (the sender asks
    again), and 404 only when the sender's metadata is no newer."""
    t = cl.node_url("t0")
    for newer, want in ((10 ** 6, 503), (0, 404)):
        u = cluster_signed(cl, "PUT", t, "/v1/internal/xfer/nob/x?provider=shoal&bmd=%d"
                           "&meta=1&version=1" % newer)
        r = requests.put(u, data=b"x")
        assert r.status_code == want, (newer, r.status_code, r.text)
        if want == 503:
            assert r.headers.get("Retry-After") == "1" and "not here yet" in r.text
    # the route's own bucket is known: its metadata version does not matter
    u = cluster_signed(cl, "GET", t, "/v1/internal/xfer/rb/x?provider=shoal&bmd=%d&held=1"
                       % 10 ** 6)
    r = requests.get(u)
    assert r.status_code == 200 and r.json() == {"held": False}, r.text


def owner_of(cl, bucket, name):
    r = cl.http.get(url(cl, bucket, name), allow_redirects=False)
    assert r.status_code == 307, r.text
    loc = r.headers["Location"]
    return [n for n in cl.ids if cl.node_url(n) == loc[:len(cl.node_url(n))]][0]


def test_a_target_back_with_old_copies_never_wins(cl):
    """kill -9 a target, wait until it is down, overwrite 20 of its names
    and delete 20 more, start it again: overwritten names read the new
    bytes, deleted ones stay deleted, listings have no duplicates, and
    the rebalance ends. While it is down its names answer 503, not 404,
    and listings say they are incomplete."""
    data = {"k/%03d" % i: os.urandom(700 + i) for i in range(300)}
    put_all(cl, "rb", data)
    mine = [k for k in sorted(data) if owner_of(cl, "rb", k) == "t1"]
    assert len(mine) >= 60, len(mine)
    cl.sh("kill-node", "t1")
    cl.wait_map(lambda m: any(n["id"] == cl.ids["t1"] and n["state"] == "down"
                              for n in m["nodes"]))
    # down: unavailable, not gone
    r = cl.http.get(url(cl, "rb", mine[0]))
    assert r.status_code == 503 and "Retry-After" in r.headers, (r.status_code, r.text)
    names, page = listing(cl, "rb")
    assert page["complete"] is False and page["absent_targets"] == [cl.ids["t1"]]
    assert sorted(names) == sorted(k for k in data if k not in mine)
    # the S3 API says so the S3 way: no partial listing, no NoSuchKey
    r = cl.http.get(cl.url + "/s3/rb?list-type=2")
    assert r.status_code == 503 and b"<Code>ServiceUnavailable</Code>" in r.content, r.text
    r = cl.http.get(cl.url + "/s3/rb/" + mine[1])
    assert r.status_code == 503 and b"<Code>ServiceUnavailable</Code>" in r.content, r.text
    # changed while it is away
    new = {}
    for k in mine[:20]:
        new[k] = os.urandom(333)
        r = cl.http.put(url(cl, "rb", k), new[k])
        assert r.status_code == 201, r.text
    for k in mine[20:40]:
        r = cl.http.delete(url(cl, "rb", k))
        assert r.status_code == 204, (k, r.status_code, r.text)
    cl.sh("start-node", "t1")
    cl.wait_map(lambda m: any(n["id"] == cl.ids["t1"] and n["state"] == "active"
                              for n in m["nodes"]))
    want = dict(data)
    want.update(new)
    for k in mine[20:40]:
        del want[k]
    # at once, while the rebalance runs: the newest wins
    assert check_all(cl, "rb", want) == []
    for k in mine[20:40]:
        assert cl.http.get(url(cl, "rb", k)).status_code == 404, k
    job = wait_rebalanced(cl)
    assert job["errors"] == 0, job["error_names"]
    assert check_all(cl, "rb", want) == []
    for k in mine[20:40]:
        assert cl.http.get(url(cl, "rb", k)).status_code == 404, k
    names, page = listing(cl, "rb")
    assert sorted(names) == sorted(want) and "absent_targets" not in page
    held = sum(node_objects(cl, n) for n in ("t0", "t1", "t2"))
    assert held == len(want)     # no stale copy left anywhere


def test_maintenance_keeps_reads_and_decommission_loses_nothing(cl):
    """Maintenance: the target owns nothing, its objects move away, and
    every read goes on working; back to active, names return. Decommission:
    its objects move away, then it leaves the map and shuts down, with
    nothing lost."""
    data = {"m/%03d" % i: os.urandom(1000 + i) for i in range(400)}
    put_all(cl, "rb", data)
    t2 = cl.ids["t2"]
    r = cl.http.put(cl.url + "/v1/cluster/nodes/%s?maintenance" % t2)
    assert r.status_code == 202 and r.json()["state"] == "maintenance", r.text
    v = r.json()["cmap_version"]
    assert [n["state"] for n in cl.cmap()["nodes"] if n["id"] == t2] == ["maintenance"]
    assert check_all(cl, "rb", data) == []        # while it moves
    job = wait_rebalanced(cl, v)
    assert job["errors"] == 0 and job["moved"] > 0, job
    assert node_objects(cl, "t2") == 0
    assert check_all(cl, "rb", data) == []
    # the map still lists it; a PUT never goes to it
    assert owner_of(cl, "rb", "m/new") != "t2"
    r = cl.http.put(cl.url + "/v1/cluster/nodes/%s?maintenance=off" % t2)
    assert r.status_code == 202 and r.json()["state"] == "active"
    wait_rebalanced(cl, r.json()["cmap_version"])
    assert node_objects(cl, "t2") > 50
    # bad requests
    assert cl.http.put(cl.url + "/v1/cluster/nodes/nobody?maintenance").status_code == 404
    assert cl.http.put(cl.url + "/v1/cluster/nodes/%s?maintenance=maybe" % t2).status_code == 400
    p0 = [n["id"] for n in cl.cmap()["nodes"] if n["role"] == "proxy"][0]
    assert cl.http.delete(cl.url + "/v1/cluster/nodes/" + p0).status_code == 409
    # decommission t0
    t0 = cl.ids["t0"]
    pid = cl.pid("t0")
    r = cl.http.delete(cl.url + "/v1/cluster/nodes/" + t0)
    assert r.status_code == 202 and r.json()["state"] == "decommissioning", r.text
    cl.wait_map(lambda m: all(n["id"] != t0 for n in m["nodes"]), timeout=60)
    end = time.time() + 20
    while time.time() < end and os.path.exists("/proc/%d" % pid):
        time.sleep(0.2)
    assert not os.path.exists("/proc/%d/cmdline" % pid) or \
        open("/proc/%d/cmdline" % pid, "rb").read() == b"", "t0 still runs"
    assert check_all(cl, "rb", data) == []
    names, _ = listing(cl, "rb")
    assert sorted(names) == sorted(data)


def test_a_stopping_target_finishes_what_it_serves_and_answers_503(cl):
    """SIGTERM: a GET under way is answered whole; a request that starts
    meanwhile gets 503 with Retry-After, not a refused connection."""
    import signal
    big = os.urandom(48 << 20)
    assert cl.http.put(url(cl, "rb", "big"), big).status_code == 201
    where = cl.http.get(url(cl, "rb", "big"), allow_redirects=False).headers["Location"]
    name = [n for n in ("t0", "t1", "t2") if where.startswith(cl.node_url(n))][0]
    slow = requests.get(where, stream=True, timeout=30)
    assert slow.status_code == 200
    first = slow.raw.read(1 << 20)
    os.kill(cl.pid(name), signal.SIGTERM)
    time.sleep(0.3)
    r = requests.get(where, timeout=10)
    assert r.status_code == 503 and r.headers.get("Retry-After"), (r.status_code, r.text)
    rest = slow.raw.read()
    assert hashlib.sha256(first + rest).digest() == hashlib.sha256(big).digest()


def test_a_new_map_mid_rebalance_restarts_it(cl):
    """A fourth target joins and, before the walk can end, another goes
    into maintenance: the first walk is aborted, the second runs to its
    end, and everything is where the last map puts it."""
    data = {"r/%04d" % i: os.urandom(20000) for i in range(800)}
    put_all(cl, "rb", data)
    cl.sh("start-node", "t3")
    m = cl.wait_map(lambda m: sum(n["role"] == "target" and n["state"] == "active"
                                  for n in m["nodes"]) == 4)
    first = m["version"]
    cl.ids = target_ids(cl)
    r = cl.http.put(cl.url + "/v1/cluster/nodes/%s?maintenance" % cl.ids["t0"])
    assert r.status_code == 202
    last = r.json()["cmap_version"]
    job = wait_rebalanced(cl, last)
    assert job["errors"] == 0, job["error_names"]
    older = cl.http.get("%s/v1/jobs/ba1a%028x" % (cl.url, first))
    assert older.status_code == 404 or older.json()["state"] != "running", older.text
    assert node_objects(cl, "t0") == 0
    assert check_all(cl, "rb", data) == []
    assert sum(node_objects(cl, n) for n in ("t0", "t1", "t2", "t3")) == len(data)
    running = [j for j in rebalance_jobs(cl) if j["state"] == "running"]
    assert running == [], running


def test_rebalance_off_still_reads_everything():
    """rebalance: false: a target that joins owns names it does not hold,
    and reads still find them (get-from-neighbour)."""
    c = Cluster(targets=3, spare=1, extra="--rebalance false")
    c.start()
    try:
        assert c.http.put(c.url + "/v1/buckets/rb").status_code == 201
        data = {"f/%03d" % i: os.urandom(300) for i in range(300)}
        put_all(c, "rb", data)
        c.sh("start-node", "t3")
        c.wait_map(lambda m: sum(n["role"] == "target" and n["state"] == "active"
                                 for n in m["nodes"]) == 4)
        time.sleep(2)
        assert rebalance_jobs(c) == []
        assert check_all(c, "rb", data) == []
        names, _ = listing(c, "rb")
        assert sorted(names) == sorted(data)
    finally:
        assert not c.cleanup()
