"""The Kueue admission check of deploy/kueue/controller.py, against real
clusters with an s3rver backend: a workload's data set is prefetched
(Pending, then Ready, one job however often it is polled), missing objects
give Retry with a growing back-off and a new job per attempt, malformed
specs are Rejected, and the controller's own SigV4 signing and bearer
tokens are accepted by a cluster with keys while wrong keys are a clear
error. The Kubernetes side cannot run here and is not tested."""
import importlib.util
import json
import os
import time
import uuid

import pytest
import requests

from conftest import ROOT, S3rver, free_port_block, running_cluster

spec = importlib.util.spec_from_file_location(
    "shoal_kueue_controller", os.path.join(ROOT, "deploy", "kueue", "controller.py"))
ctl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ctl)

AK, SK = "KUEUEAK1", "kueue-secret-0123"
NSHARDS = 300
SHARDS = "ds/shard-{0000..%04d}.tar" % (NSHARDS - 1)


@pytest.fixture(scope="module")
def s3():
    srv = S3rver(buckets=("kq",)).start()
    c = srv.client()
    for i in range(NSHARDS):
        c.put_object(Bucket="kq", Key="ds/shard-%04d.tar" % i, Body=os.urandom(16384))
    for k in ("ok/a", "ok/b"):
        c.put_object(Bucket="kq", Key=k, Body=b"present " + k.encode())
    yield srv
    srv.cleanup()


@pytest.fixture(scope="module")
def cl(s3):
    # one object at a time per target, so a prefetch is seen running
    yield from running_cluster(env=s3.env(), extra="--job_workers 1")


@pytest.fixture(scope="module")
def kc(s3):
    yield from running_cluster(targets=2, mountpaths=1, env=s3.env(),
                               extra="--auth_keys %s:%s" % (AK, SK))


def drive(shoal, uid, spec_text, attempt=0, not_before=None, polls=240, **kw):
    """reconcile() as the controller's loop would call it, until the check
    leaves Pending (bounded); every decision seen."""
    seen = []
    for _ in range(polls):
        d = ctl.reconcile(shoal, uid, spec_text, attempt, not_before, **kw)
        seen.append(d)
        if d.state != ctl.PENDING:
            return seen
        time.sleep(0.1)
    raise AssertionError("still Pending after %d polls: %s" % (polls, seen[-1]))


def jobs_with_key(c, key):
    r = c.http.get(c.url + "/v1/jobs?kind=prefetch&bucket=kq", timeout=30)
    assert r.status_code == 200, r.text
    return [j["id"] for j in r.json()["jobs"] if j.get("key") == key]


def test_pending_then_ready_then_the_same_job(cl):
    shoal = ctl.Shoal(cl.url)
    uid = str(uuid.uuid4())
    text = json.dumps({"bucket": "kq", "provider": "s3", "template": SHARDS})
    seen = drive(shoal, uid, text)
    assert seen[0].state == ctl.PENDING and " running" in seen[0].message, seen[0]
    assert "of %d objects held" % NSHARDS in seen[0].message, seen[0]
    assert seen[-1].state == ctl.READY, seen[-1]
    assert len({d.job for d in seen}) == 1 and seen[0].job
    assert all(d.key == ctl.job_key(uid, 0) for d in seen)
    ready = seen[-1].message
    assert "%d of %d objects held" % (NSHARDS, NSHARDS) in ready, ready
    assert "Shoal holds 100%% of it (%d of %d objects)" % (NSHARDS, NSHARDS) in ready, ready
    s = requests.get(cl.url + "/v1/buckets/kq/summary",
                     params={"provider": "s3", "template": SHARDS}, timeout=60).json()
    assert s["cached_pct"] == 100 and s["objects"]["present"] == NSHARDS, s
    g = requests.get(cl.url + "/v1/objects/kq/ds/shard-0123.tar?provider=s3", timeout=30)
    assert g.status_code == 200 and g.headers["X-Shoal-Cache"] == "hit"
    # polled again (a restarted controller does the same): the same job
    again = ctl.reconcile(shoal, uid, text)
    assert (again.state, again.job) == (ctl.READY, seen[0].job), again
    assert jobs_with_key(cl, ctl.job_key(uid, 0)) == [seen[0].job]


