from __future__ import annotations

import pytest
import yaml

from kubectl_sktrace import tracerconfig as tc
from kubectl_sktrace.errors import ConfigError
from kubectl_sktrace.model import GVK
from kubectl_sktrace.trace.files.format import read_trace

POD = GVK("", "v1", "Pod")


def test_default_config() -> None:
    cfg = tc.default_config()
    assert [str(g) for g in cfg.kinds] == ["apps/v1.Deployment", "apps/v1.StatefulSet", "batch/v1.Job", "batch/v1.CronJob"]
    assert all(opts.track_lifecycle and not opts.skip_owned for opts in cfg.tracked.values())
    assert cfg.tracked[tc.CRONJOB].pod_spec_template_paths == ("/spec/jobTemplate/spec/template",)
    assert cfg.lifecycle_kinds == frozenset(cfg.kinds)
    assert hash(cfg) == hash(tc.default_config()) and cfg == tc.default_config()


def test_parse_normalizes_known_kinds_and_empty_entries() -> None:
    cfg = tc.parse_config(
        {"trackedObjects": {"apps/v1.Deployment": None, "/v1.Pod": {"skipOwned": True, "trackLifecycle": True}, "v1.ConfigMap": {}}},
        source="c.yaml",
    )
    assert cfg.tracked == {
        tc.DEPLOYMENT: tc.TrackedObject(pod_spec_template_paths=("/spec/template",)),
        POD: tc.TrackedObject(pod_spec_template_paths=("",), track_lifecycle=True, skip_owned=True),
        GVK("", "v1", "ConfigMap"): tc.TrackedObject(),
    }


def test_deprecated_single_path_is_accepted() -> None:
    cfg = tc.parse_config({"trackedObjects": {"example.com/v1.Thing": {"podSpecTemplatePath": "/spec/pods/*/template"}}}, source="c")
    assert cfg.tracked[GVK("example.com", "v1", "Thing")].pod_spec_template_paths == ("/spec/pods/*/template",)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param([], "c.yaml: the config must be a map with the key 'trackedObjects' (see 'kubectl sktrace config')", id="not-a-map"),
        pytest.param({"tracked": {}}, "c.yaml: unknown key 'tracked'; the only top-level key is 'trackedObjects'", id="top-key"),
        pytest.param({"trackedObjects": {}}, "c.yaml: 'trackedObjects' is empty; list at least one kind to track (see 'kubectl sktrace config')", id="empty"),
        pytest.param(
            {"trackedObjects": {"apps/v1/Deployment": {}}},
            "c.yaml: trackedObjects.apps/v1/Deployment: invalid GVK 'apps/v1/Deployment': expected '<group>/<version>.<Kind>' (e.g. 'apps/v1.Deployment') or '<version>.<Kind>' for core kinds (e.g. 'v1.Pod')",
            id="gvk-slashes",
        ),
        pytest.param(
            {"trackedObjects": {"Deployment": {}}},
            "c.yaml: trackedObjects.Deployment: invalid GVK 'Deployment': expected '<group>/<version>.<Kind>' (e.g. 'apps/v1.Deployment') or '<version>.<Kind>' for core kinds (e.g. 'v1.Pod')",
            id="gvk-bare-kind",
        ),
        pytest.param(
            {"trackedObjects": {"apps/v1.Deployment": {"trackLifecycles": True}}},
            "c.yaml: trackedObjects.apps/v1.Deployment: unknown key 'trackLifecycles'; allowed keys are podSpecTemplatePaths, podSpecTemplatePath, trackLifecycle, skipOwned, keepSecretData",
            id="unknown-option",
        ),
        pytest.param(
            {"trackedObjects": {"apps/v1.Deployment": {"trackLifecycle": "yes"}}},
            "c.yaml: trackedObjects.apps/v1.Deployment.trackLifecycle: must be true or false, found 'yes'",
            id="bool-type",
        ),
        pytest.param(
            {"trackedObjects": {"apps/v1.Deployment": {"podSpecTemplatePaths": ["/spec/tmpl"]}}},
            "c.yaml: trackedObjects.apps/v1.Deployment.podSpecTemplatePaths: apps/v1.Deployment has the built-in path '/spec/template'; remove the key or set it to ['/spec/template']",
            id="known-kind-path",
        ),
        pytest.param(
            {"trackedObjects": {"example.com/v1.Thing": {"podSpecTemplatePaths": ["spec/template"]}}},
            "c.yaml: trackedObjects.example.com/v1.Thing.podSpecTemplatePaths: 'spec/template' is not a JSON pointer (it must be empty or start with '/'); write it like '/spec/template'",
            id="pointer-slash",
        ),
        pytest.param(
            {"trackedObjects": {"example.com/v1.Thing": {"podSpecTemplatePath": "/a~2b"}}},
            "c.yaml: trackedObjects.example.com/v1.Thing.podSpecTemplatePath: '/a~2b' is not a JSON pointer ('~' must be followed by 0 or 1); write it like '/spec/template'",
            id="pointer-escape",
        ),
        pytest.param(
            {"trackedObjects": {"example.com/v1.Thing": {"podSpecTemplatePath": "/a", "podSpecTemplatePaths": ["/a"]}}},
            "c.yaml: trackedObjects.example.com/v1.Thing: both podSpecTemplatePaths and the deprecated podSpecTemplatePath are set; keep podSpecTemplatePaths",
            id="both-paths",
        ),
        pytest.param(
            {"trackedObjects": {"example.com/v1.Thing": {"podSpecTemplatePaths": "/a"}}},
            "c.yaml: trackedObjects.example.com/v1.Thing.podSpecTemplatePaths: must be a list of JSON pointers like ['/spec/template'], found '/a'",
            id="paths-not-list",
        ),
        pytest.param(
            {"trackedObjects": {"apps/v1.Deployment": {"keepSecretData": True}}},
            "c.yaml: trackedObjects.apps/v1.Deployment.keepSecretData: only applies to v1.Secret; remove it here",
            id="keep-secret-elsewhere",
        ),
        pytest.param(
            {"trackedObjects": {"apps/v1.Deployment": [1]}},
            "c.yaml: trackedObjects.apps/v1.Deployment: the options must be a map (use {} for none), found [1]",
            id="options-type",
        ),
        pytest.param(
            {"trackedObjects": {"v1.Pod": {}, "/v1.Pod": {}}},
            "c.yaml: trackedObjects./v1.Pod: the kind v1.Pod is listed twice; keep one entry",
            id="duplicate",
        ),
    ],
)
def test_config_errors_are_one_line(data, message) -> None:
    with pytest.raises(ConfigError) as info:
        tc.parse_config(data, source="c.yaml")
    assert str(info.value) == message


