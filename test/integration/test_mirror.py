"""Mirrored buckets: copies on distinct targets, reads through target
losses, the copies re-protected after one, damaged copies repaired."""
import concurrent.futures
import os
import signal
import time
import urllib.parse

import requests

from conftest import Cluster
from test_rebalance import wait_rebalanced


def url(c, bucket, name, api="v1/objects"):
    return "%s/%s/%s/%s" % (c.url, api, bucket, urllib.parse.quote(name))


def data_files(c, names=None):
    """Every object data file under the targets' mountpaths: path -> target."""
    out = {}
    for t in names or c.target_names():
        root = os.path.join(c.data, t)
        for d, _, fs in os.walk(root):
            if os.sep + "data" in d:
                out.update({os.path.join(d, f): t for f in fs})
    return out


def put_all(c, bucket, data):
    def one(k):
        r = c.http.put(url(c, bucket, k), data[k])
        assert r.status_code == 201, r.text
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        list(ex.map(one, data))


def bad_reads(c, bucket, data, api="v1/objects"):
    """The names that did not read back byte-identical."""
    def one(k):
        r = c.http.get(url(c, bucket, k, api), timeout=60)
        return None if r.status_code == 200 and r.content == data[k] else \
            (k, r.status_code, r.text[:200] if r.status_code != 200 else "wrong bytes")
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        return [x for x in ex.map(one, data) if x]


def owner_of(c, bucket, name):
    """The target (t0..) a GET of name is sent to."""
    r = c.http.get(url(c, bucket, name), allow_redirects=False)
    assert r.status_code == 307, r.text
    port = urllib.parse.urlsplit(r.headers["Location"]).port
    return next(t for t in c.target_names() if c.node_url(t).endswith(":%d" % port))


def kill_and_wait_down(c, name):
    os.kill(c.pid(name), signal.SIGKILL)
    port = c.node_url(name)
    c.wait_map(lambda m: any(n["url"] == port and n["state"] == "down" for n in m["nodes"]))


def test_mirror_property_is_checked():
    c = Cluster(targets=1, mountpaths=1).start()
    try:
        for bad in ({"copies": 0}, {"copies": 5}, {"copies": "2"}, {"copies": 2, "x": 1}, {}, 2):
            r = c.http.put(c.url + "/v1/buckets/m", json={"mirror": bad})
            assert r.status_code == 400 and "mirror" in r.text, (bad, r.text)
        assert c.http.put(c.url + "/v1/buckets/m",
                          json={"mirror": {"copies": 2}}).status_code == 201
        r = c.http.patch(c.url + "/v1/buckets/m", json={"mirror": {"copies": 9}})
        assert r.status_code == 400
        # one target: one copy, acknowledged all the same
        assert c.http.put(url(c, "m", "x"), b"one").status_code == 201
        assert c.http.get(url(c, "m", "x")).content == b"one"
    finally:
        assert not c.cleanup()


def test_two_copies_survive_two_target_losses():
    """Four targets, copies 2: every object is on two of them; kill -9 one
    and every object reads byte-identical (native and S3); after the
    rebalance every object is on two survivors again, so a second kill -9
    still loses nothing. A deleted name never comes back from a copy."""
    c = Cluster(targets=4, mountpaths=1, extra="--inline_max 0").start()
    try:
        r = c.http.put(c.url + "/v1/buckets/mir", json={"mirror": {"copies": 2}})
        assert r.status_code == 201, r.text
        sizes = [1024 << (i % 12) for i in range(118)] + [8 << 20, (8 << 20) - 7]
        data = {"o/%03d" % i: os.urandom(n) for i, n in enumerate(sizes)}
        put_all(c, "mir", data)
        assert c.http.put(url(c, "mir", "del/x"), b"deleted").status_code == 201
        files = data_files(c)
        assert len(files) == 2 * (len(data) + 1), len(files)
        # the deleted name: its tombstone goes to the copy, so when its
        # owner is lost the copy holder answers 404, not the old bytes
        first = owner_of(c, "mir", "del/x")
        assert c.http.delete(url(c, "mir", "del/x")).status_code == 204
        assert len(data_files(c)) == 2 * len(data)
        kill_and_wait_down(c, first)
        assert c.http.get(url(c, "mir", "del/x")).status_code == 404
        assert bad_reads(c, "mir", data) == []
        assert bad_reads(c, "mir", {k: data[k] for k in list(data)[:30]}, api="s3") == []
        survivors = [t for t in c.target_names() if t != first]
        wait_rebalanced(c)
        wait_rebalanced(c)       # (a walk a failed send asked for ends too)
        held = data_files(c, survivors)
        assert len(held) == 2 * len(data), len(held)
        second = owner_of(c, "mir", "o/000")
        kill_and_wait_down(c, second)
        assert bad_reads(c, "mir", data) == []
        lst = c.http.get(c.url + "/v1/buckets/mir/objects").json()
        assert sorted(o["name"] for o in lst["objects"]) == sorted(data)
    finally:
        assert not c.cleanup()


