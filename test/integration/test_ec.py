"""Erasure-coded buckets: slices on distinct targets, reads rebuilt from
them, the slices placed again after a loss, kill -9 during PUTs."""
import concurrent.futures
import re
import os
import signal
import threading
import time

import boto3
import requests

from conftest import Cluster
from test_mirror import bad_reads, data_files, kill_and_wait_down, owner_of, put_all, run_job, url
from test_rebalance import wait_rebalanced
from test_s3_subresources import owner_root, trailer_body, trailer_put

EC = {"ec": {"data": 2, "parity": 1, "objsize_limit": 65536}}


def maps_agree(c, timeout=30):
    """Until every target has installed the proxy's current map."""
    end = time.time() + timeout
    while time.time() < end:
        v = c.cmap()["version"]
        if all(c.http.get(c.node_url(t) + "/v1/cluster", timeout=5).json()["version"] == v
               for t in c.target_names()):
            return
        time.sleep(0.2)
    raise AssertionError("the targets' maps never caught up with the proxy's")


def expected_files(c, bucket):
    """Data files the bucket's listed objects should have: a big one whole
    and in three slices, a small one in two copies."""
    objs = c.http.get("%s/v1/buckets/%s/objects" % (c.url, bucket)).json()["objects"]
    return sum(4 if o["size"] >= 65536 else 2 for o in objs)


def test_erasure_coding_survives_a_target_loss():
    """EC 2+1 on four targets, objects of 1 KiB..4 MiB (objsize_limit 64
    KiB): a big object is whole on its owner and in three slices on the
    three others, a small one has one full copy more; kill -9 the owner of
    a big object: every object reads byte-identical (rebuilt from slices
    where it must be), through the native and S3 APIs; the rebuilt object
    is whole on its new owner; after the rebalance, a second kill -9 leaves
    every object readable or a clear error, never wrong bytes."""
    c = Cluster(targets=4, mountpaths=1, extra="--inline_max 0").start()
    try:
        for bad in ({"data": 0, "parity": 1}, {"data": 2}, {"data": 2, "parity": 9},
                    {"data": 2, "parity": 1, "x": 1}, {"data": 2, "parity": 1,
                                                       "objsize_limit": -1}):
            r = c.http.put(c.url + "/v1/buckets/bad", json={"ec": bad})
            assert r.status_code == 400 and "ec" in r.text, (bad, r.text)
        r = c.http.put(c.url + "/v1/buckets/bad", json={"ec": {"data": 2, "parity": 1},
                                                         "mirror": {"copies": 2}})
        assert r.status_code == 400 and "not both" in r.text
        r = c.http.put(c.url + "/v1/buckets/ec",
                       json={"ec": {"data": 2, "parity": 1, "objsize_limit": 65536}})
        assert r.status_code == 201, r.text
        wait_rebalanced(c)   # every target on the map of four: each object's slices all made
        sizes = [1024 << (i % 13) for i in range(60)] + [(4 << 20) + 17, 65536, 65535]
        data = {"e/%03d" % i: os.urandom(n) for i, n in enumerate(sizes)}
        put_all(c, "ec", data)
        big = sum(1 for v in data.values() if len(v) >= 65536)
        small = len(data) - big
        # big: the whole object and three slices; small: two full copies
        assert len(data_files(c)) == 4 * big + 2 * small, (len(data_files(c)), big, small)
        victim = owner_of(c, "ec", "e/%03d" % (sizes.index((4 << 20) + 17)))
        kill_and_wait_down(c, victim)
        assert bad_reads(c, "ec", data) == []
        assert bad_reads(c, "ec", {k: data[k] for k in list(data)[:20]}, api="s3") == []
        assert "was rebuilt from its slices" in c.log_text(
            [t for t in c.target_names() if t != victim])
        wait_rebalanced(c)
        wait_rebalanced(c)
        assert bad_reads(c, "ec", data) == []
        second = next(t for t in c.target_names() if t != victim)
        kill_and_wait_down(c, second)
        def one(k):
            r = c.http.get(url(c, "ec", k), timeout=60)
            assert r.status_code in (200, 500, 503), (k, r.status_code, r.text)
            if r.status_code == 200:
                assert r.content == data[k], k
            return r.status_code
        with concurrent.futures.ThreadPoolExecutor(4) as ex:
            codes = list(ex.map(one, data))
        print(codes)
        assert codes.count(200) >= len(data) // 2, codes
    finally:
        assert not c.cleanup()


