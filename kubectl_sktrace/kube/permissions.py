"""``kubectl sktrace rbac``: the RBAC manifest for a tracer config, its kinds named by RBAC's rules (``rbac``).

The built-in kinds are named from ``rbac.BUILTIN_RESOURCES``, without asking any cluster (the same answer,
offline, in a second). Other kinds (custom resources) need discovery: the cluster of the kubeconfig is asked
for their group-versions only; when no kubeconfig names one or the cluster cannot be reached, the error
names the kinds and how to proceed. Nothing is written anywhere: the manifest is printed for an admin to
read and apply.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from kubectl_sktrace.errors import KubeError
from kubectl_sktrace.kube import rbac
from kubectl_sktrace.model import GVK

DISCOVERY_CONNECT_TIMEOUT = 5.0


@dataclass(frozen=True)
class RbacOptions:
    config_path: str | None
    namespace: str | None
    service_account: str | None
    user: str | None
    kubeconfig: str | None
    context: str | None


def rbac_manifest(options: RbacOptions) -> str:
    """The ``---``-separated YAML of the Role (or ClusterRole) and binding that ``start`` needs with the config."""
    from kubectl_sktrace.tracerconfig import (
        default_config,
        load_config,
        watched_owner_kinds,
    )

    cfg = load_config(options.config_path) if options.config_path else default_config()
    subject = rbac.parse_subject(service_account=options.service_account, user=options.user, namespace=options.namespace)
    needed = rbac.needed_kinds(tracked=cfg.tracked, owner_kinds=watched_owner_kinds(cfg))
    resources: dict[GVK, rbac.KindResource] = {}
    for gvk in needed:
        known = rbac.builtin_resource(gvk)
        if known is not None:
            resources[gvk] = known
    unknown = [gvk for gvk in needed if gvk not in resources]
    if unknown:
        resources.update(_discover(unknown, kubeconfig=options.kubeconfig, context=options.context))
    documents = rbac.rbac_documents(needed=needed, resources=resources, namespace=options.namespace, subject=subject)
    return rbac.rbac_yaml(documents, command=command_line(options))


def command_line(options: RbacOptions) -> str:
    """The command that prints this manifest again, as a user would type it."""
    words = ["kubectl", "sktrace", "rbac"]
    for flag, value in (("--context", options.context), ("-n", options.namespace), ("--config", options.config_path),
                        ("--service-account", options.service_account), ("--user", options.user)):
        if value is not None:
            words += [flag, value]
    return shlex.join(words)


def _discover(kinds: list[GVK], *, kubeconfig: str | None, context: str | None) -> dict[GVK, rbac.KindResource]:
    from kubectl_sktrace.kube.client import Kube
    from kubectl_sktrace.kube.kubeconfig import resolve_target

    names = ", ".join(str(g) for g in kinds)
    try:
        kube = Kube.connect(resolve_target(kubeconfig=kubeconfig, context=context), connect_timeout=DISCOVERY_CONNECT_TIMEOUT)
        try:
            found, _ = kube.discover(kinds)
        finally:
            kube.close()
    except KubeError as exc:
        raise KubeError(f"{names}: not a built-in kind, so its RBAC resource name comes from the cluster's discovery, "
                        f"which failed ({str(exc).split('; ')[0]}); run where --kubeconfig/--context reach the cluster") from exc
    missing = [g for g in kinds if g not in found]
    if missing:
        raise KubeError(f"{', '.join(str(g) for g in missing)}: not served by the cluster; fix the GVK in --config, or "
                        "install its CRD first")
    return {g: rbac.KindResource(found[g].plural, namespaced=found[g].namespaced) for g in kinds}
