"""A target holds no descriptor of a deleted file: the warm-read cache
lets go of an object's file within a couple of seconds of its DELETE or
overwrite, even when no read comes after."""
import concurrent.futures
import os
import random
import time

from conftest import Cluster

NAMES = 300
ROUNDS = 3


def deleted_data_fds(c, t):
    """The descriptors target t holds on deleted files of its mountpaths'
    object data (RocksDB's own files, in each mountpath's meta directory,
    are its business)."""
    pid, root = c.pid(t), os.path.join(c.data, t)
    out = []
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            path = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue     # closed meanwhile
        if path.endswith(" (deleted)") and path.startswith(root) and \
                os.sep + "data" + os.sep in path[len(root):]:
            out.append(path)
    return out


def test_deleted_and_overwritten_files_are_let_go():
    """Rounds of PUT, GET (twice, so every worker's cache keeps files),
    overwrite and DELETE over 300 names on three targets, about 4,000
    operations: 3 s after the last, no target holds a deleted data
    file."""
    c = Cluster(targets=3, mountpaths=2, extra="--workers 4").start()
    try:
        assert c.http.put(c.url + "/v1/buckets/fl").status_code == 201
        url = c.url + "/v1/objects/fl/o%d"
        rng = random.Random(7)
        body = {i: os.urandom(rng.randrange(1024, 64 << 10)) for i in range(NAMES)}

        def put(i):
            r = c.http.put(url % i, body[i])
            assert r.status_code == 201, r.text

        def get(i):
            r = c.http.get(url % i)
            assert r.status_code == 200 and r.content == body[i], (i, r.status_code)

        def delete(i):
            assert c.http.delete(url % i).status_code in (200, 204)

        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            for _ in range(ROUNDS):
                list(ex.map(put, range(NAMES)))
                list(ex.map(get, range(NAMES)))
                list(ex.map(get, range(NAMES)))
                for i in range(0, NAMES, 2):      # half overwritten
                    body[i] = os.urandom(len(body[i]))
                list(ex.map(put, range(0, NAMES, 2)))
                list(ex.map(delete, range(0, NAMES, 3)))   # a third deleted
        time.sleep(3)
        held = {t: len(deleted_data_fds(c, t)) for t in c.target_names()}
        assert not any(held.values()), held
    finally:
        assert not c.cleanup()
