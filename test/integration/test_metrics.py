"""Metrics as an operator scrapes them: every node's /metrics passes
promtool check metrics; a real Prometheus (Debian's package) scraping a
local cluster answers PromQL after a loader run: warm GETs at a non-zero
rate, cold GETs and the backend's requests counted, requests by API; and
every query of the Grafana dashboard (deploy/grafana) is valid PromQL over
metrics that exist."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.parse

import pytest
import requests

from conftest import BUILD, ROOT, Cluster, free_port_block, running_s3rver

LOADER = os.path.join(ROOT, BUILD, "bin", "shoal-loader")
DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "shoal.json")


@pytest.fixture(scope="module")
def s3():
    yield from running_s3rver("msrc")


class Prometheus:
    def __init__(self, nodes):
        self.dir = tempfile.mkdtemp(prefix="shoal-prom-")
        self.port = free_port_block(1)
        self.url = "http://127.0.0.1:%d" % self.port
        with open(os.path.join(self.dir, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: shoal\n"
                    "    static_configs:\n      - targets: [%s]\n"
                    % ", ".join('"%s"' % n for n in nodes))
        self.log = open(os.path.join(self.dir, "log"), "w")
        self.proc = subprocess.Popen(
            ["prometheus", "--config.file=" + os.path.join(self.dir, "prometheus.yml"),
             "--storage.tsdb.path=" + os.path.join(self.dir, "data"),
             "--web.listen-address=127.0.0.1:%d" % self.port],
            stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(100):
            try:
                if requests.get(self.url + "/-/ready", timeout=1).status_code == 200:
                    return
            except requests.ConnectionError:
                pass
            time.sleep(0.2)
        raise AssertionError(open(os.path.join(self.dir, "log")).read()[-2000:])

    def query(self, q):
        r = requests.get(self.url + "/api/v1/query", params={"query": q}, timeout=10)
        assert r.status_code == 200 and r.json()["status"] == "success", (q, r.text)
        return r.json()["data"]["result"]

    def value(self, q):
        """The query's one value (a sum), None while it has none."""
        res = self.query(q)
        return float(res[0]["value"][1]) if res else None

    def wait_value(self, q, pred, timeout=40):
        deadline = time.time() + timeout
        v = None
        while time.time() < deadline:
            v = self.value(q)
            if v is not None and pred(v):
                return v
            time.sleep(0.5)
        raise AssertionError("%s: %s" % (q, v))

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=20)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def host_port(url):
    u = urllib.parse.urlsplit(url)
    return "%s:%d" % (u.hostname, u.port)


def test_every_node_passes_promtool(s3):
    c = Cluster(targets=2, mountpaths=1, env=s3.env()).start()
    try:
        assert c.http.put(c.url + "/v1/buckets/pm").status_code == 201
        assert c.http.put(c.url + "/v1/objects/pm/a", b"x" * 1000).status_code == 201
        assert c.http.get(c.url + "/v1/objects/pm/a").status_code == 200
        for n in ["p0"] + c.target_names():
            text = requests.get(c.node_url(n) + "/metrics").text
            r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                               text=True, timeout=30)
            assert r.returncode == 0 and r.stdout.strip() == "", (n, r.stdout, r.stderr)
            families = re.findall(r"^# TYPE (\w+) ", text, re.M)
            helps = re.findall(r"^# HELP (\w+) ", text, re.M)
            assert families and sorted(families) == sorted(helps), n
            for want in ("shoal_requests_total", "shoal_request_duration_seconds",
                         "shoal_errors_total", "shoal_open_connections"):
                assert want in families, (n, want)
            if n != "p0":
                for want in ("shoal_object_gets_total", "shoal_backend_requests_total",
                             "shoal_space_used_bytes", "shoal_jobs_running",
                             "shoal_read_repairs_total", "shoal_ec_rebuilds_total",
                             "shoal_writeback_uploads_total"):
                    assert want in families, (n, want)
    finally:
        assert not c.cleanup()


def test_prometheus_scrapes_a_cluster(s3):
    if not shutil.which("prometheus"):
        pytest.skip("prometheus is not installed")
    src = s3.client()
    for i in range(20):
        src.put_object(Bucket="msrc", Key="o/%02d" % i, Body=os.urandom(20000))
    c = Cluster(targets=2, mountpaths=1, env=s3.env()).start()
    prom = None
    try:
        nodes = [host_port(c.node_url(n)) for n in ["p0"] + c.target_names()]
        prom = Prometheus(nodes)
        prom.wait_value('count(up{job="shoal"} == 1)', lambda v: v == len(nodes))
        r = c.http.put(c.url + "/v1/buckets/msrc", json={"backend": "s3://msrc"})
        assert r.status_code == 201, r.text
        for i in range(20):               # cold: fetched from the backend
            assert c.http.get(c.url + "/v1/objects/msrc/o/%02d" % i).status_code == 200
        assert c.http.put(c.url + "/v1/buckets/ld").status_code == 201
        common = [LOADER, "--endpoint", c.url, "--bucket", "ld", "--num-objects", "40",
                  "--prefix", "l/", "--stats-interval", "0", "--json"]
        p = subprocess.run(common + ["--pct-put", "100", "--epochs", "1", "--min-size", "4KiB",
                                     "--max-size", "64KiB"], capture_output=True, text=True,
                           timeout=120)
        assert p.returncode == 0, p.stderr
        p = subprocess.run(common + ["--duration", "4s", "--verify"], capture_output=True,
                           text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        gets = json.loads(p.stdout)["ops"]["GET"]["count"]
        assert gets > 40
        rate = prom.wait_value('sum(rate(shoal_object_gets_total{cache="warm"}[20s]))',
                               lambda v: v > 0)
        assert rate > 0
        warm = prom.wait_value('sum(shoal_object_gets_total{cache="warm"})',
                               lambda v: v >= gets)
        assert warm >= gets
        prom.wait_value('sum(shoal_object_gets_total{cache="cold"})', lambda v: v == 20)
        prom.wait_value('sum(shoal_backend_requests_total{op="get"})', lambda v: v >= 20)
        prom.wait_value('sum(shoal_requests_total{role="proxy",api="native",op="get"})',
                        lambda v: v >= 20 + gets)
        # every query of the dashboard is valid and names metrics that exist
        # (scraped, or a family the nodes declare that has no series yet)
        names = set(requests.get(prom.url + "/api/v1/label/__name__/values").json()["data"])
        for n in ["p0"] + c.target_names():
            names |= set(re.findall(r"^# TYPE (\w+) ",
                                    requests.get(c.node_url(n) + "/metrics").text, re.M))
        dash = json.load(open(DASHBOARD))
        exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
        assert len(exprs) >= 15
        for e in exprs:
            for m in re.findall(r"\b(shoal_\w+)", e):
                assert m in names or re.sub(r"_bucket$", "", m) in names, (m, e)
            prom.query(e.replace("$__rate_interval", "30s"))
    finally:
        if prom:
            prom.stop()
        assert not c.cleanup()
