"""faultfs itself: a cut keeps exactly what fsync, fdatasync and directory
fsyncs made durable; injected EIO and ENOSPC reach the caller."""
import errno
import os
import threading
import time

import pytest

from powercut_lib import FaultFS, faultfs_mount


def put(path, data, sync=False):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def sync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def power_cut(fs):
    fs.cut()
    fs.up()


@pytest.fixture
def fs():
    with faultfs_mount() as m:
        yield m


def test_unsynced_data_and_names_are_dropped(fs):
    m = fs.mnt
    os.mkdir(m + "/d")
    sync_dir(m)
    put(m + "/d/kept", b"v1", sync=True)
    sync_dir(m + "/d")
    put(m + "/d/never", b"not synced at all")
    put(m + "/d/nodir", b"file synced, directory not", sync=True)
    put(m + "/d/kept", b"version two, longer, never synced")
    assert read(m + "/d/kept").startswith(b"version two")
    power_cut(fs)
    assert sorted(os.listdir(m + "/d")) == ["kept"]
    assert read(m + "/d/kept") == b"v1"


def test_directory_sync_without_file_sync_keeps_an_empty_file(fs):
    m = fs.mnt
    put(m + "/empty", b"bytes never synced")
    sync_dir(m)
    power_cut(fs)
    assert read(m + "/empty") == b""


def test_rename_into_place_is_durable_with_both_syncs(fs):
    """The write protocol of a PUT: work file, fsync, rename, fsync dir."""
    m = fs.mnt
    os.mkdir(m + "/work")
    os.mkdir(m + "/data")
    sync_dir(m)
    blob = os.urandom(300 * 1024 + 17)
    put(m + "/work/obj.tmp", blob, sync=True)
    os.rename(m + "/work/obj.tmp", m + "/data/obj")
    sync_dir(m + "/data")
    # renamed but its directory not synced: still under the old name after a cut
    put(m + "/work/other.tmp", b"other", sync=True)
    sync_dir(m + "/work")
    os.rename(m + "/work/other.tmp", m + "/data/other")
    power_cut(fs)
    assert read(m + "/data/obj") == blob
    assert os.listdir(m + "/data") == ["obj"]
    assert os.listdir(m + "/work") == ["other.tmp"]
    assert read(m + "/work/other.tmp") == b"other"


def test_unlink_and_rename_revert_without_directory_sync(fs):
    m = fs.mnt
    put(m + "/a", b"A", sync=True)
    put(m + "/b", b"B", sync=True)
    os.link(m + "/a", m + "/a2")
    sync_dir(m)
    os.unlink(m + "/a")
    os.rename(m + "/b", m + "/c")
    power_cut(fs)
    assert sorted(os.listdir(m)) == ["a", "a2", "b"]
    assert os.stat(m + "/a").st_ino == os.stat(m + "/a2").st_ino     # still one file
    os.unlink(m + "/a")
    os.rename(m + "/b", m + "/c")
    sync_dir(m)
    power_cut(fs)
    assert sorted(os.listdir(m)) == ["a2", "c"]
    assert read(m + "/c") == b"B"


