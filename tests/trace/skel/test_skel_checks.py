"""``trace/skel/checks``: the mistakes SKEL accepts silently, warned of (issue 38); the program still runs as written."""

from __future__ import annotations

import pytest

from kubectl_sktrace.trace.skel import builtin, parse
from kubectl_sktrace.trace.skel.checks import check_program


@pytest.mark.parametrize("text, warning", [
    ("delete(metadata.namespace == shop);",
     "shop is read as a path (the object's field 'shop'), and no object has such a field; to compare with the text, quote it: \"shop\""),
    ("modify(metadata.name == web, spec.paused = true);",
     "web is read as a path (the object's field 'web'), and no object has such a field; to compare with the text, quote it: \"web\""),
    ('modify(spec.replicas = "3");',
     'spec.replicas is an integer in the API, and "3" is not: SimKube compares and writes it as given; write 3 (no quotes)'),
    ('delete(spec.replicas == "0");',
     'spec.replicas is an integer in the API, and "0" is not: SimKube compares and writes it as given; write 0 (no quotes)'),
    ('modify(spec.paused = "true");',
     'spec.paused is a boolean in the API, and "true" is not: SimKube compares and writes it as given; write true (no quotes)'),
    ("modify(spec.template.spec.containers[*].image = 3);",
     'spec.template.spec.containers[*].image is a string in the API, and 3 is not: SimKube compares and writes it as given; write "3"'),
    ('modify(metadata.labels.quokkasoft.io = "x");',
     'metadata.labels.quokkasoft.io builds nested maps under labels (quokkasoft: {io: …}); a key with dots is one step: quote it: '
     'metadata.labels."quokkasoft.io"'),
], ids=["bare-word-test", "bare-word-selector", "string-for-integer", "string-compared-with-integer", "string-for-boolean",
        "integer-for-string", "dotted-label-key"])
def test_a_mistake_skel_accepts_is_warned_of(text: str, warning: str) -> None:
    assert check_program(parse(text, source="t.skel")) == [f"t.skel:1: {warning}"]


@pytest.mark.parametrize("text", [
    'delete(metadata.namespace == "shop");',
    "delete(spec.replicas == status.replicas);",
    "modify(spec.replicas = 3);",
    'modify(metadata.labels."quokkasoft.io" = "x");',
    'modify(spec.template.metadata.annotations."example.com/team" = "a");',
    '$x := spec.template.spec.containers[*] | $x.name == "app";',
    'modify($x := spec.template.spec.containers[*] | $x.name == "app", $x.image = "busybox");',
    'modify(data.key = "3");',  # a ConfigMap's values are strings
    'modify(metadata.annotations.note = "3");',
], ids=["quoted", "path-on-both-sides", "integer", "quoted-key", "quoted-key-with-slash", "variable", "variable-modify",
        "configmap-data", "annotation-value"])
def test_what_is_right_is_not_warned_of(text: str) -> None:
    if text.startswith("$"):
        text = f"delete({text[:-1]});"
    assert check_program(parse(text, source="t.skel")) == []


def test_the_builtin_sanitize_has_nothing_to_warn_of() -> None:
    assert check_program(builtin("sanitize")) == []


def test_each_warning_names_its_line_once() -> None:
    program = parse('delete(metadata.name == "a");\n\nmodify(spec.replicas == "2", spec.replicas = "2");\n', source="t.skel")
    assert check_program(program) == [
        't.skel:3: spec.replicas is an integer in the API, and "2" is not: SimKube compares and writes it as given; write 2 (no quotes)']
