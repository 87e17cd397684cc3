"""Restarts, kill -9 during PUTs, short bodies, full disks, membership changes."""
import hashlib
import http.client
import os
import signal
import socket
import threading
import time
import urllib.parse

import pytest
import requests

from conftest import Cluster, tmpfs_cluster


def put_location(c, bucket, name):
    """The signed target URL a PUT of name is redirected to."""
    r = c.http.put("%s/v1/objects/%s/%s" % (c.url, bucket, urllib.parse.quote(name)), b"",
                   allow_redirects=False)
    assert r.status_code == 307
    return r.headers["Location"]


def test_restart_keeps_objects_and_id(cluster, bucket):
    objs = {"r/%d" % i: os.urandom(1000 + i) for i in range(60)}
    for n, d in objs.items():
        assert cluster.http.put("%s/v1/objects/%s/%s" % (cluster.url, bucket, n), d).status_code == 201
    ids = sorted(n["id"] for n in cluster.cmap()["nodes"])
    cluster.sh("stop-node", "t1")
    cluster.sh("start-node", "t1")
    cluster.wait_healthy("t1")
    assert sorted(n["id"] for n in cluster.cmap()["nodes"]) == ids
    for n, d in objs.items():
        assert cluster.http.get("%s/v1/objects/%s/%s" % (cluster.url, bucket, n)).content == d


def test_short_body_leaves_previous_version(cluster, bucket):
    name = "short"
    u = "%s/v1/objects/%s/%s" % (cluster.url, bucket, name)
    assert cluster.http.put(u, b"version-one").status_code == 201
    loc = urllib.parse.urlsplit(put_location(cluster, bucket, name))
    s = socket.create_connection((loc.hostname, loc.port))
    s.sendall(("PUT %s?%s HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"
               % (loc.path, loc.query)).encode() + b"z" * 50000)
    time.sleep(0.3)
    s.close()
    time.sleep(0.3)
    r = cluster.http.get(u)
    assert r.status_code == 200 and r.content == b"version-one"
    # a never-finished new object does not appear at all
    loc = urllib.parse.urlsplit(put_location(cluster, bucket, "never"))
    s = socket.create_connection((loc.hostname, loc.port))
    s.sendall(("PUT %s?%s HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345"
               % (loc.path, loc.query)).encode())
    s.close()
    time.sleep(0.3)
    assert cluster.http.get("%s/v1/objects/%s/never" % (cluster.url, bucket)).status_code == 404
    lst = cluster.http.get("%s/v1/buckets/%s/objects" % (cluster.url, bucket)).json()
    assert [o["name"] for o in lst["objects"]] == ["short"]


def work_files(c):
    out = []
    for root, dirs, files in os.walk(c.data):
        if os.path.basename(root) == "work":
            out += files
    return out


def test_kill9_during_puts(cluster, bucket):
    """Acknowledged PUTs survive kill -9 byte-identical; others are absent or whole."""
    victim = "t2"
    vurl = cluster.node_url(victim)
    acked, sent = {}, {}
    lock = threading.Lock()
    stop = threading.Event()

    def writer(w):
        i = 0
        while not stop.is_set() and i < 400:
            name = "k9/%d/%d" % (w, i)
            data = os.urandom(64 * 1024 + i * 997)
            with lock:
                sent[name] = data
            try:
                loc = put_location(cluster, bucket, name)
                r = requests.put(loc, data, timeout=10)
                if r.status_code == 201:
                    with lock:
                        acked[name] = data
            except (requests.RequestException, AssertionError):
                pass     # the victim refused, or the proxy, once it saw it gone, said 503
            i += 1

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(6)]
    for t in threads:
        t.start()
    time.sleep(2.0)
    os.kill(cluster.pid(victim), signal.SIGKILL)
    time.sleep(1.0)
    stop.set()
    for t in threads:
        t.join()
    cluster.sh("start-node", victim)
    cluster.wait_healthy(victim)
    assert len(acked) > 50
    on_victim = 0
    for name, data in sent.items():
        r = cluster.http.get("%s/v1/objects/%s/%s" % (cluster.url, bucket, name), timeout=10)
        if name in acked:
            assert r.status_code == 200, name
            assert hashlib.sha256(r.content).digest() == hashlib.sha256(data).digest(), name
        else:
            assert r.status_code == 404 or r.content == data, name
        loc = cluster.http.get("%s/v1/objects/%s/%s" % (cluster.url, bucket, name),
                               allow_redirects=False).headers["Location"]
        on_victim += loc.startswith(vurl)
    assert on_victim > 0
    assert work_files(cluster) == []


