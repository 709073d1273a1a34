"""``export``'s allow/deny rules through the command line, and the legacy flags expressed as rules.

The legacy cases' digests were taken from traces written by the code before the rules existed: every legacy
flag must keep writing the same bytes."""

import hashlib
import json

import msgpack
import pytest
from click.testing import CliRunner
from conftest import key_of, obj

from kubectl_sktrace.cli import cli

NOW = 1_800_000_000


def dep(name, namespace="app", labels=None, replicas=1):
    return obj("Deployment", name, namespace, spec={"replicas": replicas}, labels=labels)


@pytest.fixture
def cluster(cache_builder):
    """A shop with a canary, the ingress controller in kube-system, a team namespace, a Job, owners and a DaemonSet's pod."""
    b = cache_builder
    b.run(started=NOW - 3600, stopped=NOW)
    b.apply(NOW - 3000, dep("web", "shop", {"app": "web", "tier": "front"}))
    b.apply(NOW - 3000, dep("web-canary", "shop", {"app": "web", "tier": "canary"}))
    b.apply(NOW - 2900, obj("ReplicaSet", "cart-1", "shop", spec={"replicas": 1}, labels={"app": "cart"}))
    b.apply(NOW - 2800, dep("ingress-nginx", "kube-system", {"app.kubernetes.io/name": "ingress-nginx"}))
    b.apply(NOW - 2800, dep("coredns", "kube-system", {"k8s-app": "kube-dns"}))
    b.apply(NOW - 2700, dep("api", "team-a", {"app": "api", "env": "prod"}))
    b.apply(NOW - 2700, dep("api", "team-b", {"app": "api", "env": "dev"}))
    b.apply(NOW - 2600, dep("site", "default", {"app": "site"}))
    api = dep("api", "team-a", {"app": "api", "env": "prod"})
    b.apply(NOW - 2500, obj("ReplicaSet", "api-1", "team-a", spec={"replicas": 1}, labels={"app": "api"}, owners=[("Deployment", "api")]),
            owner_chain=[key_of(api)])
    b.apply(NOW - 2400, obj("Job", "backup", "team-a", spec={"parallelism": 1}, labels={"app": "backup"}))
    b.apply(NOW - 2300, obj("Pod", "fluentd-x", "team-a", spec={"containers": []}, owners=[("DaemonSet", "fluentd")]))
    b.apply(NOW - 2200, obj("Namespace", "shop", namespace=""))
    b.apply(NOW - 600, dep("web", "shop", {"app": "web", "tier": "front"}, replicas=3))
    b.apply(NOW - 500, dep("web-canary", "shop", {"app": "web", "tier": "canary"}, replicas=2))
    b.apply(NOW - 400, dep("api", "team-b", {"app": "api", "env": "dev"}, replicas=2))
    b.delete(NOW - 100, dep("coredns", "kube-system"))
    return b


def export(cluster, *args, out="-"):
    return CliRunner().invoke(cli, ["export", "--cache", str(cluster.path), "-s", f"@{NOW - 1800}", "-t", f"@{NOW}", "-O", out, *args],
                              catch_exceptions=False)


def index_of(result):
    assert result.exit_code == 0, result.stderr
    trace = msgpack.unpackb(result.stdout_bytes, raw=False, strict_map_key=False)
    return sorted(f"{kind.rsplit('.', 1)[-1]}:{name}" for kind, objs in trace["index"].items() for name in objs)


LEGACY = {
    "none": [],
    "-A": ["-A"],
    "-n": ["-n", "shop"],
    "include": ["--include-namespaces", "default,team-a"],
    "excluded": ["--excluded-namespaces", "shop,team-b"],
    "excluded-empty": ["--excluded-namespaces", ""],
    "labels": ["--exclude-labels", "tier=canary", "--exclude-labels", "env in (dev)"],
    "labels-A": ["-A", "--exclude-labels", "app"],
    "labels-include": ["--include-namespaces", "shop,kube-system", "--exclude-labels", "tier!=front"],
    "cluster": ["--include-cluster-scoped", "-A"],
    "json": ["-n", "team-a", "-o", "json"],
}


@pytest.mark.parametrize("name", LEGACY)
def test_legacy_flags_write_the_bytes_they_always_wrote(cluster, name, tmp_path):
    out = tmp_path / "t"
    result = export(cluster, *LEGACY[name], out=str(out))
    assert result.exit_code == 0, result.stderr
    assert hashlib.sha256(out.read_bytes()).hexdigest() == GOLDEN[name]


GOLDEN = {  # sha256 of the traces the code before the rules wrote
    "none": "1a3ed5174a723ad0b43ecfcdab29f662b78c57f8d9c4f5ff8eace4d34caf19f5",
    "-A": "b7f618ec8c2ee7a3a795fa149ad7e6a2b17e0ba178ba376fe5627afc2e27440b",
    "-n": "6ad514e2f6de07758dd0b80d301aa8f925052040cf0f4723fa0f851111487feb",
    "include": "068b55bfb916cff89fa81e6da77a41304d379673f4401438784bd097ee71d45d",
    "excluded": "623383532f106f4f07592b8cf2cd6c90e7e50363dc1e5198eee6383c19ccaf3a",
    "excluded-empty": "b7f618ec8c2ee7a3a795fa149ad7e6a2b17e0ba178ba376fe5627afc2e27440b",
    "labels": "84f60ead6190023aa396ab9d5f9d60338d6ddd78513192749fb50c424b67b2a8",
    "labels-A": "b0a0833c6b51e560e9801701ada2a054a02a18ab96ebccaef5bdfd703cfef03f",
    "labels-include": "5ec4bb3c0eff58a357c07e49038abb570558f2763d1e22cdbcdbb717ed17b251",
    "cluster": "f68d0b410753b4c99852b9387bd376d94d086263315272ef1a6deb9d6c36d6a5",
    "json": "7071a5d845da4b83fc3abbfd9f8ec71a7efc0ba3e94229727faee81f1aaa757e",
}