def damage(path, how):
    if how == "delete":
        os.unlink(path)
    elif how == "truncate":
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) // 2)
    else:
        size = os.path.getsize(path)
        with open(path, "r+b") as f:
            f.seek(size // 3)
            chunk = f.read(16)
            f.seek(size // 3)
            f.write(bytes(16) if how == "zero" else bytes(x ^ 0xff for x in chunk))


def test_damaged_copies_are_repaired_on_read():
    """verify_reads and copies 2: ten owner copies damaged four ways (bytes
    flipped, zero-filled, truncated, deleted): every GET returns the right
    bytes and the damaged file is replaced by a good one; without a second
    copy the same damage is 500 ObjectCorrupted, never wrong bytes."""
    c = Cluster(targets=3, mountpaths=1).start()
    try:
        r = c.http.put(c.url + "/v1/buckets/rep",
                       json={"mirror": {"copies": 2}, "verify_reads": True})
        assert r.status_code == 201, r.text
        r = c.http.put(c.url + "/v1/buckets/one", json={"verify_reads": True})
        assert r.status_code == 201, r.text
        # the start-up rebalance over and its window closed on every target:
        # a read in the window takes a neighbour's copy first, a repair this
        # test does not count
        v = wait_rebalanced(c) and c.cmap()["version"]
        over = "rebalance to map v%d is over on every target" % v
        end = time.time() + 30
        while time.time() < end and not all(
                over in c.log_text([t]) for t in c.target_names()):
            time.sleep(0.2)
        data = {"r/%02d" % i: os.urandom(20000 + i * 7919) for i in range(20)}
        where = {}
        for k, v in data.items():
            before = data_files(c)
            assert c.http.put(url(c, "rep", k), v).status_code == 201
            new = set(data_files(c)) - set(before)
            assert len(new) == 2, new
            owner = owner_of(c, "rep", k)
            mine = [p for p in new if data_files(c)[p] == owner]
            assert len(mine) == 1
            where[k] = mine[0]
        hows = ["flip", "zero", "truncate", "delete"]
        broken = {k: hows[i % 4] for i, k in enumerate(list(data)[:10])}
        for k, how in broken.items():
            damage(where[k], how)
        assert bad_reads(c, "rep", data) == []
        # replaced: the owner holds a whole, good file again
        assert len(data_files(c)) == 2 * len(data)
        for k in broken:
            r = c.http.get(url(c, "rep", k))
            assert r.status_code == 200 and r.content == data[k]
        logs = c.log_text()
        assert logs.count("was replaced from a copy holder") >= 10, logs[-2000:]
        # one copy only: nothing to repair from
        before = data_files(c)
        assert c.http.put(url(c, "one", "solo"), b"s" * 50000).status_code == 201
        (path,) = set(data_files(c)) - set(before)
        damage(path, "flip")
        r = c.http.get(url(c, "one", "solo"))
        assert r.status_code == 500 and "ObjectCorrupted" in r.text, r.text
    finally:
        assert not c.cleanup()


def run_job(c, spec):
    r = c.http.post(c.url + "/v1/jobs", json=spec)
    assert r.status_code == 201, r.text
    r = c.http.get("%s/v1/jobs/%s?wait=120" % (c.url, r.json()["id"]), timeout=150)
    assert r.status_code == 200, r.text
    print(r.text)                # shown when the test fails
    return r.json()


def test_scrub_finds_and_fixes_damaged_copies():
    """With no read first: ten copies damaged four ways, on owners and
    copy holders alike; a scrub of everything finds all ten and fixes them
    from the other copies; a second finds nothing. In a bucket with one
    copy the damaged object is reported lost, named, and gone from the
    listing (no ghost). Bad scrub specs are 400."""
    c = Cluster(targets=3, mountpaths=1).start()
    try:
        assert c.http.put(c.url + "/v1/buckets/sm",
                          json={"mirror": {"copies": 2}}).status_code == 201
        assert c.http.put(c.url + "/v1/buckets/s1").status_code == 201
        data = {"s/%02d" % i: os.urandom(30000 + i * 4099) for i in range(24)}
        put_all(c, "sm", data)
        # the walks of the start-up's maps over first: a walk that meets a
        # damaged copy (short: marked as it would be sent) repairs it too
        wait_rebalanced(c)
        files = sorted(data_files(c))
        assert len(files) == 48
        # one copy each of ten objects (a data file is named by the hash of
        # its object's name), on whichever target holds it
        picked = {}
        for path in files:
            picked.setdefault(os.path.basename(path).split(".")[0], path)
        hows = ["flip", "zero", "truncate", "delete"]
        for i, path in enumerate(sorted(picked.values())[:10]):
            damage(path, hows[i % 4])
        where = {}
        for n, b in (("gone", b"g"), ("flipped", b"f"), ("fine", b"y")):
            before = data_files(c)
            assert c.http.put(url(c, "s1", n), b * 40000).status_code == 201
            (where[n],) = [p for p in data_files(c) if p not in before]
        damage(where["gone"], "delete")
        damage(where["flipped"], "flip")
        j = run_job(c, {"kind": "scrub"})
        assert j["state"] == "failed", j          # the lost ones are errors
        # (a damaged copy may be replaced by a holder's before its own
        # target's scrub reads it: then it is not found there)
        assert j["found"] in (11, 12) and j["fixed"] == j["found"] - 2 and j["lost"] == 2, j
        assert j["done"] == 48 + 3, j
        assert sorted(e["name"] for e in j["error_names"]) == \
            ["shoal/s1/flipped", "shoal/s1/gone"], j
        assert len(data_files(c)) == 48 + 2
        assert bad_reads(c, "sm", data) == []
        again = run_job(c, {"kind": "scrub", "bucket": "sm"})
        assert again["state"] == "finished" and again["found"] == 0 and again["done"] == 48
        # the one whose data is gone leaves the listing; the one whose bytes
        # are wrong stays, for an operator, and is never served
        names = [o["name"] for o in c.http.get(c.url + "/v1/buckets/s1/objects").json()["objects"]]
        assert names == ["fine", "flipped"]
        assert c.http.get(url(c, "s1", "gone")).status_code == 404
        r = c.http.get(url(c, "s1", "flipped"))
        assert r.status_code == 500 and "ObjectCorrupted" in r.text, r.text
        pre = run_job(c, {"kind": "scrub", "bucket": "sm", "prefix": "s/0"})
        assert pre["done"] == 2 * 10 and pre["found"] == 0, pre
        for spec in ({"kind": "scrub", "names": ["a"], "bucket": "sm"},
                     {"kind": "scrub", "prefix": "s/"},
                     {"kind": "scrub", "template": "x{0..3}", "bucket": "sm"}):
            r = c.http.post(c.url + "/v1/jobs", json=spec)
            assert r.status_code == 400, (spec, r.text)
        r = c.http.post(c.url + "/v1/jobs", json={"kind": "scrub", "bucket": "nope"})
        assert r.status_code == 404
    finally:
        assert not c.cleanup()


def test_scrub_reads_at_its_rate():
    """scrub_mbps bounds how fast a scrub reads: 4 MiB at 1 MiB/s take at
    least three seconds (the first object starts at once)."""
    c = Cluster(targets=1, mountpaths=1, extra="--scrub_mbps 1").start()
    try:
        assert c.http.put(c.url + "/v1/buckets/rate").status_code == 201
        for i in range(4):
            assert c.http.put(url(c, "rate", "m%d" % i), os.urandom(1 << 20)).status_code == 201
        j = run_job(c, {"kind": "scrub", "bucket": "rate"})
        assert j["state"] == "finished" and j["done"] == 4 and j["bytes"] == 4 << 20, j
        assert j["end_ns"] - j["start_ns"] >= 2.9e9, j
    finally:
        assert not c.cleanup()



def test_downloads_and_tag_changes_reach_the_copies():
    """A download job into a mirrored bucket makes both copies; a tag change
    (a new version) reaches the copy holder, so the tags survive the loss
    of the owner."""
    import http.server
    import threading
    body = os.urandom(123457)

    class Origin(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Origin)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    c = Cluster(targets=3, mountpaths=1).start()
    try:
        assert c.http.put(c.url + "/v1/buckets/md",
                          json={"mirror": {"copies": 2}}).status_code == 201
        j = run_job(c, {"kind": "download", "bucket": "md",
                        "urls": ["http://127.0.0.1:%d/d/one" % srv.server_address[1]]})
        assert j["state"] == "finished" and j["downloaded"] == 1, j
        assert len(data_files(c)) == 2
        tags = "<Tagging><TagSet><Tag><Key>k</Key><Value>v</Value></Tag></TagSet></Tagging>"
        r = c.http.put(c.url + "/s3/md/d/one?tagging", data=tags)
        assert r.status_code == 200, r.text
        kill_and_wait_down(c, owner_of(c, "md", "d/one"))
        r = c.http.get(url(c, "md", "d/one"))
        assert r.status_code == 200 and r.content == body
        r = c.http.get(c.url + "/s3/md/d/one?tagging")
        assert r.status_code == 200 and "<Value>v</Value>" in r.text, r.text
    finally:
        srv.shutdown()
        assert not c.cleanup()


def test_one_target_keeps_its_copies_on_other_drives():
    """One target with three drives: copies 2 and 3 put each object's
    copies on distinct drives; a damaged copy is restored from another
    drive; a delete takes every copy; when a second target joins, the
    copies a target now holds move there and the extra local ones go."""
    c = Cluster(targets=1, mountpaths=3, spare=1, extra="--inline_max 0").start()
    try:
        for b, n in (("two", 2), ("three", 3)):
            r = c.http.put(c.url + "/v1/buckets/" + b,
                           json={"mirror": {"copies": n}, "verify_reads": True})
            assert r.status_code == 201, r.text
        data = {"m/%02d" % i: os.urandom(10000 + i * 3001) for i in range(10)}
        for b in ("two", "three"):
            put_all(c, b, data)

        per = {}                 # files per drive: every drive has a copy of each of three
        for p in data_files(c, ["t0"]):
            mp = p.split(os.sep + "t0" + os.sep)[1].split(os.sep)[0]
            per[mp] = per.get(mp, 0) + 1
        assert sum(per.values()) == 10 * 2 + 10 * 3, per
        assert len(per) == 3 and min(per.values()) >= 10, per
        # a damaged copy: the primary's file (found by its size) flipped
        before = set(data_files(c))
        assert c.http.put(url(c, "two", "victim"), b"v" * 77777).status_code == 201
        new = [p for p in set(data_files(c)) - before]
        assert len(new) == 2
        for p in new:
            damage(p, "flip")
        r = c.http.get(url(c, "two", "victim"))
        assert r.status_code == 500, r.status_code   # both copies bad: never wrong bytes
        assert c.http.put(url(c, "two", "victim"), b"w" * 77777).status_code == 201
        new = sorted(set(data_files(c)) - before)
        log = os.path.join(c.data, "logs", "t0.log")
        for p in new:            # one is the object's own file: its loss is repaired on read
            damage(p, "delete")
            r = c.http.get(url(c, "two", "victim"))
            assert r.status_code == 200 and r.content == b"w" * 77777
            if "replaced from a copy on another drive" in open(log).read():
                break
            # that was the copy: an ec-encode job (the repair) makes it again
            assert run_job(c, {"kind": "ec-encode", "bucket": "two"})["state"] == "finished"
        assert "replaced from a copy on another drive" in open(log).read()
        assert c.http.delete(url(c, "two", "victim")).status_code == 204
        assert len(data_files(c)) == 10 * 2 + 10 * 3
        c.sh("start-node", "t1")
        c.wait_map(lambda m: sum(n["role"] == "target" and n["state"] == "active"
                                 for n in m["nodes"]) == 2)
        wait_rebalanced(c)
        # copies 2: one on each target; copies 3: two targets and one more drive
        both = ["t0", "t1"]
        end = time.time() + 30   # (the walk's last drops land after its report)
        while time.time() < end and len(data_files(c, both)) != 10 * 2 + 10 * 3:
            time.sleep(0.5)
        assert len(data_files(c, both)) == 10 * 2 + 10 * 3
        assert 20 <= len(data_files(c, ["t1"])) <= 30
        assert bad_reads(c, "two", data) == [] and bad_reads(c, "three", data) == []
    finally:
        assert not c.cleanup()


def test_scrub_remakes_a_damaged_copy_on_another_drive():
    """One target, three drives, copies 3: a flipped file is found by a
    scrub and made again from a good copy; every copy is right after."""
    c = Cluster(targets=1, mountpaths=3).start()
    try:
        assert c.http.put(c.url + "/v1/buckets/lc",
                          json={"mirror": {"copies": 3}}).status_code == 201
        body = os.urandom(54321)
        assert c.http.put(url(c, "lc", "x"), body).status_code == 201
        files = sorted(data_files(c), key=os.path.getmtime)
        assert len(files) == 3
        # the last written, most likely a copy (were it the object's own file,
        # the scrub restores that from a copy instead: fixed either way)
        damage(files[-1], "flip")
        j = run_job(c, {"kind": "scrub", "bucket": "lc"})
        assert j["found"] == 1 and j["fixed"] == 1 and j["errors"] == 0, j
        assert len(data_files(c)) == 3
        assert all(open(p, "rb").read() == body for p in data_files(c))
        assert run_job(c, {"kind": "scrub", "bucket": "lc"})["found"] == 0
        assert c.http.get(url(c, "lc", "x")).content == body
    finally:
        assert not c.cleanup()


def test_every_copy_damaged_is_kept_and_said():
    """Copies 2 on two targets, both copies of an object flipped (or
    truncated): a read is 500 ObjectCorrupted, every time (never 503
    "holder down"), and neither it nor a scrub deletes either copy's bytes;
    the object stays listed, /v1/cluster/damaged names it, and a PUT of it
    replaces the damaged copies. A copy damaged on one holder only is still
    repaired from the other."""
    c = Cluster(targets=2, mountpaths=1).start()
    try:
        r = c.http.put(c.url + "/v1/buckets/dm",
                       json={"mirror": {"copies": 2}, "verify_reads": True})
        assert r.status_code == 201, r.text
        data = {n: os.urandom(40000 + i * 1013)
                for i, n in enumerate(("both-flip", "both-trunc", "one-flip", "fine"))}
        files = {}
        for k, v in data.items():
            before = data_files(c)
            assert c.http.put(url(c, "dm", k), v).status_code == 201
            files[k] = sorted(set(data_files(c)) - set(before))
            assert len(files[k]) == 2, files
        for p in files["both-flip"]:
            damage(p, "flip")
        for p in files["both-trunc"]:
            damage(p, "truncate")
        damage(files["one-flip"][0], "flip")
        sizes = {p: os.path.getsize(p) for k in ("both-flip", "both-trunc") for p in files[k]}
        for k in ("both-flip", "both-trunc"):
            for _ in range(3):
                r = c.http.get(url(c, "dm", k), timeout=60)
                assert r.status_code == 500 and "ObjectCorrupted" in r.text, (k, r.status_code,
                                                                                 r.text)
        r = c.http.get(url(c, "dm", "one-flip"))
        assert r.status_code == 200 and r.content == data["one-flip"]
        # the damaged bytes are all still there
        for p, n in sizes.items():
            assert os.path.exists(p) and os.path.getsize(p) == n, p
        d = c.http.get(c.url + "/v1/cluster/damaged").json()
        named = {o["name"] for o in d["objects"] if o["bucket"] == "dm"}
        assert named == {"both-flip", "both-trunc"}, d
        assert d["unreached"] == [] and d["more"] is False
        # a scrub finds them, cannot fix them, and deletes nothing
        j = run_job(c, {"kind": "scrub", "bucket": "dm"})
        assert j["lost"] >= 2 and j["fixed"] >= 0, j
        for p, n in sizes.items():
            assert os.path.exists(p) and os.path.getsize(p) == n, p
        names = [o["name"] for o in
                 c.http.get(c.url + "/v1/buckets/dm/objects").json()["objects"]]
        assert names == sorted(data), names
        r = c.http.get(url(c, "dm", "both-flip"))
        assert r.status_code == 500 and "ObjectCorrupted" in r.text
        # a good copy replaces them
        for k in ("both-flip", "both-trunc"):
            data[k] = os.urandom(30000)
            assert c.http.put(url(c, "dm", k), data[k]).status_code == 201
        assert bad_reads(c, "dm", data) == []
        d = c.http.get(c.url + "/v1/cluster/damaged").json()
        assert [o for o in d["objects"] if o["bucket"] == "dm"] == [], d
    finally:
        assert not c.cleanup()
