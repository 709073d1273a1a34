"""``kubectl sktrace demo``: the whole flow on the built-in API server, narrated, with no cluster.

What it does, in order, and why each step is there:

1. Starts the emulator (``sktrace_emulator``) on 127.0.0.1 over HTTPS with its controllers and
   kubelet running, and a scripted shop: three Deployments (ReplicaSets and pods), their ConfigMaps, a
   CronJob every few seconds. A kubeconfig for it goes into a temporary directory.
2. Records it with the real ``kubectl sktrace start`` in a child process (the same interpreter and import
   path as this one, so a krew or pip install runs its own code), while a rollout and a long Job happen.
3. Changes the cluster while nothing records: deletes a Deployment and its ConfigMap, scales another up,
   lets the Job's pod finish.
4. Records again briefly: the restart lists everything and reconciles what happened offline (deletions
   inferred, vanished pods finished, the Job's real end time).
5. Exports the whole window, inspects and validates the trace, each through the real command.

The demo's tracer config adds ``v1.ConfigMap`` to the default kinds, because the pod templates mount
ConfigMaps: without them in the trace ``validate`` reports E0005, as SimKube's own rules would.

Everything it makes lives in one temporary directory (kubeconfig, config, and the cache unless
``cache`` is given), removed at the end, on failure and on Ctrl-C/SIGTERM; only the trace stays. The
child recorder runs in its own session so a terminal's Ctrl-C reaches only the demo, which forwards one
SIGINT (the recorder's clean stop) and waits for it.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Callable, Iterator

from kubectl_sktrace.errors import SktraceError, UsageError

if TYPE_CHECKING:
    from sktrace_emulator import Emulator

NAMESPACE = "shop"
DEPLOYMENTS = {"frontend": 2, "cart": 2, "checkout": 2}
MIN_RECORD_SECONDS = 4  # each of the two recordings gets at least 2 seconds (split_seconds); --help says so
SYNC_TIMEOUT_SECONDS = 30.0
ORDER_SECONDS = 0.3
"""A pause between making a ConfigMap and the object that mounts it, so their events reach the recorder
(on two watch streams) in that order."""
CRON_EVERY_SECONDS = 5
CHILD_STOP_SECONDS = 10.0
OFFLINE_SETTLE_SECONDS = 10.0

DEMO_CONFIG = """\
# The default kinds, plus the ConfigMaps the demo's pod templates mount (so validate finds them).
trackedObjects:
  apps/v1.Deployment:
    podSpecTemplatePaths: [/spec/template]
    trackLifecycle: true
  apps/v1.StatefulSet:
    podSpecTemplatePaths: [/spec/template]
    trackLifecycle: true
  batch/v1.Job:
    podSpecTemplatePaths: [/spec/template]
    trackLifecycle: true
  batch/v1.CronJob:
    podSpecTemplatePaths: [/spec/jobTemplate/spec/template]
    trackLifecycle: true
  v1.ConfigMap: {}
"""


class DemoError(SktraceError):
    """A step of the demo failed; its own output is above the one-line message."""


@dataclass(frozen=True)
class DemoOptions:
    output_file: str
    cache: str | None
    record_seconds: int
    verbosity: int


@dataclass(frozen=True)
class DemoResult:
    trace: str
    cache: str | None
    seconds: float


def split_seconds(total: int) -> tuple[int, int]:
    """The two recordings' lengths: about 70% then 30%, each at least 2 s."""
    second = max(2, round(total * 0.3))
    return max(2, total - second), second


def check_options(options: DemoOptions) -> None:
    """Refuse what would fail late, before anything starts."""
    target = Path(options.output_file).expanduser()
    if not target.parent.is_dir():
        raise UsageError(
            f"cannot write {options.output_file}: the directory {target.parent} does not exist; create it or pass another -O/--output-file"
        )
    if target.is_dir():
        raise UsageError(f"cannot write {options.output_file}: it is a directory; pass a file path with -O/--output-file")
    if options.record_seconds < MIN_RECORD_SECONDS:
        raise UsageError(f"--record-seconds {options.record_seconds} is too short to show anything; pass {MIN_RECORD_SECONDS} or more")
    if options.cache is not None:
        cache = Path(options.cache).expanduser()
        if cache.exists():
            raise UsageError(f"the cache {options.cache} already exists; the demo records a new cluster, so pass a new --cache path")
        if not cache.parent.is_dir():
            raise UsageError(f"cannot create the cache {options.cache}: the directory {cache.parent} does not exist")