def test_a_freed_inode_number_never_carries_the_old_file(fs):
    """Threads create and delete files in one directory while others
    write files in another and sync them and their directory (a store's
    data/ and work/; in one directory the kernel orders the two): a new file that gets the number a deleted
    one just freed keeps its own bytes through a cut (faultfs tracks files
    by inode number: the number's old node must be gone before it can be
    handed out again). "slow-forget" widens the window between the two
    from nanoseconds to 2 ms, so that a reuse happens in every run."""
    m = fs.mnt
    os.mkdir(m + "/d")
    os.mkdir(m + "/churn")
    sync_dir(m)
    fs.ctl("slow-forget 2000")
    stop = threading.Event()
    kept, lock = [], threading.Lock()

    def churn(k):
        for i in range(200000):          # bounded; stops when the writers are done
            if stop.is_set():
                return
            put("%s/churn/gone-%d-%d" % (m, k, i % 4), b"x")
            os.unlink("%s/churn/gone-%d-%d" % (m, k, i % 4))

    def write(k):
        for j in range(20000):
            if stop.is_set():
                return
            put("%s/d/kept-%d-%d" % (m, k, j), b"%08d" % j * 64, sync=True)
            sync_dir(m + "/d")
            with lock:
                kept.append((k, j))

    threads = [threading.Thread(target=churn, args=(k,)) for k in range(3)]
    threads += [threading.Thread(target=write, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    time.sleep(3)
    stop.set()
    for t in threads:
        t.join()
    assert len(kept) > 50
    power_cut(fs)
    wrong = [kj for kj in kept if read("%s/d/kept-%d-%d" % (m, *kj)) != b"%08d" % kj[1] * 64]
    assert not wrong, "%d of %d synced files lost their bytes: %s" % (
        len(wrong), len(kept), wrong[:10])


def test_truncate_and_overwrite(fs):
    m = fs.mnt
    put(m + "/t", b"0123456789", sync=True)
    sync_dir(m)
    os.truncate(m + "/t", 3)
    power_cut(fs)
    assert read(m + "/t") == b"0123456789"     # the truncate was never synced
    fd = os.open(m + "/t", os.O_RDWR)
    os.ftruncate(fd, 3)
    os.pwrite(fd, b"xy", 8)                    # the hole must read as zeros
    os.fdatasync(fd)
    os.pwrite(fd, b"Z", 0)                     # after the sync: lost
    os.close(fd)
    power_cut(fs)
    assert read(m + "/t") == b"012\0\0\0\0\0xy"


def test_cut_kills_open_handles_until_up(fs):
    m = fs.mnt
    put(m + "/f", b"durable", sync=True)
    sync_dir(m)
    fd = os.open(m + "/f", os.O_RDWR)
    fs.cut()
    assert fs.status()["state"] == "down"
    with pytest.raises(OSError) as e:
        os.stat(m + "/f")
    assert e.value.errno == errno.EIO
    fs.up()
    for op in (lambda: os.write(fd, b"more"), lambda: os.fsync(fd), lambda: os.pread(fd, 4, 0)):
        with pytest.raises(OSError) as e:
            op()
        assert e.value.errno == errno.EIO
    os.close(fd)
    assert read(m + "/f") == b"durable"
    st = fs.status()
    assert st["state"] == "up" and st["cuts"] == 1


def test_sync_command_and_clean_unmount_keep_everything(fs):
    m = fs.mnt
    os.makedirs(m + "/x/y")
    put(m + "/x/y/z", b"zz")
    os.symlink("y/z", m + "/x/link")
    fs.sync()
    power_cut(fs)
    assert read(m + "/x/link") == b"zz"
    put(m + "/x/late", b"late")
    fs.unmount()                               # clean: faultfs syncs first
    fs.mount()
    assert read(m + "/x/late") == b"late"
    put(m + "/x/lost", b"lost")
    fs.kill()                                  # faultfs dies: a mount starts from durable state
    fs.mount()
    assert not os.path.exists(m + "/x/lost")
    assert read(m + "/x/y/z") == b"zz"


@pytest.mark.parametrize("err", ["ENOSPC", "EIO"])
def test_injected_errors_reach_the_caller(fs, err):
    m = fs.mnt
    code = getattr(errno, err)
    os.makedirs(m + "/full/d")
    os.makedirs(m + "/fuller")
    put(m + "/full/old", b"old", sync=True)
    fd = os.open(m + "/full/open", os.O_WRONLY | os.O_CREAT)
    fs.fail("/full", err, "write")
    assert "/full %s write" % err in fs.status()["fail"]
    for op in (lambda: put(m + "/full/new", b"x"),
               lambda: os.write(fd, b"x"),
               lambda: os.fsync(fd),
               lambda: os.mkdir(m + "/full/d2"),
               lambda: os.rename(m + "/fuller", m + "/full/moved"),
               lambda: sync_dir(m + "/full/d"),
               lambda: os.truncate(m + "/full/old", 0)):
        with pytest.raises(OSError) as e:
            op()
        assert e.value.errno == code
    assert read(m + "/full/old") == b"old"     # reads still work, nothing changed
    put(m + "/fuller/ok", b"ok")               # a sibling whose name starts alike: untouched
    os.unlink(m + "/full/old")                 # unlink never fails
    fs.clear()
    fs.fail("/full", err, "read")
    put(m + "/full/r", b"unread")
    with pytest.raises(OSError) as e:
        read(m + "/full/r")
    assert e.value.errno == code
    fs.clear()
    assert fs.status()["fail"] == []
    os.write(fd, b"now")
    os.fsync(fd)
    os.close(fd)
    assert read(m + "/full/r") == b"unread"
    assert fs.status()["injected"] >= 8


def test_bad_commands_are_refused(fs):
    for bad in ("nonsense", "fail /x EWHAT", "fail x EIO", "fail /x EIO sometimes", "cut now"):
        with pytest.raises(OSError) as e:
            fs.ctl(bad)
        assert e.value.errno == errno.EINVAL, bad
    assert fs.status()["cuts"] == 0 and fs.status()["fail"] == []


def test_mount_over_existing_backing_shows_durable_state(tmp_path):
    with faultfs_mount() as a:
        put(a.mnt + "/keep", b"k", sync=True)
        sync_dir(a.mnt)
        backing = a.backing
        a.own_backing = False
        a.kill()
    b = FaultFS(str(tmp_path / "mnt"), backing)
    try:
        b.mount()
        assert os.listdir(b.mnt) == ["keep"] and read(b.mnt + "/keep") == b"k"
    finally:
        b.cleanup()
        b.own_backing = True
        b.cleanup()
