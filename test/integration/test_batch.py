"""GetBatch: POST /v1/batch answers one archive of many entries (objects and
archive members, across buckets and targets) in the order asked; missing
entries, continue-on-error, the manifest, bad requests, a lost target, and
a batch of 100,000 entries with bounded memory."""
import io
import json
import os
import random
import signal
import subprocess
import tarfile
import time
import zipfile

import pytest
import requests

from conftest import (Cluster, make_tar, mkbucket, put_object as put, running_cluster,
                      running_s3rver)


@pytest.fixture(scope="module")
def s3():
    yield from running_s3rver("remote")


@pytest.fixture(scope="module")
def c(s3):
    yield from running_cluster(targets=3, mountpaths=1, env=s3.env())






def batch(c, req, stream=False, method="POST"):
    return c.http.request(method, c.url + "/v1/batch", data=json.dumps(req), stream=stream)


def members(content, mode="r:"):
    out = []
    with tarfile.open(fileobj=io.BytesIO(content), mode=mode) as t:
        for m in t:
            out.append((m.name, t.extractfile(m).read()))
    return out




def test_entries_in_order_across_buckets_and_targets(c):
    b1, b2 = mkbucket(c), mkbucket(c, {"mirror": {"copies": 2}})
    objs = {}
    for i in range(60):
        b = b1 if i % 3 else b2
        data = os.urandom(random.randrange(0, 30000))
        put(c, b, "o/%03d" % i, data)
        objs[(b, "o/%03d" % i)] = data
    order = list(objs)
    random.shuffle(order)
    req = {"entries": [{"bucket": b, "name": n} for b, n in order]}
    r = batch(c, req)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "application/x-tar"
    got = members(r.content)
    assert [n for n, _ in got] == ["%s/%s" % k for k in order]
    assert all(d == objs[k] for (_, d), k in zip(got, order))
    # GET with the same body, names without the bucket
    req["names"] = "name-only"
    r = batch(c, req, method="GET")
    assert r.status_code == 200 and [n for n, _ in members(r.content)] == [n for _, n in order]


def test_large_entries_whole_in_every_output(c):
    """Entries of several MiB, local and from peers, leave in pieces of many
    chains: every byte in its place in each output kind."""
    b = mkbucket(c)
    objs = []
    for i in range(6):
        data = os.urandom(3 * 1024 * 1024 + 4097 * i) if i % 2 == 0 else os.urandom(i * 1000)
        put(c, b, "L/%d" % i, data)
        objs.append(("L/%d" % i, data))
    req = {"entries": [{"bucket": b, "name": n} for n, _ in objs] +
                      [{"bucket": b, "name": "L/0", "start": 1000, "length": 2 * 1024 * 1024}]}
    want = [d for _, d in objs] + [objs[0][1][1000:1000 + 2 * 1024 * 1024]]
    r = batch(c, req)
    assert r.status_code == 200, r.text
    assert [d for _, d in members(r.content)] == want
    r = batch(c, dict(req, output=".tar.gz"))
    assert r.status_code == 200 and [d for _, d in members(r.content, "r:gz")] == want
    r = batch(c, dict(req, output=".zip"))
    assert r.status_code == 200
    z = zipfile.ZipFile(io.BytesIO(r.content))
    assert [z.read(i) for i in z.infolist()] == want


