"""The `shoal` command-line client against real clusters on loopback.

Buckets, objects (byte-identical through files, stdin and stdout, with a
bounded memory footprint), paged listings, batch jobs against an
s3rver-backed bucket, the exit statuses a script relies on (0, 1, 2, 3, 4,
5), --json output, --help everywhere, the progress line in a pseudo-terminal
and in a pipe, and copy and download jobs (from an HTTP origin on
loopback).
"""
import hashlib
import http.server
import json
import os
import pty
import re
import select
import stat
import subprocess
import threading
import time

import pytest
import requests

from conftest import (BUILD, ROOT, SANITIZED, SigV4, free_port_block, running_cluster,
                      running_s3rver)

SHOAL = os.path.join(ROOT, BUILD, "bin", "shoal")
AK, SK = "CLIKEY01", "cli-secret-0123456"


def clean_env(url, **extra):
    """The environment of one run: no SHOAL_* or AWS_* of the caller's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SHOAL_", "AWS_"))}
    env["SHOAL_ENDPOINT"] = url
    env.update(extra)
    return env


def shoal(c, *args, ok=True, data=None, env=None, timeout=60):
    """Run shoal against cluster c (or a URL); bytes out. ok: exit 0 expected."""
    url = c if isinstance(c, str) else c.url
    p = subprocess.run([SHOAL, *args], env=env or clean_env(url), input=data,
                       capture_output=True, timeout=timeout)
    if ok:
        assert p.returncode == 0, (args, p.returncode, p.stderr.decode(errors="replace"))
    return p


def sjson(c, *args, **kw):
    """shoal ... --json: stdout is exactly one JSON document."""
    p = shoal(c, *args, "--json", **kw)
    return json.loads(p.stdout)


@pytest.fixture(scope="module")
def s3():
    yield from running_s3rver("clisrc")


@pytest.fixture(scope="module")
def cl(s3):
    yield from running_cluster(env=s3.env())


@pytest.fixture
def bkt(cl):
    name = "cli%06d" % (time.monotonic_ns() % 10**6)
    assert cl.http.put(cl.url + "/v1/buckets/" + name).status_code == 201
    yield name
    cl.http.delete(cl.url + "/v1/buckets/" + name)


def dead_url():
    """A loopback port nothing listens on."""
    return "http://127.0.0.1:%d" % free_port_block(1)


# ---- help and usage ------------------------------------------------------------------

COMMANDS = [["cluster", "show"], ["bucket", "ls"], ["bucket", "create"], ["bucket", "rm"],
            ["bucket", "props"], ["bucket", "set"], ["bucket", "summary"], ["ls"], ["get"],
            ["put"], ["rm"], ["job", "start"], ["job", "ls"], ["job", "show"], ["job", "wait"],
            ["job", "stop"], ["node", "maintenance"], ["node", "decommission"]]


def test_help_everywhere():
    top = shoal(dead_url(), "--help")
    text = top.stdout.decode()
    for words in COMMANDS:
        assert "shoal " + " ".join(words) in text, words
    for code in ("0  success", "1  the operation failed", "2  usage error",
                 "3  the endpoint", "4  the cluster refused the credentials", "5  job wait"):
        assert code in text, code
    for words in COMMANDS:
        for flag in ("--help", "-h"):
            p = shoal(dead_url(), *words, flag)
            out = p.stdout.decode()
            assert out.startswith("usage: shoal " + " ".join(words)), (words, out)
            assert "Common options" in out and p.stderr == b""
    for group in ("cluster", "bucket", "job"):
        p = shoal(dead_url(), group, "--help")
        assert "usage:" in p.stdout.decode() and ("shoal %s " % group) in p.stdout.decode()
    # options a command takes are listed in its help, others are not
    h = shoal(dead_url(), "job", "start", "--help").stdout.decode()
    assert "--template" in h and "--dry-run" in h and "--limit" not in h
    # no command at all is a usage error, with the help on stderr
    p = shoal(dead_url(), ok=False)
    assert p.returncode == 2 and b"usage: shoal" in p.stderr and p.stdout == b""


@pytest.mark.parametrize("args", [
    ["frobnicate"], ["bucket", "frob"], ["bucket", "create"], ["bucket", "create", "a", "b"],
    ["bucket", "create", "x", "--nope"], ["bucket", "create", "x", "--props", "[1,2]"],
    ["bucket", "create", "x", "--props", "{bad"], ["bucket", "set", "x", "novalue"],
    ["bucket", "summary", "x", "--prefix", "a", "--template", "b{1..2}"],
    ["ls", "x", "--limit", "0"], ["ls", "x", "--limit", "many"], ["get", "x"],
    ["get", "x/y", "-", "--json"], ["put", "-", "x"], ["rm", "x"], ["job", "start", "prefetch"],
    ["job", "start", "prefetch", "x", "--prefix", "a", "--names", "b"],
    ["job", "start", "copy", "x"], ["job", "start", "download", "x"],
    ["job", "wait", "id", "--timeout", "soon"], ["job", "ls", "--prefix", "p"],
    ["bucket", "ls", "--endpoint", "https://127.0.0.1:1/x"], ["bucket", "ls", "--endpoint", "ftp://x"],
    ["bucket", "ls", "--endpoint", "https://127.0.0.1:1", "--ca", "/nonexistent/ca.pem"],
    ["bucket", "ls", "--access-key", "AK"], ["-x"],
])
def test_usage_errors_exit_2(args):
    """Refused before any request (the endpoint is dead: a request would be 3)."""
    p = shoal(dead_url(), *args, ok=False)
    assert p.returncode == 2, (args, p.returncode, p.stderr)
    assert p.stderr.startswith(b"shoal: ") and p.stdout == b""


def test_unreachable_exit_3():
    url = dead_url()
    p = shoal(url, "bucket", "ls", ok=False)
    assert p.returncode == 3
    assert p.stderr.decode().strip() == "shoal: cannot reach %s: connection refused" % url
    p = shoal(url, "cluster", "show", "--json", ok=False)
    assert p.returncode == 3 and json.loads(p.stdout) == {
        "error": "cannot reach %s: connection refused" % url, "status": 0}
    # the flag overrides the environment
    p = shoal(url, "ls", "--endpoint", dead_url(), ok=False)
    assert p.returncode == 3 and url.encode() not in p.stderr


# ---- buckets ----------------------------------------------------------------------------

def test_bucket_lifecycle(cl):
    name = "clib%06d" % (time.monotonic_ns() % 10**6)
    out = shoal(cl, "bucket", "create", name, "--props", '{"labels": {"team": "a"}}')
    assert out.stdout.decode().strip() == "created bucket " + name
    assert cl.http.get(cl.url + "/v1/buckets/%s?props" % name).json()["props"]["labels"] == {
        "team": "a"}
    again = shoal(cl, "bucket", "create", name, ok=False)
    assert again.returncode == 1 and b"(409)" in again.stderr and b"already exists" in again.stderr
    listed = shoal(cl, "bucket", "ls").stdout.decode()
    assert re.search(r"^%s\s+shoal\s" % name, listed, re.M), listed
    assert name in [b["name"] for b in sjson(cl, "bucket", "ls")["buckets"]]
    assert sjson(cl, "bucket", "props", name)["props"]["labels"] == {"team": "a"}
    # set: JSON values as JSON, anything else as a string
    out = shoal(cl, "bucket", "set", name, "validate_warm_get=true", 'labels={"team": "b"}')
    assert "validate_warm_get: true" in out.stdout.decode()
    props = cl.http.get(cl.url + "/v1/buckets/%s?props" % name).json()["props"]
    assert props["validate_warm_get"] is True and props["labels"] == {"team": "b"}
    bad = shoal(cl, "bucket", "set", name, "colour=blue", ok=False)
    assert bad.returncode == 1 and b"(400)" in bad.stderr and b"colour" in bad.stderr
    # summary of what is held, whole, by prefix and by template
    for i in range(3):
        cl.http.put(cl.url + "/v1/objects/%s/s/o%d" % (name, i), data=b"z" * 100)
    s = sjson(cl, "bucket", "summary", name)
    assert s["objects"] == {"present": 3, "total": 3} and s["bytes"]["total"] == 300
    assert sjson(cl, "bucket", "summary", name, "--prefix", "s/o1")["objects"]["total"] == 1
    t = sjson(cl, "bucket", "summary", name, "--template", "s/o{0..5}")
    assert t["objects"]["present"] == 3 and t.get("selected") == 6, t
    human = shoal(cl, "bucket", "summary", name).stdout.decode()
    assert "3 of 3 held (100.0%)" in human and "300 B of 300 B" in human
    # rm: gone, and a second rm is the cluster's 404
    assert shoal(cl, "bucket", "rm", name).stdout.decode().strip() == "removed bucket " + name
    assert cl.http.head(cl.url + "/v1/buckets/" + name).status_code == 404
    gone = shoal(cl, "bucket", "rm", name, ok=False)
    assert gone.returncode == 1 and b"(404)" in gone.stderr


def test_create_with_backend(cl, s3):
    name = "clibk%06d" % (time.monotonic_ns() % 10**6)
    shoal(cl, "bucket", "create", name, "--backend", "s3://clisrc")
    assert sjson(cl, "bucket", "props", name)["props"]["backend"] == "s3://clisrc"
    s3.client().put_object(Bucket="clisrc", Key="via/backend", Body=b"from the cloud")
    assert shoal(cl, "get", name + "/via/backend", "-").stdout == b"from the cloud"
    shoal(cl, "bucket", "rm", name)


def test_not_found_exit_1(cl):
    p = shoal(cl, "bucket", "props", "no-such-bucket", ok=False)
    assert p.returncode == 1
    assert p.stderr.decode().strip() == (
        "shoal: reading bucket 'no-such-bucket' failed (404): bucket 'no-such-bucket' not found")
    p = shoal(cl, "ls", "no-such-bucket", "--json", ok=False)
    assert p.returncode == 1 and json.loads(p.stdout)["status"] == 404


# ---- objects ------------------------------------------------------------------------------

def test_put_get_files_stdin_stdout(cl, bkt, tmp_path):
    data = os.urandom(3 * 1024 * 1024 + 17)
    src = tmp_path / "src.bin"
    src.write_bytes(data)
    out = shoal(cl, "put", str(src), bkt + "/dir/a.bin").stdout.decode()
    v = cl.http.head(cl.url + "/v1/objects/%s/dir/a.bin" % bkt,
                     allow_redirects=True).headers["X-Shoal-Version"]
    assert "-> %s/dir/a.bin (3.0 MiB, version %s)" % (bkt, v) in out
    assert cl.http.get(cl.url + "/v1/objects/%s/dir/a.bin" % bkt).content == data
    dst = tmp_path / "dst.bin"
    shoal(cl, "get", bkt + "/dir/a.bin", str(dst))
    assert dst.read_bytes() == data
    # into a directory: the name's last segment; the default is the current directory
    d = tmp_path / "d"
    d.mkdir()
    shoal(cl, "get", bkt + "/dir/a.bin", str(d))
    assert (d / "a.bin").read_bytes() == data
    # stdin (a pipe: spooled) and stdout
    info = sjson(cl, "put", "-", bkt + "/piped", data=data)
    assert info["size"] == len(data) and info["name"] == "piped"
    assert shoal(cl, "get", bkt + "/piped", "-").stdout == data
    # BUCKET/ puts under the file's own name; --json of a get describes it
    shoal(cl, "put", str(src), bkt + "/under/")
    g = sjson(cl, "get", bkt + "/under/src.bin", str(tmp_path / "again"))
    assert g["size"] == len(data) and g["checksum"].startswith("xxh3-64:")
    assert (tmp_path / "again").read_bytes() == data
    # an empty object, a name that needs encoding
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    shoal(cl, "put", str(empty), bkt + "/sp ace/ü?x=1")
    assert shoal(cl, "get", bkt + "/sp ace/ü?x=1", "-").stdout == b""
    names = [o["name"] for o in sjson(cl, "ls", bkt)["objects"]]
    assert "sp ace/ü?x=1" in names
    # a failed GET leaves no file, not even a partial one
    miss = tmp_path / "m"
    miss.mkdir()
    p = shoal(cl, "get", bkt + "/missing", str(miss / "x"), ok=False)
    assert p.returncode == 1 and b"(404)" in p.stderr and os.listdir(miss) == []
    # an unreadable source is the client's failure (1), nothing is sent
    p = shoal(cl, "put", str(tmp_path / "nope"), bkt + "/nope", ok=False)
    assert p.returncode == 1 and b"cannot read" in p.stderr
    assert cl.http.get(cl.url + "/v1/objects/%s/nope" % bkt).status_code == 404


def test_get_into_devices_and_fifos(cl, bkt, tmp_path):
    """A destination that exists and is not a regular file is written into,
    never replaced: a device node stays the device, a FIFO's reader gets
    the bytes. A regular file is still replaced whole, by a rename. The
    device is a node made here like /dev/null, not the machine's own."""
    data = os.urandom(256 * 1024 + 3)
    shoal(cl, "put", "-", bkt + "/dev.bin", data=data)
    if os.geteuid() == 0:
        null = tmp_path / "null"
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        shoal(cl, "get", bkt + "/dev.bin", str(null))
        st = os.stat(null)
        assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)
        assert os.listdir(tmp_path) == ["null"]          # no temporary file beside it
        os.unlink(null)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []

    def drain():
        with open(fifo, "rb") as f:
            got.append(f.read())
    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    shoal(cl, "get", bkt + "/dev.bin", str(fifo))
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    reader.join(30)
    assert got == [data]
    # a regular file: a new inode with the whole body, nothing left beside it
    reg = tmp_path / "reg"
    reg.write_bytes(b"old contents")
    ino = os.stat(reg).st_ino
    shoal(cl, "get", bkt + "/dev.bin", str(reg))
    assert reg.read_bytes() == data and os.stat(reg).st_ino != ino
    assert sorted(os.listdir(tmp_path)) == ["fifo", "reg"]


