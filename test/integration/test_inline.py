"""Small objects kept in their metadata records (--inline_max): no data
file, the same answers as a file-backed object's on every path, through
restarts, target losses, mirroring, erasure coding, rebalance and scrub."""
import os
import signal

from conftest import Cluster
from test_mirror import bad_reads, data_files, kill_and_wait_down, owner_of, put_all, run_job, url
from test_rebalance import wait_rebalanced


def test_small_objects_live_in_their_records():
    """Objects up to inline_max (16 KiB) leave no data file and answer
    GET, HEAD, ranges and conditions as a file-backed one does, native
    and S3; one byte more is a file; each kind replaces the other; a
    kill -9 right after the acknowledgement loses nothing."""
    c = Cluster(targets=1, mountpaths=1).start()
    try:
        assert c.http.put(c.url + "/v1/buckets/inl").status_code == 201
        data = {"s/%d" % n: os.urandom(n) for n in (0, 1, 4096, 16384)}
        for k, v in data.items():
            assert c.http.put(url(c, "inl", k), v).status_code == 201
        assert data_files(c) == {}
        assert bad_reads(c, "inl", data) == [] and bad_reads(c, "inl", data, api="s3") == []
        body = data["s/4096"]
        r = c.http.head(url(c, "inl", "s/4096"), allow_redirects=True)
        assert r.status_code == 200 and r.headers["Content-Length"] == "4096"
        etag = r.headers["ETag"]
        r = c.http.get(url(c, "inl", "s/4096"), headers={"Range": "bytes=100-199"})
        assert r.status_code == 206 and r.content == body[100:200]
        assert r.headers["Content-Range"] == "bytes 100-199/4096"
        r = c.http.get(url(c, "inl", "s/4096"), headers={"Range": "bytes=5000-"})
        assert r.status_code == 416
        r = c.http.get(url(c, "inl", "s/4096"), headers={"If-None-Match": etag})
        assert r.status_code == 304
        for _ in range(3):       # the worker's cache answers them now
            r = c.http.get(url(c, "inl", "s/4096", api="s3"))
            assert r.status_code == 200 and r.content == body and r.headers["ETag"] == etag
        # one byte over: a file; back under: the file goes
        big = os.urandom(16385)
        assert c.http.put(url(c, "inl", "s/4096"), big).status_code == 201
        assert len(data_files(c)) == 1
        assert c.http.get(url(c, "inl", "s/4096")).content == big
        assert c.http.put(url(c, "inl", "s/4096"), body).status_code == 201
        assert data_files(c) == {}
        assert c.http.get(url(c, "inl", "s/4096")).content == body
        # a body of unknown length (chunked, to the owner: a redirect
        # would send it again) is kept the same way
        r = c.http.put(c.node_url("t0") + "/v1/objects/inl/chunked", data=iter([b"ab", b"cd"]))
        assert r.status_code == 201 and data_files(c) == {}
        assert c.http.get(url(c, "inl", "chunked")).content == b"abcd"
        data["chunked"] = b"abcd"
        # acknowledged means durable: kill -9 and start again
        os.kill(c.pid("t0"), signal.SIGKILL)
        c.sh("start-node", "t0")
        c.wait_healthy("t0")
        assert bad_reads(c, "inl", data) == []
        assert c.http.delete(url(c, "inl", "s/1")).status_code == 204
        assert c.http.get(url(c, "inl", "s/1")).status_code == 404
        names = [o["name"] for o in
                 c.http.get(c.url + "/v1/buckets/inl/objects").json()["objects"]]
        assert names == ["chunked", "s/0", "s/16384", "s/4096"], names
    finally:
        assert not c.cleanup()


def test_inline_objects_survive_target_losses():
    """Four targets: a mirrored bucket (two copies) and an erasure-coded
    one (2+1, every object sliced), small objects only, so that copies
    and slices are inline records too and no target holds a data file;
    kill -9 a target and every object reads byte-identical (rebuilt from
    inline slices where it must be); after the rebalance a scrub finds
    nothing damaged and every object still reads back."""
    c = Cluster(targets=4, mountpaths=1).start()
    try:
        assert c.http.put(c.url + "/v1/buckets/mi",
                          json={"mirror": {"copies": 2}}).status_code == 201
        r = c.http.put(c.url + "/v1/buckets/ei",
                       json={"ec": {"data": 2, "parity": 1, "objsize_limit": 0}})
        assert r.status_code == 201, r.text
        wait_rebalanced(c)
        sizes = [1 + 997 * i for i in range(16)]
        mi = {"m/%02d" % i: os.urandom(n) for i, n in enumerate(sizes)}
        ei = {"e/%02d" % i: os.urandom(n) for i, n in enumerate(sizes)}
        put_all(c, "mi", mi)
        put_all(c, "ei", ei)
        assert data_files(c) == {}
        victim = owner_of(c, "ei", "e/07")
        kill_and_wait_down(c, victim)
        assert bad_reads(c, "mi", mi) == []
        assert bad_reads(c, "ei", ei) == []
        assert bad_reads(c, "ei", {k: ei[k] for k in list(ei)[:6]}, api="s3") == []
        assert "was rebuilt from its slices" in c.log_text(
            [t for t in c.target_names() if t != victim])
        wait_rebalanced(c)
        wait_rebalanced(c)
        j = run_job(c, {"kind": "scrub", "bucket": "mi"})
        assert j["state"] == "finished" and j["found"] == 0 and j["done"] == 2 * len(mi), j
        assert bad_reads(c, "mi", mi) == [] and bad_reads(c, "ei", ei) == []
        assert data_files(c) == {}
    finally:
        assert not c.cleanup()


def test_inline_max_zero_keeps_files():
    """--inline_max 0: every object, however small, is a data file."""
    c = Cluster(targets=1, mountpaths=1, extra="--inline_max 0").start()
    try:
        assert c.http.put(c.url + "/v1/buckets/f").status_code == 201
        data = {"a": b"", "b": b"x", "c": os.urandom(4096)}
        put_all(c, "f", data)
        assert len(data_files(c)) == 3
        assert bad_reads(c, "f", data) == []
    finally:
        assert not c.cleanup()