def test_ec_encode_brings_existing_objects_to_the_settings():
    """Objects written before a bucket was erasure coded get their slices
    and copies: the change of settings walks, and an ec-encode job reports
    every object owned and done; a bucket with neither setting is refused."""
    c = Cluster(targets=4, mountpaths=1, extra="--inline_max 0").start()
    try:
        maps_agree(c)            # every target on the map of four: the job runs on each
        assert c.http.put(c.url + "/v1/buckets/late").status_code == 201
        data = {"l/%02d" % i: os.urandom(1000 + i * 20000) for i in range(20)}
        put_all(c, "late", data)
        assert len(data_files(c)) == len(data)
        r = c.http.post(c.url + "/v1/jobs", json={"kind": "ec-encode", "bucket": "late"})
        assert r.status_code == 400 and "neither" in r.text, r.text
        assert c.http.patch(c.url + "/v1/buckets/late", json=EC).status_code == 200
        j = run_job(c, {"kind": "ec-encode", "bucket": "late"})
        assert j["state"] == "finished" and j["owned"] == j["done"] == len(data), j
        assert len(data_files(c)) == expected_files(c, "late")
        assert bad_reads(c, "late", data) == []
        r = c.http.post(c.url + "/v1/jobs", json={"kind": "ec-encode"})
        assert r.status_code == 400
    finally:
        assert not c.cleanup()


def test_kill9_during_ec_puts():
    """kill -9 of a target while erasure-coded PUTs stream in: every
    acknowledged object reads byte-identical (rebuilt from slices while its
    owner is down); once the target is back and the walks are over, every
    object has exactly its slices and copies (no orphan slice), and an
    overwritten or deleted object's old slices are gone too."""
    c = Cluster(targets=4, mountpaths=1, extra="--inline_max 0").start()
    try:
        assert c.http.put(c.url + "/v1/buckets/k9", json=EC).status_code == 201
        # old slices that must go: overwritten by a small object, deleted
        put_all(c, "k9", {"over": os.urandom(200000), "gone": os.urandom(200000)})
        assert c.http.put(url(c, "k9", "over"), b"small").status_code == 201
        assert c.http.delete(url(c, "k9", "gone")).status_code == 204
        acked, lock, stop = {}, threading.Lock(), threading.Event()

        def writer(w):
            for i in range(200):
                if stop.is_set():
                    return
                name, body = "w%d/%03d" % (w, i), os.urandom(70000 + (i % 7) * 50000)
                try:
                    r = requests.put(url(c, "k9", name), body, timeout=20)
                except requests.RequestException:
                    continue
                if r.status_code == 201:
                    with lock:
                        acked[name] = body
        threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
        for t in threads:
            t.start()
        time.sleep(2.0)
        victim = "t1"
        kill_and_wait_down(c, victim)
        time.sleep(1.0)
        stop.set()
        for t in threads:
            t.join()
        assert len(acked) > 20, len(acked)
        assert bad_reads(c, "k9", acked) == []
        c.sh("start-node", victim)
        c.wait_healthy(victim)
        c.wait_map(lambda m: all(n["state"] == "active" for n in m["nodes"]))
        wait_rebalanced(c)
        # no orphan: never more files than the listed objects need; then an
        # ec-encode job (the repair) makes whatever a broken PUT left owed
        assert len(data_files(c)) <= expected_files(c, "k9")
        j = run_job(c, {"kind": "ec-encode", "bucket": "k9"})
        assert j["state"] == "finished", j
        end = time.time() + 60
        while time.time() < end and len(data_files(c)) != expected_files(c, "k9"):
            time.sleep(1)
        assert len(data_files(c)) == expected_files(c, "k9")
        assert bad_reads(c, "k9", acked) == []
        assert c.http.get(url(c, "k9", "gone")).status_code == 404
        assert c.http.get(url(c, "k9", "over")).content == b"small"
    finally:
        assert not c.cleanup()


