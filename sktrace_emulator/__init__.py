"""A local Kubernetes API server for tests, benchmarks and ``kubectl sktrace demo`` (docs/spec.md §11).

This is a test and demo server, never used when the user records a real cluster: nothing on the
recorder's path imports it. It speaks enough of the real protocol that the unmodified ``kubectl`` binary
and the official ``kubernetes`` Python client work against it: discovery, get/list (paginated from a
consistent snapshot)/create/replace/merge-patch/delete, label and field selectors, chunked watch streams
with resourceVersion replay, synthetic ADDED events, bookmarks, ``timeoutSeconds`` and ERROR 410 after
compaction, Table output for ``kubectl get``, graceful pod deletion, garbage collection of dependents,
and a bearer-token check. It binds to 127.0.0.1 only.

What it matches of a real API server (Kubernetes v1.28, measured: docs/architecture.md), and what it does not:

- **Framing and flushing.** Matched by default: a watch is an HTTP/1.1 chunked response of JSON lines, each
  event (synthetic ADDED, replayed or live change, BOOKMARK, ERROR) its own chunk, sent with one ``sendall``
  at once (one TLS record up to 16 KB): a reader that keeps up pays a socket wakeup per event, and a reader
  that reads chunk by chunk (``http.client``'s ``read1``) one read per event even in a burst.
  ``framing="batched"`` sends a burst as one chunk (the synthetic ADDED events by 1,000, a replay or a
  live burst whole): a reader's ceiling, never what a server does. Not matched: HTTP/2 (kubectl and
  client-go speak it to a real server, where an event is a DATA frame; Python clients speak HTTP/1.1 to
  both), gzip compression of large responses, protobuf (asked for it, a client gets JSON).
- **Cost.** A list page waits before its first byte in proportion to its bytes, at a real server's JSON
  encoding rate (``list_seconds_per_mb``, 23 ms per MB: 80 ms for a page of 500 pods of 7 KB; 0 turns it
  off). The wait is a sleep: it models a remote control plane's latency, not CPU taken from the reader's
  machine. Everything else costs only what Python costs: watch events are serialized once per change (a
  real server's watch cache also encodes an event once for all its watchers), gets and writes have no
  etcd round trip, loopback has no network latency (``set_delay`` adds a fixed one per request). One
  thread per connection; the emulator serves fewer events per second than a real server.
- **List consistency and pagination.** Matched: ``limit``/``continue``, every page of one list from one
  snapshot at one resourceVersion, ``remainingItemCount``, 410 Expired with the server's message once a
  token is older than ``continue_ttl`` (300 s). Not matched: a list is always the current state, whatever
  its ``resourceVersion`` or ``resourceVersionMatch`` (a real server may serve ``resourceVersion=0`` stale
  from its watch cache, which makes recent objects look deleted: the emulator never catches a reader that
  relists so); at most 256 open snapshots (the oldest token then expires early).
- **resourceVersion.** Matched: one global counter for every kind, a string of an integer, every write
  (each step of a graceful deletion too) takes the next. Clients must still treat it as opaque.
- **Watch, the watch cache and 410.** Matched: a watch from a version replays the kind's later events in
  order, then live ones; without a version (or ``0``) the current objects come first as synthetic ADDED;
  ``timeoutSeconds`` ends the stream with the terminating chunk; a version older than the history is an
  ERROR event with a Status 410 Expired on a 200 stream. Not matched: the history is counted in events
  (``history_limit`` per kind), not in time (a real watch cache keeps about 5 minutes), so an old version
  stays valid until ``compact()``, ``force_410()`` or the history's overflow; a 410 never comes as an HTTP
  status on the watch request; a change that makes an object leave a watch's selector is dropped, where a
  real server sends DELETED (and ADDED when it enters); no server-side timeout closes a watch that asked
  for none; a version from the future waits instead of failing; ``sendInitialEvents`` is not supported.
- **Bookmarks.** Matched: with ``allowWatchBookmarks`` a BOOKMARK carrying only the kind and its latest
  resourceVersion every ``bookmark_interval`` (60 s, about a real server's minute) while a stream is idle, and only
  while the kind's version moves (changes the watch's selector filtered out): the watch of a kind that does not
  change gets no byte at all, as on a real v1.28 server, until ``timeoutSeconds`` ends it.
  Not matched: no bookmark while events flow, none just before a timeout, no initial-events-end bookmark.
- **CRDs that come and go** (``crds``). Matched: a CustomResourceDefinition created serves its kind at once
  (discovery, list, watch); deleted, it sends a DELETED event for each of its objects on the open watches, then ends
  them cleanly, and its paths answer 404 with the server's Status (``details: {}``) and discovery leaves it out,
  until a CRD serves it again (a fresh history). Not matched: no ``Established`` condition to wait for, no
  conversion between versions (each served version keeps objects of its own), finalizers of the objects ignored.
- **Outages.** ``stop()`` refuses connections and cuts watches; ``drop_watches()`` closes streams without the
  terminating chunk (a clean TCP close, where a real control plane more often resets).
- **TLS.** A self-signed certificate for 127.0.0.1 from the ``openssl`` command (https by default, because
  kubectl sends a bearer token only over https); Python's ``ssl``, not Go's TLS stack, so record sizes and
  handshake costs differ.
- **Auth and RBAC.** One bearer token (401 otherwise) or, with ``client_ca``, client certificates that CA signed,
  whose common name is the user (``pki`` makes them); a connection without one is refused in the TLS handshake, at
  TLS 1.2 at most (stricter than a real server, which answers 401). No impersonation or access reviews. RBAC only as ``grant_view`` (a RoleBinding to ``view`` in some namespaces) or ``grant_rules`` (one
  ClusterRole or Role's rules), with the server's 403 messages word for word; priority and fairness (429) only through
  ``fail``. Either may change mid-run, as a role edited on a real server: the next request is judged by the new
  grant, while a watch already open keeps streaming (a real server authorizes a request once, when it arrives).
- **Writes.** Namespaces are created on first use, each with its ``default`` ServiceAccount (a real server's
  controller makes it a moment later), strategic merge patches are JSON merge patches, server-side apply is refused
  (415), a graceful deletion completes at once, dependents are garbage-collected at once. A namespace's deletion goes
  through ``Terminating``: while a ``Workload`` runs (``demo --serve``), it stays so until the workload's namespace
  controller empties it at its next step, and new content in it is refused; without one, its objects and then the
  namespace go at once.
- **Admission, no kinder than a real server.** Matched: a Pod whose ServiceAccount does not exist is refused (403,
  ``error looking up service account NS/NAME``), and one whose PriorityClass does not exist (``no PriorityClass with
  name X was found``; the two built-in classes exist); a PriorityClass found gives the pod its ``priority``. Services
  get a cluster IP and their port defaults. With the ``Workload``, a pod whose ``nodeSelector`` matches no node stays
  ``Pending`` with the scheduler's ``Unschedulable`` condition. ``kubectl get deploy`` shows READY, UP-TO-DATE and
  AVAILABLE. Not matched: quotas, limit ranges, pod security, any other admission plugin.
- **Connections that fail** (a TLS handshake broken off, plain HTTP to the TLS port) are one line each on stderr.

Public API::

    from sktrace_emulator import Emulator
    emu = Emulator(token="t", port=0, bookmark_interval=60.0, history_limit=200_000, continue_ttl=300.0,
                   seed=None, tls=None,   # tls=None: https when the openssl command exists (kubectl sends
                                          # bearer tokens only over https); the CA is in emu.ca_pem
                   framing="per-event",   # one chunk per watch event, as a real server; "batched": a burst
                                          # per chunk, to measure a reader's ceiling (not what a server does)
                   list_seconds_per_mb=0.023,   # a list page waits this long per MB of its body before its
                                          # first byte, as a real server encodes it; 0: pages cost nothing
                   client_ca=None)        # PEM of a CA: every client must present a certificate it signed
    emu.write_kubeconfig(path, client_certificate=pki.client_certificate(ca, "alice"))   # the user: its cert and key
    pki.self_signed(common_name) -> (cert, key); pki.client_certificate(ca, user, *, groups=()) -> (cert, key)
    emu.start() / emu.stop() / with Emulator() as emu: ...
    emu.url; emu.port; emu.write_kubeconfig(path, *, context="emulator", namespace="default") -> str
    emu.write_service_account(dir, *, namespace="default") -> env   # a pod's token, ca.crt and namespace files,
    emu.rotate_token(dir, token)          # and KUBERNETES_SERVICE_HOST/PORT; rotate as the kubelet does
    emu.create(obj) / emu.update(obj) / emu.update_status(obj) -> dict
    emu.patch(api_version, kind, namespace, name, patch) -> dict         # JSON merge patch
    emu.delete(api_version, kind, namespace, name, *, graceful=True)
    emu.get(api_version, kind, namespace, name) -> dict | None
    emu.list(api_version, kind, namespace=None) -> list[dict]
    emu.resource_version -> str; emu.cluster_uid -> str (uid of kube-system)
    emu.register_kind(group, version, kind, plural, *, namespaced=True)   # served at once, without a CRD
    emu.create(crd_object(group, kind, plural)); emu.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition",
               "", f"{plural}.{group}")   # a kind that comes and goes, as a real server serves CRDs
    emu.enable_audit(path, policy=None) / emu.disable_audit()   # the audit log (JSON lines) under an audit.k8s.io/v1
                                          # Policy (a dict, or audit.Policy); None: RequestResponse for everything
    # fault knobs (HTTP requests only):
    emu.vanish(api_version, kind, namespace, name); emu.compact(); emu.force_410(kind=None)
    emu.drop_watches(); emu.fail(kind, status, *, count=1, retry_after=None); emu.set_delay(seconds)
    emu.grant_view(namespaces, *, user=None)   # RBAC as for a RoleBinding to `view` in those namespaces only;
                                               # None: all allowed. 403s carry the API server's own message
    emu.grant_rules(rules, *, namespace=None, user=None)   # RBAC as for one ClusterRole (or a Role in namespace)

    from sktrace_emulator import Workload, build_large_state, RestartStorm
    wl = Workload(emu, seed=1); wl.step(); wl.start(); wl.stop(); wl.generate(rate, duration)
    build_large_state(emu, *, deployments=5000, pods_per_deployment=10, namespaces=50, seed=7) -> int
    RestartStorm(emu, restarts=0).run() -> int   # one MODIFIED per running pod, fast (benchmarks)
    annotations: sktrace.io/run-seconds on a pod (it finishes after that), sktrace.io/every-seconds on a
    CronJob (overrides its schedule)
    deployment_object(namespace, name, *, replicas, rng); sample_pod_template(rng, *, app, run_seconds=None);
    finished_status(pod, *, finished)   # objects as the demo and the benchmarks make them

Standalone: ``python -m sktrace_emulator serve --kubeconfig-out FILE [--workload NAME] [--rate N]
[--framing per-event|batched] [--list-seconds-per-mb SECONDS] [--audit-log-path FILE [--audit-policy-file FILE]]
[--client-certificates]``.

Modules, no I/O below ``server``: ``records`` (kinds, objects, events, snapshots, the error Status), ``audit`` (the audit log and its policy),
``selectors`` and ``patches`` (what requests ask for), ``admission`` (what a new pod or service gets), ``crds`` (kinds that
come and go), ``state`` (the store: versions, history, deletion, garbage collection), ``discovery`` (the discovery
documents), ``handler`` (the REST paths, watch streams), ``tables``
(Table output for ``kubectl get``), ``server`` (the ``Emulator``
facade: HTTP(S) server, kubeconfig, fault knobs), ``builders`` (objects as controllers make them),
``workload`` (controllers, kubelet, load), ``bulk`` (fast paths for benchmarks), ``pki`` (certificates, by the
openssl command), ``__main__`` (the command).
"""

from sktrace_emulator.builders import (
           RUN_SECONDS,
           deployment_object,
           finished_status,
           sample_pod_template,
)
from sktrace_emulator.bulk import RestartStorm, build_large_state
from sktrace_emulator.crds import crd_object
from sktrace_emulator.records import ApiError, ResourceType
from sktrace_emulator.server import Emulator
from sktrace_emulator.workload import Workload

__all__ = ["RUN_SECONDS", "ApiError", "Emulator", "ResourceType", "RestartStorm", "Workload", "build_large_state",
           "crd_object", "deployment_object", "finished_status", "sample_pod_template"]
