#!/usr/bin/python3
"""Renders deploy/k8s for the quickstart and checks it as Kubernetes would read it, then runs it.

Structure: a ConfigMap holding the job file, a headless Service selecting the server pods, the
servers and workers as Indexed Jobs with as many completions as the job has processes. Wiring:
every pod's command, environment and ports are what the daemons read (the env variables they know,
the rank from the completion index, the coordinator at server 0's DNS name behind the Service, the
port the coordinator binds). Finally the rendered pods are run here as Kubernetes would run them,
with the downward API emulated (index -> annotation, pod IP -> 127.0.0.1) and the Service's DNS
name mapped to 127.0.0.1: the job must train to the end.

Usage: k8s_manifests_test.py BIN_DIR SOURCE_DIR
"""
import os
import socket
import subprocess
import sys
import tempfile

import yaml

BIN, SRC = sys.argv[1], sys.argv[2]
INDEX_FIELD = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
KNOWN_ENV = {"PSRT_ROLE", "PSRT_RANK", "PSRT_COORDINATOR", "PSRT_BIND_HOST", "PSRT_ADVERTISE_HOST"}
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def render(job, *extra):
    env = dict(os.environ, PSRT_BIN=BIN)
    out = subprocess.run(["bash", f"{SRC}/deploy/k8s/render.sh", job, *extra], env=env,
                         capture_output=True, text=True, check=True).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_structure(docs, servers, workers, name):
    kinds = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    cm = kinds.get(("ConfigMap", f"{name}-job"))
    svc = kinds.get(("Service", name))
    jobs = {r: kinds.get(("Job", f"{name}-{r}")) for r in ("server", "worker")}
    if not all([check(cm, "ConfigMap"), check(svc, "Service"), check(all(jobs.values()), "Jobs")]):
        return None
    check(svc["spec"].get("clusterIP") == "None", "the Service is headless")
    for role, count in (("server", servers), ("worker", workers)):
        spec = jobs[role]["spec"]
        check(spec.get("completionMode") == "Indexed", f"{role}s: Indexed Job")
        check(spec.get("completions") == count == spec.get("parallelism"),
              f"{role}s: completions {spec.get('completions')} vs {count}")
        pod = spec["template"]
        c = pod["spec"]["containers"][0]
        env = {e["name"]: e for e in c["env"]}
        check(set(env) <= KNOWN_ENV, f"{role}: env {set(env) - KNOWN_ENV} is read by no daemon")
        check(env["PSRT_ROLE"].get("value") == role, f"{role}: PSRT_ROLE")
        check(env["PSRT_RANK"]["valueFrom"]["fieldRef"]["fieldPath"] == INDEX_FIELD,
              f"{role}: rank from the completion index")
        check(c["command"][0] == f"psrt-{role}", f"{role}: runs psrt-{role}")
        # Servers and model-parallel stage workers listen: every interface, reached at the pod IP.
        check(env.get("PSRT_BIND_HOST", {}).get("value") == "0.0.0.0", f"{role}: binds 0.0.0.0")
        adv = env.get("PSRT_ADVERTISE_HOST", {}).get("valueFrom", {}).get("fieldRef", {})
        check(adv.get("fieldPath") == "status.podIP", f"{role}: advertises its pod IP")
        check(c["resources"]["requests"].get("cpu"), f"{role}: cpu request")
        mounts = {m["mountPath"] for m in c["volumeMounts"]}
        check(any(c["command"][c["command"].index("--config") + 1].startswith(m) for m in mounts),
              f"{role}: --config is on the mounted ConfigMap")
        coord = env["PSRT_COORDINATOR"]["value"]
        check(coord.startswith(f"tcp://{name}-server-0.{name}:"), f"{role}: coordinator {coord}")
    spod = jobs["server"]["spec"]["template"]
    check(spod["spec"].get("subdomain") == name, "server pods' subdomain is the Service")
    check(all(spod["metadata"]["labels"].get(k) == v for k, v in svc["spec"]["selector"].items()),
          "the Service selects the server pods")
    port = int(coord.rsplit(":", 1)[1])
    ports = [p["containerPort"] for p in spod["spec"]["containers"][0]["ports"]]
    check(port in ports and svc["spec"]["ports"][0]["port"] == port, "coordinator port exposed")
    return cm["data"]["job.yaml"], jobs