def test_a_new_code_applies_to_existing_objects():
    """2+1 changed to 1+2: an ec-encode job slices every object again under
    the new code (the holders replace the old slices of the same version)
    and gives small objects their third copy; then one target alone, with
    a single slice, rebuilds a big object, which 2+1 could not."""
    c = Cluster(targets=4, mountpaths=1, extra="--inline_max 0").start()
    try:
        assert c.http.put(c.url + "/v1/buckets/code", json=EC).status_code == 201
        data = {"c/%02d" % i: os.urandom(5000 + i * 30000) for i in range(12)}
        put_all(c, "code", data)
        assert len(data_files(c)) == expected_files(c, "code")
        r = c.http.patch(c.url + "/v1/buckets/code",
                         json={"ec": {"data": 1, "parity": 2, "objsize_limit": 65536}})
        assert r.status_code == 200, r.text
        j = run_job(c, {"kind": "ec-encode", "bucket": "code"})
        assert j["state"] == "finished" and j["done"] == len(data), j
        small = sum(1 for v in data.values() if len(v) < 65536)
        assert len(data_files(c)) == expected_files(c, "code") + small   # three copies now
        big = max(data, key=lambda k: len(data[k]))
        survivor = next(t for t in c.target_names() if t != owner_of(c, "code", big))
        # all three at once: one by one, each map change starts a rebalance
        # that may hand the survivor's slice to a target killed next (three
        # losses are one more than parity 2 allows once pieces move)
        dead = [t for t in c.target_names() if t != survivor]
        for t in dead:
            os.kill(c.pid(t), signal.SIGKILL)
        urls = {c.node_url(t) for t in dead}
        c.wait_map(lambda m: sum(n["url"] in urls and n["state"] == "down"
                                 for n in m["nodes"]) == len(dead))
        r = c.http.get(url(c, "code", big), timeout=60)
        assert r.status_code == 200 and r.content == data[big], (r.status_code, r.text[:300])
    finally:
        assert not c.cleanup()


def test_scrub_remakes_a_damaged_slice():
    """A slice's file flipped: a scrub finds it, drops it and the object's
    owner makes it again (a good one, same size); a second scrub finds
    nothing."""
    from test_mirror import damage
    c = Cluster(targets=4, mountpaths=1).start()
    try:
        assert c.http.put(c.url + "/v1/buckets/sc", json=EC).status_code == 201
        body = os.urandom(200000)   # slices of 100032, 99968 and 100032 bytes
        assert c.http.put(url(c, "sc", "one"), body).status_code == 201
        (slice1,) = [p for p in data_files(c) if os.path.getsize(p) == 99968]
        damage(slice1, "flip")
        j = run_job(c, {"kind": "scrub"})
        assert j["found"] == 1 and j["fixed"] == 1 and j["errors"] == 0, j
        again = [p for p in data_files(c) if os.path.getsize(p) == 99968]
        assert len(again) == 1 and open(again[0], "rb").read() == body[100032:]
        assert run_job(c, {"kind": "scrub"})["found"] == 0
        assert len(data_files(c)) == 4
    finally:
        assert not c.cleanup()


def sliced_counts(c):
    """shoal_ec_sliced_total summed over the targets: {"arrival": n, "file": n}."""
    out = {"arrival": 0, "file": 0}
    for t in c.target_names():
        for line in c.http.get(c.node_url(t) + "/metrics").text.splitlines():
            m = re.match(r'shoal_ec_sliced_total\{[^}]*coded="(\w+)"[^}]*\} (\d+)', line)
            if m:
                out[m.group(1)] += int(m.group(2))
    return out


class Pieces:
    """A body sent with chunked transfer, again from its start after a
    redirect."""
    def __init__(self, v):
        self.v = v

    def __iter__(self):
        return (self.v[i:i + 100000] for i in range(0, len(self.v), 100000))


def whole_of(c, body):
    """The one data file that is body's whole copy, as a list."""
    whole = [f for f in data_files(c) if os.path.getsize(f) == len(body)]
    assert len(whole) == 1, whole
    return whole


def reads_without(c, key, body, files):
    """files removed (the whole copy among them), key of bucket ec still
    reads back as body, rebuilt; the rebuilt bytes are served while they
    are committed, and the whole copy is back on the owner soon after."""
    for f in files:
        os.unlink(f)
    r = c.http.get(url(c, "ec", key))
    assert r.status_code == 200 and r.content == body, (r.status_code, r.text[:200])
    for _ in range(200):
        if [f for f in data_files(c) if os.path.getsize(f) == len(body)]:
            break
        time.sleep(0.05)
    whole = whole_of(c, body)
    assert open(whole[0], "rb").read() == body


