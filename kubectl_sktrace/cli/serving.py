"""``kubectl sktrace demo --serve``: the built-in API server (``sktrace_emulator``) kept running as a cluster to try
the plugin on, for every install (a krew or pipx user has no ``python -m sktrace_emulator`` at hand).

It runs in this process until Ctrl-C or SIGTERM, with its controllers and kubelet (a Deployment created with kubectl
gets a ReplicaSet and Pods; ``kubectl scale`` and ``kubectl get all`` work), and writes its kubeconfig where the
user is told, by default beside the caches (``${XDG_STATE_HOME:-~/.local/state}/kubectl-sktrace/emulator.kubeconfig``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

WORKLOADS = ("none", "demo", "load")


def default_kubeconfig() -> Path:
    from kubectl_sktrace.kube.kubeconfig import state_dir

    return state_dir() / "emulator.kubeconfig"


def usage(path: str, *, workload: str) -> str:
    """What to do with the server, said before it starts."""
    what = {"none": "an empty cluster: create what you like in it",
            "demo": "three Deployments mounting ConfigMaps and a CronJob in namespace demo",
            "load": "the demo's objects, and changes every second in namespace load"}[workload]
    return (
        f"Serving a local Kubernetes API server until Ctrl-C, with its controllers and kubelet ({what}).\n"
        f"Its kubeconfig: {path}\n"
        "In another terminal:\n"
        f"  export KUBECONFIG={path}\n"
        "  kubectl get all -A\n"
        "  kubectl create deployment web --image=nginx --replicas=2 && kubectl scale deployment web --replicas=3\n"
        "  kubectl sktrace start --duration 1m && kubectl sktrace export -s -1m -A -O web.sktrace"
    )


def serve(*, kubeconfig_out: str | None, workload: str, say: Callable[[str], None]) -> int:
    """Run the server until interrupted; its exit code."""
    from sktrace_emulator.__main__ import main

    path = Path(kubeconfig_out) if kubeconfig_out else default_kubeconfig()
    path.parent.mkdir(parents=True, exist_ok=True)
    say(usage(str(path), workload=workload))
    return main(["serve", "--kubeconfig-out", str(path), "--workload", workload])
