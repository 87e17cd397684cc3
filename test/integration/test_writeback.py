"""Write-back buckets over a real s3rver: PUTs acknowledged with the
backend down, served locally, kept across kill -9 of every target, and
written to the backend once it is back (overwrites and deletes in order);
flush jobs wait for it; a copy not yet written back is never evicted."""
import os
import time

import pytest
import requests

from conftest import Cluster, running_cluster, running_s3rver


@pytest.fixture(scope="module")
def s3():
    yield from running_s3rver("wbsrc", "wtsrc")


@pytest.fixture(scope="module")
def cl(s3):
    yield from running_cluster(env=s3.env())


def obj(c, b, k):
    return "%s/v1/objects/%s/%s" % (c.url, b, k)


def wb_bucket(c, name):
    """A write-back bucket over s3rver's wbsrc."""
    r = requests.put(c.url + "/v1/buckets/" + name, json={"backend": "s3://wbsrc",
                                                          "write_policy": "write-back"})
    assert r.status_code == 201, r.text


def flush(c, bucket, want=201):
    r = requests.post(c.url + "/v1/jobs", json={"kind": "flush", "bucket": bucket}, timeout=30)
    assert r.status_code == want, r.text
    if want != 201:
        return None
    return requests.get("%s/v1/jobs/%s?wait=120" % (c.url, r.json()["id"]), timeout=150).json()


def backend_has(s3, key):
    try:
        return s3.client().get_object(Bucket="wbsrc", Key=key)["Body"].read()
    except s3.client().exceptions.NoSuchKey:
        return None


def test_write_back_survives_an_outage_and_kill9(s3, cl):
    wb_bucket(cl, "wb")
    data = {"ck/%02d" % i: os.urandom(i * 100003) for i in range(12)}
    data["ck/big"] = os.urandom(24 << 20)
    s3.stop()
    try:
        t0 = time.monotonic()
        for k, v in data.items():
            r = requests.put(obj(cl, "wb", k), data=v, timeout=30)
            assert r.status_code == 201, r.text
        assert time.monotonic() - t0 < 30     # never waited for the backend
        for k, v in data.items():
            assert requests.get(obj(cl, "wb", k), timeout=30).content == v
        # overwrites and deletes during the outage
        data["ck/01"] = b"the newest version"
        assert requests.put(obj(cl, "wb", "ck/01"), data=data["ck/01"]).status_code == 201
        assert requests.delete(obj(cl, "wb", "ck/02")).status_code == 204
        gone = data.pop("ck/02")
        assert requests.get(obj(cl, "wb", "ck/02")).status_code == 404
        # not yet written back: never evicted
        r = requests.delete(obj(cl, "wb", "ck/03") + "?evict")
        assert r.status_code == 409, r.text
        # every target killed: the queue is in their stores
        for t in cl.target_names():
            cl.sh("kill-node", t)
        for t in cl.target_names():
            cl.sh("start-node", t)
        for t in cl.target_names():
            cl.wait_healthy(t)
        for k, v in data.items():
            assert requests.get(obj(cl, "wb", k), timeout=30).content == v
        sp = requests.get(cl.url + "/v1/cluster/space").json()
        dirty = sum(m["dirty_bytes"] for t in sp["targets"] for m in t["mountpaths"])
        assert dirty == sum(len(v) for v in data.values()), dirty
        # what is owed is never dropped by destroying the bucket, unless forced
        r = requests.delete(cl.url + "/v1/buckets/wb")
        assert r.status_code == 409 and r.json()["owed"]["objects"] >= len(data), r.text
    finally:
        s3.start()
    j = flush(cl, "wb")
    assert j["state"] == "finished" and j["errors"] == 0, j
    assert j["done"] == j["owned"] >= len(data), j
    for k, v in data.items():
        assert backend_has(s3, k) == v, k
    assert backend_has(s3, "ck/02") is None and gone
    s = requests.get(cl.url + "/v1/buckets/wb/summary").json()
    assert s["dirty"] == {"objects": 0, "bytes": 0, "oldest_age_s": 0.0, "unreached": 0}, s
    # written back: an evict drops our copy now, and a GET reads it from the backend
    assert requests.delete(obj(cl, "wb", "ck/03") + "?evict").status_code == 204
    g = requests.get(obj(cl, "wb", "ck/03"), timeout=30)
    assert g.content == data["ck/03"] and g.headers["X-Shoal-Cache"] == "miss"


