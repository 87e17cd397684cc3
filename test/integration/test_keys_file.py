"""Client secrets kept off command lines: deploy/local/cluster.sh gives
the daemons SHOAL_AUTH_KEYS as a file of mode 0600 (auth_keys_file), so
no process's command line or the daemons' environment holds a secret,
while signed requests work with every key of the file; a keys file others
may read is refused at start with the chmod to run; keys still given with
--auth_keys work, with a warning in the log that names auth_keys_file."""
import os
import subprocess
import time

import pytest
import requests

from conftest import BUILD, ROOT, SigV4, free_port_block, running_cluster

AK, SK = "FILEKEY1", "file-secret-0123456789"
AK2, SK2 = "FILEKEY2", "file-secret-9876543210"
WARNING = "client secrets were given on the command line"


@pytest.fixture(scope="module")
def kc():
    yield from running_cluster(targets=2, mountpaths=1,
                               env={"SHOAL_AUTH_KEYS": "%s:%s,%s:%s" % (AK, SK, AK2, SK2)})


def proc_file(pid, name):
    try:
        with open("/proc/%s/%s" % (pid, name), "rb") as f:
            return f.read()
    except OSError:      # gone meanwhile, or not ours to read
        return b""


def test_no_secret_on_a_command_line(kc):
    nodes = ["p0", "t0", "t1"]
    keys = os.path.join(kc.data, "auth_keys")
    assert os.stat(keys).st_mode & 0o777 == 0o600
    for n in nodes:
        cmd = proc_file(kc.pid(n), "cmdline").split(b"\0")
        assert cmd[0].endswith((b"shoal-proxy", b"shoal-target")), cmd
        assert cmd[cmd.index(b"--auth_keys_file") + 1] == keys.encode()
        assert b"--auth_keys" not in cmd
        env = proc_file(kc.pid(n), "environ")
        assert env and SK.encode() not in env and SK2.encode() not in env
    leaks = [pid for pid in os.listdir("/proc") if pid.isdigit() and
             any(s in proc_file(pid, "cmdline") for s in (SK.encode(), SK2.encode()))]
    assert leaks == [], [proc_file(p, "cmdline") for p in leaks]
    for n in nodes:
        log = open(os.path.join(kc.data, "logs", n + ".log")).read()
        assert WARNING not in log and "no auth_keys configured" not in log


def test_signed_requests_work_with_the_files_keys(kc):
    url = kc.url + "/v1/buckets/kf"
    assert requests.put(url).status_code == 403
    assert requests.put(url, auth=SigV4(AK, "not-the-secret")).status_code == 403
    for i, (ak, sk) in enumerate(((AK, SK), (AK2, SK2))):
        # each key in a bucket of its own (a bucket is its creator's)
        assert requests.put(url + str(i), auth=SigV4(ak, sk)).status_code == 201
        obj = kc.url + "/v1/objects/kf%d/o%d" % (i, i)
        body = os.urandom(4096)
        assert requests.put(obj, data=body, auth=SigV4(ak, sk)).status_code in (200, 201)
        r = requests.get(obj, auth=SigV4(ak, sk))
        assert r.status_code == 200 and r.content == body
        assert requests.get(obj).status_code == 403


def daemon(tmp_path, *args):
    """shoal-proxy on a free loopback port with a cluster secret of its own
    and args: the Popen, its port and the file its stderr goes to."""
    secret = tmp_path / "cluster.secret"
    secret.write_text("0123456789abcdef0123456789abcdef\n")
    secret.chmod(0o600)
    port = free_port_block(2)
    log = tmp_path / "proxy.log"
    p = subprocess.Popen([os.path.join(ROOT, BUILD, "bin", "shoal-proxy"), "--port", str(port),
                          "--raft_port", str(port + 1), "--state_dir", str(tmp_path / "state"),
                          "--cluster_secret_file", str(secret), *args],
                         stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    return p, port, log


def test_a_keys_file_others_may_read_is_refused(tmp_path):
    keys = tmp_path / "auth_keys"
    keys.write_text("%s:%s\n" % (AK, SK))
    keys.chmod(0o644)
    p, _, log = daemon(tmp_path, "--auth_keys_file", str(keys))
    assert p.wait(timeout=30) == 2
    err = log.read_text()
    assert "auth_keys_file %s: mode 644" % keys in err, err
    assert "chmod 600 %s" % keys in err and SK not in err
    # --check-config says the same
    r = subprocess.run([os.path.join(ROOT, BUILD, "bin", "shoal-target"), "--auth_keys_file",
                        str(keys), "--check-config"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "chmod 600 %s" % keys in r.stderr


def test_keys_on_the_command_line_work_with_a_warning(tmp_path):
    p, port, log = daemon(tmp_path, "--auth_keys", "%s:%s" % (AK, SK))
    try:
        url = "http://127.0.0.1:%d" % port
        end = time.time() + 30
        while time.time() < end:
            try:
                if requests.get(url + "/v1/health", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert p.poll() is None, log.read_text()
            time.sleep(0.1)
        assert requests.put(url + "/v1/buckets/kw").status_code == 403
        assert requests.put(url + "/v1/buckets/kw", auth=SigV4(AK, SK)).status_code == 201
        text = log.read_text()
        assert WARNING in text and "auth_keys_file" in text, text
    finally:
        p.terminate()
        p.wait(timeout=30)
