"""Bodies are streamed: 16 concurrent 128 MiB PUTs, then 16 GETs, keep a target's RSS low."""
import hashlib
import threading

import pytest
import requests

from conftest import SANITIZED, Cluster

SIZE = 128 << 20
N = 16
LIMIT_KIB = 256 * 1024


def peak_rss_kib(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


@pytest.mark.skipif(SANITIZED, reason="sanitizer shadow memory makes RSS meaningless")
def test_target_rss_under_256mib_with_16_concurrent_128mib_streams():
    c = Cluster(targets=1, mountpaths=2, extra="--workers 2").start()
    try:
        assert c.http.put(c.url + "/v1/buckets/mem").status_code == 201
        block = bytes(range(256)) * 4096  # 1 MiB

        def body():
            for _ in range(SIZE // len(block)):
                yield block

        want = hashlib.sha256()
        for _ in range(SIZE // len(block)):
            want.update(block)
        errors = []

        def put(i):
            try:
                u = c.url + "/v1/objects/mem/big-%d" % i
                loc = requests.put(u, b"", allow_redirects=False).headers["Location"]
                r = requests.put(loc, data=body(), timeout=300)
                if r.status_code != 201 or r.json()["size"] != SIZE:
                    errors.append(r.text)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))

        def get(i):
            try:
                r = requests.get(c.url + "/v1/objects/mem/big-%d" % i, stream=True, timeout=300)
                h = hashlib.sha256()
                for chunk in r.iter_content(1 << 20):
                    h.update(chunk)
                if h.digest() != want.digest():
                    errors.append("object %d differs" % i)
            except Exception as e:  # noqa: BLE001
                errors.append(repr(e))

        for fn in (put, get):
            ts = [threading.Thread(target=fn, args=(i,)) for i in range(N)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            assert not errors, errors[:3]
        peak = peak_rss_kib(c.pid("t0"))
        print("target peak RSS: %d KiB" % peak)
        assert peak < LIMIT_KIB, "peak RSS %d KiB" % peak
    finally:
        assert not c.cleanup()