def test_node_leaves_and_rejoins(cluster):
    """A silent target stays in the map, down (its names are unavailable,
    not gone), and is active again once it rejoins."""
    before = {n["id"] for n in cluster.cmap()["nodes"]}
    t0 = [n["id"] for n in cluster.cmap()["nodes"] if n["url"] == cluster.node_url("t0")][0]
    cluster.sh("kill-node", "t0")
    m = cluster.wait_map(lambda m: any(n["id"] == t0 and n["state"] == "down"
                                       for n in m["nodes"]))
    assert {n["id"] for n in m["nodes"]} == before
    cluster.sh("start-node", "t0")
    cluster.wait_map(lambda m: all(n["state"] == "active" for n in m["nodes"]))
    cluster.wait_healthy("t0")


def test_out_of_space_is_507_and_nothing_torn():
    with tmpfs_cluster("24m") as c:
        assert c.http.put(c.url + "/v1/buckets/full").status_code == 201
        u = c.url + "/v1/objects/full/obj"
        small = os.urandom(1 << 20)
        assert c.http.put(u, small).status_code == 201
        big = os.urandom(40 << 20)
        r = c.http.put(u, big)
        assert r.status_code == 507, r.text
        assert "space" in r.json()["error"]
        r = c.http.get(u)
        assert r.status_code == 200 and r.content == small
        r = c.http.put(c.url + "/v1/objects/full/other", big)
        assert r.status_code == 507
        assert c.http.get(c.url + "/v1/objects/full/other").status_code == 404
        assert work_files(c) == []
        # space freed: writes work again
        assert c.http.put(c.url + "/v1/objects/full/after", b"ok").status_code == 201
        assert c.http.get(c.url + "/v1/health").status_code == 200


def test_second_proxy_forwards_changes_and_redirects():
    c = Cluster(proxies=2, targets=2).start()
    try:
        p1 = c.node_url("p1")
        assert requests.put(p1 + "/v1/buckets/via-p1").status_code == 201
        assert requests.head(c.url + "/v1/buckets/via-p1").status_code == 200
        assert requests.put(p1 + "/v1/objects/via-p1/o", b"two proxies").status_code == 201
        assert requests.get(c.url + "/v1/objects/via-p1/o").content == b"two proxies"
        a = requests.get(c.url + "/v1/objects/via-p1/o", allow_redirects=False)
        b = requests.get(p1 + "/v1/objects/via-p1/o", allow_redirects=False)
        assert a.headers["Location"].split("?")[0] == b.headers["Location"].split("?")[0]
        assert requests.delete(p1 + "/v1/buckets/via-p1").status_code == 204
        assert requests.head(c.url + "/v1/buckets/via-p1").status_code == 404
    finally:
        assert not c.cleanup()


def test_missing_or_short_data_file_is_never_served():
    """A data file deleted or truncated under the target: its reads answer
    500 naming the object (S3: InternalError), never 404 or short bytes;
    the other objects read as before."""
    c = Cluster(targets=1, mountpaths=1).start()
    try:
        assert c.http.put(c.url + "/v1/buckets/dmg").status_code == 201
        root = os.path.join(c.data, "t0", "mp0", "data")

        def files():
            return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}
        where, body = {}, {}
        for n in ("gone", "short", "fine"):
            before = files()
            body[n] = os.urandom(100000)
            assert c.http.put(c.url + "/v1/objects/dmg/" + n, body[n]).status_code == 201
            new = files() - before
            assert len(new) == 1, new
            where[n] = new.pop()
        os.unlink(where["gone"])
        with open(where["short"], "r+b") as f:
            f.truncate(5000)
        for n in ("gone", "short"):
            r = c.http.get(c.url + "/v1/objects/dmg/" + n)
            assert r.status_code == 500 and "ObjectCorrupted" in r.text and n in r.text, r.text
            assert c.http.head(c.url + "/v1/objects/dmg/" + n,
                               allow_redirects=True).status_code == 500
            r = c.http.get(c.url + "/s3/dmg/" + n)
            assert r.status_code == 500 and "<Code>InternalError</Code>" in r.text, r.text
        r = c.http.get(c.url + "/v1/objects/dmg/fine")
        assert r.status_code == 200 and r.content == body["fine"]
        logs = open(os.path.join(c.data, "logs", "t0.log")).read()
        assert "object shoal/dmg/gone: its data file is missing or short" in logs
    finally:
        assert not c.cleanup()


