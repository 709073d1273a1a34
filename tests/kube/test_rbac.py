"""rbac: the Role or ClusterRole that ``start`` needs, its rules (pure), the command, and proof on a server that
enforces exactly those rules that they are enough, and that what a refusal suggests is the fix."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_sktrace.errors import UsageError
from kubectl_sktrace.kube.rbac import (
    KindResource,
    NAME_MAX,
    Subject,
    binding_name,
    builtin_resource,
    needed_kinds,
    parse_subject,
    rbac_documents,
    subject_flags,
)
from kubectl_sktrace.model import (
    CRONJOB,
    DEPLOYMENT,
    GVK,
    JOB,
    POD,
    REPLICASET,
    STATEFULSET,
)
from kubectl_sktrace.tracerconfig import (
    default_config,
    parse_config,
    watched_owner_kinds,
)
from sktrace_emulator import Emulator

READ, WATCH = ("get", "list", "watch"), ("list", "watch")
WIDGET = GVK("example.com", "v1", "Widget")


def needed_for(config: dict[str, Any]) -> dict[GVK, tuple[str, ...]]:
    cfg = parse_config(config, source="test")
    return needed_kinds(tracked=cfg.tracked, owner_kinds=watched_owner_kinds(cfg))


@pytest.mark.parametrize(("config", "needed"), [
    pytest.param({"trackedObjects": {"apps/v1.Deployment": {"trackLifecycle": True}}},
                 {DEPLOYMENT: READ, REPLICASET: READ, POD: WATCH}, id="lifecycles-watch-the-replicasets"),
    pytest.param({"trackedObjects": {"apps/v1.Deployment": {}}}, {DEPLOYMENT: READ, POD: WATCH}, id="no-lifecycles-no-replicasets"),
    pytest.param({"trackedObjects": {"batch/v1.CronJob": {"trackLifecycle": True}, "batch/v1.Job": {}}},
                 {CRONJOB: READ, JOB: READ, POD: WATCH}, id="a-tracked-owner-kind-once"),
    pytest.param({"trackedObjects": {"v1.Pod": {"trackLifecycle": True}}}, {POD: WATCH}, id="pods-own-nothing-so-are-never-fetched"),
])
def test_needed_kinds(config: dict[str, Any], needed: dict[GVK, tuple[str, ...]]) -> None:
    assert needed_for(config) == needed


@pytest.mark.parametrize(("service_account", "user", "namespace", "subject"), [
    pytest.param(None, None, None, Subject("ServiceAccount", "sktrace", "sktrace"), id="default"),
    pytest.param(None, None, "team-a", Subject("ServiceAccount", "sktrace", "team-a"), id="default-in-the-role-namespace"),
    pytest.param("recorder", None, "team-a", Subject("ServiceAccount", "recorder", "team-a"), id="name"),
    pytest.param("ops:recorder", None, "team-a", Subject("ServiceAccount", "recorder", "ops"), id="namespace-and-name"),
    pytest.param(None, "alice@example.com", None, Subject("User", "alice@example.com"), id="user"),
    pytest.param(None, "system:serviceaccount:ops:rec", None, Subject("ServiceAccount", "rec", "ops"), id="user-named-as-a-403-names-an-sa"),
])
def test_parse_subject(service_account: str | None, user: str | None, namespace: str | None, subject: Subject) -> None:
    assert parse_subject(service_account=service_account, user=user, namespace=namespace) == subject


@pytest.mark.parametrize(("service_account", "user", "error"), [
    pytest.param("a:b:c", None, "--service-account a:b:c: pass NAME or NAMESPACE:NAME", id="two-colons"),
    pytest.param("ops:", None, "--service-account ops:: pass NAME or NAMESPACE:NAME", id="no-name"),
    pytest.param("x", "y", "--service-account and --user name two subjects; pass one of them", id="both"),
    pytest.param(None, " ", "--user needs a user name, as the API server names it; pass --user NAME", id="blank-user"),
])
def test_parse_subject_refuses(service_account: str | None, user: str | None, error: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_subject(service_account=service_account, user=user, namespace=None)
    assert str(info.value) == error


@pytest.mark.parametrize(("user", "flags"), [
    ("system:serviceaccount:default:sktrace", "--service-account default:sktrace"),
    ("jane", "--user jane"),
    ("odd name", "--user NAME"),
])
def test_subject_flags(user: str, flags: str) -> None:
    assert subject_flags(user) == flags


@pytest.mark.parametrize(("subject", "name"), [
    pytest.param(Subject("ServiceAccount", "sktrace", "sktrace"), "sktrace-recorder:serviceaccount:sktrace:sktrace", id="default-sa"),
    pytest.param(Subject("ServiceAccount", "recorder", "ops"), "sktrace-recorder:serviceaccount:ops:recorder", id="sa"),
    pytest.param(Subject("User", "alice@example.com"), "sktrace-recorder:user:alice@example.com", id="user-as-named"),
    pytest.param(Subject("User", "oidc:Alice"), "sktrace-recorder:user:oidc:Alice", id="colons-and-case-are-kept"),
    pytest.param(Subject("User", "https://issuer.example.com#alice"),
                 "sktrace-recorder:user:https:--issuer.example.com-alice-f17606a1", id="slashes-replaced-and-hashed"),
    pytest.param(Subject("User", "odd name"), "sktrace-recorder:user:odd-name-ef5bac77", id="space"),
    pytest.param(Subject("User", "odd-name"), "sktrace-recorder:user:odd-name", id="not-the-spaced-one"),
    pytest.param(Subject("User", "100%"), "sktrace-recorder:user:100--32e48995", id="percent"),
])
def test_binding_name(subject: Subject, name: str) -> None:
    assert binding_name(subject) == name


def test_binding_names_are_valid_path_segments_and_never_shared() -> None:
    """RBAC validates role and binding names as path segments: not '.' or '..', no '/' or '%'."""
    users = ["a/b", "a-b", "a%b", "a b", "A b", "..", "x" * 400, "x" * 401, "ü@example.com", "name\n"]
    names = [binding_name(Subject("User", u)) for u in users] + [binding_name(Subject("ServiceAccount", "a", "b"))]
    assert len(set(names)) == len(names)
    assert all(n not in (".", "..") and "/" not in n and "%" not in n and len(n) <= NAME_MAX for n in names)
    assert names[-2] == "sktrace-recorder:user:name--" + names[-2][-8:]


def resources_of(needed: dict[GVK, tuple[str, ...]]) -> dict[GVK, KindResource]:
    found = {g: builtin_resource(g) for g in needed}
    assert all(found.values())
    return {g: r for g, r in found.items() if r is not None}


def test_the_default_config_as_a_cluster_role() -> None:
    cfg = default_config()
    needed = needed_kinds(tracked=cfg.tracked, owner_kinds=watched_owner_kinds(cfg))
    role, binding = rbac_documents(needed=needed, resources=resources_of(needed), namespace=None,
                                   subject=Subject("ServiceAccount", "sktrace", "sktrace"))
    assert role == {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "sktrace-recorder", "labels": {"app.kubernetes.io/name": "kubectl-sktrace"}},
        "rules": [
            {"apiGroups": [""], "resources": ["namespaces"], "resourceNames": ["kube-system"], "verbs": ["get"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]},
            {"apiGroups": ["apps"], "resources": ["deployments", "replicasets", "statefulsets"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["batch"], "resources": ["cronjobs", "jobs"], "verbs": ["get", "list", "watch"]},
        ],
    }
    assert binding == {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "sktrace-recorder:serviceaccount:sktrace:sktrace", "labels": {"app.kubernetes.io/name": "kubectl-sktrace"}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "sktrace-recorder"},
        "subjects": [{"kind": "ServiceAccount", "name": "sktrace", "namespace": "sktrace"}],
    }


@pytest.mark.parametrize("namespace", [None, "team-a"], ids=["cluster-role", "role"])
def test_what_a_refusal_asks_to_grant_is_what_rbac_grants(namespace: str | None) -> None:
    # the hint of a 403 on one kind, and of every kind refused, names the verbs of the rule ``rbac`` prints for it
    from kubectl_sktrace.kube.rbac import rbac_hint

    cfg = default_config()
    needed = needed_kinds(tracked=cfg.tracked, owner_kinds=watched_owner_kinds(cfg))
    role, _ = rbac_documents(needed=needed, resources=resources_of(needed), namespace=namespace,
                             subject=Subject("ServiceAccount", "sktrace", "sktrace"))
    granted = {(f"{plural}.{rule['apiGroups'][0]}" if rule["apiGroups"][0] else plural): rule["verbs"]
               for rule in role["rules"] if "resourceNames" not in rule for plural in rule["resources"]}
    said = {("get", "list", "watch"): "get, list and watch", ("list", "watch"): "list and watch"}
    for name, verbs in granted.items():
        assert rbac_hint([name], namespace=namespace).startswith(f"grant {said[tuple(verbs)]} on {name}: "), name
    every = rbac_hint(sorted(granted), namespace=namespace)
    assert every.startswith("grant get, list and watch on cronjobs.batch, deployments.apps, jobs.batch, replicasets.apps, "
                            "statefulsets.apps, and list and watch on pods: "), every


def test_a_role_in_a_namespace_has_no_cluster_identity_rule_and_refuses_cluster_scoped_kinds() -> None:
    needed = needed_for({"trackedObjects": {"apps/v1.StatefulSet": {"trackLifecycle": True}}})
    role, binding = rbac_documents(needed=needed, resources=resources_of(needed), namespace="team-a", subject=Subject("User", "jane"))
    assert (role["kind"], role["metadata"]["namespace"], binding["kind"], binding["metadata"]["namespace"]) == (
        "Role", "team-a", "RoleBinding", "team-a")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]},
                             {"apiGroups": ["apps"], "resources": ["statefulsets"], "verbs": ["get", "list", "watch"]}]
    assert binding["subjects"] == [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "jane"}]
    assert STATEFULSET in needed
    needed = needed_for({"trackedObjects": {"v1.Namespace": {}}})
    with pytest.raises(UsageError) as info:
        rbac_documents(needed=needed, resources=resources_of(needed), namespace="team-a", subject=Subject("User", "jane"))
    assert str(info.value) == ("v1.Namespace is cluster-scoped: a Role in namespace team-a cannot grant it; leave -n out for a "
                               "ClusterRole, or stop tracking it in --config")


# -- the command ----------------------------------------------------------------------------------------


def sktrace(*args: str, home: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")}
    env["HOME"] = str(home)
    done = subprocess.run([sys.executable, "-m", "kubectl_sktrace", *args], capture_output=True, text=True, env=env, timeout=120)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def documents(text: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(text) if doc is not None]


def kubectl(kubeconfig: str, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not on PATH")
    cache = str(Path(kubeconfig).parent / "kubectl-cache")  # not the user's ~/.kube/cache
    return subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "--cache-dir", cache, *args], input=stdin, capture_output=True,
                          text=True, timeout=60)


def test_kubectl_applies_what_rbac_prints(emulator: Emulator, emulator_kubeconfig: str, tmp_path: Path) -> None:
    for args in ([], ["-n", "team-a", "--service-account", "ops:recorder"]):
        printed = sktrace("rbac", *args, home=tmp_path).stdout
        applied = kubectl(emulator_kubeconfig, "apply", "-f", "-", stdin=printed)
        assert applied.returncode == 0, applied.stderr
        for doc in documents(printed):
            namespace = doc["metadata"].get("namespace", "")
            stored = emulator.get(doc["apiVersion"], doc["kind"], namespace, doc["metadata"]["name"])
            assert stored is not None
            assert {k: stored[k] for k in doc if k != "metadata"} == {k: v for k, v in doc.items() if k != "metadata"}
    assert [r["metadata"]["name"] for r in emulator.list("rbac.authorization.k8s.io/v1", "RoleBinding", "team-a")] == [
        "sktrace-recorder:serviceaccount:ops:recorder"]


def test_grants_for_two_subjects_coexist_and_applying_one_again_changes_nothing(emulator: Emulator, emulator_kubeconfig: str,
                                                                                 tmp_path: Path) -> None:
    """The in-cluster recorder's grant, then a person's: the recorder keeps its binding (0.1.0's one name replaced
    its subjects); the same grant applied again is unchanged."""
    recorder, person = sktrace("rbac", home=tmp_path).stdout, sktrace("rbac", "--user", "alice@example.com", home=tmp_path).stdout
    outputs = []
    for printed in (recorder, person, recorder):
        applied = kubectl(emulator_kubeconfig, "apply", "-f", "-", stdin=printed)
        assert applied.returncode == 0, applied.stderr
        outputs.append(applied.stdout.splitlines())
    assert outputs == [
        ["clusterrole.rbac.authorization.k8s.io/sktrace-recorder created",
         "clusterrolebinding.rbac.authorization.k8s.io/sktrace-recorder:serviceaccount:sktrace:sktrace created"],
        ["clusterrole.rbac.authorization.k8s.io/sktrace-recorder unchanged",
         "clusterrolebinding.rbac.authorization.k8s.io/sktrace-recorder:user:alice@example.com created"],
        ["clusterrole.rbac.authorization.k8s.io/sktrace-recorder unchanged",
         "clusterrolebinding.rbac.authorization.k8s.io/sktrace-recorder:serviceaccount:sktrace:sktrace unchanged"],
    ]
    bindings = {b["metadata"]["name"]: b["subjects"] for b in emulator.list("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "")}
    assert bindings == {
        "sktrace-recorder:serviceaccount:sktrace:sktrace": [{"kind": "ServiceAccount", "name": "sktrace", "namespace": "sktrace"}],
        "sktrace-recorder:user:alice@example.com": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice@example.com"}],
    }


def start(kubeconfig: str, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return sktrace("start", "--kubeconfig", kubeconfig, "--cache", str(home / "cache.db"), "--duration", "2s", *args,
                   home=home, check=False)


def test_what_a_refusal_suggests_is_enough_and_each_rule_is_needed(emulator: Emulator, emulator_kubeconfig: str, tmp_path: Path) -> None:
    """A server that allows only the rules of one role: none at first (start says which command prints the fix),
    then the ClusterRole that command prints (start records every kind, the cluster's identity included), then
    that role less its ReplicaSet rule (start warns about exactly that kind)."""
    emulator.grant_rules([])
    refused = start(emulator_kubeconfig, tmp_path)
    assert refused.returncode == 1
    command = re.search(r"'kubectl sktrace (rbac [^']*?) \[--config FILE\]'", refused.stderr.splitlines()[-1])
    assert command is not None, refused.stderr
    assert command.group(1) == "rbac --service-account default:sktrace"
    role, binding = documents(sktrace(*command.group(1).split(), home=tmp_path).stdout)
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "sktrace", "namespace": "default"}]
    assert emulator.user == "system:serviceaccount:default:sktrace"  # the subject the emulator refused

    emulator.grant_rules(role["rules"])
    recorded = start(emulator_kubeconfig, tmp_path)
    assert recorded.returncode == 0 and "Warning" not in recorded.stderr, recorded.stderr
    status = yaml.safe_load(sktrace("status", "--cache", str(tmp_path / "cache.db"), "-o", "yaml", home=tmp_path).stdout)
    assert status["cluster"]["kubeSystemUid"] == emulator.cluster_uid

    without = [{**rule, "resources": [r for r in rule["resources"] if r != "replicasets"]} for rule in role["rules"]]
    emulator.grant_rules(without)
    warned = start(emulator_kubeconfig, tmp_path)
    assert warned.returncode == 0
    warnings = [line for line in warned.stderr.splitlines() if line.startswith("Warning")]
    assert len(warnings) == 1 and warnings[0].startswith("Warning: forbidden: cannot list replicasets.apps in all namespaces"), warnings


def test_a_role_in_one_namespace_is_enough_to_record_it(emulator: Emulator, emulator_kubeconfig: str, tmp_path: Path) -> None:
    role, _ = documents(sktrace("rbac", "-n", "default", home=tmp_path).stdout)
    emulator.grant_rules(role["rules"], namespace="default")
    recorded = start(emulator_kubeconfig, tmp_path, "-n", "default")
    assert recorded.returncode == 0 and "Warning" not in recorded.stderr, recorded.stderr


WIDGET_CONFIG = "trackedObjects:\n  example.com/v1.Widget: {}\n"


def test_a_custom_kind_is_named_by_the_cluster(emulator: Emulator, emulator_kubeconfig: str, tmp_path: Path) -> None:
    config = tmp_path / "tracer.yaml"
    config.write_text(WIDGET_CONFIG)
    emulator.register_kind("example.com", "v1", "Widget", "widgets")
    role, _ = documents(sktrace("rbac", "--kubeconfig", emulator_kubeconfig, "--config", str(config), home=tmp_path).stdout)
    assert {"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get", "list", "watch"]} in role["rules"]


@pytest.mark.slow
def test_a_custom_kind_without_a_cluster_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "tracer.yaml"
    config.write_text(WIDGET_CONFIG)
    done = sktrace("rbac", "--config", str(config), home=tmp_path, check=False)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (f"Error: example.com/v1.Widget: not a built-in kind, so its RBAC resource name comes from the "
                           f"cluster's discovery, which failed (no kubeconfig found (no KUBECONFIG and no {tmp_path}/.kube/config)); "
                           "run where --kubeconfig/--context reach the cluster\n")


def test_a_custom_kind_the_cluster_does_not_serve_is_one_line(emulator_kubeconfig: str, tmp_path: Path) -> None:
    config = tmp_path / "tracer.yaml"
    config.write_text(WIDGET_CONFIG)
    done = sktrace("rbac", "--kubeconfig", emulator_kubeconfig, "--config", str(config), home=tmp_path, check=False)
    assert (done.returncode, done.stderr) == (1, "Error: example.com/v1.Widget: not served by the cluster; fix the GVK in "
                                                 "--config, or install its CRD first\n")


@pytest.mark.slow
def test_rbac_refuses_the_cache_flag(tmp_path: Path) -> None:
    done = sktrace("rbac", "--cache", "x.db", home=tmp_path, check=False)
    assert (done.returncode, done.stderr) == (1, "Error: rbac does not take --cache; leave the flag out\n")
