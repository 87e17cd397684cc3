"""The HTTP layer against hostile clients, over raw sockets to a real proxy:
framing refused before any handler runs (Content-Length past int64,
transfer codings other than chunked, chunk data without its CRLF, both
lengths at once), paths and error messages that are not UTF-8, slow
request heads (header_timeout_s), the connection cap (max_connections)
and the idle connections closed to make room under it, and accept
failing for want of descriptors."""
import contextlib
import json
import os
import resource
import socket
import time
import urllib.parse

import pytest
import requests

from conftest import Cluster, read_to_close

# Slow heads are cut after 2 s; node_timeout_ms is long so that a proxy
# starved of descriptors for a few seconds does not drop its targets.
EXTRA = "--node_timeout_ms 60000 --header_timeout_s 2 --idle_timeout_s 20"


@contextlib.contextmanager
def small_cluster(extra):
    """One proxy, one target; no sanitizer report when it stops."""
    c = Cluster(proxies=1, targets=1, mountpaths=1, extra=extra).start()
    try:
        yield c
    finally:
        bad = c.cleanup()
        assert not bad, "sanitizer reports in %s (kept in %s)" % (bad, c.data)


@pytest.fixture(scope="module")
def hc():
    with small_cluster(EXTRA) as c:
        yield c


@pytest.fixture
def obj(hc):
    """A bucket holding the object 'victim' = b'original'; its native path."""
    name = "hb%06d" % (int.from_bytes(os.urandom(3), "big") % 10**6)
    assert hc.http.put(hc.url + "/v1/buckets/" + name).status_code == 201
    path = "/v1/objects/%s/victim" % name
    r = hc.http.put(hc.url + path, b"original")
    assert r.status_code == 201, r.text
    yield path
    hc.http.delete(hc.url + path)
    hc.http.delete(hc.url + "/v1/buckets/" + name)


def hostport(url):
    u = urllib.parse.urlparse(url)
    return u.hostname, u.port


def dial(url, data, blocking=True, timeout=10):
    """A new connection to url that has sent data."""
    s = socket.create_connection(hostport(url), timeout=timeout)
    try:
        s.sendall(data)
    except OSError:
        pass  # the server may close before it has read all
    s.setblocking(blocking)
    return s


def raw(url, data, timeout=5):
    """Send data on a new connection; (the answer, whether the server
    closed within timeout)."""
    s = dial(url, data, timeout=timeout)
    try:
        return read_to_close(s)
    finally:
        s.close()


def answered(s):
    """The status a non-blocking socket has been answered with, or None."""
    try:
        return status(s.recv(65536))
    except BlockingIOError:
        return None


def status(resp):
    return int(resp.split(b" ", 2)[1]) if resp.startswith(b"HTTP/1.1 ") else None


def target_put(hc, path):
    """Where the proxy sends a PUT of path: (target base URL, path?query)."""
    r = hc.http.put(hc.url + path, allow_redirects=False)
    assert r.status_code == 307, r.text
    u = urllib.parse.urlparse(r.headers["Location"])
    return "http://%s" % u.netloc, u.path + ("?" + u.query if u.query else "")


def content(hc, path):
    r = hc.http.get(hc.url + path)
    return r.status_code, r.content


BAD_FRAMING = {
    "length-past-uint64": b"Content-Length: 18446744073709551615\r\n\r\nabc",
    "length-past-int64": b"Content-Length: 9223372036854775808\r\n\r\nabc",
    "two-lengths": b"Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
    "gzip-chunked": b"Transfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    "chunk-without-crlf": b"Transfer-Encoding: chunked\r\n\r\n3\r\nabcXY0\r\n\r\n",
    "length-and-chunked": b"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    "length-and-gzip-chunked": b"Content-Length: 8\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
                               b"3\r\nabc\r\n0\r\n\r\n",
}


