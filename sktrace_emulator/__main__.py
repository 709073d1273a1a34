"""``python -m sktrace_emulator serve``: run the emulator standalone until interrupted.

It writes a kubeconfig for itself (server, CA, bearer token, one context), so a person can run
``kubectl --kubeconfig FILE get pods -A`` or ``kubectl sktrace start --kubeconfig FILE`` against it.
Workloads: ``none`` (an empty cluster), ``demo`` (controllers and kubelet running, a few Deployments, a
Job and a CronJob), ``load`` (``demo`` plus changes at ``--rate`` events per second), ``large`` (a bulk-built
state of ``--pods`` running pods, then ``load`` if ``--rate`` is given), ``storm`` (the ``large`` state; each
SIGUSR1 makes every pod's containers restart once, as fast as the server can stream it: for benchmarks).
SIGUSR2, with any workload, takes the API server down (connection refused, open watches cut) while the
cluster's controllers go on, and brings it back on the same port with the same state at the next SIGUSR2:
an outage, as when a control plane restarts. SIGHUP compacts the watch history and cuts every watch, so
every watcher must relist (410 Gone), as after a long sleep or an etcd compaction. A CustomResourceDefinition applied
with kubectl serves its kind, and deleting it takes the kind away with its objects, as on a real server.
"""

from __future__ import annotations

import argparse
import random
import signal
import sys
import threading
import time

