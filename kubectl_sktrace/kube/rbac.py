"""What the recorder needs from RBAC, as a ClusterRole or Role and its binding (``kubectl sktrace rbac``). Pure.

The rules follow what ``start`` asks of the API server for a tracer config (``recorder.Session``'s plan):

- list and watch on every tracked kind, on pods (always watched, for their lifecycles), and on the owner
  kinds watched for the pods' owner chains (``tracerconfig.watched_owner_kinds``, given by the caller: the
  ReplicaSets of tracked Deployments, the Jobs of tracked CronJobs);
- get on the same kinds but pods: an owner the recorder has not seen yet (or saw under another uid) is
  fetched by name, and pods own nothing;
- with a ClusterRole, get on the namespace ``kube-system`` alone (``resourceNames``): its uid is the cache's
  cluster identity, which lets a pod continue a cache recorded from a laptop (another server URL, the same
  cluster). A Role cannot grant it: the namespaced recorder then tells the cluster by its URL only.

Each binding is named after its subject (``binding_name``): grants for different subjects (the in-cluster
recorder's ServiceAccount, a person on a laptop) coexist, and applying the same grant again changes nothing.
The role keeps one name, ``sktrace-recorder``: every binding refers to it.

Discovery needs no rule (every authenticated user may read it). A Role (``-n NS``) grants the rules in one
namespace, so it cannot cover a cluster-scoped kind: asking for one is an error. A kind's RBAC name is its
plural and its group: ``BUILTIN_RESOURCES`` knows the built-in kinds; others come from discovery
(``permissions``).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import yaml

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.model import GVK, POD

RBAC_API = "rbac.authorization.k8s.io/v1"
DEFAULT_NAME = "sktrace-recorder"
DEFAULT_SERVICE_ACCOUNT = "sktrace"
DEFAULT_SA_NAMESPACE = "sktrace"
READ = ("get", "list", "watch")
WATCH = ("list", "watch")


@dataclass(frozen=True)
class KindResource:
    """How RBAC names a kind: its plural (``deployments``), and whether it lives in namespaces."""

    plural: str
    namespaced: bool = True


# the built-in kinds a tracer config may name, by group and kind (RBAC rules do not name versions)
BUILTIN_RESOURCES: dict[tuple[str, str], KindResource] = {
    **{("", kind): KindResource(plural) for kind, plural in (
        ("Pod", "pods"), ("ConfigMap", "configmaps"), ("Secret", "secrets"), ("ServiceAccount", "serviceaccounts"),
        ("Service", "services"), ("Endpoints", "endpoints"), ("PersistentVolumeClaim", "persistentvolumeclaims"),
        ("ResourceQuota", "resourcequotas"), ("LimitRange", "limitranges"), ("PodTemplate", "podtemplates"),
        ("ReplicationController", "replicationcontrollers"))},
    **{("", kind): KindResource(plural, namespaced=False) for kind, plural in (
        ("Namespace", "namespaces"), ("Node", "nodes"), ("PersistentVolume", "persistentvolumes"))},
    **{("apps", kind): KindResource(plural) for kind, plural in (
        ("Deployment", "deployments"), ("StatefulSet", "statefulsets"), ("DaemonSet", "daemonsets"),
        ("ReplicaSet", "replicasets"), ("ControllerRevision", "controllerrevisions"))},
    ("batch", "Job"): KindResource("jobs"),
    ("batch", "CronJob"): KindResource("cronjobs"),
    ("autoscaling", "HorizontalPodAutoscaler"): KindResource("horizontalpodautoscalers"),
    ("policy", "PodDisruptionBudget"): KindResource("poddisruptionbudgets"),
    ("networking.k8s.io", "Ingress"): KindResource("ingresses"),
    ("networking.k8s.io", "NetworkPolicy"): KindResource("networkpolicies"),
    ("scheduling.k8s.io", "PriorityClass"): KindResource("priorityclasses", namespaced=False),
    ("storage.k8s.io", "StorageClass"): KindResource("storageclasses", namespaced=False),
    ("rbac.authorization.k8s.io", "Role"): KindResource("roles"),
    ("rbac.authorization.k8s.io", "RoleBinding"): KindResource("rolebindings"),
    ("rbac.authorization.k8s.io", "ClusterRole"): KindResource("clusterroles", namespaced=False),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): KindResource("clusterrolebindings", namespaced=False),
}


def builtin_resource(gvk: GVK) -> KindResource | None:
    return BUILTIN_RESOURCES.get((gvk.group, gvk.kind))


def needed_kinds(*, tracked: Iterable[GVK], owner_kinds: Iterable[GVK]) -> dict[GVK, tuple[str, ...]]:
    """Every kind ``start`` reads, and the verbs it uses on it: the ``tracked`` kinds of the config, the
    ``owner_kinds`` it watches for them (``tracerconfig.watched_owner_kinds``), pods."""
    kinds: dict[GVK, tuple[str, ...]] = {gvk: READ for gvk in tracked}
    kinds.update({gvk: READ for gvk in sorted(owner_kinds, key=str)})
    kinds[POD] = WATCH
    return kinds


@dataclass(frozen=True)
class Subject:
    """Who the binding grants the role to: a ServiceAccount (with its namespace) or a User."""

    kind: str
    name: str
    namespace: str = ""

    def to_plain(self) -> dict[str, Any]:
        if self.kind == "ServiceAccount":
            return {"kind": "ServiceAccount", "name": self.name, "namespace": self.namespace}
        return {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": self.name}


_SA_USER = re.compile(r"system:serviceaccount:([^:]+):([^:]+)")


def parse_subject(*, service_account: str | None, user: str | None, namespace: str | None) -> Subject:
    """``--service-account [NAMESPACE:]NAME`` (kubectl's form; the namespace defaults to ``-n``'s, else
    ``sktrace``) or ``--user NAME``; the default is the ServiceAccount ``sktrace`` of the manifests in ``deploy/``."""
    if service_account is not None and user is not None:
        raise UsageError("--service-account and --user name two subjects; pass one of them")
    if user is not None:
        found = _SA_USER.fullmatch(user.strip())
        if found is None:
            if not user.strip():
                raise UsageError("--user needs a user name, as the API server names it; pass --user NAME")
            return Subject("User", user.strip())
        service_account = f"{found.group(1)}:{found.group(2)}"
    text = DEFAULT_SERVICE_ACCOUNT if service_account is None else service_account.strip()
    sa_namespace, _, name = text.rpartition(":")
    if not name or ":" in sa_namespace:
        raise UsageError(f"--service-account {service_account}: pass NAME or NAMESPACE:NAME")
    return Subject("ServiceAccount", name, sa_namespace or namespace or DEFAULT_SA_NAMESPACE)


_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9._@:+=-]")
NAME_MAX = 253
"""The longest binding name made: an object name's limit in etcd's keys and in kubectl's messages."""


