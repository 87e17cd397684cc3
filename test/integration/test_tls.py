"""HTTPS: a cluster whose nodes serve TLS (a CA and certificate made by
cluster.sh) and talk to each other over it: curl, boto3, the aws cli, the
CLI and the loader work with the CA given, and fail to verify without it;
plain HTTP on the TLS port gets nowhere; mirrored and erasure-coded
objects move between targets over TLS (copies and slices sent from their
files) and a target's loss is repaired over it; plain_port adds a plain
HTTP port; bad TLS settings stop a daemon with a clear message."""
import json
import os
import shutil
import subprocess
import tempfile
import time

import boto3
import pytest
import requests
from botocore.config import Config

from conftest import BUILD, ROOT, Cluster, free_port_block, running_s3rver
from test_mirror import bad_reads, data_files, kill_and_wait_down, owner_of, put_all, url

AK, SK = "TLSKEY", "tls-secret-key"
BIN = os.path.join(ROOT, BUILD, "bin")


@pytest.fixture(scope="module")
def s3src():
    yield from running_s3rver("tlssrc")


@pytest.fixture(scope="module")
def tc(s3src):
    c = Cluster(targets=4, mountpaths=1, tls=True, extra="--auth_keys %s:%s" % (AK, SK),
                env=s3src.env()).start()
    yield c
    assert not c.cleanup()


def kernel_has_tls():
    """Does this kernel take TCP_ULP "tls" (its tls module)?"""
    import socket
    lsn = socket.socket()
    lsn.bind(("127.0.0.1", 0))
    lsn.listen(1)
    s = socket.create_connection(lsn.getsockname())
    a, _ = lsn.accept()
    try:
        s.setsockopt(socket.SOL_TCP, 31, b"tls")
        return True
    except OSError:
        return False
    finally:
        for x in (s, a, lsn):
            x.close()


def logs(c):
    return c.log_text(["p0"] + c.target_names())


def test_https_and_only_https(tc):
    text = logs(tc)
    assert "HTTPS on 127.0.0.1:%d" % tc.port in text
    # the log says what this kernel does
    assert ("the kernel has no tls module" in text) == (not kernel_has_tls()), text[:2000]
    assert requests.get(tc.url + "/v1/health", verify=tc.ca).status_code == 200
    with pytest.raises(requests.exceptions.SSLError):     # not without the CA
        requests.get(tc.url + "/v1/health")
    with pytest.raises(requests.exceptions.ConnectionError):   # plain HTTP on the TLS port
        requests.get(tc.url.replace("https://", "http://") + "/v1/health", timeout=5)
    m = tc.http.get(tc.url + "/v1/cluster").json()
    assert all(n["url"].startswith("https://") for n in m["nodes"]), m
    body = os.urandom(3 << 20)
    assert tc.http.put(tc.url + "/v1/buckets/tb").status_code == 201
    r = tc.http.put(tc.url + "/v1/objects/tb/one", body)   # redirected to an https target
    assert r.status_code == 201, r.text
    cp = subprocess.run(["curl", "-sfL", "--cacert", tc.ca, "--aws-sigv4", "aws:amz:us-east-1:s3",
                         "--user", "%s:%s" % (AK, SK), tc.url + "/v1/objects/tb/one"],
                        capture_output=True, timeout=60)
    assert cp.returncode == 0 and cp.stdout == body
    cp = subprocess.run(["curl", "-sfL", tc.url + "/v1/health"], capture_output=True, timeout=60)
    assert cp.returncode == 60, cp.returncode                # curl: cannot verify the peer