def _recording_synced(cache: str) -> bool:
    """Whether the recorder writing ``cache`` has listed every kind: its run is marked synced in the cache."""
    from kubectl_sktrace.errors import EmptyCacheError
    from kubectl_sktrace.store import history, open_cache_readonly

    if not Path(cache).is_file():
        return False
    try:
        with open_cache_readonly(cache) as opened:
            runs = history.runs(opened)
    except EmptyCacheError:  # the recorder is creating it
        return False
    return bool(runs) and runs[-1].synced is not None


class _Child:
    """Runs ``kubectl sktrace ...`` as a child process: this interpreter, this import path."""

    def __init__(self, *, verbosity: int) -> None:
        import kubectl_sktrace

        root = str(Path(kubectl_sktrace.__file__).resolve().parent.parent)
        path = os.environ.get("PYTHONPATH")
        self.env = {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else "")}
        self.env.pop("KUBECONFIG", None)
        self.verbosity = verbosity
        self.proc: subprocess.Popen[bytes] | None = None

    def spawn(self, args: list[str]) -> subprocess.Popen[bytes]:
        extra = ["-v", str(self.verbosity)] if self.verbosity else []
        sys.stdout.flush()
        sys.stderr.flush()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kubectl_sktrace", *args, *extra], env=self.env, start_new_session=os.name == "posix",
        )
        return self.proc

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait(self, *, what: str) -> None:
        assert self.proc is not None
        code = self.proc.wait()
        self.proc = None
        if code != 0:
            raise DemoError(f"'{what}' failed (exit {code}); its output is above. Rerun the demo with -v 4 for details")

    def run(self, args: list[str], *, what: str) -> None:
        self.spawn(args)
        self.wait(what=what)

    def stop(self) -> None:
        """Ask a running child to stop as Ctrl-C would, then make sure it is gone."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=CHILD_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class _SignalsAsInterrupt:
    """Ctrl-C (SIGINT) and SIGTERM stop the demo (children stopped, temporary files removed), as they stop
    ``start``: handlers of its own, so a SIGINT ignored by the shell that launched it (a background job of a
    script) still stops it."""

    SIGNALS = ("SIGINT", "SIGTERM")

    def __enter__(self) -> None:
        self.saved: dict[int, Any] = {}
        if os.name == "posix" and _main_thread():
            for name in self.SIGNALS:
                signum = getattr(signal, name)
                self.saved[signum] = signal.signal(signum, self._raise)

    @staticmethod
    def _raise(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self.saved.items():
            signal.signal(signum, handler)


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _shown(args: list[str], tmp: str) -> str:
    """A command line as a person would type it, the temporary directory shortened to $DEMO."""
    return "$ kubectl sktrace " + " ".join(a.replace(tmp, "$DEMO") for a in args)


# --- the scripted cluster -----------------------------------------------------------------------------


class Shop:
    """The demo's workload on one emulator: what exists, and the changes the narration talks about."""

    def __init__(self, emu: Emulator) -> None:
        from sktrace_emulator import Workload

        self.emu = emu
        self.rng = random.Random(7)
        self.workload = Workload(emu, seed=7, start_delay=0.3)

    def prepare(self) -> None:
        """What exists before the first recording: the ConfigMaps, the CronJob; controllers running."""
        from sktrace_emulator import RUN_SECONDS

        for name in DEPLOYMENTS:
            self._config_map(f"{name}-config")
        report = {"containers": [{"name": "report", "image": "busybox:1.36", "command": ["sh", "-c", "echo sales report"]}], "restartPolicy": "Never"}
        self.emu.create({
            "apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "report", "namespace": NAMESPACE, "annotations": {"sktrace.io/every-seconds": str(CRON_EVERY_SECONDS)}},
            "spec": {"schedule": "*/5 * * * *", "successfulJobsHistoryLimit": 2,
                     "jobTemplate": {"spec": {"template": {"metadata": {"annotations": {RUN_SECONDS: "1"}}, "spec": report}}}},
        })
        self.workload.step()
        self.workload.start()

    def open_shop(self) -> None:
        """The Deployments, made while the recorder watches: their ReplicaSets and pods arrive live, after the
        ConfigMaps they mount (a trace must apply a ConfigMap before the template that uses it)."""
        from sktrace_emulator import deployment_object

        for name, replicas in DEPLOYMENTS.items():
            self.emu.create({"apiVersion": "apps/v1", "kind": "Deployment", **deployment_object(NAMESPACE, name, replicas=replicas, rng=self.rng)})

    def _config_map(self, name: str) -> None:
        self.emu.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NAMESPACE},
                         "data": {"settings.yaml": f"name: {name}\nlogLevel: info\n"}})

    def roll_out(self) -> None:
        """A new image for frontend: a new ReplicaSet, every pod replaced."""
        deploy = self.emu.get("apps/v1", "Deployment", NAMESPACE, "frontend")
        if deploy is None:
            raise DemoError("the Deployment frontend vanished from the emulator before its roll-out; rerun the demo")
        deploy["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example.com/team/frontend:2.0.0"
        self.emu.update(deploy)

    def start_job(self) -> None:
        """A migration Job whose pod runs until the demo makes it finish (while nothing records)."""
        from sktrace_emulator import RUN_SECONDS, sample_pod_template

        self._config_map("migrate-config")
        time.sleep(ORDER_SECONDS)
        template = sample_pod_template(self.rng, app="migrate")
        template["metadata"]["annotations"][RUN_SECONDS] = "3600"
        template["spec"]["restartPolicy"] = "Never"
        self.emu.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate-db", "namespace": NAMESPACE},
                         "spec": {"completions": 1, "parallelism": 1, "backoffLimit": 0, "template": template}})

    def change_offline(self) -> None:
        """Delete checkout and its ConfigMap, scale cart 2 -> 4, finish the migration Job's pod."""
        from sktrace_emulator import finished_status

        self.emu.delete("apps/v1", "Deployment", NAMESPACE, "checkout")
        self.emu.delete("v1", "ConfigMap", NAMESPACE, "checkout-config")
        self.emu.patch("apps/v1", "Deployment", NAMESPACE, "cart", {"spec": {"replicas": 4}})
        for pod in self._job_pods():
            if (pod.get("status") or {}).get("phase") == "Running":
                pod["status"] = finished_status(pod, finished=time.time())
                self.emu.update_status(pod)

    def _job_pods(self) -> Iterator[dict[str, Any]]:
        for pod in self.emu.list("v1", "Pod", NAMESPACE):
            if (pod["metadata"].get("labels") or {}).get("job-name") == "migrate-db":
                yield pod

    def job_running(self) -> bool:
        return any((p.get("status") or {}).get("phase") == "Running" for p in self._job_pods())

    def settled_offline(self) -> bool:
        """The controllers caught up with the offline changes: checkout gone, cart at 4 running, Job complete."""
        pods = self.emu.list("v1", "Pod", NAMESPACE)

        def running(prefix: str) -> int:
            return sum(1 for p in pods if p["metadata"]["name"].startswith(prefix) and (p.get("status") or {}).get("phase") == "Running")

        job = self.emu.get("batch/v1", "Job", NAMESPACE, "migrate-db") or {}
        complete = any(c.get("type") == "Complete" for c in (job.get("status") or {}).get("conditions") or [])
        return running("checkout-") == 0 and running("cart-") == 4 and complete

    def stop(self) -> None:
        self.workload.stop()