def test_keep_secret_data_is_kept_but_never_exported() -> None:
    cfg = tc.parse_config({"trackedObjects": {"v1.Secret": {"keepSecretData": True}, "apps/v1.Deployment": {}}}, source="c")
    assert cfg.tracked[tc.SECRET].keep_secret_data is True
    assert tc.config_to_trace(cfg) == {"trackedObjects": {"apps/v1.Deployment": {"podSpecTemplatePaths": ["/spec/template"]}}}


def test_config_to_trace_drops_podless_kinds_and_false_flags() -> None:
    cfg = tc.parse_config(
        {"trackedObjects": {"v1.ConfigMap": {}, "v1.Pod": {"skipOwned": True, "trackLifecycle": True}, "batch/v1.CronJob": {"trackLifecycle": True}}},
        source="c",
    )
    assert tc.config_to_trace(cfg) == {
        "trackedObjects": {
            "v1.Pod": {"podSpecTemplatePaths": [""], "trackLifecycle": True, "skipOwned": True},
            "batch/v1.CronJob": {"podSpecTemplatePaths": ["/spec/jobTemplate/spec/template"], "trackLifecycle": True},
        }
    }


def test_bare_pods_config_round_trips_through_normalization(bare_pods_path) -> None:
    config = read_trace(bare_pods_path).config
    assert tc.config_to_trace(tc.config_from_trace(config)) == {
        "trackedObjects": {"v1.Pod": {"podSpecTemplatePaths": [""], "trackLifecycle": True, "skipOwned": True}}
    }


def test_trace_config_rules_are_stricter() -> None:
    with pytest.raises(ConfigError, match=r"^the trace's config: trackedObjects.v1.ConfigMap: v1.ConfigMap is not a kind SimKube knows, so it needs podSpecTemplatePaths$"):
        tc.config_from_trace({"trackedObjects": {"v1.ConfigMap": {}}})
    with pytest.raises(ConfigError, match="unknown key 'keepSecretData'"):
        tc.config_from_trace({"trackedObjects": {"v1.Secret": {"keepSecretData": True}}})


def test_config_yaml_loads_back_to_the_default(tmp_path) -> None:
    text = tc.config_to_yaml(tc.default_config())
    assert text.startswith("# kubectl sktrace tracer config (SimKube's TracerConfig format). Use it with:\n")
    path = tmp_path / "tracer.yaml"
    path.write_text(text)
    assert tc.load_config(str(path)) == tc.default_config()
    assert yaml.safe_load(text)["trackedObjects"]["batch/v1.Job"] == {"podSpecTemplatePaths": ["/spec/template"], "trackLifecycle": True}