from sktrace_emulator import Emulator, pki
from sktrace_emulator.builders import deployment_object
from sktrace_emulator.bulk import RestartStorm, build_large_state
from sktrace_emulator.handler import LIST_SECONDS_PER_MB
from sktrace_emulator.server import FRAMINGS
from sktrace_emulator.workload import Workload


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sktrace_emulator", description="A local Kubernetes API server for tests and demos.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the server until interrupted", description="Example: python -m sktrace_emulator serve --kubeconfig-out /tmp/emu.kubeconfig --workload load --rate 50")
    serve.add_argument("--kubeconfig-out", required=True, metavar="FILE", help="write a kubeconfig for this server here")
    serve.add_argument("--service-account-out", metavar="DIR",
                       help="also lay out DIR as a pod's service-account mount (token, ca.crt, namespace) for in-cluster runs")
    serve.add_argument("--workload", choices=["none", "demo", "load", "large", "storm"], default="demo",
                       help="what runs in the cluster. none: an empty cluster whose controllers and kubelet act on what you "
                            "create (kubectl create deployment gets a ReplicaSet and Pods; kubectl scale, delete, get all "
                            "work); demo (default): that, plus three Deployments that mount ConfigMaps and a CronJob in "
                            "namespace demo; load: that, plus --rate changes per second in namespace load; large: --pods "
                            "running pods built at once (controllers run with --rate); storm: a restart storm on SIGUSR1, "
                            "no controllers")
    serve.add_argument("--rate", type=float, default=0.0, help="events per second for the load generator")
    serve.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    serve.add_argument("--token", default="emulator-token")
    serve.add_argument("--pods", type=int, default=50_000, help="pods for --workload large (10 per Deployment)")
    serve.add_argument("--bookmark-interval", type=float, default=60.0)
    serve.add_argument("--history-limit", type=int, default=200_000, help="events kept per kind for watch replay")
    serve.add_argument("--no-tls", action="store_true", help="plain http (kubectl will not send the token)")
    serve.add_argument("--client-certificates", action="store_true",
                       help="require a client certificate signed by the server's own client CA, as kind's and kubeadm's "
                            "admin kubeconfigs use; the kubeconfig written holds one for kubernetes-admin instead of the token")
    serve.add_argument("--framing", choices=list(FRAMINGS), default="per-event",
                       help="watch streams: one chunk per event, as a real API server (default), or a burst per chunk (a reader's ceiling)")
    serve.add_argument("--list-seconds-per-mb", type=float, default=LIST_SECONDS_PER_MB, metavar="SECONDS",
                       help="a list page waits this long per MB before its first byte, as a real server encodes it (0: free)")
    serve.add_argument("--apf-seats", type=int, default=None, metavar="N",
                       help="API Priority and Fairness: the token's priority level has N seats and no queues (429 beyond)")
    serve.add_argument("--audit-log-path", metavar="FILE", help="write the audit log here (JSON lines), as kube-apiserver's flag does")
    serve.add_argument("--audit-policy-file", metavar="FILE", help="the audit.k8s.io/v1 Policy (YAML); default: RequestResponse for all")
    args = parser.parse_args(argv)

    if args.client_certificates and args.no_tls:
        parser.error("--client-certificates needs TLS: leave out --no-tls")
    client_ca = pki.self_signed("sktrace-emulator-client-ca") if args.client_certificates else None
    emu = Emulator(token=args.token, port=args.port, bookmark_interval=args.bookmark_interval, history_limit=args.history_limit, tls=not args.no_tls and None,
                   framing=args.framing, list_seconds_per_mb=args.list_seconds_per_mb, client_ca=client_ca and client_ca[0])
    if args.workload in ("large", "storm"):
        started = time.perf_counter()
        count = build_large_state(emu, deployments=max(1, args.pods // 10), pods_per_deployment=10)
        print(f"built {count} pods in {time.perf_counter() - started:.2f} s", file=sys.stderr, flush=True)
    emu.throttle(args.apf_seats)
    if args.audit_log_path:
        import yaml

        policy = yaml.safe_load(open(args.audit_policy_file, encoding="utf-8")) if args.audit_policy_file else None
        emu.enable_audit(args.audit_log_path, policy)
    emu.start()
    emu.write_kubeconfig(args.kubeconfig_out, client_certificate=client_ca and pki.client_certificate(
        client_ca, "kubernetes-admin", groups=("system:masters",)))
    print(f"serving {emu.url}; kubeconfig written to {args.kubeconfig_out}", file=sys.stderr, flush=True)
    if args.service_account_out:
        env = emu.write_service_account(args.service_account_out)
        print(f"service account written to {args.service_account_out}; run in-cluster with "
              f"SKTRACE_SERVICE_ACCOUNT_DIR={args.service_account_out} " + " ".join(f"{k}={v}" for k, v in env.items()),
              file=sys.stderr, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    storms = threading.Semaphore(0)
    if args.workload == "storm":
        signal.signal(signal.SIGUSR1, lambda *_: storms.release())
    outages, compactions = threading.Semaphore(0), threading.Semaphore(0)
    signal.signal(signal.SIGUSR2, lambda *_: outages.release())
    signal.signal(signal.SIGHUP, lambda *_: compactions.release())
    down = False
    storm = RestartStorm(emu, restarts=0) if args.workload == "storm" else None
    storm_count = 0
    workload: Workload | None = None
    try:
        if args.workload in ("none", "demo", "load") or (args.workload == "large" and args.rate > 0):
            workload = Workload(emu, seed=1)
            emu.store.namespace_controller = emu.store.kubelet = True  # the loop below steps it: a deleted namespace is
            # Terminating until then, a pod deleted gracefully until its kubelet's final delete
            if args.workload in ("demo", "load"):
                rng = random.Random(1)
                for name in ("web", "api", "worker"):
                    # the pod template mounts this ConfigMap: create it first, as a real application would
                    emu.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-config", "namespace": "demo"},
                                "data": {"app.conf": f"name={name}\n"}})
                    emu.create({"apiVersion": "apps/v1", "kind": "Deployment", **deployment_object("demo", name, replicas=2, rng=rng)})
                emu.create({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "report", "namespace": "demo"}, "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "report", "image": "busybox:1.36"}], "restartPolicy": "Never"}}}}}})
        while not stop.is_set():
            if outages.acquire(blocking=False):
                down = not down
                if down:
                    emu.stop()
                    print("outage: the API server is down (connection refused); SIGUSR2 brings it back", file=sys.stderr, flush=True)
                else:
                    emu.start()
                    print(f"outage over: serving {emu.url} again", file=sys.stderr, flush=True)
            if compactions.acquire(blocking=False):
                emu.compact()
                emu.drop_watches()
                print("compacted: watch history before now is gone, every watch was cut", file=sys.stderr, flush=True)
            if workload is not None and args.rate > 0 and args.workload != "demo":
                workload.generate(args.rate, 1.0)
            elif workload is not None:
                workload.step()
                stop.wait(0.1)
            elif args.workload == "storm":
                if storms.acquire(timeout=0.2) and storm is not None:
                    started = time.perf_counter()
                    made = storm.run()
                    seconds = time.perf_counter() - started
                    print(f"storm: {made} events in {seconds:.2f} s ({made / seconds:.0f}/s produced)", file=sys.stderr, flush=True)
                    storm = RestartStorm(emu, restarts=storm_count + 1)
                    storm_count += 1
            else:
                stop.wait(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        emu.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
