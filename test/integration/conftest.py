"""Fixtures that start real Shoal clusters on loopback with deploy/local/cluster.sh."""
import contextlib
import io
import json
import os
import random
import re
import shutil
import socket
import subprocess
import tarfile
import tempfile
import time
import urllib.parse

import pytest
import requests

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("SHOAL_BUILD", "build")
SANITIZED = "san" in BUILD
CLUSTER_SH = os.path.join(ROOT, "deploy", "local", "cluster.sh")


def ephemeral_range():
    try:
        lo, hi = open("/proc/sys/net/ipv4/ip_local_port_range").read().split()
        return int(lo), int(hi)
    except (OSError, ValueError):
        return 32768, 60999


def free_port_block(n):
    """A base port with n free ports after it, below the kernel's ephemeral
    range (outgoing connections take ports there at any moment) and above
    common services."""
    lo = ephemeral_range()[0]
    top = lo if lo > 12000 else 65000
    for _ in range(200):
        base = random.randrange(10000, top - n)
        ok = True
        for p in range(base, base + n):
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", p))
            except OSError:
                ok = False
            finally:
                s.close()
            if not ok:
                break
        if ok:
            return base
    raise RuntimeError("no free port block")


def read_to_close(s):
    """(what s read until the server closed, whether it closed before the
    socket's timeout)."""
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                return out, True
            out += b
    except socket.timeout:
        return out, False
    except OSError:
        return out, True


class SigV4(requests.auth.AuthBase):
    """Signs a requests call with AWS SigV4 (service s3), as curl
    --aws-sigv4 or an SDK would: the native API takes the same keys."""

    def __init__(self, access, secret, region="us-east-1"):
        self.access, self.secret, self.region = access, secret, region

    def __call__(self, r):
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
        body = r.body or b""
        if isinstance(body, str):
            body = body.encode()
        hdrs = {k: v for k, v in r.headers.items()
                if k.lower() in ("content-type", "content-md5", "range")
                or k.lower().startswith("x-amz-")}
        req = AWSRequest(method=r.method, url=r.url, data=body, headers=hdrs)
        S3SigV4Auth(Credentials(self.access, self.secret), "s3", self.region).add_auth(req)
        for k in ("Authorization", "X-Amz-Date", "X-Amz-Content-SHA256"):
            if k in req.headers:
                r.headers[k] = req.headers[k]
        return r


def keys_in(extra):
    """The first ACCESS:SECRET pair given with --auth_keys/--s3_api_keys."""
    m = re.search(r"--(?:auth_keys|s3_api_keys)[ =]([^ ,]+):([^ ,]+)", extra)
    return (m.group(1), m.group(2)) if m else None


