"""SKEL's semantics on events: SimKube's where it is right, ours where SimKube crashes or errs."""

from __future__ import annotations

import copy
from typing import Any

import msgpack
import pytest

from kubectl_sktrace.trace.skel import SkelTransformError, Transformer, parse


def run(skel: str, *objs: Any, ts: int = 100, start_ts: int = 100) -> tuple[list[Any], Transformer]:
    """The objects after the program, as one event at ``ts``; deleted objects are left out."""
    transformer = Transformer(parse(skel, source="t.skel"), start_ts=start_ts)
    event = transformer.apply({"ts": ts, "applied_objs": copy.deepcopy(list(objs)), "deleted_objs": []})
    return ([] if event is None else list(event["applied_objs"])), transformer


def deployment(name: str = "web", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


POD_SPEC = {
    "containers": [
        {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"secretKeyRef": {"name": "s"}}},
                                                  {"name": "C", "valueFrom": {"secretKeyRef": {"name": "t"}}}]},
        {"name": "side", "image": "side:2", "env": [{"name": "D", "valueFrom": {"secretKeyRef": {"name": "s"}}}]},
    ],
}


# --- events ---


def test_deleted_objects_are_dropped_and_an_emptied_event_is_dropped() -> None:
    transformer = Transformer(parse('delete(metadata.name == "a");', source="t.skel"), start_ts=0)
    event = {"ts": 5, "applied_objs": [deployment("a"), deployment("b")], "deleted_objs": [deployment("a")], "extra": 1}
    assert transformer.apply(event) is event
    assert event == {"ts": 5, "applied_objs": [deployment("b")], "deleted_objs": [], "extra": 1}
    assert transformer.apply({"ts": 6, "applied_objs": [deployment("a")], "deleted_objs": [deployment("a")]}) is None
    assert transformer.events_matched == 4


def test_an_event_that_comes_with_no_object_is_kept_where_simkube_drops_it() -> None:
    """An export's first event is the state at the window's start: dropped when empty, the trace's start would move."""
    empty = {"ts": 1, "applied_objs": [], "deleted_objs": []}
    assert Transformer(parse("", source="t.skel"), start_ts=0).apply(empty) is empty
    assert Transformer(parse('delete(metadata.name == "a");', source="t.skel"), start_ts=0).apply({"ts": 1, "applied_objs": []}) is not None


def test_msgpack_tuples_are_read_and_written_and_encode_as_lists_do() -> None:
    obj = deployment(template={"spec": copy.deepcopy(POD_SPEC)})
    skel = ('remove($x := spec.template.spec.containers[*].env[*] | exists($x.valueFrom), $x);'
            'modify(spec.template.spec.containers[1].args[0] = "x");')
    as_lists, _ = run(skel, obj)
    event = msgpack.unpackb(msgpack.packb({"ts": 100, "applied_objs": [obj], "deleted_objs": []}), use_list=False)
    as_tuples = Transformer(parse(skel, source="t.skel"), start_ts=100).apply(event)
    assert as_tuples is not None
    assert msgpack.packb(as_tuples["applied_objs"][0]) == msgpack.packb(as_lists[0])
    assert [e["name"] for e in as_lists[0]["spec"]["template"]["spec"]["containers"][0]["env"]] == ["A"]


def test_each_event_stands_alone() -> None:
    skel = "remove($x := spec.items[*] | $x == 1, $x);"
    first, second = {"ts": 1, "applied_objs": [{"spec": {"items": [1, 2]}}]}, {"ts": 2, "applied_objs": [{"spec": {"items": [2, 1, 1]}}]}
    together = Transformer(parse(skel, source="t.skel"), start_ts=0)
    together.apply(copy.deepcopy(first))
    alone = Transformer(parse(skel, source="t.skel"), start_ts=0)
    assert together.apply(copy.deepcopy(second)) == alone.apply(copy.deepcopy(second)) == {"ts": 2, "applied_objs": [{"spec": {"items": [2]}}]}


# --- counters, as SimKube counts ---


