"""The Kubernetes manifests (deploy/k8s): every object parses and has what
Kubernetes requires; selectors, services, claims and probes fit together;
the config the pods are given passes the daemons' own --check-config with
the pods' arguments; kustomize renders both variants where kubectl is
installed; the image builds where a container builder runs."""
import json
import os
import re
import shutil
import subprocess
import tempfile

import pytest
import yaml

from conftest import BUILD, ROOT

K8S = os.path.join(ROOT, "deploy", "k8s")
REQUIRED = {
    "Namespace": [],
    "Service": ["spec.ports"],
    "PersistentVolumeClaim": ["spec.accessModes", "spec.resources.requests.storage"],
    "Deployment": ["spec.selector.matchLabels", "spec.template.spec.containers"],
    "StatefulSet": ["spec.selector.matchLabels", "spec.serviceName",
                    "spec.template.spec.containers"],
}


def objects():
    out = []
    for f in sorted(os.listdir(os.path.join(K8S, "base"))):
        if f.endswith(".yaml") and f != "kustomization.yaml":
            for o in yaml.safe_load_all(open(os.path.join(K8S, "base", f))):
                if o:
                    out.append(o)
    return out


def get(o, path):
    for p in path.split("."):
        assert isinstance(o, dict) and p in o, path
        o = o[p]
    return o


def test_every_object_has_what_kubernetes_requires():
    objs = objects()
    kinds = sorted(o["kind"] for o in objs)
    assert kinds == ["Deployment", "Namespace", "PersistentVolumeClaim", "Service", "Service",
                     "StatefulSet"], kinds
    services = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Service"}
    claims = {o["metadata"]["name"] for o in objs if o["kind"] == "PersistentVolumeClaim"}
    for o in objs:
        assert o.get("apiVersion") and re.fullmatch(r"[a-z0-9-]{1,63}", o["metadata"]["name"])
        for path in REQUIRED[o["kind"]]:
            assert get(o, path), (o["kind"], path)
        if o["kind"] not in ("Deployment", "StatefulSet"):
            continue
        pod = o["spec"]["template"]
        labels = pod["metadata"]["labels"]
        assert o["spec"]["selector"]["matchLabels"].items() <= labels.items()
        volumes = {v["name"] for v in pod["spec"]["volumes"]}
        volumes |= {t["metadata"]["name"] for t in o["spec"].get("volumeClaimTemplates", [])}
        for v in pod["spec"]["volumes"]:
            if "persistentVolumeClaim" in v:
                assert v["persistentVolumeClaim"]["claimName"] in claims
        for c in pod["spec"]["initContainers"] + pod["spec"]["containers"]:
            assert c["name"] and c["image"]
            for m in c.get("volumeMounts", []):
                assert m["name"] in volumes, (c["name"], m["name"])
        main = pod["spec"]["containers"][0]
        port = main["ports"][0]["containerPort"]
        for probe in ("readinessProbe", "livenessProbe"):
            assert main[probe]["httpGet"]["path"] == "/v1/health"
        assert main["resources"]["requests"]["cpu"] and main["resources"]["requests"]["memory"]
        assert "--port=%d" % port in main["args"]
        assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
        # a Service selects these pods on their port
        svc = [s for s in services.values()
               if s["spec"]["selector"].items() <= labels.items()]
        assert len(svc) == 1 and svc[0]["spec"]["ports"][0]["port"] == port
        if o["kind"] == "StatefulSet":
            assert services[o["spec"]["serviceName"]]["spec"]["clusterIP"] == "None"


def pod_args(container, env):
    """The container's args with $(VAR) expanded as the kubelet does."""
    return [re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], a) for a in container["args"]]


def test_the_pods_configuration_passes_check_config():
    with tempfile.TemporaryDirectory() as d:
        shutil.copy(os.path.join(K8S, "base", "shoal.json"), d)
        files = {"cluster.secret": "0123456789abcdef0123456789abcdef\n", "auth_keys": "AK:SK\n"}
        for name, text in files.items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
            os.chmod(os.path.join(d, name), 0o600)
        env = {"POD_NAME": "shoal-target-0", "POD_NAMESPACE": "shoal"}
        for o in objects():
            if o["kind"] not in ("Deployment", "StatefulSet"):
                continue
            c = o["spec"]["template"]["spec"]["containers"][0]
            args = [a.replace("/etc/shoal/shoal.json", d + "/shoal.json")
                    .replace("/var/lib/shoal", d) for a in pod_args(c, env)]
            binary = os.path.join(ROOT, BUILD, "bin", os.path.basename(c["command"][0]))
            r = subprocess.run([binary] + args + ["--cluster_secret_file", d + "/cluster.secret",
                                                  "--auth_keys_file", d + "/auth_keys",
                                                  "--check-config"],
                               capture_output=True, text=True, timeout=30)
            assert r.returncode == 0 and "valid" in r.stdout, (c["name"], args, r.stderr)


