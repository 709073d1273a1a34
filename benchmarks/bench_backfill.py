"""``kubectl sktrace backfill`` on a large audit log: MB/s and peak RSS, beside a reference that only parses every line of
the same log with the JSON library, in the same run.

    python benchmarks/bench_backfill.py                      # a 200 MB log
    python benchmarks/bench_backfill.py --size-mb 1024       # 1 GB (the goal: faster than the reference, RSS <= 150 MB)

The log (generated once into ``--dir``, reused while its size matches) is what a busy API server writes with
``omitStages: [RequestReceived]`` and a RequestResponse policy, one line per request, in time order, every line
inside the cache's offline gap (the worst case: no line is skipped for its time):

- reads (get, list, watch) at ``Metadata``, and gets of pods at ``RequestResponse`` (a pod body each): 40 % of lines;
- Lease renewals (every component, every 2 to 10 s): 25 %; Events created: 13 %;
- pods: status patches with the pod before and after (the largest lines), creations and deletions of 20,000 pods: 12 %;
- ConfigMaps and Endpoints updated (kinds not tracked): 5 %;
- Deployments (tracked): 5,000 of them, status updates by their controller and, now and then, a spec change or a scale.

Each figure is a child process (``wait4``: its own CPU seconds and peak RSS): the reference reads the file line by line
with ``json.loads``; backfill is the CLI, into a cache whose two runs leave the log's whole time as a gap (the cache is
copied afresh for each pass, so each pass fills it from nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
T0 = 1_795_000_000.0
REFERENCE = """
import json, sys
n = 0
with open(sys.argv[1], "rb") as f:
    for line in f:
        json.loads(line)
        n += 1
