"""A cluster across "hosts": two proxies and four targets, each in a
network namespace of its own on a bridge (deploy/netns/cluster.sh), links
shaped. The loader and S3 clients work through it; a target's host killed
(daemon and link) leaves every mirrored object readable once the map says
it is down, and it comes back; a proxy's host killed leaves the other
serving. Needs root (skipped otherwise)."""
import json
import os
import random
import shutil
import subprocess
import tempfile
import time

import boto3
import pytest
import requests
from botocore.config import Config

from conftest import BUILD, ROOT

SCRIPT = os.path.join(ROOT, "deploy", "netns", "cluster.sh")
AK, SK = "NSKEY", "netns-secret-key"


def can_netns():
    if os.geteuid() != 0 or not shutil.which("ip"):
        return False
    name = "shoalprobe%d" % os.getpid()
    ok = subprocess.run(["ip", "netns", "add", name], capture_output=True).returncode == 0
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return ok


pytestmark = pytest.mark.skipif(not can_netns(), reason="network namespaces need root")


class NetCluster:
    def __init__(self):
        self.data = tempfile.mkdtemp(prefix="shoal-netns-")
        self.env = dict(os.environ, SHOAL_DATA=self.data, SHOAL_BUILD=BUILD, SHOAL_PROXIES="2",
                        SHOAL_TARGETS="4", SHOAL_MOUNTPATHS="1",
                        SHOAL_NETNS_ID=str(random.randrange(100, 250)),
                        SHOAL_AUTH_KEYS="%s:%s" % (AK, SK),
                        SHOAL_EXTRA_ARGS="--keepalive_ms 300 --node_timeout_ms 3000")
        self.env.setdefault("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=0")

    def sh(self, *args):
        r = subprocess.run([SCRIPT, *args], env=self.env, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr + r.stdout
        if args[0] in ("kill-host", "start-host") and hasattr(self, "http"):
            # A killed host's FIN may be lost with its link and arrive once
            # the link is back: drop the pooled connections to it, as a
            # client that saw the host go would.
            self.http.close()
        return r.stdout.strip()

    def start(self):
        self.url = self.sh("start")
        self.http = requests.Session()
        from conftest import SigV4
        self.http.auth = SigV4(AK, SK)
        self.settled()
        return self

    def settled(self, timeout=60):
        """Until every node holds the primary's map, with the four targets
        active (a target still joining would move objects under a test)."""
        urls = [self.addr(n) for n in ("p0", "p1", "t0", "t1", "t2", "t3")]
        end = time.time() + timeout
        while time.time() < end:
            m = self.http.get(self.url + "/v1/cluster", timeout=5).json()
            active = [n for n in m["nodes"] if n["state"] == "active"]
            try:
                if len(active) == 6 and all(
                        self.http.get(u + "/v1/cluster", timeout=5).json()["version"] ==
                        m["version"] for u in urls):
                    return
            except requests.RequestException:
                pass
            time.sleep(0.3)
        raise AssertionError("the cluster's maps never settled")

    def addr(self, name):
        return self.sh("addr", name)

    def wait_state(self, name, state, timeout=30):
        url = self.addr(name)
        end = time.time() + timeout
        while time.time() < end:
            nodes = self.http.get(self.url + "/v1/cluster", timeout=5).json()["nodes"]
            if any(n["url"] == url and n["state"] == state for n in nodes):
                return
            time.sleep(0.2)
        raise AssertionError("%s never %s" % (name, state))

    def cleanup(self):
        subprocess.run([SCRIPT, "stop"], env=self.env, capture_output=True, timeout=120)
        shutil.rmtree(self.data, ignore_errors=True)


@pytest.fixture(scope="module")
def nc():
    c = NetCluster().start()
    yield c
    c.cleanup()
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert "sh%s" % c.env["SHOAL_NETNS_ID"] not in left, left


def test_nodes_talk_over_their_own_addresses(nc):
    m = nc.http.get(nc.url + "/v1/cluster").json()
    urls = sorted(n["url"] for n in m["nodes"])
    assert len(urls) == 6 and all(u.startswith("http://10.78.") for u in urls), urls
    assert len({u.split("//")[1].split(":")[0] for u in urls}) == 6   # six hosts
    assert not any("127.0.0.1" in u for u in urls)


def test_loader_and_s3_clients(nc, tmp_path):
    loader = os.path.join(ROOT, BUILD, "bin", "shoal-loader")
    assert nc.http.put(nc.url + "/v1/buckets/nl").status_code == 201
    common = [loader, "--endpoint", nc.url, "--bucket", "nl", "--num-objects", "80",
              "--prefix", "n/", "--access-key", AK, "--secret-key", SK, "--stats-interval", "0",
              "--json"]
    r = subprocess.run(common + ["--pct-put", "100", "--epochs", "1", "--min-size", "4KiB",
                                 "--max-size", "512KiB"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    for mode in ("shoal", "direct"):
        r = subprocess.run(common + ["--mode", mode, "--epochs", "2", "--verify"],
                           capture_output=True, text=True, timeout=300)
        out = json.loads(r.stdout)
        assert r.returncode == 0 and out["ops"]["GET"]["count"] == 160, r.stdout + r.stderr
        assert out["ops"]["GET"]["errors"] == {}
    s3 = boto3.client("s3", endpoint_url=nc.url + "/s3", aws_access_key_id=AK,
                      aws_secret_access_key=SK, region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"}))
    s3.create_bucket(Bucket="ns3")
    big = os.urandom(12 << 20)
    s3.put_object(Bucket="ns3", Key="big", Body=big)
    assert s3.get_object(Bucket="ns3", Key="big")["Body"].read() == big
    f = tmp_path / "mp.bin"
    f.write_bytes(os.urandom(20 << 20))
    env = dict(os.environ, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK,
               AWS_DEFAULT_REGION="us-east-1", HOME=str(tmp_path),
               AWS_CONFIG_FILE=str(tmp_path / "none"),
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"))
    for args in (["s3", "cp", str(f), "s3://ns3/mp.bin"],
                 ["s3", "cp", "s3://ns3/mp.bin", str(tmp_path / "back.bin")]):
        r = subprocess.run(["aws", "--endpoint-url", nc.url + "/s3", *args], env=env,
                           capture_output=True, timeout=300)
        assert r.returncode == 0, r.stderr
    assert (tmp_path / "back.bin").read_bytes() == f.read_bytes()
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="ns3")["Contents"]]
    assert keys == ["big", "mp.bin"]


def test_a_host_killed_and_back(nc):
    r = nc.http.put(nc.url + "/v1/buckets/nm", json={"mirror": {"copies": 2}})
    assert r.status_code == 201, r.text
    data = {"m/%02d" % i: os.urandom(50000 + i * 20000) for i in range(30)}
    for k, v in data.items():
        assert nc.http.put(nc.url + "/v1/objects/nm/" + k, v).status_code == 201
    nc.sh("kill-host", "t1")
    nc.wait_state("t1", "down")
    for k, v in data.items():
        r = nc.http.get(nc.url + "/v1/objects/nm/" + k, timeout=30)
        assert r.status_code == 200 and r.content == v, (k, r.status_code)
    nc.sh("start-host", "t1")
    nc.wait_state("t1", "active")
    # a proxy's host: the other proxy still redirects reads
    other = nc.addr("p1")
    nc.sh("kill-host", "p0")
    for k, v in list(data.items())[:10]:
        r = nc.http.get(other + "/v1/objects/nm/" + k, timeout=30)
        assert r.status_code == 200 and r.content == v, (k, r.status_code)
    nc.sh("start-host", "p0")
