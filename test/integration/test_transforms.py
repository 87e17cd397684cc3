"""Transforms (the registry): PUT/GET/DELETE /v1/transforms/NAME on a
cluster of two proxies with keys on: set through the second proxy
(forwarded to the primary, committed, pushed), listed by both, replaced,
deleted; admin keys only for changes, signed requests for reads; bad
specs and names 400; a GET asking for an unknown transform 404 on both
APIs, never the plain bytes; kept across
a restart of the whole cluster (the bucket metadata on every node's
drive). A command transform (deploy/transforms/hash.py) runs on every
target, listed with its state per target, answers the contract when
spoken to, logs under its name, is restarted when killed, backs off when
it keeps dying, and stops when deleted or when its target stops."""
import os
import signal
import time

import pytest
import requests

from conftest import ROOT, Cluster, SigV4

HASH = ["/usr/bin/python3", os.path.join(ROOT, "deploy", "transforms", "hash.py")]

KEYS = {"ops": "ops-secret-444", "alice": "alice-secret-2"}


@pytest.fixture(scope="module")
def c():
    c = Cluster(proxies=2, targets=2, mountpaths=1,
                extra="--auth_keys %s --admin_keys ops" %
                      ",".join("%s:%s" % kv for kv in KEYS.items())).start()
    c.http.auth = SigV4("ops", KEYS["ops"])
    yield c
    assert not c.cleanup()


def test_set_list_replace_delete(c):
    p1 = c.node_url("p1")
    r = c.http.put(p1 + "/v1/transforms/ident", json={"command": ["/bin/cat"]})
    assert r.status_code == 201, r.text
    assert r.json() == {"name": "ident", "command": ["/bin/cat"]}
    r = c.http.put(c.url + "/v1/transforms/ident", json={"url": "http://127.0.0.1:9/"})
    assert r.status_code == 200, r.text
    for base in (c.url, p1):
        r = c.http.get(base + "/v1/transforms")
        assert r.status_code == 200, r.text
        got = r.json()["transforms"]
        assert [{k: v for k, v in t.items() if k != "targets"} for t in got] == \
            [{"name": "ident", "url": "http://127.0.0.1:9/"}]
        assert len(got[0]["targets"]) == 2
        assert c.http.get(base + "/v1/transforms/ident").json()["url"] == "http://127.0.0.1:9/"
    alice = SigV4("alice", KEYS["alice"])
    assert requests.get(c.url + "/v1/transforms", auth=alice).status_code == 200
    assert requests.get(c.url + "/v1/transforms").status_code == 403
    r = requests.put(c.url + "/v1/transforms/mine", json={"command": ["/bin/cat"]}, auth=alice)
    assert r.status_code == 403 and "admin" in r.text
    assert requests.delete(c.url + "/v1/transforms/ident", auth=alice).status_code == 403
    assert c.http.delete(p1 + "/v1/transforms/ident").status_code == 204
    assert c.http.get(c.url + "/v1/transforms/ident").status_code == 404
    assert c.http.delete(c.url + "/v1/transforms/ident").status_code == 404


@pytest.mark.parametrize("spec,why", [
    ({}, "command or a url"),
    ({"command": "/bin/cat"}, "array"),
    ({"command": []}, "array"),
    ({"command": ["/bin/cat"], "url": "http://h/"}, "one of them"),
    ({"url": "ftp://h/"}, "http"),
    ({"url": "http://u:p@h/"}, "user information"),
    ({"comand": ["/bin/cat"]}, "unknown transform field"),
    ({"command": ["build/bin/x"]}, "not a relative path"),
])
def test_bad_specs(c, spec, why):
    r = c.http.put(c.url + "/v1/transforms/bad", json=spec)
    assert r.status_code == 400 and why in r.text, r.text


def test_bad_name_and_method(c):
    r = c.http.put(c.url + "/v1/transforms/a%20b", json={"command": ["/bin/cat"]})
    assert r.status_code == 400 and "invalid transform name" in r.text
    r = c.http.post(c.url + "/v1/transforms/x", json={"command": ["/bin/cat"]})
    assert r.status_code == 405 and "PUT" in r.headers["Allow"]
    r = c.http.put(c.url + "/v1/transforms/x", data=b"{not json")
    assert r.status_code == 400