def test_copies_and_slices_move_over_tls(tc):
    """A mirrored and an erasure-coded bucket: copies and slices reach the
    other targets over TLS; with a target killed every object still reads
    byte-identical (fetched or rebuilt over TLS)."""
    r = tc.http.put(tc.url + "/v1/buckets/tm", json={"mirror": {"copies": 2}})
    assert r.status_code == 201, r.text
    r = tc.http.put(tc.url + "/v1/buckets/te",
                    json={"ec": {"data": 2, "parity": 1, "objsize_limit": 65536}})
    assert r.status_code == 201, r.text
    before = len(data_files(tc))
    mirrored = {"m/%d" % i: os.urandom(100000 + i * 1200000) for i in range(8)}   # to 8.5 MiB
    coded = {"e/%d" % i: os.urandom(70000 + i * 300000) for i in range(8)}
    put_all(tc, "tm", mirrored)
    put_all(tc, "te", coded)
    assert len(data_files(tc)) - before == 2 * len(mirrored) + 4 * len(coded)
    victim = owner_of(tc, "te", "e/7")
    kill_and_wait_down(tc, victim)
    assert bad_reads(tc, "tm", mirrored) == []
    assert bad_reads(tc, "te", coded) == []
    assert "was rebuilt from its slices" in logs(tc)
    tc.sh("start-node", victim)
    tc.wait_healthy(victim)


