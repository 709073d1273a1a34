"""The anonymizer remembers what it computed: the result of a repeated subtree (a pod spec; a container too, where asked)
by its packed bytes, paused where it seldom finds one, and each role's pseudonyms. The output bytes, the report and the
pseudonym map must be exactly those of a plain walk of every node computing every pseudonym, whatever the objects."""

from __future__ import annotations

import copy
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_sktrace.trace.anonymizing import allowlist, pseudonyms
from kubectl_sktrace.trace.files import format as traceformat
from kubectl_sktrace.trace.anonymizing.anonymize import Anonymizer, _as_admitted
from kubectl_sktrace.trace.hashing import pod_spec_hash
from tests.trace.test_anonymize_allowlist import _ANY, KEY, objects

KINDS = [("apps/v1", "Deployment"), ("v1", "Pod"), ("batch/v1", "Job"), ("widgets.example.com/v1", "Widget")]


def events_of(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each object in an event, then again changed a little (as a scale or a rollout does), then once more as it was,
    with a Pod holding each template's spec and another owner of the same template: the repetition a real trace has."""
    events = [{"ts": 10, "applied_objs": copy.deepcopy(objs), "deleted_objs": []}]
    changed = copy.deepcopy(objs)
    for obj in changed:
        obj.setdefault("metadata", {})["resourceVersion"] = "2"
        spec = obj.get("spec")
        if isinstance(spec, dict):
            spec["replicas"] = 3
    events.append({"ts": 20, "applied_objs": changed, "deleted_objs": []})
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"pod-{n}", "namespace": "ns"},
             "spec": {**obj["spec"]["template"]["spec"], "nodeName": "node-1"}}
            for n, obj in enumerate(objs) if isinstance((obj.get("spec") or {}).get("template"), dict)]
    twins = [{**copy.deepcopy(obj), "metadata": {"name": f"twin-{n}", "namespace": "ns"}}  # another owner of the same template
             for n, obj in enumerate(objs) if isinstance((obj.get("spec") or {}).get("template"), dict)]
    events.append({"ts": 30, "applied_objs": copy.deepcopy(objs) + pods + twins, "deleted_objs": copy.deepcopy(objs[:1])})
    return events


def template_hash(spec: dict[str, Any]) -> int:
    try:
        return pod_spec_hash(_as_admitted(spec))  # what the recorder hashed for a template's pods
    except (TypeError, AttributeError):  # containers that are not objects: a hash the anonymizer cannot recompute
        return 7


MEMO_MODELS = allowlist._MEMO_MODELS | {"V1Container"}  # a memo nested in another's, as the walk allows


def run(events: list[dict[str, Any]], *, memo: bool, budget: int = allowlist._SUBTREE_BYTES, tables: bool = True) -> tuple[list[bytes], Any]:
    models = MEMO_MODELS if memo else frozenset()
    with mock.patch.object(allowlist, "_MEMO_MODELS", models), mock.patch.object(allowlist, "_SUBTREE_BYTES", budget):
        anonymizer = Anonymizer(KEY, record=True)
        anonymizer.config({"trackedObjects": {"apps/v1.Deployment": {"trackLifecycle": True}, "v1.Pod": {}}})
        out = [traceformat.dumps_object(anonymizer.event(copy.deepcopy(event))) for event in events]
        if not tables:
            return out, (anonymizer.report(), anonymizer.pseudonym_map())
        lifecycles: dict[tuple[str, str], dict[int, list[dict[str, Any]]]] = {}
        index: dict[str, dict[str, int]] = {}
        for obj in (obj for event in events for obj in event["applied_objs"]):
            meta, spec = obj.get("metadata") or {}, obj.get("spec")
            index.setdefault(f"{obj['apiVersion']}.{obj['kind']}", {})[f"{meta.get('namespace')}/{meta.get('name')}"] = 1
            if isinstance(spec, dict) and isinstance(spec.get("template"), dict) and isinstance(spec["template"].get("spec"), dict):
                owner = (f"{obj['apiVersion']}.{obj['kind']}", f"{meta.get('namespace')}/{meta.get('name')}")
                lifecycles[owner] = {template_hash(spec["template"]["spec"]): [{"start_ts": 10}]}
        out.append(traceformat.dumps_object(anonymizer.index(index)))
        out.append(traceformat.dumps_object(list(anonymizer.pod_lifecycles(lifecycles).items())))
        return out, (anonymizer.report(), anonymizer.pseudonym_map())


