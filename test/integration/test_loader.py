"""shoal-loader against a real cluster: fill, verified reads, JSON, cleanup, errors."""
import json
import os
import subprocess

import requests

from conftest import BUILD, ROOT

LOADER = os.path.join(ROOT, BUILD, "bin", "shoal-loader")


def loader(*args, check=True):
    p = subprocess.run([LOADER, *args], capture_output=True, text=True, timeout=120)
    if check:
        assert p.returncode == 0, p.stdout + p.stderr
    return p


def test_fill_read_verify_cleanup(cluster):
    assert requests.put(cluster.url + "/v1/buckets/ld").status_code == 201
    common = ["--endpoint", cluster.url, "--bucket", "ld", "--num-objects", "40",
              "--prefix", "l/", "--stats-interval", "0", "--json"]
    out = json.loads(loader(*common, "--pct-put", "100", "--epochs", "1",
                            "--min-size", "1KiB", "--max-size", "300KiB").stdout)
    assert out["ops"]["PUT"]["count"] == 40 and out["ops"]["PUT"]["errors"] == {}
    listed = requests.get(cluster.url + "/v1/buckets/ld/objects", params={"prefix": "l/"}).json()
    assert len(listed["objects"]) == 40
    for mode in ("shoal", "direct"):
        out = json.loads(loader(*common, "--mode", mode, "--epochs", "2", "--verify").stdout)
        g = out["ops"]["GET"]
        assert g["count"] == 80 and g["errors"] == {}, out
        lat = g["latency_us"]
        assert 0 < lat["min"] <= lat["p50"] <= lat["p99"] <= lat["max"]
    # the name set can be the bucket's own listing
    out = json.loads(loader("--endpoint", cluster.url, "--bucket", "ld", "--list-names",
                            "--epochs", "1", "--stats-interval", "0", "--json").stdout)
    assert out["ops"]["GET"]["count"] == 40
    # a range read of every object
    out = json.loads(loader(*common, "--epochs", "1", "--read-off", "100",
                            "--read-len", "50").stdout)
    assert out["ops"]["GET"]["bytes"] == 40 * 50
    # plain HTTP mode against a target's native API path would 404: errors counted
    p = loader(*common, "--mode", "http", "--max-ops", "5", check=False)
    assert p.returncode == 3 and json.loads(p.stdout)["ops"]["GET"]["errors"]["http_4xx"] == 5
    out = json.loads(loader(*common, "--max-ops", "1", "--cleanup").stdout)
    assert out["cleanup"]["ops"]["DELETE"]["count"] == 40
    assert requests.get(cluster.url + "/v1/buckets/ld/objects").json()["objects"] == []


def test_clear_errors(cluster):
    p = loader("--endpoint", "http://127.0.0.1:1", "--bucket", "x", check=False)
    assert p.returncode == 1 and "cannot reach" in p.stderr
    p = loader("--endpoint", cluster.url, "--bucket", "no-such-bucket", check=False)
    assert p.returncode == 1 and "not found" in p.stderr
    for bad in (["--workers", "0"], ["--pct-put", "101"], ["--max-size", "1XB"],
                ["--duration", "soon"], ["--mode", "ftp"], ["--bogus"]):
        p = loader("--endpoint", cluster.url, "--bucket", "x", *bad, check=False)
        assert p.returncode in (1, 2) and p.stderr, bad
