"""kubectl's kubeconfig rules, fed from temporary files and a fake environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from conftest import write_kubeconfig

from kubectl_sktrace.errors import KubeError, UsageError
from kubectl_sktrace.kube.kubeconfig import (
    default_cache_path,
    mask_url,
    resolve_cache_path,
    resolve_target,
)
from kubectl_sktrace.model import CacheUrl


def kubeconfig(path: Path, *, current: str | None, contexts: dict[str, tuple[str, str | None]],
               clusters: dict[str, dict], users: dict[str, dict] | None = None) -> Path:
    doc = {"apiVersion": "v1", "kind": "Config",
           "clusters": [{"name": n, "cluster": c} for n, c in clusters.items()],
           "users": [{"name": n, "user": u} for n, u in (users or {}).items()],
           "contexts": [{"name": n, "context": {"cluster": c, "user": u or "nobody", **({"namespace": "ns-" + n} if n.endswith("-ns") else {})}}
                        for n, (c, u) in contexts.items()]}
    if current is not None:
        doc["current-context"] = current
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture
def two_files(tmp_path):
    a = kubeconfig(tmp_path / "a" / "config", current="alpha",
                   contexts={"alpha": ("c1", "u1"), "shared": ("c1", "u1")},
                   clusters={"c1": {"server": "https://one.example:6443/", "certificate-authority": "ca.crt"}},
                   users={"u1": {"client-certificate": "certs/u1.crt", "client-key": "/abs/u1.key", "tokenFile": "~/tok"}})
    b = kubeconfig(tmp_path / "b" / "config", current="beta",
                   contexts={"beta": ("c2", "u2"), "shared": ("c2", "u2"), "beta-ns": ("c2", None)},
                   clusters={"c1": {"server": "https://shadowed.example"}, "c2": {"server": "https://two.example"}},
                   users={"u2": {"token": "abc"}})
    return a, b


def env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), **extra}


def test_first_file_current_context_wins_and_first_entry_of_each_name(tmp_path, two_files):
    a, b = two_files
    target = resolve_target(kubeconfig=None, context=None, environ=env(tmp_path, KUBECONFIG=f"{a}{os.pathsep}{b}"))
    assert (target.context, target.cluster_server, target.namespace) == ("alpha", "https://one.example:6443", None)
    shared = resolve_target(kubeconfig=None, context="shared", environ=env(tmp_path, KUBECONFIG=f"{b}{os.pathsep}{a}"))
    assert shared.cluster_server == "https://two.example"
    assert shared.config["users"] == [{"name": "u2", "user": {"token": "abc"}}]


def test_context_from_the_second_file_uses_its_clusters(tmp_path, two_files):
    a, b = two_files
    target = resolve_target(kubeconfig=None, context="beta-ns", environ=env(tmp_path, KUBECONFIG=f"{a}{os.pathsep}{b}"))
    assert (target.context, target.cluster_server, target.namespace) == ("beta-ns", "https://two.example", "ns-beta-ns")
    assert target.config["users"] == []  # the context's user is not defined anywhere


def test_relative_paths_are_relative_to_their_file(tmp_path, two_files):
    a, _ = two_files
    target = resolve_target(kubeconfig=str(a), context=None, environ=env(tmp_path))
    base = a.parent.resolve()
    assert target.config["clusters"][0]["cluster"]["certificate-authority"] == str(base / "ca.crt")
    user = target.config["users"][0]["user"]
    assert user["client-certificate"] == str(base / "certs" / "u1.crt")
    assert user["client-key"] == "/abs/u1.key"
    assert user["tokenFile"] == str(Path(os.path.expanduser("~/tok")))
    assert target.config["current-context"] == "alpha"
    assert [c["name"] for c in target.config["contexts"]] == ["alpha"]


def test_kubeconfig_flag_beats_the_environment(tmp_path, two_files):
    a, b = two_files
    target = resolve_target(kubeconfig=str(b), context=None, environ=env(tmp_path, KUBECONFIG=str(a)))
    assert target.context == "beta"


def test_missing_files_in_kubeconfig_are_skipped(tmp_path, two_files):
    _, b = two_files
    target = resolve_target(kubeconfig=None, context=None,
                            environ=env(tmp_path, KUBECONFIG=f"{tmp_path}/nope{os.pathsep}{os.pathsep}{b}"))
    assert target.context == "beta"


def test_home_kube_config_is_the_default(tmp_path, two_files):
    a, _ = two_files
    home_config = tmp_path / "home" / ".kube" / "config"
    home_config.parent.mkdir(parents=True)
    home_config.write_text(a.read_text())
    assert resolve_target(kubeconfig=None, context=None, environ=env(tmp_path)).context == "alpha"


def test_in_cluster_only_without_any_kubeconfig(tmp_path, two_files):
    a, _ = two_files
    incluster = env(tmp_path, KUBERNETES_SERVICE_HOST="10.0.0.1", KUBERNETES_SERVICE_PORT="443")
    target = resolve_target(kubeconfig=None, context=None, environ=incluster)
    assert (target.context, target.cluster_server, target.in_cluster) == ("in-cluster", "https://10.0.0.1:443", True)
    v6 = resolve_target(kubeconfig=None, context=None, environ={**incluster, "KUBERNETES_SERVICE_HOST": "fd00::1"})
    assert v6.cluster_server == "https://[fd00::1]:443"
    assert resolve_target(kubeconfig=str(a), context=None, environ=incluster).context == "alpha"


@pytest.mark.parametrize("kind", ["flag", "env", "home"])
def test_no_kubeconfig_is_one_line_with_the_fix(tmp_path, kind):
    environ = env(tmp_path)
    flag = None
    if kind == "flag":
        flag = str(tmp_path / "missing")
        expected = f"kubeconfig file '{flag}' (from --kubeconfig) does not exist; check the path"
    elif kind == "env":
        environ["KUBECONFIG"] = f"{tmp_path}/x{os.pathsep}{tmp_path}/y"
        expected = (f"no kubeconfig found (none of the files in KUBECONFIG={tmp_path}/x{os.pathsep}{tmp_path}/y exists); "
                    "pass --kubeconfig FILE, set KUBECONFIG, or create ~/.kube/config")
    else:
        expected = (f"no kubeconfig found (no KUBECONFIG and no {tmp_path}/home/.kube/config); "
                    "pass --kubeconfig FILE, set KUBECONFIG, or create ~/.kube/config")
    with pytest.raises(KubeError) as info:
        resolve_target(kubeconfig=flag, context=None, environ=environ)
    assert str(info.value) == expected


def test_unknown_context_lists_the_available_ones(tmp_path, two_files):
    a, b = two_files
    with pytest.raises(KubeError) as info:
        resolve_target(kubeconfig=None, context="gamma", environ=env(tmp_path, KUBECONFIG=f"{a}{os.pathsep}{b}"))
    assert str(info.value) == (f"context 'gamma' not found in kubeconfig {a}{os.pathsep}{b}; available contexts: "
                               "alpha, beta, beta-ns, shared; pass --context with one of them")


def test_no_current_context(tmp_path):
    path = kubeconfig(tmp_path / "c", current=None, contexts={"x": ("c", None)}, clusters={"c": {"server": "https://x"}})
    with pytest.raises(KubeError) as info:
        resolve_target(kubeconfig=str(path), context=None, environ=env(tmp_path))
    assert str(info.value) == f"no current-context in kubeconfig {path}; pass --context NAME (available contexts: x)"


def test_context_pointing_at_a_missing_cluster(tmp_path):
    path = kubeconfig(tmp_path / "c", current="x", contexts={"x": ("gone", None)}, clusters={})
    with pytest.raises(KubeError) as info:
        resolve_target(kubeconfig=str(path), context=None, environ=env(tmp_path))
    assert str(info.value) == (f"context 'x' refers to cluster 'gone', which is not in kubeconfig {path}; "
                               "add the cluster or fix the context")


@pytest.mark.parametrize("text,expected", [
    ("clusters: [\n  - name: a\n  bad", "is not valid YAML at line {line} ({problem}); fix the file or point --kubeconfig elsewhere"),
    ("- just\n- a list\n", "is not a kubeconfig (expected a mapping with clusters, users and contexts); fix the file or point --kubeconfig elsewhere"),
    ("clusters: {a: 1}\n", ": clusters must be a list; fix the file"),
    ("contexts:\n- context: {cluster: a}\n", ": every entry of contexts needs a name; fix the file"),
], ids=["yaml", "not-a-mapping", "clusters-not-list", "nameless"])
def test_malformed_file(tmp_path, text, expected):
    path = tmp_path / "config"
    path.write_text(text)
    with pytest.raises(KubeError) as info:
        resolve_target(kubeconfig=str(path), context=None, environ=env(tmp_path))
    if "{line}" in expected:  # libyaml and pure-Python PyYAML word the problem differently
        expected = expected.format(line=info.value.__cause__.problem_mark.line + 1, problem=info.value.__cause__.problem)
    assert str(info.value) == f"kubeconfig '{path}' {expected}".replace("' :", "':")


@pytest.mark.parametrize("context,name", [
    ("kind-dev", "kind-dev.db"),
    ("arn:aws:eks:us-east-1:123:cluster/prod", "arn_aws_eks_us-east-1_123_cluster_prod-{h}.db"),
    ("..", "{h}.db"),
    ("gke_proj_zone_name", "gke_proj_zone_name.db"),
], ids=["plain", "eks-arn", "dots", "gke"])
def test_default_cache_path(tmp_path, context, name):
    import hashlib
    h = hashlib.sha256(context.encode()).hexdigest()[:8]
    assert default_cache_path(context, environ={"HOME": "/home/u"}) == Path("/home/u/.local/state/kubectl-sktrace") / name.format(h=h)
    assert default_cache_path(context, environ={"HOME": "/home/u", "XDG_STATE_HOME": "/xdg"}).parent == Path("/xdg/kubectl-sktrace")
    assert default_cache_path(context, environ={"HOME": "/home/u", "XDG_STATE_HOME": "relative"}).parent == Path("/home/u/.local/state/kubectl-sktrace")


def test_resolve_cache_path(tmp_path, two_files):
    a, b = two_files
    environ = env(tmp_path, KUBECONFIG=f"{b}{os.pathsep}{a}")
    state = tmp_path / "home" / ".local" / "state" / "kubectl-sktrace"
    assert resolve_cache_path(cache="~/x.db", kubeconfig=None, context=None, environ=environ) == Path(os.path.expanduser("~/x.db"))
    assert resolve_cache_path(cache=None, kubeconfig=None, context=None, environ=environ) == state / "beta.db"
    assert resolve_cache_path(cache=None, kubeconfig=str(a), context=None, environ=environ) == state / "alpha.db"
    # a context named on the command line needs no kubeconfig at all (offline commands)
    assert resolve_cache_path(cache=None, kubeconfig=None, context="other", environ=env(tmp_path)) == state / "other.db"
    with pytest.raises(KubeError, match=r"pass --cache FILE or --context NAME$"):
        resolve_cache_path(cache=None, kubeconfig=None, context=None, environ=env(tmp_path))


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        pytest.param("postgresql://alice:hunter2@db:5432/traces", "postgresql://alice:****@db:5432/traces", id="password"),
        pytest.param("postgresql://alice:p@ss@db/traces", "postgresql://alice:****@db/traces", id="password-with-at"),
        pytest.param("postgresql://:hunter2@db/traces", "postgresql://:****@db/traces", id="password-only"),
        pytest.param("postgresql://alice:p@ss/w:d@db:5432/t", "postgresql://alice:****@db:5432/t", id="password-with-at-and-slash"),
        pytest.param("postgresql://alice@db/traces", "postgresql://alice@db/traces", id="user-only"),
        pytest.param("postgresql://db:5432/traces", "postgresql://db:5432/traces", id="port-is-no-password"),
        pytest.param("postgresql://db/t?sslmode=require&password=x#f", "postgresql://db/t?sslmode=require&password=****#f", id="query"),
        pytest.param("s3://b/c.db?X-Amz-Credential=AK&X-Amz-Signature=ab", "s3://b/c.db?X-Amz-Credential=****&X-Amz-Signature=****", id="presigned"),
        pytest.param("s3://bucket/path/a@b.db", "s3://bucket/path/a@b.db", id="at-in-path"),
    ],
)
def test_mask_url(url, shown):
    assert mask_url(url) == shown


@pytest.mark.parametrize("cache", ["s3://u:hunter2@bucket/c.db", "file:///tmp/c.db", "Postgres+psycopg://db", "mysql://u:hunter2@db/t"])
def test_a_cache_url_other_than_a_database_is_refused(cache):
    with pytest.raises(UsageError, match=r": only local sqlite files and postgresql:// URLs are supported; pass a file path or a "
                                         r"postgresql://user@host:port/database URL$") as info:
        resolve_cache_path(cache=cache, kubeconfig=None, context=None, environ={})
    assert "hunter2" not in str(info.value)


@pytest.mark.parametrize("cache", ["postgresql://u:hunter2@db/traces", "postgres://db/traces", "PostgreSQL://db/t?sslmode=require"])
def test_a_database_url_names_the_history_of_the_context(cache, tmp_path):
    assert resolve_cache_path(cache=cache, kubeconfig=None, context="prod", environ={}) == CacheUrl(cache, "prod")
    # no kubeconfig at all: no history named, a reader takes the database's only one
    assert resolve_cache_path(cache=cache, kubeconfig=None, context=None, environ=env(tmp_path)) == CacheUrl(cache, None)
    config = tmp_path / "config"
    write_kubeconfig(config, server="https://k:6443", context="staging")
    assert resolve_cache_path(cache=cache, kubeconfig=str(config), context=None, environ={}) == CacheUrl(cache, "staging")
    assert "hunter2" not in repr(CacheUrl(cache, "prod")) + str(CacheUrl(cache, "prod"))


def test_a_path_with_a_colon_is_no_url(tmp_path):
    assert resolve_cache_path(cache=f"{tmp_path}/postgresql:/x.db", kubeconfig=None, context=None, environ={}) == tmp_path / "postgresql:" / "x.db"


@pytest.mark.slow
def test_kubeconfig_module_does_not_import_the_client():
    import subprocess
    import sys
    code = "import sys, kubectl_sktrace.kube.kubeconfig, kubectl_sktrace.record.watching; print('kubernetes' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
