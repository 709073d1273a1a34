"""When every tracked kind failed to be watched: the one error that stops ``start``, with the fix.

One kind refused or failing is a warning (the others are recorded); when no tracked kind can be watched,
nothing useful can be recorded, so the run stops. Refusals (403) count only until the run is synced: later, a grant
revoked is a gap that closes when it is granted again (``availability``), not the end of the run. If every failure
is a 403, the message says what to do,
most likely first: refused across the cluster, a user may still read one namespace (a RoleBinding to
``view``), so that namespace (the kubeconfig context's) comes before asking for a ClusterRole.
"""

from __future__ import annotations

from typing import Any, Mapping

from kubectl_sktrace.errors import ForbiddenError, KubeError
from kubectl_sktrace.model import GVK, POD


def every_kind_failed(
    *, tracked: list[GVK], failures: Mapping[GVK, BaseException], resources: Mapping[GVK, Any],
    namespace: str | None, context_namespace: str | None, synced: bool = False,
) -> KubeError | None:
    """The error that ends the run when every kind of ``tracked`` is in ``failures``; None while one still runs.

    ``resources`` are the discovered kinds (their ``rbac_name`` and ``namespaced``), ``namespace`` what is
    recorded (None: every namespace), ``context_namespace`` the kubeconfig context's namespace; once ``synced``,
    refusals are left out."""
    if synced:
        failures = {gvk: error for gvk, error in failures.items() if not isinstance(error, ForbiddenError)}
    failed = [g for g in tracked if g in failures]
    if not tracked or len(failed) < len(tracked):
        return None
    refused = [e for e in (failures[g] for g in failed) if isinstance(e, ForbiddenError)]
    if len(refused) == len(failed):
        return KubeError(_forbidden_advice(tracked=tracked, failed=failed, refused=refused, resources=resources,
                                           namespace=namespace, context_namespace=context_namespace))
    return KubeError(f"no tracked kind can be watched ({failures[failed[0]]}); check the cluster and the config")


def _account_namespace(user: str) -> str | None:
    """A service account's own namespace (``system:serviceaccount:NS:NAME``, as a 403 names it): where it is usually
    bound, and a better guess than the kubeconfig's namespace, which a token's kubeconfig often leaves at 'default'."""
    parts = user.split(":")
    return parts[2] if len(parts) == 4 and parts[:2] == ["system", "serviceaccount"] and parts[2] else None


def _forbidden_advice(
    *, tracked: list[GVK], failed: list[GVK], refused: list[ForbiddenError], resources: Mapping[GVK, Any],
    namespace: str | None, context_namespace: str | None,
) -> str:
    from kubectl_sktrace.kube.rbac import rbac_hint

    names = [resources[g].rbac_name for g in [*tracked, POD] if g in resources]
    cluster = namespace is None and all(e.cluster_scope for e in refused)
    scope = " at the cluster scope" if cluster else f" in namespace {namespace!r}" if namespace else ""
    likely = _account_namespace(refused[0].user) or context_namespace
    ns = likely if likely != namespace else None
    first = ""
    if ns and all(resources[g].namespaced for g in failed):
        first = f"you may only have access to namespace {ns!r}: record it with -n {ns}, or "
    elif cluster:
        first = "you may only have access to some namespaces: record one with -n NAMESPACE, or "
    return (f"forbidden to list and watch every tracked kind{scope}; {first}"
            f"{rbac_hint(names, namespace=namespace, user=refused[0].user)}, or track other kinds with --config")
