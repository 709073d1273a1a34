"""Transform speed and memory, beside a msgpack decode + encode of the same trace measured in the same run.

    python benchmarks/bench_transform.py                  # 200,000 events
    python benchmarks/bench_transform.py --events 50000   # another size
    python benchmarks/bench_transform.py --baseline main  # also --anonymize as of that git ref, in the same run
    python benchmarks/bench_transform.py --trace scales   # the other trace (below)

It writes a trace of realistic objects (``--events`` events of one object each: Deployments of about 2.5 KB of JSON,
as in ``bench_export.py``, and the Pods of their ReplicaSets with full specs and status), in one of two shapes:

- ``rollouts`` (the default, the hardest case for what the anonymizer remembers): 5,000 Deployments in turn, each
  back every 10,000 events with a new image, then one Pod of that version;
- ``scales``: of 500 Deployments, one at random is scaled (9 times of 10) or rolled out to a new image, then three
  Pods of its current version: what a cluster's history mostly is.

then, each in a fresh process so that peak RSS is its own:

- transform: ``kubectl_sktrace.trace.transform.transform_to`` of the file to a file, with SimKube's own example
  ``examples/sanitize.skel`` (seven commands; its ``rmove`` typo fixed), then with the built-in ``sanitize`` (48
  commands for three kinds of pod templates, 16 of them with variables on each object), then with the built-in and
  ``--anonymize``, then ``--anonymize`` alone (the target: within 3x the reference). Each object has something to remove (status, service accounts, env and volume references);
  with ``--baseline REF``, the built-in and ``--anonymize`` again with ``kubectl_sktrace`` as of that git ref
  (``git archive``, first on ``PYTHONPATH``);
- reference: the floor any rewrite of the trace pays: every event decoded from the file with ``msgpack.Unpacker``
  and packed again with ``msgpack.Packer`` into a file, event by event (the whole trace at once would cost the same
  CPU and gigabytes of memory), under the collector settings ``transform`` uses (``format.relaxed_gc``);
- copy walk: the same, each event copied on the way by the least a Python walk of every value does (a call per dict
  and list, a dict lookup per string, as a remembered pseudonym is read): the floor of any rewrite of the strings
  written in Python, which ``--anonymize`` is.

CPU seconds of each process's work (what to compare on a shared machine; the least of ``--repeat`` runs of each,
taken in turn) per event, their ratio, and peak RSS. The target: transform within 3x the reference, RSS bounded
whatever the number of events.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

CONFIG = {"trackedObjects": {"apps/v1.Deployment": {"podSpecTemplatePaths": ["/spec/template"], "trackLifecycle": True},
                             "v1.Pod": {"podSpecTemplatePaths": [""]}}}
OBJECTS = 5000


def pod_spec(name: str, i: int, version: int) -> dict[str, Any]:
    container = {
        "name": "main", "image": f"registry.example.com/{name}:1.{version}.0", "imagePullPolicy": "IfNotPresent",
        "args": ["--port=8080", f"--shard={i % 8}", "--log-level=info"],
        "env": [{"name": f"VAR_{k}", "value": f"value-{i}-{k}"} for k in range(8)]
        + [{"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": f"{name}-db", "key": "password"}}},
           {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": f"{name}-config", "key": "mode"}}}],
        "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
        "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 10},
        "livenessProbe": {"httpGet": {"path": "/live", "port": 8080}, "initialDelaySeconds": 15},
        "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}, {"name": "tmp", "mountPath": "/tmp"}],
    }
    return {"containers": [container], "serviceAccountName": name, "terminationGracePeriodSeconds": 30,
            "volumes": [{"name": "config", "configMap": {"name": f"{name}-config"}}, {"name": "tmp", "emptyDir": {}}]}


def deployment(i: int, version: int) -> dict[str, Any]:
    name = f"svc-{i:05d}"
    labels = {"app": name, "team": f"team-{i % 17}", "tier": ("web", "api", "worker")[i % 3]}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": f"ns-{i % 40}", "labels": labels,
                     "annotations": {"owner": f"team-{i % 17}@example.com", "runbook": f"https://runbooks.example.com/{name}"}},
        "spec": {"replicas": 1 + version % 5, "revisionHistoryLimit": 10, "selector": {"matchLabels": {"app": name}},
                 "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                 "template": {"metadata": {"labels": labels}, "spec": pod_spec(name, i, version)}},
        "status": {"replicas": 1, "readyReplicas": 1, "observedGeneration": version},
    }


def pod(i: int, version: int) -> dict[str, Any]:
    name = f"svc-{i:05d}"
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{name}-7d9f8-{version:05x}", "namespace": f"ns-{i % 40}", "labels": {"app": name},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{name}-7d9f8", "uid": f"uid-rs-{i}",
                                          "controller": True}]},
        "spec": {**pod_spec(name, i, version), "nodeName": f"node-{i % 50}"},
        "status": {"phase": "Running", "podIP": f"10.0.{i % 250}.{version % 250}", "startTime": "2026-11-26T10:00:00Z"},
    }


def rollouts(events: int) -> Iterator[dict[str, Any]]:
    for n in range(events):
        i, version = (n // 2) % OBJECTS, n // (2 * OBJECTS)
        yield deployment(i, version) if n % 2 == 0 else pod(i, version)


def scales(events: int, deployments: int = 500) -> Iterator[dict[str, Any]]:
    rng, versions, made = random.Random(1), [0] * deployments, 0
    while True:
        i = rng.randrange(deployments)
        versions[i] += rng.random() < 0.1
        scaled = deployment(i, versions[i])
        scaled["spec"]["replicas"] = rng.randrange(1, 9)
        for obj in (scaled, pod(i, versions[i]), pod(i, versions[i]), pod(i, versions[i])):
            if made == events:
                return
            if obj is not scaled:
                obj["metadata"]["name"] = f"svc-{i:05d}-7d9f8-{made:06x}"
            made += 1
            yield obj


def build(path: Path, events: int, shape: str = "rollouts") -> None:
    from kubectl_sktrace.trace.files.format import TraceWriter

    with open(path, "wb") as stream:
        writer = TraceWriter(stream, config=CONFIG, event_count=events)
        for n, obj in enumerate((rollouts if shape == "rollouts" else scales)(events)):
            writer.write_event(ts=1_800_000_000 + n // 50, applied=[obj], deleted=[])
        writer.finish(index={"apps/v1.Deployment": {f"ns-{i % 40}/svc-{i:05d}": i for i in range(OBJECTS)}}, pod_lifecycles={})


SIMKUBE_EXAMPLE = """\
remove(status);
remove(spec.template.spec.serviceAccount);
remove(spec.template.spec.serviceAccountName);
remove($x := spec.template.spec.containers[*].env[*] | exists($x.valueFrom.configMapKeyRef), $x);
remove($x := spec.template.spec.containers[*].env[*] | exists($x.valueFrom.secretKeyRef), $x);
remove($x := spec.template.spec.containers[*].envFrom[*] | exists($x.configMapRef), $x);
remove($x := spec.template.spec.containers[*].envFrom[*] | exists($x.secretRef), $x);
"""


def child_transform(path: str, out: str, which: str) -> None:
    from kubectl_sktrace.trace.skel import builtin, parse
    from kubectl_sktrace.trace.transform import transform_to

    program = {"example": parse(SIMKUBE_EXAMPLE, source="sanitize.skel"), "anonymize-only": None}.get(which, builtin("sanitize"))
    started, cpu = time.perf_counter(), time.process_time()
    report = transform_to(path, out, program=program, key=bytes(32) if which.startswith("anonymize") else None, stdin=sys.stdin.buffer,
                          stdout=sys.stdout.buffer)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(json.dumps({"seconds": elapsed, "cpu": cpu, "rss_mb": _peak_mb(), "events": report.events_written,
                      "modified": report.resources_modified}))


def copy_walk() -> Any:
    """The least a rewrite of every string in Python costs: each dict and list copied by a Python call, each string
    looked up in a dict (as a pseudonym remembered is), nothing else."""
    seen: dict[str, str] = {}

    def walk(value: Any) -> Any:
        kind = type(value)
        if kind is dict:
            return {key: walk(item) for key, item in value.items()}
        if kind is list:
            return [walk(item) for item in value]
        if kind is str:
            return seen.get(value) or seen.setdefault(value, value)
        return value

    return walk


def child_reference(path: str, out: str, walked: bool = False) -> None:
    import msgpack

    from kubectl_sktrace.trace.files.collector import relaxed_gc

    walk = copy_walk() if walked else (lambda event: event)
    started, cpu = time.perf_counter(), time.process_time()
    with open(path, "rb") as source, open(out, "wb") as sink, relaxed_gc():
        unpacker = msgpack.Unpacker(source, raw=False, strict_map_key=False, max_buffer_size=(1 << 31) - 1)
        packer = msgpack.Packer(use_bin_type=True)
        for _ in range(unpacker.read_map_header()):
            key = unpacker.unpack()
            sink.write(packer.pack(key))
            if key != "events":
                sink.write(packer.pack(unpacker.unpack()))
                continue
            count = unpacker.read_array_header()
            sink.write(packer.pack_array_header(count))
            for _ in range(count):
                sink.write(packer.pack(walk(unpacker.unpack())))
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(json.dumps({"seconds": elapsed, "cpu": cpu, "rss_mb": _peak_mb()}))


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(*args: str, source: str | None = None) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": source + os.pathsep + os.environ.get("PYTHONPATH", "")} if source else None
    result = subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True, text=True, env=env)
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def checkout(ref: str, workdir: Path) -> tuple[str, str]:
    """``kubectl_sktrace`` as of git ``ref``, extracted under ``workdir``: (its directory, the commit)."""
    root = Path(__file__).resolve().parent.parent
    commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", ref], check=True, capture_output=True, text=True).stdout.strip()
    target = workdir / f"src-{commit}"
    target.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(root), "archive", commit, "kubectl_sktrace"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return str(target), commit


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child-transform":
        child_transform(sys.argv[2], sys.argv[3], sys.argv[4])
        return
    if len(sys.argv) > 1 and sys.argv[1] in ("--child-reference", "--child-copy-walk"):
        child_reference(sys.argv[2], sys.argv[3], walked=sys.argv[1] == "--child-copy-walk")
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, nargs="+", default=[200_000])
    parser.add_argument("--trace", choices=("rollouts", "scales"), default="rollouts", help="the trace's shape (above)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each, taken in turn; the least disturbed (least CPU) of each is shown")
    parser.add_argument("--no-anonymize", dest="anonymize", action="store_false", help="leave out the run with --anonymize (the slowest)")
    parser.add_argument("--baseline", metavar="REF", help="also run --anonymize with the code of this git ref (e.g. main)")
    args = parser.parse_args()
    print(f"{'events':>8} {'trace MB':>9} {'run':<30} {'CPU µs/event':>13} {'wall s':>7} {'vs decode+encode':>17} {'peak RSS MB':>12}")
    with tempfile.TemporaryDirectory() as scratch:
        for events in args.events:
            trace, out = Path(scratch) / f"in-{events}.sktrace", Path(scratch) / f"out-{events}.sktrace"
            build(trace, events, args.trace)
            children = {"decode+encode (msgpack)": ("--child-reference", str(trace), str(out)),
                        "decode+copy walk+encode": ("--child-copy-walk", str(trace), str(out)),
                        "SimKube's sanitize.skel": ("--child-transform", str(trace), str(out), "example"),
                        "built-in sanitize": ("--child-transform", str(trace), str(out), "builtin"),
                        "sanitize + anonymize": ("--child-transform", str(trace), str(out), "anonymize"),
                        "anonymize": ("--child-transform", str(trace), str(out), "anonymize-only")}
            if not args.anonymize:
                del children["sanitize + anonymize"], children["anonymize"]
            sources: dict[str, str] = {}
            if args.baseline and args.anonymize:
                source, commit = checkout(args.baseline, Path(scratch) / str(events))
                for name in ("sanitize + anonymize", "anonymize"):
                    children[f"{name} @{commit}"], sources[f"{name} @{commit}"] = children[name], source
            runs: dict[str, list[dict[str, Any]]] = {name: [] for name in children}
            for _ in range(args.repeat):
                for name, child in children.items():
                    runs[name].append(_child(*child, source=sources.get(name)))
            best = {name: min(results, key=lambda r: r["cpu"]) for name, results in runs.items()}
            floor = best["decode+encode (msgpack)"]["cpu"]
            for name, result in best.items():
                print(f"{events:>8} {trace.stat().st_size / 2**20:>9.1f} {name:<30} {result['cpu'] / events * 1e6:>13.1f} "
                      f"{result['seconds']:>7.2f} {result['cpu'] / floor:>16.2f}x {result['rss_mb']:>12.0f}")
            os.unlink(out)


if __name__ == "__main__":
    main()
