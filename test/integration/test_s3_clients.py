"""Third-party S3 clients against a cluster, unchanged but for their
endpoint: the aws cli (Debian's, /usr/bin/aws), s3cmd and rclone. s3cmd
and rclone cannot take a path in the endpoint, so they use the proxy's
dedicated S3 port."""
import hashlib
import os
import random
import subprocess

import pytest
import requests

from conftest import Cluster, free_port_block

AK, SK = "CLIENTKEY", "client-secret-0123"
AWS = "/usr/bin/aws"


@pytest.fixture(scope="module")
def s3c():
    port = free_port_block(1)
    c = Cluster(targets=3, mountpaths=1,
                extra="--s3_api_keys %s:%s --s3_api_port %d" % (AK, SK, port)).start()
    c.s3_port = port
    yield c
    bad = c.cleanup()
    assert not bad, "sanitizer reports in %s (kept in %s)" % (bad, c.data)


def run(cmd, env=None, check=True, timeout=600, **kw):
    r = subprocess.run(cmd, env=env, capture_output=True, timeout=timeout, **kw)
    if check and r.returncode:
        raise AssertionError("%s -> %d\n%s\n%s" % (" ".join(cmd), r.returncode,
                                                   r.stdout.decode()[-2000:],
                                                   r.stderr.decode()[-2000:]))
    return r