def test_ranges_members_and_outputs(c):
    b = mkbucket(c)
    data = os.urandom(100000)
    put(c, b, "big", data)
    shard = {"s/1.jpg": os.urandom(5000), "s/1.cls": b"3"}
    put(c, b, "shard.tar", make_tar(shard))
    put(c, b, "shard.tar.gz", gz(make_tar(shard)))
    entries = [{"bucket": b, "name": "big", "start": 10, "length": 100},
               {"bucket": b, "name": "big", "start": 99990},
               {"bucket": b, "name": "shard.tar", "archpath": "s/1.jpg"},
               {"bucket": b, "name": "shard.tar.gz", "archpath": "s/1.cls"},
               {"bucket": b, "name": "big", "length": 0}]
    want = [data[10:110], data[99990:], shard["s/1.jpg"], b"3", b""]
    r = batch(c, {"entries": entries})
    assert r.status_code == 200, r.text
    got = members(r.content)
    assert [d for _, d in got] == want
    assert got[2][0] == "%s/shard.tar/s/1.jpg" % b
    r = batch(c, {"entries": entries, "output": ".tar.gz"})
    assert r.status_code == 200 and r.headers["Content-Type"] == "application/gzip"
    assert [d for _, d in members(r.content, "r:gz")] == want
    r = batch(c, {"entries": entries, "output": ".zip"})
    assert r.status_code == 200 and r.headers["Content-Type"] == "application/zip"
    z = zipfile.ZipFile(io.BytesIO(r.content))
    assert [z.read(i) for i in z.infolist()] == want     # by entry: the names repeat


def gz(data):
    import gzip
    return gzip.compress(data)


def test_missing_entries(c):
    b = mkbucket(c)
    put(c, b, "here", b"present")
    entries = [{"bucket": b, "name": "here"}, {"bucket": b, "name": "gone"},
               {"bucket": b, "name": "here", "archpath": "x"}]
    r = batch(c, {"entries": entries[:2]}, stream=True)
    assert r.status_code == 200     # the first entry went: the answer is cut
    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        r.content
    r = batch(c, {"entries": [entries[1]]})
    assert r.status_code == 404 and "gone" in r.text
    r = batch(c, {"entries": entries, "continue_on_error": True, "manifest": True})
    assert r.status_code == 200, r.text
    got = members(r.content)
    assert [n for n, _ in got] == ["%s/here" % b, "__404__/%s/gone" % b, "__404__/%s/here/x" % b,
                                   "__manifest__.json"]
    assert got[0][1] == b"present" and got[1][1] == b"" and got[2][1] == b""
    man = json.loads(got[3][1])
    assert [(e["name"], e["status"], e["size"]) for e in man] == \
        [("here", 200, 7), ("gone", 404, 0), ("here", 400, 0)]


def data_files(c):
    """Every object data file of the cluster's targets: path -> size."""
    out = {}
    for d, _, fs in os.walk(c.data):
        if os.sep + "data" in d:
            out.update({os.path.join(d, f): os.path.getsize(os.path.join(d, f)) for f in fs})
    return out


def test_damaged_large_entries_are_never_sent(c):
    """Large entries leave with sendfile once their blocks are checked, and
    a batch that read them remembers them as checked: a data file flipped
    after that is caught all the same, its entry never sent (500 in the
    manifest, an empty marked member); small entries read from their
    records keep their ranges."""
    b = mkbucket(c)
    before = data_files(c)
    big = {"d/%d" % i: os.urandom(300000 + i) for i in range(6)}   # sizes tell them apart
    for n, d in big.items():
        put(c, b, n, d)
    small = os.urandom(5000)
    put(c, b, "d/small", small)
    where = {size: path for path, size in data_files(c).items() if path not in before}
    entries = [{"bucket": b, "name": n} for n in big] + \
              [{"bucket": b, "name": "d/small", "start": 100, "length": 1000},
               {"bucket": b, "name": "d/small", "start": 4000}]
    want = list(big.values()) + [small[100:1100], small[4000:]]
    r = batch(c, {"entries": entries})
    assert r.status_code == 200, r.text
    assert [d for _, d in members(r.content)] == want
    for i in (0, 3):
        with open(where[300000 + i], "r+b") as f:
            f.seek(123456)
            old = f.read(16)
            f.seek(123456)
            f.write(bytes(x ^ 0xff for x in old))
    r = batch(c, {"entries": entries, "continue_on_error": True, "manifest": True})
    assert r.status_code == 200, r.text
    got = members(r.content)
    man = json.loads(got[-1][1])
    assert [e["status"] for e in man] == [500, 200, 200, 500, 200, 200, 200, 200]
    for i, (name, data) in enumerate(got[:-1]):
        if i in (0, 3):
            assert name == "__404__/%s/d/%d" % (b, i) and data == b""
        else:
            assert data == want[i], i
    r = batch(c, {"entries": entries[3:4]})
    assert r.status_code == 500 and "checksum" in r.text, r.text


