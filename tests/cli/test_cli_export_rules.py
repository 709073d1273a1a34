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
ALIASES = {"labels": ["--excluded-labels", "tier=canary", "--excluded-labels", "env in (dev)"]}  # the same trace by another spelling


def assert_golden(cluster, args, name, tmp_path):
    out = tmp_path / "t"
    result = export(cluster, *args, out=str(out))
    assert result.exit_code == 0, result.stderr
    assert hashlib.sha256(out.read_bytes()).hexdigest() == GOLDEN[name]


@pytest.mark.parametrize("name", LEGACY)
def test_legacy_flags_write_the_bytes_they_always_wrote(cluster, name, tmp_path):
    assert_golden(cluster, LEGACY[name], name, tmp_path)


@pytest.mark.parametrize("name", ALIASES)
def test_an_alias_writes_the_same_bytes(cluster, name, tmp_path):
    assert_golden(cluster, ALIASES[name], name, tmp_path)


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



SHOP_ONLY = ["-n", "shop"]


@pytest.mark.parametrize("args, expected", [
    pytest.param(["--allow", "namespace:shop labels:tier=canary", "--deny", "namespace:shop"],
                 ["Deployment:team-a/api", "Deployment:team-b/api", "Deployment:shop/web-canary", "Job:team-a/backup"],
                 id="allow-the-selector-then-deny-the-namespace"),
    pytest.param(["--deny", "namespace:shop", "--allow", "namespace:shop labels:tier=canary"],
                 ["Deployment:team-a/api", "Deployment:team-b/api", "Job:team-a/backup"],
                 id="deny-the-namespace-first-decides"),
])
def test_deny_a_namespace_but_allow_a_selector_in_it_the_first_rule_that_matches_decides(cluster, args, expected):
    """acrlabs/simkube#63: as in iptables, the order says which wins."""
    assert index_of(export(cluster, *args)) == sorted(expected)


def test_the_shop_without_its_canary_plus_the_ingress_controller_in_kube_system(cluster):
    result = export(cluster, "--deny", "namespace:shop labels:tier=canary", "--allow", "namespace:shop",
                    "--allow", "namespace:kube-system labels:app.kubernetes.io/name=ingress-nginx", "--default", "deny")
    assert index_of(result) == ["Deployment:kube-system/ingress-nginx", "Deployment:shop/web", "ReplicaSet:shop/cart-1"]


@pytest.mark.parametrize("args, expected", [
    pytest.param(["--allow", "namespace:team-*", "--default", "deny"],
                 ["Deployment:team-a/api", "Deployment:team-b/api", "Job:team-a/backup"], id="namespace-glob"),
    pytest.param(["--deny", "name:web*,cart-?", "-A"],
                 ["Deployment:default/site", "Deployment:kube-system/coredns", "Deployment:kube-system/ingress-nginx",
                  "Deployment:team-a/api", "Deployment:team-b/api", "Job:team-a/backup"], id="name-globs"),
    pytest.param(["--allow", "kind:Deployment", "--default", "deny"],  # before SimKube's excluded namespaces: kube-system's too
                 ["Deployment:default/site", "Deployment:kube-system/coredns", "Deployment:kube-system/ingress-nginx", "Deployment:shop/web",
                  "Deployment:shop/web-canary", "Deployment:team-a/api", "Deployment:team-b/api"], id="kind"),
    pytest.param(["--allow", "kind:batch/v1.Job,apps/v1.ReplicaSet", "--default", "deny"],
                 ["Job:team-a/backup", "ReplicaSet:shop/cart-1", "ReplicaSet:team-a/api-1"], id="kinds-with-group"),
    pytest.param(["--deny", "kind:deployment labels:env in (dev,test)"],
                 ["Deployment:shop/web", "Deployment:shop/web-canary", "Deployment:team-a/api", "Job:team-a/backup",
                  "ReplicaSet:shop/cart-1"], id="kind-and-set-selector"),
    pytest.param(["-l", "app=api"], ["Deployment:team-a/api", "Deployment:team-b/api"], id="selector"),
    pytest.param(["-l", "app in (web,api),tier!=canary", "-n", "shop"], ["Deployment:shop/web"], id="selector-and-namespace"),
    pytest.param(["--allow", "namespace:default", "-n", "shop"], ["Deployment:default/site", "Deployment:shop/web",
                                                                  "Deployment:shop/web-canary", "ReplicaSet:shop/cart-1"],
                 id="rules-before-the-namespace-flags"),
    pytest.param(["--excluded-labels", "app=web"], ["Deployment:team-a/api", "Deployment:team-b/api", "Job:team-a/backup",
                                                    "ReplicaSet:shop/cart-1"], id="excluded-labels-alias"),
])
def test_rules_match_namespace_globs_names_kinds_and_selectors(cluster, args, expected):
    assert index_of(export(cluster, *args)) == sorted(expected)