def test_counters_count_objects_matched_and_targets_whether_or_not_anything_was_there() -> None:
    objs = [deployment("a", replicas=1), {"metadata": {}, "status": {}}, deployment("b", template={"spec": copy.deepcopy(POD_SPEC)})]
    skel = ("remove(status);"  # every object matches and counts, with or without a status
            "remove($x := spec.template.spec.containers[*].env[*] | exists($x.valueFrom.secretKeyRef), $x);"  # one per binding: 3
            "remove(spec.template.spec.containers[*].env);"  # one target: [*] does not multiply it
            'delete(metadata.name == "a");')  # matched, modifies nothing
    out, transformer = run(skel, *objs)
    assert (transformer.events_matched, transformer.resources_modified) == (3 + 1 + 3 + 1, 3 + 3 + 3)
    assert [o.get("metadata", {}).get("name") for o in out] == [None, "b"]
    run_again = transformer.apply({"ts": 100, "applied_objs": [{"metadata": {}}], "deleted_objs": []})
    assert run_again is not None and (transformer.events_matched, transformer.resources_modified) == (8 + 2, 9 + 2)


# --- the three SimKube crashes we do not have ---


@pytest.mark.parametrize(
    ("test", "matches"),
    [("spec.replicas > 2", ["int3", "float2.5", "list"]), ("spec.replicas >= 3", ["int3", "list"]), ("spec.replicas < 3", ["int1", "float2.5"]),
     ("spec.replicas <= 1", ["int1"]), ("spec.replicas > -1", ["int3", "int1", "float2.5", "list"]),
     ("spec.items[*] > 4", ["list"]), ("spec.replicas < spec.max", ["int1"])],
)
def test_orderings_compare_numbers_and_nothing_else(test: str, matches: list[str]) -> None:
    objs = [{"metadata": {"name": "int3"}, "spec": {"replicas": 3}}, {"metadata": {"name": "int1"}, "spec": {"replicas": 1, "max": 2}},
            {"metadata": {"name": "float2.5"}, "spec": {"replicas": 2.5}}, {"metadata": {"name": "string"}, "spec": {"replicas": "5"}},
            {"metadata": {"name": "bool"}, "spec": {"replicas": True}}, {"metadata": {"name": "null"}, "spec": {"replicas": None}},
            {"metadata": {"name": "missing"}, "spec": {}}, {"metadata": {"name": "list"}, "spec": {"replicas": 4, "items": ["9", 3, 5]}}]
    _, transformer = run(f"delete({test});", *objs)
    out, _ = run(f"modify({test}, metadata.hit = true);", *objs)
    assert [o["metadata"]["name"] for o in out if o["metadata"].get("hit")] == matches
    assert transformer.events_matched == len(matches)


def test_modify_with_a_wildcard_target_sets_every_element() -> None:
    obj = deployment(template={"spec": copy.deepcopy(POD_SPEC)})
    out, transformer = run('modify(spec.template.spec.containers[*].imagePullPolicy = "Never");'
                           'modify(spec.template.spec.containers[*].resources.requests.cpu = "1");'
                           'modify(spec.template.spec.initContainers[*].image = "x");', obj)
    containers = out[0]["spec"]["template"]["spec"]["containers"]
    assert [c["imagePullPolicy"] for c in containers] == ["Never", "Never"]
    assert [c["resources"] for c in containers] == [{"requests": {"cpu": "1"}}] * 2
    assert "initContainers" not in out[0]["spec"]["template"]["spec"]  # no list, no element, nothing made
    assert transformer.resources_modified == 3


def test_a_wildcard_at_the_end_of_a_modify_target_replaces_each_element() -> None:
    out, _ = run('modify(spec.items[*] = 0);', {"spec": {"items": [1, [2], {"a": 3}]}})
    assert out == [{"spec": {"items": [0, 0, 0]}}]


# --- tests ---


def test_equality_is_exact_json_and_a_missing_field_matches_neither_way() -> None:
    objs = [{"metadata": {"name": n}, "v": v} for n, v in (("one", 1), ("onef", 1.0), ("true", True), ("str", "1"), ("list", [1]))]
    objs.append({"metadata": {"name": "none"}})
    equal, _ = run("modify(v == 1, hit = true);", *objs)
    unequal, _ = run("modify(v != 1, hit = true);", *objs)
    assert [o["metadata"]["name"] for o in equal if o.get("hit")] == ["one"]
    assert [o["metadata"]["name"] for o in unequal if o.get("hit")] == ["onef", "true", "str", "list"]
    rhs_missing, _ = run("modify(v == w, hit = true); modify(v != w, hit = true);", *objs)
    assert not any(o.get("hit") for o in rhs_missing)
    lists, _ = run("modify(v == other, hit = true);", {"v": [1, {"a": (2,)}], "other": ([1, {"a": [2]}])})
    assert lists[0]["hit"] is True