def binding_name(subject: Subject, *, role: str = DEFAULT_NAME) -> str:
    """The name of the binding that grants ``role`` to ``subject``, made from the subject alone (deterministic):
    ``sktrace-recorder:serviceaccount:NAMESPACE:NAME`` or ``sktrace-recorder:user:NAME``.

    RBAC names roles and bindings with path segments (any text but ``.``, ``..``, ``/`` and ``%``), and colons
    are Kubernetes' own separator there (``system:controller:…``); a namespace and a ServiceAccount's name hold
    no colon, so these names never collide. A user's name is free text (an OIDC issuer URL, spaces): what a
    path segment or a shell would trip on is replaced by ``-``, and then, so that two users never share a
    binding, eight hex digits of the name's SHA-256 are appended; so they are too to a name cut at ``NAME_MAX``."""
    if subject.kind == "ServiceAccount":
        return f"{role}:serviceaccount:{subject.namespace}:{subject.name}"
    base = f"{role}:user:"
    safe = _NAME_UNSAFE.sub("-", subject.name)
    if safe == subject.name and len(base) + len(safe) <= NAME_MAX:
        return base + safe
    digest = hashlib.sha256(subject.name.encode()).hexdigest()[:8]
    return f"{base}{safe[:NAME_MAX - len(base) - 9]}-{digest}"


def subject_flags(user: str) -> str:
    """The ``rbac`` flags that bind the role to ``user`` as a 403 names it (``system:serviceaccount:ns:name``
    is a ServiceAccount)."""
    found = _SA_USER.fullmatch(user)
    if found is not None:
        return f"--service-account {found.group(1)}:{found.group(2)}"
    return f"--user {user}" if user and " " not in user else "--user NAME"