def run_pods(job_text, jobs, name):
    """Runs every pod of both Jobs here, as the kubelet would, and waits for all."""
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "job.yaml")
        with open(path, "w") as f:
            f.write(job_text)
        procs = []
        for role in ("server", "worker"):
            spec = jobs[role]["spec"]
            c = spec["template"]["spec"]["containers"][0]
            for index in range(spec["completions"]):
                env = dict(os.environ)
                for e in c["env"]:
                    if "value" in e:
                        env[e["name"]] = e["value"]
                    elif e["valueFrom"]["fieldRef"]["fieldPath"] == INDEX_FIELD:
                        env[e["name"]] = str(index)
                    elif e["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP":
                        env[e["name"]] = "127.0.0.1"
                # The Service's DNS name is 127.0.0.1 here, on a port that is free here.
                env["PSRT_COORDINATOR"] = f"tcp://127.0.0.1:{port}"
                cmd = [os.path.join(BIN, c["command"][0])] + c["command"][1:]
                cmd[cmd.index("--config") + 1] = path
                cmd += ["--set", "job.iterations=60", "--set", "cluster.start_timeout_s=60"]
                procs.append((f"{role} {index}", subprocess.Popen(
                    cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
        outputs = {}
        for label, p in procs:
            try:
                outputs[label] = p.communicate(timeout=240)[0]
            except subprocess.TimeoutExpired:
                for _, q in procs:
                    q.kill()
                check(False, f"{label} did not finish")
                return
            check(p.returncode == 0, f"{label} exited {p.returncode}: {outputs[label][-400:]}")
        check("test accuracy" in outputs.get("worker 0", ""), "worker 0 reported its accuracy")


def main():
    job = f"{SRC}/examples/quickstart.yaml"
    docs = render(job, "--name", "qs", "--image", "example/psrt:1")
    got = check_structure(docs, 2, 2, "qs")
    gpu = render(job, "--name", "qs", "--gpu")
    wc = [d for d in gpu if d["kind"] == "Job" and d["metadata"]["name"] == "qs-worker"][0]
    c = wc["spec"]["template"]["spec"]["containers"][0]
    check(c["resources"]["limits"].get("nvidia.com/gpu") == 1, "--gpu: one GPU per worker")
    check("model.backend=gpu" in c["command"], "--gpu: model.backend=gpu")
    cpu_c = [d for d in docs if d["kind"] == "Job" and d["metadata"]["name"] == "qs-worker"][0]
    check("nvidia.com/gpu" not in cpu_c["spec"]["template"]["spec"]["containers"][0]["resources"]
          ["limits"], "no GPU without --gpu")
    bad = subprocess.run(["bash", f"{SRC}/deploy/k8s/render.sh", job, "--name", "Bad_Name"],
                         env=dict(os.environ, PSRT_BIN=BIN), capture_output=True, text=True)
    check(bad.returncode == 2 and "DNS label" in bad.stderr, "a bad --name is refused")
    # An '&' went into the manifest as the matched placeholder (awk's gsub).
    for flag, value, why in (("--image", "reg/psrt&x", "image reference"),
                             ("--cpu", "2 cores", "CPU quantity"),
                             ("--memory", "lots", "memory quantity")):
        bad = subprocess.run(["bash", f"{SRC}/deploy/k8s/render.sh", job, flag, value],
                             env=dict(os.environ, PSRT_BIN=BIN), capture_output=True, text=True)
        check(bad.returncode == 2 and why in bad.stderr, f"a bad {flag} is refused")
    if got and not failures:
        run_pods(got[0], got[1], "qs")
    for f in failures:
        print("FAIL:", f)
    print(f"{'PASS' if not failures else 'FAIL'}: k8s manifests ({len(docs)} objects)")
    return 1 if failures else 0


sys.exit(main())
