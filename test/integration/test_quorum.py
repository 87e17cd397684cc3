"""The proxies' consensus: kill -9 the primary of three proxies and another
takes over within 15 s with the map and buckets intact while targets keep
serving; the old primary comes back as a follower; a proxy cut off from
the others (its own network namespace) can never change the map, and
neither can any minority."""
import json
import os
import random
import shutil
import socket
import struct
import subprocess
import time

import pytest
import requests

from conftest import BUILD, ROOT, Cluster, free_port_block, read_to_close


def quorum(url, timeout=3):
    return requests.get(url + "/v1/cluster/quorum", timeout=timeout).json()


def wait_for(pred, timeout, what):
    end = time.time() + timeout
    last = None
    while time.time() < end:
        try:
            v = pred()
            if v:
                return v
            last = v
        except (requests.RequestException, ValueError, KeyError, TypeError) as e:
            last = e
        time.sleep(0.1)
    raise AssertionError("never: %s (last: %r)" % (what, last))


def primary_of(cl, names):
    """The proxy among names that says it is the primary, or None."""
    for n in names:
        try:
            if quorum(cl.node_url(n), timeout=1)["primary"]:
                return n
        except requests.RequestException:
            pass
    return None


@pytest.fixture
def three():
    c = Cluster(proxies=3, targets=3, spare=1).start()
    yield c
    bad = c.cleanup()
    assert not bad, "sanitizer reports in %s (kept in %s)" % (bad, c.data)


def test_primary_killed_another_takes_over(three):
    cl = three
    urls = {n: cl.node_url(n) for n in ("p0", "p1", "p2")}
    wait_for(lambda: len(quorum(urls["p0"])["voters"]) == 3, 20, "three voters")
    old = cl.cmap()
    assert old["primary"] == quorum(urls["p0"])["id"]
    p0_id = old["primary"]
    assert cl.http.put(cl.url + "/v1/buckets/keep").status_code == 201
    data = {"o%03d" % i: os.urandom(1000 + i) for i in range(60)}
    for k, v in data.items():
        assert cl.http.put(cl.url + "/v1/objects/keep/" + k, data=v).status_code == 201

    subprocess.run(["kill", "-9", str(cl.pid("p0"))], check=True)
    t0 = time.time()
    # targets keep serving throughout: every read through p1 answers
    new = None
    reads = 0
    while time.time() - t0 < 15 and new is None:
        k = random.choice(list(data))
        r = requests.get(urls["p1"] + "/v1/objects/keep/" + k, timeout=5)
        assert r.status_code == 200 and r.content == data[k], (k, r.status_code)
        reads += 1
        new = primary_of(cl, ["p1", "p2"])
    took = time.time() - t0
    assert new, "no primary 15 s after the primary was killed"
    assert reads > 0 and took <= 15
    # the map names it, with the same cluster and everything else intact
    m = wait_for(lambda: (lambda m: m if m["primary"] != p0_id else None)(
        requests.get(urls[new] + "/v1/cluster", timeout=3).json()), 10, "map names new primary")
    assert m["uuid"] == old["uuid"] and m["version"] > old["version"]
    targets = sorted(n["id"] for n in old["nodes"] if n["role"] == "target")
    assert sorted(n["id"] for n in m["nodes"] if n["role"] == "target") == targets
    other = "p2" if new == "p1" else "p1"
    b = requests.get(urls[other] + "/v1/buckets", timeout=5).json()["buckets"]
    assert [x["name"] for x in b] == ["keep"]

    # bucket changes and joins work again, through either proxy (once it
    # has the map naming the new primary: until then it answers 503 with
    # Retry-After)
    wait_for(lambda: requests.get(urls[other] + "/v1/cluster", timeout=3).json()["primary"]
             == m["primary"], 10, "the other proxy follows")
    r = requests.put(urls[other] + "/v1/buckets/after", timeout=20)
    assert r.status_code == 201, r.text
    cl.sh("start-node", "t3")
    wait_for(lambda: sum(n["role"] == "target" for n in
                         requests.get(urls[new] + "/v1/cluster", timeout=3).json()["nodes"]) == 4,
             30, "t3 in the map")
    for k, v in data.items():
        r = requests.get(urls[other] + "/v1/objects/keep/" + k, timeout=10)
        assert r.status_code == 200 and r.content == v

    # the old primary comes back as a follower of the new one
    cl.sh("start-node", "p0")
    q0 = wait_for(lambda: (lambda q: q if q["state"] == "follower" and q["leader"] else None)(
        quorum(urls["p0"])), 20, "p0 follows")
    assert q0["primary"] is False
    assert q0["leader"] == quorum(urls[new])["id"]
    wait_for(lambda: any(n["id"] == p0_id for n in
                         requests.get(urls[new] + "/v1/cluster", timeout=3).json()["nodes"]),
             20, "p0 back in the map")
    # it forwards bucket changes to the primary rather than making them
    r = requests.put(urls["p0"] + "/v1/buckets/via-old", timeout=20)
    assert r.status_code == 201, r.text
    names = [x["name"] for x in requests.get(urls[new] + "/v1/buckets", timeout=5).json()["buckets"]]
    assert sorted(names) == ["after", "keep", "via-old"]
    assert primary_of(cl, ["p0", "p1", "p2"]) == new