@pytest.mark.slow  # hundreds of generated objects: seconds of CPU
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(objects(), st.sampled_from([allowlist._SUBTREE_BYTES, 600]))
def test_remembered_subtrees_give_the_bytes_of_a_plain_walk(objs: list[dict[str, Any]], budget: int) -> None:
    """Objects of every default kind with owner strings everywhere, repeated as a trace repeats them; also with a memo
    so small that it forgets (evicts) as it goes."""
    events = events_of(objs)
    assert run(events, memo=True, budget=budget) == run(events, memo=False)


@pytest.mark.slow  # hundreds of generated objects: seconds of CPU
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(KINDS), _ANY, _ANY, _ANY)
def test_remembered_subtrees_of_any_shape_give_the_bytes_of_a_plain_walk(kind: tuple[str, str], container: Any, spec: Any,
                                                                          metadata: Any) -> None:
    """Values of any shape where a container and a pod spec go (nested pod specs, bytes, big integers, odd keys); the
    events only (the hashes of index and pod_lifecycles are not computed over such values)."""
    pod_spec = {"containers": [container, container], "initContainers": [container], "extra": spec}
    objs = [{"apiVersion": kind[0], "kind": kind[1], "metadata": {"name": "a", "namespace": "ns", "labels": metadata},
             "spec": {"template": {"spec": pod_spec}, "jobTemplate": {"spec": {"template": {"spec": pod_spec}}}, **(
                 pod_spec if kind[1] == "Pod" else {})}}]
    events = events_of(objs)
    plain = run(events, memo=False, tables=False)
    assert run(events, memo=True, tables=False) == plain
    assert run(events, memo=True, budget=100, tables=False) == plain


@pytest.mark.slow  # hundreds of generated objects: seconds of CPU
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(objects(), st.sampled_from([1, 2, 7, 50]))
def test_remembered_pseudonyms_give_what_computing_each_gives(objs: list[dict[str, Any]], limit: int) -> None:
    """Each role remembers its pseudonyms (and what each counts in the report), all roles together bounded: with a bound
    so small that it forgets all of them every few strings, even while a label's value computes its name's pseudonym,
    the output bytes, the report and the map are those of the default bound."""
    events = events_of(objs)
    remembered = run(events, memo=True)
    with mock.patch.object(pseudonyms, "_MEMO_LIMIT", limit):
        assert run(events, memo=True) == remembered


@pytest.mark.slow  # hundreds of generated objects: seconds of CPU
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(objects())
def test_a_memo_paused_and_resumed_gives_the_bytes_of_a_plain_walk(objs: list[dict[str, Any]]) -> None:
    """Windows of two values, paused for one after a window without two values found: the memo goes on and off all
    the time, and what it gives does not change."""
    events = events_of(objs)
    with mock.patch.multiple(allowlist, _MEMO_WINDOW=2, _MEMO_MIN_HITS=2, _MEMO_PAUSE=1):
        assert run(events, memo=True) == run(events, memo=False)


def test_a_memo_that_finds_nothing_is_paused_then_tried_again() -> None:
    from kubectl_sktrace.trace.anonymizing.allowlist import Walker
    from kubectl_sktrace.trace.anonymizing.pseudonyms import Pseudonyms

    walker = Walker(Pseudonyms(KEY))
    specs = [{"containers": [{"name": f"c{n}", "image": "registry/app:1"}]} for n in range(allowlist._MEMO_WINDOW)]
    for spec in specs:  # each new: not one found in a window
        walker.remembered("V1PodSpec", spec)
    assert walker._memo_stats["V1PodSpec"] == [0, 0, allowlist._MEMO_PAUSE]
    walker.remembered("V1PodSpec", specs[0])  # walked without the memo
    assert walker._memo_stats["V1PodSpec"] == [0, 0, allowlist._MEMO_PAUSE - 1]
    walker._memo_stats["V1PodSpec"][2] = 0
    for spec in specs:  # each met before: the memo stays
        walker.remembered("V1PodSpec", spec)
    assert walker._memo_stats["V1PodSpec"] == [0, 0, 0]
