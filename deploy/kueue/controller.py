#!/usr/bin/env python3
"""Kueue admission check that holds a workload until Shoal has prefetched
its data set.

A workload names its data set in the annotation shoal.io/prefetch (JSON:
bucket, provider, and one of prefix, template or names). When Kueue has
reserved quota for it and its check of this controller is Pending, the
controller starts a Shoal prefetch job keyed on the workload's uid (so a
restarted controller, or the next poll, finds the same job instead of
starting another) and reports the job in the check:

    job running (or a target cannot be asked)   Pending, with its progress
    job ended, no errors                        Ready
    job ended with errors, or aborted           Retry, with a back-off; the
                                                next attempt runs a new job
    spec refused (malformed, or 400 from Shoal) Rejected

The file has two parts. Part A (Shoal side: SigV4 signing, the job API
client, the decision) uses the standard library only and is what the
tests in test/integration/test_kueue.py drive against a real cluster.
Part B (Kubernetes side: list AdmissionChecks and Workloads, patch their
status) is a thin loop over the API server's REST interface; it has not
been run against a Kubernetes API server (see README.md here).

Configuration, from the environment (a Secret in manifests/):
  SHOAL_ENDPOINT                      proxy URL, e.g. http://shoal-proxy:8080
  SHOAL_ACCESS_KEY, SHOAL_SECRET_KEY  sign every request with SigV4, or
  SHOAL_TOKEN                         a bearer token from POST /v1/tokens
  SHOAL_REGION                        SigV4 region (us-east-1)
  SHOAL_CONTROLLER_NAME               AdmissionCheck controllerName (shoal.io/prefetch)
  SHOAL_POLL_S                        seconds between passes (5)
  SHOAL_BACKOFF_S, SHOAL_BACKOFF_MAX_S  first back-off and its cap (30, 1800)
  KUEUE_API_VERSION                   v1beta1
"""
import dataclasses
import datetime
import hashlib
import hmac
import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

ANNOTATION = "shoal.io/prefetch"
ATTEMPT_ANNOTATION = "shoal.io/prefetch-attempt"      # failed attempts so far
NOT_BEFORE_ANNOTATION = "shoal.io/prefetch-not-before"  # unix seconds: back-off end

PENDING, READY, RETRY, REJECTED = "Pending", "Ready", "Retry", "Rejected"

# ============================================================================
# Part A: Shoal side
# ============================================================================


class ShoalError(Exception):
    """A Shoal answer the controller cannot act on."""

    def __init__(self, message, status=None, body=None):
        super().__init__(message)
        self.status, self.body = status, body


class ShoalAuthError(ShoalError):
    """401/403: the credentials are missing, wrong or expired. Nothing a
    workload did; the controller reports it on the AdmissionCheck."""


class ShoalUnavailable(ShoalError):
    """Shoal could not be reached, or answered 5xx."""


def _enc(s, slash=False):
    return urllib.parse.quote(s, safe="-_.~" + ("/" if slash else ""))


def _hmac(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def sigv4_headers(method, url, body, access_key, secret_key, region="us-east-1",
                  service="s3", now=None):
    """The headers that sign one request with AWS Signature Version 4 (header
    form, payload hash in x-amz-content-sha256): Host, X-Amz-Date,
    X-Amz-Content-SHA256 and Authorization."""
    u = urllib.parse.urlsplit(url)
    now = now or datetime.datetime.now(datetime.timezone.utc)
    amzdate = now.strftime("%Y%m%dT%H%M%SZ")
    day = amzdate[:8]
    payload = hashlib.sha256(body or b"").hexdigest()
    hdrs = {"host": u.netloc, "x-amz-content-sha256": payload, "x-amz-date": amzdate}
    path = _enc(urllib.parse.unquote(u.path) or "/", slash=True)
    pairs = sorted((_enc(k), _enc(v))
                   for k, v in urllib.parse.parse_qsl(u.query, keep_blank_values=True))
    query = "&".join("%s=%s" % kv for kv in pairs)
    names = sorted(hdrs)
    signed = ";".join(names)
    canonical = "\n".join([method, path, query,
                           "".join("%s:%s\n" % (k, hdrs[k]) for k in names), signed, payload])
    scope = "%s/%s/%s/aws4_request" % (day, region, service)
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amzdate, scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + secret_key).encode()
    for part in (day, region, service, "aws4_request"):
        key = _hmac(key, part)
    sig = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return {"Host": u.netloc, "X-Amz-Date": amzdate, "X-Amz-Content-SHA256": payload,
            "Authorization": "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, "
                             "Signature=%s" % (access_key, scope, signed, sig)}