def test_join_to_a_follower_is_sent_to_the_primary(three):
    """A member asking a proxy that is not the primary learns where it is."""
    cl = three
    follower = cl.node_url("p1")
    r = requests.post(follower + "/v1/cluster/keepalive", json={"id": "x"}, timeout=5)
    assert r.status_code == 503
    j = r.json()
    assert j["primary_url"] == cl.url and j["cmap"]["primary"] == quorum(cl.url)["id"]
    assert r.headers.get("Retry-After")


def test_consensus_port_refuses_strangers(three):
    """The Raft port answers every connection with a 32-byte nonce and
    closes it on anything but a peer's answer: an oversized or malformed
    preamble at once, a wrong answer at once, silence after 5 s; the
    proxy keeps leading."""
    cl = three
    port = cl.raft_port
    pre = lambda proto, alen: struct.pack("<QQQ", proto, 7, alen)
    cases = [pre(1, 1 << 40), pre(1, 13), pre(2, 16), pre(1, 16) + b"10.0.0.1:1\0\0\0\0\0\0" +
             b"x" * 32]
    for data in cases:
        s = socket.create_connection(("127.0.0.1", port), timeout=3)
        s.sendall(data)
        got, closed = read_to_close(s)
        s.close()
        assert closed and len(got) == 32, (data[:24], closed, got)
    s = socket.create_connection(("127.0.0.1", port), timeout=9)
    t0 = time.time()
    got, closed = read_to_close(s)
    s.close()
    assert closed and len(got) == 32 and time.time() - t0 >= 4
    q = quorum(cl.url)
    assert q["primary"] and q["state"] == "leader"
    assert cl.http.put(cl.url + "/v1/buckets/still").status_code == 201


# ---- a proxy in its own network namespace --------------------------------------------------


def sh(*args, check=True):
    return subprocess.run(list(args), capture_output=True, text=True, check=check, timeout=30)


@pytest.fixture
def netns():
    """A network namespace linked to this one by a veth pair: (name,
    host-side address, namespace-side address, host-side link)."""
    if os.geteuid() != 0 or not shutil.which("ip"):
        pytest.skip("network namespaces need root and iproute2")
    k = random.randrange(1, 250)
    name, link = "shoalq%d" % os.getpid(), "shq%d" % os.getpid()
    if sh("ip", "netns", "add", name, check=False).returncode:
        pytest.skip("cannot create a network namespace here")
    try:
        sh("ip", "link", "add", link, "type", "veth", "peer", "name", link + "n")
        sh("ip", "link", "set", link + "n", "netns", name)
        sh("ip", "addr", "add", "10.231.%d.1/30" % k, "dev", link)
        sh("ip", "link", "set", link, "up")
        sh("ip", "netns", "exec", name, "ip", "addr", "add", "10.231.%d.2/30" % k, "dev",
           link + "n")
        sh("ip", "netns", "exec", name, "ip", "link", "set", link + "n", "up")
        sh("ip", "netns", "exec", name, "ip", "link", "set", "lo", "up")
        yield name, "10.231.%d.1" % k, "10.231.%d.2" % k, link
    finally:
        sh("ip", "link", "del", link, check=False)
        sh("ip", "netns", "del", name, check=False)


def in_ns(ns, method, url, timeout=5):
    """(status, JSON) of a request made from inside the namespace."""
    r = sh("ip", "netns", "exec", ns, "curl", "-s", "-m", str(timeout), "-X", method,
           "-w", "\n%{http_code}", url, check=False)
    body, _, code = r.stdout.rpartition("\n")
    try:
        return int(code), json.loads(body) if body else None
    except ValueError:
        return int(code or 0), None