def test_flush_and_write_policy_checks(s3, cl):
    r = requests.put(cl.url + "/v1/buckets/wt", json={"backend": "s3://wtsrc"})
    assert r.status_code == 201
    flush(cl, "wt", 400)                 # writes through: nothing to flush
    assert requests.put(cl.url + "/v1/buckets/plain").status_code == 201
    flush(cl, "plain", 400)
    r = requests.patch(cl.url + "/v1/buckets/wt", json={"write_policy": "sometimes"})
    assert r.status_code == 400
    r = requests.put(cl.url + "/v1/buckets/origin", json={"backend": "http://127.0.0.1:1/x",
                                                          "write_policy": "write-back"})
    assert r.status_code == 400
    # a write-through bucket still waits for its backend
    s3.stop()
    try:
        r = requests.put(obj(cl, "wt", "x"), data=b"x", timeout=120)
        assert r.status_code in (502, 503), r.text
    finally:
        s3.start()
    # switched to write-back, the same bucket acknowledges at once; flush empties it
    assert requests.patch(cl.url + "/v1/buckets/wt",
                          json={"write_policy": "write-back"}).status_code == 200
    assert requests.put(obj(cl, "wt", "y"), data=b"y").status_code == 201
    j = flush(cl, "wt")
    assert j["state"] == "finished", j
    assert s3.client().get_object(Bucket="wtsrc", Key="y")["Body"].read() == b"y"
    assert requests.delete(cl.url + "/v1/buckets/wt").status_code == 204   # owes nothing


def test_multipart_checkpoint_writes_back(s3, cl):
    """boto3's multipart upload (how it writes anything big) into a
    write-back bucket: completed with the backend down, uploaded later."""
    import io

    import boto3
    from boto3.s3.transfer import TransferConfig
    from botocore.config import Config
    wb_bucket(cl, "mpwb")
    c = boto3.client("s3", endpoint_url=cl.url + "/s3", aws_access_key_id="AK",
                     aws_secret_access_key="SK", region_name="us-east-1",
                     config=Config(s3={"addressing_style": "path"}))
    body = os.urandom(20 << 20)
    tc = TransferConfig(multipart_threshold=8 << 20, multipart_chunksize=8 << 20)
    s3.stop()
    try:
        c.upload_fileobj(io.BytesIO(body), "mpwb", "step-100.pt", Config=tc)
        assert c.get_object(Bucket="mpwb", Key="step-100.pt")["Body"].read() == body
    finally:
        s3.start()
    j = flush(cl, "mpwb")
    assert j["state"] == "finished" and j["owned"] >= 1, j
    assert backend_has(s3, "step-100.pt") == body


def test_sigterm_with_drain_writes_back_first(s3):
    """drain: a target stopped with SIGTERM first sends what it owes (here
    uploads would otherwise wait a minute for the PUTs to go quiet)."""
    c = Cluster(targets=1, env=s3.env(), extra="--drain true --wbq_quiet_ms 60000")
    c.start()
    try:
        wb_bucket(c, "dr")
        data = {"drain/%d" % i: os.urandom(300000 + i) for i in range(6)}
        for k, v in data.items():
            assert requests.put(obj(c, "dr", k), data=v).status_code == 201
        owed = requests.get(c.url + "/v1/buckets/dr/summary").json()["dirty"]["objects"]
        assert owed >= 1, owed          # the uploader waits for quiet
        c.sh("stop-node", "t0")
        for k, v in data.items():
            assert backend_has(s3, k) == v, k
        log = open(os.path.join(c.data, "logs", "t0.log")).read()
        assert "drain: every write-back record is in its backend" in log
    finally:
        assert not c.cleanup()


def test_listing_shows_what_is_not_yet_written_back(s3):
    """A write-back bucket's listing is the backend's names and those only
    Shoal has yet (dirty), in name order, over pages of any size."""
    c = Cluster(targets=2, env=s3.env(), extra="--wbq_quiet_ms 60000")
    c.start()
    try:
        wb_bucket(c, "lw")
        for k in ("ls/1", "ls/3", "ls/5"):
            s3.client().put_object(Bucket="wbsrc", Key=k, Body=b"in the backend")
        assert requests.put(obj(c, "lw", "aa-first"), data=b"x").status_code == 201
        for k in ("ls/0", "ls/2", "ls/4", "ls/6"):
            assert requests.put(obj(c, "lw", k), data=b"only here").status_code == 201
        want = ["ls/%d" % i for i in range(7)]
        for limit in (1, 2, 3, 1000):
            names, dirty, token = [], set(), ""
            for _ in range(20):
                p = requests.get("%s/v1/buckets/lw/objects?prefix=ls/&limit=%d&token=%s"
                                 % (c.url, limit, token)).json()
                names += [o["name"] for o in p["objects"]]
                dirty |= {o["name"] for o in p["objects"] if o.get("dirty")}
                token = p["next"]
                if not token:
                    break
            assert names == want, (limit, names)
            assert dirty == {"ls/0", "ls/2", "ls/4", "ls/6"}, (limit, dirty)
        import boto3
        from botocore.config import Config
        b3 = boto3.client("s3", endpoint_url=c.url + "/s3", aws_access_key_id="AK",
                          aws_secret_access_key="SK", region_name="us-east-1",
                          config=Config(s3={"addressing_style": "path"}))
        keys = [o["Key"] for o in b3.list_objects_v2(Bucket="lw", Prefix="ls/")["Contents"]]
        assert keys == want
        # written back, then deleted here: gone from listings before the backend is told
        assert flush(c, "lw")["state"] == "finished"
        assert requests.delete(obj(c, "lw", "ls/2")).status_code == 204
        assert backend_has(s3, "ls/2") == b"only here"       # not told yet (no quiet moment)
        p = requests.get("%s/v1/buckets/lw/objects?prefix=ls/" % c.url).json()
        assert [o["name"] for o in p["objects"]] == [k for k in want if k != "ls/2"], p
        names, token = [], ""     # a page of only that name goes on to the next
        for _ in range(20):
            p = requests.get("%s/v1/buckets/lw/objects?prefix=ls/&limit=1&token=%s"
                             % (c.url, token)).json()
            names += [o["name"] for o in p["objects"]]
            token = p["next"]
            if not token:
                break
        assert names == [k for k in want if k != "ls/2"], names
        assert requests.get(obj(c, "lw", "ls/2")).status_code == 404
    finally:
        assert not c.cleanup()