def test_kept_small_bytes_follow_their_file():
    """A small object read and checked once answers later reads on the
    same worker from the bytes it kept (GET, HEAD and a range alike); a
    flip written into its file in place is a 500 on the next read there,
    the bytes made right again are served again, and a new version
    replaces them. (Kept in files: --inline_max 0.)"""
    c = Cluster(targets=1, mountpaths=1, extra="--inline_max 0").start()
    try:
        assert c.http.put(c.url + "/v1/buckets/kb").status_code == 201
        root = os.path.join(c.data, "t0", "mp0", "data")
        body = os.urandom(4096)
        path = "/v1/objects/kb/small"
        assert c.http.put(c.url + path, body).status_code == 201
        f = [os.path.join(d, n) for d, _, fs in os.walk(root) for n in fs]
        assert len(f) == 1
        # one connection: one worker, whose cache holds the bytes
        u = urllib.parse.urlsplit(c.node_url("t0"))
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)

        def ask(method="GET", headers=None):
            conn.request(method, path, headers=headers or {})
            r = conn.getresponse()
            return r.status, r.read(), r
        for _ in range(3):
            assert ask()[:2] == (200, body)
        st, _, r = ask("HEAD")
        assert st == 200 and r.getheader("Content-Length") == "4096"
        st, got, _ = ask(headers={"Range": "bytes=10-19"})
        assert st == 206 and got == body[10:20]
        time.sleep(0.05)            # a change time of its own
        with open(f[0], "r+b") as fh:
            fh.seek(100)
            fh.write(bytes(x ^ 0xff for x in body[100:116]))
        st, got, _ = ask()
        assert st == 500 and b"does not match its checksum" in got, got
        with open(f[0], "r+b") as fh:
            fh.seek(100)
            fh.write(body[100:116])
        assert ask()[:2] == (200, body)
        assert ask()[:2] == (200, body)
        new = os.urandom(3000)
        assert c.http.put(c.url + path, new).status_code == 201
        assert ask()[:2] == (200, new)
        conn.close()
    finally:
        assert not c.cleanup()


def test_checksums_verified_by_default():
    """Every GET checks the blocks it sends, without a bucket asking: 16
    flipped bytes (the size unchanged) in a block answer 500 naming the
    object, also when the object was read (and its blocks checked) before
    the flip; ranges of the object's other blocks read right, since a range
    checks only its own blocks; a small object's flip is caught too.
    verify_reads: false turns checking off (the flipped bytes are served),
    and the property takes only a boolean."""
    c = Cluster(targets=1, mountpaths=1, extra="--inline_max 0").start()
    try:
        assert c.http.put(c.url + "/v1/buckets/vr").status_code == 201
        r = c.http.put(c.url + "/v1/buckets/off", json={"verify_reads": False})
        assert r.status_code == 201, r.text
        assert c.http.put(c.url + "/v1/buckets/bad",
                          json={"verify_reads": 1}).status_code == 400
        root = os.path.join(c.data, "t0", "mp0", "data")

        def files():
            return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}
        body = {n: os.urandom(300000) for n in ("flipped", "intact")}
        body["small"] = os.urandom(4096)
        where = {}
        for bk in ("vr", "off"):
            for n, b in body.items():
                before = files()
                assert c.http.put(c.url + "/v1/objects/%s/%s" % (bk, n), b).status_code == 201
                where[bk, n] = (files() - before).pop()
                # read once: its blocks are checked and remembered
                assert c.http.get(c.url + "/v1/objects/%s/%s" % (bk, n)).content == b

        def flip(path, at):
            with open(path, "r+b") as f:
                f.seek(at)
                old = f.read(16)
                f.seek(at)
                f.write(bytes(x ^ 0xff for x in old))
        for bk in ("vr", "off"):
            flip(where[bk, "flipped"], 123456)     # the second 64 KiB block
            flip(where[bk, "small"], 100)
        for n in ("flipped", "small"):
            r = c.http.get(c.url + "/v1/objects/vr/" + n)
            assert r.status_code == 500 and "does not match its checksum" in r.text, r.text
            assert n in r.text
            r = c.http.get(c.url + "/s3/vr/" + n)
            assert r.status_code == 500 and "<Code>InternalError</Code>" in r.text
        bad = body["flipped"]
        for lo, hi in ((0, 999), (131072, 140000), (200000, 299999)):
            r = c.http.get(c.url + "/v1/objects/vr/flipped",
                           headers={"Range": "bytes=%d-%d" % (lo, hi)})
            assert r.status_code == 206 and r.content == bad[lo:hi + 1], (lo, r.status_code)
        r = c.http.get(c.url + "/v1/objects/vr/flipped", headers={"Range": "bytes=123000-123999"})
        assert r.status_code == 500, r.status_code
        r = c.http.get(c.url + "/v1/objects/vr/intact")
        assert r.status_code == 200 and r.content == body["intact"]
        r = c.http.get(c.url + "/v1/objects/vr/intact", headers={"Range": "bytes=1000-1999"})
        assert r.status_code == 206 and r.content == body["intact"][1000:2000]
        # the switch: off serves what the drive holds
        r = c.http.get(c.url + "/v1/objects/off/flipped")
        assert r.status_code == 200 and r.content != body["flipped"]
        assert len(r.content) == len(body["flipped"])
    finally:
        assert not c.cleanup()