def limited(mib):
    """preexec_fn: at most mib MiB of data (heap and private mappings)."""
    import resource
    return lambda: resource.setrlimit(resource.RLIMIT_DATA, (mib << 20, mib << 20))


@pytest.mark.skipif(SANITIZED, reason="the sanitizers' shadow memory needs more than the limit")
def test_big_objects_stream(cl, bkt, tmp_path):
    """48 MiB up and down, from and to files and pipes, under a 16 MiB
    limit on data: bodies stream, never held whole."""
    src = tmp_path / "big"
    with open(src, "wb") as f:
        for _ in range(48):
            f.write(os.urandom(1 << 20))
    want = hashlib.sha256(src.read_bytes()).hexdigest()
    run = lambda *args, **kw: subprocess.run([SHOAL, *args], env=clean_env(cl.url),
                                             preexec_fn=limited(16), capture_output=True,
                                             timeout=120, **kw)
    assert run("put", str(src), bkt + "/big").returncode == 0
    assert run("get", bkt + "/big", str(tmp_path / "back")).returncode == 0
    assert hashlib.sha256((tmp_path / "back").read_bytes()).hexdigest() == want
    with open(src, "rb") as f:
        assert run("put", "-", bkt + "/big2", stdin=f).returncode == 0
    p = run("get", bkt + "/big2", "-")
    assert p.returncode == 0 and hashlib.sha256(p.stdout).hexdigest() == want
    # the limit is real: a client that held 48 MiB could not run under it
    p = subprocess.run(["python3", "-c", "b = bytearray(48 << 20)"], preexec_fn=limited(16),
                       capture_output=True, timeout=60)
    assert p.returncode != 0 and b"MemoryError" in p.stderr