def open_fds(c):
    return sum(len(os.listdir("/proc/%d/fd" % c.pid(t))) for t in c.target_names())


def test_a_client_leaving_mid_batch_leaves_no_file_open(c):
    """Large entries wait for the client as open files: a client that goes
    away mid-answer leaves none of them open on any target."""
    b = mkbucket(c)
    for i in range(12):
        put(c, b, "f/%d" % i, os.urandom(400000))
    entries = [{"bucket": b, "name": "f/%d" % (i % 12)} for i in range(600)]
    base = open_fds(c)
    for _ in range(4):
        r = batch(c, {"entries": entries}, stream=True)
        assert r.status_code == 200
        assert len(r.raw.read(3 << 20)) == 3 << 20
        r.close()
    for _ in range(100):
        if open_fds(c) <= base + 3:
            break
        time.sleep(0.1)
    assert open_fds(c) <= base + 3, (base, open_fds(c))
    r = batch(c, {"entries": entries[:24]})
    assert r.status_code == 200 and len(members(r.content)) == 24


def test_cold_entries_of_a_backed_bucket(c, s3):
    s3.client().put_object(Bucket="remote", Key="cb/one", Body=b"cold one")
    s3.client().put_object(Bucket="remote", Key="cb/two", Body=b"cold two")
    # the bucket joins the cluster on first use
    assert c.http.get(c.url + "/v1/objects/remote/cb/one?provider=s3").content == b"cold one"
    r = batch(c, {"entries": [{"bucket": "remote", "provider": "s3", "name": "cb/two"},
                              {"bucket": "remote", "provider": "s3", "name": "cb/one"}]})
    assert r.status_code == 200, r.text
    assert [d for _, d in members(r.content)] == [b"cold two", b"cold one"]


def test_bad_requests(c):
    b = mkbucket(c)
    for body, code in ((b"not json", 400), (b"{}", 400), (b'{"entries": []}', 400),
                       (b'{"entries": [{"bucket": "x"}]}', 400),
                       (b'{"entries": [{"bucket": "%s", "name": "a", "colour": 1}]}' % b.encode(), 400),
                       (b'{"entries": [{"bucket": "%s", "name": "a"}], "output": ".rar"}' % b.encode(), 400),
                       (b'{"entries": [{"bucket": "%s", "name": "a", "start": -1}]}' % b.encode(), 400),
                       (b'{"entries": [{"bucket": "%s", "name": "a", "archpath": "../x"}]}' % b.encode(), 400),
                       (b'{"entries": [{"bucket": "nosuchbucket", "name": "a"}]}', 404)):
        r = c.http.post(c.url + "/v1/batch", data=body)
        assert r.status_code == code, (body, r.text)
    assert c.http.put(c.url + "/v1/batch", data=b"{}").status_code == 405
    # a tampered body after the proxy's redirect
    req = {"entries": [{"bucket": b, "name": "a"}]}
    r = c.http.post(c.url + "/v1/batch", data=json.dumps(req), allow_redirects=False)
    assert r.status_code == 307
    other = {"entries": [{"bucket": b, "name": "b"}]}
    r = requests.post(r.headers["Location"], data=json.dumps(other))
    assert r.status_code == 403 and "authorized" in r.text