def md5(p):
    h = hashlib.md5()
    with open(p, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


@pytest.fixture
def aws(s3c, tmp_path):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK,
               AWS_DEFAULT_REGION="us-east-1", HOME=str(tmp_path),
               AWS_CONFIG_FILE=str(tmp_path / "none"), AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"))

    def aws_(*args, check=True):
        return run([AWS, "--endpoint-url", s3c.url + "/s3", *args], env=env, check=check)
    return aws_


def test_aws_cli(aws, tmp_path):
    b = "awscli%05d" % random.randrange(10**5)
    aws("s3", "mb", "s3://" + b)
    assert b in aws("s3", "ls").stdout.decode()
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:
        for _ in range(200):
            f.write(os.urandom(1 << 20))
    aws("s3", "cp", str(big), "s3://%s/big.bin" % b)  # multipart: 25 parts of 8 MiB
    head = aws("s3api", "head-object", "--bucket", b, "--key", "big.bin").stdout.decode()
    assert '"ContentLength": 209715200' in head and '-25\\""' in head
    aws("s3", "cp", "s3://%s/big.bin" % b, str(tmp_path / "back.bin"))
    assert md5(tmp_path / "back.bin") == md5(big)

    tree = tmp_path / "tree"
    for d in ("a", "a/b", "c"):
        (tree / d).mkdir(parents=True, exist_ok=True)
    files = {"a/1.txt": b"one", "a/b/2.txt": b"two" * 1000, "c/3.bin": os.urandom(70000),
             "top.txt": b"top"}
    for k, v in files.items():
        (tree / k).write_bytes(v)
    aws("s3", "sync", str(tree), "s3://%s/tree/" % b)
    listed = aws("s3", "ls", "--recursive", "s3://%s/tree/" % b).stdout.decode()
    assert all(("tree/" + k) in listed for k in files)
    # a second sync has nothing to do; a change is picked up
    assert aws("s3", "sync", str(tree), "s3://%s/tree/" % b).stdout.strip() == b""
    (tree / "top.txt").write_bytes(b"changed top")
    out = aws("s3", "sync", str(tree), "s3://%s/tree/" % b).stdout.decode()
    assert "top.txt" in out and "1.txt" not in out
    down = tmp_path / "down"
    aws("s3", "sync", "s3://%s/tree/" % b, str(down))
    for k, v in files.items():
        want = b"changed top" if k == "top.txt" else v
        assert (down / k).read_bytes() == want

    l = aws("s3api", "list-objects-v2", "--bucket", b, "--prefix", "tree/", "--delimiter", "/")
    assert '"Prefix": "tree/a/"' in l.stdout.decode()
    aws("s3", "rm", "s3://%s/big.bin" % b)
    aws("s3", "rm", "--recursive", "s3://%s/tree/" % b)
    assert aws("s3", "ls", "--recursive", "s3://%s" % b).stdout.strip() == b""
    aws("s3", "rb", "s3://" + b)
    bad = aws("s3", "ls", "s3://" + b, check=False)
    assert bad.returncode != 0 and b"NoSuchBucket" in bad.stderr


def s3cmd_cfg(s3c, tmp_path):
    cfg = tmp_path / "s3cfg"
    cfg.write_text("[default]\naccess_key = %s\nsecret_key = %s\nhost_base = 127.0.0.1:%d\n"
                   "host_bucket = 127.0.0.1:%d\nuse_https = False\nsignature_v2 = False\n"
                   "bucket_location = us-east-1\n" % (AK, SK, s3c.s3_port, s3c.s3_port))
    return cfg


def test_s3cmd(s3c, tmp_path):
    cfg = s3cmd_cfg(s3c, tmp_path)
    b = "s3cmd%05d" % random.randrange(10**5)

    def s3cmd(*args, check=True):
        return run(["s3cmd", "-c", str(cfg), *args], check=check)

    s3cmd("mb", "s3://" + b)
    data = os.urandom(300000)
    src = tmp_path / "f.bin"
    src.write_bytes(data)
    s3cmd("put", str(src), "s3://%s/dir/f.bin" % b)
    assert "s3://%s/dir/f.bin" % b in s3cmd("ls", "--recursive", "s3://" + b).stdout.decode()
    s3cmd("get", "s3://%s/dir/f.bin" % b, str(tmp_path / "g.bin"))
    assert (tmp_path / "g.bin").read_bytes() == data
    tree = tmp_path / "tree"
    (tree / "x").mkdir(parents=True)
    (tree / "x" / "1").write_bytes(b"1")
    (tree / "2").write_bytes(os.urandom(20 << 20))  # s3cmd's multipart (15 MiB chunks)
    s3cmd("sync", str(tree) + "/", "s3://%s/tree/" % b)
    listed = s3cmd("ls", "--recursive", "s3://%s/tree/" % b).stdout.decode()
    assert "tree/x/1" in listed and "tree/2" in listed
    s3cmd("get", "s3://%s/tree/2" % b, str(tmp_path / "2.back"))
    assert md5(tmp_path / "2.back") == md5(tree / "2")
    s3cmd("del", "--recursive", "--force", "s3://%s/" % b)
    s3cmd("rb", "s3://" + b)


def test_rclone(s3c, tmp_path):
    conf = tmp_path / "rclone.conf"
    conf.write_text("[shoal]\ntype = s3\nprovider = Other\naccess_key_id = %s\n"
                    "secret_access_key = %s\nendpoint = http://127.0.0.1:%d\nregion = us-east-1\n"
                    "force_path_style = true\n" % (AK, SK, s3c.s3_port))
    b = "rclone%05d" % random.randrange(10**5)

    # rclone's SDK reads AWS_* (a CA bundle, say) from the environment
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}

    def rclone(*args, check=True):
        return run(["rclone", "--config", str(conf), *args], env=env, check=check)

    rclone("mkdir", "shoal:" + b)
    tree = tmp_path / "tree"
    (tree / "d").mkdir(parents=True)
    files = {"d/a": os.urandom(1000), "b": os.urandom(6 << 20), "c c": b"space"}
    for k, v in files.items():
        (tree / k).write_bytes(v)
    rclone("sync", str(tree), "shoal:%s/t" % b)
    listed = rclone("lsf", "-R", "shoal:%s/t" % b).stdout.decode().split()
    assert sorted(listed) == sorted(["b", "c", "c", "d/", "d/a"]) or "d/a" in listed
    rclone("check", str(tree), "shoal:%s/t" % b)  # sizes and MD5s match
    out = tmp_path / "out"
    rclone("copy", "shoal:%s/t" % b, str(out))
    for k, v in files.items():
        assert (out / k).read_bytes() == v
    rclone("purge", "shoal:" + b)
    assert requests.get(s3c.url + "/v1/health").status_code == 200


