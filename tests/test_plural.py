from __future__ import annotations

import pytest

from kubectl_sktrace.plural import counted


@pytest.mark.parametrize(
    ("args", "kwargs", "text"),
    [
        pytest.param((0, "event"), {}, "0 events", id="zero"),
        pytest.param((1, "event"), {}, "1 event", id="one"),
        pytest.param((2, "pod lifecycle"), {}, "2 pod lifecycles", id="two"),
        pytest.param((1, "creation or change", "creations or changes"), {}, "1 creation or change", id="irregular-one"),
        pytest.param((3, "creation or change", "creations or changes"), {}, "3 creations or changes", id="irregular-many"),
        pytest.param((12000, "object"), {"grouped": True}, "12,000 objects", id="grouped"),
        pytest.param((1, "object"), {"grouped": True}, "1 object", id="grouped-one"),
    ],
)
def test_counted(args: tuple, kwargs: dict, text: str) -> None:
    assert counted(*args, **kwargs) == text