def test_a_rule_file_is_asked_first_and_may_set_the_default(cluster, tmp_path):
    rules = tmp_path / "export-policy.yaml"
    rules.write_text(
        "# the shop without its canary, and the ingress controller\n"
        "default: deny\n"
        "rules:\n"
        "  - deny: {namespace: shop, kind: Deployment, labels: tier=canary}\n"
        "  - allow: {namespace: [shop]}\n"
        "  - allow: namespace:kube-system labels:app.kubernetes.io/name=ingress-nginx\n"
    )
    assert index_of(export(cluster, "--filters", str(rules))) == [
        "Deployment:kube-system/ingress-nginx", "Deployment:shop/web", "ReplicaSet:shop/cart-1"]
    # --default allow: what the file does not decide falls to the default exclusions of namespaces, then is kept
    assert index_of(export(cluster, "--filters", str(rules), "--default", "allow")) == [
        "Deployment:kube-system/ingress-nginx", "Deployment:shop/web", "Deployment:team-a/api", "Deployment:team-b/api",
        "Job:team-a/backup", "ReplicaSet:shop/cart-1"]


def test_dry_run_shows_the_rules_in_force_and_what_each_decided_and_writes_nothing(cluster, tmp_path):
    out = tmp_path / "t.sktrace"
    result = export(cluster, "--deny", "namespace:shop labels:tier=canary", "--allow", "namespace:kube-system labels:app.kubernetes.io/name=ingress-nginx",
                    "--exclude-labels", "env=dev", "--dry-run", out=str(out))
    assert (result.exit_code, result.stderr) == (0, "")
    assert not out.exists()
    assert result.stdout == (
        "Window 2027-01-15T07:30:00Z .. 2027-01-15T08:00:00Z: 12 objects recorded, 5 would be exported. "
        "The first rule that matches an object decides:\n" + DRY_RUN_RULES +
        "Also left out: 1 cluster-scoped object (--include-cluster-scoped keeps them), 1 owned by a DaemonSet, "
        "1 owned by an exported object (which recreates them).\n"
    )
    # SimKube's excluded namespaces are wrapped (they made it 110 wide): the longest term that cannot break sets the width
    assert max(len(line) for line in DRY_RUN_RULES.splitlines()) == len("1    ") + len("labels:app.kubernetes.io/name=ingress-nginx") + 54


DRY_RUN_RULES = (
    "#    RULE                                         ACTION    FROM                             OBJECTS\n"
    "---  -------------------------------------------  --------  -------------------------------  ---------\n"
    "1    namespace:shop labels:tier=canary            deny      --deny                           1\n"
    "2    namespace:kube-system                        allow     --allow                          1\n"
    "     labels:app.kubernetes.io/name=ingress-nginx\n"
    "3    namespace:cert-manager,default,              deny      --excluded-namespaces (default)  2\n"
    "     kube-node-lease,kube-public,kube-system,\n"
    "     local-path-storage,monitoring,simkube\n"
    "4    labels:env=dev                               deny      --exclude-labels                 1\n"
    "5    everything else                              allow     default                          6\n"
)


