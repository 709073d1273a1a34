from __future__ import annotations

import pytest

from kubectl_sktrace.errors import TraceFormatError
from kubectl_sktrace.trace.reports.inspection import inspect_trace


def test_inspect_dsb(dsb_path) -> None:
    result = inspect_trace(str(dsb_path), with_events=False)
    assert result["window"] == {
        "start": "2024-03-19T23:48:58Z",
        "end": "2024-03-20T00:07:52Z",
        "duration": "18m54s",  # 1134 s
        "startTs": 1710892138,
        "endTs": 1710893272,
    }
    assert (result["events"], result["applied"], result["deleted"]) == (19, 46, 0)
    assert result["objects"] == [{"kind": "apps/v1.Deployment", "namespace": "dsb", "objects": 27}]
    assert result["index"] == [{"kind": "apps/v1.Deployment", "objects": 27}]
    assert result["podLifecycles"] == []
    assert "eventList" not in result


def test_inspect_bare_pods_lifecycles(bare_pods_path) -> None:
    result = inspect_trace(str(bare_pods_path), with_events=True)
    assert sorted((r["object"], r["running"], r["finished"]) for r in result["podLifecycles"]) == [
        ("testing/bare-pod-1781282449", 0, 1),
        ("testing/bare-pod-1781282509", 0, 1),
        ("testing/bare-pod-1781282570", 0, 1),
        ("testing/bare-pod-1781282630", 1, 0),
    ]
    assert result["index"] == [{"kind": "v1.Pod", "objects": 16}]
    assert result["eventList"][0] == {"ts": 1781282468, "time": "2026-06-12T16:41:08Z", "changes": ["+ Pod testing/bare-pod-1781282449"]}


def test_inspect_cronjob_events(cronjob_path) -> None:
    events = inspect_trace(str(cronjob_path), with_events=True)["eventList"]
    assert [e["changes"] for e in events] == [[], ["+ CronJob default/hello-simkube"], ["- CronJob default/hello-simkube"]]


def test_inspect_rejects_non_traces(tmp_path) -> None:
    path = tmp_path / "x.sktrace"
    path.write_bytes(b"")
    with pytest.raises(TraceFormatError, match="the file is empty"):
        inspect_trace(str(path), with_events=False)