def test_a_hundred_thousand_entries(c):
    b = mkbucket(c)
    for i in range(50):
        put(c, b, "t/%02d" % i, b"%02d" % i * 50)
    n = 100000
    req = {"entries": [{"bucket": b, "name": "t/%02d" % (i % 50)} for i in range(n)],
           "names": "name-only"}
    r = batch(c, req, stream=True)
    assert r.status_code == 200
    count = 0
    with tarfile.open(fileobj=r.raw, mode="r|") as t:
        for m in t:
            want = b"%02d" % (count % 50) * 50
            assert m.name == "t/%02d" % (count % 50) and t.extractfile(m).read() == want
            count += 1
    assert count == n


def test_target_lost_mid_batch_cuts_the_answer(s3):
    cl = Cluster(targets=2, mountpaths=1).start()
    try:
        b = mkbucket(cl)
        data = os.urandom(1 << 20)
        for i in range(40):
            put(cl, b, "l/%02d" % i, data)
        req = {"entries": [{"bucket": b, "name": "l/%02d" % (i % 40)} for i in range(2000)]}
        r = cl.http.post(cl.url + "/v1/batch", data=json.dumps(req), allow_redirects=False)
        assembler = r.json()["target"]
        r = cl.http.post(cl.url + "/v1/batch", data=json.dumps(req), stream=True)
        assert r.status_code == 200
        it = r.iter_content(1 << 16)
        next(it)
        other = [n for n in ("t0", "t1") if n != assembler][0]
        os.kill(cl.pid(other), signal.SIGKILL)
        with pytest.raises(requests.exceptions.ChunkedEncodingError):
            for _ in it:
                pass
    finally:
        cl.cleanup()



def test_cli_batch(c, tmp_path):
    """`shoal batch`: a list of entries (plain and JSON lines) to an archive
    file or extracted into a directory; a cut answer keeps nothing."""
    from conftest import BUILD, ROOT
    shoal = os.path.join(ROOT, BUILD, "bin", "shoal")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SHOAL_", "AWS_"))}
    env["SHOAL_ENDPOINT"] = c.url
    b = mkbucket(c)
    put(c, b, "x/one", b"first object")
    put(c, b, "s.tar", make_tar({"m/a.txt": b"member a", "m/b.txt": b"member b"}))
    lst = tmp_path / "list"
    lst.write_text("# a comment\n%s/x/one\n%s/s.tar\tm/b.txt\n\n"
                   '{"bucket": "%s", "name": "x/one", "start": 6}\n' % (b, b, b))
    out = tmp_path / "out.tar"
    p = subprocess.run([shoal, "batch", "-o", str(out), str(lst)], env=env, capture_output=True)
    assert p.returncode == 0, p.stderr
    got = members(out.read_bytes())
    assert got == [("%s/x/one" % b, b"first object"), ("%s/s.tar/m/b.txt" % b, b"member b"),
                   ("%s/x/one" % b, b"object")]
    d = tmp_path / "ex"
    p = subprocess.run([shoal, "batch", "-x", str(d), "--name-only"], input=lst.read_bytes(),
                       env=env, capture_output=True)
    assert p.returncode == 0, p.stderr
    assert (d / "s.tar" / "m" / "b.txt").read_bytes() == b"member b"
    # a missing entry after the first: the answer is cut, nothing is kept
    lst.write_text("%s/x/one\n%s/x/nope\n" % (b, b))
    bad = tmp_path / "bad.tar"
    p = subprocess.run([shoal, "batch", "-o", str(bad), str(lst)], env=env, capture_output=True)
    assert p.returncode == 1 and not bad.exists() and not (tmp_path / "bad.tar.partial").exists()
    # a malformed line: a usage error naming it, nothing sent
    lst.write_text("%s/x/one\nno-slash-here\n" % b)
    p = subprocess.run([shoal, "batch", "-o", str(bad), str(lst)], env=env, capture_output=True)
    assert p.returncode == 2 and b":2:" in p.stderr