def test_puts_are_coded_as_they_arrive():
    """A PUT of announced length to an erasure-coded bucket is coded as its
    body arrives: through the native API, and through S3 (boto3, and
    aws-chunked bodies whose decoded length is announced; one longer than
    it announced is refused); a body of unknown length (chunked transfer)
    is coded from the committed object. The parity coded on arrival
    rebuilds an object whose whole copy and first data slice are gone.
    With one target lost, every object reads back byte-identical (rebuilt
    from slices where its owner was the one)."""
    c = Cluster(targets=4, mountpaths=1).start()
    try:
        r = c.http.put(c.url + "/v1/buckets/ec", json=EC)
        assert r.status_code == 201, r.text
        wait_rebalanced(c)   # every target on the map of four: each object's slices all made
        sizes = [65536, 65537, 1 << 20, (3 << 20) + 5, (5 << 20) + 123, 700001]
        native = {"n/%d" % i: os.urandom(n) for i, n in enumerate(sizes)}
        put_all(c, "ec", native)
        s3 = boto3.client("s3", endpoint_url=c.url + "/s3", aws_access_key_id="AK",
                          aws_secret_access_key="SK", region_name="us-east-1")
        viaS3 = {"s/%d" % i: os.urandom(n) for i, n in enumerate(sizes[:4])}
        for k, v in viaS3.items():
            s3.put_object(Bucket="ec", Key=k, Body=v)
        for i, n in enumerate(sizes[:2]):   # aws-chunked, straight to the owner's S3 root
            k = "a/%d" % i
            viaS3[k] = os.urandom(n)
            r = trailer_put(owner_root(c, "ec", k), viaS3[k])
            assert r.status_code == 200, r.text
        r = trailer_put(owner_root(c, "ec", "a/long"), b"y" * 99999, trailer_body(b"y" * 100000))
        assert r.status_code == 400 and "IncompleteBody" in r.text, r.text
        chunked = {"c/%d" % i: os.urandom(n) for i, n in enumerate(sizes[:3])}
        for k, v in chunked.items():
            r = c.http.put(url(c, "ec", k), data=Pieces(v))
            assert r.status_code == 201 and r.json()["size"] == len(v), r.text
        counts = sliced_counts(c)
        # every PUT of announced length coded as it came; the chunked ones
        # from their files (a rebalance walk that a send timing out on a
        # loaded machine asks for may slice an object from its file once
        # more: at least, not exactly)
        assert counts["arrival"] == len(native) + len(viaS3), counts
        assert counts["file"] >= len(chunked), counts
        data = dict(native, **viaS3, **chunked)
        assert len(data_files(c)) == 4 * len(data)
        # the parity coded on arrival rebuilds: the whole copy and data slice 0
        # gone, a read decodes from slice 1 and the parity (checked against the
        # object's checksum, so wrong parity would be a 500)
        body = os.urandom(200000)   # slices of 100032 (data 0, parity) and 99968 bytes
        assert c.http.put(url(c, "ec", "p/one"), body).status_code == 201
        assert sliced_counts(c)["arrival"] == counts["arrival"] + 1
        first = [f for f in data_files(c) if os.path.getsize(f) == 100032
                 and open(f, "rb").read() == body[:100032]]
        assert len(first) == 1, first
        reads_without(c, "p/one", body, whole_of(c, body) + first)
        data["p/one"] = body
        # slices past SLICE_MEM_MAX (4 MiB) come in through work files: the
        # whole copy gone, the data slices in order; then data slice 0
        # gone too, decoded from the parity
        big = os.urandom((9 << 20) + 5)
        assert c.http.put(url(c, "ec", "p/big"), big).status_code == 201
        reads_without(c, "p/big", big, whole_of(c, big))
        first = [f for f in data_files(c) if os.path.getsize(f) != len(big)
                 and open(f, "rb").read(65536) == big[:65536]]
        assert len(first) == 1, first
        reads_without(c, "p/big", big, whole_of(c, big) + first)
        data["p/big"] = big
        victim = owner_of(c, "ec", "n/4")
        kill_and_wait_down(c, victim)
        assert bad_reads(c, "ec", data) == []
    finally:
        assert not c.cleanup()