def test_inline_use_of_an_unknown_transform(c):
    assert c.http.put(c.url + "/v1/buckets/tb").status_code == 201
    assert c.http.put(c.url + "/v1/objects/tb/x", data=b"plain").status_code == 201
    r = c.http.get(c.url + "/v1/objects/tb/x?transform=ident")
    assert r.status_code == 404 and b"plain" not in r.content, r.text
    assert "transform 'ident' not found" in r.json()["error"]
    s3 = c.http.get(c.url + "/s3/tb/x?transform=ident")
    assert s3.status_code == 404 and b"plain" not in s3.content, s3.text
    assert b"<Error>" in s3.content
    assert c.http.get(c.url + "/v1/objects/tb/x").content == b"plain"


def states(c, name):
    """name's state on each target, as GET /v1/transforms gathers them."""
    r = c.http.get(c.url + "/v1/transforms")
    assert r.status_code == 200, r.text
    got = [t for t in r.json()["transforms"] if t["name"] == name]
    return got[0]["targets"] if got else None


def wait_states(c, name, pred, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        st = states(c, name)
        if st is not None and len(st) == 2 and all(v and pred(v) for v in st.values()):
            return st
        time.sleep(0.2)
    raise AssertionError("transform %s never got there: %s" % (name, states(c, name)))


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open("/proc/%d/stat" % pid) as f:       # a zombie is not alive
        return f.read().split(") ")[1][0] != "Z"


def test_command_runs_on_every_target_and_restarts(c):
    assert c.http.put(c.url + "/v1/transforms/hash", json={"command": HASH}).status_code == 201
    st = wait_states(c, "hash", lambda v: v["state"] == "running")
    pids = {t: v["pid"] for t, v in st.items()}
    assert len(set(pids.values())) == 2 and all(alive(p) for p in pids.values())
    # the contract, spoken to the child directly: POST / with the bytes
    port = list(st.values())[0]["port"]
    r = requests.post("http://127.0.0.1:%d/" % port, data=b"abc",
                      headers={"X-Shoal-Args": "algo=md5"})
    assert r.text == "900150983cd24fb0d6963f7d28e17f72\n"
    # its output is in the target's log, under its name
    logs = "".join(open(os.path.join(c.data, "logs", f)).read()
                   for f in os.listdir(os.path.join(c.data, "logs")))
    assert "transform hash: hash transform on port %d" % port in logs
    # killed: restarted, a new process
    victim = list(pids.values())[0]
    os.kill(victim, signal.SIGKILL)
    st = wait_states(c, "hash", lambda v: v["state"] == "running" and v["pid"] != victim)
    assert max(v["restarts"] for v in st.values()) == 1
    # deleted: stopped on every target
    pids = [v["pid"] for v in st.values()]
    assert c.http.delete(c.url + "/v1/transforms/hash").status_code == 204
    end = time.time() + 10
    while time.time() < end and any(alive(p) for p in pids):
        time.sleep(0.1)
    assert not any(alive(p) for p in pids)


def test_a_command_that_dies_backs_off(c):
    r = c.http.put(c.url + "/v1/transforms/dies", json={"command": ["/bin/sh", "-c",
                                                                     "echo bye; exit 3"]})
    assert r.status_code == 201
    st = wait_states(c, "dies", lambda v: v["restarts"] >= 2)
    assert all(v["state"] in ("backoff", "starting") for v in st.values()), st
    assert all(v["last_exit"] == 3 << 8 for v in st.values()), st
    assert c.http.delete(c.url + "/v1/transforms/dies").status_code == 204


def test_url_transforms_run_nowhere(c):
    assert c.http.put(c.url + "/v1/transforms/svc",
                      json={"url": "http://127.0.0.1:9/"}).status_code == 201
    st = wait_states(c, "svc", lambda v: v["state"] == "remote")
    assert all(v["kind"] == "url" for v in st.values())
    assert c.http.delete(c.url + "/v1/transforms/svc").status_code == 204


def test_kept_across_restart(c):
    r = c.http.put(c.url + "/v1/transforms/kept", json={"command": HASH})
    assert r.status_code == 201, r.text
    pids = [v["pid"] for v in wait_states(c, "kept", lambda v: v["state"] == "running").values()]
    c.stop()
    assert not any(alive(p) for p in pids)      # the children went with their targets
    c.start()
    r = c.http.get(c.url + "/v1/transforms/kept")
    assert r.status_code == 200 and r.json()["command"] == HASH, r.text
    wait_states(c, "kept", lambda v: v["state"] == "running")