def rbac_documents(*, needed: Mapping[GVK, tuple[str, ...]], resources: Mapping[GVK, KindResource], namespace: str | None,
                   subject: Subject, name: str = DEFAULT_NAME) -> list[dict[str, Any]]:
    """The ClusterRole and ClusterRoleBinding (``namespace`` None) or the Role and RoleBinding in ``namespace`` that
    let ``subject`` read the ``needed`` kinds with their verbs (``needed_kinds``); ``resources`` names each of them.
    The binding is named after its subject (``binding_name``)."""
    if namespace is not None:
        cluster_scoped = [str(g) for g in needed if not resources[g].namespaced]
        if cluster_scoped:
            raise UsageError(f"{', '.join(cluster_scoped)} is cluster-scoped: a Role in namespace {namespace} cannot "
                             "grant it; leave -n out for a ClusterRole, or stop tracking it in --config")
    grouped: dict[tuple[str, tuple[str, ...]], set[str]] = {}
    for gvk, verbs in needed.items():
        grouped.setdefault((gvk.group, verbs), set()).add(resources[gvk].plural)
    rules: list[dict[str, Any]] = [
        {"apiGroups": [group], "resources": sorted(plurals), "verbs": list(verbs)}
        for (group, verbs), plurals in sorted(grouped.items(), key=lambda item: (item[0][0], item[0][1]))
    ]
    if namespace is None:
        rules.insert(0, {"apiGroups": [""], "resources": ["namespaces"], "resourceNames": ["kube-system"], "verbs": ["get"]})
    role_kind = "ClusterRole" if namespace is None else "Role"
    meta: dict[str, Any] = {"name": name, **({} if namespace is None else {"namespace": namespace}),
                            "labels": {"app.kubernetes.io/name": "kubectl-sktrace"}}
    role = {"apiVersion": RBAC_API, "kind": role_kind, "metadata": meta, "rules": rules}
    binding = {"apiVersion": RBAC_API, "kind": f"{role_kind}Binding", "metadata": {**meta, "name": binding_name(subject, role=name)},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
               "subjects": [subject.to_plain()]}
    return [role, binding]


def rbac_yaml(documents: list[dict[str, Any]], *, command: str) -> str:
    """The documents as ``---``-separated YAML that ``kubectl apply -f -`` takes, under a comment naming the command
    that made them."""
    head = f"# What kubectl-sktrace needs to record; made by: {command}\n# Apply with: {command} | kubectl apply -f -\n"
    return head + "".join("---\n" + yaml.safe_dump(doc, sort_keys=False, default_flow_style=False) for doc in documents)


def rbac_hint(resources: Sequence[str], *, namespace: str | None = None, user: str = "") -> str:
    """What to grant so that ``resources`` (RBAC names, ``deployments.apps``) can be recorded, in ``namespace`` or
    across the cluster, and the ``rbac`` command that prints the Role or ClusterRole and binding for ``user`` (as
    the 403 named it): the one wording of the RBAC fix, for one kind's 403 and for every kind refused. The verbs are
    those ``rbac`` grants (``needed_kinds``): pods are listed and watched, the other kinds fetched by name too."""
    flags = (f" -n {namespace}" if namespace else "") + (f" {subject_flags(user)}" if user else "")
    role = "Role" if namespace else "ClusterRole"
    by_verbs: dict[tuple[str, ...], list[str]] = {}
    for resource in resources:
        by_verbs.setdefault(WATCH if resource == POD_RESOURCE else READ, []).append(resource)
    grants = ", and ".join(f"{_verbs_said(verbs)} on {', '.join(names)}" for verbs, names in by_verbs.items())
    return f"grant {grants}: 'kubectl sktrace rbac{flags} [--config FILE]' prints the {role} and binding to apply"


POD_RESOURCE = BUILTIN_RESOURCES[(POD.group, POD.kind)].plural
"""How RBAC names pods, the one kind ``rbac`` grants only list and watch on (``needed_kinds``)."""


def _verbs_said(verbs: Sequence[str]) -> str:
    """``get, list and watch``."""
    return f"{', '.join(verbs[:-1])} and {verbs[-1]}" if len(verbs) > 1 else verbs[0]