@pytest.mark.parametrize("case", sorted(BAD_FRAMING))
def test_bad_framing_refused(hc, obj, case):
    """400 with the connection closed, and the object untouched: on the
    target that stores a PUT's body (a length past int64 used to store the
    object as 0 bytes, a chunk without its CRLF or a gzip body as sent), and
    on the proxy's S3 API (framing in the head before any handler; a bad
    chunk while the body is relayed, which the target never commits)."""
    base, where = target_put(hc, obj)
    sends = [(base, where), (hc.url, obj.replace("/v1/objects/", "/s3/", 1))]
    for url, path in sends:
        req = b"PUT " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n" + BAD_FRAMING[case]
        out, closed = raw(url, req)
        assert status(out) == 400 and closed, (url, out[:400])
        assert b"Connection: close" in out
    assert content(hc, obj) == (200, b"original")


def test_good_chunked_put_still_stored(hc, obj):
    base, where = target_put(hc, obj)
    req = (b"PUT " + where.encode() + b" HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n"
           b"Connection: close\r\n\r\n3\r\nnew\r\n4\r\ndata\r\n0\r\n\r\n")
    out, _ = raw(base, req)
    assert status(out) == 201, out[:400]
    assert content(hc, obj) == (200, b"newdata")


def cpu_seconds(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def log_lines(hc, name):
    try:
        with open(os.path.join(hc.data, "logs", name + ".log"), "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


def test_fd_limit_backs_off(hc):
    """A proxy out of descriptors stops accepting for a while instead of
    spinning on accept (it used to burn a core and write millions of log
    lines); once descriptors are back, the waiting clients are served."""
    pid = hc.pid("p0")
    old = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    top = max(int(fd) for fd in os.listdir("/proc/%d/fd" % pid))
    socks = []
    try:
        # no descriptor above the highest open one: once the few holes
        # below it are taken, accept fails with EMFILE
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (top + 1, old[1]))
        socks = [dial(hc.url, b"GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                 for _ in range(64)]
        time.sleep(0.5)
        cpu0, lines0 = cpu_seconds(pid), log_lines(hc, "p0")
        time.sleep(2)
        cpu, lines = cpu_seconds(pid) - cpu0, log_lines(hc, "p0") - lines0
    finally:
        resource.prlimit(pid, resource.RLIMIT_NOFILE, old)
    assert cpu < 0.5, "%.2f s of CPU in 2 s at the descriptor limit" % cpu
    assert lines < 20, "%d log lines in 2 s at the descriptor limit" % lines
    served = 0
    for s in socks:
        served += status(read_to_close(s)[0]) == 200
        s.close()
    assert served == len(socks)


@pytest.mark.parametrize("path", [b"/v1/x\xff", b"/v1/x%FF", b"/v1/%C0%AF", b"/v1/\xed\xa0\x80"])
def test_path_not_utf8_refused(hc, path):
    """A path that is not UTF-8 names no endpoint: 400 on a proxy and on a
    target (its 404 message quoted the bytes, which JSON cannot carry:
    500 "encoding failed")."""
    for url in (hc.url, hc.node_url(hc.target_names()[0])):
        resp, _ = raw(url, b"GET " + path + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert status(resp) == 400 and b'"path is not valid UTF-8"' in resp, (url, resp)


def test_error_quoting_bytes_not_utf8(hc):
    """An error that quotes bytes that are not UTF-8 keeps the status its
    handler chose, with those bytes escaped."""
    resp, _ = raw(hc.url, b"GET /v1/cluster/nodes/x\xffy HTTP/1.1\r\nHost: x\r\n"
                          b"Connection: close\r\n\r\n")
    assert status(resp) == 404, resp
    body = json.loads(resp.split(b"\r\n\r\n", 1)[1])
    assert body == {"error": "node x\\xFFy is not in the cluster map", "status": 404}


# ---- need header_timeout_s and max_connections wired from the config into
# ---- http_server_opts by the daemons

def test_slow_heads_cut_off(hc):
    """Clients trickling their request heads (slowloris) are closed
    header_timeout_s after they connected, although every byte restarts
    the idle timeout; so is a client that connects and says nothing."""
    socks = [dial(hc.url, b"GET /v1/health HTTP/1.1\r\nHost: x\r\n", blocking=False)
             for _ in range(50)]
    silent = dial(hc.url, b"", blocking=False)
    t0, closed = time.time(), {}
    while time.time() - t0 < 6 and len(closed) < len(socks) + 1:
        for s in socks + [silent]:
            if s in closed:
                continue
            try:
                if s is not silent:
                    s.send(b"X-Slow: a\r\n")
                if s.recv(65536) == b"":
                    closed[s] = time.time() - t0
            except BlockingIOError:
                pass
            except OSError:
                closed[s] = time.time() - t0
        time.sleep(0.25)
    for s in socks + [silent]:
        s.close()
    assert len(closed) == len(socks) + 1, "%d of %d slow clients still connected after 6 s" % (
        len(socks) + 1 - len(closed), len(socks) + 1)
    assert min(closed.values()) >= 1.5
    # a complete request is still served, and a keep-alive connection
    # idle longer than header_timeout_s between requests is kept
    s = dial(hc.url, b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status(s.recv(65536)) == 200
    time.sleep(3)
    s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status(s.recv(65536)) == 200
    s.close()


def test_max_connections():
    """Past max_connections, connections with a request under way (here a
    body still to come) keep their places and new ones wait in the
    backlog; each request that ends leaves an idle connection, which is
    closed to take a waiting one."""
    with small_cluster("--node_timeout_ms 60000 --max_connections 16 --workers 1") as c:
        head = b"GET /v1/health HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\n"
        socks = [dial(c.url, head, blocking=False) for _ in range(40)]
        try:
            time.sleep(1)
            first = [s for s in socks if answered(s) == 200]
            # (the cluster's own keep-alive connections count too)
            assert 0 < len(first) <= 16
            time.sleep(1)
            assert not [s for s in socks if s not in first and answered(s)]
            for s in first:
                s.sendall(b"body")  # its request ends: room for the next
            waiting, done = [s for s in socks if s not in first], set()
            end = time.time() + 10
            while time.time() < end and len(done) < len(waiting):
                for s in waiting:
                    if s not in done and answered(s) == 200:
                        done.add(s)
                        s.sendall(b"body")
                time.sleep(0.1)
            assert len(done) == len(waiting)
        finally:
            for s in socks:
                s.close()


AK, SK = "HARDKEY0", "hardening-secret-0123"


def test_idle_connections_make_room():
    """At max_connections, idle connections (keep-alive ones between
    requests, new ones that have sent nothing for a second) are closed,
    the longest idle first, to take new ones: a signed GET and /v1/health
    are answered at once, not after the idle sockets' timeouts (3,000 of
    them kept both waiting 57 s)."""
    with small_cluster("--node_timeout_ms 60000 --max_connections 32 --workers 2 "
                       "--idle_timeout_s 120 --auth_keys %s:%s" % (AK, SK)) as c:
        assert c.http.put(c.url + "/v1/buckets/idle").status_code == 201
        r = c.http.put(c.url + "/v1/objects/idle/k", data=b"still served")
        assert r.status_code == 201, r.text
        # three times the cap, so that both workers' shares are full: two
        # of three sockets ask once and stay, the third says nothing
        hello = b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"
        socks = [dial(c.url, hello if i % 3 else b"", blocking=False) for i in range(96)]
        try:
            time.sleep(1.5)
            t0 = time.time()
            r = c.http.get(c.url + "/v1/objects/idle/k", timeout=5)
            assert r.status_code == 200 and r.content == b"still served"
            r = requests.get(c.url + "/v1/health", timeout=5)
            assert r.status_code == 200
            assert time.time() - t0 < 3
        finally:
            for s in socks:
                s.close()