print(n)
"""


def stamp(ts: float) -> str:
    seconds, micro = divmod(round(ts * 1_000_000), 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{micro:06d}Z"


def pod(i: int, rng: random.Random, phase: str) -> dict[str, object]:
    name = f"web-{i % 500}-{i:06d}"
    return {"kind": "Pod", "apiVersion": "v1", "metadata": {
        "name": name, "namespace": f"ns-{i % 50}", "uid": f"pod-uid-{i:08d}", "resourceVersion": str(rng.randrange(1 << 30)),
        "labels": {"app": f"web-{i % 500}", "pod-template-hash": "6d4cf56db6"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"web-{i % 500}-6d4cf56db6", "uid": f"rs-{i % 500}",
                             "controller": True}]},
        "spec": {"containers": [{"name": f"c{k}", "image": f"registry.example.com/team/app-{k}:1.{k}.0",
                                 "env": [{"name": f"VAR_{j}", "value": "x" * 40} for j in range(12)],
                                 "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}} for k in range(3)],
                 "nodeName": f"node-{i % 40}", "serviceAccountName": "default"},
        "status": {"phase": phase, "containerStatuses": [{"name": f"c{k}", "state": {"running": {"startedAt": stamp(T0)}}, "ready": True,
                                                           "restartCount": 0, "image": f"app-{k}"} for k in range(3)]}}


def deployment(i: int, replicas: int, image: int) -> dict[str, object]:
    return {"kind": "Deployment", "apiVersion": "apps/v1", "metadata": {"name": f"web-{i}", "namespace": f"ns-{i % 50}", "uid": f"dep-uid-{i:06d}",
                                                                       "labels": {"app": f"web-{i}"}, "generation": image},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": f"web-{i}"}},
                     "template": {"metadata": {"labels": {"app": f"web-{i}"}},
                                  "spec": {"containers": [{"name": "c", "image": f"registry.example.com/web:{image}"}]}}},
            "status": {"replicas": replicas, "readyReplicas": replicas, "observedGeneration": image}}


def event(at: float, verb: str, resource: str, *, name: str, namespace: str = "default", group: str = "", level: str = "Metadata",
          code: int = 200, response: object = None, request: object = None, subresource: str = "") -> bytes:
    ref: dict[str, object] = {"resource": resource, "namespace": namespace, "name": name}
    if group:
        ref["apiGroup"] = group
    ref["apiVersion"] = "v1"
    if subresource:
        ref["subresource"] = subresource
    out: dict[str, object] = {"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": level, "auditID": f"{at:.6f}-{name}-{verb}",
                              "stage": "ResponseComplete", "requestURI": f"/apis/{group or 'core'}/v1/{resource}/{name}", "verb": verb,
                              "user": {"username": "system:serviceaccount:kube-system:controller", "groups": ["system:authenticated"]},
                              "sourceIPs": ["10.0.0.1"], "userAgent": "kube-controller-manager/v1.28.0", "objectRef": ref,
                              "responseStatus": {"metadata": {}, "code": code}}
    if request is not None:
        out["requestObject"] = request
    if response is not None:
        out["responseObject"] = response
    out["requestReceivedTimestamp"] = stamp(at)
    out["stageTimestamp"] = stamp(at + 0.002)
    out["annotations"] = {"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": ""}
    return json.dumps(out, separators=(",", ":")).encode() + b"\n"


def one_line(at: float, rng: random.Random, state: dict[str, int]) -> bytes:
    r = rng.random()
    if r < 0.34:
        return event(at, rng.choice(("get", "list", "watch")), rng.choice(("pods", "configmaps", "nodes", "services")), name=f"x{rng.randrange(999)}")
    if r < 0.40:
        return event(at, "get", "pods", name="p", level="RequestResponse", response=pod(rng.randrange(20_000), rng, "Running"))
    if r < 0.65:
        lease = {"kind": "Lease", "metadata": {"name": f"node-{rng.randrange(40)}", "resourceVersion": str(rng.randrange(1 << 30))},
                 "spec": {"holderIdentity": "node", "leaseDurationSeconds": 40, "renewTime": stamp(at)}}
        return event(at, "update", "leases", name=lease["metadata"]["name"], group="coordination.k8s.io", namespace="kube-node-lease",  # type: ignore[index]
                     level="RequestResponse", request=lease, response=lease)
    if r < 0.78:
        ev = {"kind": "Event", "metadata": {"name": f"e{rng.randrange(1 << 30)}"}, "reason": "Pulled", "message": "Container image pulled " + "y" * 200}
        return event(at, "create", "events", name="", level="RequestResponse", request=ev, response=ev)
    if r < 0.90:
        i = state["pod"] = (state["pod"] + 1) % 20_000
        verb = rng.choice(("patch", "patch", "patch", "create", "delete"))
        body = pod(i, rng, "Running")
        if verb == "delete":
            status = {"kind": "Status", "status": "Success", "details": {"name": body["metadata"]["name"], "kind": "pods",  # type: ignore[index]
                                                                         "uid": body["metadata"]["uid"]}}  # type: ignore[index]
            return event(at, "delete", "pods", name=body["metadata"]["name"], namespace=body["metadata"]["namespace"],  # type: ignore[index]
                         level="RequestResponse", response=status)
        return event(at, verb, "pods", name=body["metadata"]["name"], namespace=body["metadata"]["namespace"],  # type: ignore[index]
                     level="RequestResponse", request={"status": body["status"]}, response=body, subresource="status" if verb == "patch" else "")
    if r < 0.95:
        cm = {"kind": "ConfigMap", "metadata": {"name": f"cm{rng.randrange(300)}"}, "data": {"k": "v" * 300}}
        return event(at, "update", rng.choice(("configmaps", "endpoints")), name=cm["metadata"]["name"], level="RequestResponse",  # type: ignore[index]
                     request=cm, response=cm)
    i = rng.randrange(5000)
    change = rng.random() < 0.02
    if change:
        state[f"d{i}"] = state.get(f"d{i}", 1) + 1
    body = deployment(i, 2, state.get(f"d{i}", 1))
    return event(at, "update", "deployments", name=f"web-{i}", namespace=f"ns-{i % 50}", group="apps", level="RequestResponse",
                 request=body, response=body, subresource="" if change else "status")


def make_log(path: Path, size_mb: int) -> tuple[int, dict[str, int]]:
    """The log's lines, and the Deployments' versions at its end (what a restart would find)."""
    state_file = path.with_suffix(".state.json")
    if path.exists() and state_file.exists() and abs(path.stat().st_size - size_mb * 1e6) < 5e6:
        saved = json.loads(state_file.read_text())
        return int(saved["lines"]), saved["state"]
    rng = random.Random(7)
    state = {"pod": 0}
    lines, at, written = 0, T0 + 100, 0
    with open(path, "wb") as out:
        while written < size_mb * 1_000_000:
            data = one_line(at, rng, state)
            out.write(data)
            written += len(data)
            lines += 1
            at += 0.004
    state_file.write_text(json.dumps({"lines": lines, "state": state}))
    return lines, state


def make_cache(path: Path, log_end: float, state: dict[str, int]) -> None:
    """Two runs whose gap holds the whole log; Deployments recorded by the first, and the second's restart finding the
    ones the log changed at their last version (reconstructed: what the log then replaces)."""
    from kubectl_sktrace.store import open_cache
    from kubectl_sktrace.store.recording import EventRow, Recording
    from kubectl_sktrace.model import GVK, ObjKey
    from kubectl_sktrace.trace import hashing, sanitize
    from kubectl_sktrace.tracerconfig import config_to_yaml, default_config

    if path.exists():
        path.unlink()
    deploy = GVK("apps", "v1", "Deployment")
    with open_cache(str(path), create=True) as cache:
        rec = Recording(cache)
        config = config_to_yaml(default_config())
        run1 = rec.begin_run(started=T0, pid=1, config_yaml=config)
        with rec.batch():
            for i in range(5000):
                body = deployment(i, 2, 1)
                key = ObjKey(deploy, f"ns-{i % 50}", f"web-{i}")
                spec = hashing.spec_hash(body["spec"])
                rec.append_event(run1, EventRow(ts=int(T0), recv=T0 + 0.5, key=key, uid=f"dep-uid-{i:06d}", op=0, spec_hash=spec,
                                                body=sanitize.sanitize(body, gvk=deploy)))
                rec.upsert_object(key, uid=f"dep-uid-{i:06d}", spec_hash=spec)
            rec.mark_synced(run1, T0 + 1)
        rec.stop_run(run1, T0 + 10, clean=True)
        run2 = rec.begin_run(started=log_end + 100, pid=1, config_yaml=config)
        with rec.batch():
            for i in range(5000):
                if f"d{i}" not in state:
                    continue
                body = deployment(i, 2, state[f"d{i}"])
                key = ObjKey(deploy, f"ns-{i % 50}", f"web-{i}")
                spec = hashing.spec_hash(body["spec"])
                rec.append_event(run2, EventRow(ts=int(log_end + 100), recv=log_end + 100.5, key=key, uid=f"dep-uid-{i:06d}", op=0,
                                                inferred=True, spec_hash=spec, body=sanitize.sanitize(body, gvk=deploy)))
                rec.upsert_object(key, uid=f"dep-uid-{i:06d}", spec_hash=spec)
            rec.mark_synced(run2, log_end + 101)
        rec.stop_run(run2, log_end + 110, clean=True)


def measure(argv: list[str], *, show: bool = False) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS MB) of a child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    out, err = proc.communicate()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv[2:4]} failed: {err.decode()[-2000:]}")
    if show:
        print("  " + out.decode().strip().replace("\n", "\n  "))
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=200)
    parser.add_argument("--dir", default="/var/tmp/sktrace-bench-backfill")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    work = Path(args.dir)
    work.mkdir(parents=True, exist_ok=True)
    log = work / f"audit-{args.size_mb}mb.log"
    t = time.perf_counter()
    lines, state = make_log(log, args.size_mb)
    size = log.stat().st_size / 1e6
    print(f"log: {log} ({size:.0f} MB, {lines:,} lines; ready in {time.perf_counter() - t:.0f}s)")
    base = work / "base.db"
    make_cache(base, T0 + 100 + lines * 0.004, state)
    python = sys.executable
    print(f"{'pass':<28}{'wall s':>8}{'cpu s':>8}{'MB/s':>8}{'peak RSS MB':>13}")
    for n in range(args.repeat):
        ref = measure([python, "-c", REFERENCE, str(log)])
        print(f"{'reference: json.loads':<28}{ref[0]:>8.1f}{ref[1]:>8.1f}{size / ref[0]:>8.1f}{ref[2]:>13.0f}")
        cache = work / f"fill-{n}.db"
        shutil.copyfile(base, cache)
        got = measure([python, "-m", "kubectl_sktrace", "backfill", "--cache", str(cache), "--audit-log", str(log)], show=n == 0)
        print(f"{'backfill':<28}{got[0]:>8.1f}{got[1]:>8.1f}{size / got[0]:>8.1f}{got[2]:>13.0f}")
        print(f"  backfill / reference: {ref[0] / got[0]:.2f}x the reference's speed")
        cache.unlink()


if __name__ == "__main__":
    main()