class Cluster:
    def __init__(self, proxies=1, targets=3, mountpaths=2, extra="", data=None, env=None,
                 spare=0, host="127.0.0.1", tls=False):
        # spare: ports kept free after the targets', for targets started later
        # ("start-node t3" on a cluster of three)
        self.proxies, self.targets = proxies, targets
        self.port = free_port_block(proxies + targets + spare)
        self.raft_port = free_port_block(proxies)
        while self.port - proxies < self.raft_port < self.port + proxies + targets + spare:
            self.raft_port = free_port_block(proxies)
        self.data = data or tempfile.mkdtemp(prefix="shoal-it-")
        self.env = dict(os.environ, SHOAL_PROXIES=str(proxies), SHOAL_TARGETS=str(targets),
                        SHOAL_MOUNTPATHS=str(mountpaths), SHOAL_PORT=str(self.port),
                        SHOAL_RAFT_PORT=str(self.raft_port),
                        SHOAL_DATA=self.data, SHOAL_BUILD=BUILD,
                        SHOAL_EXTRA_ARGS=("--keepalive_ms 300 --node_timeout_ms 3000 " + extra))
        self.env.setdefault("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=0")
        self.env.update(env or {})
        self.env["SHOAL_HOST"] = self.host = host
        # tls: every node serves HTTPS with a certificate of a CA made in
        # data/tls (cluster.sh); clients verify with self.ca
        self.scheme = "https" if tls else "http"
        self.env["SHOAL_TLS"] = "1" if tls else "0"
        self.ca = os.path.join(self.data, "tls", "ca.pem") if tls else None
        self.url = "%s://%s:%d" % (self.scheme, host, self.port)
        self.keys = keys_in(extra)
        self.http = requests.Session()
        if tls:      # the CA, not $REQUESTS_CA_BUNDLE (which would win over it)
            self.http.verify = self.ca
            self.http.trust_env = False
        if self.keys:
            self.http.auth = SigV4(*self.keys)

    def sh(self, *args, check=True):
        return subprocess.run([CLUSTER_SH, *args], env=self.env, check=check,
                              capture_output=True, text=True, timeout=120)

    def start(self):
        r = self.sh("start", check=False)
        assert r.returncode == 0, r.stderr + r.stdout
        assert r.stdout.strip() == self.url
        return self

    def stop(self):
        self.sh("stop", check=False)

    def node_url(self, name):
        i = int(name[1:])
        return "%s://%s:%d" % (self.scheme, self.host, self.port + i if name[0] == "p" else
                                 self.port + self.proxies + i)

    def pid(self, name):
        with open(os.path.join(self.data, name, "pid")) as f:
            return int(f.read())

    def cmap(self):
        return self.http.get(self.url + "/v1/cluster", timeout=5).json()

    def target_names(self):
        return ["t%d" % i for i in range(self.targets)]

    def wait_map(self, pred, timeout=20):
        end = time.time() + timeout
        while time.time() < end:
            try:
                m = self.cmap()
                if pred(m):
                    return m
            except requests.RequestException:
                pass
            time.sleep(0.1)
        raise AssertionError("cluster map never satisfied the condition")

    def wait_healthy(self, name, timeout=20):
        end = time.time() + timeout
        while time.time() < end:
            try:
                if requests.get(self.node_url(name) + "/v1/health", timeout=2,
                                verify=self.ca or True).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        raise AssertionError("node %s never became healthy" % name)

    def log_text(self, names=None):
        """The logs of the named nodes (every target's by default), joined."""
        return "".join(open(os.path.join(self.data, "logs", n + ".log"), errors="replace").read()
                       for n in (self.target_names() if names is None else names))

    def sanitizer_reports(self):
        out = []
        logs = os.path.join(self.data, "logs")
        for f in os.listdir(logs) if os.path.isdir(logs) else []:
            text = open(os.path.join(logs, f), errors="replace").read()
            if re.search(r"ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer", text):
                out.append(f)
        return out

    def cleanup(self):
        self.stop()
        bad = self.sanitizer_reports()
        if not bad and not os.environ.get("SHOAL_KEEP"):
            shutil.rmtree(self.data, ignore_errors=True)
        return bad


def running_cluster(**kw):
    """For a fixture to `yield from`: a started Cluster(**kw), cleaned up
    after (a sanitizer report fails the test that owned it)."""
    c = Cluster(**kw).start()
    yield c
    bad = c.cleanup()
    assert not bad, "sanitizer reports in %s (kept in %s)" % (bad, c.data)