def test_load_config_file_errors(tmp_path) -> None:
    missing = tmp_path / "missing.yaml"
    with pytest.raises(ConfigError) as info:
        tc.load_config(str(missing))
    assert str(info.value) == f"{missing}: no such config file; check --config (print a starting point with 'kubectl sktrace config')"
    bad = tmp_path / "bad.yaml"
    bad.write_text("trackedObjects:\n  apps/v1.Deployment: {\n")
    with pytest.raises(ConfigError, match=rf"^{bad}: not valid YAML at line 3, column 1: .*; fix the syntax$"):
        tc.load_config(str(bad))
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("trackedObjects:\n  apps/v1.Deployment:\n    skipowned: true\n")
    with pytest.raises(ConfigError, match=rf"^{wrong}: trackedObjects.apps/v1.Deployment: unknown key 'skipowned'"):
        tc.load_config(str(wrong))


@pytest.mark.parametrize(
    ("pointer", "expected"),
    [
        pytest.param("", [{"spec": {"template": 1, "list": [{"t": 1}, {"t": 2}], "a/b": 3, "m~n": 4}}], id="whole"),
        pytest.param("/spec/template", [1], id="path"),
        pytest.param("/spec/list/*/t", [1, 2], id="star"),
        pytest.param("/spec/list/1/t", [2], id="index"),
        pytest.param("/spec/a~1b", [3], id="escaped-slash"),
        pytest.param("/spec/m~0n", [4], id="escaped-tilde"),
        pytest.param("/spec/missing", [], id="missing"),
    ],
)
def test_resolve_pointer(pointer, expected) -> None:
    doc = {"spec": {"template": 1, "list": [{"t": 1}, {"t": 2}], "a/b": 3, "m~n": 4}}
    assert tc.resolve_pointer(doc, pointer) == expected


def test_config_change_names_added_dropped_and_changed_kinds() -> None:
    from kubectl_sktrace.tracerconfig import config_change, parse_config

    before = parse_config({"trackedObjects": {"apps/v1.Deployment": {"trackLifecycle": True}, "apps/v1.StatefulSet": {},
                                              "batch/v1.Job": {}}}, source="a")
    after = parse_config({"trackedObjects": {"apps/v1.Deployment": {}, "batch/v1.Job": {}, "v1.ConfigMap": {}}}, source="b")
    change = config_change(before, after)
    assert change.describe() == "added v1.ConfigMap; dropped apps/v1.StatefulSet; changed apps/v1.Deployment"
    assert not config_change(after, after) and config_change(after, after).describe() == "-"


def test_choose_config_keeps_the_last_runs_and_refuses_to_drop_a_kind_unasked() -> None:
    import pytest

    from kubectl_sktrace.errors import UsageError
    from kubectl_sktrace.tracerconfig import choose_config, config_to_yaml, default_config, parse_config

    wide = parse_config({"trackedObjects": {"apps/v1.Deployment": {}, "v1.ConfigMap": {}}}, source="wide.yaml")
    narrow = parse_config({"trackedObjects": {"apps/v1.Deployment": {}}}, source="narrow.yaml")
    assert choose_config(given=None, given_path=None, stored=None, run_id=None, drop_kinds=False) == (default_config(), None)
    assert choose_config(given=None, given_path=None, stored=config_to_yaml(wide), run_id=4, drop_kinds=False) == (
        wide, "no --config: recording with the tracer config of the cache's last run (run 4): apps/v1.Deployment, v1.ConfigMap")
    assert choose_config(given=wide, given_path="wide.yaml", stored=config_to_yaml(narrow), run_id=4, drop_kinds=False) == (wide, None)
    with pytest.raises(UsageError, match=r"^--config narrow.yaml does not track v1.ConfigMap, which the cache's last run \(run 4\) "):
        choose_config(given=narrow, given_path="narrow.yaml", stored=config_to_yaml(wide), run_id=4, drop_kinds=False)
    assert choose_config(given=narrow, given_path="narrow.yaml", stored=config_to_yaml(wide), run_id=4, drop_kinds=True) == (narrow, None)
    with pytest.raises(UsageError, match=r"does not track apps/v1.StatefulSet, batch/v1.CronJob and batch/v1.Job, which .* add them to "
                                         r"default.yaml, or pass --drop-kinds to stop recording them"):
        choose_config(given=narrow, given_path="default.yaml", stored=config_to_yaml(default_config()), run_id=1, drop_kinds=False)
