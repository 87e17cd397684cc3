"""Running Shoal as an operator installs it: --help, --version and
--check-config per role, the example configs in deploy/config/ (current
and valid), make install, and the systemd units (systemd-analyze verify)."""
import os
import shutil
import subprocess
import tempfile

import pytest

from conftest import BUILD, ROOT, SANITIZED


def run(*args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=120, **kw)


def binary(name):
    return os.path.join(ROOT, BUILD, "bin", name)


def secret_file(d, name="cluster.secret", text="0123456789abcdef0123456789abcdef\n"):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)
    return path


def test_help_is_per_role_on_stdout_and_version_names_the_revision():
    proxy = run(binary("shoal-proxy"), "--help")
    target = run(binary("shoal-target"), "--help")
    assert proxy.returncode == 0 and target.returncode == 0
    assert proxy.stderr == "" and target.stderr == ""
    assert "--mountpaths" in target.stdout and "--mountpaths" not in proxy.stdout
    assert "--raft_port" in proxy.stdout and "--raft_port" not in target.stdout
    assert "--scrub_mbps" in target.stdout and "--s3_redirect" in proxy.stdout
    for out in (proxy.stdout, target.stdout):
        assert "--port" in out and "--cluster_secret_file" in out and "--version" in out
    v = run(binary("shoal-target"), "--version")
    assert v.returncode == 0 and v.stdout.startswith("shoal-target 0."), v.stdout
    rev = run("git", "-C", ROOT, "rev-parse", "--short=12", "HEAD")
    if rev.returncode == 0:
        assert "(git " + rev.stdout.strip() in v.stdout, (v.stdout, rev.stdout)
    assert run(binary("shoal-proxy"), "--version").stdout.startswith("shoal-proxy 0.")


def test_example_configs_are_current_and_valid():
    with tempfile.TemporaryDirectory() as d:
        r = run(os.path.join(ROOT, "deploy", "config", "generate.sh"), d,
                env=dict(os.environ, SHOAL_BUILD=os.path.join(ROOT, BUILD)))
        assert r.returncode == 0, r.stderr
        for role in ("proxy", "target"):
            fresh = open(os.path.join(d, role + ".json")).read()
            kept = open(os.path.join(ROOT, "deploy", "config", role + ".json")).read()
            assert fresh == kept, "deploy/config/%s.json is stale: run deploy/config/generate.sh" % role
        secret = secret_file(d)
        keys = secret_file(d, "auth_keys", "# the clients' keys\nAK:SK\n")
        conf = os.path.join(ROOT, "deploy", "config")
        p = run(binary("shoal-proxy"), "--config", conf + "/proxy.json", "--cluster_secret_file",
                secret, "--auth_keys_file", keys, "--check-config")
        assert p.returncode == 0 and "valid" in p.stdout, p.stderr
        t = run(binary("shoal-target"), "--config", conf + "/target.json", "--cluster_secret_file",
                secret, "--auth_keys_file", keys, "--mountpaths", d + "/mp0", "--state_dir", d,
                "--check-config")
        assert t.returncode == 0 and "valid" in t.stdout, t.stderr
        # every option of the role is in its file, each under a comment
        help_opts = [l.split()[0][2:] for l in run(binary("shoal-target"), "--help").stdout
                     .splitlines() if l.startswith("  --") and "another name" not in l]
        text = open(conf + "/target.json").read()
        for o in help_opts:
            assert '\n  "%s": ' % o in text, o
        assert text.count("\n  # ") == len(help_opts)
        # a bad value is refused with the option named, exit status 2
        bad = run(binary("shoal-proxy"), "--config", conf + "/proxy.json", "--cluster_secret_file",
                  secret, "--auth_keys_file", keys, "--port", "0", "--check-config")
        assert bad.returncode == 2 and "port" in bad.stderr and bad.stdout == ""
        with open(d + "/broken.json", "w") as f:
            f.write("# comment\n{\n  \"port\": 1,\n}\n")
        bad = run(binary("shoal-proxy"), "--config", d + "/broken.json", "--check-config")
        assert bad.returncode == 2 and "line 4" in bad.stderr, bad.stderr


def test_make_install_and_systemd_units():
    """make install lays out binaries, units, the sysusers entry, configs
    (an existing one is kept), the README and the example transforms;
    systemd-analyze verify accepts both units with no warning."""
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze is not installed")
    with tempfile.TemporaryDirectory() as d:
        prefix, etc = d + "/usr", d + "/etc"
        os.makedirs(etc + "/shoal")
        with open(etc + "/shoal/proxy.json", "w") as f:
            f.write("{}\n")
        r = run("make", "-C", ROOT, "--no-print-directory", "install", "BUILD=" + BUILD,
                "SANITIZE=%d" % SANITIZED,
                "PREFIX=" + prefix, "SYSCONFDIR=" + etc)
        assert r.returncode == 0, r.stdout + r.stderr
        for b in ("shoal-proxy", "shoal-target", "shoal-loader", "shoal"):
            assert os.access(prefix + "/bin/" + b, os.X_OK), b
        assert open(etc + "/shoal/proxy.json").read() == "{}\n"   # kept
        assert open(etc + "/shoal/target.json").read() == \
            open(ROOT + "/deploy/config/target.json").read()
        assert os.path.exists(prefix + "/lib/sysusers.d/shoal.conf")
        assert os.path.exists(prefix + "/share/doc/shoal/README.md")
        assert os.access(prefix + "/share/shoal/transforms/hash.py", os.X_OK)
        units = prefix + "/lib/systemd/system/"
        proxy = open(units + "shoal-proxy.service").read()
        assert "ExecStart=%s/bin/shoal-proxy --config %s/shoal/proxy.json" % (prefix, etc) in proxy
        for h in ("ProtectSystem=strict", "NoNewPrivileges=yes", "LimitNOFILE="):
            assert h in proxy, h
        shutil.copy(units + "shoal-target@.service", units + "shoal-target@1.service")
        for u in ("shoal-proxy.service", "shoal-target@1.service"):
            v = run("systemd-analyze", "verify", "--man=no", units + u)
            assert v.returncode == 0 and v.stderr.strip() == "", (u, v.stderr)
        # verify does catch a broken unit
        with open(units + "broken.service", "w") as f:
            f.write(proxy.replace("Restart=on-failure", "Restart=sometimes"))
        v = run("systemd-analyze", "verify", "--man=no", units + "broken.service")
        assert "restart specifier" in v.stderr, v.stderr