def test_data_layouts_flat_and_nested():
    """A new mountpath keeps its data files flat (data/XX/<hash>.<uid>, its
    "layout" file says so, and without the file its files do); one whose
    files predate that layout (data/XX/YY/...) is read, overwritten and
    deleted as before after a restart; a layout file naming no layout
    stops the target."""
    c = Cluster(targets=1, mountpaths=1, extra="--inline_max 0").start()
    try:
        mp = os.path.join(c.data, "t0", "mp0")
        root = os.path.join(mp, "data")
        assert open(os.path.join(mp, "layout")).read() == "flat\n"
        assert len(os.listdir(root)) == 256
        assert c.http.put(c.url + "/v1/buckets/lay").status_code == 201
        body = {"o%d" % i: os.urandom(1000 + i * 4099) for i in range(20)}
        for k, v in body.items():
            assert c.http.put(c.url + "/v1/objects/lay/" + k, v).status_code == 201
        files = [(d, f) for d, _, fs in os.walk(root) for f in fs]
        assert len(files) == 20
        assert all(os.path.dirname(d) == root for d, _ in files), files
        # the layout file lost: the files say which layout it is
        c.sh("stop-node", "t0")
        os.unlink(os.path.join(mp, "layout"))
        c.sh("start-node", "t0")
        c.wait_healthy("t0")
        assert open(os.path.join(mp, "layout")).read() == "flat\n"
        assert all(c.http.get(c.url + "/v1/objects/lay/" + k).content == v
                   for k, v in body.items())
        c.sh("stop-node", "t0")
        # the same files as a mountpath of the older, nested layout holds them
        for d, f in files:
            nested = os.path.join(d, f[2:4])
            os.makedirs(nested, exist_ok=True)
            os.rename(os.path.join(d, f), os.path.join(nested, f))
        for d in os.listdir(root):
            if not os.listdir(os.path.join(root, d)):
                os.rmdir(os.path.join(root, d))
        os.unlink(os.path.join(mp, "layout"))
        c.sh("start-node", "t0")
        c.wait_healthy("t0")
        assert open(os.path.join(mp, "layout")).read() == "nested\n"
        for k, v in body.items():
            r = c.http.get(c.url + "/v1/objects/lay/" + k)
            assert r.status_code == 200 and r.content == v, k
        new = os.urandom(7777)
        assert c.http.put(c.url + "/v1/objects/lay/o3", new).status_code == 201
        assert c.http.delete(c.url + "/v1/objects/lay/o4").status_code in (200, 204)
        assert c.http.get(c.url + "/v1/objects/lay/o3").content == new
        assert c.http.get(c.url + "/v1/objects/lay/o4").status_code == 404
        deep = [f for d, _, fs in os.walk(root) for f in fs if d.count(os.sep) - root.count(os.sep) == 2]
        assert len(deep) == 19, deep        # o4 gone, o3 rewritten where the layout puts it
        c.sh("stop-node", "t0")
        with open(os.path.join(mp, "layout"), "w") as f:
            f.write("sideways\n")
        c.sh("start-node", "t0", check=False)
        end, log = time.time() + 20, ""
        while time.time() < end and "names no layout" not in log:
            time.sleep(0.2)
            log = open(os.path.join(c.data, "logs", "t0.log")).read()
        assert "mp0: layout: Invalid argument (the file names no layout" in log, log[-2000:]
        with pytest.raises(requests.ConnectionError):    # it stopped: nothing listens
            requests.get(c.node_url("t0") + "/v1/health", timeout=5)
    finally:
        c.cleanup()