def test_s3_clients_over_tls(tc, tmp_path):
    s3 = boto3.client("s3", endpoint_url=tc.url + "/s3", aws_access_key_id=AK,
                      aws_secret_access_key=SK, region_name="us-east-1", verify=tc.ca,
                      config=Config(s3={"addressing_style": "path"}))
    s3.create_bucket(Bucket="tlss3")
    small, big = os.urandom(100000), os.urandom(20 << 20)
    s3.put_object(Bucket="tlss3", Key="small", Body=small)
    assert s3.get_object(Bucket="tlss3", Key="small")["Body"].read() == small
    s3.put_object(Bucket="tlss3", Key="big", Body=big)       # relayed as bytes, not spliced
    assert s3.get_object(Bucket="tlss3", Key="big")["Body"].read() == big
    aws = shutil.which("aws")
    env = dict(os.environ, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK,
               AWS_DEFAULT_REGION="us-east-1", HOME=str(tmp_path),
               AWS_CONFIG_FILE=str(tmp_path / "none"),
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"))
    f = tmp_path / "up.bin"
    f.write_bytes(os.urandom(12 << 20))                      # multipart: 2 parts
    r = subprocess.run([aws, "--endpoint-url", tc.url + "/s3", "--ca-bundle", tc.ca, "s3", "cp",
                        str(f), "s3://tlss3/up.bin"], env=env, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([aws, "--endpoint-url", tc.url + "/s3", "--ca-bundle", tc.ca, "s3", "cp",
                        "s3://tlss3/up.bin", str(tmp_path / "back.bin")], env=env,
                       capture_output=True, timeout=120)
    assert r.returncode == 0 and (tmp_path / "back.bin").read_bytes() == f.read_bytes()
    r = subprocess.run([aws, "--endpoint-url", tc.url + "/s3", "s3", "ls"], env=env,
                       capture_output=True, timeout=120)
    assert r.returncode != 0 and b"SSL" in r.stderr          # no CA: refused


def test_cli_and_loader_over_tls(tc):
    env = dict(os.environ, SHOAL_ACCESS_KEY=AK, SHOAL_SECRET_KEY=SK, SHOAL_ENDPOINT=tc.url)
    r = subprocess.run([os.path.join(BIN, "shoal"), "--ca", tc.ca, "bucket", "create", "tlsld",
                        "--json"], env=env, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([os.path.join(BIN, "shoal"), "bucket", "ls"], env=env,
                       capture_output=True, timeout=60)
    assert r.returncode != 0 and b"certificate verify failed" in r.stderr, r.stderr
    # put and get follow the proxy's redirects to the https targets
    up = os.path.join(tempfile.mkdtemp(prefix="shoal-tls-"), "up.bin")
    data = os.urandom(3 << 20)
    with open(up, "wb") as f:
        f.write(data)
    cli = [os.path.join(BIN, "shoal"), "--ca", tc.ca]
    r = subprocess.run(cli + ["put", up, "tlsld/cli.bin"], env=env, capture_output=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(cli + ["get", "tlsld/cli.bin", "-"], env=env, capture_output=True,
                       timeout=60)
    assert r.returncode == 0 and r.stdout == data, r.stderr
    r = subprocess.run(cli + ["cluster", "show", "--json"], env=env, capture_output=True,
                       timeout=60)
    assert r.returncode == 0 and all(n["url"].startswith("https://")
                                     for n in json.loads(r.stdout)["nodes"]), r.stdout
    shutil.rmtree(os.path.dirname(up))
    common = [os.path.join(BIN, "shoal-loader"), "--endpoint", tc.url, "--ca", tc.ca,
              "--bucket", "tlsld", "--num-objects", "30", "--prefix", "l/",
              "--access-key", AK, "--secret-key", SK, "--stats-interval", "0", "--json"]
    r = subprocess.run(common + ["--pct-put", "100", "--epochs", "1", "--min-size", "4KiB",
                                 "--max-size", "256KiB"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["ops"]["PUT"]["count"] == 30
    for mode in ("shoal", "direct"):
        r = subprocess.run(common + ["--mode", mode, "--epochs", "2", "--verify"],
                           capture_output=True, text=True, timeout=120)
        out = json.loads(r.stdout)
        assert r.returncode == 0 and out["ops"]["GET"]["count"] == 60, r.stdout + r.stderr
        assert out["ops"]["GET"]["errors"] == {}


def test_cold_reads_over_tls(tc, s3src):
    """A bucket with a backend: the first read of an object of several MiB
    streams to the client over HTTPS as it arrives from the backend, a
    second is warm; both byte-identical."""
    body = os.urandom(9 << 20)
    s3src.client().put_object(Bucket="tlssrc", Key="cold.bin", Body=body)
    r = tc.http.put(tc.url + "/v1/buckets/tlssrc", json={"backend": "s3://tlssrc"})
    assert r.status_code == 201, r.text
    for cache in ("miss", "hit"):
        r = tc.http.get(tc.url + "/v1/objects/tlssrc/cold.bin")
        assert r.status_code == 200 and r.content == body, (cache, r.status_code)
        assert r.headers.get("X-Shoal-Cache") == cache


def test_plain_port_and_bad_settings(tc):
    d = tempfile.mkdtemp(prefix="shoal-tls-")
    try:
        tls = os.path.join(tc.data, "tls")
        secret = os.path.join(tc.data, "cluster.secret")
        port = free_port_block(3)
        plain, raft = port + 1, port + 2
        args = [os.path.join(BIN, "shoal-proxy"), "--port", str(port), "--raft_port", str(raft),
                "--state_dir", d, "--cluster_secret_file", secret,
                "--tls_cert_file", tls + "/cert.pem", "--tls_key_file", tls + "/key.pem",
                "--tls_ca_file", tls + "/ca.pem"]
        p = subprocess.Popen(args + ["--plain_port", str(plain)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        try:
            ok = False
            for _ in range(100):     # the plain port answers (once the proxy leads)
                try:
                    ok = requests.get("http://127.0.0.1:%d/v1/health" % plain,
                                      timeout=1).status_code == 200
                except requests.ConnectionError:
                    pass
                if ok:
                    break
                time.sleep(0.1)
            assert ok
            assert requests.get("https://127.0.0.1:%d/v1/health" % port,
                                verify=tc.ca).status_code == 200
        finally:
            p.terminate()
            p.wait(timeout=30)
        for bad, want, rc in (
                (["--tls_key_file", ""], "go together", 2),
                (["--plain_port", str(plain), "--tls_cert_file", "", "--tls_key_file", ""],
                 "plain_port", 2),
                (["--tls_key_file", tls + "/ca.key"], "tls_key_file': cannot use", 1),
                (["--tls_cert_file", d + "/none.pem"], "tls_cert_file", 1)):
            r = subprocess.run(args + bad, capture_output=True, text=True, timeout=30)
            assert r.returncode == rc and want in r.stderr, (bad, r.returncode, r.stderr)
    finally:
        shutil.rmtree(d, ignore_errors=True)