# --- the narrated run ---------------------------------------------------------------------------------


def run_demo(options: DemoOptions, *, say: Callable[[str], None], clock: Callable[[], float] = time.monotonic) -> DemoResult:
    """Run the demo; ``say`` prints one narration paragraph. Raises DemoError/UsageError, or KeyboardInterrupt."""
    check_options(options)
    began = clock()
    tmp = tempfile.mkdtemp(prefix="sktrace-demo-")
    demo = _Demo(
        say=say, clock=clock, tmp=tmp, child=_Child(verbosity=options.verbosity),
        cache=str(Path(options.cache).expanduser().resolve()) if options.cache else os.path.join(tmp, "cache.db"),
        trace=str(Path(options.output_file).expanduser().resolve()),
    )
    first, second = split_seconds(options.record_seconds)
    try:
        with _SignalsAsInterrupt():
            demo.start_cluster()
            demo.record_live(first)
            demo.change_offline()
            demo.record_again(second)
            demo.read_back()
    finally:
        demo.clean_up()
    return DemoResult(trace=demo.trace, cache=options.cache, seconds=clock() - began)


@dataclass
class _Demo:
    """The narrated run's steps, in order, and what they share: the temporary directory, the child
    recorder, the emulator and its shop (None once stopped)."""

    say: Callable[[str], None]
    clock: Callable[[], float]
    tmp: str
    child: _Child
    cache: str
    trace: str
    emu: Emulator | None = None
    shop: Shop | None = None

    @property
    def kubeconfig(self) -> str:
        return os.path.join(self.tmp, "kubeconfig.yaml")

    @property
    def start(self) -> list[str]:
        return ["start", "--kubeconfig", self.kubeconfig, "--cache", self.cache, "--config", os.path.join(self.tmp, "tracer.yaml")]

    def start_cluster(self) -> None:
        from sktrace_emulator import Emulator

        Path(self.tmp, "tracer.yaml").write_text(DEMO_CONFIG)
        self.emu = emu = Emulator(token="demo-token", bookmark_interval=2.0).start()
        emu.write_kubeconfig(self.kubeconfig, context="sktrace-demo")
        self.shop = Shop(emu)
        self.shop.prepare()
        self.say(
            f"1/5  Started a local Kubernetes API server at {emu.url} (no cluster needed), its controllers and\n"
            f"     kubelet, and a shop in namespace '{NAMESPACE}' with a CronJob 'report' running a Job every {CRON_EVERY_SECONDS}s.\n"
            "     The recorder reads it over HTTPS through an ordinary kubeconfig, exactly as it reads a real\n"
            "     cluster. $DEMO below is a temporary directory, removed at the end."
        )

    def record_live(self, seconds: int) -> None:
        assert self.shop is not None
        shop, child = self.shop, self.child
        self.say(
            f"2/5  Recording for {seconds}s. Once the recorder has listed everything, the shop opens: Deployments frontend,\n"
            "     cart and checkout create ReplicaSets and pods; then frontend rolls out a new image (new pods\n"
            "     replace the old) and a Job 'migrate-db' starts a long-running pod. Each change reaches the\n"
            "     sqlite cache within half a second."
        )
        self.say(_shown([*self.start, "--duration", f"{seconds}s"], self.tmp))
        child.spawn([*self.start, "--duration", f"{seconds}s"])
        _wait_until(lambda: _recording_synced(self.cache) or not child.running(), timeout=SYNC_TIMEOUT_SECONDS,
                    what="the recorder to list the cluster")
        _script(child, clock=self.clock, actions=((0.0, shop.open_shop), (seconds * 0.3, shop.roll_out), (seconds * 0.5, shop.start_job)))
        child.wait(what="kubectl sktrace start")
        if not shop.job_running():
            raise DemoError("the Job migrate-db never started running in the emulator; rerun the demo with a longer --record-seconds")

    def change_offline(self) -> None:
        assert self.shop is not None
        self.say(
            "3/5  Nothing is recording now. Changing the cluster behind the recorder's back: deleting Deployment\n"
            "     checkout and its ConfigMap, scaling cart from 2 to 4 pods, and letting migrate-db's pod finish.\n"
            "     A tracer that keeps its state in memory would never learn of this."
        )
        self.shop.change_offline()
        _wait_until(self.shop.settled_offline, timeout=OFFLINE_SETTLE_SECONDS, what="the emulator to apply the offline changes")
        time.sleep(1.0)  # a gap of at least a second: the cache's times are whole seconds in the trace

    def record_again(self, seconds: int) -> None:
        self.say(
            f"4/5  Recording again for {seconds}s. start first lists every kind and compares it with the cache: checkout\n"
            "     and its ConfigMap are recorded as deleted while offline (inferred, at the restart), checkout's\n"
            "     vanished pods as finished, cart's scale-up as applied, and migrate-db's pod gets its real end\n"
            "     time from its container state."
        )
        self.say(_shown([*self.start, "--duration", f"{seconds}s"], self.tmp))
        self.child.run([*self.start, "--duration", f"{seconds}s"], what="kubectl sktrace start")

    def read_back(self) -> None:
        """Stop the API server, then status, export, inspect and validate, each from the cache or the trace."""
        self._stop_cluster()
        start_ts, end_ts = _recorded_window(self.cache)
        self.say(
            "5/5  The API server is stopped now: everything below reads the cache alone. status shows the two runs\n"
            "     and the gap between them; export writes the whole recorded window as a SimKube trace; inspect\n"
            "     summarizes it; validate applies SimKube's load checks and validation rules to it."
        )
        export = ["export", "--cache", self.cache, "-s", f"@{start_ts}", "-t", f"@{end_ts}", "-O", self.trace]
        for args, what in ((["status", "--cache", self.cache], "status"), (export, "export"),
                           (["inspect", self.trace], "inspect"), (["validate", self.trace], "validate")):
            self.say(_shown(args, self.tmp))
            self.child.run(args, what=f"kubectl sktrace {what}")

    def _stop_cluster(self) -> None:
        if self.shop is not None:
            self.shop.stop()
        if self.emu is not None:
            self.emu.stop()
            self.emu = None

    def clean_up(self) -> None:
        """On success, failure or Ctrl-C: the child stopped, the cluster stopped, the temporary directory gone."""
        self.child.stop()
        self._stop_cluster()
        shutil.rmtree(self.tmp, ignore_errors=True)


