"""A local Kubernetes API server for tests, benchmarks and ``kubectl sktrace demo`` (docs/spec.md §11).

This is a test and demo server, never used when the user records a real cluster: nothing on the
recorder's path imports it. It speaks enough of the real protocol that the unmodified ``kubectl`` binary
and the official ``kubernetes`` Python client work against it: discovery, get/list (paginated from a
consistent snapshot)/create/replace/merge-patch/delete, label and field selectors, chunked watch streams
with resourceVersion replay, synthetic ADDED events, bookmarks, ``timeoutSeconds`` and ERROR 410 after
compaction, Table output for ``kubectl get``, graceful pod deletion, garbage collection of dependents,
and a bearer-token check. It binds to 127.0.0.1 only.

Public API::

    from sktrace_emulator import Emulator
    emu = Emulator(token="t", port=0, bookmark_interval=60.0, history_limit=200_000, continue_ttl=300.0,
                   seed=None, tls=None,   # tls=None: https when the openssl command exists (kubectl sends
                                          # bearer tokens only over https); the CA is in emu.ca_pem
                   framing="per-event",   # one chunk per watch event, as a real server; "batched": a burst
                                          # per chunk, to measure a reader's ceiling (not what a server does)
                   list_seconds_per_mb=0.023)   # a list page waits this long per MB of its body before its
                                          # first byte, as a real server encodes it; 0: pages cost nothing
    emu.start() / emu.stop() / with Emulator() as emu: ...
    emu.url; emu.port; emu.write_kubeconfig(path, *, context="emulator", namespace="default") -> str
    emu.create(obj) / emu.update(obj) / emu.update_status(obj) -> dict
    emu.patch(api_version, kind, namespace, name, patch) -> dict         # JSON merge patch
    emu.delete(api_version, kind, namespace, name, *, graceful=True)
    emu.get(api_version, kind, namespace, name) -> dict | None
    emu.list(api_version, kind, namespace=None) -> list[dict]
    emu.resource_version -> str; emu.cluster_uid -> str (uid of kube-system)
    emu.register_kind(group, version, kind, plural, *, namespaced=True)
    # fault knobs (HTTP requests only):
    emu.vanish(api_version, kind, namespace, name); emu.compact(); emu.force_410(kind=None)
    emu.drop_watches(); emu.fail(kind, status, *, count=1, retry_after=None); emu.set_delay(seconds)
    emu.grant_view(namespaces, *, user=None)   # RBAC as for a RoleBinding to `view` in those namespaces only;
                                               # None: all allowed. 403s carry the API server's own message

    from sktrace_emulator import Workload, build_large_state, RestartStorm
    wl = Workload(emu, seed=1); wl.step(); wl.start(); wl.stop(); wl.generate(rate, duration)
    build_large_state(emu, *, deployments=5000, pods_per_deployment=10, namespaces=50, seed=7) -> int
    RestartStorm(emu, restarts=0).run() -> int   # one MODIFIED per running pod, fast (benchmarks)
    annotations: sktrace.io/run-seconds on a pod (it finishes after that), sktrace.io/every-seconds on a
    CronJob (overrides its schedule)
    deployment_object(namespace, name, *, replicas, rng); sample_pod_template(rng, *, app, run_seconds=None);
    finished_status(pod, *, finished)   # objects as the demo and the benchmarks make them

Standalone: ``python -m sktrace_emulator serve --kubeconfig-out FILE [--workload NAME] [--rate N]
[--framing per-event|batched] [--list-seconds-per-mb SECONDS]``.

Modules, no I/O below ``server``: ``records`` (kinds, objects, events, snapshots, the error Status),
``selectors`` and ``patches`` (what requests ask for), ``state`` (the store: versions, history, deletion,
garbage collection), ``handler`` (the REST paths, watch streams), ``tables``
(Table output for ``kubectl get``), ``server`` (the ``Emulator``
facade: HTTP(S) server, kubeconfig, fault knobs), ``builders`` (objects as controllers make them),
``workload`` (controllers, kubelet, load), ``bulk`` (fast paths for benchmarks), ``__main__`` (the command).
"""

from sktrace_emulator.builders import RUN_SECONDS, deployment_object, finished_status, sample_pod_template
from sktrace_emulator.bulk import RestartStorm, build_large_state
from sktrace_emulator.records import ApiError, ResourceType
from sktrace_emulator.server import Emulator
from sktrace_emulator.workload import Workload

__all__ = ["RUN_SECONDS", "ApiError", "Emulator", "ResourceType", "RestartStorm", "Workload", "build_large_state",
           "deployment_object", "finished_status", "sample_pod_template"]