def test_a_wildcard_in_a_test_holds_when_any_value_holds() -> None:
    obj = deployment(template={"spec": copy.deepcopy(POD_SPEC)})
    skel = 'modify(spec.template.spec.containers[*].image == "side:2", a = 1); modify(spec.template.spec.containers[*].image != "side:2", b = 1);'
    out, _ = run(skel, obj)
    assert (out[0].get("a"), out[0].get("b")) == (1, 1)  # "app:1" differs from "side:2": != holds too


def test_quoted_path_parts_reach_labels_with_dots_and_slashes() -> None:
    obj = {"metadata": {"labels": {"simkube.dev/team": "a", "simkube.dev": {"team": "b"}}}}
    out, _ = run('modify(metadata.labels."simkube.dev/team" == "a", metadata.labels."simkube.dev/team" = "z");'
                 'remove(metadata.labels."simkube.dev".team);', obj)
    assert out[0]["metadata"]["labels"] == {"simkube.dev/team": "z", "simkube.dev": {}}


@pytest.mark.parametrize(
    ("selector", "hits"),
    [("@t >= 160", [160, 200, 400]), ("@t > 1m", [200, 400]), ("@t < 100s", [100, 160]), ("@t == 5m", [400]), ("@t != 160", [100, 200, 400]),
     ("@t <= 0h", [100]), ("@t >= 1h", []), ("@t > 1m && @t < 250", [200])],
)
def test_time_tests_absolute_and_relative_to_the_trace_start(selector: str, hits: list[int]) -> None:
    transformer = Transformer(parse(f"delete({selector});", source="t.skel"), start_ts=100)
    kept = [ts for ts in (100, 160, 200, 400) if transformer.apply({"ts": ts, "applied_objs": [{}], "deleted_objs": []}) is not None]
    assert sorted({100, 160, 200, 400} - set(kept)) == hits


# --- variables ---


def test_a_variable_binds_every_match_and_its_elements_are_removed_from_every_list() -> None:
    obj = deployment(template={"spec": copy.deepcopy(POD_SPEC)})
    out, transformer = run("remove($x := spec.template.spec.containers[*].env[*] | exists($x.valueFrom.secretKeyRef), $x);", obj)
    assert [[e["name"] for e in c["env"]] for c in out[0]["spec"]["template"]["spec"]["containers"]] == [["A"], []]
    assert transformer.resources_modified == 3


def test_an_action_path_goes_on_from_each_binding() -> None:
    obj = deployment(template={"spec": copy.deepcopy(POD_SPEC)})
    out, transformer = run('modify($c := spec.template.spec.containers[*] | $c.image != "app:1", $c.resources.limits.cpu = "2");'
                           'remove($e := spec.template.spec.containers[*].env[*] | $e.name == "C", $e.valueFrom.secretKeyRef.name);', obj)
    containers = out[0]["spec"]["template"]["spec"]["containers"]
    assert "resources" not in containers[0] and containers[1]["resources"] == {"limits": {"cpu": "2"}}
    assert containers[0]["env"][2] == {"name": "C", "valueFrom": {"secretKeyRef": {}}}
    assert transformer.resources_modified == 2


def test_a_variable_may_range_over_another_variables_elements() -> None:
    obj = {"spec": {"volumes": [{"name": "v", "projected": {"sources": [{"secret": {"name": "s"}}, {"configMap": {"name": "c"}}]}},
                                {"name": "w", "secret": {"secretName": "s"}}]}}
    out, transformer = run("remove($v := spec.volumes[*] | exists($v.projected) && $s := $v.projected.sources[*] | exists($s.secret), $s);", obj)
    assert out[0]["spec"]["volumes"][0]["projected"]["sources"] == [{"configMap": {"name": "c"}}]
    assert transformer.resources_modified == 1


def test_a_variable_test_may_compare_each_element_with_itself() -> None:
    obj = {"spec": {"containers": [{"name": "a", "image": "a"}, {"name": "b", "image": "c"}]}}
    out, _ = run("remove($c := spec.containers[*] | $c.name == $c.image, $c);", obj)
    assert out[0]["spec"]["containers"] == [{"name": "b", "image": "c"}]


def test_not_exists_holds_when_no_element_has_the_field_and_binds_them_all() -> None:
    objs = [{"metadata": {"name": "clean"}, "spec": {"c": [{"n": 1}, {"n": 2}]}}, {"metadata": {"name": "dirty"}, "spec": {"c": [{"n": 1}, {"x": 2}]}}]
    out, transformer = run("modify($c := spec.c[*] | !exists($c.x), $c.checked = true);", *objs)
    assert out[0]["spec"]["c"] == [{"n": 1, "checked": True}, {"n": 2, "checked": True}]
    assert out[1]["spec"]["c"] == [{"n": 1}, {"x": 2}]
    assert (transformer.events_matched, transformer.resources_modified) == (1, 2)