def test_dry_run_objects_lists_what_decided_each_object(cluster, tmp_path):
    out = tmp_path / "t.sktrace"
    args = ["--deny", "namespace:shop labels:tier=canary", "--allow", "namespace:kube-system labels:app.kubernetes.io/name=ingress-nginx",
            "--exclude-labels", "env=dev"]
    result = export(cluster, *args, "--dry-run=objects", out=str(out))
    assert (result.exit_code, result.stderr, out.exists()) == (0, "", False)
    assert result.stdout.split("\n\n", 1)[1] == (
        "Objects:\n"
        "OBJECT                                        EXPORTED    DECIDED BY\n"
        "--------------------------------------------  ----------  --------------------------------------------------\n"
        "v1.Namespace shop                             no          cluster-scoped (--include-cluster-scoped keeps it)\n"
        "v1.Pod team-a/fluentd-x                       no          owned by a DaemonSet\n"
        "apps/v1.Deployment default/site               no          rule 3 (--excluded-namespaces (default))\n"
        "apps/v1.Deployment kube-system/coredns        no          rule 3 (--excluded-namespaces (default))\n"
        "apps/v1.Deployment kube-system/ingress-nginx  yes         rule 2 (--allow)\n"
        "apps/v1.Deployment shop/web                   yes         rule 5 (default)\n"
        "apps/v1.Deployment shop/web-canary            no          rule 1 (--deny)\n"
        "apps/v1.Deployment team-a/api                 yes         rule 5 (default)\n"
        "apps/v1.Deployment team-b/api                 no          rule 4 (--exclude-labels)\n"
        "apps/v1.ReplicaSet shop/cart-1                yes         rule 5 (default)\n"
        "apps/v1.ReplicaSet team-a/api-1               no          owned by the exported Deployment team-a/api\n"
        "batch/v1.Job team-a/backup                    yes         rule 5 (default)\n"
    )
    listed = json.loads(export(cluster, *args, "--dry-run=objects", "--summary", "json").stdout)["objects"]
    assert {"kind": "apps/v1.Deployment", "namespace": "shop", "name": "web-canary", "exported": False, "rule": 1,
            "decidedBy": "rule 1 (--deny)"} in listed
    assert [row["name"] for row in listed if row["exported"]] == ["ingress-nginx", "web", "api", "cart-1", "backup"]
    assert "objects" not in json.loads(export(cluster, *args, "--dry-run", "--summary", "json").stdout)


def test_the_summarys_json_counts_what_each_rule_decided(cluster, tmp_path):
    out = tmp_path / "t.sktrace"
    result = export(cluster, "-l", "app=web", "--summary", "json", out=str(out))
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["rules"] == [
        {"rule": "not (labels:app=web)", "action": "deny", "from": "-l", "objects": 9},
        {"rule": "namespace:cert-manager,default,kube-node-lease,kube-public,kube-system,local-path-storage,monitoring,simkube",
         "action": "deny", "from": "--excluded-namespaces (default)", "objects": 0},
        {"rule": "everything else", "action": "allow", "from": "default", "objects": 2},
    ]
    assert {k: summary[k] for k in ("output", "objectsRecorded", "objectsExported", "indexObjects")} == {
        "output": str(out), "objectsRecorded": 12, "objectsExported": 2, "indexObjects": 2}
    assert summary["leftOut"] == {"clusterScoped": 1, "deniedByRules": 9, "ownedByDaemonSet": 0, "ownedByExported": 0,
                                  "deletedByTransform": 0}
    assert json.loads(export(cluster, "-l", "app=web", "--summary", "json", "--dry-run").stdout)["rules"] == summary["rules"]