@contextlib.contextmanager
def tmpfs_cluster(size, **kw):
    """A started one-target cluster whose only mountpath is a tmpfs of size
    ("24m"); skips the test where it cannot be mounted (needs root)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    c = Cluster(targets=1, mountpaths=1, **kw)
    mp = os.path.join(c.data, "t0", "mp0")
    os.makedirs(mp)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", mp]).returncode:
        pytest.skip("cannot mount tmpfs here")
    try:
        c.start()
        c.mountpath = mp
        yield c
    finally:
        c.stop()
        subprocess.run(["umount", mp])
        assert not c.sanitizer_reports()
        c.cleanup()


def running_s3rver(*buckets):
    """For a fixture to `yield from`: an s3rver with these buckets."""
    srv = S3rver(buckets=buckets).start()
    yield srv
    srv.cleanup()


@pytest.fixture(scope="module")
def cluster():
    yield from running_cluster()


@pytest.fixture
def bucket(cluster):
    name = "b%06d" % random.randrange(10**6)
    r = cluster.http.put(cluster.url + "/v1/buckets/" + name)
    assert r.status_code == 201, r.text
    yield name
    cluster.http.delete(cluster.url + "/v1/buckets/" + name)


NODE_DIR = os.path.join(ROOT, "test")


class S3rver:
    """A real s3rver on loopback, with the exact log of requests it received."""

    def __init__(self, buckets=("remote",), key=("S3RVER", "S3RVER")):
        self.key = key
        self.port = free_port_block(1)
        self.dir = tempfile.mkdtemp(prefix="shoal-s3rver-")
        self.log = os.path.join(self.dir, "requests.log")
        self.buckets = list(buckets)
        self.proc = None
        self.url = "http://127.0.0.1:%d" % self.port

    def start(self):
        env = dict(os.environ, NODE_OPTIONS="--openssl-legacy-provider",
                   S3RVER_KEY="%s:%s" % self.key)
        self.proc = subprocess.Popen(
            ["node", os.path.join(NODE_DIR, "s3rver.js"), str(self.port),
             os.path.join(self.dir, "data"), self.log, *self.buckets],
            cwd=NODE_DIR, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        line = self.proc.stdout.readline().decode()
        assert "listening" in line, line
        return self

    def stop(self):
        if self.proc:
            self.proc.terminate()
            self.proc.wait(timeout=10)
            self.proc = None

    def requests(self):
        try:
            return open(self.log).read().splitlines()
        except FileNotFoundError:
            return []

    def client(self):
        import boto3
        from botocore.config import Config
        return boto3.client("s3", endpoint_url=self.url, aws_access_key_id=self.key[0],
                            aws_secret_access_key=self.key[1], region_name="us-east-1",
                            config=Config(s3={"addressing_style": "path"}))

    def env(self):
        return {"AWS_ENDPOINT_URL": self.url, "AWS_ACCESS_KEY_ID": self.key[0],
                "AWS_SECRET_ACCESS_KEY": self.key[1], "AWS_REGION": "us-east-1"}

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class Azurite:
    """A real Azure Storage emulator (Azurite's blob service) on loopback,
    with accounts {name: base64 key}; client() runs Azure's own client
    (@azure/storage-blob, test/azblob.mjs) against it."""

    DEV_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/"
               "K1SZFPTOtr/KBHBeksoGMGw==")

    def __init__(self, accounts=None):
        self.accounts = accounts or {"devstoreaccount1": self.DEV_KEY}
        self.port = free_port_block(1)
        self.dir = tempfile.mkdtemp(prefix="shoal-azurite-")
        self.proc = None

    def endpoint(self, account=None):
        return "http://127.0.0.1:%d/%s" % (self.port, account or next(iter(self.accounts)))

    def start(self):
        env = dict(os.environ, AZURITE_ACCOUNTS=";".join(
            "%s:%s" % kv for kv in self.accounts.items()))
        self.proc = subprocess.Popen(
            [os.path.join(NODE_DIR, "node_modules", ".bin", "azurite-blob"), "--blobHost",
             "127.0.0.1", "--blobPort", str(self.port), "--location", self.dir,
             "--skipApiVersionCheck", "--loose", "--silent", "--debug",
             os.path.join(self.dir, "debug.log")],
            cwd=NODE_DIR, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for _ in range(100):
            line = self.proc.stdout.readline().decode()
            if "listens on" in line or not line:
                break
        assert "listens on" in line, line
        return self

    def requests(self):
        """The method and URL path of each request it received, in order."""
        try:
            text = open(os.path.join(self.dir, "debug.log"), errors="replace").read()
        except FileNotFoundError:
            return []
        return re.findall(r"RequestMethod=(\w+) RequestURL=https?://[^/]+(\S*)", text)

    def env(self, account=None):
        a = account or next(iter(self.accounts))
        return {"AZURE_STORAGE_ACCOUNT": a, "AZURE_STORAGE_KEY": self.accounts[a],
                "AZURE_STORAGE_ENDPOINT": self.endpoint(a)}

    def client(self, op, container, name=None, data=None, account=None):
        a = account or next(iter(self.accounts))
        args = ["node", os.path.join(NODE_DIR, "azblob.mjs"), self.endpoint(a), a,
                self.accounts[a], op, container] + ([name] if name else [])
        if data is not None:
            path = os.path.join(self.dir, "upload.bin")
            with open(path, "wb") as f:
                f.write(data)
            args.append(path)
        r = subprocess.run(args, capture_output=True, timeout=60, cwd=NODE_DIR)
        assert r.returncode == 0, r.stderr.decode()
        return r.stdout

    def stop(self):
        if self.proc:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:   # it waits on open connections
                self.proc.kill()
                self.proc.wait(timeout=10)
            self.proc = None

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def mkbucket(c, props=None):
    """A new bucket of a random name on cluster c (201), with props."""
    name = "bk%06d" % random.randrange(10**6)
    r = c.http.put(c.url + "/v1/buckets/" + name, json=props) if props else \
        c.http.put(c.url + "/v1/buckets/" + name)
    assert r.status_code == 201, r.text
    return name


def put_object(c, b, name, data, provider=None):
    """PUT data as b/name through the proxy (201)."""
    u = "%s/v1/objects/%s/%s" % (c.url, b, urllib.parse.quote(name))
    if provider:
        u += "?provider=" + provider
    r = c.http.put(u, data)
    assert r.status_code == 201, r.text


def make_tar(files, mode="w", fmt=tarfile.PAX_FORMAT):
    """A tar (or, by mode, a compressed one) of {name: bytes}, in order."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode, format=fmt) as t:
        for name, data in files.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
    return buf.getvalue()