def test_ls_pages_and_rm(cl, bkt):
    for i in range(23):
        cl.http.put(cl.url + "/v1/objects/%s/pg/%03d" % (bkt, i), data=b"x" * i)
    cl.http.put(cl.url + "/v1/objects/%s/other" % bkt, data=b"o")
    # pages of 5: every name once, in order
    lines = shoal(cl, "ls", bkt + "/pg/", "--limit", "5").stdout.decode().splitlines()
    assert lines[0].split() == ["SIZE", "CACHED", "NAME"]
    rows = [ln.split() for ln in lines[1:-1]]
    assert [r[2] for r in rows] == ["pg/%03d" % i for i in range(23)]
    assert all(r[0] == str(int(r[2][3:])) and r[1] == "yes" for r in rows)
    assert lines[-1] == "23 objects, %d B" % sum(range(23))
    objs = sjson(cl, "ls", bkt, "--limit", "4")["objects"]
    assert len(objs) == 24 and objs[-1]["name"] == "pg/022" and objs[0]["name"] == "other"
    # ls with no bucket lists the buckets
    assert bkt in shoal(cl, "ls").stdout.decode()
    # rm: gone; again: the cluster's 404
    assert shoal(cl, "rm", bkt + "/pg/007").stdout.decode().strip() == "removed %s/pg/007" % bkt
    assert cl.http.get(cl.url + "/v1/objects/%s/pg/007" % bkt).status_code == 404
    again = shoal(cl, "rm", bkt + "/pg/007", ok=False)
    assert again.returncode == 1 and b"(404)" in again.stderr
    assert len(sjson(cl, "ls", bkt + "/pg/", "--limit", "7")["objects"]) == 22