def _recorded_window(cache: str) -> tuple[int, int]:
    """Whole seconds from the first run's start to the last run's stop: a window with no uncovered edge,
    so export warns only about the gap the demo made on purpose."""
    import math

    from kubectl_sktrace.record.status import load_status

    runs = load_status(cache=cache, kubeconfig=None, context=None).runs
    if not runs:
        raise DemoError(f"the cache {cache} holds no recording run; rerun the demo with -v 4 and report it")
    return math.ceil(runs[0].started), math.floor(runs[-1].stopped)


def closing_words(result: DemoResult, *, output_file: str) -> str:
    """The last lines: where the trace is and what to run next."""
    keep = (f"kubectl sktrace export --cache {result.cache} -s -5m -o yaml", "the same history, readable") if result.cache \
        else ("kubectl sktrace demo --cache demo.db", "keep the cache, to export it again")
    commands = [
        (f"kubectl sktrace inspect {output_file} --events", "every event: + applied, - deleted"),
        keep,
        ("kubectl sktrace start --duration 10m", "record your own cluster (the current context)"),
        ("kubectl sktrace demo --serve", "or keep this API server running, as a cluster to try"),
        (f"skctl xray {output_file}", "browse it in SimKube's viewer"),
    ]
    width = max(len(command) for command, _ in commands)
    return "\n".join([f"Done in {result.seconds:.0f}s. Your trace: {result.trace}", "Next, try:"]
                     + [f"  {command.ljust(width)}   # {why}" for command, why in commands])


def _script(child: _Child, *, clock: Callable[[], float], actions: tuple[tuple[float, Callable[[], None]], ...]) -> None:
    """Perform ``actions`` at their offsets (seconds from now) while the child records."""
    began = clock()
    for offset, action in actions:
        while clock() - began < offset:
            if not child.running():
                return
            time.sleep(0.05)
        action()


def _wait_until(ready: Callable[[], bool], *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise DemoError(f"timed out after {timeout:.0f}s waiting for {what}; rerun with -v 4 and report it")
        time.sleep(0.05)
