"""A proxy stops sending clients to a target it cannot reach within 2 s
of the target's loss, long before the primary marks it down
(node_timeout_ms): a read goes to the next holder of a mirrored or
erasure-coded name, anything else gets 503 with Retry-After, never a
connection refused. A target that is only slow is not taken for lost."""
import os
import signal
import time
import urllib.parse

import requests

from conftest import Cluster
from test_mirror import owner_of, url
from test_rebalance import wait_rebalanced

NAMES = 60


BUCKETS = {"plain": {}, "mir": {"mirror": {"copies": 2}},
           "ec": {"ec": {"data": 1, "parity": 1, "objsize_limit": 65536}}}


def fill(c):
    """BUCKETS, NAMES objects each (a third of them sliced in "ec"): the
    bodies, and the owner of each name (the same in every bucket)."""
    wait_rebalanced(c)           # the start-up walk over: no write waits on it
    for b, props in BUCKETS.items():
        r = c.http.put(c.url + "/v1/buckets/" + b, json=props or None)
        assert r.status_code == 201, r.text
    data = {"o%02d" % i: os.urandom((100 << 10) + i if i % 3 == 0 else 1024 + 97 * i)
            for i in range(NAMES)}
    for b in BUCKETS:
        for k, v in data.items():
            r = c.http.put(url(c, b, k), v)
            assert r.status_code == 201, (b, k, r.status_code, r.text)
    return data, {k: owner_of(c, "plain", k) for k in data}


def get(c, bucket, name):
    """A native GET through the proxy, redirects followed: the answer, or
    "refused" when the client could not connect where it was sent."""
    try:
        return c.http.get(url(c, bucket, name), timeout=10)
    except requests.ConnectionError:
        return "refused"


def test_killed_target_is_avoided_within_two_seconds():
    """Three targets, node_timeout_ms 10 s: kill -9 of one. Within 2.5 s
    its plain names get 503 with Retry-After: 1 naming it, natively and
    through S3, and a PUT of one too; its mirrored and erasure-coded names
    read 200 from a copy or the slices; every other name reads 200 all
    along. The map still has the target up (only the primary decides
    that), and once it is back its names read again."""
    c = Cluster(targets=3, mountpaths=1, extra="--node_timeout_ms 10000").start()
    try:
        data, owner = fill(c)
        victim = owner["o00"]
        lost = [k for k in data if owner[k] == victim]
        kept = [k for k in data if owner[k] != victim]
        assert lost and kept
        os.kill(c.pid(victim), signal.SIGKILL)
        t0 = time.time()
        first_503 = None
        while time.time() - t0 < 2.5:
            r = get(c, "plain", kept[0])
            assert r != "refused" and r.status_code == 200, r
            r = get(c, "plain", lost[0])
            if r != "refused" and r.status_code == 503:
                first_503 = time.time() - t0
                break
            time.sleep(0.05)
        assert first_503 is not None, "still sent to the killed target after 2.5 s"
        for k in lost:
            r = get(c, "plain", k)
            assert r != "refused" and r.status_code == 503, (k, r)
            assert r.headers.get("Retry-After") == "1" and victim_id(c, victim) in r.text, r.text
            r = c.http.get(c.url + "/s3/plain/" + k, timeout=10)
            assert r.status_code == 503 and r.headers.get("Retry-After") == "1", r.text
            for b in ("mir", "ec"):
                r = get(c, b, k)
                assert r != "refused" and r.status_code == 200 and r.content == data[k], (b, k, r)
            r = c.http.get(c.url + "/s3/mir/" + k, timeout=10)
            assert r.status_code == 200 and r.content == data[k], (k, r.status_code)
        for k in kept:
            for b in BUCKETS:
                r = get(c, b, k)
                assert r != "refused" and r.status_code == 200 and r.content == data[k], (b, k)
        # writes of its names are not sent elsewhere behind the map's back
        r = c.http.put(url(c, "plain", lost[0]), b"x", timeout=10)
        assert r.status_code == 503 and r.headers.get("Retry-After") == "1", r.text
        vurl = c.node_url(victim)
        assert all(n["state"] != "down" for n in c.cmap()["nodes"] if n["url"] == vurl)
        # back: its names are sent to it again
        c.sh("start-node", victim)
        c.wait_healthy(victim)
        end = time.time() + 3
        while time.time() < end and get(c, "plain", lost[0]).status_code != 200:
            time.sleep(0.1)
        for k in lost:
            r = get(c, "plain", k)
            assert r.status_code == 200 and r.content == data[k], (k, r.status_code)
    finally:
        assert not c.cleanup()


def victim_id(c, name):
    """The id the map gives node name."""
    u = c.node_url(name)
    return next(n["id"] for n in c.cmap()["nodes"] if n["url"] == u)


def test_slow_target_is_not_avoided():
    """A target stopped (SIGSTOP) for 3 s still takes connections but
    answers nothing: slow, not lost. The proxy keeps sending its names to
    it (307 to it, never 503), and once it runs again they read 200."""
    c = Cluster(targets=3, mountpaths=1, extra="--node_timeout_ms 10000").start()
    try:
        data, owner = fill(c)
        slow = owner["o00"]
        port = urllib.parse.urlsplit(c.node_url(slow)).port
        os.kill(c.pid(slow), signal.SIGSTOP)
        try:
            t0 = time.time()
            while time.time() - t0 < 3:
                r = c.http.get(url(c, "plain", "o00"), allow_redirects=False, timeout=5)
                assert r.status_code == 307, (time.time() - t0, r.status_code, r.text)
                assert urllib.parse.urlsplit(r.headers["Location"]).port == port
                time.sleep(0.2)
        finally:
            os.kill(c.pid(slow), signal.SIGCONT)
        r = get(c, "plain", "o00")
        assert r != "refused" and r.status_code == 200 and r.content == data["o00"]
    finally:
        assert not c.cleanup()