def test_cut_off_proxy_and_minority_cannot_change_the_map(netns):
    ns, host, ns_addr, link = netns
    cl = Cluster(proxies=2, targets=2, host=host, extra="--allow_anonymous true").start()
    px = None
    try:
        port, rport = free_port_block(1), free_port_block(1)
        d = os.path.join(cl.data, "px")
        os.makedirs(os.path.join(d, "state"))
        log = open(os.path.join(cl.data, "logs", "px.log"), "a")
        px = subprocess.Popen(
            ["ip", "netns", "exec", ns, os.path.join(ROOT, BUILD, "bin", "shoal-proxy"),
             "--host", ns_addr, "--port", str(port), "--raft_port", str(rport),
             "--primary_url", cl.url, "--state_dir", os.path.join(d, "state"),
             "--cluster_secret_file", os.path.join(cl.data, "cluster.secret"),
             "--allow_anonymous", "true", "--keepalive_ms", "300", "--node_timeout_ms", "3000"],
            stdout=log, stderr=log, env=cl.env)
        px_url = "http://%s:%d" % (ns_addr, port)
        p0, p1 = cl.node_url("p0"), cl.node_url("p1")
        px_id = wait_for(lambda: in_ns(ns, "GET", px_url + "/v1/cluster/quorum")[1]["id"], 30,
                         "the namespaced proxy is up")
        leader = quorum(p0)["id"]
        try:
            wait_for(lambda: (lambda q: q["state"] == "follower" and q["leader"] == leader and
                              len(q["voters"]) == 3 and px_id in q["voters"])(
                in_ns(ns, "GET", px_url + "/v1/cluster/quorum")[1]), 30,
                "the namespaced proxy votes and follows p0")
            wait_for(lambda: in_ns(ns, "GET", px_url + "/v1/cluster")[1]["version"] ==
                     cl.cmap()["version"], 20, "the namespaced proxy has the map")
        except AssertionError as e:
            tail = open(os.path.join(cl.data, "logs", "px.log"), errors="replace").read()[-3000:]
            raise AssertionError("%s\npx.log:\n%s" % (e, tail))

        # cut it off
        sh("ip", "link", "set", link, "down")
        v_px = in_ns(ns, "GET", px_url + "/v1/cluster")[1]["version"]
        st, j = in_ns(ns, "PUT", px_url + "/v1/buckets/from-px", timeout=20)
        assert st == 503, (st, j)
        st, j = in_ns(ns, "PUT", px_url + "/v1/cluster/nodes/x?maintenance")
        assert st == 503, (st, j)
        time.sleep(4)            # beyond election and node timeouts
        st, q = in_ns(ns, "GET", px_url + "/v1/cluster/quorum")
        assert q["state"] != "leader" and q["primary"] is False, q
        assert in_ns(ns, "GET", px_url + "/v1/cluster")[1]["version"] == v_px
        assert in_ns(ns, "GET", px_url + "/v1/buckets")[1]["buckets"] == []

        # the majority carries on: it drops the silent proxy, takes buckets
        assert cl.http.put(cl.url + "/v1/buckets/majority", timeout=20).status_code == 201
        wait_for(lambda: all(n["url"] != px_url for n in cl.cmap()["nodes"]), 20,
                 "the cut-off proxy leaves the map")

        # the primary dies too: p1 alone is a minority and changes nothing
        subprocess.run(["kill", "-9", str(cl.pid("p0"))], check=True)
        time.sleep(5)
        v1 = requests.get(p1 + "/v1/cluster", timeout=3).json()["version"]
        assert quorum(p1)["primary"] is False
        r = requests.put(p1 + "/v1/buckets/from-minority", timeout=20)
        assert r.status_code == 503, r.text
        time.sleep(4)            # a primary would have marked p0 and the rest silent
        assert requests.get(p1 + "/v1/cluster", timeout=3).json()["version"] == v1

        # reconnected, p1 and the namespaced proxy form a majority again
        sh("ip", "link", "set", link, "up")
        new = wait_for(lambda: primary_of(cl, ["p1"]) or
                       (in_ns(ns, "GET", px_url + "/v1/cluster/quorum")[1] or {}).get("primary")
                       and "px", 20, "a primary once reconnected")
        assert new
        r = wait_for(lambda: (lambda r: r if r.status_code == 201 else None)(
            requests.put(p1 + "/v1/buckets/healed", timeout=20)), 20, "bucket change after heal")
        names = sorted(b["name"] for b in requests.get(p1 + "/v1/buckets", timeout=5).json()["buckets"])
        assert names == ["healed", "majority"]
    finally:
        if px:
            px.kill()
            px.wait()
        bad = cl.cleanup()
        assert not bad, bad