def test_missing_objects_retry_with_backoff(s3, cl):
    shoal = ctl.Shoal(cl.url)
    uid = str(uuid.uuid4())
    text = json.dumps({"bucket": "kq", "provider": "s3",
                       "names": ["ok/a", "miss/x", "miss/y"]})
    first = drive(shoal, uid, text, backoff_s=2, backoff_max_s=3)[-1]
    assert first.state == ctl.RETRY, first
    assert "miss/x" in first.message and "miss/y" in first.message, first.message
    assert "ok/a" not in first.message and "2 errors" in first.message, first.message
    assert (first.attempt, first.requeue_after) == (1, 2), first
    assert "next attempt in 2 s" in first.message
    # within the back-off: still waiting, and no job of attempt 1 yet
    wait = ctl.reconcile(shoal, uid, text, first.attempt, first.not_before,
                         backoff_s=2, backoff_max_s=3)
    assert wait.state == ctl.PENDING and "back-off" in wait.message, wait
    assert jobs_with_key(cl, ctl.job_key(uid, 1)) == []
    time.sleep(max(0, first.not_before - time.time()) + 0.1)
    second = drive(shoal, uid, text, first.attempt, first.not_before,
                   backoff_s=2, backoff_max_s=3)[-1]
    assert second.state == ctl.RETRY and second.job != first.job, second
    assert second.key == ctl.job_key(uid, 1) != first.key
    assert (second.attempt, second.requeue_after) == (2, 3), second   # 4 s, capped at 3
    # the objects appear in the bucket: the next attempt is Ready
    for k in ("miss/x", "miss/y"):
        s3.client().put_object(Bucket="kq", Key=k, Body=b"late " + k.encode())
    time.sleep(max(0, second.not_before - time.time()) + 0.1)
    third = drive(shoal, uid, text, second.attempt, second.not_before)[-1]
    assert third.state == ctl.READY and third.job not in (first.job, second.job), third
    assert "3 of 3 objects held (2 fetched, 1 already there)" in third.message, third.message
    assert [ctl.backoff(n, 30, 1800) for n in (1, 2, 3, 7, 20)] == [30, 60, 120, 1800, 1800]


def test_malformed_specs_are_rejected(cl):
    shoal = ctl.Shoal(cl.url)
    assert cl.http.put(cl.url + "/v1/buckets/kq-local").status_code in (201, 409)
    local = {
        "not json": "is not JSON",
        "[1, 2]": "must be a JSON object",
        '{"prefix": "ds/"}': "needs a bucket",
        '{"bucket": "kq", "prefix": "a", "template": "b{1..2}"}': "not prefix and template",
        '{"bucket": "kq", "tempalte": "ds/{0..9}"}': "unknown fields tempalte",
        '{"bucket": "kq", "names": []}': "non-empty list",
    }
    for text, want in local.items():
        uid = str(uuid.uuid4())
        d = ctl.reconcile(shoal, uid, text)
        assert d.state == ctl.REJECTED and want in d.message, (text, d)
        assert jobs_with_key(cl, ctl.job_key(uid, 0)) == []
    refused = [{"bucket": "kq", "provider": "s3", "template": "x{9..}"},
               {"bucket": "kq", "provider": "s3", "names": ["a", "../b"]},
               {"bucket": "kq-local", "names": ["a"]}]      # no backend to fetch from
    for doc in refused:
        uid = str(uuid.uuid4())
        d = ctl.reconcile(shoal, uid, json.dumps(doc))
        assert d.state == ctl.REJECTED and "refused the prefetch job (400)" in d.message, d
        assert jobs_with_key(cl, ctl.job_key(uid, 0)) == []
    # a bucket Shoal does not know may be created later: Retry, not Rejected
    d = ctl.reconcile(shoal, str(uuid.uuid4()), '{"bucket": "kq-none", "names": ["a"]}')
    assert d.state == ctl.RETRY and d.requeue_after == 30, d