class Shoal:
    """The few native API calls the admission check needs, signed with
    SigV4 when keys are given, or carrying a bearer token."""

    def __init__(self, endpoint, access_key=None, secret_key=None, token=None,
                 region="us-east-1", timeout=30):
        self.endpoint = endpoint.rstrip("/")
        self.access_key, self.secret_key, self.token = access_key, secret_key, token
        self.region, self.timeout = region, timeout

    @classmethod
    def from_env(cls, env=None):
        env = os.environ if env is None else env
        if not env.get("SHOAL_ENDPOINT"):
            raise ShoalError("SHOAL_ENDPOINT is not set")
        return cls(env["SHOAL_ENDPOINT"], env.get("SHOAL_ACCESS_KEY") or None,
                   env.get("SHOAL_SECRET_KEY") or None, env.get("SHOAL_TOKEN") or None,
                   env.get("SHOAL_REGION") or "us-east-1")

    def credentials(self):
        if self.access_key and self.secret_key:
            return "SigV4 key %s" % self.access_key
        return "a bearer token" if self.token else "no credentials"

    def call(self, method, path, query=None, doc=None):
        """(status, JSON answer) for 2xx and 4xx other than 401/403."""
        url = self.endpoint + path
        if query:
            url += "?" + "&".join("%s=%s" % (_enc(k), _enc(str(v))) for k, v in query)
        body = json.dumps(doc).encode() if doc is not None else b""
        headers = {"Content-Type": "application/json"} if doc is not None else {}
        if self.access_key and self.secret_key:
            headers.update(sigv4_headers(method, url, body, self.access_key, self.secret_key,
                                         self.region))
        elif self.token:
            headers["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(url, data=body if doc is not None else None,
                                     headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise ShoalUnavailable("Shoal at %s cannot be reached: %s" % (self.endpoint, reason))
        try:
            answer = json.loads(raw) if raw else {}
        except ValueError:
            answer = {"error": raw[:200].decode(errors="replace")}
        err = answer.get("error", "") if isinstance(answer, dict) else ""
        if status in (401, 403):
            raise ShoalAuthError("Shoal refused %s %s (%d, with %s): %s"
                                 % (method, path, status, self.credentials(),
                                    err or "access denied"), status, answer)
        if status >= 500:
            raise ShoalUnavailable("Shoal answered %s %s with %d: %s"
                                   % (method, path, status, err), status, answer)
        return status, answer

    def start_prefetch(self, spec, key):
        return self.call("POST", "/v1/jobs", doc=dict(spec, kind="prefetch", key=key))

    def job(self, job_id):
        return self.call("GET", "/v1/jobs/" + _enc(job_id))

    def summary(self, spec):
        q = [(k, spec[k]) for k in ("provider", "prefix", "template") if k in spec]
        return self.call("GET", "/v1/buckets/%s/summary" % _enc(spec["bucket"]), q)

    def probe(self):
        """Raises unless Shoal answers an authenticated request."""
        self.call("GET", "/v1/jobs", [("state", "running"), ("kind", "prefetch")])

    def new_token(self, ttl_s=3600):
        status, answer = self.call("POST", "/v1/tokens", [("ttl_s", ttl_s)])
        if status != 200:
            raise ShoalError("no token: %d %s" % (status, answer), status, answer)
        return answer["token"]


@dataclasses.dataclass
class Decision:
    state: str                   # Pending, Ready, Retry or Rejected
    message: str
    job: str = None              # the Shoal job id
    key: str = None              # its idempotency key
    attempt: int = 0             # failed attempts once this decision is recorded
    requeue_after: int = None    # Retry: seconds before the next attempt
    not_before: float = None     # Retry: when the next attempt may start (unix s)


SELECTORS = ("prefix", "template", "names")
SPEC_FIELDS = ("bucket", "provider") + SELECTORS


class SpecError(ValueError):
    pass


def parse_spec(text):
    """The annotation's JSON as a job spec, or SpecError. Unknown fields are
    refused: a misspelt selector must not prefetch a whole bucket."""
    try:
        spec = json.loads(text) if isinstance(text, str) else text
    except ValueError as e:
        raise SpecError("%s is not JSON: %s" % (ANNOTATION, e))
    if not isinstance(spec, dict):
        raise SpecError("%s must be a JSON object" % ANNOTATION)
    unknown = sorted(set(spec) - set(SPEC_FIELDS))
    if unknown:
        raise SpecError("%s has unknown fields %s (known: %s)"
                        % (ANNOTATION, ", ".join(unknown), ", ".join(SPEC_FIELDS)))
    if not isinstance(spec.get("bucket"), str) or not spec["bucket"]:
        raise SpecError("%s needs a bucket" % ANNOTATION)
    chosen = [k for k in SELECTORS if k in spec]
    if len(chosen) > 1:
        raise SpecError("%s takes one of prefix, template or names, not %s"
                        % (ANNOTATION, " and ".join(chosen)))
    for k in ("provider", "prefix", "template"):
        if k in spec and not isinstance(spec[k], str):
            raise SpecError("%s: %s must be a string" % (ANNOTATION, k))
    names = spec.get("names")
    if names is not None and (not isinstance(names, list) or not names
                              or not all(isinstance(n, str) for n in names)):
        raise SpecError("%s: names must be a non-empty list of strings" % ANNOTATION)
    return spec


def job_key(uid, attempt):
    """One key per workload and attempt: every poll of one attempt finds the
    same job; after a Retry the next attempt starts a new one."""
    return "kueue-%s-%d" % (uid, attempt)


def backoff(failures, base_s=30, max_s=1800):
    """Seconds to wait after the failures-th failed attempt (1, 2, ...)."""
    return int(min(max_s, base_s * 2 ** max(0, failures - 1)))


def _mib(n):
    return "%.1f MiB" % (n / 1048576.0)


def _errors_text(job):
    named = ["%s (%s)" % (e.get("name"), e.get("reason")) for e in job.get("error_names") or []]
    more = job.get("errors", 0) - len(named)
    return ", ".join(named) + (" and %d more" % more if more > 0 else "")


def _progress(job):
    total = max(job.get("selected") or 0, job.get("owned") or 0)   # owned grows as listed
    held = job.get("present", 0) + job.get("fetched", 0)
    return "%d of %d objects held (%d fetched, %d already there), %s fetched" % (
        held, total, job.get("fetched", 0), job.get("present", 0), _mib(job.get("bytes", 0)))


def _summary_text(shoal, spec):
    if "names" in spec:
        return ""
    try:
        status, s = shoal.summary(spec)
    except ShoalAuthError:
        raise
    except ShoalError:
        return ""
    if status != 200 or "cached_pct" not in s:
        return ""
    return "; Shoal holds %g%% of it (%d of %d objects)" % (
        s["cached_pct"], s["objects"]["present"], s["objects"]["total"])


def reconcile(shoal, uid, spec_text, attempt=0, not_before=None, now=None,
              backoff_s=30, backoff_max_s=1800):
    """The state of one workload's check. uid and attempt make the job key;
    not_before is the end of a back-off after a Retry. Raises ShoalAuthError
    when Shoal refuses the controller's credentials."""
    now = time.time() if now is None else now
    try:
        spec = parse_spec(spec_text)
    except SpecError as e:
        return Decision(REJECTED, str(e), attempt=attempt)
    if not_before and now < not_before:
        return Decision(PENDING, "attempt %d of the prefetch waits for its back-off (%d s more)"
                        % (attempt + 1, int(not_before - now + 0.999)), attempt=attempt)
    key = job_key(uid, attempt)
    try:
        status, answer = shoal.start_prefetch(spec, key)
        err = answer.get("error", "") if isinstance(answer, dict) else ""
        if status == 404:        # no such bucket (yet): it may be created
            return _retry("Shoal: %s" % (err or "no such bucket"), None, key, attempt, now,
                          backoff_s, backoff_max_s)
        if status not in (200, 201) or "id" not in answer:
            return Decision(REJECTED, "Shoal refused the prefetch job (%d): %s" % (status, err),
                            key=key, attempt=attempt)
        jid = answer["id"]
        status, job = shoal.job(jid)
    except ShoalUnavailable as e:
        return Decision(PENDING, "%s; trying again" % e, key=key, attempt=attempt)
    if status != 200:
        return Decision(PENDING, "prefetch job %s: %d %s" % (jid, status, job.get("error", "")),
                        job=jid, key=key, attempt=attempt)
    return _judge(shoal, spec, job, jid, key, attempt, now, backoff_s, backoff_max_s)


def _retry(why, jid, key, attempt, now, backoff_s, backoff_max_s):
    failures = attempt + 1
    wait = backoff(failures, backoff_s, backoff_max_s)
    return Decision(RETRY, "attempt %d failed: %s; next attempt in %d s"
                    % (failures, why, wait), job=jid, key=key, attempt=failures,
                    requeue_after=wait, not_before=now + wait)


def _judge(shoal, spec, job, jid, key, attempt, now, backoff_s, backoff_max_s):
    state = job.get("state")
    errors = job.get("errors", 0)
    if state in ("running", "unknown"):
        why = " (a target cannot be asked just now)" if state == "unknown" else ""
        return Decision(PENDING, "prefetch job %s running%s: %s" % (jid, why, _progress(job)),
                        job=jid, key=key, attempt=attempt)
    if state == "finished" and errors == 0:
        if max(job.get("selected") or 0, job.get("owned") or 0) == 0:
            return _retry("prefetch job %s selected no objects in bucket %s"
                          % (jid, spec["bucket"]), jid, key, attempt, now,
                          backoff_s, backoff_max_s)
        return Decision(READY, "prefetch job %s finished: %s%s"
                        % (jid, _progress(job), _summary_text(shoal, spec)),
                        job=jid, key=key, attempt=attempt)
    if state in ("finished", "failed") and errors:
        why = "prefetch job %s ended with %d errors: %s" % (jid, errors, _errors_text(job))
    else:
        why = "prefetch job %s ended %s" % (jid, state)
    return _retry(why, jid, key, attempt, now, backoff_s, backoff_max_s)


# ============================================================================
# Part B: Kubernetes side (thin; not run here: no API server on these machines)
# ============================================================================

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
FIELD_MANAGER = "shoal-prefetch-check"


class Kube:
    """Plain HTTPS to the API server with the pod's service-account token."""

    def __init__(self, base, token=None, token_file=None, ca_file=None, timeout=30):
        self.base, self.token, self.token_file, self.timeout = base, token, token_file, timeout
        self.ctx = ssl.create_default_context(cafile=ca_file) if ca_file else None

    @classmethod
    def in_cluster(cls):
        host = os.environ["KUBERNETES_SERVICE_HOST"]
        port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        if ":" in host:
            host = "[%s]" % host
        return cls("https://%s:%s" % (host, port), token_file=SA_DIR + "/token",
                   ca_file=SA_DIR + "/ca.crt")

    def call(self, method, path, doc=None, content_type="application/json"):
        token = self.token
        if self.token_file:      # projected tokens rotate: read it every time
            with open(self.token_file) as f:
                token = f.read().strip()
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = "Bearer " + token
        data = None
        if doc is not None:
            data = json.dumps(doc).encode()
            headers["Content-Type"] = content_type
        req = urllib.request.Request(self.base + path, data=data, headers=headers, method=method)
        with urllib.request.urlopen(req, timeout=self.timeout, context=self.ctx) as resp:
            return json.loads(resp.read() or b"{}")


def kueue_api():
    return "kueue.x-k8s.io/" + os.environ.get("KUEUE_API_VERSION", "v1beta1")


def kueue_path(rest):
    return "/apis/%s/%s" % (kueue_api(), rest)


def _now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _condition(obj, ctype):
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


def checks_to_evaluate(wl, names):
    """Names of this controller's checks that are Pending on a workload whose
    quota is reserved and that has not finished."""
    reserved = _condition(wl, "QuotaReserved")
    finished = _condition(wl, "Finished")
    if not reserved or reserved.get("status") != "True":
        return []
    if finished and finished.get("status") == "True":
        return []
    return [c["name"] for c in (wl.get("status") or {}).get("admissionChecks") or []
            if c.get("name") in names and c.get("state") == PENDING]


def spec_text(kube, wl):
    """The prefetch spec: the Workload's own annotation, else a pod set
    template's (Kueue copies the job's pod template), else the owning
    batch/v1 Job's annotation."""
    ann = wl["metadata"].get("annotations") or {}
    if ANNOTATION in ann:
        return ann[ANNOTATION]
    for ps in (wl.get("spec") or {}).get("podSets") or []:
        pann = ((ps.get("template") or {}).get("metadata") or {}).get("annotations") or {}
        if ANNOTATION in pann:
            return pann[ANNOTATION]
    for ref in wl["metadata"].get("ownerReferences") or []:
        if ref.get("apiVersion") == "batch/v1" and ref.get("kind") == "Job":
            job = kube.call("GET", "/apis/batch/v1/namespaces/%s/jobs/%s"
                            % (wl["metadata"]["namespace"], ref["name"]))
            jann = job["metadata"].get("annotations") or {}
            if ANNOTATION in jann:
                return jann[ANNOTATION]
    return None


def check_patch(wl, name, decision, now=None):
    """Server-side apply body for the status of one check (the list is keyed
    by name, so the other checks' entries are left alone)."""
    now = now or _now_rfc3339()
    old = next((c for c in wl["status"].get("admissionChecks") or [] if c["name"] == name), {})
    entry = {"name": name, "state": decision.state, "message": decision.message[:4096],
             "lastTransitionTime": (old.get("lastTransitionTime") or now)
             if old.get("state") == decision.state else now}
    if decision.requeue_after is not None:
        entry["requeueAfterSeconds"] = decision.requeue_after
    md = wl["metadata"]
    return {"apiVersion": kueue_api(), "kind": "Workload",
            "metadata": {"name": md["name"], "namespace": md["namespace"]},
            "status": {"admissionChecks": [entry]}}


def active_patch(ac, ok, reason, message, now=None):
    """Server-side apply body for an AdmissionCheck's Active condition."""
    old = _condition(ac, "Active") or {}
    status = "True" if ok else "False"
    cond = {"type": "Active", "status": status, "reason": reason, "message": message,
            "observedGeneration": ac["metadata"].get("generation", 0),
            "lastTransitionTime": old.get("lastTransitionTime")
            if old.get("status") == status and old.get("lastTransitionTime")
            else (now or _now_rfc3339())}
    return {"apiVersion": kueue_api(), "kind": "AdmissionCheck",
            "metadata": {"name": ac["metadata"]["name"]}, "status": {"conditions": [cond]}}


def apply_status(kube, path, body):
    kube.call("PATCH", path + "/status?fieldManager=%s&force=true" % FIELD_MANAGER, body,
              "application/apply-patch+yaml")


def _workload_path(wl):
    md = wl["metadata"]
    return kueue_path("namespaces/%s/workloads/%s" % (md["namespace"], md["name"]))


def evaluate(kube, shoal, wl, name, backoff_s, backoff_max_s):
    ann = wl["metadata"].get("annotations") or {}
    attempt = int(ann.get(ATTEMPT_ANNOTATION, "0") or 0)
    not_before = float(ann.get(NOT_BEFORE_ANNOTATION, "0") or 0)
    text = spec_text(kube, wl)
    if text is None:             # not every job in the queue reads a data set
        d = Decision(READY, "nothing to prefetch: no %s annotation on the workload, its pod "
                     "template or its Job" % ANNOTATION, attempt=attempt)
    else:
        d = reconcile(shoal, wl["metadata"]["uid"], text, attempt, not_before,
                      backoff_s=backoff_s, backoff_max_s=backoff_max_s)
    if d.attempt != attempt:     # recorded before the Retry, so a restart cannot lose it
        kube.call("PATCH", _workload_path(wl),
                  {"metadata": {"annotations": {ATTEMPT_ANNOTATION: str(d.attempt),
                                                NOT_BEFORE_ANNOTATION: "%d" % d.not_before}}},
                  "application/merge-patch+json")
    old = next(c for c in wl["status"]["admissionChecks"] if c["name"] == name)
    if (old.get("state"), old.get("message")) != (d.state, d.message[:4096]):
        apply_status(kube, _workload_path(wl), check_patch(wl, name, d))
    return d, old.get("state") != d.state or old.get("message") == ""


def run_once(kube, shoal, controller, backoff_s=30, backoff_max_s=1800, log=print):
    """One pass: mark this controller's AdmissionChecks Active (or not), then
    evaluate every Pending check of theirs."""
    checks = [ac for ac in kube.call("GET", kueue_path("admissionchecks"))["items"]
              if ac["spec"].get("controllerName") == controller]
    try:
        shoal.probe()
        health = (True, "Active", "Shoal at %s answers" % shoal.endpoint)
    except ShoalAuthError as e:
        health = (False, "ShoalAuthFailed", str(e))
    except ShoalError as e:
        health = (False, "ShoalUnavailable", str(e))
    for ac in checks:
        old = _condition(ac, "Active") or {}
        if (old.get("status"), old.get("reason")) != ("True" if health[0] else "False", health[1]):
            apply_status(kube, kueue_path("admissionchecks/" + ac["metadata"]["name"]),
                         active_patch(ac, *health))
    if not health[0]:
        log("shoal-prefetch: %s" % health[2])
        return []
    names = {ac["metadata"]["name"] for ac in checks}
    done = []
    for wl in kube.call("GET", kueue_path("workloads"))["items"]:
        for name in checks_to_evaluate(wl, names):
            try:
                d, news = evaluate(kube, shoal, wl, name, backoff_s, backoff_max_s)
            except (ShoalError, urllib.error.URLError, OSError, ValueError, KeyError) as e:
                log("shoal-prefetch: %s/%s: %s" % (wl["metadata"].get("namespace"),
                                                    wl["metadata"].get("name"), e))
                continue
            done.append((wl["metadata"]["namespace"], wl["metadata"]["name"], name, d.state))
            if news:             # a new job or a new state: not every progress message
                log("shoal-prefetch: %s/%s %s: %s %s"
                    % (wl["metadata"]["namespace"], wl["metadata"]["name"], name, d.state,
                       d.message))
    return done


def main():
    controller = os.environ.get("SHOAL_CONTROLLER_NAME", "shoal.io/prefetch")
    poll = float(os.environ.get("SHOAL_POLL_S", "5"))
    backoff_s = int(os.environ.get("SHOAL_BACKOFF_S", "30"))
    backoff_max_s = int(os.environ.get("SHOAL_BACKOFF_MAX_S", "1800"))
    shoal = Shoal.from_env()
    kube = Kube.in_cluster()
    print("shoal-prefetch: controller %s, Shoal at %s with %s"
          % (controller, shoal.endpoint, shoal.credentials()), flush=True)
    while True:
        try:
            run_once(kube, shoal, controller, backoff_s, backoff_max_s,
                     log=lambda m: print(m, flush=True))
        except (urllib.error.URLError, OSError, ValueError, KeyError) as e:
            print("shoal-prefetch: pass failed: %s" % e, file=sys.stderr, flush=True)
        time.sleep(poll)


if __name__ == "__main__":
    main()