# ---- jobs ----------------------------------------------------------------------------------

def seed(s3, prefix, n, size=2000):
    data = {"%s%03d" % (prefix, i): os.urandom(size + i) for i in range(n)}
    for k, v in data.items():
        s3.client().put_object(Bucket="clisrc", Key=k, Body=v)
    return data


def test_prefetch_wait_json(cl, s3):
    data = seed(s3, "pfw/", 12)
    j = sjson(cl, "job", "start", "prefetch", "clisrc", "--provider", "s3", "--prefix", "pfw/",
              "--wait")
    assert j["state"] == "finished" and j["fetched"] == 12 and j["errors"] == 0, j
    assert j["bytes"] == sum(len(v) for v in data.values())
    s = sjson(cl, "bucket", "summary", "clisrc", "--provider", "s3", "--prefix", "pfw/")
    assert s["cached_pct"] == 100
    listed = sjson(cl, "ls", "clisrc/pfw/", "--provider", "s3", "--cached")["objects"]
    assert len(listed) == 12 and all(o["cached"] for o in listed)
    # by names, with a key: the second start answers the same job
    first = sjson(cl, "job", "start", "evict", "clisrc", "--provider", "s3", "--names",
                  "pfw/000,pfw/001", "--key", "cli-k1")
    second = sjson(cl, "job", "start", "evict", "clisrc", "--provider", "s3", "--names",
                   "pfw/000,pfw/001", "--key", "cli-k1")
    assert first["id"] == second["id"]
    human = shoal(cl, "job", "wait", first["id"]).stdout.decode()
    assert re.search(r"^job %s  evict  s3://clisrc  finished$" % first["id"], human, re.M)
    assert "evicted 2" in human
    # the human start line, and the job in the list and in show
    out = shoal(cl, "job", "start", "prefetch", "clisrc", "--provider", "s3", "--template",
                "pfw/{000..001}", "--wait")
    assert out.stdout.decode().startswith("job ") and "fetched 2" in out.stdout.decode()


