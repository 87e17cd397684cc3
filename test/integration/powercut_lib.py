"""faultfs (test/faultfs/) from the tests: mounts that lose, on command,
what a power cut would lose, and fail chosen paths with EIO or ENOSPC."""
import contextlib
import os
import shutil
import subprocess
import tempfile
import time

import pytest

from conftest import BUILD, ROOT, Cluster

FAULTFS = os.path.join(ROOT, BUILD, "bin", "faultfs")


def faultfs_usable():
    """Why faultfs cannot run here, or None."""
    if os.geteuid() != 0:
        return "mounting faultfs needs root"
    if not os.path.exists("/dev/fuse") or not shutil.which("fusermount3"):
        return "no /dev/fuse or fusermount3 (deploy/install-deps.sh installs fuse3)"
    if not os.access(FAULTFS, os.X_OK):
        return "no %s: make %s/bin/faultfs" % (FAULTFS, BUILD)
    return None


def mounted(path):
    """Whether path is a mount point, even a dead one (os.path.ismount
    calls a FUSE mount whose daemon died unmounted)."""
    path = os.path.realpath(path)
    with open("/proc/self/mounts") as f:
        return any(ln.split()[1] == path for ln in f)


class FaultFS:
    """One faultfs mount: the file system at mountpoint, its state in
    backing (made when not given, removed by cleanup)."""

    def __init__(self, mountpoint, backing=None):
        self.mnt = mountpoint
        self.own_backing = backing is None
        self.backing = backing or tempfile.mkdtemp(prefix="faultfs-back-")
        self.ctl_path = os.path.join(mountpoint, ".faultfs")
        self.proc = None

    def mount(self):
        os.makedirs(self.mnt, exist_ok=True)
        os.makedirs(self.backing, exist_ok=True)
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:abort_on_error=0")
        # auto_unmount: the mount goes with the process, however it ends
        self.proc = subprocess.Popen([FAULTFS, self.backing, self.mnt, "-f", "-o", "auto_unmount"],
                                     env=env, stdout=subprocess.DEVNULL,
                                     stderr=open(self.backing.rstrip("/") + ".log", "ab"))
        end = time.time() + 10
        while not (mounted(self.mnt) and os.path.exists(self.ctl_path)):
            assert self.proc.poll() is None, "faultfs exited with %s" % self.proc.returncode
            assert time.time() < end, "faultfs never mounted %s" % self.mnt
            time.sleep(0.02)
        return self

    def ctl(self, *commands):
        """Writes the commands to the control file; OSError when refused."""
        fd = os.open(self.ctl_path, os.O_WRONLY)
        try:
            os.write(fd, ("\n".join(commands) + "\n").encode())
        finally:
            os.close(fd)

    def status(self):
        with open(self.ctl_path) as f:
            lines = f.read().splitlines()
        out = {"fail": []}
        for ln in lines:
            k, _, v = ln.partition(" ")
            if k == "fail":
                out["fail"].append(v)
            else:
                out[k] = int(v) if v.isdigit() else v
        return out

    def cut(self):
        self.ctl("cut")

    def up(self):
        self.ctl("up")

    def sync(self):
        self.ctl("sync")

    def fail(self, prefix, err, ops="all"):
        self.ctl("fail %s %s %s" % (prefix, err, ops))

    def clear(self):
        self.ctl("clear")

    def kill(self):
        """faultfs itself dies (its mount goes with it): the next mount
        starts from the durable state, as after a power cut."""
        self.proc.kill()
        self.proc.wait(timeout=10)
        self._wait_unmounted()

    def _wait_unmounted(self):
        end = time.time() + 10
        while mounted(self.mnt) and time.time() < end:
            time.sleep(0.02)
        if mounted(self.mnt):
            subprocess.run(["umount", "-l", self.mnt], check=False)

    def unmount(self):
        """A clean unmount (faultfs syncs first); never leaves a mount."""
        if self.proc is None:
            return
        if mounted(self.mnt):
            subprocess.run(["fusermount3", "-u", self.mnt], check=False, capture_output=True)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._wait_unmounted()
        self.proc = None

    def cleanup(self):
        self.unmount()
        if self.own_backing:
            shutil.rmtree(self.backing, ignore_errors=True)
            with contextlib.suppress(OSError):
                os.unlink(self.backing.rstrip("/") + ".log")


@contextlib.contextmanager
def faultfs_mount(mountpoint=None):
    """A mounted FaultFS, unmounted and removed after (skips the test
    where faultfs cannot run)."""
    why = faultfs_usable()
    if why:
        pytest.skip(why)
    mine = mountpoint is None
    mnt = mountpoint or tempfile.mkdtemp(prefix="faultfs-mnt-")
    fs = FaultFS(mnt)
    try:
        yield fs.mount()
    finally:
        fs.cleanup()
        if mine:
            with contextlib.suppress(OSError):
                os.rmdir(mnt)


@contextlib.contextmanager
def faultfs_cluster(targets=2, mountpaths=1, **kw):
    """A started Cluster(**kw) whose every target keeps its mountpaths and
    state_dir on a faultfs of its own, mounted at data/tN (c.faultfs[i]
    for target i). The directories the daemons are given are made and
    synced first, as an operator's would be. Skips where faultfs cannot
    run; unmounts everything after, even on failure."""
    why = faultfs_usable()
    if why:
        pytest.skip(why)
    c = Cluster(targets=targets, mountpaths=mountpaths, **kw)
    c.faultfs = []
    try:
        for t in c.target_names():
            fs = FaultFS(os.path.join(c.data, t), os.path.join(c.data, "faultfs-" + t))
            c.faultfs.append(fs.mount())
            for sub in ["state"] + ["mp%d" % j for j in range(mountpaths)]:
                os.makedirs(os.path.join(fs.mnt, sub))
            fs.sync()
        c.start()
        yield c
    finally:
        for fs in c.faultfs:        # a test that failed between a cut and its "up"
            with contextlib.suppress(OSError):
                fs.up()
        c.stop()
        for fs in c.faultfs:
            fs.unmount()
        bad = c.sanitizer_reports()
        c.cleanup()
        assert not bad, "sanitizer reports in %s (kept in %s)" % (bad, c.data)


def node_names(c):
    return ["p%d" % i for i in range(c.proxies)] + c.target_names()


def cut_power(c):
    """The power goes: every faultfs drops what was not durable and fails
    all I/O, then every daemon dies by kill -9."""
    pids = []
    for n in node_names(c):
        with contextlib.suppress(OSError, ValueError):
            pids.append(c.pid(n))       # a target's pid file is on its faultfs: read it first
    for fs in c.faultfs:
        fs.cut()
    for p in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, 9)
    end = time.time() + 10
    while any(alive(p) for p in pids):
        assert time.time() < end, "daemons survived kill -9"
        time.sleep(0.02)


def restore_power(c):
    """The power comes back: the mounts serve their durable state and the
    daemons start again on the same directories."""
    for fs in c.faultfs:
        fs.up()
    c.start()


def alive(pid):
    """Whether any thread of pid still runs: a killed process's leader can
    be a zombie while its other threads still exit, and its sockets and
    files are closed only once the last one has."""
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return False
    for t in tasks:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, t)) as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    return True
        except OSError:
            pass
    return False