def test_an_element_matched_twice_is_bound_once() -> None:
    obj = {"spec": {"c": [{"env": [{"n": "a"}, {"n": "a"}]}, {"env": [{"n": "b"}]}]}}
    out, transformer = run('remove($c := spec.c[*] | $c.env[*].n == "a", $c);', obj)
    assert out[0]["spec"]["c"] == [{"env": [{"n": "b"}]}]
    assert transformer.resources_modified == 1


def test_removals_in_one_list_all_refer_to_the_list_as_the_command_found_it() -> None:
    out, _ = run("remove($x := items[*] | $x > 1, $x);", {"items": [5, 1, 7, 0, 9, 1]})
    assert out == [{"items": [1, 0, 1]}]


def test_what_a_path_reached_is_found_again_after_an_action_changed_the_object() -> None:
    obj = {"spec": {"c": [{"env": [{"n": "a"}, {"n": "b"}, {"n": "c"}]}], "v": [{"n": "a"}, {"n": "b"}]}}
    skel = ('remove($x := spec.c[*].env[*] | $x.n == "a", $x);'
            'remove($x := spec.c[*].env[*] | $x.n == "b", $x);'  # env is now [b, c]: b is at 0
            'remove($x := spec.v[*] | $x.n == "a", $x);'
            'remove($x := spec.v[*] | $x.n == "b", $x);')
    out, _ = run(skel, obj)
    as_tuples = msgpack.unpackb(msgpack.packb(obj), use_list=False)
    tuple_out, _ = run(skel, as_tuples)
    assert out == [{"spec": {"c": [{"env": [{"n": "c"}]}], "v": []}}]
    assert msgpack.packb(tuple_out[0]) == msgpack.packb(out[0])


def test_commands_behind_the_same_first_test_see_each_others_changes() -> None:
    skel = ("modify(exists(metadata.labels.a), metadata.labels.b = 1);"
            "remove(exists(metadata.labels.a), metadata.labels.a);"
            "modify(exists(metadata.labels.a), metadata.labels.c = 1);"  # a is gone now
            "modify(exists(metadata.labels.z), metadata.labels.z = 2);"
            "modify(exists(metadata.labels.z), metadata.labels.y = 2);")
    out, transformer = run(skel, {"metadata": {"labels": {"a": 0}}}, {"metadata": {"labels": {"z": 0}}})
    assert [o["metadata"]["labels"] for o in out] == [{"b": 1}, {"z": 2, "y": 2}]
    assert transformer.events_matched == 4


# --- modify ---


def test_modify_replaces_a_field_or_adds_it_with_its_missing_parents() -> None:
    out, transformer = run('modify(spec.replicas = 3); modify(spec.template.metadata.labels."simkube.dev/x" = "y");'
                           "modify(spec.list[0].name = \"first\"); modify(spec.list[1] = 2); modify(spec.list[0].name = \"again\");",
                           {"spec": {"replicas": 1}})
    assert out == [{"spec": {"replicas": 3, "template": {"metadata": {"labels": {"simkube.dev/x": "y"}}}, "list": [{"name": "again"}, 2]}}]
    assert transformer.resources_modified == 5


def test_modify_copies_a_value_read_from_the_object() -> None:
    out, _ = run("modify(saved = spec); modify(spec.x = 1); modify(spec.x = spec.x);", {"spec": {"a": [1]}})
    assert out == [{"spec": {"a": [1], "x": 1}, "saved": {"a": [1]}}]
    assert out[0]["saved"]["a"] is not out[0]["spec"]["a"]


def test_modify_a_bound_element_itself() -> None:
    out, _ = run('modify($x := metadata.labels."simkube.dev/key" | exists($x), $x = "baz");', {"metadata": {"labels": {"simkube.dev/key": "bar"}}})
    assert out == [{"metadata": {"labels": {"simkube.dev/key": "baz"}}}]