def long_job(cl):
    """A prefetch of 100,000 names the backend lacks: runs for a good while."""
    return sjson(cl, "job", "start", "prefetch", "clisrc", "--provider", "s3", "--template",
                 "gone/{0..99999}")["id"]


def test_job_ls_show_stop_wait(cl):
    jid = long_job(cl)
    shown = sjson(cl, "job", "show", jid)
    assert shown["id"] == jid and shown["state"] == "running"
    running = [j["id"] for j in sjson(cl, "job", "ls", "--state", "running")["jobs"]]
    assert jid in running
    assert jid not in [j["id"] for j in sjson(cl, "job", "ls", "--bucket", "nothing")["jobs"]]
    # a bounded wait: 5, the job goes on
    t0 = time.monotonic()
    p = shoal(cl, "job", "wait", jid, "--timeout", "1.5", "--json", ok=False)
    assert p.returncode == 5 and json.loads(p.stdout)["state"] == "running"
    assert 1.4 < time.monotonic() - t0 < 10 and b"still running" in p.stderr
    assert shoal(cl, "job", "stop", jid).stdout.decode().strip() == "stopped job " + jid
    p = shoal(cl, "job", "wait", jid, "--json", ok=False)
    assert p.returncode == 1 and json.loads(p.stdout)["state"] == "aborted"
    assert b"ended aborted" in p.stderr
    human = shoal(cl, "job", "ls", "--kind", "prefetch", "--state", "aborted").stdout.decode()
    assert re.search(r"^%s\s+prefetch\s+s3://clisrc\s+aborted\s" % jid, human, re.M), human
    show = shoal(cl, "job", "show", jid).stdout.decode()
    assert "failed names:" in show and "object not found" in show and "target " in show
    for args in (["job", "show", "0123456789abcdef"], ["job", "stop", "0123456789abcdef"],
                 ["job", "wait", "0123456789abcdef"]):
        p = shoal(cl, *args, ok=False)
        assert p.returncode == 1 and b"(404)" in p.stderr, args
    # a job the cluster refuses: its 400, told
    p = shoal(cl, "job", "start", "prefetch", "clisrc", "--provider", "s3", "--template",
              "x{9..}", ok=False)
    assert p.returncode == 1 and b"(400)" in p.stderr


