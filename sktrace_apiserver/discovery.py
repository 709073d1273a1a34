"""The discovery documents every server of the distribution answers with: ``/version``, ``/api``, ``/apis`` and a
group's ``/apis/GROUP``; each server lists its own group-versions and resources (``APIResourceList``)."""

from __future__ import annotations

from typing import Any, Iterable

Obj = dict[str, Any]

CATEGORY_ALL = frozenset({("", "pods"), ("", "services"), ("", "replicationcontrollers"), ("apps", "deployments"), ("apps", "replicasets"),
                          ("apps", "statefulsets"), ("apps", "daemonsets"), ("batch", "jobs"), ("batch", "cronjobs"),
                          ("autoscaling", "horizontalpodautoscalers")})
"""The kinds of the category ``all`` on a real server (``kubectl get all``)."""


def version_info(git_version: str, *, minor: str = "30") -> Obj:
    """``/version``: a server of Kubernetes 1.``minor`` named ``git_version``."""
    return {
        "major": "1",
        "minor": minor,
        "gitVersion": git_version,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2024-04-17T00:00:00Z",
        "goVersion": "go1.22.2",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def api_versions(port: int) -> Obj:
    """``/api``: the core group's one version."""
    return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{port}"}]}


def group_list(group_versions: Iterable[tuple[str, str]]) -> Obj:
    """``/apis``: every named group of ``(group, version)`` pairs, its versions in their order (the first preferred)."""
    groups: dict[str, list[str]] = {}
    for group, version in group_versions:
        if group:
            versions = groups.setdefault(group, [])
            if version not in versions:
                versions.append(version)
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [
            {
                "name": group,
                "versions": [{"groupVersion": f"{group}/{v}", "version": v} for v in versions],
                "preferredVersion": {"groupVersion": f"{group}/{versions[0]}", "version": versions[0]},
            }
            for group, versions in groups.items()
        ],
    }


def api_group(groups: Obj, name: str) -> Obj | None:
    """``/apis/GROUP`` from ``/apis``'s document; None when the group is not served."""
    found = next((g for g in groups["groups"] if g["name"] == name), None)
    return None if found is None else {"kind": "APIGroup", "apiVersion": "v1", **found}