@pytest.mark.parametrize(
    ("skel", "message"),
    [
        ("modify($c := spec.containers[*] | exists($c.name), spec.first = $c.name);",
         "t.skel:1: modify($c := spec.containers[*] | exists($c.name), spec.first = $c.name) cannot apply to Deployment default/web: "
         "its right side $c.name gives 2 values, and modify needs exactly one"),
        ("modify(spec.first = spec.nothing);",
         "t.skel:1: modify(spec.first = spec.nothing) cannot apply to Deployment default/web: its right side spec.nothing gives 0 values, "
         "and modify needs exactly one"),
        ("# two\n\nmodify(spec.containers[0].name.x = 1);",
         "t.skel:3: modify(spec.containers[0].name.x = 1) cannot apply to Deployment default/web: it cannot set 'x' inside a string"),
        ("modify(spec.containers[5] = 1);",
         "t.skel:1: modify(spec.containers[5] = 1) cannot apply to Deployment default/web: index 5 is past the end of a list of 2"),
        ("modify(spec.containers.x = 1);",
         "t.skel:1: modify(spec.containers.x = 1) cannot apply to Deployment default/web: it cannot set field 'x' in a list"),
    ],
)
def test_a_modify_that_cannot_apply_names_the_command_and_the_object(skel: str, message: str) -> None:
    with pytest.raises(SkelTransformError) as raised:
        run(skel, deployment(containers=[{"name": "a"}, {"name": "b"}]))
    assert str(raised.value) == message


@pytest.mark.parametrize(("obj", "shown"), [({"kind": "Namespace", "metadata": {"name": "n"}}, "Namespace n"), ({}, "object"), ([], "object")])
def test_an_object_is_named_as_far_as_it_can_be(obj: Any, shown: str) -> None:
    with pytest.raises(SkelTransformError, match=f"cannot apply to {shown}: "):
        run("modify(a = b);", obj)


# --- remove ---


def test_remove_leaves_the_object_alone_where_nothing_is_there() -> None:
    obj = {"spec": {"items": [1, 2], "name": "x", "map": {"a": 1}}}
    out, transformer = run("remove(spec.items[5]); remove(spec.name.x); remove(spec.nothing.x); remove(spec.map[*]); remove(spec.items.x);", obj)
    assert out == [obj]
    assert transformer.resources_modified == 5


def test_remove_a_list_element_or_every_element() -> None:
    out, _ = run("remove(spec.a[1]); remove(spec.b[*]); remove(spec.c.0);", {"spec": {"a": [1, 2, 3], "b": [1, 2], "c": [7, 8]}})
    assert out == [{"spec": {"a": [1, 3], "b": [], "c": [8]}}]


def test_variables_are_tokens_not_text() -> None:
    obj = {"a": [{"k": 1}, {"k": 2}], "b": [{"k": 2}]}
    out, transformer = run("remove($x := a[*] | $x.k == 1 && $xy := b[*] | $xy.k == 2, $xy.k);", obj)
    assert out == [{"a": [{"k": 1}, {"k": 2}], "b": [{}]}]  # SimKube also rewrites $xy with $x's pointers
    assert transformer.resources_modified == 1


def test_modify_appends_one_past_the_end_and_makes_a_list_for_a_first_element() -> None:
    out, _ = run("modify(spec.args[2] = \"c\"); modify(spec.new[0] = 1); modify(spec.deep[0].name = \"n\");", {"spec": {"args": ["a", "b"]}})
    assert out == [{"spec": {"args": ["a", "b", "c"], "new": [1], "deep": [{"name": "n"}]}}]


def test_keys_and_values_are_data_in_the_compiled_paths_never_code() -> None:
    objs = [{"metadata": {"name": "a') or True or ('", "__import__": {"os": 1}}}, {"metadata": {"name": "b", "__import__": {}}}]
    out, transformer = run("delete(metadata.name == \"a') or True or ('\"); remove(metadata.__import__.os);", *objs)
    assert out == [{"metadata": {"name": "b", "__import__": {}}}]
    assert transformer.events_matched == 2


def test_commands_behind_the_same_variable_test_share_its_binding_until_an_action() -> None:
    obj = {"spec": {"c": [{"n": "a", "x": 1}, {"n": "b"}, {"n": "a"}]}}
    out, transformer = run('modify($c := spec.c[*] | $c.n == "a", $c.seen = 1);'
                           'modify($c := spec.c[*] | $c.n == "a", $c.again = 2);'
                           'remove($c := spec.c[*] | $c.n == "a", $c.x);'
                           'remove($c := spec.c[*] | $c.n == "z", $c);'
                           'remove($c := spec.c[*] | $c.n == "z", $c.n);', obj)
    assert out == [{"spec": {"c": [{"n": "a", "seen": 1, "again": 2}, {"n": "b"}, {"n": "a", "seen": 1, "again": 2}]}}]
    assert (transformer.events_matched, transformer.resources_modified) == (3, 6)