def test_uploads_go_on_while_puts_keep_coming(s3):
    """Uploads wait for a quiet moment, but not longer than wbq_defer_max_s:
    under a steady stream of PUTs the backend still fills up."""
    c = Cluster(targets=1, env=s3.env(), extra="--wbq_defer_max_s 1 --wbq_workers 2")
    c.start()
    try:
        wb_bucket(c, "steady")
        t0, i = time.monotonic(), 0
        while time.monotonic() - t0 < 6:
            assert requests.put(obj(c, "steady", "s/%03d" % i), data=b"x" * 1000).status_code == 201
            i += 1
            time.sleep(0.05)
        got = sum(backend_has(s3, "s/%03d" % k) is not None for k in range(i))
        assert got > i // 2, (got, i)   # not two objects per deferral
    finally:
        assert not c.cleanup()


def test_large_objects_are_written_back_in_parts(s3):
    """Over wbq_multipart_mb an object goes to the backend as a multipart
    upload (parts of wbq_part_mb from its file), whole and byte for byte."""
    c = Cluster(targets=1, env=s3.env(), extra="--wbq_multipart_mb 8 --wbq_part_mb 5")
    c.start()
    try:
        wb_bucket(c, "mp")
        big, small = os.urandom((21 << 20) + 5), os.urandom(1 << 20)
        assert requests.put(obj(c, "mp", "parts/big"), data=big).status_code == 201
        assert requests.put(obj(c, "mp", "parts/small"), data=small).status_code == 201
        j = flush(c, "mp")
        assert j["state"] == "finished", j
        assert backend_has(s3, "parts/big") == big and backend_has(s3, "parts/small") == small
        log = s3.requests()
        assert any(x.startswith("POST /wbsrc/parts/big?uploads") for x in log), log[-5:]
        assert sum(x.startswith("PUT /wbsrc/parts/big?partNumber=") for x in log) == 5
        assert not any(x.startswith("POST /wbsrc/parts/small?uploads") for x in log)
    finally:
        assert not c.cleanup()


def test_owed_copies_move_with_a_rebalance(s3):
    """Objects acknowledged but not yet written back move to a target that
    joins, their obligation with them: once the backend is back, a flush
    ends and the backend holds every one of them."""
    c = Cluster(targets=3, spare=1, env=s3.env())
    c.start()
    try:
        wb_bucket(c, "wbm")
        data = {"mv/%03d" % i: os.urandom(5000 + i) for i in range(120)}
        s3.stop()
        try:
            for k, v in data.items():
                assert requests.put(obj(c, "wbm", k), data=v).status_code == 201
            c.sh("start-node", "t3")
            m = c.wait_map(lambda m: sum(n["role"] == "target" and n["state"] == "active"
                                         for n in m["nodes"]) == 4)
            jid = "ba1a%028x" % m["version"]
            end = time.time() + 60
            while time.time() < end:
                j = requests.get("%s/v1/jobs/%s" % (c.url, jid)).json()
                if j.get("state") not in (None, "running"):
                    break
                time.sleep(0.3)
            # (on a loaded machine a move may time out and be left to the
            # next walk: the job says failed; every object must still read
            # back and reach the backend, below)
            assert j["state"] in ("finished", "failed") and j["moved"] > 10, j
            for k, v in data.items():
                assert requests.get(obj(c, "wbm", k)).content == v
        finally:
            s3.start()
        f = flush(c, "wbm")
        assert f["state"] == "finished", f
        for k, v in data.items():
            assert backend_has(s3, k) == v, k
    finally:
        assert not c.cleanup()