def run_pty(args, env, act_after=None, act=None, timeout=60):
    """Run shoal with a pseudo-terminal as stdin, stdout and stderr; act()
    once after act_after seconds. Its exit status and all it wrote."""
    master, slave = pty.openpty()
    p = subprocess.Popen([SHOAL, *args], env=env, stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    out, t0, acted = b"", time.monotonic(), act is None
    try:
        while True:
            assert time.monotonic() - t0 < timeout, out
            if not acted and time.monotonic() - t0 > act_after:
                act()
                acted = True
            r, _, _ = select.select([master], [], [], 0.2)
            if not r:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:      # EIO: the child is gone and closed the terminal
                break
            if not chunk:
                break
            out += chunk
        return p.wait(timeout=10), out
    finally:
        if p.poll() is None:
            p.kill()
        os.close(master)


def test_progress_on_a_terminal(cl, s3):
    env = clean_env(cl.url)
    jid = long_job(cl)
    rc, out = run_pty(["job", "wait", jid], env, 3.5,
                      lambda: requests.delete("%s/v1/jobs/%s" % (cl.url, jid), timeout=10))
    assert rc == 1, out
    bar = [seg for seg in out.split(b"\r") if b"ETA" in seg]
    assert len(bar) >= 3, out                      # redrawn in place, about once a second
    assert re.search(rb"job %s \[[#.]{24}\] +\d+%%  \d+/100000 objects" % jid[:8].encode(),
                     out), out
    assert re.search(rb"ETA (\d+:\d\d|--:--)", out) and b"\x1b[K" in out
    assert b"errors" in out and b"aborted" in out
    # a short job with --wait: ends at 100% on the terminal, exit 0
    seed(s3, "pty/", 3)
    rc, out = run_pty(["job", "start", "prefetch", "clisrc", "--provider", "s3", "--prefix",
                       "pty/", "--wait"], env)
    assert rc == 0 and b"\r" in out and b"100%" in out and b"finished" in out, out


def test_progress_in_a_pipe(cl):
    jid = long_job(cl)
    p = subprocess.Popen([SHOAL, "job", "wait", jid], env=clean_env(cl.url),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(4)
    requests.delete("%s/v1/jobs/%s" % (cl.url, jid), timeout=10)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 1
    lines = [ln for ln in err.decode().splitlines() if "objects" in ln]
    assert len(lines) >= 2, err                    # the first at once, then every few seconds
    assert all(re.match(r"job %s: +(\d+|\?)%%  \d+/\d+ objects" % jid[:8], ln) for ln in lines)
    assert b"\r" not in err and b"\x1b" not in err and b"\r" not in out
    assert out.decode().startswith("job %s" % jid)
    # --quiet: no progress at all
    p = shoal(cl, "job", "wait", jid, "--quiet", ok=False)
    assert p.returncode == 1 and b"objects" not in p.stderr


# ---- copy and download jobs -------------------------------------------------------------------

@pytest.fixture
def origin(tmp_path):
    """An HTTP origin on loopback serving tmp_path/www."""
    www = tmp_path / "www"
    www.mkdir()

    class H(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(www), **kw)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield www, "http://127.0.0.1:%d" % srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def test_copy_and_download_jobs(cl, bkt, origin):
    data = {"c/%d" % i: os.urandom(1000 * (i + 1)) for i in range(3)}
    for k, v in data.items():
        shoal(cl, "put", "-", "%s/%s" % (bkt, k), data=v)
    dst = bkt + "-to"
    shoal(cl, "bucket", "create", dst)
    try:
        j = sjson(cl, "job", "start", "copy", bkt, dst, "--prepend", "x/", "--dry-run",
                  "--wait")
        assert j["state"] == "finished" and j["copied"] == 3, j
        assert sjson(cl, "ls", dst)["objects"] == []
        j = sjson(cl, "job", "start", "copy", bkt, dst, "--prepend", "x/", "--wait")
        assert j["state"] == "finished" and j["copied"] == 3, j
        for k, v in data.items():
            assert shoal(cl, "get", "%s/x/%s" % (dst, k), "-").stdout == v
        www, url = origin
        for i in range(4):
            (www / ("s-%d.bin" % i)).write_bytes(b"shard %d " % i * 100)
        j = sjson(cl, "job", "start", "download", dst, url + "/s-0.bin", url + "/s-1.bin",
                  "--names", "d/zero,d/one", "--wait")
        assert j["state"] == "finished" and j["downloaded"] == 2, j
        assert shoal(cl, "get", dst + "/d/one", "-").stdout == b"shard 1 " * 100
        j = sjson(cl, "job", "start", "download", dst, "--template", url + "/s-{0..3}.bin",
                  "--wait")
        assert j["downloaded"] == 4 and shoal(cl, "get", dst + "/s-3.bin", "-").stdout == \
            b"shard 3 " * 100
        # a URL the origin does not have: the job fails, and so does the command
        p = shoal(cl, "job", "start", "download", dst, url + "/nope.bin", "--wait", ok=False)
        assert p.returncode == 1 and b"failed" in p.stdout + p.stderr
    finally:
        requests.delete(cl.url + "/v1/buckets/" + dst)


# ---- a cluster with keys ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def kc():
    yield from running_cluster(targets=2, mountpaths=1, extra="--auth_keys %s:%s" % (AK, SK))


def test_credentials(kc, tmp_path):
    # none, or wrong ones: 4, with the cluster's reason, and nothing done
    p = shoal(kc, "bucket", "create", "kb", ok=False)
    assert p.returncode == 4
    assert p.stderr.decode().startswith("shoal: the cluster refused the credentials (403): ")
    wrong = clean_env(kc.url, SHOAL_ACCESS_KEY=AK, SHOAL_SECRET_KEY="not-the-secret")
    p = shoal(kc, "bucket", "create", "kb", env=wrong, ok=False)
    assert p.returncode == 4 and b"signature" in p.stderr
    assert kc.http.head(kc.url + "/v1/buckets/kb").status_code == 404
    # the right keys: every request signed, redirects to the targets signed again
    keyed = clean_env(kc.url, SHOAL_ACCESS_KEY=AK, SHOAL_SECRET_KEY=SK)
    shoal(kc, "bucket", "create", "kb", env=keyed)
    data = os.urandom(1 << 20)
    for i in range(4):           # names on both targets
        shoal(kc, "put", "-", "kb/o%d" % i, data=data, env=keyed)
        assert shoal(kc, "get", "kb/o%d" % i, "-", env=keyed).stdout == data
    aws = clean_env(kc.url, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK)
    assert len(sjson(kc, "ls", "kb", env=aws)["objects"]) == 4
    # a bearer token
    tok = requests.post(kc.url + "/v1/tokens?ttl_s=600", auth=SigV4(AK, SK)).json()["token"]
    assert shoal(kc, "get", "kb/o1", "-", "--token", tok).stdout == data
    assert shoal(kc, "get", "kb/o2", "-", env=clean_env(kc.url, SHOAL_TOKEN=tok)).stdout == data
    p = shoal(kc, "ls", "kb", "--token", "shoal1.bad.1.x", ok=False)
    assert p.returncode == 4
    # open without keys: the map and the health
    out = shoal(kc, "cluster", "show").stdout.decode()
    assert out.count(" ok") == 3 and "(primary)" in out


def test_cluster_show(cl):
    m = sjson(cl, "cluster", "show")
    assert m["version"] == cl.cmap()["version"] and len(m["nodes"]) == 4
    assert all(n["health"] == "ok" for n in m["nodes"])
    out = shoal(cl, "cluster", "show").stdout.decode()
    assert "map version %d" % m["version"] in out
    for n in m["nodes"]:
        assert re.search(r"^%s\s+%s\s+active\s+%s\s+ok" % (n["id"], n["role"],
                                                             re.escape(n["url"])), out, re.M), out
    # maintenance, on and off; the map says so
    t = [n["id"] for n in m["nodes"] if n["role"] == "target"][0]
    out = shoal(cl, "node", "maintenance", t).stdout.decode()
    assert re.match(r"node %s: maintenance \(map version \d+\)" % t, out), out
    assert [n["state"] for n in cl.cmap()["nodes"] if n["id"] == t] == ["maintenance"]
    assert "maintenance" in shoal(cl, "cluster", "show").stdout.decode()
    j = sjson(cl, "node", "maintenance", t, "--off")
    assert j["state"] == "active" and j["cmap_version"] == cl.cmap()["version"]
    p = shoal(cl, "node", "maintenance", "nobody", ok=False)
    assert p.returncode == 1 and b"not in the cluster map" in p.stderr