def test_s3cmd_redirect_mode(tmp_path):
    """With s3_redirect, s3cmd follows the TemporaryRedirect's <Endpoint> to
    the owning target, which verifies the re-signed request itself."""
    port = free_port_block(1)
    c = Cluster(targets=2, mountpaths=1,
                extra="--s3_api_keys %s:%s --s3_api_port %d --s3_redirect true"
                % (AK, SK, port)).start()
    try:
        c.s3_port = port
        cfg = s3cmd_cfg(c, tmp_path)

        def s3cmd(*args):
            return run(["s3cmd", "-c", str(cfg), *args])

        s3cmd("mb", "s3://redir")
        files = {}
        for i in range(6):  # keys spread over both targets
            files["k%d" % i] = os.urandom(1000 + i)
            (tmp_path / ("k%d" % i)).write_bytes(files["k%d" % i])
            s3cmd("put", str(tmp_path / ("k%d" % i)), "s3://redir/d/k%d" % i)
        listed = s3cmd("ls", "s3://redir/d/").stdout.decode()
        for i in range(6):
            assert "s3://redir/d/k%d" % i in listed
            s3cmd("get", "--force", "s3://redir/d/k%d" % i, str(tmp_path / ("g%d" % i)))
            assert (tmp_path / ("g%d" % i)).read_bytes() == files["k%d" % i]
        # the redirect really happened, and a target refuses a bad signature
        r = requests.get("%s/s3/redir/d/k0" % c.url, allow_redirects=False,
                         headers={"Authorization": "AWS4-HMAC-SHA256 Credential=%s/20260101/"
                                  "us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00"
                                  % AK})
        assert r.status_code == 403
        t = c.node_url(c.target_names()[0])
        r = requests.get(t + "/redir/d/k0")
        assert r.status_code == 403 and "<Code>AccessDenied</Code>" in r.text
    finally:
        bad = c.cleanup()
        assert not bad, bad


def test_sigv2_sdk_on_the_s3_port(s3c):
    """boto3 signing with SigV2 against the dedicated S3 port: bucket
    requests (it signs "/BUCKET/"), and its presigned GET carrying CORS
    headers. (Its bucket subresources it signs as "/BUCKET?acl?acl",
    which S3 refuses as well.)"""
    import boto3
    from botocore.config import Config
    v2 = boto3.client("s3", endpoint_url="http://127.0.0.1:%d" % s3c.s3_port,
                      aws_access_key_id=AK, aws_secret_access_key=SK, region_name="us-east-1",
                      config=Config(signature_version="s3"))
    b = "v2sdk%06d" % random.randrange(10**6)
    v2.create_bucket(Bucket=b, ACL="public-read")
    v2.put_object(Bucket=b, Key="k", Body=b"two")
    assert [o["Key"] for o in v2.list_objects(Bucket=b)["Contents"]] == ["k"]
    v2.head_bucket(Bucket=b)
    v4 = boto3.client("s3", endpoint_url="http://127.0.0.1:%d" % s3c.s3_port,
                      aws_access_key_id=AK, aws_secret_access_key=SK, region_name="us-east-1")
    assert any(g["Permission"] == "READ" for g in v4.get_bucket_acl(Bucket=b)["Grants"])
    rules = [{"AllowedOrigins": ["https://app.example.org"], "AllowedMethods": ["GET"]}]
    v4.put_bucket_cors(Bucket=b, CORSConfiguration={"CORSRules": rules})
    url = v2.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "k"})
    r = requests.get(url, headers={"Origin": "https://app.example.org"})
    assert r.status_code == 200 and r.content == b"two"
    assert r.headers["Access-Control-Allow-Origin"] == "https://app.example.org"
    v2.delete_object(Bucket=b, Key="k")
    v2.delete_bucket(Bucket=b)