def test_a_trace_the_rules_empty_says_which_flag_to_look_at(cluster):
    result = export(cluster, "-l", "app=nothing")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        "Error: the trace would hold no objects: all 12 objects were left out: 1 cluster-scoped, 11 denied by the rules "
        "(--filters, -l, --allow, --deny, --default); see which rule decided what with --dry-run, or pass --allow-empty to write it anyway\n"
    )


@pytest.mark.parametrize("args, message", [
    (["--allow", "namespace:shop lables:app=web"], "--allow 'namespace:shop lables:app=web': 'shop lables:app=web' is not a namespace or "
     "a glob of one (lower-case letters, digits, '-', '.', '*', '?', '[...]')"),
    (["--deny", "team-a"], "--deny 'team-a': cannot read 'team-a'; a rule is FIELD:VALUE terms separated by spaces, FIELD one of "
     "namespace, name, kind, labels (e.g. 'namespace:shop kind:Deployment labels:tier=canary')"),
    (["--deny", "labels:app in (web"], "--deny 'labels:app in (web': invalid label selector 'app in (web': '(' without ')'; "
     "use kubectl syntax like 'a=b,c!=d,e in (x,y),f notin (z),g,!h'"),
    (["--allow", "kind:apps/v1/Deployment"], "--allow 'kind:apps/v1/Deployment': invalid GVK 'apps/v1/Deployment': expected "
     "'<group>/<version>.<Kind>' (e.g. 'apps/v1.Deployment') or '<version>.<Kind>' for core kinds (e.g. 'v1.Pod')"),
    (["--allow", "kind:Deploy ment"], "--allow 'kind:Deploy ment': 'Deploy ment' is not a kind; give 'Deployment', 'deployments.apps' "
     "or 'apps/v1.Deployment'"),
    (["--allow", "kind:apps/v1.Deploy ment"], "--allow 'kind:apps/v1.Deploy ment': invalid GVK 'apps/v1.Deploy ment': expected "
     "'<group>/<version>.<Kind>' (e.g. 'apps/v1.Deployment') or '<version>.<Kind>' for core kinds (e.g. 'v1.Pod')"),
    (["--allow", "namespace:a namespace:b"], "--allow 'namespace:a namespace:b': namespace is given twice; give it once "
     "(globs and kinds take a comma-separated list)"),
    (["-n", "shop", "--default", "allow"], "--default allow and -n/--namespace contradict each other (-n/--namespace keeps only its "
     "namespaces); pass --allow 'namespace:…' rules instead of -n/--namespace, or leave --default out"),
    (["--filters", "/nonexistent/rules.yaml"], "--filters /nonexistent/rules.yaml: no such file; pass the path of a YAML rule file"),
    (["-o", "yaml", "--summary", "json"], "--summary json prints the summary on stdout, where -o yaml without -O writes the trace; "
     "pass -O FILE, or leave --summary out"),
])
def test_a_bad_rule_is_one_line_and_nothing_is_written(cluster, args, message):
    result = CliRunner().invoke(cli, ["export", "--cache", str(cluster.path), *args], catch_exceptions=False)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == f"Error: {message}\n"


@pytest.mark.parametrize("text, message", [
    ("rules: [{allow: {namespace: shop}, deny: {}}]", "rule 1: each rule is one 'allow:' or 'deny:' with its fields"),
    ("rules:\n  - keep: {namespace: shop}\n", "rule 1: each rule is one 'allow:' or 'deny:' with its fields"),
    ("rules:\n  - allow: {namespaces: shop}\n", "rule 1: unknown field 'namespaces'; a rule's fields are namespace, name, kind, labels"),
    ("default: maybe\n", "default must be allow or deny, not 'maybe'"),
    ("- allow: {}\n", "a rule file is a mapping with 'rules' (a list of allow: or deny: items) and an optional 'default'"),
    ("rules: [\n", "not valid YAML at line 2; a rule file is 'rules:' with a list of allow: or deny: items"),
])
def test_a_bad_rule_file_names_the_file_and_the_rule(cluster, tmp_path, text, message):
    rules = tmp_path / "rules.yaml"
    rules.write_text(text)
    result = CliRunner().invoke(cli, ["export", "--cache", str(cluster.path), "--filters", str(rules)], catch_exceptions=False)
    assert (result.exit_code, result.stderr) == (1, f"Error: {rules}: {message}\n" if "YAML" not in message else
                                                 f"Error: --filters {rules}: {message}\n")