def test_secrets_reach_the_daemons_as_files_only():
    """No secret in a container's arguments or environment (others on the
    node read those): the init container copies the Secret's files, mode
    0600, to where the shared config names them."""
    conf = json.loads("".join(l for l in open(os.path.join(K8S, "base", "shoal.json"))
                              if not l.lstrip().startswith("#")))
    assert conf["auth_keys_file"] == "/run/shoal/auth_keys"
    assert conf["cluster_secret_file"] == "/run/shoal/cluster.secret"
    for o in objects():
        if o["kind"] not in ("Deployment", "StatefulSet"):
            continue
        spec = o["spec"]["template"]["spec"]
        for c in spec["initContainers"] + spec["containers"]:
            assert not any("auth_keys=" in a or "SECRET" in a.upper()
                           for a in c.get("args", [])), c["name"]
            assert not any("secretKeyRef" in e.get("valueFrom", {}) for e in c.get("env", []))
            assert not c.get("envFrom"), c["name"]
        init = spec["initContainers"][0]["command"]
        assert init[:3] == ["install", "-m", "0600"] and init[-1] == "/run/shoal/"
        assert {"/secrets/cluster.secret", "/secrets/auth_keys"} <= set(init)


def test_the_transform_daemonset_fits_together_and_answers():
    d = os.path.join(K8S, "transforms")
    objs = [o for o in yaml.safe_load_all(open(os.path.join(d, "identity.yaml"))) if o]
    assert sorted(o["kind"] for o in objs) == ["DaemonSet", "Service"]
    svc = next(o for o in objs if o["kind"] == "Service")
    ds = next(o for o in objs if o["kind"] == "DaemonSet")
    labels = ds["spec"]["template"]["metadata"]["labels"]
    assert ds["spec"]["selector"]["matchLabels"] == labels == svc["spec"]["selector"]
    assert svc["spec"]["internalTrafficPolicy"] == "Local"   # each target its own node's pod
    c = ds["spec"]["template"]["spec"]["containers"][0]
    port = svc["spec"]["ports"][0]
    assert port["targetPort"] == c["ports"][0]["name"]
    kz = yaml.safe_load(open(os.path.join(d, "kustomization.yaml")))
    assert kz["resources"] == ["identity.yaml"] and kz["namespace"] == "shoal"
    assert "shoal-transform-identity.shoal.svc:%d" % port["port"] in \
        open(os.path.join(d, "kustomization.yaml")).read()
    binary = c["command"][0]
    assert os.path.basename(binary) in open(os.path.join(K8S, "Dockerfile")).read()
    # the container's command, run here on loopback, speaks the contract
    import socket
    import time
    import urllib.request
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    free = s.getsockname()[1]
    s.close()
    args = [os.path.join(ROOT, BUILD, "bin", os.path.basename(binary)), str(free), "127.0.0.1"]
    assert c["command"][1:] == ["8000", "0.0.0.0"]
    p = subprocess.Popen(args, stdout=subprocess.PIPE)
    try:
        assert b"identity transform" in p.stdout.readline()
        for _ in range(50):
            try:
                req = urllib.request.Request("http://127.0.0.1:%d/" % free, data=b"abc" * 1000,
                                             headers={"X-Shoal-Args": "repeat=2"})
                body = urllib.request.urlopen(req, timeout=5).read()
                break
            except OSError:
                time.sleep(0.1)
        assert body == b"abc" * 2000
    finally:
        p.kill()
        p.wait()


def test_kustomize_renders_both_variants():
    if not shutil.which("kubectl"):
        pytest.skip("kubectl is not installed: kustomize rendering not checked")
    with tempfile.TemporaryDirectory() as d:
        k = os.path.join(d, "k8s")
        shutil.copytree(K8S, k)
        with open(k + "/base/secrets/cluster.secret", "w") as f:
            f.write("0123456789abcdef0123456789abcdef")
        with open(k + "/base/secrets/auth_keys", "w") as f:
            f.write("AK:SK")
        for variant, claims in ((k, 3), (k + "/hostpath", 1)):
            r = subprocess.run(["kubectl", "kustomize", variant], capture_output=True, text=True,
                               timeout=60)
            assert r.returncode == 0, r.stderr
            docs = [x for x in yaml.safe_load_all(r.stdout) if x]
            assert all(x["metadata"].get("namespace") == "shoal" for x in docs
                       if x["kind"] != "Namespace")
            sts = next(x for x in docs if x["kind"] == "StatefulSet")
            assert len(sts["spec"]["volumeClaimTemplates"]) == claims
            kinds = {x["kind"] for x in docs}
            assert {"ConfigMap", "Secret"} <= kinds
        # without the secrets the manifests do not render
        os.unlink(k + "/base/secrets/auth_keys")
        r = subprocess.run(["kubectl", "kustomize", k], capture_output=True, text=True, timeout=60)
        assert r.returncode != 0


def test_the_image_builds():
    builder = shutil.which("docker") or shutil.which("podman")
    if not builder or subprocess.run([builder, "info"], capture_output=True,
                                     timeout=30).returncode != 0:
        pytest.skip("no container builder runs here (docker or podman): image not built")
    r = subprocess.run([builder, "build", "-q", "-f", os.path.join(K8S, "Dockerfile"), "-t",
                        "shoal-test:latest", ROOT], capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stderr[-2000:]
    r = subprocess.run([builder, "run", "--rm", "shoal-test:latest", "--version"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("shoal-proxy 0."), r.stdout + r.stderr