def test_unreachable_shoal_keeps_pending():
    port = free_port_block(1)
    d = ctl.reconcile(ctl.Shoal("http://127.0.0.1:%d" % port, timeout=5), "u1",
                      '{"bucket": "kq", "names": ["a"]}')
    assert d.state == ctl.PENDING and "cannot be reached" in d.message, d


def test_sigv4_matches_botocore():
    """The standard-library signer against botocore's, at a fixed time, for
    the shapes the controller sends (a JSON POST; a GET with a query)."""
    import datetime
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    at = datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.timezone.utc)
    cases = [("POST", "http://127.0.0.1:8080/v1/jobs", b'{"kind": "prefetch"}'),
             ("GET", "http://h:1/v1/buckets/kq/summary?provider=s3&template=ds%2Fa%7B1..2%7D",
              b"")]
    for method, url, body in cases:
        mine = ctl.sigv4_headers(method, url, body, AK, SK, now=at)
        req = AWSRequest(method=method, url=url, data=body,
                         headers={"X-Amz-Date": mine["X-Amz-Date"],
                                  "X-Amz-Content-SHA256": mine["X-Amz-Content-SHA256"]})
        req.context["timestamp"] = "20240506T070809Z"
        auth = S3SigV4Auth(Credentials(AK, SK), "s3", "us-east-1")
        sig = auth.signature(auth.string_to_sign(req, auth.canonical_request(req)), req)
        assert mine["Authorization"].endswith("Signature=" + sig), (url, mine)
        assert "SignedHeaders=host;x-amz-content-sha256;x-amz-date," in mine["Authorization"]


def test_keys_sigv4_and_tokens(kc):
    signed = ctl.Shoal(kc.url, AK, SK)
    signed.probe()
    uid = str(uuid.uuid4())
    text = json.dumps({"bucket": "kq", "provider": "s3", "template": "ds/shard-{0000..0019}.tar"})
    d = drive(signed, uid, text)[-1]
    assert d.state == ctl.READY and "Shoal holds 100% of it (20 of 20" in d.message, d
    # a token minted with the keys works as well, and finds the same job
    tok = ctl.Shoal(kc.url, token=signed.new_token(600))
    again = ctl.reconcile(tok, uid, text)
    assert (again.state, again.job) == (ctl.READY, d.job), again
    bad = [(ctl.Shoal(kc.url, AK, "wrong-secret-0000"), "with SigV4 key %s" % AK),
           (ctl.Shoal(kc.url, "NOSUCHKEY", SK), "with SigV4 key NOSUCHKEY"),
           (ctl.Shoal(kc.url), "with no credentials"),
           (ctl.Shoal(kc.url, token="shoal1.%s.1.bogus" % AK), "with a bearer token")]
    for shoal, who in bad:
        with pytest.raises(ctl.ShoalAuthError) as e:
            ctl.reconcile(shoal, str(uuid.uuid4()), text)
        msg = str(e.value)
        assert "Shoal refused POST /v1/jobs (403, %s)" % who in msg, msg
        with pytest.raises(ctl.ShoalAuthError):
            shoal.probe()
    env = {"SHOAL_ENDPOINT": kc.url, "SHOAL_ACCESS_KEY": AK, "SHOAL_SECRET_KEY": SK}
    assert ctl.Shoal.from_env(env).credentials() == "SigV4 key %s" % AK
    with pytest.raises(ctl.ShoalError):
        ctl.Shoal.from_env({})


# ---- the Kubernetes side, against a stand-in API server --------------------------------