def test_o_yaml_without_O_prints_the_trace_on_stdout_as_kubectl_does(cluster, tmp_path, monkeypatch):
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    result = CliRunner().invoke(cli, ["export", "--cache", str(cluster.path), "-s", f"@{NOW - 1800}", "-t", f"@{NOW}", "-n", "shop",
                                      "-o", "yaml"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    import yaml

    trace = yaml.safe_load(result.stdout)
    assert sorted(trace["index"]["apps/v1.Deployment"]) == ["shop/web", "shop/web-canary"]
    assert "Wrote stdout:" in result.stderr
    assert list((tmp_path / "work").iterdir()) == []


def test_dry_run_names_the_flag_each_legacy_rule_came_from(cluster):
    rows = json.loads(export(cluster, "-n", "shop", "--exclude-labels", "tier=canary", "--dry-run", "--summary", "json").stdout)["rules"]
    assert [(r["rule"], r["action"], r["from"], r["objects"]) for r in rows] == [
        ("labels:tier=canary", "deny", "--exclude-labels", 1),
        ("namespace:shop", "allow", "-n", 2),
        ("everything else", "deny", "-n", 8),
    ]


# --- rule files a new user writes (issue 38) -------------------------------------------------------------------


def _answer_within(args, *, cpu_seconds, memory_bytes):
    """The command's result, its CPU time and its peak of Python allocations bounded generously: against a reader that
    grows with the square of the file, or holds ten times its size."""
    import time
    import tracemalloc

    tracemalloc.start()
    started = time.process_time()
    try:
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.process_time() - started < cpu_seconds
    assert peak < memory_bytes, peak
    return result


@pytest.mark.parametrize("body", [
    "rules:\n" + "  - allow: namespace:shop labels:app=web\n" * 250_000 + "  - allow: {namespaces: x}\n",
    "a" * (10 << 20),
], ids=["10MB-of-rules-one-bad-last", "10MB-plain-scalar"])
def test_a_rule_file_over_the_size_limit_is_refused_at_once(cluster, tmp_path, body):
    rules = tmp_path / "rules.yaml"
    rules.write_text(body)
    assert rules.stat().st_size >= 10_000_000
    result = _answer_within(["export", "--cache", str(cluster.path), "--filters", str(rules)], cpu_seconds=10, memory_bytes=64 << 20)
    assert (result.exit_code, result.stderr) == (1, f"Error: --filters {rules}: the file is larger than 1 MiB, more than a rule file "
                                                    "holds; pass a file of rules (a few lines each)\n")


@pytest.mark.slow  # parses a rule file of the size limit: seconds of CPU
def test_a_rule_file_at_the_size_limit_with_a_bad_last_rule_names_it_soon(cluster, tmp_path):
    rules = tmp_path / "rules.yaml"
    line = "  - allow: namespace:shop labels:app=web\n"
    count = ((1 << 20) - 100) // len(line)
    rules.write_text("rules:\n" + line * count + "  - allow: {namespaces: x}\n")
    result = _answer_within(["export", "--cache", str(cluster.path), "--filters", str(rules)], cpu_seconds=60, memory_bytes=512 << 20)
    assert (result.exit_code, result.stderr) == (
        1, f"Error: {rules}: rule {count + 1}: unknown field 'namespaces'; a rule's fields are namespace, name, kind, labels\n")


def test_a_files_default_allow_with_n_is_refused_naming_the_file(cluster, tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text("default: allow\nrules:\n  - deny: namespace:shop labels:tier=canary\n")
    result = export(cluster, "--filters", str(rules), "-n", "shop")
    assert (result.exit_code, result.stderr) == (
        1, f"Error: 'default: allow' in {rules} and -n/--namespace contradict each other (-n/--namespace keeps only its namespaces); "
           "leave -n/--namespace out and add 'allow: namespace:…' rules to the file, or pass --default deny\n")
    assert export(cluster, "--filters", str(rules), "-n", "shop", "--default", "deny").exit_code == 0


def test_a_files_default_is_attributed_to_the_file(cluster, tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text("default: deny\nrules:\n  - allow: namespace:shop\n")
    rows = json.loads(export(cluster, "--filters", str(rules), "--dry-run", "--summary", "json").stdout)["rules"]
    assert rows[-1] == {"rule": "everything else", "action": "deny", "from": f"--filters {rules}", "objects": 5}
    rows = json.loads(export(cluster, "--filters", str(rules), "--default", "allow", "--dry-run", "--summary", "json").stdout)["rules"]
    assert rows[-1]["from"] == "--default"
    code = CliRunner().invoke(cli, ["transform", "-", "--filters", str(rules), "-o", "json", "--summary", "json", "-O", str(tmp_path / "t.json")],
                              input=export(cluster).stdout_bytes, catch_exceptions=False)
    assert json.loads(code.stdout)["rules"][-1]["from"] == f"--filters {rules}"


# --- kinds as kubectl names them, from the discovery documents the cache holds (issue 38) --------------------


@pytest.fixture
def discovered(cluster):
    """The cluster's cache with the discovery documents a recorder keeps (the emulator's, shaped as a real server's)."""
    from sktrace_emulator.discovery import resource_list
    from sktrace_emulator.state import Store

    from kubectl_sktrace.store.recording import Recording

    store = Store()
    Recording(cluster.cache).save_discovery({gv: resource_list(store, *gv.rpartition("/")[::2]) for gv in ("v1", "apps/v1", "batch/v1")},
                                            fetched=NOW - 3600)
    return cluster


@pytest.mark.parametrize("kind", ["deploy", "deployments", "deployment", "Deployments.apps", "DEPLOY", "deployments.v1.apps",
                                  "Deployment", "apps/v1.Deployment"])
def test_kinds_as_kubectl_names_them(discovered, kind):
    expected = index_of(export(discovered, "--allow", "kind:Deployment", "--default", "deny"))
    result = export(discovered, "--allow", f"kind:{kind}", "--default", "deny")
    assert index_of(result) == expected and "Warning" not in result.stderr
    assert all(name.startswith("Deployment:") for name in expected) and len(expected) == 7


def test_a_kind_no_recorded_object_has_is_warned_of_with_the_kind_meant(discovered):
    result = export(discovered, "--allow", "kind:Deploymnet,Job", "--dry-run")
    assert result.exit_code == 0
    assert result.stderr == ("Warning: --allow 'kind:Deploymnet,Job': no recorded object is of kind 'Deploymnet', so it matches nothing; "
                             "did you mean kind:Deployment?\n")
    assert "Warning: --deny 'kind:rs,sts': no recorded object is of kind 'sts', so it matches nothing; did you mean kind:StatefulSet?\n" == (
        export(discovered, "--deny", "kind:rs,sts", "--dry-run").stderr)


@pytest.mark.parametrize("command", [["export"], ["status"]])
def test_a_repeated_namespace_is_refused(discovered, command):
    result = CliRunner().invoke(cli, [*command, "--cache", str(discovered.path), "-n", "shop", "-n", "team-a"], catch_exceptions=False)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.startswith("Error: -n/--namespace is given more than once; pass one namespace")
