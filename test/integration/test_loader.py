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


def test_mixed_run_on_an_empty_bucket(cluster, tmp_path):
    """--pct-put 50 over generated names in an empty bucket: its GETs read
    only what it has written (no 4xx, exit 0); the summary counts successful
    ops and the failed ones beside them, with time to first byte; --csv
    writes a line per op and second."""
    assert requests.put(cluster.url + "/v1/buckets/mix").status_code == 201
    csv = tmp_path / "run.csv"
    p = loader("--endpoint", cluster.url, "--bucket", "mix", "--num-objects", "500",
               "--pct-put", "50", "--max-size", "8KiB", "--min-size", "8KiB",
               "--duration", "2500ms", "--stats-interval", "0", "--json", "--csv", str(csv),
               "--cleanup")
    out = json.loads(p.stdout)
    g, w = out["ops"]["GET"], out["ops"]["PUT"]
    assert g["count"] > 0 and w["count"] > 0, out
    assert g["failed"] == 0 and w["failed"] == 0 and g["errors"] == {}, out
    assert 0 < g["ttfb_us"]["p50"] <= g["latency_us"]["max"], g
    # cleanup deletes what the run wrote, and only that: no 404s
    d = out["cleanup"]["ops"]["DELETE"]
    assert 0 < d["count"] <= min(500, w["count"]) and d["errors"] == {}, out
    assert requests.get(cluster.url + "/v1/buckets/mix/objects").json()["objects"] == []
    rows = csv.read_text().splitlines()
    assert rows[0] == "time_s,op,ops_per_s,mib_per_s,failed_per_s,p50_us,p99_us,ttfb_p50_us"
    lines = [r.split(",") for r in rows[1:]]
    assert {r[1] for r in lines} == {"GET", "PUT"} and len(lines) >= 4, rows
    assert all(float(r[2]) >= 0 and float(r[4]) == 0 for r in lines), rows
    assert all((r[5] == "") == (float(r[2]) == 0) for r in lines), rows   # no ops: no latency
    total = sum(float(r[2]) for r in lines if r[1] == "GET")
    assert total > 0
    # names that exist already: a mixed pass reads and writes each once
    p = loader("--endpoint", cluster.url, "--bucket", "mix", "--num-objects", "30",
               "--pct-put", "100", "--epochs", "1", "--min-size", "1KiB", "--max-size", "1KiB",
               "--stats-interval", "0", "--json")
    out = json.loads(loader("--endpoint", cluster.url, "--bucket", "mix", "--num-objects", "30",
                            "--pct-put", "50", "--epochs", "1", "--names-exist",
                            "--min-size", "1KiB", "--max-size", "1KiB", "--stats-interval", "0",
                            "--json").stdout)
    assert out["ops"]["GET"]["count"] + out["ops"]["PUT"]["count"] == 30, out
    assert out["ops"]["GET"]["count"] > 0 and out["ops"]["GET"]["failed"] == 0, out
    # the table names its columns so
    p = loader("--endpoint", cluster.url, "--bucket", "mix", "--num-objects", "20",
               "--pct-put", "100", "--max-ops", "20", "--stats-interval", "0")
    head = p.stdout.splitlines()[0].split()
    assert head[:3] == ["op", "ok", "failed"] and "ttfb-p50" in head, p.stdout


def test_batch_mode(cluster, tmp_path):
    """--batch N: each GET is one GetBatch of N names through the proxy's
    redirect; the summary counts the batches and the entries they read,
    and a batch that fails (a missing name, no continue-on-error) is a
    failed GET."""
    assert requests.put(cluster.url + "/v1/buckets/lb").status_code == 201
    common = ["--endpoint", cluster.url, "--bucket", "lb", "--prefix", "bt/",
              "--stats-interval", "0", "--json"]
    loader(*common, "--num-objects", "40", "--pct-put", "100", "--epochs", "1",
           "--min-size", "1KiB", "--max-size", "1KiB")
    out = json.loads(loader(*common, "--num-objects", "40", "--batch", "10",
                            "--max-ops", "6").stdout)
    g = out["ops"]["GET"]
    assert g["count"] == 6 and g["failed"] == 0 and g["entries"] == 60, out
    assert g["bytes"] >= 60 * (1024 + 512), out     # a .tar of 60 members
    assert g["entries_per_s"] > 0
    # passes: each reads every name once, in batches of 15 (15, 15, 10)
    out = json.loads(loader(*common, "--num-objects", "40", "--batch", "15",
                            "--epochs", "2").stdout)
    g = out["ops"]["GET"]
    assert g["count"] == 6 and g["entries"] == 80 and g["failed"] == 0, out
    assert 80 * 1024 <= g["bytes"] < 80 * 2048 + 6 * 10240, out
    names = tmp_path / "names"
    names.write_text("bt/00000000\nbt/missing\n")
    p = loader(*common, "--names-file", str(names), "--batch", "2", "--max-ops", "2",
               check=False)
    out = json.loads(p.stdout)
    assert p.returncode == 3 and out["ops"]["GET"]["failed"] == 2, out
    assert out["ops"]["GET"]["count"] == 0 and out["ops"]["GET"]["entries"] == 0, out
    for bad in (["--batch", "0"], ["--batch", "4", "--mode", "s3"],
                ["--batch", "4", "--verify"], ["--batch", "4", "--pct-put", "10"]):
        p = loader(*common, *bad, check=False)
        assert p.returncode in (1, 2) and "--batch" in p.stderr, bad
